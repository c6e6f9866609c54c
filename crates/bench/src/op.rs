//! One pre-generated operation of a stream, packed in a `u64`: what it does ([`Kind`]),
//! a small parameter (a scan's length, or a Facebook request's value-size class) and the
//! index of its key in the dataset.
//!
//! The streams are generated before the clock starts, one [`Op`] per operation, so the
//! measured loop only decodes shifts and masks. This is the bottom of the workload layer:
//! `workloads` (YCSB and paper workloads) and `facebook` (the Memcached pools) both produce
//! [`Op`]s, and `exec` consumes them.

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Look the key up.
    Read = 0,
    /// Overwrite an existing key's value.
    Update = 1,
    /// Insert a new key.
    Insert = 2,
    /// Scan `len` keys from the key.
    Scan = 3,
    /// Read, modify and write back the value.
    Rmw = 4,
    /// Remove the key.
    Delete = 5,
    /// Scan every key from the first (the key index is unused).
    ScanAll = 6,
}

/// One pre-generated operation: kind (4 bits), scan length (8 bits), key index (52 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Op(u64);

impl Op {
    pub(crate) fn new(kind: Kind, len: u8, key: u64) -> Op {
        debug_assert!(key < 1 << 52);
        Op((kind as u64) << 60 | u64::from(len) << 52 | key)
    }

    /// The operation's kind.
    #[inline]
    pub(crate) fn kind(self) -> Kind {
        match self.0 >> 60 {
            0 => Kind::Read,
            1 => Kind::Update,
            2 => Kind::Insert,
            3 => Kind::Scan,
            4 => Kind::Rmw,
            5 => Kind::Delete,
            _ => Kind::ScanAll,
        }
    }

    /// Number of keys a scan visits.
    #[inline]
    pub(crate) fn len(self) -> usize {
        ((self.0 >> 52) & 0xFF) as usize
    }

    /// Index of the key in the dataset.
    #[inline]
    pub(crate) fn key(self) -> usize {
        (self.0 & ((1 << 52) - 1)) as usize
    }
}
