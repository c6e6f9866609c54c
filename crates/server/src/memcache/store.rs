//! The memcached keyspace: items in their own Orrery index (not the Redis keyspace), with
//! memcached's storage semantics — CAS, expiry, `flush_all`, append/prepend, incr/decr
//! with memcached's in-place padding — and the hooks the memory limit needs
//! ([`crate::memory::Keyspace`]).
//!
//! # Concurrency
//!
//! Reads (`get`, `gets`, the lookups of `mg`) take no lock: they are the index's own
//! lookups, a batch of keys through `get_many`. Every write holds the mutex of the key's
//! stripe (one of [`STRIPES`], by a CRC32C of the key) for its read-modify-write, so
//! `cas`, `add`, `incr`, `append` are atomic per key over any index (the trait objects of
//! `orrery::registry` have no compute). Eviction takes the victim's stripe, so a write
//! asks the memory limit for room *before* it takes its own (no stripe is held while
//! another is awaited).
//!
//! A read refreshes the item's access clock (the LRU order of eviction) when it is older
//! than [`BUMP_MS`]: in place under Mercury's bucket lock (`update_in_place`, no stripe:
//! it only rewrites the clock bytes of whatever item is there), or under the stripe for
//! other indexes. Losing a refresh to a concurrent write is harmless (the write sets the
//! clock itself).
//!
//! # Time
//!
//! Expiry is in Unix seconds, as memcached's (relative up to 30 days, absolute beyond,
//! negative: already expired); an item is dead from its expiry second on. `flush_all`
//! invalidates every item whose CAS is at most the CAS counter at the flush (memcached's
//! `oldest_cas`): dead items are removed lazily, by the next access, by eviction, or by the
//! periodic reaper ([`Items::reap`]).

use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use orrery::mercury::Mercury;
use orrery::registry::AnyIndex;
use orrery::{KvIndex, OrderedKvIndex};

use super::counters::{Stat, Tally};
use super::item::{self, Meta, STALE, TOKEN_SENT};
use crate::memory::{DEAD, Keyspace, Memory, Policy, lru_rank};

/// Number of write-lock stripes (a power of two).
pub(crate) const STRIPES: usize = 1024;

/// A read refreshes an item's access clock when it is at least this old (milliseconds):
/// one tick of the access clock (`item::TICK_SHIFT`), the resolution of the LRU order, and
/// at most one clock write per item per tick.
pub(crate) const BUMP_MS: u32 = 1 << item::TICK_SHIFT;

/// The Mercury table's load factor for memcached items (items per 100 buckets before it
/// doubles): 4 per bucket, in 8-byte bucket cells (Mercury's `inline_pairs` off: an item's
/// value carries its header, so no item of a key over 10 bytes would fit the 16-byte inline
/// area, which would only cost 24 bytes per bucket). The cells then cost 2–4 bytes per item
/// (2 to 4 items per cell) instead of 32–64 at Mercury's defaults, and a GET walks chains
/// of 2–4 nodes. A cache is sized by bytes per item; a chain of a few nodes costs a GET a
/// few more DRAM reads, small against a network round trip (measured:
/// `docs/results/mercury.md`, "Against memcached", memory).
pub(crate) const LOAD_PERCENT: usize = 400;

/// memcached's largest relative expiry (30 days); larger values are Unix times.
pub(crate) const MAX_RELATIVE: i64 = 60 * 60 * 24 * 30;

/// memcached's per-item bytes beyond key and data when it sizes an item against `-I`:
/// the 48-byte item header, the 8-byte CAS, the key's NUL and the data's `\r\n`.
pub(crate) const MEMCACHED_ITEM_OVERHEAD: usize = 48 + 8 + 1 + 2;

/// The clock a request runs at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Now {
    /// Unix seconds.
    pub(crate) secs: u32,
    /// Milliseconds since the Unix epoch, modulo 2^32 (items' access clock).
    pub(crate) clock: u32,
}

impl Now {
    /// The time now.
    pub(crate) fn read() -> Now {
        Now::at(crate::clock::now_ms())
    }

