//! Growth of the table (§5 "Resizing", `trie/grow.rs`): writers that meet a frozen table
//! help copy it, readers keep finding every acknowledged key while it is copied, and out of
//! memory during a growth is an error that leaves the old table working.
//!
//! Concurrent rounds start their threads together at a barrier; the test repeats rounds
//! (each on a fresh trie of 4 buckets, so each round grows it a dozen times) until it has
//! seen what it is about — units copied by writers that did not start the growth, and
//! lookups made while a growth was in progress — bounded by a generous time deadline.

use rand::Rng;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use orrery_core::alloc::failpoint;
use orrery_core::api::Error;
use orrery_core::testing::wait::Watchdog;
use orrery_cuckoo_trie::{Config, CuckooTrie};

/// A test still running after this is stuck inside the index (every wait of the test is
/// bounded by a shorter deadline): the watchdog ends the process instead of letting the
/// thread scope hang the run.
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(600);

/// Key `j` of writer `w`: interleaved so that every writer's keys spread over the trie.
fn key(w: usize, j: usize) -> [u8; 8] {
    let x = ((j as u64) << 8 | w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x.to_be_bytes()
}

fn small() -> CuckooTrie {
    CuckooTrie::with_config(Config::builder().initial_buckets(4).build().unwrap()).unwrap()
}

#[test]
fn writers_cooperate_in_growth_while_readers_find_every_acknowledged_key() {
    let _watchdog = Watchdog::arm(
        "writers_cooperate_in_growth_while_readers_find_every_acknowledged_key",
        WATCHDOG,
    );
    const W: usize = 3;
    const R: usize = 2;
    let per_writer = if cfg!(miri) { 200 } else { 20_000 };
    let began = Instant::now();
    let deadline = began + Duration::from_secs(if cfg!(miri) { 3600 } else { 180 });
    let mut helped = 0;
    let mut reads_growing = 0;
    let mut rounds = 0;
    while helped == 0 || reads_growing == 0 || rounds < 2 {
        assert!(
            Instant::now() < deadline,
            "within the deadline: {rounds} rounds, {helped} helped units, \
             {reads_growing} lookups during a growth"
        );
        let ct = small();
        let acked: Vec<AtomicUsize> = (0..W).map(|_| AtomicUsize::new(0)).collect();
        let done = AtomicBool::new(false);
        let growing_reads = AtomicU64::new(0);
        let start = Barrier::new(W + R);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..W)
                .map(|w| {
                    let (ct, acked, start) = (&ct, &acked, &start);
                    s.spawn(move || {
                        start.wait();
                        for j in 0..per_writer {
                            let k = key(w, j);
                            assert_eq!(ct.insert(&k, &k), Ok(true));
                            acked[w].store(j + 1, Ordering::Release);
                        }
                    })
                })
                .collect();
            for r in 0..R {
                let (ct, acked, start, done, growing_reads) =
                    (&ct, &acked, &start, &done, &growing_reads);
                s.spawn(move || {
                    start.wait();
                    let mut rng =
                        orrery_core::testing::rng::rng(0x2545_F491u64.wrapping_mul(r as u64 + 1));
                    while !done.load(Ordering::Acquire) {
                        for (w, a) in acked.iter().enumerate() {
                            let n = a.load(Ordering::Acquire);
                            if n == 0 {
                                continue;
                            }
                            let x: u64 = rng.random();
                            // The newest acknowledged key and a random older one.
                            for j in [n - 1, (x % n as u64) as usize] {
                                let k = key(w, j);
                                let growing = ct.stats().migrating;
                                assert_eq!(
                                    ct.get(&k).as_deref(),
                                    Some(&k[..]),
                                    "acknowledged key {j} of writer {w}"
                                );
                                if growing && ct.stats().migrating {
                                    growing_reads.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            // The same through a lookup group.
                            let ks: Vec<[u8; 8]> = (0..16)
                                .map(|q| key(w, (x as usize).wrapping_add(q * 7919) % n))
                                .collect();
                            let refs: Vec<&[u8]> = ks.iter().map(|k| &k[..]).collect();
                            ct.get_many(&refs, &mut |i, v| {
                                assert_eq!(v, Some(&ks[i][..]), "get_many of writer {w}");
                            });
                        }
                    }
                });
            }
            for h in writers {
                h.join().unwrap();
            }
            done.store(true, Ordering::Release);
        });
        assert_eq!(ct.check_invariants(), Ok(W * per_writer));
        for w in 0..W {
            for j in 0..per_writer {
                assert!(ct.contains_key(&key(w, j)), "key {j} of writer {w} after");
            }
        }
        let st = ct.stats().growth;
        assert!(st.growths >= 5, "grew {} times", st.growths);
        assert_eq!(st.abandoned, 0);
        helped += st.helped_units;
        reads_growing += growing_reads.load(Ordering::Relaxed);
        rounds += 1;
    }
}

/// Every allocation of each insert is made to fail in turn (thread-local fail point): an
/// insert whose growth cannot allocate the new table returns `OutOfMemory`, counts an
/// abandoned growth, keeps the old table (same size, no growth running), leaves the key
/// absent and every earlier key present; the same insert succeeds (growing the table)
/// once allocation works again.
#[test]
fn out_of_memory_during_growth_is_an_error_and_leaves_the_old_table_working() {
    let _watchdog = Watchdog::arm(
        "out_of_memory_during_growth_is_an_error_and_leaves_the_old_table_working",
        WATCHDOG,
    );
    let ct = small();
    let n = if cfg!(miri) { 60 } else { 3000 };
    for i in 0..n {
        let k = (i as u32).wrapping_mul(2_654_435_761).to_be_bytes();
        let mut fails = 0;
        loop {
            let bytes = ct.memory_usage().structure_bytes;
            let abandoned = ct.stats().growth.abandoned;
            let r = {
                let _armed = failpoint::arm(fails + 1);
                ct.insert(&k, &k)
            };
            match r {
                Ok(new) => {
                    assert!(new);
                    break;
                }
                Err(e) => {
                    assert_eq!(e, Error::OutOfMemory);
                    assert!(!ct.contains_key(&k), "a failed insert left its key");
                    assert!(!ct.stats().migrating);
                    if ct.stats().growth.abandoned > abandoned {
                        assert_eq!(ct.memory_usage().structure_bytes, bytes, "table replaced");
                    }
                    fails += 1;
                }
            }
        }
        if i % 97 == 0 || i + 1 == n {
            assert_eq!(ct.check_invariants(), Ok(i + 1));
        }
    }
    let st = ct.stats().growth;
    assert!(st.growths >= 5, "grew {} times", st.growths);
    // Each growth was first tried with its table's allocation failing.
    assert!(
        st.abandoned >= st.growths,
        "{} abandoned growths for {} growths",
        st.abandoned,
        st.growths
    );
}
