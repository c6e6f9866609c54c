//! Ordered views, exhaustively on a small universe.
//!
//! The universe is every key of length 0 to 3 over the alphabet `{00, 01, 80, FF}` (85 keys:
//! the empty key, prefix chains such as `00`, `00 00`, `00 00 00`, runs of `FF`; under Miri
//! the alphabet is `{00, 80, FF}`, 40 keys), and the
//! probes add length-4 keys over `{00, FF}`. The index is moved through a seeded series of
//! random subsets of the universe (by inserts, upserts and removes), and at each subset every
//! scan shape is compared with the model: every start bound at every probe with several early
//! stops, every `scan_range` between probe pairs (inverted and empty ranges included),
//! `range_with` over typed `RangeBounds`, every prefix, `first` and `last` after every mutation.

use std::ops::{Bound, ControlFlow};

use rand::Rng;
use rand::rngs::SmallRng;

use super::common::{
    Check, Failure, Model, Stop, collect, compare_scan, ensure, model_range, run_seeded, show,
    show_bound, show_pair,
};
use super::rng::{rng, sized};
use crate::api::{OrderedKvIndex, OrderedKvIndexExt};

/// The alphabet of the universe (three letters under Miri, to keep it small there).
const ALPHABET: &[u8] = if cfg!(miri) {
    &[0x00, 0x80, 0xFF]
} else {
    &[0x00, 0x01, 0x80, 0xFF]
};

/// Every key of length 0..=3 over [`ALPHABET`], sorted.
pub(super) fn universe() -> Vec<Vec<u8>> {
    let mut keys = vec![Vec::new()];
    let mut level = vec![Vec::new()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for k in &level {
            for &b in ALPHABET {
                let mut k2: Vec<u8> = k.clone();
                k2.push(b);
                next.push(k2);
            }
        }
        keys.extend(next.iter().cloned());
        level = next;
    }
    keys.sort();
    keys
}

/// The universe plus length-4 keys over `{00, FF}` (not under Miri).
pub(super) fn probes() -> Vec<Vec<u8>> {
    let mut p = universe();
    for bits in 0..if cfg!(miri) { 0 } else { 16u8 } {
        p.push(
            (0..4)
                .map(|i| if bits >> i & 1 == 1 { 0xFF } else { 0x00 })
                .collect(),
        );
    }
    p.sort();
    p.dedup();
    p
}

/// Moves the index (and model) to a random subset of the universe with density `density`,
/// upserting some kept keys, checking results, `first` and `last` after every mutation.
pub(super) fn move_to_subset(
    index: &dyn OrderedKvIndex,
    model: &mut Model,
    universe: &[Vec<u8>],
    density: f64,
    round: usize,
    rng: &mut SmallRng,
) -> Check {
    for (i, k) in universe.iter().enumerate() {
        let want = rng.random_bool(density);
        let present = model.contains_key(k);
        if want && (!present || rng.random_bool(0.3)) {
            let v: Vec<u8> = if i % 5 == 0 {
                Vec::new()
            } else {
                vec![round as u8, i as u8, 0xFF, 0x00]
            };
            let got = index.insert(k, &v);
            ensure!(
                got == Ok(!present),
                "round {round}: insert({}) returned {got:?}, expected Ok({})",
                show(k),
                !present
            );
            model.insert(k.clone(), v);
        } else if !want && present {
            ensure!(
                index.remove(k),
                "round {round}: remove({}) of a present key returned false",
                show(k)
            );
            model.remove(k);
        } else {
            continue;
        }
        check_first_last(index, model)
            .map_err(|e| format!("round {round}, after changing {}: {e}", show(k)))?;
    }
    let len = index.len();
    ensure!(
        len == model.len(),
        "round {round}: len() = {len}, expected {}",
        model.len()
    );
    Ok(())
}

