//! The fsync policy, the persistence settings `CONFIG SET` changes while the server runs,
//! and the figures `INFO persistence` reports.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

/// When the file is `fdatasync`ed (`--appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// Before every reply to a write (group-committed).
    Always,
    /// Once a second.
    EverySec,
    /// Never explicitly (the kernel writes back).
    No,
}

impl Fsync {
    /// The setting's name.
    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// Figures for `INFO persistence`.
#[derive(Default)]
pub(crate) struct AofStats {
    pub(crate) rewrites: AtomicU64,
    pub(crate) auto_rewrites: AtomicU64,
    pub(crate) last_rewrite_ok: AtomicBool,
    pub(crate) base_size: AtomicU64,
    pub(crate) current_size: AtomicU64,
    pub(crate) rewrite_in_progress: AtomicBool,
    pub(crate) loaded_frames: AtomicU64,
    /// The longest time, in microseconds, that acknowledged writes waited in the kernel's
    /// page cache for the `fdatasync` covering them: what a crash of the whole machine
    /// could lose, in time (0 under `always`, whose replies wait for the sync; under `no`
    /// only the forced syncs of rewrites and shutdown count).
    pub(crate) max_unsynced_us: AtomicU64,
    /// Bytes written to the file and not yet synced, as of the last flush.
    pub(crate) unsynced_bytes: AtomicU64,
}

/// The settings `CONFIG SET` may change while the server runs.
pub(crate) struct AofSettings {
    fsync: AtomicU8,
    /// `auto-aof-rewrite-percentage` (0: off).
    pub(crate) auto_percentage: AtomicU64,
    /// `auto-aof-rewrite-min-size`, bytes.
    pub(crate) auto_min_size: AtomicU64,
    /// `aof-rewrite-key-delay`: microseconds the rewrite sleeps after each key (0: none;
    /// a testing knob, like Redis's `rdb-key-save-delay`, that makes a rewrite long
    /// enough to be interrupted).
    pub(crate) key_delay_us: AtomicU64,
}

impl AofSettings {
    /// Settings with the given values.
    pub(crate) fn new(fsync: Fsync, percentage: u64, min_size: u64, key_delay_us: u64) -> Self {
        AofSettings {
            fsync: AtomicU8::new(fsync as u8),
            auto_percentage: AtomicU64::new(percentage),
            auto_min_size: AtomicU64::new(min_size),
            key_delay_us: AtomicU64::new(key_delay_us),
        }
    }

    /// The fsync policy in force.
    pub(crate) fn fsync(&self) -> Fsync {
        match self.fsync.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    /// Changes the fsync policy (takes effect at the flusher's next round).
    pub(crate) fn set_fsync(&self, f: Fsync) {
        self.fsync.store(f as u8, Ordering::Relaxed);
    }
}
