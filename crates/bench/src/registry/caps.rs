//! What an index can do ([`Caps`]): the flags a run checks before it builds anything, so
//! that an impossible pairing (a scan on a point index, a key an index refuses, several
//! threads on a single-threaded peer) is a clear message rather than a wrong number.

/// What an index can do, checked before a run so that an impossible pairing is a clear
/// message rather than a wrong number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Supports ordered scans (`OrderedKvIndex`).
    pub(crate) ordered: bool,
    /// May be used from several threads at once.
    pub(crate) concurrent: bool,
    /// Accepts only keys of exactly this length.
    pub(crate) key_len: Option<usize>,
    /// Accepts only values of exactly this length.
    pub(crate) value_len: Option<usize>,
    /// `memory_usage()` reports real figures.
    pub(crate) reports_memory: bool,
    /// Replacing a present key's value is atomic: concurrent lookups never miss the key.
    /// False for peers whose upsert is remove-then-insert (crossbeam-skiplist); their
    /// multi-threaded misses are reported as warnings instead of failing the run.
    pub(crate) atomic_upsert: bool,
    /// Supports `remove` (false for the Cuckoo Trie authors' C code, which has no deletion:
    /// workloads that delete are refused before the index is built).
    pub(crate) removes: bool,
    /// Keys may contain the byte 0x00 only when they are exactly 8 bytes long (Judy: 8-byte
    /// keys go to JudyL as integers, others to JudySL, whose keys are NUL-terminated
    /// strings): datasets whose keys may hold 0x00 and are not all 8 bytes are refused,
    /// and the peer's `insert` of such a key is an error.
    pub(crate) nul_only_in_8_byte_keys: bool,
    /// `memory_usage()` is complete only when every key is 8 bytes long (Judy: JudyL has
    /// `JudyLMemUsed`, JudySL has no count); with other keys memory shows as n/a.
    pub(crate) memory_only_8_byte_keys: bool,
}

impl Caps {
    /// A thread-safe index accepting any key and value, reporting its memory.
    pub(crate) const CONCURRENT: Caps = Caps {
        ordered: true,
        concurrent: true,
        key_len: None,
        value_len: None,
        reports_memory: true,
        atomic_upsert: true,
        removes: true,
        nul_only_in_8_byte_keys: false,
        memory_only_8_byte_keys: false,
    };

    /// A thread-safe peer with no memory accounting of its own.
    pub(super) const PEER: Caps = Caps {
        reports_memory: false,
        ..Caps::CONCURRENT
    };

    /// A short description of the limits, for listings.
    pub(crate) fn describe(&self) -> String {
        let mut parts = vec![if self.ordered { "ordered" } else { "point" }.to_string()];
        parts.push(
            if self.concurrent {
                "concurrent"
            } else {
                "1 thread"
            }
            .into(),
        );
        if let Some(k) = self.key_len {
            parts.push(format!("{k}-byte keys"));
        }
        if let Some(v) = self.value_len {
            parts.push(format!("{v}-byte values"));
        }
        if !self.reports_memory {
            parts.push("no memory_usage".into());
        }
        if !self.removes {
            parts.push("no remove".into());
        }
        if self.nul_only_in_8_byte_keys {
            parts.push("0x00 only in 8-byte keys".into());
        }
        if self.memory_only_8_byte_keys {
            parts.push("memory_usage for 8-byte keys only".into());
        }
        parts.join(", ")
    }
}