    /// The time `ms` (Unix milliseconds).
    pub(crate) fn at(ms: u64) -> Now {
        Now {
            secs: (ms / 1000) as u32,
            clock: ms as u32,
        }
    }

    /// memcached's expiry rule for a client's `exptime`: 0 never; negative: already
    /// expired; up to 30 days: relative; beyond: a Unix time. The result is an item's
    /// expiry field (0: never; 1: a time long past).
    pub(crate) fn expiry(self, exptime: i64) -> u32 {
        if exptime == 0 {
            0
        } else if exptime < 0 {
            1
        } else if exptime <= MAX_RELATIVE {
            self.secs.saturating_add(exptime as u32)
        } else {
            u32::try_from(exptime).unwrap_or(u32::MAX).max(1)
        }
    }
}

/// How a storage command combines with what is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `set`: store.
    Set,
    /// `add`: only if absent.
    Add,
    /// `replace`: only if present.
    Replace,
    /// `append`: after the present data.
    Append,
    /// `prepend`: before the present data.
    Prepend,
    /// `cas`: only if the CAS matches.
    Cas,
}

/// A storage command's outcome (memcached's replies `STORED` … / meta `HD` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // memcached's own names
pub(crate) enum Stored {
    /// Stored, with the new CAS.
    Stored(u64),
    /// The condition failed (`NOT_STORED` / `NS`).
    NotStored,
    /// CAS mismatch (`EXISTS` / `EX`).
    Exists,
    /// `cas` on an absent key (`NOT_FOUND` / `NF`).
    NotFound,
    /// Memory limit with eviction off (`SERVER_ERROR out of memory storing object`).
    NoMemory,
}

/// What a storage command asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Write<'a> {
    pub(crate) mode: Mode,
    pub(crate) flags: u32,
    /// The item's expiry field ([`Now::expiry`]).
    pub(crate) expiry: u32,
    pub(crate) data: &'a [u8],
    /// The CAS to compare (0: none).
    pub(crate) cas: u64,
    /// Meta `I` with a CAS: a lower CAS stores the data as stale instead of failing.
    pub(crate) set_stale: bool,
    /// Meta `b`: the key was given in base64 (kept with the item, as memcached does).
    pub(crate) binary: bool,
}

/// An `incr`/`decr` outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Delta {
    /// The new value (decimal) and the item's metadata after the change.
    Done(u64, Meta),
    /// Absent.
    NotFound,
    /// Not a number.
    NonNumeric,
    /// Meta `C` did not match.
    CasMismatch,
    /// Memory limit with eviction off.
    NoMemory,
}

/// The visitor of [`Items::read_many`]: a key's position and its live item.
pub(crate) type ItemVisitor<'a> = dyn FnMut(usize, Option<(&Meta, &[u8])>) + 'a;

/// What [`Items::update`] does with the item.
pub(crate) enum Change {
    /// Leave it as it is.
    Keep,
    /// Store this metadata and data.
    Put(Meta, Vec<u8>),
    /// Remove it.
    Remove,
}

/// A live item read under its stripe.
pub(crate) struct Loaded {
    pub(crate) meta: Meta,
    /// The item's data.
    pub(crate) data: Vec<u8>,
}

/// The items; see the [module docs](self).
pub(crate) struct Items {
    index: AnyIndex,
    /// The table under the default index, kept for in-place clock refreshes and random
    /// samples (the registry's trait object has neither).
    mercury: Option<Arc<Mercury>>,
    stripes: Box<[Mutex<()>]>,
    /// The last CAS handed out.
    cas: AtomicU64,
    /// Items whose CAS is at most this are flushed.
    flushed_cas: AtomicU64,
    /// A delayed `flush_all`'s time (Unix seconds; 0: none).
    flush_at: AtomicU64,
    /// memcached's `bytes`: key and data bytes of the items stored.
    bytes: AtomicI64,
    /// Where the sampler of an ordered index continues (a sweeping hand).
    hand: Mutex<Vec<u8>>,
    /// The largest item (key, data and memcached's overhead) a write may store.
    max_item: usize,
    pub(crate) memory: Arc<Memory>,
}

