//! Multi-threaded stress: writers churn disjoint key partitions (many splits and merges
//! with 8-key leaves) while readers check that keys present throughout are always found and
//! that scans ascend. Ends with a full structural validation against the writers' models.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicBool, Ordering};

use orrery_core::testing::wait::Progress;
use orrery_wormhole::Wormhole;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn stable_key(i: u32) -> Vec<u8> {
    // 'S' sorts below every churn key's first byte, so stable keys are never churned.
    let mut k = b"S".to_vec();
    k.extend_from_slice(&(i * 7919 % 1000).to_be_bytes());
    k
}

fn churn_key(t: u32, rng: &mut SmallRng) -> Vec<u8> {
    // Partition by thread in the middle of the key so partitions interleave in key order.
    let mut k = vec![rng.random_range(b'a'..=b'z')];
    k.push(t as u8);
    let tail_len = rng.random_range(0..4);
    for _ in 0..tail_len {
        k.push([0u8, 0, 1, 0x80, 0xFF][rng.random_range(0..5)]);
    }
    k
}

fn run(cap: usize, writers: u32, readers: u32, ops: usize) {
    let wh = Wormhole::with_config(
        orrery_wormhole::Config::builder()
            .leaf_capacity(cap)
            .build()
            .unwrap(),
    )
    .unwrap();
    for i in 0..1000 {
        wh.insert(&stable_key(i), b"stable").unwrap();
    }
    let stop = AtomicBool::new(false);
    // The readers run before the writers start and between every few hundred operations.
    let progress = Progress::new(readers as usize);
    let models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
        for r in 0..readers {
            let (wh, stop, progress) = (&wh, &stop, &progress);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + r as u64);
                while !stop.load(Ordering::Relaxed) {
                    progress.bump(r as usize);
                    let i = rng.random_range(0..1000);
                    assert_eq!(wh.get(&stable_key(i)).as_deref(), Some(&b"stable"[..]));
                    let keys: Vec<_> = (0..16).map(|j| stable_key((i + j) % 1000)).collect();
                    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                    wh.get_many(&refs, &mut |_, v| assert_eq!(v, Some(&b"stable"[..])));
                    let mut last: Option<Vec<u8>> = None;
                    let mut stable_seen = 0;
                    let start = [rng.random_range(b'A'..b'z')];
                    wh.scan(Bound::Included(&start[..]), &mut |k, _| {
                        if let Some(l) = &last {
                            assert!(l.as_slice() < k, "scan must ascend");
                        }
                        if k.starts_with(b"S") {
                            stable_seen += 1;
                        }
                        last = Some(k.to_vec());
                        ControlFlow::Continue(())
                    });
                    if start[0] <= b'S' {
                        assert_eq!(stable_seen, 1000, "keys present throughout are scanned");
                    }
                }
            });
        }
        let hs: Vec<_> = (0..writers)
            .map(|t| {
                let (wh, progress) = (&wh, &progress);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t as u64);
                    let mut model = BTreeMap::new();
                    let mut last = progress.snapshot();
                    for op in 0..ops {
                        if op % 512 == 0 {
                            progress.wait_all_moved(&mut last);
                        }
                        let k = churn_key(t, &mut rng);
                        match rng.random_range(0..8) {
                            0..=3 => {
                                let v = rng.random::<u64>().to_le_bytes()[..rng.random_range(0..8)]
                                    .to_vec();
                                assert_eq!(
                                    wh.insert(&k, &v).unwrap(),
                                    model.insert(k, v).is_none()
                                );
                            }
                            4..=5 => assert_eq!(wh.remove(&k), model.remove(&k).is_some()),
                            6 => assert_eq!(wh.get(&k), model.get(&k).cloned()),
                            _ => {
                                // Only this thread's partition: first byte k[0], second t.
                                let end = [k[0], t as u8 + 1];
                                let n = wh.remove_range(Bound::Included(&k), Bound::Excluded(&end));
                                let ours: Vec<_> = model
                                    .range::<[u8], _>((
                                        Bound::Included(k.as_slice()),
                                        Bound::Excluded(&end[..]),
                                    ))
                                    .map(|(k, _)| k.clone())
                                    .collect();
                                assert_eq!(n, ours.len());
                                for o in ours {
                                    model.remove(&o);
                                    assert_eq!(wh.get(&o), None);
                                }
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        let models = hs.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        models
    });
    wh.check_invariants().unwrap();
    let mut all = Vec::new();
    wh.scan(Bound::Unbounded, &mut |k, v| {
        all.push((k.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    });
    for (k, v) in &all {
        if k.starts_with(b"S") {
            assert_eq!(v, b"stable");
            continue;
        }
        let t = k[1] as usize;
        assert_eq!(
            models[t].get(k),
            Some(v),
            "index holds a key its writer removed"
        );
    }
    let total: usize = models.iter().map(|m| m.len()).sum();
    assert_eq!(all.len(), total + 1000);
    assert_eq!(wh.len(), total + 1000);
}

#[test]
fn stress_small_leaves() {
    let ops = if cfg!(miri) { 200 } else { 12_000 };
    run(8, 2, 2, ops);
}

#[test]
fn stress_default_leaves() {
    let ops = if cfg!(miri) { 200 } else { 12_000 };
    run(128, 2, 1, ops);
}
