//! The memory limit: `maxmemory` under every policy keeps `used_memory` near the limit,
//! `volatile-*` spare keys without a deadline, `noeviction` refuses writes (Redis's `OOM`
//! error, for `denyoom` commands only) while reads go on, collections are evicted too,
//! `OBJECT FREQ`/`IDLETIME`, and the settings through `CONFIG`.

use crate::common::{Raw, Server, encode};

const LIMIT: usize = 4 << 20;

fn info_field(c: &mut redis::Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}:\n{info}"))
        .trim()
        .to_string()
}

fn used(c: &mut redis::Connection) -> usize {
    info_field(c, "memory", "used_memory").parse().unwrap()
}

/// Writes `n` string keys `{prefix}{i}` of `size` bytes (with a deadline when `ttl`),
/// pipelined on a raw connection; returns the OOM errors met (any other error fails).
fn write_strings(r: &mut Raw, prefix: &str, n: usize, size: usize, ttl: bool) -> usize {
    let value = "x".repeat(size);
    let mut ooms = 0;
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let mut batch = Vec::new();
        for i in chunk {
            let key = format!("{prefix}{i}");
            let ex = (10_000 + i).to_string();
            if ttl {
                batch.extend(encode(&["SET", &key, &value, "EX", &ex]));
            } else {
                batch.extend(encode(&["SET", &key, &value]));
            }
        }
        r.send(&batch);
        for _ in chunk {
            match r.reply().as_str() {
                "+OK" => {}
                "-OOM command not allowed when used memory > 'maxmemory'." => ooms += 1,
                other => panic!("{other}"),
            }
        }
    }
    ooms
}

#[test]
fn every_policy_keeps_used_memory_at_the_limit() {
    for policy in [
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let server = Server::start(&["--maxmemory", "4mb", "--maxmemory-policy", policy]);
        let mut c = server.client();
        let mut r = server.raw();
        let volatile = policy.starts_with("volatile");
        // Keys without a deadline, which volatile policies must never evict.
        write_strings(&mut r, "keep:", 200, 100, false);
        // Forty times the limit.
        let ooms = write_strings(&mut r, "k:", 40_000, 4000, volatile);
        assert_eq!(ooms, 0, "{policy}: refused writes");
        let u = used(&mut c);
        assert!(
            (LIMIT / 2..=LIMIT + LIMIT / 20).contains(&u),
            "{policy}: used_memory {u}, limit {LIMIT}"
        );
        let evicted: usize = info_field(&mut c, "stats", "evicted_keys").parse().unwrap();
        assert!(evicted > 30_000, "{policy}: {evicted} evicted");
        if volatile {
            let kept: usize = (0..200)
                .filter(|i| {
                    redis::cmd("EXISTS")
                        .arg(format!("keep:{i}"))
                        .query::<usize>(&mut c)
                        .unwrap()
                        == 1
                })
                .count();
            assert_eq!(kept, 200, "{policy} evicted keys without a deadline");
        }
        if policy == "volatile-ttl" {
            // The nearest deadlines went first: the last keys written are kept.
            let last: usize = redis::cmd("EXISTS").arg("k:39999").query(&mut c).unwrap();
            assert_eq!(last, 1);
        }
    }
}

#[test]
fn volatile_policy_with_nothing_to_evict_refuses() {
    let server = Server::start(&["--maxmemory", "1mb", "--maxmemory-policy", "volatile-lru"]);
    let mut c = server.client();
    let ooms = write_strings(&mut server.raw(), "k:", 2000, 1000, false);
    assert!(ooms > 0);
    assert_eq!(info_field(&mut c, "stats", "evicted_keys"), "0");
}

