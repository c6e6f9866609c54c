//! What the memcached connections share: the items, the counters, the settings and the
//! connection counts of `stats`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};

use super::counters::Counters;
use super::store::Items;
use super::token::Limits;
use crate::memory::Memory;

/// The memcached front end's settings (memcached's flag beside each).
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// TCP port (`-p`; 0: let the system choose).
    pub(crate) port: u16,
    /// Address to listen on (`-l`).
    pub(crate) bind: String,
    /// The Orrery structure holding the items.
    pub(crate) index: String,
    /// Memory limit in bytes (`-m`, given in MiB; 0: none).
    pub(crate) memory: usize,
    /// Largest item (`-I`), in memcached's accounting (key, data and 59 bytes).
    pub(crate) max_item: usize,
    /// Refuse writes at the limit instead of evicting (`-M`).
    pub(crate) no_evict: bool,
    /// Most connections (`-c`).
    pub(crate) max_conns: usize,
    /// Keys sampled per eviction.
    pub(crate) samples: usize,
}

/// The state every memcached connection shares.
pub(crate) struct Memcache {
    pub(crate) items: Items,
    pub(crate) counters: Counters,
    pub(crate) settings: Settings,
    pub(crate) verbosity: AtomicU32,
    pub(crate) curr_conns: AtomicUsize,
    pub(crate) total_conns: AtomicU64,
    pub(crate) rejected_conns: AtomicU64,
    /// Unix seconds at start.
    pub(crate) started: u64,
    /// The memory limit (shared with the items, which evict through it).
    pub(crate) memory: Arc<Memory>,
}

impl Memcache {
    /// The parser's limits.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_item: self.settings.max_item,
            max_get_line: 64 << 20,
        }
    }
}
