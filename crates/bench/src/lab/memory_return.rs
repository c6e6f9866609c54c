//! Memory that comes back (`docs/results/reliability.md`, "Memory comes back"): the resident
//! set of one structure after a fill, after removing most keys, and of a fresh index with
//! the keys that remain — each in a process of its own, since the resident set is the
//! process's.
//!
//! Arguments: `STRUCTURE [KEYS = 4M] [PERCENT = 90] [oldest|scattered] [KEY_LEN = 8] [fresh]`.
//!
//! `orrery-bench lab memory_return cuckoo-trie 4M 90 oldest 8` fills and removes;
//! the same with `fresh` at the end builds the fresh index instead. `STRUCTURE` is one of
//! [`STRUCTURES`] (`slb-wormhole` is the SLB over a Wormhole).

use orrery::KvIndex;
use orrery::testing::memory::{self, Removal, Scenario};

/// The structures this program (and the churn soak) can build.
pub(crate) const STRUCTURES: &[&str] = &[
    "wormhole",
    "mercury",
    "cuckoo-trie",
    "hyperion",
    "slb-wormhole",
];

/// A new index of the structure `name`.
pub(crate) fn make(name: &str) -> Result<Box<dyn KvIndex>, String> {
    Ok(match name {
        "wormhole" => Box::new(orrery::wormhole::Wormhole::new()),
        "mercury" => Box::new(orrery::mercury::Mercury::new()),
        "cuckoo-trie" => Box::new(orrery::cuckoo_trie::CuckooTrie::new()),
        "hyperion" => Box::new(orrery::hyperion::Hyperion::new()),
        "slb-wormhole" => Box::new(orrery::slb::Slb::new(orrery::wormhole::Wormhole::new())),
        _ => return Err(format!("unknown structure {name:?}: one of {STRUCTURES:?}")),
    })
}

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// What a structure says of its memory beyond `memory_usage` (diagnostics).
fn detail(name: &str, index: &dyn std::any::Any) -> String {
    if name == "hyperion"
        && let Some(h) = index.downcast_ref::<orrery::hyperion::Hyperion>()
    {
        return format!(
            "{:?}, page heap {:.1} MiB",
            h.stats(),
            mib(orrery::hyperion::Hyperion::paged_bytes())
        );
    }
    String::new()
}

/// Runs `s` (fill and remove, or fresh) on a new index of type `I` and prints the figures.
fn measure<I: KvIndex + 'static>(name: &str, s: &Scenario, fresh: bool, make: impl FnOnce() -> I) {
    let (index, rss, what) = if fresh {
        let (index, rss) = memory::fill(s, make);
        (index, rss, "fresh")
    } else {
        let (index, rss) = memory::fill_remove(s, make);
        (index, rss, "after")
    };
    let m = index.memory_usage();
    println!(
        "{name} {what}: {} keys; RSS full +{:.1} MiB, now +{:.1} MiB; memory_usage structure {:.1} MiB, keys and values {:.1} MiB {}",
        index.len(),
        mib(rss.full_delta()),
        mib(rss.after_delta()),
        mib(m.structure_bytes),
        mib(m.key_value_bytes),
        detail(name, &index),
    );
    if std::env::var_os("ORRERY_DIAG_TRIM").is_some() {
        crate::metrics::rss::trim_heap();
        println!(
            "  after malloc_trim: RSS +{:.1} MiB",
            mib(memory::resident_bytes()
                .unwrap_or(0)
                .saturating_sub(rss.before))
        );
    }
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let name = args.first().ok_or("STRUCTURE missing")?.as_str();
    make(name)?;
    let s = Scenario {
        keys: super::count_arg(args, 1, 4_000_000)?,
        percent: super::count_arg(args, 2, 90)?.min(100),
        removal: match args.get(3).map(String::as_str) {
            None | Some("oldest") => Removal::Oldest,
            Some("scattered") => Removal::Scattered,
            Some(o) => return Err(format!("removal {o:?}: oldest or scattered")),
        },
        key_len: super::count_arg(args, 4, 8)?.max(8) as usize,
        seed: orrery::testing::rng::DEFAULT_SEED,
    };
    let fresh = args.get(5).is_some_and(|a| a == "fresh");
    use orrery::{
        cuckoo_trie::CuckooTrie, hyperion::Hyperion, mercury::Mercury, wormhole::Wormhole,
    };
    match name {
        "wormhole" => measure(name, &s, fresh, Wormhole::new),
        "mercury" => measure(name, &s, fresh, Mercury::new),
        "cuckoo-trie" => measure(name, &s, fresh, CuckooTrie::new),
        "hyperion" => measure(name, &s, fresh, Hyperion::new),
        _ => measure(name, &s, fresh, || make(name).expect("checked")),
    }
    Ok(())
}
