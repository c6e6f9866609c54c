//! Names → indexes: [`resolve`] looks a name up (peeling `slb:` prefixes), [`entries`]
//! lists what can be built here, and a [`Resolved`] name builds fresh indexes with the
//! run's settings.

use super::caps::Caps;
use super::entry::{Entry, Maker};
use super::index::{AnyIndex, Built};
use super::{own, peer_entries, slb, variants};
use crate::settings::Settings;

/// Every registered index that can be built here, in listing order: opt-in peers whose
/// check fails (e.g. `wormhole-c` without `ORRERY_WORMHOLE_C`) are left out, and
/// [`resolve`] explains why when one is asked for by name.
pub(crate) fn entries() -> Vec<Entry> {
    all_entries()
        .into_iter()
        .filter(|e| e.check.is_none_or(|c| c().is_ok()))
        .collect()
}

/// Every registered index, buildable here or not, in listing order: ours as the facade
/// names them, the bench-only configurations, the peers.
fn all_entries() -> Vec<Entry> {
    let mut all = own::entries();
    all.extend(variants::entries());
    all.extend(peer_entries::entries());
    all
}

/// A resolved index name: capabilities and a constructor (possibly wrapped by the SLB).
#[derive(Clone)]
pub(crate) struct Resolved {
    /// The name as given (e.g. `slb:btreemap`).
    pub(crate) name: String,
    /// What it can do.
    pub(crate) caps: Caps,
    pub(super) inner: Entry,
    /// Cache Table MiB of each SLB layer, innermost first.
    pub(super) slb_layers: Vec<usize>,
}

impl Resolved {
    /// A fresh, empty index (sized for 100K keys where that matters).
    #[cfg(test)]
    pub(crate) fn make(&self) -> AnyIndex {
        self.make_probed(&Settings::DEFAULT, 100_000)
            .expect("builds")
            .index
    }

    /// A fresh, empty index built with `settings`, with its probe and statistics if it has
    /// them (an SLB in front keeps the inner index's). `capacity`: how many distinct keys
    /// the run may insert at most (for indexes that cannot grow). `Err` when the index
    /// cannot be built here (e.g. missing huge pages).
    pub(crate) fn make_probed(
        &self,
        settings: &Settings,
        capacity: u64,
    ) -> std::result::Result<Built, String> {
        let mut stats = None;
        let (index, probe) = match self.inner.make {
            Maker::OrderedSized(f) => {
                let (i, s) = f(settings, capacity).map_err(|e| format!("{}: {e}", self.name))?;
                stats = s;
                (AnyIndex::Ordered(i), None)
            }
            Maker::Ordered(f) => (AnyIndex::Ordered(f(settings)), None),
            Maker::OrderedStats(f) => {
                let (i, s) = f(settings);
                stats = Some(s);
                (AnyIndex::Ordered(i), None)
            }
            Maker::Facade(name) => {
                match orrery::registry::build(name).map_err(|e| format!("{}: {e}", self.name))? {
                    orrery::registry::AnyIndex::Ordered(i) => (AnyIndex::Ordered(i), None),
                    orrery::registry::AnyIndex::Unordered(i) => (AnyIndex::Point(i), None),
                }
            }
            Maker::Point(f) => (AnyIndex::Point(f(settings)), None),
            Maker::OrderedProbedStats(f) => {
                let (i, p, s) = f(settings);
                stats = Some(s);
                (AnyIndex::Ordered(i), Some(p))
            }
            Maker::PointProbed(f) => {
                let (i, p) = f(settings);
                (AnyIndex::Point(i), Some(p))
            }
        };
        let index = self
            .slb_layers
            .iter()
            .fold(index, |i, &mib| slb::wrap(i, mib));
        Ok(Built {
            index,
            probe,
            stats,
        })
    }
}

/// Whether `name` (possibly behind `slb:` prefixes) is a registered opt-in index whose
/// check fails here (e.g. `cuckoo-trie-c` without its library).
pub(crate) fn is_unavailable_opt_in(name: &str) -> bool {
    let mut base = name;
    while let Ok(Some((_, inner))) = slb::parse_prefix(base) {
        base = inner;
    }
    all_entries()
        .iter()
        .any(|e| e.name == base && e.check.is_some_and(|c| c().is_err()))
}

/// Looks `name` up; `slb:<name>` (or `slbN:<name>`, N MiB of Cache Table) wraps any
/// registered index.
pub(crate) fn resolve(name: &str) -> std::result::Result<Resolved, String> {
    if let Some((mib, inner)) = slb::parse_prefix(name)? {
        let mut r = resolve(inner).map_err(|e| format!("in {name:?}: {e}"))?;
        r.slb_layers.push(mib);
        r.name = name.to_string();
        return Ok(r);
    }
    let all = entries();
    if let Some(e) = all_entries().iter().find(|e| e.name == name)
        && let Some(check) = e.check
        && let Err(why) = check()
    {
        return Err(format!("index {name:?} is unavailable: {why}"));
    }
    match all.iter().find(|e| e.name == name) {
        Some(e) => Ok(Resolved {
            name: name.to_string(),
            caps: e.caps,
            inner: *e,
            slb_layers: Vec::new(),
        }),
        None => Err(format!(
            "unknown index {name:?}; known: {} (and slb:<name> for any of them)",
            all.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
        )),
    }
}
