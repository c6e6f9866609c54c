//! Hashes, sets and lists: exact replies (as Redis gives them), both representations and
//! the moves between them (`OBJECT ENCODING`, the thresholds through `CONFIG SET` and the
//! command line), paged scans of large collections, random picks, and the key commands
//! on every type.

use std::collections::HashSet;

use crate::common::{Raw, Server};

fn check(r: &mut Raw, cases: &[(&[&str], &str)]) {
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
}

#[test]
fn hashes_reply_exactly_as_redis() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["HSET", "h", "a", "1", "b", "2"], ":2"),
            (&["HSET", "h", "a", "3", "c", "x"], ":1"),
            (
                &["HSET", "h", "a"],
                "-ERR wrong number of arguments for 'hset' command",
            ),
            (&["HMSET", "h", "d", "4"], "+OK"),
            (&["HSETNX", "h", "a", "9"], ":0"),
            (&["HSETNX", "h", "e", "5"], ":1"),
            (&["HGET", "h", "a"], "$3"),
            (&["HGET", "h", "zz"], "$nil"),
            (&["HMGET", "h", "a", "zz", "b"], "[$3, $nil, $2]"),
            (
                &["HGETALL", "h"],
                "[$a, $3, $b, $2, $c, $x, $d, $4, $e, $5]",
            ),
            (&["HKEYS", "h"], "[$a, $b, $c, $d, $e]"),
            (&["HVALS", "h"], "[$3, $2, $x, $4, $5]"),
            (&["HLEN", "h"], ":5"),
            (&["HSTRLEN", "h", "c"], ":1"),
            (&["HEXISTS", "h", "c"], ":1"),
            (&["HEXISTS", "h", "zz"], ":0"),
            (&["HINCRBY", "h", "a", "10"], ":13"),
            (
                &["HINCRBY", "h", "c", "1"],
                "-ERR hash value is not an integer",
            ),
            (
                &["HINCRBY", "h", "a", "x"],
                "-ERR value is not an integer or out of range",
            ),
            (&["HINCRBYFLOAT", "h", "a", "0.5"], "$13.5"),
            (
                &["HINCRBYFLOAT", "h", "c", "1"],
                "-ERR hash value is not a float",
            ),
            (&["HINCRBYFLOAT", "h", "new", "2.25"], "$2.25"),
            (&["HDEL", "h", "a", "zz", "new"], ":2"),
            (
                &["HSCAN", "h", "0"],
                "[$0, [$b, $2, $c, $x, $d, $4, $e, $5]]",
            ),
            (
                &["HSCAN", "h", "0", "MATCH", "[bc]"],
                "[$0, [$b, $2, $c, $x]]",
            ),
            (&["HRANDFIELD", "nope"], "$nil"),
            (&["HRANDFIELD", "nope", "3"], "[]"),
            (
                &["HRANDFIELD", "h", "1", "WITHVALUES", "x"],
                "-ERR syntax error",
            ),
            (&["HDEL", "h", "b", "c", "d", "e"], ":4"),
            (&["EXISTS", "h"], ":0"),
            (&["SET", "s", "v"], "+OK"),
            (
                &["HGET", "s", "a"],
                "-WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                &["HSET", "s", "a", "1"],
                "-WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
        ],
    );
    // Random fields of a hash: all distinct for a positive count, `count` of them for a
    // negative one.
    for i in 0..20 {
        r.cmd(&["HSET", "r", &format!("f{i}"), &format!("{i}")]);
    }
    let picks = r.cmd(&["HRANDFIELD", "r", "5"]);
    let fields: HashSet<&str> = picks
        .trim_matches(|c| c == '[' || c == ']')
        .split(", ")
        .collect();
    assert_eq!(fields.len(), 5, "{picks}");
    assert_eq!(r.cmd(&["HRANDFIELD", "r", "-30"]).matches(", ").count(), 29);
    assert_eq!(
        r.cmd(&["HRANDFIELD", "r", "-2", "WITHVALUES"])
            .matches(", ")
            .count(),
        3
    );
}

