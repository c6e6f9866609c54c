//! `SlabPool` hot path against the global allocator (the system `malloc`): an alloc/free
//! pair, and batches of 1000 allocations then 1000 frees (which cycle magazines through the
//! pool's depot).
//!
//! `cargo bench -p orrery-core --bench alloc` (add `-- --measurement-time 1` for a quick run).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::alloc::{Layout, alloc, dealloc};
use std::hint::black_box;
use std::ptr::NonNull;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use orrery_core::alloc::SlabPool;

const OBJECT: usize = 64;
const BATCH: usize = 1000;

fn bench_slab(c: &mut Criterion) {
    let pool = SlabPool::new(OBJECT, 8).expect("valid slab configuration");
    let layout = Layout::from_size_align(OBJECT, 8).expect("valid layout");
    let mut group = c.benchmark_group("alloc");

    group.throughput(Throughput::Elements(1));
    group.bench_function("slab/pair", |b| {
        b.iter(|| {
            let p = pool.alloc();
            // SAFETY: allocated from `pool` just above, freed once.
            unsafe { pool.free(black_box(p)) };
        })
    });
    group.bench_function("global/pair", |b| {
        b.iter(|| {
            // SAFETY: `layout` has a non-zero size.
            let p = unsafe { alloc(layout) };
            // SAFETY: allocated just above with `layout`, freed once.
            unsafe { dealloc(black_box(p), layout) };
        })
    });

    group.throughput(Throughput::Elements(BATCH as u64));
    let mut held: Vec<NonNull<u8>> = Vec::with_capacity(BATCH);
    group.bench_function("slab/batch1000", |b| {
        b.iter(|| {
            held.extend((0..BATCH).map(|_| pool.alloc()));
            for p in held.drain(..) {
                // SAFETY: allocated from `pool` above, freed once.
                unsafe { pool.free(p) };
            }
        })
    });
    let mut held: Vec<*mut u8> = Vec::with_capacity(BATCH);
    group.bench_function("global/batch1000", |b| {
        b.iter(|| {
            // SAFETY: `layout` has a non-zero size.
            held.extend((0..BATCH).map(|_| unsafe { alloc(layout) }));
            for p in held.drain(..) {
                // SAFETY: allocated above with `layout`, freed once.
                unsafe { dealloc(p, layout) };
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench_slab);
criterion_main!(benches);
