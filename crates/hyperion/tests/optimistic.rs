//! Optimistic point reads racing writers of their own arena (`Config::arenas(1)`: every
//! key in one arena): readers must see every acknowledged write and nothing else, while
//! writers shift, grow, move, split, shrink and free containers and return bins (so the
//! epoch retirement of the memory manager is exercised). Threads start together at a
//! barrier; every wait is bounded by a generous deadline in time.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use orrery_core::testing::rng::{derive, rng};
use orrery_core::testing::wait::Watchdog;
use orrery_hyperion::{Config, Hyperion};
use rand::Rng as _;
use rand::rngs::SmallRng;

/// A test still running after this is stuck inside the index (every wait of the test is
/// bounded by a shorter deadline): the watchdog ends the process instead of letting the
/// thread scope hang the run.
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(600);

const DEADLINE: Duration = Duration::from_secs(120);

fn one_arena() -> Hyperion {
    Hyperion::with_config(Config::builder().arenas(1).build().unwrap()).unwrap()
}

/// The next 64 random bits of a reader's generator.
fn next(x: &mut SmallRng) -> u64 {
    x.random()
}

/// Key `i` of a set whose keys share prefixes (so they land in few, large containers:
/// T-Node jump tables, container jump tables, splits) — or, for `i % 5 == 0`, a long key.
fn key(i: usize) -> Vec<u8> {
    let mut k = vec![
        b'k',
        (i % 7) as u8,
        (i >> 8) as u8,
        i as u8,
        (i >> 16) as u8,
    ];
    if i.is_multiple_of(5) {
        k.extend(std::iter::repeat_n(b'#', 20 + i % 200));
    }
    k
}

/// Value of key `i` in generation `g`: its length varies (inline, out of line), and it
/// names both, so a reader can tell a right value from a torn or misplaced one.
fn value(i: usize, g: usize) -> Vec<u8> {
    let mut v = format!("{i}:{g}:").into_bytes();
    v.resize(v.len() + (i * 7 + g * 13) % 40, b'.');
    v
}

/// Whether `v` is a value some generation of key `i` has.
fn is_value_of(v: &[u8], i: usize) -> bool {
    let s = String::from_utf8_lossy(v);
    let mut parts = s.splitn(3, ':');
    let (Some(a), Some(g), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(a), Ok(g)) = (a.parse::<usize>(), g.parse::<usize>()) else {
        return false;
    };
    a == i && value(i, g) == v
}

