//! The stored value: a one-byte tag (type, encoding, whether an access field and a
//! deadline follow), the access field, the deadline, the payload.
//!
//! ```text
//! byte 0      : bits 0..4 the type (0 string, 1 sorted set, 2 hash, 3 set, 4 list),
//!               bits 4..6 the encoding (0 compact, 1 intset, 2 large),
//!               bit 6 set when an access field follows, bit 7 when a deadline does
//! bytes 1..5  : (only with bit 6) the access field, little-endian: last access and LFU
//!               counter (`crate::memory::lfu`), rewritten in place by reads
//! next 8      : (only with bit 7) the deadline, Unix milliseconds, big-endian
//! rest        : the payload: a string's bytes; a compact collection's elements
//!               (`crate::layout`: a pack, an intset, or for a list its head position
//!               and a pack); a large collection's 8-byte id, under which its elements
//!               live in the store's element index; a large string's 8-byte id, under
//!               which its bytes live in the store's table of large strings (`large`)
//! ```
//!
//! A string has two encodings: `Compact` (its bytes inline) and `Large` (out of line,
//! when they do not fit in the index's values).

/// The type of a key's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A string.
    String,
    /// A sorted set.
    ZSet,
    /// A hash.
    Hash,
    /// A set.
    Set,
    /// A list.
    List,
}

impl Kind {
    /// The name `TYPE` replies.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::ZSet => "zset",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::List => "list",
        }
    }

    fn code(self) -> u8 {
        match self {
            Kind::String => 0,
            Kind::ZSet => 1,
            Kind::Hash => 2,
            Kind::Set => 3,
            Kind::List => 4,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            0 => Kind::String,
            1 => Kind::ZSet,
            2 => Kind::Hash,
            3 => Kind::Set,
            4 => Kind::List,
            _ => return None,
        })
    }
}

/// How a value's payload holds its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Enc {
    /// Inline: a string's bytes, a collection's compact form (a pack).
    Compact,
    /// A set of integers in an intset.
    IntSet,
    /// The payload is the id of a large collection in the element index, or of a
    /// large string's bytes.
    Large,
}

impl Enc {
    fn code(self) -> u8 {
        match self {
            Enc::Compact => 0,
            Enc::IntSet => 1,
            Enc::Large => 2,
        }
    }

    fn from_code(c: u8) -> Option<Enc> {
        Some(match c {
            0 => Enc::Compact,
            1 => Enc::IntSet,
            2 => Enc::Large,
            _ => return None,
        })
    }
}

const HAS_DEADLINE: u8 = 0x80;
const HAS_ACCESS: u8 = 0x40;
/// Where the access field starts (when the tag says there is one).
pub(crate) const ACCESS_AT: usize = 1;
/// The longest header: tag, access field, deadline.
pub(crate) const MAX_HEADER: usize = 13;
const TYPE_MASK: u8 = 0x0F;
const ENC_SHIFT: u8 = 4;

/// A decoded value: type, encoding, deadline, payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The value's type.
    pub(crate) kind: Kind,
    /// How its payload holds it.
    pub(crate) enc: Enc,
    /// Expiry deadline in Unix milliseconds, if any.
    pub(crate) deadline: Option<u64>,
    /// The payload bytes.
    pub(crate) payload: Vec<u8>,
}

impl Entry {
    /// A string without deadline.
    pub(crate) fn string(payload: Vec<u8>) -> Entry {
        Entry {
            kind: Kind::String,
            enc: Enc::Compact,
            deadline: None,
            payload,
        }
    }

    /// The id of a large collection.
    pub(crate) fn large_id(&self) -> Option<u64> {
        large_id(self.enc, &self.payload)
    }
}

/// The id in a payload of encoding `enc`, when it is a large collection's.
pub(crate) fn large_id(enc: Enc, payload: &[u8]) -> Option<u64> {
    match enc {
        Enc::Large => payload.try_into().ok().map(u64::from_be_bytes),
        _ => None,
    }
}

/// The decoded header of a stored value: type, encoding, deadline, where the payload starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The value's type.
    pub(crate) kind: Kind,
    /// Its encoding.
    pub(crate) enc: Enc,
    /// Its deadline.
    pub(crate) deadline: Option<u64>,
    /// Its access field (values written before the field existed have none).
    pub(crate) access: Option<u32>,
    /// The offset of the payload.
    pub(crate) at: usize,
}

