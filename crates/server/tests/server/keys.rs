//! Keyspace commands: `TYPE`, `RENAME`, `FLUSHDB`, and `SCAN`'s guarantees under concurrent
//! writes.

use crate::common::{self, Server};
use redis::Commands;

#[test]
fn keys_type_rename_and_flush() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["MSET", "user:1", "a", "user:2", "b", "other", "c"], "+OK"),
        (&["EXISTS", "user:1", "user:1", "nope"], ":2"),
        (&["TYPE", "user:1"], "+string"),
        (&["TYPE", "nope"], "+none"),
        (&["KEYS", "user:*"], "[$user:1, $user:2]"),
        (&["KEYS", "*"], "[$other, $user:1, $user:2]"),
        (&["KEYS", "u?er:[^1]"], "[$user:2]"),
        (&["RENAME", "nope", "x"], "-ERR no such key"),
        (&["RENAME", "other", "user:0"], "+OK"),
        (&["GET", "user:0"], "$c"),
        (&["RENAME", "user:0", "user:0"], "+OK"),
        (&["DBSIZE"], ":3"),
        (&["DEL", "user:0", "user:0", "nope"], ":1"),
        (&["UNLINK", "user:1"], ":1"),
        (&["FLUSHDB"], "+OK"),
        (&["DBSIZE"], ":0"),
        (&["FLUSHALL", "NOW"], "-ERR syntax error"),
        (&["FLUSHALL", "ASYNC"], "+OK"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
}

#[test]
fn scan_returns_keys_in_order_once_under_concurrent_writes() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let stable: Vec<String> = (0..2000).map(|i| format!("stable:{i:05}")).collect();
    for chunk in stable.chunks(500) {
        let pairs: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), "v")).collect();
        let _: () = c.mset(&pairs).unwrap();
    }
    // A writer churns other keys while the scan runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let mut w = server.client();
        let (stop, writes) = (stop.clone(), writes.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = format!("churn:{}", i % 500);
                let _: () = w.set(&k, i).unwrap();
                if i.is_multiple_of(3) {
                    let _: i64 = w.del(&k).unwrap();
                }
                i += 1;
                writes.store(i, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    // The scan must overlap the writer: wait (bounded in time) until it is writing.
    let start = std::time::Instant::now();
    while writes.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        assert!(
            start.elapsed() < common::DEADLINE,
            "the writer never started"
        );
        std::thread::yield_now();
    }
    let mut seen = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("stable:*")
            .arg("COUNT")
            .arg(37)
            .query(&mut c)
            .unwrap();
        seen.extend(keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(seen, stable, "every stable key once, in order");
    // TYPE filter and the redis crate's own iterator.
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["SCAN", "0", "TYPE", "zset", "COUNT", "100000"]),
        "[$0, []]"
    );
    assert_eq!(r.cmd(&["SCAN", "abc"]), "-ERR invalid cursor");
    assert_eq!(r.cmd(&["SCAN", "0", "COUNT", "0"]), "-ERR syntax error");
    assert_eq!(r.cmd(&["SCAN", "0", "BOGUS", "1"]), "-ERR syntax error");
    let all: Vec<String> = c.scan_match("stable:0000*").unwrap().collect();
    assert_eq!(all.len(), 10);
}

/// `RANDOMKEY` on an ordered and an unordered backend: nil on an empty keyspace, only
/// live keys, and every key of a small keyspace picked within a few hundred calls (each
/// is missed by 300 calls with probability below 1e-37).
#[test]
fn randomkey_picks_live_keys() {
    for index in ["wormhole", "mercury"] {
        let server = Server::start(&["--index", index]);
        let mut r = server.raw();
        assert_eq!(r.cmd(&["RANDOMKEY"]), "$nil", "{index}");
        assert_eq!(r.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]), "+OK");
        assert_eq!(r.cmd(&["SADD", "s", "m"]), ":1");
        assert_eq!(r.cmd(&["SET", "gone", "x"]), "+OK");
        assert_eq!(r.cmd(&["PEXPIREAT", "gone", "1"]), ":1");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let k = r.cmd(&["RANDOMKEY"]);
            assert!(
                ["$a", "$b", "$c", "$s"].contains(&k.as_str()),
                "{index}: {k}"
            );
            seen.insert(k);
        }
        assert_eq!(seen.len(), 4, "{index}: {seen:?}");
        assert_eq!(r.cmd(&["FLUSHALL"]), "+OK");
        assert_eq!(r.cmd(&["RANDOMKEY"]), "$nil", "{index}");
    }
}