/// Runs `readers` reader threads, each calling `check(x, done)` in a loop — `x` its own
/// generator (seeded from `seed` and `r`), `done` the checks it made so far — while this
/// thread runs the writer's `round(0)`, `round(1)`, … up to `rounds` of them, stopping
/// early once [`DEADLINE`] has passed. Threads start together at a barrier. Returns the
/// rounds written and the checks the readers made.
fn race(
    readers: usize,
    seed: u64,
    check: impl Fn(&mut SmallRng, usize) + Sync,
    rounds: usize,
    mut round: impl FnMut(usize),
) -> (usize, usize) {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(readers + 1);
    let checks = AtomicUsize::new(0);
    let done = std::thread::scope(|s| {
        for r in 0..readers {
            let (stop, start, checks, check) = (&stop, &start, &checks, &check);
            s.spawn(move || {
                let mut x = rng(derive(seed, r as u64));
                start.wait();
                let mut local = 0;
                while !stop.load(Ordering::Relaxed) {
                    check(&mut x, local);
                    local += 1;
                }
                checks.fetch_add(local, Ordering::Relaxed);
            });
        }
        start.wait();
        let t0 = Instant::now();
        let mut done = 0;
        while done < rounds {
            round(done);
            done += 1;
            if t0.elapsed() > DEADLINE {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        done
    });
    // The scope joined the readers: their checks are all counted.
    (done, checks.load(Ordering::Relaxed))
}

/// One writer inserts keys `0..n` in order, publishing a watermark after each
/// acknowledgement; readers look up random keys below the watermark (present, with their
/// value) and keys never inserted (absent).
#[test]
fn readers_see_every_acknowledged_insert() {
    let _watchdog = Watchdog::arm("readers_see_every_acknowledged_insert", WATCHDOG);
    let h = one_arena();
    let n = 60_000;
    let mark = AtomicUsize::new(0);
    let (_, checks) = race(
        2,
        0x1234_5678,
        |x, local| {
            let m = mark.load(Ordering::Acquire);
            if m > 0 {
                let i = next(x) as usize % m;
                assert_eq!(h.get(&key(i)), Some(value(i, 0)), "acknowledged key {i}");
            }
            let absent = [&key(next(x) as usize % n)[..], b"-"].concat();
            assert_eq!(h.get(&absent), None, "never inserted: {absent:?}");
            if m > 0 && local % 8 == 0 {
                // A batch across pipeline windows: acknowledged and absent keys.
                let ids: Vec<usize> = (0..40).map(|_| next(x) as usize % m).collect();
                let batch: Vec<Vec<u8>> = ids
                    .iter()
                    .enumerate()
                    .map(|(j, &i)| {
                        let k = key(i);
                        if j % 5 == 0 {
                            [&k[..], b"-"].concat()
                        } else {
                            k
                        }
                    })
                    .collect();
                let refs: Vec<&[u8]> = batch.iter().map(|k| &k[..]).collect();
                let mut seen = 0;
                h.get_many(&refs, &mut |j, v| {
                    let want = (j % 5 != 0).then(|| value(ids[j], 0));
                    assert_eq!(v.map(<[u8]>::to_vec), want, "get_many {:?}", refs[j]);
                    seen += 1;
                });
                assert_eq!(seen, refs.len());
            }
        },
        n,
        |i| {
            h.insert(&key(i), &value(i, 0)).unwrap();
            mark.store(i + 1, Ordering::Release);
        },
    );
    assert!(checks > 0);
    for i in 0..mark.load(Ordering::Relaxed) {
        assert_eq!(h.get(&key(i)), Some(value(i, 0)));
    }
}

/// Writers churn: keys `0..stable` stay present with a value that changes generation by
/// generation (readers must always find one of its values); keys of the churn range are
/// inserted with large values and removed again round after round, so containers grow
/// into extended blocks, split, shrink and are freed, out-of-line values come and go, and
/// bins are emptied and returned — all retired through the epoch collector while readers
/// may still be reading them. A churned key a reader finds must carry its own value.
#[test]
fn readers_survive_shrinking_and_freed_containers() {
    let _watchdog = Watchdog::arm("readers_survive_shrinking_and_freed_containers", WATCHDOG);
    let h = one_arena();
    let stable = 2_000;
    let churn = 6_000;
    for i in 0..stable {
        h.insert(&key(i), &value(i, 0)).unwrap();
    }
    let (rounds, checks) = race(
        2,
        0xABCD_0000,
        |x, _| {
            let i = next(x) as usize % stable;
            let v = h
                .get(&key(i))
                .unwrap_or_else(|| panic!("stable key {i} lost"));
            assert!(is_value_of(&v, i), "stable key {i}: {v:?}");
            let j = stable + next(x) as usize % churn;
            if let Some(v) = h.get(&key(j)) {
                assert!(is_value_of(&v, j), "churned key {j}: {v:?}");
            }
        },
        4,
        |g| {
            let g = g + 1;
            for i in stable..stable + churn {
                h.insert(&key(i), &value(i, g)).unwrap();
                if i % 3 == 0 {
                    let s = i % stable;
                    h.insert(&key(s), &value(s, g)).unwrap();
                }
            }
            for i in stable..stable + churn {
                assert!(h.remove(&key(i)));
            }
        },
    );
    assert!(rounds >= 1);
    assert!(checks > 0);
    assert_eq!(h.len(), stable);
    for i in 0..stable {
        assert!(is_value_of(&h.get(&key(i)).unwrap(), i));
    }
}

/// Point reads and scans of one trie validate that trie's version only (per-trie
/// versions, `arena.rs`): a writer churning another trie of the same arena — its
/// containers growing, splitting, shrinking, freed, bins grown (moved) and returned,
/// directory tables replaced — must never show a reader of the first trie a wrong value,
/// a lost key, or a key out of order. Stable keys (trie `k`) keep one value for the whole
/// test; the writer churns the same key shapes in trie `c` with large values.
#[test]
fn readers_of_one_trie_survive_writers_of_another() {
    use std::collections::HashMap;
    use std::ops::{Bound, ControlFlow};
    let _watchdog = Watchdog::arm("readers_of_one_trie_survive_writers_of_another", WATCHDOG);
    let h = one_arena();
    let stable = 3_000;
    let churn = 6_000;
    let other = |i: usize| {
        let mut k = key(i);
        k[0] = b'c';
        k
    };
    let want: HashMap<Vec<u8>, Vec<u8>> = (0..stable).map(|i| (key(i), value(i, 0))).collect();
    for (k, v) in &want {
        h.insert(k, v).unwrap();
    }
    let (rounds, checks) = race(
        2,
        0x7777_0000,
        |x, _| {
            let i = next(x) as usize % stable;
            assert_eq!(h.get(&key(i)), Some(value(i, 0)), "get of stable key {i}");
            let batch: Vec<Vec<u8>> = (0..16).map(|_| key(next(x) as usize % stable)).collect();
            let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
            h.get_many(&refs, &mut |j, v| {
                assert_eq!(v, Some(&want[refs[j]][..]), "get_many {:?}", refs[j]);
            });
            let from = key(next(x) as usize % stable);
            let mut seen: Vec<Vec<u8>> = Vec::new();
            h.scan(Bound::Included(&from), &mut |k, v| {
                assert_eq!(Some(v), want.get(k).map(Vec::as_slice), "scan at {k:?}");
                seen.push(k.to_vec());
                if seen.len() == 20 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "scan keys ascend");
            let expect = want.keys().filter(|k| **k >= from).count().min(20);
            assert_eq!(seen.len(), expect, "scan from {from:?} lost a stable key");
        },
        30,
        |g| {
            for i in 0..churn {
                h.insert(&other(i), &value(i, g + 1).repeat(1 + i % 3))
                    .unwrap();
            }
            for i in 0..churn {
                assert!(h.remove(&other(i)));
            }
        },
    );
    assert!(rounds >= 1);
    assert!(checks > 0);
    assert_eq!(h.len(), stable);
}