/// Decodes the header of a stored value (`None` for bytes no write produced).
pub(crate) fn header(value: &[u8]) -> Option<Header> {
    let (&tag, _) = value.split_first()?;
    let kind = Kind::from_code(tag & TYPE_MASK)?;
    let enc = Enc::from_code((tag & !(HAS_DEADLINE | HAS_ACCESS)) >> ENC_SHIFT)?;
    if kind == Kind::String && enc == Enc::IntSet {
        return None;
    }
    let mut at = 1;
    let access = if tag & HAS_ACCESS != 0 {
        let a: [u8; 4] = value.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        Some(u32::from_le_bytes(a))
    } else {
        None
    };
    let deadline = if tag & HAS_DEADLINE != 0 {
        let d: [u8; 8] = value.get(at..at + 8)?.try_into().ok()?;
        at += 8;
        Some(u64::from_be_bytes(d))
    } else {
        None
    };
    Some(Header {
        kind,
        enc,
        deadline,
        access,
        at,
    })
}

/// Writes the header of a value of `kind` and `enc` with `deadline` to `out`, with an
/// access field of 0 (the store sets it when it stores the value: [`set_access`]).
pub(crate) fn put_header(out: &mut Vec<u8>, kind: Kind, enc: Enc, deadline: Option<u64>) {
    let tag = kind.code() | enc.code() << ENC_SHIFT | HAS_ACCESS;
    match deadline {
        Some(d) => {
            out.push(tag | HAS_DEADLINE);
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&d.to_be_bytes());
        }
        None => {
            out.push(tag);
            out.extend_from_slice(&[0; 4]);
        }
    }
}

/// Sets the access field of a stored value in place; `false` when it has none.
pub(crate) fn set_access(value: &mut [u8], access: u32) -> bool {
    match value.first() {
        Some(&tag) if tag & HAS_ACCESS != 0 && value.len() >= ACCESS_AT + 4 => {
            value[ACCESS_AT..ACCESS_AT + 4].copy_from_slice(&access.to_le_bytes());
            true
        }
        _ => false,
    }
}

/// Encodes `e` as stored.
pub(crate) fn encode(e: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(e.payload.len() + MAX_HEADER);
    put_header(&mut out, e.kind, e.enc, e.deadline);
    out.extend_from_slice(&e.payload);
    out
}

/// Decodes a stored value.
pub(crate) fn decode(value: &[u8]) -> Option<Entry> {
    let h = header(value)?;
    Some(Entry {
        kind: h.kind,
        enc: h.enc,
        deadline: h.deadline,
        payload: value[h.at..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_garbage() {
        for e in [
            Entry::string(b"abc".to_vec()),
            Entry {
                kind: Kind::ZSet,
                enc: Enc::Large,
                deadline: Some(123),
                payload: 5u64.to_be_bytes().to_vec(),
            },
            Entry {
                kind: Kind::Set,
                enc: Enc::IntSet,
                deadline: None,
                payload: vec![2],
            },
            Entry {
                kind: Kind::List,
                enc: Enc::Compact,
                deadline: Some(u64::MAX),
                payload: vec![],
            },
        ] {
            let mut raw = encode(&e);
            assert_eq!(decode(&raw), Some(e.clone()));
            assert!(set_access(&mut raw, 0xdead_beef));
            assert_eq!(header(&raw).unwrap().access, Some(0xdead_beef));
            assert_eq!(decode(&raw), Some(e.clone()));
            assert_eq!(e.large_id(), (e.enc == Enc::Large).then_some(5));
        }
        assert_eq!(header(b""), None);
        assert_eq!(header(&[0x0F]), None);
        assert_eq!(header(&[0x30]), None);
        assert_eq!(header(&[0x10]), None, "a string is never an intset");
        assert_eq!(header(&[0x20]).map(|h| h.enc), Some(Enc::Large));
        assert_eq!(header(&[0x80, 1, 2]), None);
        assert_eq!(header(&[0x40, 1, 2]), None);
        // A value written before the access field existed.
        let old = [0x80, 0, 0, 0, 0, 0, 0, 0, 9, b'x'];
        let h = header(&old).unwrap();
        assert_eq!((h.deadline, h.access, h.at), (Some(9), None, 9));
        assert!(!set_access(&mut old.clone(), 1));
    }
}
