//! `orrery-bench machine --sweep`: dependent-read latency against working-set size.
//!
//! The question it answers (raised by Wormhole's lookups at 64M keys against 8M; findings
//! in `docs/results/wormhole.md`, "Lookups against key count (8M vs 64M)"): once a
//! structure is far out of the 32 MiB L3, does a random DRAM read still get *slower* as the
//! structure grows? On bare metal with huge pages it barely does (the TLB entries and the
//! page-table lines stay cached). In a VM every TLB miss walks two page tables (the
//! guest's and the host's, a "2D" walk), and the host's table is only as coarse as the host
//! backs guest memory, which the guest cannot choose. If the host's page-table lines for a
//! large working set fall out of the caches, each read pays extra DRAM round trips, and the
//! latency grows with the working set even though the guest uses huge pages.
//!
//! For each size (64 MiB … 4 GiB by default) one random cycle over the array's 64-byte
//! slots is chased, exactly as in the main measurement (every load depends on the previous
//! one, thread CPU time), on three kinds of memory:
//!
//! * 4 KiB pages (`MADV_NOHUGEPAGE`),
//! * transparent huge pages through `orrery::alloc::HugeArray` (the structures' memory);
//!   the fraction the kernel really backs with 2 MiB pages (`AnonHugePages` in
//!   `/proc/self/smaps`) is reported next to it,
//! * 1 GiB hugetlb pages, only if some are reserved (otherwise "n/a").
//!
//! Only one array is mapped at a time; the largest size needs its bytes plus 4 bytes per
//! 64-byte slot for the visiting order.

use crate::progress::Progress;
use crate::rng::Rng;

use super::region::{GIANT_PAGE, Pages, anon_huge_bytes};
use super::{SLOT, chase, link};

/// One working-set size of the sweep.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct SweepPoint {
    /// Working-set size in MiB.
    pub(crate) mib: usize,
    /// Dependent random read on 4 KiB pages, ns.
    pub(crate) lat_4k_ns: f64,
    /// Dependent random read on transparent huge pages, ns.
    pub(crate) lat_thp_ns: f64,
    /// Fraction of the THP array the kernel backed with 2 MiB pages (0..1), if known.
    pub(crate) thp_backed: Option<f64>,
    /// Dependent random read on 1 GiB hugetlb pages, ns, if such pages could be mapped.
    pub(crate) lat_1g_ns: Option<f64>,
}

/// Parses a comma-separated list of sizes in MiB (each at least 1).
pub(crate) fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    let sizes: Vec<usize> = s
        .split(',')
        .map(|t| {
            let t = t.trim();
            let (num, mul) = match t.strip_suffix(['G', 'g']) {
                Some(n) => (n, 1024),
                None => (t.strip_suffix(['M', 'm']).unwrap_or(t), 1),
            };
            num.parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(mul))
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("bad sweep size {t:?} (MiB, or with a G suffix)"))
        })
        .collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        return Err("the sweep needs at least one size".into());
    }
    Ok(sizes)
}

/// One dependent chase over `words` (already linked by `order`): ns per load.
fn timed(words: &[u64], order: &[u32], loads: usize) -> f64 {
    chase::<1>(words, &order[..1], loads)
}

/// Measures one sweep point per size in `sizes_mib`, `loads` dependent loads each.
pub(crate) fn sweep(
    sizes_mib: &[usize],
    loads: usize,
    progress: &Progress,
) -> Result<Vec<SweepPoint>, String> {
    if loads == 0 {
        return Err("the sweep needs at least one load per point".into());
    }
    let bar = progress.bar(3 * sizes_mib.len() as u64, "machine: latency sweep");
    let mut out = Vec::with_capacity(sizes_mib.len());
    for &mib in sizes_mib {
        let len = mib.checked_shl(20).ok_or("sweep size too large")?;
        let slots = len / SLOT;
        let slots32 = u32::try_from(slots).map_err(|_| "sweep size over 256 GiB")?;
        let mut order: Vec<u32> = (0..slots32).collect();
        Rng::new(0x5357_4550 ^ mib as u64).shuffle(&mut order);

        let mut small = Pages::small(len)?;
        link(small.words(), &order);
        let lat_4k_ns = timed(small.words(), &order, loads);
        drop(small);
        bar.inc(1);

        let mut thp = orrery::alloc::HugeArray::<u64>::new(len / 8)
            .map_err(|e| format!("cannot map {mib} MiB of huge pages for the sweep: {e}"))?;
        link(&mut thp, &order);
        let thp_backed =
            anon_huge_bytes(thp.as_ptr() as usize, len).map(|b| (b as f64 / len as f64).min(1.0));
        let lat_thp_ns = timed(&thp, &order, loads);
        drop(thp);
        bar.inc(1);

        let lat_1g_ns = match Pages::giant(len) {
            Ok(mut giant) => {
                link(giant.words(), &order);
                Some(timed(giant.words(), &order, loads))
            }
            Err(_) => None,
        };
        bar.inc(1);
        out.push(SweepPoint {
            mib,
            lat_4k_ns,
            lat_thp_ns,
            thp_backed,
            lat_1g_ns,
        });
    }
    bar.finish_and_clear();
    Ok(out)
}

