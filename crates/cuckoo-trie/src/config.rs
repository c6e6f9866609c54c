//! Construction options: symbol size, prefetch depth, initial table size.
//!
//! The pattern every Orrery structure shares: a `Config` with public fields and the
//! paper's defaults, a builder (`orrery_core::config_builder!`) whose `build` validates into a `Result`, and `with_config`,
//! which validates again (fields are public). Nothing is clamped.

use orrery_core::api::ConfigError;

/// Options of a Cuckoo Trie, built and validated by [`Config::builder`].
///
/// ```
/// use orrery_cuckoo_trie::Config;
/// let c = Config::builder().prefetch_depth(8).initial_buckets(4).build().unwrap();
/// assert_eq!(c.symbol_bits, 5);
/// assert!(Config::builder().symbol_bits(6).build().is_err());
/// assert!(Config::builder().initial_buckets(100).build().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Bits per trie symbol (paper: 5; `1..=5`). A key is read as a string of symbols of
    /// this many bits (the last one zero-padded) followed by an end symbol; a bitmap node
    /// has one child bit per symbol value plus the end symbol, at most 33 bits, which is
    /// what the 15-byte entry has room for.
    pub symbol_bits: u32,
    /// `D`, the prefetch depth of the search (Algorithm 1; paper: 5; `1..=16`): the search
    /// keeps the buckets of the next `D` prefixes of the key in flight.
    pub prefetch_depth: usize,
    /// Buckets of the initial table (a power of two, `4..=2^36`; default 1024, 64 KiB).
    /// The table doubles when an insert finds no room.
    pub initial_buckets: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            symbol_bits: 5,
            prefetch_depth: 5,
            initial_buckets: 1024,
        }
    }
}

impl Config {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=5).contains(&self.symbol_bits) {
            return Err(ConfigError::Invalid {
                field: "symbol_bits",
                reason: "must be in 1..=5",
            });
        }
        if !(1..=16).contains(&self.prefetch_depth) {
            return Err(ConfigError::Invalid {
                field: "prefetch_depth",
                reason: "must be in 1..=16",
            });
        }
        if !self.initial_buckets.is_power_of_two()
            || !(4..=1 << 36).contains(&(self.initial_buckets as u64))
        {
            return Err(ConfigError::Invalid {
                field: "initial_buckets",
                reason: "must be a power of two in 4..=2^36",
            });
        }
        Ok(())
    }
}

orrery_core::config_builder!(Config => ConfigBuilder {
    symbol_bits: u32,
    prefetch_depth: usize,
    initial_buckets: usize,
});
