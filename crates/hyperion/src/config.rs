//! [`Config`] and its builder.

use orrery_core::api::ConfigError;

/// Options of a [`Hyperion`](crate::Hyperion) index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Number of arenas (1..=256): the 256 first-byte tries are mapped round-robin onto
    /// them, each arena with its own memory manager and lock (§3.2). Default 16.
    pub arenas: usize,
    /// Ejection threshold in bytes (§3.1/§4.1): once a container is larger, the embedded
    /// container an insert goes into is ejected into its own block. Default 16 KiB (the
    /// paper's value for string keys; it used 8 KiB for integer keys). 256..=4 MiB.
    pub eject_threshold: usize,
    /// Key pre-processing (§3.4) for integer-like, uniformly distributed keys. Default off.
    pub preprocess: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            arenas: 16,
            eject_threshold: 16 * 1024,
            preprocess: false,
        }
    }
}

impl Config {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=256).contains(&self.arenas) {
            return Err(ConfigError::Invalid {
                field: "arenas",
                reason: "must be in 1..=256",
            });
        }
        if !(256..=4 << 20).contains(&self.eject_threshold) {
            return Err(ConfigError::Invalid {
                field: "eject_threshold",
                reason: "must be in 256..=4 MiB",
            });
        }
        Ok(())
    }
}

orrery_core::config_builder!(Config => ConfigBuilder {
    arenas: usize,
    eject_threshold: usize,
    preprocess: bool,
});
