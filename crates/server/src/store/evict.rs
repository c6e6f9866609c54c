//! The keyspace under the memory limit (`maxmemory`): what it counts as used, how the
//! eviction samples it, how an eviction deletes, and the access field reads refresh. The
//! limit and the choice of victims are `crate::memory`'s, shared with the memcached port;
//! this file is the RESP keyspace's side of [`Keyspace`].
//!
//! # Accounting
//!
//! Used memory is, for each of the store's indexes (the keys, the large collections'
//! elements and list positions, the deadlines), the key and value bytes its
//! `memory_usage` reports plus [`ITEM_STRUCTURE`] per entry, plus the bytes of the large
//! strings kept out of line (`large`): live bytes, which fall when keys go. Not the indexes' reserved chunks, which they keep for reuse: a limit on those
//! evicts without freeing (the memcached port's `-m` found this first; see
//! `crate::memory`).
//!
//! # Access field
//!
//! Every stored value carries an access field (`value`: last access, LFU counter). Writes
//! set it (a new key's LFU counter at its initial value, [`lfu::INIT`]). Reads refresh it only while it matters, that is while a limit is set or an LFU
//! policy is chosen ([`Store::tracking`]), and then at most once per key per second under
//! LRU (the field's resolution, as Redis's LRU clock) or when the LFU counter moves: on a
//! Mercury backend in place, lock-free; on another backend under the key's stripe when it
//! is free (a busy stripe skips the refresh). So a
//! server without a limit pays nothing on reads, and `OBJECT IDLETIME` there counts from
//! the last write.
//!
//! # Eviction
//!
//! Ranks: under the LRU policies a key's idle time, times
//! [`PROBATION_WEIGHT`](crate::memory::PROBATION_WEIGHT) when it was never read since it
//! was written (its LFU counter still at [`lfu::INIT`]: an LRU read raises it past that;
//! see [`crate::memory::lru_rank`]). This is where `allkeys-lru` departs from Redis's,
//! which ranks by idle time alone: under a cache-aside load most keys stored on a miss are
//! never asked for again, and the probation evicts them before keys that are read
//! (measured: `docs/results/server.md`, "Eviction").
//!
//! Sampling ([`Keyspace::sample`]): `allkeys-*` walk the key index from a random place
//! (Mercury) or, on ordered backends, alternately from a sweeping hand and from a random
//! key of a reservoir the hand fills from the whole key order ([`sweep`]); `volatile-*`
//! walk the deadlines index (only keys with a deadline are there), `volatile-ttl` from its
//! start (the nearest deadlines), the others as the keys. An eviction ([`Keyspace::evict`]) is an
//! ordinary delete: [`Store::write`] on the key's stripe, checking that the access field
//! is still the one sampled, then [`Txn::delete`](super::Txn::delete), which logs `DEL`
//! to the append-only file like any other delete.

use std::ops::{Bound, ControlFlow};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use orrery::KvIndex;

use super::value::{header, set_access};
use super::{Call, Store};
use crate::memory::{DEAD, Keyspace, Policy, lfu, lru_rank};

/// Bytes of index structure an entry costs beyond its key and value, as the limit counts
/// it (Mercury's 16-byte node header and a 32-byte bucket cell; the memcached port counts
/// the same).
pub(crate) const ITEM_STRUCTURE: usize = 48;

/// The samplers of ordered indexes (keys, deadlines); see [`sweep`].
#[derive(Default)]
pub(super) struct Hands {
    keys: Mutex<Sampler>,
    deadlines: Mutex<Sampler>,
}

/// Where the samples of an ordered index start: a hand sweeping the key order, and a
/// reservoir of keys the hand passed, spread over the whole order.
#[derive(Default)]
struct Sampler {
    /// The last key the hand visited.
    hand: Vec<u8>,
    /// Keys the hand passed, each admitted with probability `RESERVOIR / len`, so that
    /// a pass of the hand over the index refills it evenly from the whole key order.
    reservoir: Vec<Vec<u8>>,
    /// Samples taken (every other one starts at the hand).
    taken: u64,
}