/// A table for people; the ratio columns are against the first (smallest) size.
pub(crate) fn describe_sweep(points: &[SweepPoint]) -> String {
    let mut s = format!(
        "dependent random read latency against working set (ns; x = ratio to {} MiB)\n\
         {:>9} {:>14} {:>14} {:>9} {:>14}\n",
        points.first().map_or(0, |p| p.mib),
        "MiB",
        "4 KiB pages",
        "THP (2 MiB)",
        "THP-backed",
        "1 GiB pages"
    );
    let Some(first) = points.first() else {
        return s;
    };
    for p in points {
        let rel = |a: f64, b: f64| format!("{a:>6.0} ({:.2}x)", a / b);
        let giant = match (p.lat_1g_ns, first.lat_1g_ns) {
            (Some(a), Some(b)) => rel(a, b),
            (Some(a), None) => format!("{a:>6.0}"),
            _ => "n/a".into(),
        };
        let backed = p
            .thp_backed
            .map_or_else(|| "?".into(), |f| format!("{:.0}%", f * 100.0));
        s.push_str(&format!(
            "{:>9} {:>14} {:>14} {:>9} {:>14}\n",
            p.mib,
            rel(p.lat_4k_ns, first.lat_4k_ns),
            rel(p.lat_thp_ns, first.lat_thp_ns),
            backed,
            giant
        ));
    }
    if first.lat_1g_ns.is_none() {
        s.push_str(&format!(
            "1 GiB pages: none could be mapped (reserve some in \
             /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages)\n",
            GIANT_PAGE >> 10
        ));
    }
    s
}

/// One window size of the locality test.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct LocalityPoint {
    /// Window in bytes (the whole array for the last point).
    pub(crate) window: usize,
    /// ns per *pair* of dependent loads (the first anywhere, the second in its window).
    pub(crate) pair_ns: f64,
}

/// Links the even slots of `words` into one random cycle with a detour: each even slot
/// `a` points to an odd slot `b` in the same `window`-byte window (a bijection per window,
/// so no two even slots share one), and `b` points to the next even slot of the cycle.
/// `window` is a power of two of at least two slots and divides the array.
fn link_pairs(words: &mut [u64], evens: &[u32], window: usize, rng: &mut Rng) {
    let stride = SLOT / 8;
    let per = window / SLOT; // slots per window, a power of two >= 2
    let half = (per / 2) as u64;
    let windows = words.len() / stride / per;
    // Per window an odd multiplier and an offset: `k -> (k * m + c) mod half` permutes the
    // window's pair indices, so `b` is a random-looking odd slot, distinct per `a`.
    let mc: Vec<(u64, u64)> = (0..windows)
        .map(|_| (rng.next_u64() | 1, rng.next_u64()))
        .collect();
    let partner = |a: usize| -> usize {
        let (w, k) = (a / per, (a % per) / 2);
        let (m, c) = mc[w];
        let j = (k as u64).wrapping_mul(m).wrapping_add(c) & (half - 1);
        w * per + 2 * j as usize + 1
    };
    for (i, &a) in evens.iter().enumerate() {
        let a = a as usize;
        let b = partner(a);
        let next = evens[(i + 1) % evens.len()];
        words[a * stride] = b as u64;
        words[b * stride] = u64::from(next);
    }
}

