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
