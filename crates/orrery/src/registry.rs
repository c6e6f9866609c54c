//! Orrery's own structures by name: build a boxed index from a string such as `wormhole`
//! or `slb:mercury`.
//!
//! Programs that take the structure as a setting (the `orrery-server` binary's `--index`)
//! need one place that maps names to constructors and says what each can do: ordered
//! structures come back as `Box<dyn OrderedKvIndex>`, unordered ones as
//! `Box<dyn KvIndex>`, inside one [`AnyIndex`]. Peers and their dependencies are not here
//! (they stay in the benchmark crate); only structures compiled into this facade are.
//!
//! | name | structure | capability |
//! |---|---|---|
//! | `wormhole` (default) | [`Wormhole`](crate::wormhole::Wormhole) | ordered |
//! | `mercury` | [`Mercury`](crate::mercury::Mercury) | unordered |
//! | `cuckoo-trie` | [`CuckooTrie`](crate::cuckoo_trie::CuckooTrie) | ordered |
//! | `hyperion` | [`Hyperion`](crate::hyperion::Hyperion) | ordered |
//! | `slb:<name>` | [`Slb`](crate::slb::Slb) (default configuration) over `<name>` | as `<name>` |
//!
//! ```
//! # #[cfg(all(feature = "wormhole", feature = "slb"))] {
//! use orrery::registry::{self, Capability};
//!
//! let index = registry::build("slb:wormhole").unwrap();
//! assert_eq!(index.capability(), Capability::Ordered);
//! index.as_kv().insert(b"k", b"v").unwrap();
//! assert_eq!(index.as_kv().get(b"k").as_deref(), Some(&b"v"[..]));
//! assert!(registry::build("no-such-index").is_err());
//! # }
//! ```

use std::fmt;

use crate::{KvIndex, OrderedKvIndex};

/// Whether a structure keeps its keys in order (and so supports scans).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Point operations and ordered scans ([`OrderedKvIndex`]).
    Ordered,
    /// Point operations only ([`KvIndex`]).
    Unordered,
}

/// A structure built by name: ordered or unordered, behind a trait object.
pub enum AnyIndex {
    /// An ordered structure.
    Ordered(Box<dyn OrderedKvIndex>),
    /// An unordered structure.
    Unordered(Box<dyn KvIndex>),
}

impl AnyIndex {
    /// What the structure can do.
    pub fn capability(&self) -> Capability {
        match self {
            AnyIndex::Ordered(_) => Capability::Ordered,
            AnyIndex::Unordered(_) => Capability::Unordered,
        }
    }

    /// The point operations every structure has.
    pub fn as_kv(&self) -> &dyn KvIndex {
        match self {
            AnyIndex::Ordered(i) => &**i,
            AnyIndex::Unordered(i) => &**i,
        }
    }

    /// The ordered operations, or `None` for an unordered structure.
    pub fn as_ordered(&self) -> Option<&dyn OrderedKvIndex> {
        match self {
            AnyIndex::Ordered(i) => Some(&**i),
            AnyIndex::Unordered(_) => None,
        }
    }
}

impl fmt::Debug for AnyIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyIndex")
            .field("capability", &self.capability())
            .field("len", &self.as_kv().len())
            .finish()
    }
}

/// Why [`build`] could not make a structure.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// No structure of that name is compiled into this build.
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The structure exists but could not be built.
    Config(crate::ConfigError),
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Unknown { name } => {
                write!(f, "unknown index `{name}` (known: {})", names().join(", "))
            }
            RegistryError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RegistryError {}

impl From<crate::ConfigError> for RegistryError {
    fn from(e: crate::ConfigError) -> Self {
        RegistryError::Config(e)
    }
}

/// The name [`build`] resolves when a program has no setting: `wormhole` when compiled in,
/// else `mercury`.
pub const DEFAULT: &str = if cfg!(feature = "wormhole") {
    "wormhole"
} else {
    "mercury"
};

/// The base names compiled into this build (each may also be prefixed with `slb:` when the
/// `slb` feature is on).
pub fn names() -> Vec<&'static str> {
    let mut out = Vec::new();
    if cfg!(feature = "wormhole") {
        out.push("wormhole");
    }
    if cfg!(feature = "mercury") {
        out.push("mercury");
    }
    if cfg!(feature = "cuckoo-trie") {
        out.push("cuckoo-trie");
    }
    if cfg!(feature = "hyperion") {
        out.push("hyperion");
    }
    out
}

/// Builds the structure named `name` with its default configuration (see the
/// [module docs](self) for the names).
pub fn build(name: &str) -> Result<AnyIndex, RegistryError> {
    let unknown = || RegistryError::Unknown {
        name: name.to_string(),
    };
    if let Some(inner) = name.strip_prefix("slb:") {
        #[cfg(feature = "slb")]
        {
            return Ok(match build(inner)? {
                AnyIndex::Ordered(i) => AnyIndex::Ordered(Box::new(crate::slb::Slb::with_config(
                    i,
                    Default::default(),
                )?)),
                AnyIndex::Unordered(i) => AnyIndex::Unordered(Box::new(
                    crate::slb::Slb::with_config(i, Default::default())?,
                )),
            });
        }
        #[cfg(not(feature = "slb"))]
        {
            let _ = inner;
            return Err(unknown());
        }
    }
    match name {
        #[cfg(feature = "wormhole")]
        "wormhole" => Ok(AnyIndex::Ordered(Box::new(
            crate::wormhole::Wormhole::try_new().map_err(crate::ConfigError::from)?,
        ))),
        #[cfg(feature = "mercury")]
        "mercury" => Ok(AnyIndex::Unordered(Box::new(
            crate::mercury::Mercury::with_config(Default::default())?,
        ))),
        #[cfg(feature = "cuckoo-trie")]
        "cuckoo-trie" => Ok(AnyIndex::Ordered(Box::new(
            crate::cuckoo_trie::CuckooTrie::try_new().map_err(crate::ConfigError::from)?,
        ))),
        #[cfg(feature = "hyperion")]
        "hyperion" => Ok(AnyIndex::Ordered(
            Box::new(crate::hyperion::Hyperion::new()),
        )),
        _ => Err(unknown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_an_empty_working_index() {
        let mut all: Vec<String> = names().into_iter().map(String::from).collect();
        if cfg!(feature = "slb") {
            all.extend(names().into_iter().map(|n| format!("slb:{n}")));
        }
        for name in &all {
            let index = build(name).unwrap();
            let kv = index.as_kv();
            assert_eq!(kv.len(), 0, "{name}");
            assert_eq!(kv.insert(b"a", b"1"), Ok(true), "{name}");
            assert_eq!(kv.get(b"a").as_deref(), Some(&b"1"[..]), "{name}");
            let ordered = !name.ends_with("mercury");
            assert_eq!(index.capability() == Capability::Ordered, ordered, "{name}");
            assert_eq!(index.as_ordered().is_some(), ordered, "{name}");
        }
    }

    #[test]
    fn unknown_names_are_errors() {
        for name in ["", "btreemap", "slb:", "slb:nope", "WORMHOLE"] {
            let err = build(name).unwrap_err();
            assert!(err.to_string().contains("unknown index"), "{name}: {err}");
        }
        assert!(build(DEFAULT).is_ok());
    }
}
