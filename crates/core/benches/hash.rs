//! CRC32C and `hash64` throughput: the SSE4.2 hardware path against the portable
//! slice-by-8 table path, on 8 B, 64 B and 1 KiB inputs.
//!
//! `cargo bench -p orrery-core --bench hash` (add `-- --measurement-time 1` for a quick run).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use orrery_core::hash::{
    crc32c_extend_hardware, crc32c_extend_portable, crc32c_hardware_available, hash64,
};

const SIZES: [usize; 3] = [8, 64, 1024];

fn input(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(7))
        .collect()
}

fn bench_crc32c(c: &mut Criterion) {
    let mut group = c.benchmark_group("crc32c");
    for len in SIZES {
        let data = input(len);
        group.throughput(Throughput::Bytes(len as u64));
        if crc32c_hardware_available() {
            group.bench_with_input(BenchmarkId::new("hardware", len), &data, |b, d| {
                b.iter(|| crc32c_extend_hardware(0, black_box(d)))
            });
        } else {
            eprintln!("no SSE4.2: hardware path not measured");
        }
        group.bench_with_input(BenchmarkId::new("portable", len), &data, |b, d| {
            b.iter(|| crc32c_extend_portable(0, black_box(d)))
        });
    }
    group.finish();
}

fn bench_hash64(c: &mut Criterion) {
    let mut group = c.benchmark_group("hash64");
    for len in SIZES {
        let data = input(len);
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::from_parameter(len), &data, |b, d| {
            b.iter(|| hash64(black_box(d)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_crc32c, bench_hash64);
criterion_main!(benches);
