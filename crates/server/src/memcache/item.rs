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
//!                    bits 2..4  CAS width code: the CAS takes 2, 3, 4 or 8 bytes
//!                    bit 4  FETCHED (read at least once, meta `h`, `me fetch=`)
//!                    bit 5  EXT: a state byte follows the clock
//!                    bits 6..8  the CAS's two bits above its bytes (widths 2, 3, 4)
//! bytes 1..3    last access: the server clock in ticks of 2^TICK_SHIFT ms (64 ms), modulo
//!               2^16, little-endian (fixed offset, so that a read can refresh it in place)
//! then          the state byte if EXT: KEY_BINARY (stored by `ms … b`: shown base64 by
//!               `mg k`, `me`), STALE (marked by `md … I`), TOKEN_SENT (a client won the
//!               recache token: meta `W`/`Z`);
//!               CAS (little-endian, width from the tag), expiry (Unix seconds, u32 LE) if
//!               present, client flags (u32 LE) if present, then the data
//! ```
//!
//! So an item with zero flags, no expiry, none of the rare states and a CAS below 2^26
//! costs 6 bytes beyond its key and data (7 below 2^34), where memcached's item header is
//! 48 bytes plus an 8-byte CAS (plus the slab class's rounding). Six bytes is what lets a
//! 10-byte value (the paper's Fig 5 set) fill two 8-byte value words of a Mercury node
//! exactly: a 24-byte key makes a 56-byte node (`docs/results/mercury.md`, "Against
//! memcached", memory). The tick is the LRU order's resolution: items whose last accesses
//! fall in one tick look equally idle to the eviction sampler. A cache whose contents
//! turn over in a few seconds needs it fine: a coarser tick loses hit ratio to
//! memcached's list-ordered LRU on a fast-churning cache (the measurements by tick are in
//! `docs/results/mercury.md`, "Against memcached"). The clock wraps after
//! 2^16 ticks (70 minutes at 64 ms, 17 at 16 ms): an item idle for longer can look recent
//! to the eviction sampler (it only orders candidates), and meta `l`/`me la` report the
//! idle time modulo that period. 64 ms keeps the period above an hour, where caches that
//! evict at all have turned over; finer ticks would need a wider field (a byte more per
//! item takes the Fig 5 item out of its 56-byte node class).

/// Tag bit: client flags follow.
const HAS_FLAGS: u8 = 1;
/// Tag bit: an expiry follows.
const HAS_EXPIRY: u8 = 2;
const CAS_SHIFT: u32 = 2;
const CAS_MASK: u8 = 0b11 << CAS_SHIFT;
/// CAS bytes per width code.
const CAS_WIDTHS: [usize; 4] = [2, 3, 4, 8];
/// Tag bit: the item was read at least once.
pub(crate) const FETCHED: u8 = 1 << 4;
/// Tag bit: a state byte follows the clock.
const EXT: u8 = 1 << 5;
/// Where the CAS's two high bits sit in the tag (widths 2, 3 and 4).
const CAS_HIGH_SHIFT: u32 = 6;
/// State bit (in the state byte): the key was given in base64 (`ms … b`).
pub(crate) const KEY_BINARY: u8 = 1 << 1;
/// State bit: the item was invalidated (`md … I`) and is served as stale.
pub(crate) const STALE: u8 = 1 << 2;
/// State bit: a client has been sent the recache token.
pub(crate) const TOKEN_SENT: u8 = 1 << 3;
/// The state bits kept in the state byte.
const EXT_BITS: u8 = KEY_BINARY | STALE | TOKEN_SENT;
const _: () = assert!(EXT_BITS & FETCHED == 0);

/// Offset of the last-access clock.
pub(crate) const ATIME_AT: usize = 1;

/// The access clock's tick: 2^TICK_SHIFT milliseconds.
pub(crate) const TICK_SHIFT: u32 = 6;

/// The access clock (ticks modulo 2^16) at the server clock `clock_ms`.
pub(crate) fn tick(clock_ms: u32) -> u32 {
    (clock_ms >> TICK_SHIFT) & 0xFFFF
}

/// Milliseconds since the access clock `atime`, at the server clock `clock_ms` (modulo the
/// clock's period, in whole ticks).
pub(crate) fn idle_ms(clock_ms: u32, atime: u32) -> u64 {
    u64::from(tick(clock_ms).wrapping_sub(atime) & 0xFFFF) << TICK_SHIFT
}

/// Longest header: tag, clock, state byte, 8-byte CAS, expiry, flags.
pub(crate) const MAX_HEADER: usize = 1 + 2 + 1 + 8 + 4 + 4;

/// An item's metadata, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Meta {
    /// The client's 32-bit flags.
    pub(crate) flags: u32,
    /// The item's CAS value (unique per modification).
    pub(crate) cas: u64,
    /// Expiry, Unix seconds; 0: never.
    pub(crate) expiry: u32,
    /// Last access, in ticks of the access clock ([`tick`]).
    pub(crate) atime: u32,
    /// [`KEY_BINARY`], [`FETCHED`], [`STALE`], [`TOKEN_SENT`].
    pub(crate) state: u8,
}