/// The stripe a write holds.
type Guard<'a> = MutexGuard<'a, ()>;

/// The CRC32C of a key (stripes).
fn key_hash(key: &[u8]) -> u32 {
    orrery::hash::crc32c(key)
}

/// Parses the start of `data` as C's `strtoull` and memcached's `safe_strtoull` do: optional
/// leading whitespace and sign, decimal digits, then the end of the data, whitespace or a
/// NUL (the stored data is followed by `\r\n` in memcached).
pub(crate) fn parse_counter(data: &[u8]) -> Option<u64> {
    let s = data.split(|&b| b == 0).next().unwrap_or(&[]);
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: u64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(u64::from(s[i] - b'0'))?;
        i += 1;
    }
    if i == start {
        return None;
    }
    if i < s.len() && !matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        return None;
    }
    let v = if neg { v.wrapping_neg() } else { v };
    if (v as i64) < 0 && neg {
        return None;
    }
    Some(v)
}

impl Items {
    /// An empty keyspace over the structure named `name` (`orrery::registry`'s names;
    /// Mercury is built here so that its table's own methods are at hand), under `memory`,
    /// refusing items larger than `max_item` bytes as memcached's `-I` does.
    pub(crate) fn open(name: &str, memory: Arc<Memory>, max_item: usize) -> Result<Items, String> {
        let (index, mercury) = if name == "mercury" {
            let m = Arc::new(
                Mercury::with_config(orrery::mercury::Config {
                    load_percent: LOAD_PERCENT,
                    inline_pairs: false,
                    ..Default::default()
                })
                .map_err(|e| format!("mercury: {e}"))?,
            );
            (AnyIndex::Unordered(Box::new(m.clone())), Some(m))
        } else {
            let index = orrery::registry::build(name).map_err(|e| e.to_string())?;
            if index.as_ordered().is_none() {
                return Err(format!(
                    "--memcache-index {name}: an unordered structure other than mercury cannot be sampled for eviction"
                ));
            }
            (index, None)
        };
        Ok(Items {
            index,
            mercury,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            cas: AtomicU64::new(0),
            flushed_cas: AtomicU64::new(0),
            flush_at: AtomicU64::new(0),
            bytes: AtomicI64::new(0),
            hand: Mutex::new(Vec::new()),
            max_item,
            memory,
        })
    }

    fn kv(&self) -> &dyn KvIndex {
        self.index.as_kv()
    }

    fn ordered(&self) -> Option<&dyn OrderedKvIndex> {
        self.index.as_ordered()
    }

    fn lock(&self, key: &[u8]) -> Guard<'_> {
        self.stripes[key_hash(key) as usize & (STRIPES - 1)]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn next_cas(&self) -> u64 {
        self.cas.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Items stored (live or not yet reclaimed): memcached's `curr_items`.
    pub(crate) fn len(&self) -> usize {
        self.kv().len()
    }

    /// What the index says it holds (`memory_usage`, its allocator's reserved chunks
    /// included).
    pub(crate) fn index_memory(&self) -> usize {
        self.kv().memory_usage().total()
    }

    /// memcached's `bytes`: the key and data bytes of the items stored.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed).max(0) as u64
    }

    /// Whether an item of this key length, flags and data length fits under `-I`
    /// (memcached's `item_size_ok`, with its own per-item overhead).
    pub(crate) fn size_ok(&self, key_len: usize, flags: u32, data_len: usize) -> bool {
        let suffix = if flags != 0 { 4 } else { 0 };
        key_len + data_len + suffix + MEMCACHED_ITEM_OVERHEAD <= self.max_item
    }

    /// `flush_all [delay]`: at once, or from Unix second `at` on.
    pub(crate) fn flush(&self, at: Option<u32>) {
        match at {
            None => {
                let cas = self.next_cas();
                self.flushed_cas.fetch_max(cas, Ordering::Relaxed);
                self.flush_at.store(0, Ordering::Relaxed);
            }
            Some(at) => self.flush_at.store(u64::from(at), Ordering::Relaxed),
        }
    }

