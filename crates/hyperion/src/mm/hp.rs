//! Hyperion Pointers (the [module docs](super), "Hyperion Pointer"): 5-byte addresses of
//! chunks — superbin, metabin, bin, chunk — and the size constants of the hierarchy.

/// Size step of the superbins.
pub(crate) const STEP: usize = 32;
/// Largest chunk served from bins; larger blocks use extended bins.
pub(crate) const MAX_SMALL: usize = 2016;
/// Chunks per bin.
pub(super) const CHUNKS_PER_BIN: usize = 4096;
/// Bins per metabin.
pub(super) const BINS_PER_METABIN: usize = 256;
/// Metabins per superbin.
pub(super) const METABINS: usize = 1 << 14;
/// Chunks a new bin has room for (it doubles up to [`CHUNKS_PER_BIN`]).
pub(super) const FIRST_CHUNKS: usize = 8;
/// Bytes of an extended-bin chunk (one eHP).
pub(super) const EXT_CHUNK: usize = 16;
/// Superbins.
pub(super) const SUPERBINS: usize = 64;
/// eHP flag: the chunk is a slot of a chained extended bin.
pub(crate) const FLAG_CHAIN: u16 = 1;
/// Slots of a chained extended bin: 64, where the paper has 8 (see the [module
/// docs](super), "Chained extended bins", for why).
pub(crate) const CHAIN_SLOTS: usize = 64;
/// T-Node keys per chain slot: slot `i` is responsible for the keys
/// `[SLOT_KEYS·i, SLOT_KEYS·(i+1))`.
pub(crate) const SLOT_KEYS: usize = 256 / CHAIN_SLOTS;

/// A 5-byte Hyperion Pointer (see the [module docs](self)).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub(crate) struct Hp(pub(super) u64);

impl Hp {
    /// Bytes an HP takes in a container.
    pub(crate) const BYTES: usize = 5;

    /// The 40-bit value.
    #[inline]
    pub(crate) fn raw(self) -> u64 {
        self.0
    }

    /// An HP from its 40-bit value (higher bits dropped).
    #[inline]
    pub(crate) fn from_raw(v: u64) -> Hp {
        Hp(v & ((1 << 40) - 1))
    }

    pub(super) fn new(superbin: usize, bin_id: usize, chunk: usize) -> Hp {
        debug_assert!(superbin < SUPERBINS && bin_id < METABINS * BINS_PER_METABIN);
        Hp(((superbin as u64) << 34) | ((bin_id as u64) << 12) | chunk as u64)
    }

    pub(super) fn superbin(self) -> usize {
        (self.0 >> 34) as usize & (SUPERBINS - 1)
    }

    /// `metabin · 256 + bin`.
    pub(super) fn bin_id(self) -> usize {
        (self.0 >> 12) as usize & (METABINS * BINS_PER_METABIN - 1)
    }

    pub(super) fn chunk(self) -> usize {
        self.0 as usize & (CHUNKS_PER_BIN - 1)
    }

    /// Slot `i` of a chained extended bin whose first chunk is `self`.
    #[inline]
    pub(crate) fn slot(self, i: usize) -> Hp {
        debug_assert!(i < CHAIN_SLOTS && self.chunk().is_multiple_of(CHAIN_SLOTS));
        Hp(self.0 + i as u64)
    }

    /// The slot index of a chain slot (its chunk index mod [`CHAIN_SLOTS`]) and the
    /// chain's first slot.
    #[inline]
    pub(crate) fn chain_of(self) -> (Hp, usize) {
        let i = self.chunk() % CHAIN_SLOTS;
        (Hp(self.0 - i as u64), i)
    }

    /// The 5 stored bytes.
    pub(crate) fn to_bytes(self) -> [u8; 5] {
        let b = self.0.to_le_bytes();
        [b[0], b[1], b[2], b[3], b[4]]
    }

    /// Reads an HP from the first 5 bytes of `b`.
    #[inline]
    pub(crate) fn from_bytes(b: &[u8]) -> Hp {
        Hp(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], 0, 0, 0]))
    }
}
