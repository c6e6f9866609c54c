//! What one grace period costs the writer, the old way (a deferred flag and collection
//! steps until it runs: two or three epoch advances) and with `GracePeriod` (one barrier and
//! one scan), with 0 or 1 other thread pinning and unpinning in a loop (a reader).
//!
//! `cargo run --release -p orrery-core --example grace_cost` (fenced pin, the default) and
//! the same with `ORRERY_EPOCH_ASYMMETRIC=1` (membarrier pin). Prints ns per grace period
//! and how many the reader's loop did meanwhile (its slowdown shows the IPIs).

use orrery_core::sync::{self, epoch::GracePeriod};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The old protocol: defer a flag, hand the bag over, run collection steps until it is set.
fn deferred_flag_grace() {
    let flag = Arc::new(AtomicBool::new(false));
    {
        let g = sync::pin();
        let f2 = flag.clone();
        g.defer(move || f2.store(true, Ordering::Release));
        g.flush();
    }
    while !flag.load(Ordering::Acquire) {
        sync::pin().flush();
    }
}

/// Runs `n` grace periods of `kind` with `readers` reader threads; returns (ns per grace
/// period, reader pins per µs).
fn run(kind: &str, readers: usize, n: u32) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..readers)
        .map(|_| {
            let (stop, count) = (stop.clone(), count.clone());
            std::thread::spawn(move || {
                let h = sync::handle();
                let mut local = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let g = h.pin();
                        std::hint::black_box(&g);
                        drop(g);
                    }
                    local += 64;
                }
                count.fetch_add(local, Ordering::Relaxed);
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut grace = GracePeriod::new();
    let t = Instant::now();
    for _ in 0..n {
        match kind {
            "deferred-flag" => deferred_flag_grace(),
            _ => {
                grace.start();
                grace.wait();
            }
        }
    }
    let el = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let pins = count.load(Ordering::Relaxed) as f64;
    (
        el.as_nanos() as f64 / f64::from(n),
        pins / el.as_micros().max(1) as f64,
    )
}

fn main() {
    println!("pin barrier: {:?}", sync::epoch::pin_barrier());
    for readers in [0, 1] {
        for kind in ["deferred-flag", "grace-period"] {
            let (ns, pins) = run(kind, readers, 20_000);
            println!(
                "{kind:>14} readers={readers}: {ns:8.0} ns per grace period, reader {pins:6.1} pins/us"
            );
        }
    }
}