    /// Applies a delayed flush whose time has come; the CAS below which items are dead.
    fn flushed_below(&self, now: Now) -> u64 {
        let at = self.flush_at.load(Ordering::Relaxed);
        // memcached's delayed flush takes effect one second before the time asked
        // (`oldest_live = realtime(delay) - 1`).
        if at != 0
            && at <= u64::from(now.secs) + 1
            && self
                .flush_at
                .compare_exchange(at, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let cas = self.next_cas();
            self.flushed_cas.fetch_max(cas, Ordering::Relaxed);
        }
        self.flushed_cas.load(Ordering::Relaxed)
    }

    /// Whether an item is live at `now` below flush watermark `flushed`; counts why not.
    fn live(m: &Meta, now: Now, flushed: u64, tally: &mut Tally) -> bool {
        if m.cas <= flushed {
            tally.bump(Stat::get_flushed);
            false
        } else if m.expiry != 0 && m.expiry <= now.secs {
            tally.bump(Stat::get_expired);
            false
        } else {
            true
        }
    }

    /// Looks up every key of `keys` (through the index's `get_many`) and calls
    /// `f(i, item)` with the live ones; refreshes the access clock of the items found
    /// unless `bump` is false, and removes the dead ones met.
    pub(crate) fn read_many(
        &self,
        keys: &[&[u8]],
        now: Now,
        bump: bool,
        tally: &mut Tally,
        f: &mut ItemVisitor<'_>,
    ) {
        let flushed = self.flushed_below(now);
        let mut dead: Vec<usize> = Vec::new();
        let mut stale: Vec<usize> = Vec::new();
        self.kv().get_many(keys, &mut |i, v| match v
            .and_then(|v| Meta::decode(v).map(|(m, at)| (m, &v[at..])))
        {
            Some((m, data)) if Self::live(&m, now, flushed, tally) => {
                if bump && needs_bump(&m, now) {
                    stale.push(i);
                }
                f(i, Some((&m, data)))
            }
            Some(_) => {
                dead.push(i);
                f(i, None)
            }
            None => f(i, None),
        });
        for i in dead {
            self.reap_key(keys[i], now);
        }
        for i in stale {
            self.bump(keys[i], now);
        }
    }

    /// Refreshes `key`'s access clock and FETCHED bit (whatever item it holds now).
    pub(crate) fn bump(&self, key: &[u8], now: Now) {
        if let Some(m) = &self.mercury {
            let _ = m.update_in_place(key, |v| item::touch_in_place(v, now.clock));
        } else {
            let _g = self.lock(key);
            if let Some(mut v) = self.kv().get(key) {
                item::touch_in_place(&mut v, now.clock);
                let _ = self.kv().insert(key, &v);
            }
        }
    }

    /// Removes `key` if its item is dead at `now` (checked under the stripe).
    fn reap_key(&self, key: &[u8], now: Now) {
        let _g = self.lock(key);
        let mut scratch = Tally::default();
        self.load_locked(key, now, &mut scratch);
    }

    /// The live item of `key` (the caller holds its stripe); a dead one is removed.
    fn load_locked(&self, key: &[u8], now: Now, tally: &mut Tally) -> Option<Loaded> {
        let v = self.kv().get(key)?;
        let (meta, at) = Meta::decode(&v)?;
        if Self::live(&meta, now, self.flushed_below(now), tally) {
            let mut data = v;
            data.drain(..at);
            Some(Loaded { meta, data })
        } else {
            self.remove_locked(key, v.len());
            None
        }
    }

    fn remove_locked(&self, key: &[u8], value_len: usize) {
        if self.kv().remove(key) {
            self.bytes
                .fetch_sub((key.len() + value_len) as i64, Ordering::Relaxed);
        }
    }

    /// Stores `meta` + `data` under `key` (the caller holds the stripe; `old_len` is the
    /// stored value's length, 0 when absent).
    fn put_locked(&self, key: &[u8], meta: &Meta, data: &[&[u8]], old_len: Option<usize>) -> bool {
        let v = meta.item(data);
        match self.kv().insert(key, &v) {
            Ok(_) => {
                let old = old_len.map_or(0, |l| key.len() + l) as i64;
                self.bytes
                    .fetch_add((key.len() + v.len()) as i64 - old, Ordering::Relaxed);
                true
            }
            Err(_) => false,
        }
    }

