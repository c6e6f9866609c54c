//! The index registry: names → constructors with capability flags.
//!
//! Everything the benchmark runs is an [`AnyIndex`]: a boxed [`orrery::OrderedKvIndex`] or
//! [`orrery::KvIndex`] trait object. Orrery's own structures come from the facade's
//! registry ([`orrery::registry`], which `orrery-server` uses too): every name it lists is
//! an entry here, built by it, so a structure added to the facade needs nothing here
//! (module `own`; only structures whose configuration the run's [`Settings`](crate::settings::Settings) change are
//! built here with them). Bench-only configurations (the Wormhole ablation, Mercury
//! variants) and peers are entries of `variants` and `peer_entries`, one each, e.g.
//!
//! ```ignore
//! Entry::ordered("scc-tree", "scc TreeIndex", Caps::PEER, |_| Box::<scc::SccTree>::default()),
//! ```
//!
//! after which the name works in `run --index`, in suites, in `indexes`, in reports, and
//! wrapped by the SLB as `slb:wormhole`. Peers enter the same way through thin adapters
//! (`peers/`). `slb:<name>` resolves `<name>` first, then wraps it with the SLB (16 MiB Cache
//! Table); `slb16:`, `slb32:`, `slb64:<name>` choose the Cache Table size in MiB (the
//! paper's Table 2; any power of two from 1 to 1024 is accepted).
//!
//! | module | holds |
//! |---|---|
//! | `caps` | [`Caps`]: what an index can do |
//! | `index` | [`AnyIndex`], the [`Hooks`](index::Hooks) of a restructuring index, a [`Built`] index |
//! | `entry` | one registered index and how it is built |
//! | `make` | our structures built with the run's settings, probes and statistics |
//! | `own`, `variants`, `peer_entries` | the entries: the facade's names, bench-only configurations, peers |
//! | `slb` | the `slb:` prefix and the SLB wrapper |
//! | `resolve` | names → [`Resolved`] indexes; the listing |

mod caps;
mod entry;
mod index;
mod make;
mod own;
mod peer_entries;
mod resolve;
mod slb;
mod variants;

#[cfg(test)]
mod tests;

pub(crate) use caps::Caps;
pub(crate) use index::{AnyIndex, Built, Probe};
pub(crate) use resolve::{Resolved, entries, is_unavailable_opt_in, resolve};
