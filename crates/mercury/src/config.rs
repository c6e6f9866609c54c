//! The construction parameters of a Mercury table: [`Config`], its builder, who migrates
//! buckets during an expansion ([`Expansion`]) and the limits and defaults they check.
//!
//! A leaf module: the engine (`raw.rs`) and the pre-fault thread (`prefault.rs`) read a
//! validated, normalized `Config`; the crate root re-exports everything public here.

use orrery_core::api::ConfigError;

/// Who migrates buckets during an expansion (see `expand.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Expansion {
    /// Writers migrate a run of buckets every few inserts (the default).
    #[default]
    Cooperative,
    /// A dedicated expand-thread per expansion, as in the paper.
    Dedicated,
}

/// Default of [`Config::load_percent`]: a table doubles above one item per bucket.
///
/// With 32-byte cells the expansions' fresh bucket arrays (first-touch page faults) weigh on
/// a bulk load; one item per bucket keeps half as many cells as a 75% load would, while a
/// GET stays near 1.3 DRAM round trips (measured: `docs/results/mercury.md`, "Load factor").
pub const DEFAULT_LOAD_PERCENT: usize = 100;

/// Construction parameters of a [`Mercury`](crate::Mercury) table.
///
/// ```
/// use orrery_mercury::{Config, Expansion, Mercury};
/// let config = Config::builder()
///     .initial_buckets(1 << 16)
///     .expansion(Expansion::Dedicated)
///     .build()
///     .unwrap();
/// let m = Mercury::with_config(config).unwrap();
/// assert!(m.is_empty());
/// assert!(Config::builder().load_percent(0).build().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    /// Buckets of the initial table, `1..=`[`MAX_INITIAL_BUCKETS`] (rounded up to a power
    /// of two), and the smallest the table shrinks to.
    pub initial_buckets: usize,
    /// The table doubles when it holds more than `load_percent` items per 100 buckets
    /// (default [`DEFAULT_LOAD_PERCENT`] = 100: the paper keeps "about one item per bucket").
    /// At least 1.
    pub load_percent: usize,
    /// Who migrates buckets during an expansion (and a shrink).
    pub expansion: Expansion,
    /// Buckets migrated per run (between two publications of the progress *r*). At least 1.
    pub migrate_run: usize,
    /// Whether a background thread populates the successor's pages ahead of the migration
    /// during expansions of tables of at least 64 Ki buckets (2 MiB of cells; smaller
    /// tables never start it). Default `true`: the first touch of a successor's fresh pages
    /// is most of a migration's cost (measured: `docs/results/mercury.md`), and the
    /// thread moves it off the inserts that migrate, onto a core that is idle unless every
    /// core runs a worker (then the work is the same pages the workers would have faulted).
    /// One thread per table, parked between expansions, joined when the table is dropped.
    /// See `prefault.rs` and `docs/mercury.md`, "Choices made by measurement".
    pub prefault: bool,
    /// Whether each bucket has an inline area for one small pair (32-byte cells; default
    /// `true`): a pair whose key and value total at most 16 bytes is then stored in its
    /// bucket while the area is free, and a GET of it reads one cache line. With `false`
    /// a bucket is the bucket word alone (8-byte cells, the paper's layout) and every pair
    /// is a node: a quarter of the bucket array's bytes, so four times the buckets (shorter
    /// chains) for the same memory. For tables whose pairs never fit inline (key and value
    /// over 16 bytes) the area is dead weight, and `false` is denser at no cost.
    pub inline_pairs: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            initial_buckets: 1024,
            load_percent: DEFAULT_LOAD_PERCENT,
            expansion: Expansion::Cooperative,
            migrate_run: 64,
            prefault: true,
            inline_pairs: true,
        }
    }
}

/// Largest [`Config::initial_buckets`]: 2^40.
pub const MAX_INITIAL_BUCKETS: usize = 1 << 40;

impl Config {
    /// Checks every field (nothing is clamped): `initial_buckets` in
    /// `1..=`[`MAX_INITIAL_BUCKETS`] (rounded up to a power of two when the table is
    /// built), `load_percent` and `migrate_run` at least 1.
    pub fn validate(&self) -> std::result::Result<(), ConfigError> {
        let invalid = |field, reason| Err(ConfigError::Invalid { field, reason });
        if !(1..=MAX_INITIAL_BUCKETS).contains(&self.initial_buckets) {
            return invalid("initial_buckets", "must be in 1..=2^40");
        }
        if self.load_percent == 0 {
            return invalid("load_percent", "must be at least 1");
        }
        if self.migrate_run == 0 {
            return invalid("migrate_run", "must be at least 1");
        }
        Ok(())
    }

    /// `initial_buckets` rounded up to a power of two (after validation).
    pub(crate) fn normalized(mut self) -> Config {
        self.initial_buckets = self.initial_buckets.next_power_of_two();
        self
    }
}

orrery_core::config_builder!(Config => ConfigBuilder {
    initial_buckets: usize,
    load_percent: usize,
    expansion: Expansion,
    migrate_run: usize,
    prefault: bool,
    inline_pairs: bool,
});