/// The cost of a second dependent load near the first: on a THP array of `mib` MiB, a
/// chase of (random slot, then a random slot within `window` of it) pairs, for windows of
/// 4 KiB, 32 KiB (the guest memory one host page-table line maps when the host uses 4 KiB
/// pages), 256 KiB, 2 MiB (one huge page) and the whole array. ns per pair: with the whole
/// array it is two full random reads; the smaller the window, the more of the second
/// read's address translation (and DRAM row) the first one already paid for. This models
/// a lookup that reads a leaf and then a pair block allocated next to that leaf.
pub(crate) fn locality(
    mib: usize,
    loads: usize,
    progress: &Progress,
) -> Result<Vec<LocalityPoint>, String> {
    let len = mib.checked_shl(20).ok_or("locality size too large")?;
    if !len.is_power_of_two() || len < 4 << 20 {
        return Err("the locality test needs a power-of-two size of at least 4 MiB".into());
    }
    if loads < 2 {
        return Err("the locality test needs at least two loads".into());
    }
    let slots = len / SLOT;
    let evens32 = u32::try_from(slots).map_err(|_| "locality size over 256 GiB")?;
    let mut rng = Rng::new(0x4C4F_4341);
    let mut evens: Vec<u32> = (0..evens32).step_by(2).collect();
    rng.shuffle(&mut evens);
    let mut thp = orrery::alloc::HugeArray::<u64>::new(len / 8)
        .map_err(|e| format!("cannot map {mib} MiB of huge pages for the locality test: {e}"))?;
    let windows = [4 << 10, 32 << 10, 256 << 10, 2 << 20, len];
    let bar = progress.bar(windows.len() as u64, "machine: locality");
    let mut out = Vec::new();
    for window in windows {
        link_pairs(&mut thp, &evens, window, &mut rng);
        // Each pair is two loads: time loads/2 pairs, report ns per pair.
        let per_load = chase::<1>(&thp, &evens[..1], loads);
        out.push(LocalityPoint {
            window,
            pair_ns: 2.0 * per_load,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// A table for people.
pub(crate) fn describe_locality(mib: usize, points: &[LocalityPoint]) -> String {
    let mut s = format!(
        "two dependent loads over {mib} MiB of THP memory, the second within a window of the first\n\
         {:>10} {:>12} {:>22}\n",
        "window", "ns per pair", "second load (ns)"
    );
    let Some(far) = points.last() else { return s };
    for p in points {
        let w = if p.window >= 1 << 20 {
            format!("{} MiB", p.window >> 20)
        } else {
            format!("{} KiB", p.window >> 10)
        };
        s.push_str(&format!(
            "{w:>10} {:>12.0} {:>22.0}\n",
            p.pair_ns,
            p.pair_ns - far.pair_ns / 2.0
        ));
    }
    s.push_str("(second load = ns per pair minus half the whole-array pair)\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_reject_garbage() {
        assert_eq!(parse_sizes("64,128M,1G").unwrap(), vec![64, 128, 1024]);
        assert_eq!(parse_sizes(" 2g ").unwrap(), vec![2048]);
        assert!(parse_sizes("").is_err());
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("64,x").is_err());
    }

    #[test]
    fn tiny_sweep_measures_every_kind_it_can() {
        let pts = sweep(&[1, 2], 20_000, &Progress::new(true)).unwrap();
        assert_eq!(pts.len(), 2);
        for p in &pts {
            assert!(p.lat_4k_ns > 0.0 && p.lat_thp_ns > 0.0);
            if let Some(f) = p.thp_backed {
                assert!((0.0..=1.0).contains(&f));
            }
        }
        let table = describe_sweep(&pts);
        assert_eq!(table.lines().filter(|l| l.contains("x)")).count(), 2);
    }

    #[test]
    fn paired_cycle_alternates_near_and_far_and_visits_every_slot() {
        let slots = 1 << 12;
        let window = 16 * SLOT;
        let mut rng = Rng::new(7);
        let mut evens: Vec<u32> = (0..slots as u32).step_by(2).collect();
        rng.shuffle(&mut evens);
        let mut words = vec![0u64; slots * SLOT / 8];
        link_pairs(&mut words, &evens, window, &mut rng);
        let per = window / SLOT;
        let mut seen = vec![false; slots];
        let mut p = evens[0] as usize;
        for step in 0..slots {
            assert!(!seen[p], "slot {p} visited twice");
            seen[p] = true;
            let q = words[p * SLOT / 8] as usize;
            if step % 2 == 0 {
                assert_eq!(p % 2, 0);
                assert_eq!(q / per, p / per, "the partner is in the same window");
                assert_eq!(q % 2, 1);
            }
            p = q;
        }
        assert_eq!(p, evens[0] as usize, "one cycle through every slot");
    }

    #[test]
    fn locality_rejects_bad_sizes_and_measures_small() {
        let quiet = Progress::new(true);
        assert!(locality(3, 1000, &quiet).is_err());
        assert!(locality(6, 1000, &quiet).is_err());
        let pts = locality(4, 20_000, &quiet).unwrap();
        assert_eq!(pts.len(), 5);
        assert_eq!(pts.last().unwrap().window, 4 << 20);
        assert!(pts.iter().all(|p| p.pair_ns > 0.0));
        assert_eq!(describe_locality(4, &pts).lines().count(), 2 + 5 + 1);
    }
}
