//! The compact item header: what memcached keeps per item (client flags, CAS, expiry,
//! last access, the meta protocol's state bits) in front of the data, in as few bytes as
//! the values allow.
//!
//! Each item is one pair of the memcached keyspace's index: the key is the item's key,
//! the value is this header followed by the data (without memcached's trailing `\r\n`).
//!
//! ```text
//! byte 0        tag: bit 0  client flags follow (4 bytes; absent when 0)
//!                    bit 1  expiry follows (4 bytes; absent when the item never expires)
//!                    bits 2..4  CAS width / 2 - 1 (the CAS takes 2, 4, 6 or 8 bytes)
//!                    bit 4  KEY_BINARY (stored by `ms … b`: shown base64 by `mg k`, `me`)
//!                    bit 5  FETCHED (read at least once, meta `h`, `me fetch=`)
//!                    bit 6  STALE (marked by `md … I`)
//!                    bit 7  TOKEN_SENT (a client won the recache token: meta `W`/`Z`)
//! bytes 1..5    last access: the server clock in milliseconds, modulo 2^32, little-endian
//!               (fixed offset, so that a read can refresh it in place)
//! then          CAS (little-endian, width from the tag), expiry (Unix seconds, u32 LE) if
//!               present, client flags (u32 LE) if present, then the data
//! ```
//!
//! So an item with zero flags, no expiry and a CAS below 2^32 costs 9 bytes beyond its
//! key and data, where memcached's item header is 48 bytes plus an 8-byte CAS (plus the
//! slab class's rounding). The access clock wraps after 49.7 days: an item idle for longer
//! can look recent to the eviction sampler (it only orders candidates).

/// Tag bit: client flags follow.
const HAS_FLAGS: u8 = 1;
/// Tag bit: an expiry follows.
const HAS_EXPIRY: u8 = 2;
const CAS_SHIFT: u32 = 2;
const CAS_MASK: u8 = 0b11 << CAS_SHIFT;
/// Tag bit: the key was given in base64 (`ms … b`).
pub(crate) const KEY_BINARY: u8 = 1 << 4;
/// Tag bit: the item was read at least once.
pub(crate) const FETCHED: u8 = 1 << 5;
/// Tag bit: the item was invalidated (`md … I`) and is served as stale.
pub(crate) const STALE: u8 = 1 << 6;
/// Tag bit: a client has been sent the recache token.
pub(crate) const TOKEN_SENT: u8 = 1 << 7;
/// The tag bits a rewrite of an item's metadata may set or clear.
pub(crate) const STATE_BITS: u8 = KEY_BINARY | FETCHED | STALE | TOKEN_SENT;

/// Offset of the last-access clock.
pub(crate) const ATIME_AT: usize = 1;

/// Longest header: tag, clock, 8-byte CAS, expiry, flags.
pub(crate) const MAX_HEADER: usize = 1 + 4 + 8 + 4 + 4;

/// An item's metadata, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The client's 32-bit flags.
    pub(crate) flags: u32,
    /// The item's CAS value (unique per modification).
    pub(crate) cas: u64,
    /// Expiry, Unix seconds; 0: never.
    pub(crate) expiry: u32,
    /// Last access, the server's millisecond clock modulo 2^32.
    pub(crate) atime: u32,
    /// [`KEY_BINARY`], [`FETCHED`], [`STALE`], [`TOKEN_SENT`].
    pub(crate) state: u8,
}

/// Bytes the CAS value `cas` takes: 2, 4, 6 or 8.
fn cas_width(cas: u64) -> usize {
    let bytes = (8 - (cas.leading_zeros() as usize / 8)).max(1);
    bytes.div_ceil(2) * 2
}

impl Meta {
    /// The header's length for this metadata.
    pub(crate) fn header_len(&self) -> usize {
        5 + cas_width(self.cas)
            + if self.expiry != 0 { 4 } else { 0 }
            + if self.flags != 0 { 4 } else { 0 }
    }

