//! What one grace period of `orrery-core`'s epoch collector costs the writer: with a
//! deferred flag and collection steps until it runs (two or three epoch advances) and with
//! `GracePeriod` (one barrier and one scan), with 0 or 1 other thread pinning and unpinning
//! in a loop (a reader). Prints the pin barrier in use, ns per grace period and the reader's
//! pins per µs meanwhile (its slowdown shows the membarrier IPIs).
//!
//! Arguments: `[grace periods per measurement = 20K]`. The pin barrier is the process's:
//! the fenced pin by default, the membarrier pin with `ORRERY_EPOCH_ASYMMETRIC=1` in the
//! environment (the first line of the output says which).
//!
//! `orrery-bench lab epoch_grace_cost 20K`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use orrery::sync::{self, epoch::GracePeriod};

/// A grace period without `GracePeriod`: defer a flag, hand the bag over, run collection
/// steps until it is set.
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
fn measure(kind: &str, readers: usize, n: u32) -> (f64, f64) {
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
        el.as_nanos() as f64 / f64::from(n.max(1)),
        pins / el.as_micros().max(1) as f64,
    )
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = u32::try_from(super::count_arg(args, 0, 20_000)?)
        .map_err(|_| "too many grace periods".to_string())?;
    println!("pin barrier: {:?}", sync::epoch::pin_barrier());
    for readers in [0, 1] {
        for kind in ["deferred-flag", "grace-period"] {
            let (ns, pins) = measure(kind, readers, n);
            println!(
                "{kind:>14} readers={readers}: {ns:8.0} ns per grace period, reader {pins:6.1} pins/us"
            );
        }
    }
    Ok(())
}