#[test]
fn noeviction_refuses_writes_and_serves_reads() {
    let server = Server::start(&["--maxmemory", "1mb"]);
    let mut c = server.client();
    assert_eq!(
        info_field(&mut c, "memory", "maxmemory_policy"),
        "noeviction"
    );
    let mut r = server.raw();
    let ooms = write_strings(&mut r, "k:", 2000, 1000, false);
    assert!(ooms > 500, "{ooms}");
    let u = used(&mut c);
    assert!(u <= (1 << 20) + (1 << 20) / 20, "{u}");
    assert_eq!(
        r.cmd(&["SET", "new", "v"]),
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(
        r.cmd(&["LPUSH", "l", "v"]),
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    // Reads, and writes that are not `denyoom`, go on.
    assert_eq!(r.cmd(&["STRLEN", "k:0"]), ":1000");
    assert_eq!(r.cmd(&["EXPIRE", "k:0", "100"]), ":1");
    assert_eq!(r.cmd(&["DEL", "k:0", "k:1", "k:2"]), ":3");
    // Deletes made room.
    assert_eq!(r.cmd(&["SET", "new", "v"]), "+OK");
    // Raising the limit lets writes in.
    assert_eq!(r.cmd(&["CONFIG", "SET", "maxmemory", "0"]), "+OK");
    assert_eq!(write_strings(&mut r, "more:", 100, 1000, false), 0);
    assert_eq!(info_field(&mut c, "stats", "evicted_keys"), "0");
}

#[test]
fn lru_keeps_keys_that_are_read_over_keys_never_read() {
    // A cache-aside load: keys read since they were written are kept over the flood of
    // keys written once and never read (the probation rank, `store/evict.rs`). Plain LRU
    // fails this: the read keys are the oldest (or, within one second, tied with the
    // flood, and four in five of them go). The read keys are spread among the others in
    // key order (`k{100 i}h` after `k{100 i}`), as an ordered index's sampler walks keys
    // in order.
    let server = Server::start(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.client();
    let mut r = server.raw();
    let hot = |i: usize| format!("k{}h", i * 100);
    let value = "x".repeat(1000);
    for i in 0..200 {
        let () = redis::cmd("SET")
            .arg(hot(i))
            .arg(&value)
            .query(&mut c)
            .unwrap();
    }
    for i in 0..200 {
        let v: Option<String> = redis::cmd("GET").arg(hot(i)).query(&mut c).unwrap();
        assert!(v.is_some());
    }
    assert_eq!(write_strings(&mut r, "k", 20_000, 1000, false), 0);
    let evicted: usize = info_field(&mut c, "stats", "evicted_keys").parse().unwrap();
    assert!(evicted > 10_000, "{evicted}");
    let mut kept = 0;
    for i in 0..200 {
        let n: usize = redis::cmd("EXISTS").arg(hot(i)).query(&mut c).unwrap();
        kept += n;
    }
    assert!(kept >= 190, "only {kept} of the 200 keys read were kept");
}

#[test]
fn lru_keeps_keys_that_are_read_under_one_prefix() {
    // The same load with the keys read all under one prefix, next to each other in key
    // order: a sampler that walks the order one stretch at a time finds nothing but them
    // while it crosses them, and evicts them (82 of the 200 kept); the samples that start
    // from keys spread over the whole order (`store/evict.rs`, `sweep`) keep them.
    let server = Server::start(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.client();
    let mut r = server.raw();
    let value = "x".repeat(1000);
    for i in 0..200 {
        let () = redis::cmd("SET")
            .arg(format!("hot:{i}"))
            .arg(&value)
            .query(&mut c)
            .unwrap();
        let v: Option<String> = redis::cmd("GET")
            .arg(format!("hot:{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v.is_some());
    }
    assert_eq!(write_strings(&mut r, "cold:", 20_000, 1000, false), 0);
    let mut kept = 0;
    for i in 0..200 {
        let n: usize = redis::cmd("EXISTS")
            .arg(format!("hot:{i}"))
            .query(&mut c)
            .unwrap();
        kept += n;
    }
    assert!(kept >= 190, "only {kept} of the 200 keys read were kept");
}

#[test]
fn collections_are_evicted_too() {
    let server = Server::start(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.client();
    let field = [b'f'; 40];
    for i in 0..400 {
        let mut p = redis::pipe();
        // Large (past the compact thresholds) and small ones of every type.
        let n = if i % 2 == 0 { 300 } else { 10 };
        for j in 0..n {
            p.cmd("HSET")
                .arg(format!("h{i}"))
                .arg(format!("{j}"))
                .arg(&field[..])
                .ignore();
            p.cmd("SADD")
                .arg(format!("s{i}"))
                .arg(format!("{j}-{i}"))
                .ignore();
            p.cmd("ZADD")
                .arg(format!("z{i}"))
                .arg(j)
                .arg(format!("m{j}"))
                .ignore();
            p.cmd("RPUSH").arg(format!("l{i}")).arg(&field[..]).ignore();
        }
        p.query::<()>(&mut c).unwrap();
    }
    let u = used(&mut c);
    assert!(u <= LIMIT + LIMIT / 20, "used_memory {u}");
    let evicted: usize = info_field(&mut c, "stats", "evicted_keys").parse().unwrap();
    assert!(evicted > 100, "{evicted}");
    let dbsize: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert!(dbsize < 1600 && dbsize > 0, "{dbsize}");
    // What is left is whole: a surviving large hash has its fields.
    let keys: Vec<String> = redis::cmd("KEYS").arg("h*").query(&mut c).unwrap();
    for k in keys {
        let len: usize = redis::cmd("HLEN").arg(&k).query(&mut c).unwrap();
        let all: Vec<String> = redis::cmd("HKEYS").arg(&k).query(&mut c).unwrap();
        assert_eq!(len, all.len(), "{k}");
    }
}

#[test]
fn object_freq_idletime_and_config() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK");
    assert_eq!(r.cmd(&["OBJECT", "IDLETIME", "k"]), ":0");
    assert_eq!(r.cmd(&["OBJECT", "IDLETIME", "nope"]), "$nil");
    assert!(
        r.cmd(&["OBJECT", "FREQ", "k"])
            .starts_with("-ERR An LFU maxmemory policy is not selected")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]),
        "+OK"
    );
    assert!(
        r.cmd(&["OBJECT", "IDLETIME", "k"])
            .starts_with("-ERR An LFU maxmemory policy is selected")
    );
    assert_eq!(r.cmd(&["OBJECT", "FREQ", "k"]), ":5");
    for _ in 0..200 {
        assert_eq!(r.cmd(&["GET", "k"]), "$v");
    }
    let freq: i64 = r.cmd(&["OBJECT", "FREQ", "k"])[1..].parse().unwrap();
    assert!(freq > 5, "{freq}");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "maxmemory-policy", "bogus"])
            .get(..5),
        Some("-ERR ")
    );
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "maxmemory",
            "10mb",
            "maxmemory-samples",
            "10",
            "lfu-log-factor",
            "5",
            "lfu-decay-time",
            "2"
        ]),
        "+OK"
    );
    let mut c = server.client();
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory*")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        got,
        [
            "maxmemory",
            "10485760",
            "maxmemory-policy",
            "allkeys-lfu",
            "maxmemory-samples",
            "10",
            "maxmemory-eviction-tenacity",
            "10"
        ]
    );
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("lfu-*")
        .query(&mut c)
        .unwrap();
    assert_eq!(got, ["lfu-log-factor", "5", "lfu-decay-time", "2"]);
    assert_eq!(info_field(&mut c, "memory", "maxmemory"), "10485760");
    let hits: u64 = info_field(&mut c, "stats", "keyspace_hits")
        .parse()
        .unwrap();
    assert!(hits >= 200, "{hits}");
    let _: Option<String> = redis::cmd("GET").arg("absent").query(&mut c).unwrap();
    let misses: u64 = info_field(&mut c, "stats", "keyspace_misses")
        .parse()
        .unwrap();
    assert!(misses >= 1);
    let ratio: f64 = info_field(&mut c, "memory", "mem_fragmentation_ratio")
        .parse()
        .unwrap();
    assert!(ratio > 0.0);
}