    /// Appends the header to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let w = cas_width(self.cas);
        let mut tag = (((w / 2) as u8 - 1) << CAS_SHIFT) | (self.state & STATE_BITS);
        if self.flags != 0 {
            tag |= HAS_FLAGS;
        }
        if self.expiry != 0 {
            tag |= HAS_EXPIRY;
        }
        out.push(tag);
        out.extend_from_slice(&self.atime.to_le_bytes());
        out.extend_from_slice(&self.cas.to_le_bytes()[..w]);
        if self.expiry != 0 {
            out.extend_from_slice(&self.expiry.to_le_bytes());
        }
        if self.flags != 0 {
            out.extend_from_slice(&self.flags.to_le_bytes());
        }
    }

    /// A whole item: this header, then `data`.
    pub(crate) fn item(&self, data: &[&[u8]]) -> Vec<u8> {
        let len: usize = data.iter().map(|d| d.len()).sum();
        let mut out = Vec::with_capacity(self.header_len() + len);
        self.encode(&mut out);
        for d in data {
            out.extend_from_slice(d);
        }
        out
    }

    /// Decodes a stored item: its metadata and where its data starts (`None`: not an
    /// item, which the keyspace never stores).
    pub(crate) fn decode(item: &[u8]) -> Option<(Meta, usize)> {
        let (&tag, rest) = item.split_first()?;
        let atime = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
        let mut at = 5;
        let w = (usize::from((tag & CAS_MASK) >> CAS_SHIFT) + 1) * 2;
        let mut cas = [0u8; 8];
        cas[..w].copy_from_slice(item.get(at..at + w)?);
        at += w;
        let mut word = |present: bool| -> Option<u32> {
            if !present {
                return Some(0);
            }
            let v = u32::from_le_bytes(item.get(at..at + 4)?.try_into().ok()?);
            at += 4;
            Some(v)
        };
        let expiry = word(tag & HAS_EXPIRY != 0)?;
        let flags = word(tag & HAS_FLAGS != 0)?;
        Some((
            Meta {
                flags,
                cas: u64::from_le_bytes(cas),
                expiry,
                atime,
                state: tag & STATE_BITS,
            },
            at,
        ))
    }
}

/// The last-access clock of a stored item, without decoding the rest.
pub(crate) fn atime(item: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(
        item.get(ATIME_AT..ATIME_AT + 4)?.try_into().ok()?,
    ))
}

/// Sets the last-access clock and the FETCHED bit of a stored item in place (its length
/// does not change).
pub(crate) fn touch_in_place(item: &mut [u8], clock: u32) {
    if item.len() >= ATIME_AT + 4 {
        item[0] |= FETCHED;
        item[ATIME_AT..ATIME_AT + 4].copy_from_slice(&clock.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_widths() {
        for (flags, cas, expiry) in [
            (0, 1, 0),
            (0, 0, 0),
            (7, 255, 0),
            (u32::MAX, 256, 1_700_000_000),
            (0, u64::MAX, u32::MAX),
            (1, 1 << 40, 5),
        ] {
            let m = Meta {
                flags,
                cas,
                expiry,
                atime: 0xdead_beef,
                state: FETCHED | TOKEN_SENT | KEY_BINARY,
            };
            let item = m.item(&[b"da", b"ta"]);
            assert_eq!(item.len(), m.header_len() + 4);
            let (d, at) = Meta::decode(&item).unwrap();
            assert_eq!(d, m);
            assert_eq!(&item[at..], b"data");
            assert_eq!(atime(&item), Some(0xdead_beef));
        }
        // The common case: zero flags, no expiry, a CAS below 2^32.
        let small = Meta {
            cas: 70_000,
            ..Meta::default()
        };
        assert_eq!(small.header_len(), 9);
    }

    #[test]
    fn in_place_touch_and_garbage() {
        let mut item = Meta {
            cas: 3,
            ..Meta::default()
        }
        .item(&[b"x"]);
        touch_in_place(&mut item, 42);
        let (m, _) = Meta::decode(&item).unwrap();
        assert_eq!((m.atime, m.state), (42, FETCHED));
        assert_eq!(Meta::decode(b""), None);
        assert_eq!(Meta::decode(&[0, 1, 2]), None);
        assert_eq!(Meta::decode(&[HAS_FLAGS, 0, 0, 0, 0, 1, 2]), None);
    }
}
