//! Tests of the memcached items (`store.rs`): storage modes, CAS, expiry, flushes, the
//! memory limit's eviction.

use super::*;

fn items(name: &str) -> Items {
    Items::open(name, Arc::new(Memory::new(0, Policy::Lru, 5)), 1 << 20).unwrap()
}

fn set(it: &Items, key: &[u8], data: &[u8], now: Now) -> Stored {
    let w = Write {
        mode: Mode::Set,
        flags: 0,
        expiry: 0,
        data,
        cas: 0,
        set_stale: false,
        binary: false,
    };
    it.store(key, &w, now, &mut Tally::default())
}

/// The real time `ms_ago` milliseconds ago (Unix milliseconds).
fn recent(ms_ago: u64) -> u64 {
    crate::clock::now_ms() - ms_ago
}

fn get(it: &Items, key: &[u8], now: Now) -> Option<Vec<u8>> {
    let mut out = None;
    it.read_many(&[key], now, true, &mut Tally::default(), &mut |_, v| {
        out = v.map(|(_, d)| d.to_vec())
    });
    out
}

#[test]
fn counters_parse_as_strtoull() {
    for (s, v) in [
        (&b"12"[..], Some(12)),
        (b" 7", Some(7)),
        (b"+3", Some(3)),
        (b"12 ", Some(12)),
        (b"12\0zz", Some(12)),
        (b"18446744073709551615", Some(u64::MAX)),
        (b"18446744073709551616", None),
        (b"-1", None),
        (b"-0", Some(0)),
        (b"1a", None),
        (b"", None),
        (b" ", None),
        (b"x", None),
    ] {
        assert_eq!(parse_counter(s), v, "{:?}", String::from_utf8_lossy(s));
    }
}

#[test]
fn expiry_rules() {
    let now = Now::at(1_700_000_000_000);
    assert_eq!(now.expiry(0), 0);
    assert_eq!(now.expiry(-1), 1);
    assert_eq!(now.expiry(10), 1_700_000_010);
    assert_eq!(now.expiry(MAX_RELATIVE + 1), (MAX_RELATIVE + 1) as u32);
    assert_eq!(now.expiry(1_800_000_000), 1_800_000_000);
}

#[test]
fn store_modes_cas_expiry_and_flush_on_every_kind_of_index() {
    for name in ["mercury", "wormhole"] {
        let it = items(name);
        let now = Now::at(1_700_000_000_000);
        let t = &mut Tally::default();
        let w = |mode, data: &'static [u8], cas| Write {
            mode,
            flags: 5,
            expiry: 0,
            data,
            cas,
            set_stale: false,
            binary: false,
        };
        assert_eq!(
            it.store(b"k", &w(Mode::Replace, b"x", 0), now, t),
            Stored::NotStored
        );
        assert_eq!(
            it.store(b"k", &w(Mode::Cas, b"x", 9), now, t),
            Stored::NotFound
        );
        let Stored::Stored(c1) = it.store(b"k", &w(Mode::Add, b"ab", 0), now, t) else {
            panic!()
        };
        assert_eq!(
            it.store(b"k", &w(Mode::Add, b"zz", 0), now, t),
            Stored::NotStored
        );
        assert!(matches!(
            it.store(b"k", &w(Mode::Append, b"c", 0), now, t),
            Stored::Stored(_)
        ));
        assert!(matches!(
            it.store(b"k", &w(Mode::Prepend, b"_", 0), now, t),
            Stored::Stored(_)
        ));
        assert_eq!(get(&it, b"k", now).as_deref(), Some(&b"_abc"[..]));
        assert_eq!(
            it.store(b"k", &w(Mode::Cas, b"n", c1), now, t),
            Stored::Exists
        );
        let mut cas = 0;
        it.read_many(&[b"k"], now, false, t, &mut |_, v| cas = v.unwrap().0.cas);
        assert!(matches!(
            it.store(b"k", &w(Mode::Cas, b"7", cas), now, t),
            Stored::Stored(_)
        ));
        assert!(matches!(
            it.delta(b"k", true, 5, 0, now, t),
            Delta::Done(12, _)
        ));
        assert_eq!(get(&it, b"k", now).as_deref(), Some(&b"12"[..]));
        assert!(matches!(
            it.delta(b"k", false, 3, 0, now, t),
            Delta::Done(9, _)
        ));
        assert_eq!(
            get(&it, b"k", now).as_deref(),
            Some(&b"9 "[..]),
            "padded in place"
        );
        assert!(matches!(
            it.delta(b"k", false, 100, 0, now, t),
            Delta::Done(0, _)
        ));
        set(&it, b"big", b"18446744073709551615", now);
        assert!(matches!(
            it.delta(b"big", true, 2, 0, now, t),
            Delta::Done(1, _)
        ));
        assert_eq!(it.delta(b"nope", true, 1, 0, now, t), Delta::NotFound);
        set(&it, b"s", b"abc", now);
        assert_eq!(it.delta(b"s", true, 1, 0, now, t), Delta::NonNumeric);
        // Expiry and touch.
        assert!(it.touch(b"s", now.secs + 1, now, t).is_some());
        assert!(get(&it, b"s", now).is_some());
        assert!(get(&it, b"s", Now::at(1_700_000_001_000)).is_none());
        assert!(it.touch(b"s", 0, now, t).is_none());
        // Flush: everything stored before it is gone, what comes after stays.
        it.flush(None);
        assert!(get(&it, b"k", now).is_none());
        set(&it, b"after", b"1", now);
        assert!(get(&it, b"after", now).is_some());
        it.flush(Some(now.secs + 10));
        assert!(get(&it, b"after", now).is_some());
        assert!(get(&it, b"after", Now::at(1_700_000_010_000)).is_none());
        set(&it, b"big", b"1", now);
        assert!(it.delete(b"big", now, t));
        assert!(!it.delete(b"big", now, t));
    }
}

