//! The optimizations of the paper's Fig 11 as compile-time switches.
//!
//! The paper measures Wormhole's optimizations by turning them on one at a time, starting
//! from *BaseWormhole* (all off). Here each is a bit of the const parameter `OPTS` of
//! [`WormholeWith`](crate::WormholeWith); the engine tests the bits with `if` on
//! constants, so every variant is compiled separately and the default
//! [`Wormhole`](crate::Wormhole) (all bits set) carries no check of a switch, and no code
//! of the paths it turns off, on its lookup path. None of the switches changes a result,
//! only speed.
//!
//! | bit | paper | on | off |
//! |---|---|---|---|
//! | [`TAG_MATCHING`] | §3.1 | MetaTrieHT probes trust 16-bit tags, one full comparison at the end | every probe compares the whole prefix |
//! | [`INC_HASHING`] | §3.1 | a prefix's CRC32C extends the last matched prefix's | every probe hashes its prefix from scratch |
//! | [`SORT_BY_TAG`] | §3.2 | point operations search the hash-ordered tag array | leaves are kept in key order and binary-searched with key comparisons |
//! | [`DIRECT_POS`] | §3.2 | the tag search starts at the tag's home slot | binary search over the tags (only meaningful with `SORT_BY_TAG`) |
//!
//! Variants are types (the benchmark registers the paper's sequence, `BASE`, `+TAG_MATCHING`,
//! `+INC_HASHING`, `+SORT_BY_TAG`, `ALL`, as `wormhole-base` … `wormhole`):
//!
//! ```
//! use orrery_wormhole::ablation::{BASE, INC_HASHING, TAG_MATCHING};
//! use orrery_wormhole::{Config, Wormhole, WormholeWith};
//!
//! let base = WormholeWith::<BASE>::new(); // BaseWormhole
//! let tm = WormholeWith::<TAG_MATCHING>::with_config(Config::default()).unwrap();
//! let tm_ih = WormholeWith::<{ TAG_MATCHING | INC_HASHING }>::new();
//! let full = Wormhole::new(); // `WormholeWith<ALL>`
//! for wh in [&base as &dyn orrery_core::KvIndex, &tm, &tm_ih, &full] {
//!     wh.insert(b"k", b"v").unwrap();
//!     assert_eq!(wh.get(b"k").as_deref(), Some(&b"v"[..]));
//! }
//! ```

/// *TagMatching* (§3.1).
pub const TAG_MATCHING: u32 = 1 << 0;
/// *IncHashing* (§3.1).
pub const INC_HASHING: u32 = 1 << 1;
/// *SortByTag* (§3.2).
pub const SORT_BY_TAG: u32 = 1 << 2;
/// *DirectPos* (§3.2).
pub const DIRECT_POS: u32 = 1 << 3;
/// All optimizations: the parameter of [`Wormhole`](crate::Wormhole).
pub const ALL: u32 = TAG_MATCHING | INC_HASHING | SORT_BY_TAG | DIRECT_POS;
/// None: the paper's *BaseWormhole*.
pub const BASE: u32 = 0;

/// Whether the bit set `opts` has `bit` (evaluated at compile time for a const `opts`).
#[inline(always)]
pub(crate) const fn has(opts: u32, bit: u32) -> bool {
    opts & bit != 0
}
