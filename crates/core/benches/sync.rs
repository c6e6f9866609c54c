//! Microbenchmarks of `orrery_core::sync`, against crossbeam-epoch for the collector.
//!
//! `cargo bench -p orrery-core --bench sync` (add a filter, e.g. `-- epoch/`). Single-threaded:
//! they measure the fixed cost of each primitive on the read (or uncontended) path.

use criterion::Criterion;
use orrery_core::sync::{self, RwSpinLock, SpinLock, VersionLock};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

fn epoch(c: &mut Criterion) {
    let mut g = c.benchmark_group("epoch");

    g.bench_function("pin_drop/orrery", |b| {
        b.iter(|| drop(black_box(sync::pin())))
    });
    g.bench_function("pin_drop/crossbeam", |b| {
        b.iter(|| drop(black_box(crossbeam_epoch::pin())))
    });

    let ours = sync::handle();
    g.bench_function("handle_pin_drop/orrery", |b| {
        b.iter(|| drop(black_box(ours.pin())))
    });
    let theirs = crossbeam_epoch::default_collector().register();
    g.bench_function("handle_pin_drop/crossbeam", |b| {
        b.iter(|| drop(black_box(theirs.pin())))
    });

    {
        let _outer = sync::pin();
        g.bench_function("nested_pin_drop/orrery", |b| {
            b.iter(|| drop(black_box(sync::pin())))
        });
    }
    {
        let _outer = crossbeam_epoch::pin();
        g.bench_function("nested_pin_drop/crossbeam", |b| {
            b.iter(|| drop(black_box(crossbeam_epoch::pin())))
        });
    }

    // Pin + defer a no-op closure + unpin (includes the amortized sealing and collection).
    g.bench_function("pin_defer_noop/orrery", |b| {
        b.iter(|| {
            let guard = ours.pin();
            guard.defer(|| {});
        })
    });
    g.bench_function("pin_defer_noop/crossbeam", |b| {
        b.iter(|| {
            let guard = theirs.pin();
            guard.defer(|| {});
        })
    });

    // Pin + allocate a box + retire it (includes its eventual free).
    g.bench_function("pin_defer_destroy_box/orrery", |b| {
        b.iter(|| {
            let guard = ours.pin();
            let p = Box::into_raw(Box::new(black_box(7u64)));
            // SAFETY: `p` was never shared.
            unsafe { guard.defer_destroy(p) };
        })
    });
    g.bench_function("pin_defer_destroy_box/crossbeam", |b| {
        b.iter(|| {
            let guard = theirs.pin();
            let p = crossbeam_epoch::Owned::new(black_box(7u64)).into_shared(&guard);
            // SAFETY: `p` was never shared.
            unsafe { guard.defer_destroy(p) };
        })
    });
    g.finish();
}

fn locks(c: &mut Criterion) {
    let mut g = c.benchmark_group("locks");

    let lock = VersionLock::new();
    let words = [AtomicU64::new(1), AtomicU64::new(2)];
    g.bench_function("version_read_validate", |b| {
        b.iter(|| {
            let lock = black_box(&lock);
            let v = lock.read_begin();
            let sum = words[0].load(Ordering::Relaxed) + words[1].load(Ordering::Relaxed);
            black_box(lock.validate(v) && black_box(sum) == 3)
        })
    });
    g.bench_function("version_lock_unlock", |b| {
        b.iter(|| drop(black_box(&lock).lock()))
    });

    let spin = SpinLock::new(0u64);
    g.bench_function("spinlock_lock_unlock", |b| {
        b.iter(|| *black_box(&spin).lock() += 1)
    });
    let rw = RwSpinLock::new(0u64);
    g.bench_function("rwspin_read", |b| {
        b.iter(|| black_box(*black_box(&rw).read()))
    });
    g.bench_function("rwspin_write", |b| b.iter(|| *black_box(&rw).write() += 1));
    let mutex = std::sync::Mutex::new(0u64);
    g.bench_function("std_mutex_lock_unlock", |b| {
        b.iter(|| *black_box(&mutex).lock().unwrap() += 1)
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
}

fn main() {
    let mut c = config().configure_from_args();
    epoch(&mut c);
    locks(&mut c);
    c.final_summary();
}