#[test]
fn eviction_removes_the_least_recently_used() {
    for name in ["mercury", "wormhole"] {
        let memory = Arc::new(Memory::new(0, Policy::Lru, 5));
        let it = Items::open(name, memory, 1 << 20).unwrap();
        let mut t = Tally::default();
        // The sampler reads the real clock, so the items' times lie in the last minute:
        // times far from it would wrap the 16-bit access clock (a period of 70 minutes)
        // and, for some real times, rank the recent keys the most idle.
        let start = recent(60_000);
        for i in 0..2000u32 {
            set(
                &it,
                format!("k{i}").as_bytes(),
                b"v",
                Now::at(start + u64::from(i) * 20),
            );
        }
        let now = Now::at(start + 2000 * 20);
        // Keys 0..100 read recently: they must survive evicting half.
        for i in 0..100u32 {
            let k = format!("k{i}");
            it.read_many(&[k.as_bytes()], now, true, &mut t, &mut |_, _| {});
        }
        let mem = Memory::new(1, Policy::Lru, 5);
        let before = it.len();
        let mut evicted = 0;
        while evicted < 1000 {
            evicted += usize::from(mem.evict(&it, 1) > 0);
        }
        assert_eq!(it.len(), before - 1000);
        let kept = (0..100u32)
            .filter(|i| get(&it, format!("k{i}").as_bytes(), now).is_some())
            .count();
        assert!(
            kept >= 90,
            "{name}: only {kept} of the 100 recent keys kept"
        );
        assert!(it.bytes() > 0);
    }
}

#[test]
fn items_never_read_are_evicted_before_items_read() {
    for name in ["mercury", "wormhole"] {
        let memory = Arc::new(Memory::new(0, Policy::Lru, 5));
        let it = Items::open(name, memory, 1 << 20).unwrap();
        let mut t = Tally::default();
        let start = recent(10_000);
        // 100 items read once, then 400 newer items never read.
        for i in 0..100u32 {
            set(&it, format!("read{i}").as_bytes(), b"v", Now::at(start));
            let k = format!("read{i}");
            it.read_many(
                &[k.as_bytes()],
                Now::at(start),
                true,
                &mut t,
                &mut |_, _| {},
            );
        }
        for i in 0..400u32 {
            set(
                &it,
                format!("new{i}").as_bytes(),
                b"v",
                Now::at(start + 3000),
            );
        }
        // The sampler reads the real clock: the read items are 3 s more idle than the new
        // ones, which rank first all the same (weighted by `PROBATION_WEIGHT`).
        let mem = Memory::new(1, Policy::Lru, 5);
        let mut evicted = 0;
        while evicted < 200 {
            evicted += usize::from(mem.evict(&it, 1) > 0);
        }
        let kept = (0..100u32)
            .filter(|i| get(&it, format!("read{i}").as_bytes(), Now::at(start + 4000)).is_some())
            .count();
        assert!(kept >= 90, "{name}: only {kept} of the 100 read items kept");
    }
}
