//! [`Index`]: the structure behind a Python map, one variant per structure, shared by `Arc`
//! so that iterators and bulk operations running without the GIL hold it too.
//!
//! Point and bulk operations go through the structure's trait objects
//! ([`KvUpdate`] and [`OrderedKvIndex`]): one dynamic call per
//! operation, against the hundreds of nanoseconds a call from Python costs anyway. Iteration
//! needs the concrete types (their `BatchSource` copies a group of pairs at a time), and
//! so does `remove_range`; those match on the variant. An SLB over an ordered structure is
//! an `Slb<Arc<dyn OrderedKvIndex>>`, over Mercury an `Slb<Arc<dyn KvIndex>>`; either keeps
//! the [`Index`] it wraps, which iteration reads (every write goes through the SLB, so the
//! wrapped structure holds every acknowledged write).

use std::ops::Bound;
use std::sync::Arc;

use orrery::cuckoo_trie::{self, CuckooTrie};
use orrery::hyperion::{self, Hyperion};
use orrery::mercury::{self, Mercury};
use orrery::prelude::KvUpdate;
use orrery::slb::{self, Slb};
use orrery::wormhole::{self, Wormhole};
use orrery::{ConfigError, KvIndex, MemoryUsage, OrderedKvIndex};

/// An SLB over an ordered structure.
pub(crate) type SlbOrdered = Slb<Arc<dyn OrderedKvIndex>>;
/// An SLB over Mercury.
pub(crate) type SlbHash = Slb<Arc<dyn KvIndex>>;

/// The structure behind a Python map.
#[derive(Clone)]
pub(crate) enum Index {
    Wormhole(Arc<Wormhole>),
    CuckooTrie(Arc<CuckooTrie>),
    Hyperion(Arc<Hyperion>),
    Mercury(Arc<Mercury>),
    /// An SLB over an ordered structure, and that structure.
    SlbOrdered(Arc<SlbOrdered>, Box<Index>),
    /// An SLB over Mercury, and that table.
    SlbHash(Arc<SlbHash>, Box<Index>),
}

/// The configuration of an [`Index`], to build an empty one like it.
#[derive(Clone)]
pub(crate) enum Config {
    Wormhole(wormhole::Config),
    CuckooTrie(cuckoo_trie::Config),
    Hyperion(hyperion::Config),
    Mercury(mercury::Config),
}

impl Index {
    /// An empty structure with `config`.
    pub(crate) fn build(config: Config) -> Result<Index, ConfigError> {
        Ok(match config {
            Config::Wormhole(c) => Index::Wormhole(Arc::new(Wormhole::with_config(c)?)),
            Config::CuckooTrie(c) => Index::CuckooTrie(Arc::new(CuckooTrie::with_config(c)?)),
            Config::Hyperion(c) => Index::Hyperion(Arc::new(Hyperion::with_config(c)?)),
            Config::Mercury(c) => Index::Mercury(Arc::new(Mercury::with_config(c)?)),
        })
    }

    /// An SLB with `config` over `inner` (not itself an SLB).
    pub(crate) fn slb(inner: Index, config: slb::Config) -> Result<Index, ConfigError> {
        Ok(match &inner {
            Index::Wormhole(w) => {
                let dyn_index: Arc<dyn OrderedKvIndex> = w.clone();
                Index::SlbOrdered(
                    Arc::new(Slb::with_config(dyn_index, config)?),
                    Box::new(inner),
                )
            }
            Index::CuckooTrie(c) => {
                let dyn_index: Arc<dyn OrderedKvIndex> = c.clone();
                Index::SlbOrdered(
                    Arc::new(Slb::with_config(dyn_index, config)?),
                    Box::new(inner),
                )
            }
            Index::Hyperion(h) => {
                let dyn_index: Arc<dyn OrderedKvIndex> = h.clone();
                Index::SlbOrdered(
                    Arc::new(Slb::with_config(dyn_index, config)?),
                    Box::new(inner),
                )
            }
            Index::Mercury(m) => {
                let dyn_index: Arc<dyn KvIndex> = m.clone();
                Index::SlbHash(
                    Arc::new(Slb::with_config(dyn_index, config)?),
                    Box::new(inner),
                )
            }
            Index::SlbOrdered(..) | Index::SlbHash(..) => {
                return Err(ConfigError::Invalid {
                    field: "inner",
                    reason: "must not itself be an Slb",
                });
            }
        })
    }

