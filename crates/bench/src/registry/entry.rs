//! One registered index ([`Entry`]): its name, a line about it, its [`Caps`], how it is
//! built ([`Maker`]: the shapes a constructor can have — with a probe, with statistics,
//! sized for the run's keys, or by the facade's registry) and, for opt-in peers, the check
//! that says whether it can be built here.

use orrery::{KvIndex, OrderedKvIndex};

use super::caps::Caps;
use super::index::Probe;
use crate::metrics::index_stats::StatsFn;
use crate::settings::Settings;

/// Builds an ordered index for the run's settings and a key capacity, or says why not.
pub(super) type SizedMaker =
    fn(&Settings, u64) -> std::result::Result<(Box<dyn OrderedKvIndex>, Option<StatsFn>), String>;

/// Builds an ordered index with its probe and its statistics.
pub(super) type ProbedStatsMaker = fn(&Settings) -> (Box<dyn OrderedKvIndex>, Probe, StatsFn);

/// How an entry builds its index.
#[derive(Clone, Copy)]
pub(super) enum Maker {
    Ordered(fn(&Settings) -> Box<dyn OrderedKvIndex>),
    Point(fn(&Settings) -> Box<dyn KvIndex>),
    /// A point index with a [`Probe`].
    PointProbed(fn(&Settings) -> (Box<dyn KvIndex>, Probe)),
    /// One of our structures in its default configuration, built by the facade's
    /// registry ([`orrery::registry::build`]) under this name.
    Facade(&'static str),
    /// An ordered index that must be sized up front for the keys it will hold (a peer
    /// whose table cannot grow), or that can fail to build (`Err` says why), with its
    /// statistics if it reports any.
    OrderedSized(SizedMaker),
    /// An ordered index that reports [`IndexStats`](crate::metrics::index_stats::IndexStats).
    OrderedStats(fn(&Settings) -> (Box<dyn OrderedKvIndex>, StatsFn)),
    /// An ordered index with a [`Probe`] and [`IndexStats`](crate::metrics::index_stats::IndexStats).
    OrderedProbedStats(ProbedStatsMaker),
}

/// One registered index.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    /// The name used on the command line.
    pub(crate) name: &'static str,
    /// One line for listings.
    pub(crate) about: &'static str,
    /// What it can do.
    pub(crate) caps: Caps,
    pub(super) make: Maker,
    /// For opt-in peers that need something from the environment: `Err` says why the
    /// index cannot be built here, and [`resolve`](super::resolve()) refuses the name with that message.
    pub(super) check: Option<fn() -> std::result::Result<(), String>>,
}

impl Entry {
    /// An ordered index.
    pub(super) fn ordered(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: fn(&Settings) -> Box<dyn OrderedKvIndex>,
    ) -> Entry {
        let caps = Caps {
            ordered: true,
            ..caps
        };
        Entry {
            name,
            about,
            caps,
            make: Maker::Ordered(make),
            check: None,
        }
    }

    /// A point-only index.
    pub(super) fn point(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: fn(&Settings) -> Box<dyn KvIndex>,
    ) -> Entry {
        let caps = Caps {
            ordered: false,
            ..caps
        };
        Entry {
            name,
            about,
            caps,
            make: Maker::Point(make),
            check: None,
        }
    }
}

impl Entry {
    /// A point-only index with a [`Probe`].
    pub(super) fn point_probed(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: fn(&Settings) -> (Box<dyn KvIndex>, Probe),
    ) -> Entry {
        Entry {
            name,
            about,
            caps: Caps {
                ordered: false,
                ..caps
            },
            make: Maker::PointProbed(make),
            check: None,
        }
    }

    /// An ordered index built for a known number of keys (see [`Maker::OrderedSized`]).
    pub(super) fn ordered_sized(
        name: &'static str,
        about: &'static str,
        caps: Caps,
        make: SizedMaker,
    ) -> Entry {
        Entry {
            name,
            about,
            caps: Caps {
                ordered: true,
                ..caps
            },
            make: Maker::OrderedSized(make),
            check: None,
        }
    }

    /// The same entry, buildable only when `check` passes (opt-in peers).
    pub(super) fn checked(self, check: fn() -> std::result::Result<(), String>) -> Entry {
        Entry {
            check: Some(check),
            ..self
        }
    }
}
