//! Sorted-set commands: exact replies as Redis gives them.

use crate::common::{Server, eventually};
use redis::Commands;

#[test]
fn sorted_sets_reply_exactly_as_redis() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["ZADD", "z", "1", "a", "2", "b", "3", "c"], ":3"),
        (&["ZADD", "z", "0.1", "d", "-inf", "f"], ":2"),
        (&["ZADD", "z", "NX", "5", "a", "6", "g"], ":1"),
        (&["ZADD", "z", "XX", "CH", "7", "a", "8", "h"], ":1"),
        (&["ZADD", "z", "GT", "CH", "1", "a", "9", "b"], ":1"),
        (&["ZADD", "z", "LT", "CH", "1", "a", "9", "c"], ":1"),
        (&["ZADD", "z", "INCR", "2.5", "a"], "$3.5"),
        (&["ZADD", "z", "XX", "INCR", "1", "nope"], "$nil"),
        (
            &["ZADD", "z", "NX", "XX", "1", "a"],
            "-ERR XX and NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "GT", "LT", "1", "a"],
            "-ERR GT, LT, and/or NX options at the same time are not compatible",
        ),
        (
            &["ZADD", "z", "INCR", "1", "a", "2", "b"],
            "-ERR INCR option supports a single increment-element pair",
        ),
        (
            &["ZADD", "z", "1"],
            "-ERR wrong number of arguments for 'zadd' command",
        ),
        (&["ZADD", "z", "1", "a", "2"], "-ERR syntax error"),
        (&["ZADD", "z", "x", "a"], "-ERR value is not a valid float"),
        (&["ZINCRBY", "z", "1.5", "b"], "$10.5"),
        (&["ZSCORE", "z", "d"], "$0.10000000000000001"),
        (&["ZSCORE", "z", "f"], "$-inf"),
        (&["ZSCORE", "z", "nope"], "$nil"),
        (&["ZMSCORE", "z", "a", "nope"], "[$3.5, $nil]"),
        (&["ZCARD", "z"], ":6"),
        (&["ZCOUNT", "z", "(1", "3.5"], ":2"),
        (&["ZCOUNT", "z", "x", "3"], "-ERR min or max is not a float"),
        (&["ZRANK", "z", "a"], ":3"),
        (&["ZREVRANK", "z", "a"], ":2"),
        (&["ZRANGE", "z", "0", "-1"], "[$f, $d, $c, $a, $g, $b]"),
        (
            &["ZRANGE", "z", "0", "1", "REV", "WITHSCORES"],
            "[$b, $10.5, $g, $6]",
        ),
        (&["ZRANGE", "z", "-3", "-2"], "[$a, $g]"),
        (&["ZRANGE", "z", "5", "1"], "[]"),
        (
            &["ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "1", "2"],
            "[$a, $g]",
        ),
        (
            &[
                "ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV", "LIMIT", "0", "2",
            ],
            "[$b, $g]",
        ),
        (
            &["ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"],
            "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ),
        (
            &["ZRANGEBYSCORE", "z", "-inf", "1", "WITHSCORES"],
            "[$f, $-inf, $d, $0.10000000000000001]",
        ),
        (&["ZREVRANGEBYSCORE", "z", "8", "6"], "[$g]"),
        (&["SET", "s", "v"], "+OK"),
        (
            &["ZADD", "s", "1", "a"],
            "-WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            &["GET", "z"],
            "-WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            &["INCR", "z"],
            "-WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (&["TYPE", "z"], "+zset"),
        (
            &[
                "ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e",
            ],
            ":5",
        ),
        (&["ZRANGEBYLEX", "l", "[b", "(d"], "[$b, $c]"),
        (
            &["ZRANGEBYLEX", "l", "(a", "+", "LIMIT", "1", "2"],
            "[$c, $d]",
        ),
        (
            &["ZREVRANGEBYLEX", "l", "(d", "-", "LIMIT", "0", "2"],
            "[$c, $b]",
        ),
        (
            &["ZRANGEBYLEX", "l", "a", "b"],
            "-ERR min or max not valid string range item",
        ),
        (&["ZRANGEBYLEX", "l", "+", "-"], "[]"),
        (&["ZLEXCOUNT", "l", "[b", "[d"], ":3"),
        (&["ZRANGE", "l", "[c", "[b", "BYLEX", "REV"], "[$c, $b]"),
        (&["ZREM", "l", "a", "b", "zz"], ":2"),
        (&["ZREM", "l", "c", "d", "e"], ":3"),
        (&["EXISTS", "l"], ":0"),
        (&["RENAME", "z", "z2"], "+OK"),
        (&["ZCARD", "z2"], ":6"),
        (&["ZCARD", "z"], ":0"),
        (
            &["SCAN", "0", "TYPE", "zset", "COUNT", "100"],
            "[$0, [$z2]]",
        ),
        (&["SET", "z2", "now a string"], "+OK"),
        (&["GET", "z2"], "$now a string"),
        (&["ZADD", "e", "1", "m"], ":1"),
        (&["PEXPIRE", "e", "1"], ":1"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
    eventually(|| r.cmd(&["ZCARD", "e"]) == ":0", "a sorted set to expire");
    // A set large enough to move from the small representation to Wormholes (replies
    // checked against redis-server 7.0).
    for i in 1..=300 {
        let (score, member) = ((i % 17).to_string(), format!("m{i}"));
        assert_eq!(r.cmd(&["ZADD", "big", &score, &member]), ":1");
    }
    assert_eq!(r.cmd(&["ZCARD", "big"]), ":300");
    assert_eq!(r.cmd(&["ZRANK", "big", "m77"]), ":176");
    assert_eq!(
        r.cmd(&[
            "ZRANGE", "big", "+inf", "3", "BYSCORE", "REV", "LIMIT", "5", "4"
        ]),
        "[$m271, $m254, $m237, $m220]"
    );
    assert_eq!(r.cmd(&["ZCOUNT", "big", "(3", "5"]), ":36");
    assert_eq!(r.cmd(&["DEL", "big"]), ":1");
    // RESP3: doubles and score pairs.
    assert!(r.cmd(&["HELLO", "3"]).starts_with("%{"));
    assert_eq!(r.cmd(&["ZADD", "r", "1.5", "a", "2", "b"]), ":2");
    assert_eq!(r.cmd(&["ZSCORE", "r", "a"]), ",1.5");
    assert_eq!(
        r.cmd(&["ZRANGE", "r", "0", "-1", "WITHSCORES"]),
        "[[$a, ,1.5], [$b, ,2]]"
    );
    // The redis crate.
    let mut c = server.client();
    let _: i64 = c.zadd("rz", "m1", 1).unwrap();
    let _: i64 = c.zadd("rz", "m2", 2).unwrap();
    let got: Vec<(String, f64)> = c.zrange_withscores("rz", 0, -1).unwrap();
    assert_eq!(got, [("m1".to_string(), 1.0), ("m2".to_string(), 2.0)]);
}

/// `ZPOPMIN`/`ZPOPMAX` on a large set pop from a kept run of end members: inserts
/// within and beyond the run, score changes and removals of kept members, pops from the
/// other end and counts of every size must still give exactly the model's members in
/// order (a sorted map of `(score, member)`), and `-0` must come back as stored.
#[test]
fn zpop_runs_stay_exact_under_changes() {
    use std::collections::{BTreeSet, HashMap};
    let server = Server::start(&[]);
    let mut r = server.raw();
    let mut model: Model = (BTreeSet::new(), HashMap::new());
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    type Model = (BTreeSet<(i64, String)>, HashMap<String, i64>);
    fn add(r: &mut crate::common::Raw, (order, score): &mut Model, s: i64, m: String) {
        if let Some(old) = score.insert(m.clone(), s) {
            order.remove(&(old, m.clone()));
        }
        order.insert((s, m.clone()));
        r.cmd(&["ZADD", "z", &s.to_string(), &m]);
    }
    for i in 0..300 {
        add(&mut r, &mut model, i as i64 * 10, format!("m{i}"));
    }
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "z"]), "$skiplist");
    let mut fresh = 300;
    for step in 0..3000 {
        match next(8) {
            0..=2 => {
                let max = next(2) == 1;
                let count = [1, 1, 1, 2, 5, 17, 40][next(7) as usize];
                let cmd = if max { "ZPOPMAX" } else { "ZPOPMIN" };
                let got = if count == 1 && next(2) == 0 {
                    r.cmd(&[cmd, "z"])
                } else {
                    r.cmd(&[cmd, "z", &count.to_string()])
                };
                let mut want = Vec::new();
                for _ in 0..count {
                    let e = if max {
                        model.0.pop_last()
                    } else {
                        model.0.pop_first()
                    };
                    let Some((s, m)) = e else { break };
                    model.1.remove(&m);
                    want.push(format!("${m}, ${s}"));
                }
                assert_eq!(got, format!("[{}]", want.join(", ")), "step {step}");
            }
            3..=4 => {
                // A new member anywhere: below, within or past a kept run.
                let lo = model.0.first().map_or(0, |e| e.0) - 20;
                let hi = model.0.last().map_or(0, |e| e.0) + 20;
                let s = lo + next((hi - lo) as u64 + 1) as i64;
                fresh += 1;
                add(&mut r, &mut model, s, format!("m{fresh}"));
            }
            5 => {
                // A new score for a member near an end (likely kept).
                let near: Vec<String> = if next(2) == 0 {
                    model.0.iter().take(5).map(|e| e.1.clone()).collect()
                } else {
                    model.0.iter().rev().take(5).map(|e| e.1.clone()).collect()
                };
                if let Some(m) = near.get(next(5) as usize % near.len().max(1)) {
                    let s = model.1[m] + next(61) as i64 - 30;
                    add(&mut r, &mut model, s, m.clone());
                }
            }
            _ => {
                // Remove a member near an end.
                let e = if next(2) == 0 {
                    model.0.iter().nth(next(4) as usize).cloned()
                } else {
                    model.0.iter().rev().nth(next(4) as usize).cloned()
                };
                if let Some((s, m)) = e {
                    model.0.remove(&(s, m.clone()));
                    model.1.remove(&m);
                    assert_eq!(r.cmd(&["ZREM", "z", &m]), ":1");
                }
            }
        }
        assert_eq!(
            r.cmd(&["ZCARD", "z"]),
            format!(":{}", model.0.len()),
            "step {step}"
        );
        if model.0.len() < 140 {
            for _ in 0..150 {
                fresh += 1;
                let s = next(4000) as i64 - 2000;
                add(&mut r, &mut model, s, format!("m{fresh}"));
            }
        }
    }
    // -0 stays -0 in a large set, also when popped from a kept run.
    r.cmd(&["DEL", "z"]);
    for i in 0..200 {
        r.cmd(&["ZADD", "z", &(i + 1).to_string(), &format!("p{i}")]);
    }
    assert_eq!(r.cmd(&["ZPOPMIN", "z"]), "[$p0, $1]");
    r.cmd(&["ZADD", "z", "-0", "neg"]);
    assert_eq!(r.cmd(&["ZPOPMIN", "z", "2"]), "[$neg, $-0, $p1, $2]");
    r.cmd(&["ZADD", "z", "0", "neg"]);
    r.cmd(&["ZADD", "z", "-0", "neg"]);
    assert_eq!(r.cmd(&["ZPOPMIN", "z"]), "[$neg, $0]");
}