    /// The configuration of this structure (for an SLB, of the structure it wraps).
    pub(crate) fn config(&self) -> Config {
        match self {
            Index::Wormhole(w) => Config::Wormhole(*w.config()),
            Index::CuckooTrie(c) => Config::CuckooTrie(*c.config()),
            Index::Hyperion(h) => Config::Hyperion(h.config().clone()),
            Index::Mercury(m) => Config::Mercury(m.config().clone()),
            Index::SlbOrdered(_, inner) | Index::SlbHash(_, inner) => inner.config(),
        }
    }

    /// The SLB's configuration, if this is an SLB.
    pub(crate) fn slb_config(&self) -> Option<&slb::Config> {
        match self {
            Index::SlbOrdered(s, _) => Some(s.buffer().config()),
            Index::SlbHash(s, _) => Some(s.buffer().config()),
            _ => None,
        }
    }

    /// The point operations.
    #[inline]
    pub(crate) fn kv(&self) -> &dyn KvUpdate {
        match self {
            Index::Wormhole(w) => &**w,
            Index::CuckooTrie(c) => &**c,
            Index::Hyperion(h) => &**h,
            Index::Mercury(m) => &**m,
            Index::SlbOrdered(s, _) => &**s,
            Index::SlbHash(s, _) => &**s,
        }
    }

    /// The ordered operations, `None` for Mercury (and an SLB over it).
    #[inline]
    pub(crate) fn ordered(&self) -> Option<&dyn OrderedKvIndex> {
        match self {
            Index::Wormhole(w) => Some(&**w),
            Index::CuckooTrie(c) => Some(&**c),
            Index::Hyperion(h) => Some(&**h),
            Index::SlbOrdered(s, _) => Some(&**s),
            Index::Mercury(_) | Index::SlbHash(..) => None,
        }
    }

    /// The structure iteration reads: the structure itself, or the one an SLB wraps.
    pub(crate) fn base(&self) -> &Index {
        match self {
            Index::SlbOrdered(_, inner) | Index::SlbHash(_, inner) => inner.base(),
            other => other,
        }
    }

    /// Bytes held (an SLB: its buffer and the structure it wraps).
    pub(crate) fn memory_usage(&self) -> MemoryUsage {
        self.kv().memory_usage()
    }

    /// Removes every key in `lo..hi` (ordered structures); how many were removed. Through the
    /// SLB when there is one, so that its cache stays coherent.
    pub(crate) fn remove_range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> usize {
        match self {
            Index::Wormhole(w) => w.remove_range(lo, hi),
            Index::CuckooTrie(c) => c.remove_range(lo, hi),
            Index::Hyperion(h) => h.remove_range(lo, hi),
            Index::SlbOrdered(s, _) => s.remove_range(lo, hi),
            Index::Mercury(_) | Index::SlbHash(..) => {
                unreachable!("remove_range on an unordered structure")
            }
        }
    }

    /// Removes every key; how many this call removed. Not atomic: keys inserted meanwhile
    /// may survive.
    pub(crate) fn clear(&self) -> usize {
        if self.ordered().is_some() {
            return self.remove_range(Bound::Unbounded, Bound::Unbounded);
        }
        // Unordered: one walk of the table, removing each key it yields (the walk holds
        // no lock between batches, so removing behind it is allowed; every key present for
        // the whole walk is yielded once).
        let Index::Mercury(table) = self.base() else {
            unreachable!("the only unordered base is Mercury")
        };
        let mut removed = 0;
        for e in table.iter() {
            removed += usize::from(self.kv().remove(e.key()));
        }
        removed
    }

    /// The name of the structure's Python class.
    pub(crate) fn class_name(&self) -> &'static str {
        match self {
            Index::Wormhole(_) => "Wormhole",
            Index::CuckooTrie(_) => "CuckooTrie",
            Index::Hyperion(_) => "Hyperion",
            Index::Mercury(_) => "Mercury",
            Index::SlbOrdered(..) | Index::SlbHash(..) => "Slb",
        }
    }
}