#[test]
fn sets_reply_exactly_as_redis() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["SADD", "i", "3", "1", "2", "1"], ":3"),
            (&["SMEMBERS", "i"], "[$1, $2, $3]"),
            (&["OBJECT", "ENCODING", "i"], "$intset"),
            (&["SADD", "s", "b", "a", "c"], ":3"),
            (&["OBJECT", "ENCODING", "s"], "$listpack"),
            (&["SMEMBERS", "s"], "[$b, $a, $c]"),
            (&["SISMEMBER", "s", "a"], ":1"),
            (&["SMISMEMBER", "s", "a", "z"], "[:1, :0]"),
            (&["SCARD", "s"], ":3"),
            (&["SREM", "s", "a", "z"], ":1"),
            (&["SMOVE", "s", "i", "b"], ":1"),
            (&["OBJECT", "ENCODING", "i"], "$listpack"),
            (&["SMOVE", "s", "i", "zz"], ":0"),
            (&["SINTER", "i", "s"], "[]"),
            (&["SUNION", "s", "i"], "[$c, $1, $2, $3, $b]"),
            (&["SDIFF", "i", "s", "nope"], "[$1, $2, $3, $b]"),
            (&["SUNIONSTORE", "u", "i", "s"], ":5"),
            (&["SINTERSTORE", "u", "i", "nope"], ":0"),
            (&["EXISTS", "u"], ":0"),
            (&["SDIFFSTORE", "u", "i", "s"], ":4"),
            (&["SINTERCARD", "2", "u", "i"], ":4"),
            (&["SINTERCARD", "2", "u", "i", "LIMIT", "2"], ":2"),
            (
                &["SINTERCARD", "0", "u"],
                "-ERR numkeys should be greater than 0",
            ),
            (
                &["SINTERCARD", "3", "u"],
                "-ERR Number of keys can't be greater than number of args",
            ),
            (
                &["SPOP", "u", "-1"],
                "-ERR value is out of range, must be positive",
            ),
            (&["SPOP", "nope"], "$nil"),
            (&["SPOP", "nope", "2"], "[]"),
            (&["SRANDMEMBER", "nope", "2"], "[]"),
            (&["SSCAN", "s", "0"], "[$0, [$c]]"),
            (&["SPOP", "s", "5"], "[$c]"),
            (&["EXISTS", "s"], ":0"),
            (&["SET", "str", "v"], "+OK"),
            (
                &["SADD", "str", "a"],
                "-WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                &["SUNION", "i", "str"],
                "-WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
        ],
    );
    // SPOP takes distinct members out of the set.
    for i in 0..300 {
        r.cmd(&["SADD", "big", &format!("m{i}")]);
    }
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "big"]), "$hashtable");
    let popped = r.cmd(&["SPOP", "big", "100"]);
    let popped: HashSet<String> = popped
        .trim_matches(|c| c == '[' || c == ']')
        .split(", ")
        .map(String::from)
        .collect();
    assert_eq!(popped.len(), 100);
    assert_eq!(r.cmd(&["SCARD", "big"]), ":200");
    for m in &popped {
        assert_eq!(r.cmd(&["SISMEMBER", "big", &m[1..]]), ":0");
    }
    let one = r.cmd(&["SPOP", "big"]);
    assert_eq!(r.cmd(&["SISMEMBER", "big", &one[1..]]), ":0");
    assert_eq!(r.cmd(&["SCARD", "big"]), ":199");
    assert_eq!(
        r.cmd(&["SRANDMEMBER", "big", "-500"]).matches(", ").count(),
        499
    );
}

/// `SPOP` on a large set keeps a run of picks (members next in hash order) for its next
/// calls: a kept member removed meanwhile must never be popped, and single pops must
/// empty the set with every member exactly once.
#[test]
fn spop_singles_drain_a_large_set_exactly_once() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let mut left: HashSet<String> = (0..400).map(|i| format!("m{i}")).collect();
    for m in &left {
        r.cmd(&["SADD", "big", m]);
    }
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "big"]), "$hashtable");
    // The member keys' order: the members' CRC32C (`crate::layout`'s hashed keys).
    let h = |m: &str| orrery::hash::crc32c(m.as_bytes());
    while !left.is_empty() {
        let one = r.cmd(&["SPOP", "big"]);
        let m = one.strip_prefix('$').unwrap_or(&one).to_string();
        assert!(left.remove(&m), "{m} popped twice or never added");
        // Remove the member after it in hash order: likely one of the kept picks.
        let next = left
            .iter()
            .filter(|x| h(x) > h(&m))
            .min_by_key(|x| h(x))
            .cloned();
        if let Some(x) = next {
            assert_eq!(r.cmd(&["SREM", "big", &x]), ":1");
            left.remove(&x);
        }
        assert_eq!(r.cmd(&["SCARD", "big"]), format!(":{}", left.len()));
    }
    assert_eq!(r.cmd(&["EXISTS", "big"]), ":0");
}