    fn stored_len(&self, key: &[u8]) -> Option<usize> {
        let mut len = None;
        self.kv().get_with(key, &mut |v| len = Some(v.len()));
        len
    }

    /// Asks the memory limit for room for `bytes`; `false` when refused.
    pub(crate) fn admit(&self, bytes: usize) -> bool {
        self.memory
            .admit(self, bytes, crate::memory::Refuse::WhenItWouldPass)
            .is_ok()
    }

    /// A storage command (`set` … `cas`, `ms`).
    pub(crate) fn store(&self, key: &[u8], w: &Write<'_>, now: Now, tally: &mut Tally) -> Stored {
        if !self.admit(key.len() + w.data.len() + item::MAX_HEADER) {
            tally.bump(Stat::store_no_memory);
            return Stored::NoMemory;
        }
        let _g = self.lock(key);
        let old = self.load_locked(key, now, &mut Tally::default());
        let old_len = old.as_ref().map(|o| o.meta.header_len() + o.data.len());
        let mut meta = Meta {
            flags: w.flags,
            cas: 0,
            expiry: w.expiry,
            atime: item::tick(now.clock),
            state: if w.binary { item::KEY_BINARY } else { 0 },
        };
        let Some(old) = old else {
            return match w.mode {
                Mode::Set | Mode::Add => {
                    meta.cas = self.next_cas();
                    self.finish_store(key, &meta, &[w.data], None, tally)
                }
                Mode::Cas => {
                    tally.bump(Stat::cas_misses);
                    Stored::NotFound
                }
                Mode::Replace | Mode::Append | Mode::Prepend => Stored::NotStored,
            };
        };
        #[derive(PartialEq)]
        enum CasResult {
            None,
            Match,
            Stale,
            BadVal,
        }
        let cas_res = if w.cas == 0 {
            CasResult::None
        } else if w.cas == old.meta.cas {
            CasResult::Match
        } else if w.set_stale && w.cas < old.meta.cas {
            CasResult::Stale
        } else {
            CasResult::BadVal
        };
        match w.mode {
            Mode::Add => {
                // memcached moves the present item to the head of its LRU.
                let mut m = old.meta;
                m.atime = item::tick(now.clock);
                self.put_locked(key, &m, &[&old.data], old_len);
                Stored::NotStored
            }
            Mode::Cas => match cas_res {
                CasResult::Match => {
                    tally.bump(Stat::cas_hits);
                    meta.cas = self.next_cas();
                    self.finish_store(key, &meta, &[w.data], old_len, tally)
                }
                CasResult::Stale => {
                    tally.bump(Stat::cas_hits);
                    meta.expiry = old.meta.expiry;
                    meta.state |= STALE | (old.meta.state & TOKEN_SENT);
                    meta.cas = self.next_cas();
                    self.finish_store(key, &meta, &[w.data], old_len, tally)
                }
                _ => {
                    tally.bump(Stat::cas_badval);
                    Stored::Exists
                }
            },
            Mode::Append | Mode::Prepend => {
                if cas_res != CasResult::None && cas_res != CasResult::Match {
                    return Stored::Exists;
                }
                if !self.size_ok(key.len(), old.meta.flags, old.data.len() + w.data.len()) {
                    return Stored::NotStored;
                }
                meta.flags = old.meta.flags;
                meta.expiry = old.meta.expiry;
                // memcached builds a new item for the result, without the request's marks.
                meta.state = 0;
                meta.cas = self.next_cas();
                let parts: [&[u8]; 2] = if w.mode == Mode::Append {
                    [&old.data, w.data]
                } else {
                    [w.data, &old.data]
                };
                self.finish_store(key, &meta, &parts, old_len, tally)
            }
            Mode::Set | Mode::Replace => {
                meta.cas = self.next_cas();
                self.finish_store(key, &meta, &[w.data], old_len, tally)
            }
        }
    }

