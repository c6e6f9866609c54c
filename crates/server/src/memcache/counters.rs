//! The command counters of `stats`, named as memcached names them.
//!
//! A connection counts into its own [`Tally`] while it runs a batch of requests and adds
//! it to the server's [`Counters`] once per batch, so that the request path does not
//! contend on shared cache lines for every command (memcached keeps per-thread counters
//! for the same reason).

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// One counter of `stats` (the variant's name is memcached's field name).
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Stat { $($name),* }

        impl Stat {
            /// Every counter, in `stats` order.
            pub(crate) const ALL: &'static [Stat] = &[$(Stat::$name),*];

            /// memcached's name of the counter.
            pub(crate) fn name(self) -> &'static str {
                match self { $(Stat::$name => stringify!($name)),* }
            }
        }
    };
}

counters!(
    cmd_get,
    cmd_set,
    cmd_flush,
    cmd_touch,
    cmd_meta,
    get_hits,
    get_misses,
    get_expired,
    get_flushed,
    delete_misses,
    delete_hits,
    incr_misses,
    incr_hits,
    decr_misses,
    decr_hits,
    cas_misses,
    cas_hits,
    cas_badval,
    touch_hits,
    touch_misses,
    store_too_large,
    store_no_memory,
    auth_cmds,
    auth_errors,
    bytes_read,
    bytes_written,
    total_items,
);

const N: usize = Stat::ALL.len();

/// A connection's counts since its last flush.
#[derive(Debug)]
pub(crate) struct Tally([u64; N]);

impl Default for Tally {
    fn default() -> Tally {
        Tally([0; N])
    }
}

impl Tally {
    /// Adds one to `s`.
    pub(crate) fn bump(&mut self, s: Stat) {
        self.0[s as usize] += 1;
    }

    /// Adds `n` to `s`.
    pub(crate) fn add(&mut self, s: Stat, n: u64) {
        self.0[s as usize] += n;
    }

    /// Moves the counts into `to` and zeroes them.
    pub(crate) fn flush(&mut self, to: &Counters) {
        for (i, v) in self.0.iter_mut().enumerate() {
            if *v != 0 {
                to.0[i].fetch_add(*v, Ordering::Relaxed);
                *v = 0;
            }
        }
    }
}

/// The server's counters.
pub(crate) struct Counters([AtomicU64; N]);

impl Default for Counters {
    fn default() -> Counters {
        Counters(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl Counters {
    /// The value of `s`.
    pub(crate) fn get(&self, s: Stat) -> u64 {
        self.0[s as usize].load(Ordering::Relaxed)
    }

    /// `stats reset`: every counter to zero.
    pub(crate) fn reset(&self) {
        for c in &self.0 {
            c.store(0, Ordering::Relaxed);
        }
    }
}