/// Keys the reservoir of a [`Sampler`] holds.
const RESERVOIR: usize = 256;

fn live_bytes(idx: &dyn KvIndex) -> usize {
    idx.memory_usage().key_value_bytes + idx.len() * ITEM_STRUCTURE
}

/// SplitMix64's finaliser: the random draws of [`sweep`] from the sample's seed.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Visits up to `n` consecutive pairs of `o` (wrapping to the start). Every other sample
/// starts at the sampler's hand and moves it, feeding the reservoir; the others start
/// after a random key of the reservoir. A hand alone samples one stretch of the key order
/// after another, so when it crosses keys that are all recently used (keys under one
/// prefix, read together), the pool holds nothing else and one of them is evicted while
/// idler keys wait elsewhere; the reservoir's starts mix candidates from the whole order
/// into every pool, as Redis's random samples do.
fn sweep(
    o: &dyn orrery::OrderedKvIndex,
    sampler: &Mutex<Sampler>,
    seed: u64,
    n: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) {
    let mut s = sampler.lock().unwrap_or_else(|p| p.into_inner());
    s.taken += 1;
    let from_hand = s.taken % 2 == 1 || s.reservoir.is_empty();
    let start = if from_hand {
        s.hand.clone()
    } else {
        let r = mix(seed) as usize % s.reservoir.len();
        s.reservoir[r].clone()
    };
    // Admission to the reservoir: probability RESERVOIR / len, as a threshold on a
    // 64-bit draw.
    let len = o.len().max(1) as u128;
    let admit = if len <= RESERVOIR as u128 {
        u64::MAX
    } else {
        ((u128::from(u64::MAX) * RESERVOIR as u128) / len) as u64
    };
    let mut admitted: Vec<Vec<u8>> = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    let seen = std::cell::Cell::new(0u64);
    let mut each = |k: &[u8], v: &[u8]| {
        seen.set(seen.get() + 1);
        if from_hand {
            last = Some(k.to_vec());
            if mix(seed ^ seen.get().wrapping_mul(0x9e37_79b9_7f4a_7c15)) <= admit {
                admitted.push(k.to_vec());
            }
        }
        visit(k, v);
        if seen.get() >= n as u64 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    o.scan(Bound::Excluded(&start), &mut each);
    if seen.get() < n as u64 {
        o.scan(Bound::Unbounded, &mut each);
    }
    if from_hand {
        s.hand = last.unwrap_or_default();
        for (i, k) in admitted.into_iter().enumerate() {
            if s.reservoir.len() < RESERVOIR {
                s.reservoir.push(k);
            } else {
                let r = mix(seed.rotate_left(17) ^ i as u64) as usize % RESERVOIR;
                s.reservoir[r] = k;
            }
        }
    }
}

impl Store {
    /// The memory limit and eviction policy of this keyspace.
    pub(crate) fn memory(&self) -> &crate::memory::Memory {
        &self.memory
    }

    /// The shared handle of [`Store::memory`] (for `CONFIG SET`).
    pub(crate) fn memory_handle(&self) -> std::sync::Arc<crate::memory::Memory> {
        self.memory.clone()
    }

    /// Applies the start-up settings `maxmemory`, `maxmemory-policy`, `maxmemory-samples`,
    /// `lfu-log-factor`, `lfu-decay-time`.
    pub(crate) fn configure_memory(&self, c: &crate::config::Config) {
        let m = &self.memory;
        m.set_limit(c.maxmemory);
        m.set_policy(c.maxmemory_policy);
        m.set_samples(c.maxmemory_samples);
        m.set_lfu_log_factor(c.lfu.0);
        m.set_lfu_decay_time(c.lfu.1);
    }

    /// The bytes of the large string the stored value `raw` (with header `h`) names; 0
    /// for any other value.
    pub(crate) fn blob_len(&self, h: super::value::Header, raw: &[u8]) -> usize {
        if h.kind != super::Kind::String {
            return 0;
        }
        super::large_id(h.enc, &raw[h.at..])
            .and_then(|id| self.large.blob(id))
            .map_or(0, |b| b.len())
    }

    /// Whether reads refresh the access field (see the module docs).
    pub(crate) fn tracking(&self) -> bool {
        self.memory.limit() > 0 || self.memory.policy().lfu()
    }

    /// The access field `a` after an access at `now_s` (Unix seconds): the time set, and
    /// under an LFU policy the counter decayed and perhaps incremented.
    pub(crate) fn touched(&self, a: u32, now_s: u64) -> u32 {
        if self.memory.policy().lfu() {
            let (factor, decay) = self.memory.lfu_params();
            lfu::touch(a, now_s, factor, decay, lfu::random())
        } else {
            // LRU: the time, and the counter raised past its initial value on the first
            // read (as an LFU touch does then, with probability 1), which is what marks a
            // key read since it was written for the probation rank (`rank`).
            let c = ((a >> 24) as u8).max(lfu::INIT + 1);
            (u32::from(c) << 24) | (now_s as u32 & 0x00ff_ffff)
        }
    }

    /// Notes a read of `key` whose access field is `a`, at `now` (Unix milliseconds):
    /// rewrites the field when it changed (see the module docs). `locked`: the caller holds
    /// the key's stripe.
    pub(crate) fn note_access(&self, key: &[u8], a: u32, now: u64, locked: bool) {
        if !self.tracking() {
            return;
        }
        let new = self.touched(a, now / 1000);
        if new == a {
            return;
        }
        if let Some(m) = &self.unordered {
            let _ = m.update_in_place(key, |v| {
                set_access(v, new);
            });
            return;
        }
        let rewrite = || {
            if let Some(mut v) = self.kv().get(key)
                && set_access(&mut v, new)
            {
                let _ = self.kv().insert(key, &v);
            }
        };
        if locked {
            rewrite();
        } else if let Ok(_g) = self.stripes[self.stripe(key)].try_lock() {
            // Best effort: a busy stripe skips the refresh, so a read made while its
            // caller holds the stripe (a transaction) cannot deadlock on it.
            rewrite();
        }
    }

    /// Counts a read lookup for `INFO stats` (`keyspace_hits`/`keyspace_misses`).
    pub(crate) fn note_lookup(&self, hit: bool) {
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// (`keyspace_hits`, `keyspace_misses`).
    pub(crate) fn lookups(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// The rank of a stored value for `policy` at `now` (Unix ms); see [`Keyspace::sample`].
    fn rank(&self, policy: Policy, raw: &[u8], now: u64) -> Option<(u64, u32)> {
        let h = header(raw)?;
        if h.deadline.is_some_and(|d| d <= now) {
            return Some((DEAD, h.access.unwrap_or(0)));
        }
        let a = h.access.unwrap_or(0);
        let rank = match policy {
            Policy::Lfu | Policy::VolatileLfu => {
                let (_, decay) = self.memory.lfu_params();
                255 - u64::from(lfu::counter(a, now / 1000, decay))
            }
            Policy::VolatileTtl => DEAD - 1 - h.deadline.unwrap_or(DEAD - 1).min(DEAD - 1),
            // The access time has a resolution of one second: the middle of it, so that a
            // key never read since it was written this second still ranks above one read.
            _ => lru_rank(
                lfu::idle_secs(a, now / 1000) * 1000 + 500,
                (a >> 24) as u8 > lfu::INIT,
            ),
        };
        Some((rank, a))
    }
}

impl Keyspace for Store {
    fn used_bytes(&self) -> usize {
        live_bytes(self.kv())
            + live_bytes(self.elements())
            + live_bytes(self.positions())
            + live_bytes(&self.deadlines)
            + self.large.blob_bytes()
    }

    fn items(&self) -> usize {
        self.kv().len()
    }

    fn sample(&self, policy: Policy, seed: u64, n: usize, f: &mut dyn FnMut(&[u8], u64, u32)) {
        if n == 0 {
            return;
        }
        let now = crate::clock::now_ms();
        if policy.volatile() {
            let mut visit = |dk: &[u8], _: &[u8]| {
                let key = &dk[8..];
                let mut ranked = None;
                self.kv()
                    .get_with(key, &mut |v| ranked = self.rank(policy, v, now));
                if let Some((rank, a)) = ranked {
                    f(key, rank, a);
                }
            };
            if policy == Policy::VolatileTtl {
                let mut left = n;
                self.deadlines.scan(Bound::Unbounded, &mut |k, v| {
                    visit(k, v);
                    left -= 1;
                    if left == 0 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
            } else {
                sweep(&self.deadlines, &self.hands.deadlines, seed, n, &mut visit);
            }
            return;
        }
        let mut visit = |k: &[u8], v: &[u8]| {
            if let Some((rank, a)) = self.rank(policy, v, now) {
                f(k, rank, a);
            }
        };
        if let Some(m) = &self.unordered {
            let mut left = n;
            m.for_each_from(seed, &mut |k: &[u8], v: &[u8]| {
                visit(k, v);
                left -= 1;
                if left == 0 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
        } else if let Some(o) = self.ordered() {
            sweep(o, &self.hands.keys, seed, n, &mut visit);
        }
    }

    fn evict(&self, key: &[u8], clock: u32) -> Option<usize> {
        let call = Call::new(crate::clock::now_ms());
        self.write(&[key], &call, |t| {
            let mut size = None;
            self.kv().get_with(key, &mut |v| {
                if let Some(h) = header(v).filter(|h| h.access.unwrap_or(0) == clock) {
                    size = Some(key.len() + v.len() + ITEM_STRUCTURE + self.blob_len(h, v));
                }
            });
            let size = size?;
            // The ordinary delete path: logged (`DEL`), seen by `WATCH`.
            t.delete(key).then_some(size)
        })
    }
}

/// The limit counts every database: each one's keys and deadlines, and the large
/// collections' shared indexes and the large strings' shared buffers once. A sample is taken from one database (the first
/// non-empty one from a place the seed picks) and names its keys with the database's
/// number in front (one byte, as blocked keys: `super::ready_key`), which
/// [`Keyspace::evict`] takes off again.
impl Keyspace for super::Databases {
    fn used_bytes(&self) -> usize {
        let first = self.shared();
        self.each()
            .map(|(_, s)| live_bytes(s.kv()) + live_bytes(&s.deadlines))
            .sum::<usize>()
            + live_bytes(first.elements())
            + live_bytes(first.positions())
            + first.large.blob_bytes()
    }

    fn items(&self) -> usize {
        self.each().map(|(_, s)| s.kv().len()).sum()
    }

    fn sample(&self, policy: Policy, seed: u64, n: usize, f: &mut dyn FnMut(&[u8], u64, u32)) {
        let count = self.count();
        let start = (seed as usize) % count;
        for i in 0..count {
            let db = (start + i) % count;
            let Some(s) = self.built(db) else { continue };
            let empty = if policy.volatile() {
                s.deadlines.is_empty()
            } else {
                s.kv().is_empty()
            };
            if empty {
                continue;
            }
            let mut named = Vec::new();
            s.sample(policy, seed, n, &mut |k, rank, a| {
                named.clear();
                named.push(db as u8);
                named.extend_from_slice(k);
                f(&named, rank, a);
            });
            return;
        }
    }

    fn evict(&self, key: &[u8], clock: u32) -> Option<usize> {
        let (&db, key) = key.split_first()?;
        self.built(usize::from(db))?.evict(key, clock)
    }
}