    fn finish_store(
        &self,
        key: &[u8],
        meta: &Meta,
        data: &[&[u8]],
        old_len: Option<usize>,
        tally: &mut Tally,
    ) -> Stored {
        if self.put_locked(key, meta, data, old_len) {
            tally.bump(Stat::total_items);
            Stored::Stored(meta.cas)
        } else {
            tally.bump(Stat::store_no_memory);
            Stored::NoMemory
        }
    }

    /// Removes `key`'s item (a `set` that failed for size: memcached drops the old value
    /// so that stale data does not outlive the failed write).
    pub(crate) fn drop_key(&self, key: &[u8]) {
        let _g = self.lock(key);
        if let Some(len) = self.stored_len(key) {
            self.remove_locked(key, len);
        }
    }

    /// `delete`: whether a live item was removed.
    pub(crate) fn delete(&self, key: &[u8], now: Now, tally: &mut Tally) -> bool {
        let _g = self.lock(key);
        match self.load_locked(key, now, &mut Tally::default()) {
            Some(old) => {
                self.remove_locked(key, old.meta.header_len() + old.data.len());
                tally.bump(Stat::delete_hits);
                true
            }
            None => {
                tally.bump(Stat::delete_misses);
                false
            }
        }
    }

    /// `incr`/`decr` (and meta `ma`): 64-bit unsigned, wrapping up, flooring at 0 down; a
    /// result no longer than the old data is written over it padded with spaces, as
    /// memcached does. `cas`: the CAS to compare (0: none).
    pub(crate) fn delta(
        &self,
        key: &[u8],
        incr: bool,
        by: u64,
        cas: u64,
        now: Now,
        tally: &mut Tally,
    ) -> Delta {
        if !self.admit(key.len() + 20 + item::MAX_HEADER) {
            return Delta::NoMemory;
        }
        let _g = self.lock(key);
        let Some(old) = self.load_locked(key, now, &mut Tally::default()) else {
            return Delta::NotFound;
        };
        if old.data.is_empty() {
            return Delta::NonNumeric;
        }
        if cas != 0 && old.meta.cas != cas {
            return Delta::CasMismatch;
        }
        let Some(value) = parse_counter(&old.data) else {
            return Delta::NonNumeric;
        };
        let value = if incr {
            value.wrapping_add(by)
        } else {
            value.saturating_sub(by)
        };
        tally.bump(if incr {
            Stat::incr_hits
        } else {
            Stat::decr_hits
        });
        let digits = value.to_string();
        let mut data = digits.into_bytes();
        let mut meta = Meta {
            cas: self.next_cas(),
            atime: item::tick(now.clock),
            ..old.meta
        };
        if data.len() <= old.data.len() {
            data.resize(old.data.len(), b' ');
        } else {
            // memcached writes a longer result into a new item (fresh state bits).
            meta.state = 0;
        }
        let old_len = old.meta.header_len() + old.data.len();
        if !self.put_locked(key, &meta, &[&data], Some(old_len)) {
            return Delta::NoMemory;
        }
        Delta::Done(value, meta)
    }

    /// `touch` and `gat`: sets a live item's expiry and refreshes it; its item after.
    pub(crate) fn touch(
        &self,
        key: &[u8],
        expiry: u32,
        now: Now,
        tally: &mut Tally,
    ) -> Option<Loaded> {
        let _g = self.lock(key);
        let mut old = self.load_locked(key, now, tally)?;
        let len = old.meta.header_len() + old.data.len();
        old.meta.expiry = expiry;
        old.meta.atime = item::tick(now.clock);
        old.meta.state |= item::FETCHED;
        self.put_locked(key, &old.meta, &[&old.data], Some(len));
        Some(old)
    }