fn check_first_last(index: &dyn OrderedKvIndex, model: &Model) -> Check {
    let first = index.first();
    let want = model.first_key_value().map(|(k, v)| (k.clone(), v.clone()));
    ensure!(
        first == want,
        "first() = {}, expected {}",
        show_pair(&first),
        show_pair(&want)
    );
    let last = index.last();
    let want = model.last_key_value().map(|(k, v)| (k.clone(), v.clone()));
    ensure!(
        last == want,
        "last() = {}, expected {}",
        show_pair(&last),
        show_pair(&want)
    );
    Ok(())
}

/// Densities of the successive subsets: full, empty, sparse, dense, then random.
pub(super) fn density(round: usize, rng: &mut SmallRng) -> f64 {
    match round {
        0 => 1.0,
        1 => 0.0,
        2 => 0.1,
        3 => 0.9,
        _ => rng.random_range(0.05..0.95),
    }
}

/// Scans from every bound kind at every probe of the small universe, stopping after 1, 2, 3
/// pairs or never, over a seeded series of subsets (full, empty, sparse, dense, random):
/// strictly ascending keys, the right pairs, no visitor call after `Break`.
pub fn check_scan_bounds<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_seeded("scan_bounds", |seed| {
        let mut r = rng(seed);
        let index = make();
        let universe = universe();
        let probes = probes();
        let mut model = Model::new();
        for round in 0..sized(24, 2) {
            let d = density(round, &mut r);
            move_to_subset(&index, &mut model, &universe, d, round, &mut r)?;
            let limits: &[usize] = if cfg!(miri) {
                &[1, usize::MAX]
            } else {
                &[1, 2, 3, usize::MAX]
            };
            for &limit in limits {
                let stop = Stop(limit);
                let got = collect(limit, |v| index.scan(Bound::Unbounded, v));
                compare_scan(
                    &|| format!("round {round}: scan(Unbounded) {stop}"),
                    &got,
                    model.iter().take(limit),
                )?;
                for p in &probes {
                    for start in [Bound::Included(&p[..]), Bound::Excluded(&p[..])] {
                        let got = collect(limit, |v| index.scan(start, v));
                        compare_scan(
                            &|| format!("round {round}: scan({}) {stop}", show_bound(start)),
                            &got,
                            model_range(&model, start, Bound::Unbounded).take(limit),
                        )?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// `scan_range` between every pair of sampled bounds (every kind; inverted and empty ranges
/// yield nothing), `range_with` over typed `RangeBounds` (`..`, `a..`, `..b`, `a..b`, `a..=b`,
/// `..=b`, bound tuples; `Vec<u8>`, `&[u8]` and array keys), `range_collect`,
/// `scan_prefix`/`prefix_collect` at every key of the universe, `first`/`last` after every
/// mutation; over a seeded series of subsets of the small universe.
pub fn check_ranges<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_seeded("ranges", |seed| {
        let mut r = rng(seed);
        let index = make();
        let universe = universe();
        let probes = probes();
        let mut model = Model::new();
        for round in 0..sized(12, 2) {
            let d = density(round, &mut r);
            move_to_subset(&index, &mut model, &universe, d, round, &mut r)?;
            let sample: Vec<&[u8]> = (0..sized(24, 3))
                .map(|_| probes[r.random_range(0..probes.len())].as_slice())
                .collect();
            let mut bounds = vec![Bound::Unbounded];
            for p in &sample {
                bounds.push(Bound::Included(*p));
                bounds.push(Bound::Excluded(*p));
            }
            for &start in &bounds {
                for &end in &bounds {
                    let limit = if r.random_bool(0.25) {
                        r.random_range(1..4)
                    } else {
                        usize::MAX
                    };
                    let stop = Stop(limit);
                    let got = collect(limit, |v| index.scan_range(start, end, v));
                    compare_scan(
                        &|| {
                            format!(
                                "round {round}: scan_range({}, {}) {stop}",
                                show_bound(start),
                                show_bound(end)
                            )
                        },
                        &got,
                        model_range(&model, start, end).take(limit),
                    )?;
                }
            }
            for p in universe.iter().filter(|p| !cfg!(miri) || p.len() <= 2) {
                for limit in [1, usize::MAX] {
                    let stop = Stop(limit);
                    let got = collect(limit, |v| index.scan_prefix(p, v));
                    compare_scan(
                        &|| format!("round {round}: scan_prefix({}) {stop}", show(p)),
                        &got,
                        model.iter().filter(|(k, _)| k.starts_with(p)).take(limit),
                    )?;
                }
                let got = index.prefix_collect(p);
                let want: Vec<(Vec<u8>, Vec<u8>)> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                ensure!(
                    got == want,
                    "round {round}: prefix_collect({}) differs from the model",
                    show(p)
                );
            }
            typed_ranges(&index, &model, &sample, round)?;
        }
        Ok(())
    })
}

/// `range_with` and `range_collect` with typed `RangeBounds` of several key types.
fn typed_ranges(
    index: &dyn OrderedKvIndex,
    model: &Model,
    sample: &[&[u8]],
    round: usize,
) -> Check {
    fn run<K: AsRef<[u8]>>(
        index: &dyn OrderedKvIndex,
        range: impl std::ops::RangeBounds<K>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        index.range_with(range, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        out
    }
    let expect = |start: Bound<&[u8]>, end: Bound<&[u8]>| -> Vec<(Vec<u8>, Vec<u8>)> {
        model_range(model, start, end)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    use Bound::{Excluded, Included, Unbounded};
    for w in sample.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (va, vb) = (a.to_vec(), b.to_vec());
        type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
        let cases: [(&str, Pairs, Pairs); 8] = [
            (
                "..",
                run::<Vec<u8>>(index, ..),
                expect(Unbounded, Unbounded),
            ),
            (
                "a..",
                run(index, va.clone()..),
                expect(Included(a), Unbounded),
            ),
            (
                "..b",
                run(index, ..vb.clone()),
                expect(Unbounded, Excluded(b)),
            ),
            ("a..b", run(index, a..b), expect(Included(a), Excluded(b))),
            (
                "a..=b",
                run(index, va.clone()..=vb.clone()),
                expect(Included(a), Included(b)),
            ),
            ("..=b", run(index, ..=b), expect(Unbounded, Included(b))),
            (
                "(Excluded(a), Included(b))",
                run::<&[u8]>(index, (Excluded(a), Included(b))),
                expect(Excluded(a), Included(b)),
            ),
            (
                "(Excluded(a), Excluded(b))",
                run(index, (Excluded(va.clone()), Excluded(vb.clone()))),
                expect(Excluded(a), Excluded(b)),
            ),
        ];
        for (what, got, want) in cases {
            ensure!(
                got == want,
                "round {round}: range({what}) with a = {}, b = {}: got {} pairs {:?}, expected {} pairs {:?}",
                show(a),
                show(b),
                got.len(),
                got.iter().map(|(k, _)| show(k)).collect::<Vec<_>>(),
                want.len(),
                want.iter().map(|(k, _)| show(k)).collect::<Vec<_>>()
            );
        }
        if a.len() <= 3 && !a.is_empty() {
            let mut arr = [0u8; 1];
            arr[0] = a[0];
            let got = run(index, arr..);
            ensure!(
                got == expect(Included(&arr[..]), Unbounded),
                "round {round}: range([{:#04x}]..) with an array key differs from the model",
                arr[0]
            );
        }
        for limit in [0, 1, 5] {
            let got = index.range_collect(a.., limit);
            let want: Vec<_> = expect(Included(a), Unbounded)
                .into_iter()
                .take(limit)
                .collect();
            ensure!(
                got == want,
                "round {round}: range_collect({}.., {limit}) returned {} pairs, expected {}",
                show(a),
                got.len(),
                want.len()
            );
        }
    }
    Ok(())
}