#[test]
fn lists_reply_exactly_as_redis() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["RPUSH", "l", "a", "b", "c"], ":3"),
            (&["LPUSH", "l", "z"], ":4"),
            (&["LPUSHX", "nope", "x"], ":0"),
            (&["RPUSHX", "l", "d"], ":5"),
            (&["LRANGE", "l", "0", "-1"], "[$z, $a, $b, $c, $d]"),
            (&["LRANGE", "l", "-2", "100"], "[$c, $d]"),
            (&["LRANGE", "l", "3", "1"], "[]"),
            (&["LINDEX", "l", "-1"], "$d"),
            (&["LINDEX", "l", "9"], "$nil"),
            (&["LSET", "l", "1", "A"], "+OK"),
            (&["LSET", "l", "9", "A"], "-ERR index out of range"),
            (&["LSET", "nope", "0", "A"], "-ERR no such key"),
            (&["LINSERT", "l", "BEFORE", "b", "x"], ":6"),
            (&["LINSERT", "l", "AFTER", "d", "y"], ":7"),
            (&["LINSERT", "l", "AFTER", "nope", "y"], ":-1"),
            (&["LRANGE", "l", "0", "-1"], "[$z, $A, $x, $b, $c, $d, $y]"),
            (&["RPUSH", "l", "x", "b", "x"], ":10"),
            (&["LPOS", "l", "x"], ":2"),
            (&["LPOS", "l", "x", "RANK", "-1"], ":9"),
            (&["LPOS", "l", "x", "COUNT", "0"], "[:2, :7, :9]"),
            (&["LPOS", "l", "x", "COUNT", "0", "MAXLEN", "8"], "[:2, :7]"),
            (&["LREM", "l", "-1", "x"], ":1"),
            (&["LREM", "l", "0", "b"], ":2"),
            (&["LRANGE", "l", "0", "-1"], "[$z, $A, $x, $c, $d, $y, $x]"),
            (&["LTRIM", "l", "1", "-2"], "+OK"),
            (&["LRANGE", "l", "0", "-1"], "[$A, $x, $c, $d, $y]"),
            (&["LPOP", "l"], "$A"),
            (&["RPOP", "l", "2"], "[$y, $d]"),
            (&["LPOP", "nope", "2"], "*nil"),
            (&["LMOVE", "l", "m", "LEFT", "RIGHT"], "$x"),
            (&["RPOPLPUSH", "l", "l"], "$c"),
            (&["LLEN", "l"], ":1"),
            (&["LLEN", "m"], ":1"),
            (&["LTRIM", "l", "5", "9"], "+OK"),
            (&["EXISTS", "l"], ":0"),
        ],
    );
}