    /// The item of `key` under its stripe (for the meta commands, which read and change an
    /// item in one step): `f` gets the live item and a source of new CAS values, and says
    /// what becomes of the item.
    pub(crate) fn update<R>(
        &self,
        key: &[u8],
        now: Now,
        tally: &mut Tally,
        f: impl FnOnce(Option<Loaded>, &dyn Fn() -> u64) -> (Change, R),
    ) -> R {
        let _g = self.lock(key);
        let old = self.load_locked(key, now, tally);
        let old_len = old.as_ref().map(|o| o.meta.header_len() + o.data.len());
        let (change, r) = f(old, &|| self.next_cas());
        match change {
            Change::Keep => {}
            Change::Put(meta, data) => {
                self.put_locked(key, &meta, &[&data], old_len);
            }
            Change::Remove => {
                if let Some(len) = old_len {
                    self.remove_locked(key, len);
                }
            }
        }
        r
    }

    /// Removes dead items met in a walk of up to `budget` items from a random place;
    /// returns how many it removed (the server's cron calls it).
    pub(crate) fn reap(&self, now: Now, seed: u64, budget: usize) -> usize {
        let mut dead = Vec::new();
        self.sample(Policy::Lru, seed, budget, &mut |k, idle, _| {
            if idle == DEAD {
                dead.push(k.to_vec());
            }
        });
        for k in &dead {
            self.reap_key(k, now);
        }
        dead.len()
    }
}

/// Whether a read should refresh the item's access clock.
fn needs_bump(m: &Meta, now: Now) -> bool {
    m.state & item::FETCHED == 0 || item::idle_ms(now.clock, m.atime) >= u64::from(BUMP_MS)
}

/// Bytes of index structure an item costs beyond its key and value, as the memory limit
/// counts it: Mercury's 16-byte node header and an 8-byte bucket cell shared by 2 to 4
/// items ([`LOAD_PERCENT`]), rounded up to 8.
pub(crate) const ITEM_STRUCTURE: usize = 24;

impl Keyspace for Items {
    /// The live items at their size in the index: key, value (header and data) and
    /// [`ITEM_STRUCTURE`] each. Not the index's `memory_usage`, which counts the
    /// allocator's reserved 2 MiB chunks and so does not fall when items are removed: a
    /// limit must see evictions free memory (memcached's `-m` counts its item chunks too).
    fn used_bytes(&self) -> usize {
        self.bytes() as usize + self.len() * ITEM_STRUCTURE
    }

    fn items(&self) -> usize {
        self.len()
    }

    fn sample(&self, _: Policy, seed: u64, n: usize, f: &mut dyn FnMut(&[u8], u64, u32)) {
        let now = Now::read();
        let flushed = self.flushed_below(now);
        let mut left = n;
        let mut visit = |k: &[u8], v: &[u8]| {
            if let Some((m, _)) = Meta::decode(v) {
                let dead = m.cas <= flushed || (m.expiry != 0 && m.expiry <= now.secs);
                let idle = if dead {
                    DEAD
                } else {
                    lru_rank(
                        item::idle_ms(now.clock, m.atime),
                        m.state & item::FETCHED != 0,
                    )
                };
                f(k, idle, m.atime);
            }
            left -= 1;
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        if n == 0 {
            return;
        }
        if let Some(m) = &self.mercury {
            m.for_each_from(seed, &mut visit);
        } else if let Some(o) = self.ordered() {
            // A hand sweeping the key order: each sample continues where the last ended.
            let mut hand = self.hand.lock().unwrap_or_else(|p| p.into_inner());
            let mut last: Option<Vec<u8>> = None;
            let mut seen = 0;
            o.scan(Bound::Excluded(&hand), &mut |k, v| {
                last = Some(k.to_vec());
                seen += 1;
                visit(k, v)
            });
            if seen < n {
                o.scan(Bound::Unbounded, &mut |k, v| {
                    last = Some(k.to_vec());
                    seen += 1;
                    if seen > n {
                        ControlFlow::Break(())
                    } else {
                        visit(k, v)
                    }
                });
            }
            *hand = last.unwrap_or_default();
        }
    }

    fn evict(&self, key: &[u8], clock: u32) -> Option<usize> {
        let _g = self.lock(key);
        let v = self.kv().get(key)?;
        if item::atime(&v)? != clock {
            return None;
        }
        self.remove_locked(key, v.len());
        Some(key.len() + v.len())
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
