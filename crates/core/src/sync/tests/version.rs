//! `VersionLock`: validated optimistic readers never see a torn record, and the lock
//! excludes writers (a broken lock loses increments).

use crate::sync::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

/// (b) Writers store the same value in every word of a 4-word record under the lock;
/// validated optimistic readers must never see two different words. The words are also
/// incremented with plain load/store under the lock, so a broken lock loses increments.
#[test]
fn version_lock_readers_never_see_torn_values() {
    let writers = 2;
    let readers = 2;
    let writes = if cfg!(miri) { 20 } else { 50_000 };
    let lock = Arc::new(VersionLock::new());
    let words: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut ts = Vec::new();
    for w in 0..writers {
        let (lock, words) = (lock.clone(), words.clone());
        ts.push(thread::spawn(move || {
            for i in 0..writes {
                let guard = if (w + i) % 2 == 0 {
                    lock.lock()
                } else {
                    // Read-then-upgrade path, retried.
                    loop {
                        let v = lock.read_begin();
                        if let Some(g) = lock.try_upgrade(v) {
                            break g;
                        }
                    }
                };
                let next = words[0].load(Ordering::Relaxed) + 1;
                for word in words.iter() {
                    word.store(next, Ordering::Relaxed);
                }
                drop(guard);
            }
        }));
    }
    let mut rs = Vec::new();
    for _ in 0..readers {
        let (lock, words, stop) = (lock.clone(), words.clone(), stop.clone());
        rs.push(thread::spawn(move || {
            let mut validated = 0u64;
            let mut last = 0;
            while !stop.load(Ordering::Relaxed) || validated == 0 {
                let v = lock.read_begin();
                let snap: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
                if lock.validate(v) {
                    assert!(snap.iter().all(|&x| x == snap[0]), "torn read {snap:?}");
                    assert!(snap[0] >= last, "went back in time");
                    assert_eq!(v.counter(), snap[0], "one version bump per write");
                    last = snap[0];
                    validated += 1;
                }
            }
        }));
    }
    for t in ts {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in rs {
        r.join().unwrap();
    }
    assert_eq!(words[3].load(Ordering::Relaxed), (writers * writes) as u64);
    assert_eq!(lock.read_begin().counter(), (writers * writes) as u64);
}