#[test]
fn large_collections_page_rename_and_expire() {
    let server = Server::start(&["--hash-max-listpack-entries", "8"]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hash-max-ziplist-entries"]),
        "[$hash-max-ziplist-entries, $8]"
    );
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "zset-max-listpack-entries",
            "16",
            "list-max-listpack-size",
            "4"
        ]),
        "+OK"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "zset-max-listpack-value", "-1"]),
        "-ERR CONFIG SET failed (possibly related to argument 'zset-max-listpack-value') - argument must be a memory value"
    );
    let n = 1000;
    for i in 0..n {
        let m = format!("m{i:04}");
        r.cmd(&["HSET", "h", &m, &i.to_string()]);
        r.cmd(&["SADD", "s", &m]);
        r.cmd(&["ZADD", "z", &i.to_string(), &m]);
        r.cmd(&["RPUSH", "l", &m]);
    }
    for (k, enc) in [
        ("h", "hashtable"),
        ("s", "hashtable"),
        ("z", "skiplist"),
        ("l", "quicklist"),
    ] {
        assert_eq!(r.cmd(&["OBJECT", "ENCODING", k]), format!("${enc}"), "{k}");
        let usage: i64 = r.cmd(&["MEMORY", "USAGE", k])[1..].parse().unwrap();
        assert!(usage > n * 5, "{k}: {usage}");
    }
    // Paged scans: every member once, cursors between pages.
    for (cmd, key, step) in [("HSCAN", "h", 2), ("SSCAN", "s", 1), ("ZSCAN", "z", 2)] {
        let mut seen = HashSet::new();
        let mut cursor = "0".to_string();
        let mut pages = 0;
        loop {
            let reply = r.cmd_value(&[cmd, key, &cursor, "COUNT", "100"]);
            let crate::common::Value::Array(parts) = reply else {
                panic!()
            };
            let (crate::common::Value::Bulk(c), crate::common::Value::Array(items)) =
                (&parts[0], &parts[1])
            else {
                panic!()
            };
            for item in items.iter().step_by(step) {
                let crate::common::Value::Bulk(m) = item else {
                    panic!()
                };
                assert!(seen.insert(m.clone()), "{cmd}: {m:?} twice");
            }
            pages += 1;
            cursor = String::from_utf8(c.clone()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), n as usize, "{cmd}");
        assert!(pages >= 10, "{cmd}: {pages} pages");
    }
    assert_eq!(r.cmd(&["LINDEX", "l", "500"]), "$m0500");
    assert_eq!(r.cmd(&["LRANGE", "l", "998", "1005"]), "[$m0998, $m0999]");
    assert_eq!(r.cmd(&["LINSERT", "l", "BEFORE", "m0002", "new"]), ":1001");
    assert_eq!(
        r.cmd(&["LRANGE", "l", "0", "3"]),
        "[$m0000, $m0001, $new, $m0002]"
    );
    assert_eq!(r.cmd(&["LREM", "l", "0", "new"]), ":1");
    assert_eq!(r.cmd(&["LINDEX", "l", "2"]), "$m0002");
    assert_eq!(r.cmd(&["ZRANK", "z", "m0500"]), ":500");
    assert_eq!(r.cmd(&["ZREMRANGEBYRANK", "z", "0", "9"]), ":10");
    assert_eq!(r.cmd(&["ZPOPMIN", "z"]), "[$m0010, $10]");
    assert_eq!(
        r.cmd(&["ZPOPMAX", "z", "2"]),
        "[$m0999, $999, $m0998, $998]"
    );
    assert_eq!(r.cmd(&["HGET", "h", "m0777"]), "$777");
    for k in ["h", "s", "z", "l"] {
        let to = format!("{k}2");
        assert_eq!(r.cmd(&["RENAME", k, &to]), "+OK");
        assert_eq!(r.cmd(&["EXPIRE", &to, "100"]), ":1");
    }
    assert_eq!(r.cmd(&["HGET", "h2", "m0777"]), "$777");
    assert_eq!(r.cmd(&["SISMEMBER", "s2", "m0001"]), ":1");
    assert_eq!(r.cmd(&["ZSCORE", "z2", "m0500"]), "$500");
    assert_eq!(r.cmd(&["LLEN", "l2"]), ":1000");
    assert_eq!(r.cmd(&["SCAN", "0", "TYPE", "list"]), "[$0, [$l2]]");
    assert_eq!(r.cmd(&["TYPE", "s2"]), "+set");
    assert_eq!(r.cmd(&["PEXPIRE", "h2", "1"]), ":1");
    crate::common::eventually(|| r.cmd(&["EXISTS", "h2"]) == ":0", "h2 expires");
    assert_eq!(r.cmd(&["DEL", "s2", "z2", "l2"]), ":3");
    assert_eq!(r.cmd(&["DBSIZE"]), ":0");
}

#[test]
fn bad_threshold_flags_are_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orrery-server"))
        .args(["--zset-max-listpack-entries", "-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("argument must be between 0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
