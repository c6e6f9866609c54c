//! `Hyperion::get_many`'s pipeline against a model: random 8-byte keys (large root
//! containers with container and T-Node jump tables, split into chains), keys with long
//! shared prefixes (child and embedded containers, path-compressed suffixes), 0- to
//! 2-byte keys (root values), absent keys and over-long keys, in batches that span
//! arenas and windows; on the default configuration, one arena, and pre-processing.

use orrery_core::api::MAX_KEY_LEN;
use orrery_hyperion::{Config, Hyperion};
use rand::Rng as _;

/// Lookups a `get_many` pipeline keeps in flight (the crate's private `GET_MANY_WINDOW`):
/// batches around it cross window boundaries.
const GET_MANY_WINDOW: usize = 16;

fn keys() -> Vec<Vec<u8>> {
    let mut r = orrery_core::testing::rng::rng(0x2545_F491_4F6C_DD1D);
    let mut out = Vec::new();
    for i in 0..30_000u64 {
        let x: u64 = r.random();
        let mut k = x.to_be_bytes().to_vec();
        if i % 2 == 0 {
            // 32 T-Nodes of 4 tries with hundreds of S-Nodes each: T-Node jump tables.
            k[0] %= 4;
            k[1] %= 8;
        }
        out.push(k);
        if i % 10 == 0 {
            // Long shared prefixes: deep tries.
            let mut k = b"prefix/shared/by/many/keys/".to_vec();
            k.extend_from_slice(&(x % 5000).to_be_bytes()[5..]);
            k.extend(std::iter::repeat_n(b'z', (x % 40) as usize));
            out.push(k);
        }
    }
    out.extend([vec![], vec![7], vec![7, 8], vec![200, 1]]);
    out
}

fn check(h: &Hyperion) {
    let keys = keys();
    let mut model = std::collections::HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        if i % 3 != 0 {
            let v = (i as u64).to_le_bytes()[..i % 9].to_vec();
            h.insert(k, &v).unwrap();
            model.insert(k.clone(), v);
        }
    }
    let model = |k: &[u8]| model.get(k).cloned();
    let long = vec![1u8; MAX_KEY_LEN + 1];
    let mut batch: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    batch.insert(5, &long);
    batch.insert(100, &long);
    let mut absent = keys[0].clone();
    absent.push(0);
    batch.insert(7, &absent);
    for size in [
        1,
        3,
        GET_MANY_WINDOW,
        GET_MANY_WINDOW + 5,
        4 * GET_MANY_WINDOW,
    ] {
        for part in batch.chunks(size).take(400) {
            let mut got = Vec::new();
            h.get_many(part, &mut |i, v| got.push((i, v.map(<[u8]>::to_vec))));
            let want: Vec<_> = part
                .iter()
                .enumerate()
                .map(|(i, k)| (i, model(k)))
                .collect();
            assert_eq!(got, want, "batch of {size}");
        }
    }
    // Every key, in one call.
    let mut got = Vec::new();
    h.get_many(&batch, &mut |i, v| got.push((i, v.map(<[u8]>::to_vec))));
    let want: Vec<_> = batch
        .iter()
        .enumerate()
        .map(|(i, k)| (i, model(k)))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn get_many_matches_get_default() {
    check(&Hyperion::new());
}

#[test]
fn get_many_matches_get_one_arena_prep() {
    check(
        &Hyperion::with_config(
            Config::builder()
                .arenas(1)
                .preprocess(true)
                .build()
                .unwrap(),
        )
        .unwrap(),
    );
}
