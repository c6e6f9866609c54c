//! Linearizability checking: concurrent histories recorded, and checked against a
//! sequential specification.
//!
//! The API promises that point operations are linearizable (each takes effect at one
//! instant between its call and its return) and that scans see every key present
//! throughout them ([`crate::api`]). The conformance suite's stress parts check
//! consequences of that which are exact under any interleaving (final states, per-key
//! counts); this module checks the promise itself on recorded histories:
//!
//! 1. **Record**: every process (thread, client connection) records each operation's
//!    key, input, output and its invocation and response times from one monotonic
//!    [`Clock`] ([`Recorder`], [`Entry`], [`History`]). An operation whose response never
//!    came is recorded without one.
//! 2. **Check**: linearizability is local, so each key's sub-history is checked on its own
//!    against a [`Spec`] — a deterministic sequential object; [`Register`] is one key of a
//!    key-value store, with the library's operations and Redis's string commands — by
//!    Wing–Gong search with Lowe's memoization ([`check()`]; `search.rs`). A step budget per
//!    key makes an intractable history "unknown" rather than a hang.
//! 3. **Report**: a key that fails gets a minimal violating window ([`Violation`]): the
//!    shortest failing prefix, cut at its last quiescent point with the states the
//!    operations before that point can end in, and unneeded reads dropped.
//! 4. **Scans**: [`check_scans`] checks recorded scans against the point history: order,
//!    bounds, no key absent throughout, no value certainly stale, no key present
//!    throughout missed.
//!
//! [`drive`] runs the whole thing on any structure ([`torture::Subject`](super::torture::Subject)):
//! threads of random point operations on a few hot keys while filler keys make the
//! structure grow and shrink, plus a scanner; [`check_round`] checks what it recorded, and
//! [`rounds`] runs and checks several rounds on fresh subjects.
//!
//! # Feeding it a history from elsewhere (e.g. a server under `kill -9`)
//!
//! Clients record their requests on the string keys as [`RegOp`]s — `SET k v` as
//! [`RegOp::Set`] → [`Out::Ok`], `GET` as [`RegOp::Get`] → [`Out::Value`], `DEL` of one
//! key as [`RegOp::Remove`] → [`Out::Present`] (reply 1 or 0), `INCR`/`INCRBY` as
//! [`RegOp::Incr`] → [`Out::Int`] or [`Out::Error`], `APPEND` as [`RegOp::Append`] →
//! [`Out::Len`] — each with the times around the request, and a request whose reply never
//! came (the server died) with [`Recorder::pending`]. Then:
//!
//! ```
//! use orrery_core::testing::linearize::{check, Budget, Clock, History, Out, Recorder, RegOp, Register};
//!
//! let clock = Clock::new();
//! let (mut a, mut b) = (Recorder::new(0, clock), Recorder::new(1, clock));
//! a.run(b"n", RegOp::Incr(1), || Out::Int(1));
//! let call = b.now();
//! b.pending(b"n", RegOp::Incr(1), call); // killed before the reply
//! a.run(b"n", RegOp::Incr(1), || Out::Int(3)); // so the pending INCR took effect
//! let history = History::from_recorders(vec![a, b]).unwrap();
//! let report = check(&Register, &history, Budget::default());
//! assert!(report.is_ok(), "{report}");
//! ```
//!
//! A key's history may also start from a state other than absent (a server restarted on
//! old data): record the initial value as a `SET` that completed before everything else.
//! Other data types (lists, hashes) are other [`Spec`]s.
//!
//! # Layout
//!
//! | file | job |
//! |---|---|
//! | `spec.rs` | [`Spec`]: the sequential object |
//! | `register.rs` | [`Register`]: one key's value, library and Redis operations; effects for scans |
//! | `history.rs` | [`Clock`], [`Entry`], [`Recorder`], [`History`] |
//! | `search.rs` | Wing–Gong–Lowe search with a memo and a budget |
//! | `check.rs` | per-key checking, minimal windows, [`Report`] |
//! | `scan.rs` | scans against the point history |
//! | `driver.rs` | the threaded driver over a subject, [`check_round`] |

mod check;
mod driver;
mod history;
mod register;
mod scan;
mod search;
mod spec;

pub use check::{Budget, Report, Violation, check};
pub use driver::{HOT_KEYS, Round, Tally, Verdict, Workload, check_round, drive, rounds};
pub use history::{Clock, Entry, History, Recorder};
pub use register::{ComputeOp, Done, Effect, Out, RegOp, Register, UpdateOp};
pub use scan::{ScanRecord, ScanViolation, check_scans};
pub use spec::Spec;

#[cfg(test)]
mod tests;