/// The CAS width code of `cas`: the narrowest of [`CAS_WIDTHS`] that holds it (with the two
/// high bits in the tag for the narrow ones).
fn cas_code(cas: u64) -> usize {
    let bits = 64 - cas.leading_zeros() as usize;
    CAS_WIDTHS[..3]
        .iter()
        .position(|&w| bits <= 8 * w + 2)
        .unwrap_or(3)
}

impl Meta {
    /// The header's length for this metadata.
    pub(crate) fn header_len(&self) -> usize {
        3 + usize::from(self.state & EXT_BITS != 0)
            + CAS_WIDTHS[cas_code(self.cas)]
            + if self.expiry != 0 { 4 } else { 0 }
            + if self.flags != 0 { 4 } else { 0 }
    }

    /// Appends the header to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let code = cas_code(self.cas);
        let w = CAS_WIDTHS[code];
        let mut tag = ((code as u8) << CAS_SHIFT) | (self.state & FETCHED);
        if w < 8 {
            tag |= ((self.cas >> (8 * w)) as u8 & 0b11) << CAS_HIGH_SHIFT;
        }
        let ext = self.state & EXT_BITS;
        if ext != 0 {
            tag |= EXT;
        }
        if self.flags != 0 {
            tag |= HAS_FLAGS;
        }
        if self.expiry != 0 {
            tag |= HAS_EXPIRY;
        }
        out.push(tag);
        out.extend_from_slice(&(self.atime as u16).to_le_bytes());
        if ext != 0 {
            out.push(ext);
        }
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
        let atime = u32::from(u16::from_le_bytes(rest.get(..2)?.try_into().ok()?));
        let mut at = 3;
        let mut state = tag & FETCHED;
        if tag & EXT != 0 {
            state |= item.get(at)? & EXT_BITS;
            at += 1;
        }
        let w = CAS_WIDTHS[usize::from((tag & CAS_MASK) >> CAS_SHIFT)];
        let mut cas = [0u8; 8];
        cas[..w].copy_from_slice(item.get(at..at + w)?);
        at += w;
        let mut cas = u64::from_le_bytes(cas);
        if w < 8 {
            cas |= u64::from(tag >> CAS_HIGH_SHIFT) << (8 * w);
        }
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
                cas,
                expiry,
                atime,
                state,
            },
            at,
        ))
    }
}

/// The last-access clock (ticks) of a stored item, without decoding the rest.
pub(crate) fn atime(item: &[u8]) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        item.get(ATIME_AT..ATIME_AT + 2)?.try_into().ok()?,
    )))
}

/// Sets the last-access clock to the server clock `clock_ms` and the FETCHED bit of a
/// stored item in place (its length does not change).
pub(crate) fn touch_in_place(item: &mut [u8], clock_ms: u32) {
    if item.len() >= ATIME_AT + 2 {
        item[0] |= FETCHED;
        item[ATIME_AT..ATIME_AT + 2].copy_from_slice(&(tick(clock_ms) as u16).to_le_bytes());
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
            (0, (1 << 26) - 1, 0),
            (0, 1 << 26, 0),
            (0, (1 << 34) - 1, 0),
            (0, 1 << 34, 0),
            (0, (1 << 18) + 5, 0),
        ] {
            let m = Meta {
                flags,
                cas,
                expiry,
                atime: 0xbeef,
                state: FETCHED | TOKEN_SENT | KEY_BINARY,
            };
            for state in [0, FETCHED, STALE, FETCHED | TOKEN_SENT | KEY_BINARY] {
                let m = Meta { state, ..m };
                let item = m.item(&[b"da", b"ta"]);
                assert_eq!(item.len(), m.header_len() + 4);
                let (d, at) = Meta::decode(&item).unwrap();
                assert_eq!(d, m);
                assert_eq!(&item[at..], b"data");
                assert_eq!(atime(&item), Some(0xbeef));
            }
        }
        // The common case: zero flags, no expiry, a CAS below 2^26; then below 2^34.
        let small = Meta {
            cas: 24_000_000,
            ..Meta::default()
        };
        assert_eq!(small.header_len(), 6);
        let big = Meta {
            cas: 1 << 33,
            ..Meta::default()
        };
        assert_eq!(big.header_len(), 7);
    }

    #[test]
    fn in_place_touch_and_garbage() {
        let mut item = Meta {
            cas: 3,
            ..Meta::default()
        }
        .item(&[b"x"]);
        touch_in_place(&mut item, 42 << TICK_SHIFT);
        let (m, _) = Meta::decode(&item).unwrap();
        assert_eq!((m.atime, m.state, m.cas), (42, FETCHED, 3));
        assert_eq!(idle_ms(45 << TICK_SHIFT, m.atime), 3 << TICK_SHIFT);
        assert_eq!(idle_ms(1 << TICK_SHIFT, 0xFFFF), 2 << TICK_SHIFT);
        assert_eq!(Meta::decode(b""), None);
        assert_eq!(Meta::decode(&[0, 1, 2]), None);
        assert_eq!(Meta::decode(&[HAS_FLAGS, 0, 0, 1, 2]), None);
        assert_eq!(Meta::decode(&[EXT, 0, 0]), None);
    }
}
