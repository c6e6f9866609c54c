//! The torture runner: long random operation streams over every operation of the API,
//! each result checked against a `BTreeMap` model, divergences replayed and minimized.
//!
//! Where the conformance suite runs each part for a fixed, modest number of operations,
//! this runs campaigns of any length (`orrery-bench torture` runs 10^8 operations per
//! structure and configuration): operations of every kind — point operations, `get_many`,
//! `compute`, `update`, `update_in_place`, over-long keys and values, `len`, scans both
//! ways, `scan_range`, `scan_prefix`, `first`/`last`, `remove_range`, and concrete
//! iterators walked from both ends with `seek` and `seek_back` — over key distributions
//! aimed at the hard cases, in phases of growth and shrinkage. Each episode mixes two key
//! profiles — the suite's [`KeyDist`](super::rng::KeyDist)s (short random keys, ~200-byte
//! shared prefixes, a tiny alphabet where keys are prefixes of each other, big-endian
//! integers), dense big-endian `u32`s over up to 2^20 values (growth to ~10^5 keys), or
//! prefix chains (a short stem and a run of one byte up to 64 long) — with the empty key,
//! near misses of present keys, and rarely keys of exactly `MAX_KEY_LEN` and one or two
//! bytes shorter; values are mostly short, sometimes kilobytes, rarely exactly
//! `MAX_VALUE_LEN`. Phases of 2^8..2^16 operations grow (mostly inserts), churn, shrink
//! (mostly removals of present keys) and drain (wide `remove_range`s), so structures cross
//! their growth and shrink thresholds both ways in bursts (`stream.rs`). Every operation's
//! result is checked as it returns; every view is compared in full, and the structure's
//! invariant walk run, periodically and at the end of every episode.
//!
//! A divergence ends the campaign with a [`Divergence`] report: the seed and episode, the
//! operation and what differed, and a minimized reproduction — the episode's operations
//! shrunk by delta debugging ([`ddmin`]) to a 1-minimal sequence that still diverges when
//! replayed on a fresh structure and model — printed as a list of operations.
//!
//! ```
//! use orrery_core::reference::LockedBTreeMap;
//! use orrery_core::testing::broken::{Broken, Fault};
//! use orrery_core::testing::torture::{Budget, Settings, Subject, Target, run};
//!
//! // A clean run on the reference.
//! let make = || Box::new(Target::ordered(LockedBTreeMap::new()).with_rmw().with_batches())
//!     as Box<dyn Subject>;
//! let settings = Settings { seed: 1, ops: 20_000, budget: Budget::default() };
//! let report = run(&make, &settings, &mut |_| {});
//! assert!(report.divergence.is_none());
//!
//! // A broken index: caught, and shrunk to the two inserts that collide.
//! let make = || Box::new(Target::ordered(Broken::new(LockedBTreeMap::new(),
//!     Fault::StripTrailingZeros))) as Box<dyn Subject>;
//! let report = run(&make, &settings, &mut |_| {});
//! let d = report.divergence.expect("caught");
//! println!("{d}");
//! assert!(d.minimized.expect("reproduced").0.len() <= 3);
//! ```
//!
//! # Layout
//!
//! | module | job |
//! |---|---|
//! | [`op`] | the operations, values made from tags, exact printing |
//! | `stream` | the seeded generator: key profiles, phases, weights |
//! | `apply` | one operation on the subject and the model, checked; the full comparison |
//! | [`subject`] | what is driven: the traits plus iterators, `remove_range`, invariants |
//! | [`shrink`](mod@shrink) | delta debugging |
//! | `run` | episodes, campaigns, replay, minimization, the report |

mod apply;
pub mod op;
mod run;
pub mod shrink;
mod stream;
pub mod subject;

pub use op::{ComputeAction, Op, OverLongVia, Step, UpdateAction, Val, exact};
pub use run::{Divergence, Make, Report, Settings, minimize, replay, run};
pub use shrink::{Budget, Shrunk, ddmin};
pub use subject::{Subject, Target};

#[cfg(test)]
mod tests;
