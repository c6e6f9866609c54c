//! The collection types against redis-server: random streams of hash, set, list, sorted
//! set, blocking-pop and key commands (expiry included) over a few keys of each type and
//! some keys that change type, compared reply by reply after a normalisation that only
//! removes what Redis leaves unspecified:
//!
//! - the order of a hash's or set's members (`HGETALL`, `SMEMBERS`, `SINTER`, the `*SCAN`
//!   pages; with `COUNT 1000` every page is the whole collection on both servers);
//! - random picks: a count at least the size is the whole collection (compared as a set),
//!   a negative count or none is compared by its shape (how many, which types);
//! - `OBJECT ENCODING` of lists (Redis 7.0 names every list `quicklist`, this server
//!   Redis 7.2's `listpack`/`quicklist`) and of strings after `APPEND` (`raw`/`embstr`);
//!   and `MEMORY USAGE`'s figure (compared as "an integer").
//!
//! Each stream runs twice: with Redis's default thresholds (so small collections are
//! compact) and with tiny ones set on both servers by `CONFIG SET` (so most are large, and
//! conversions happen mid-stream); once more in RESP3. Our server also gets
//! `set-max-listpack-entries 0`, the setting Redis 7.0 has no equivalent of: a set of
//! strings is then a `hashtable`, as in 7.0.

use super::{Both, Rng};
use crate::common::Value;

/// How a reply is normalised before the comparison (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Norm {
    Exact,
    Sorted,
    SortedPairs,
    Scan { pairs: bool },
    Shape,
    Encoding,
    Usage,
}

fn sort_pairs(items: Vec<Value>) -> Vec<Value> {
    if items.iter().all(|v| matches!(v, Value::Array(_))) {
        let mut items = items;
        items.sort();
        return items;
    }
    let mut pairs: Vec<Vec<Value>> = items.chunks(2).map(<[Value]>::to_vec).collect();
    pairs.sort();
    pairs.into_iter().flatten().collect()
}

fn shape(v: Value) -> Value {
    match v {
        Value::Bulk(_) | Value::Double(_) => Value::Bulk(vec![]),
        Value::Array(items) => Value::Array(items.into_iter().map(shape).collect()),
        Value::Set(items) => Value::Set(items.into_iter().map(shape).collect()),
        other => other,
    }
}

fn normalise(v: Value, norm: Norm) -> Value {
    match (norm, v) {
        (Norm::Sorted, Value::Array(mut items)) => {
            items.sort();
            Value::Array(items)
        }
        (Norm::Sorted, Value::Set(mut items)) => {
            items.sort();
            Value::Set(items)
        }
        (Norm::SortedPairs, Value::Array(items)) => Value::Array(sort_pairs(items)),
        (Norm::SortedPairs, Value::Map(mut pairs)) => {
            pairs.sort();
            Value::Map(pairs)
        }
        (Norm::Scan { pairs }, Value::Array(mut parts)) if parts.len() == 2 => {
            if let Value::Array(items) = parts.pop().unwrap() {
                let items = if pairs {
                    sort_pairs(items)
                } else {
                    let mut items = items;
                    items.sort();
                    items
                };
                parts.push(Value::Array(items));
            }
            Value::Array(parts)
        }
        (Norm::Shape, v) => shape(v),
        (Norm::Encoding, Value::Bulk(b)) => Value::Bulk(match &b[..] {
            b"quicklist" => b"listpack".to_vec(),
            b"raw" => b"embstr".to_vec(),
            _ => b,
        }),
        (Norm::Usage, Value::Int(_)) => Value::Int(0),
        (_, v) => v,
    }
}

const LONG: &str = "a-value-longer-than-sixty-four-bytes-0123456789-0123456789-0123456789";

/// One random command and how to compare its replies.
fn command(rng: &mut Rng) -> (Vec<String>, Norm) {
    let mixed = ["m0", "m1"];
    let pick_key = |rng: &mut Rng, own: &[&'static str]| -> String {
        if rng.below(8) == 0 {
            rng.pick(&mixed).into()
        } else {
            rng.pick(own).into()
        }
    };
    let hk = ["h0", "h1", "h2"];
    let sk = ["s0", "s1", "i0", "i1"];
    let lk = ["l0", "l1", "l2"];
    let zk = ["z0", "z1", "z2"];
    let fields = ["f0", "f1", "f2", "f3", "f4", "f5", LONG];
    let values = ["v", "", "1", "-2", "10", "1.5", "abc", LONG];
    let members = ["a", "b", "c", "d", "e", "1", "2", "-3", "70000", LONG];
    let ints = [
        "1",
        "2",
        "3",
        "-5",
        "100000",
        "9223372036854775807",
        "7",
        "8",
    ];
    let elems = ["a", "b", "c", "", LONG, "b"];
    let idx = ["0", "1", "-1", "2", "-3", "5", "x"];
    let scores = ["0", "1", "-1", "2.5", "-inf", "+inf", "3", "x"];
    let ranges = ["-inf", "+inf", "(1", "1", "2.5", "(0", "x"];
    let s = |x: &str| x.to_string();
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let k = |rng: &mut Rng, own| pick_key(rng, own);
    let member_pool = |rng: &mut Rng, key: &str| -> String {
        if key.starts_with('i') {
            rng.pick(&ints).into()
        } else {
            rng.pick(&members).into()
        }
    };
    let (cmd, norm): (Vec<String>, Norm) = match rng.below(82) {
        // Hashes.
        0..=3 => {
            let mut c = vec![s("HSET"), k(rng, &hk)];
            for _ in 0..=rng.below(3) {
                c.push(rng.pick(&fields).into());
                c.push(rng.pick(&values).into());
            }
            (c, Norm::Exact)
        }
        4 => (
            v(&["HSETNX", &k(rng, &hk), rng.pick(&fields), rng.pick(&values)]),
            Norm::Exact,
        ),
        5 => (v(&["HGET", &k(rng, &hk), rng.pick(&fields)]), Norm::Exact),
        6 => (
            v(&["HMGET", &k(rng, &hk), rng.pick(&fields), rng.pick(&fields)]),
            Norm::Exact,
        ),
        7 => (v(&["HGETALL", &k(rng, &hk)]), Norm::SortedPairs),
        8 => (
            v(&["HDEL", &k(rng, &hk), rng.pick(&fields), rng.pick(&fields)]),
            Norm::Exact,
        ),
        9 => (
            v(&[
                rng.pick(&["HEXISTS", "HSTRLEN"]),
                &k(rng, &hk),
                rng.pick(&fields),
            ]),
            Norm::Exact,
        ),
        10 => (
            v(&[rng.pick(&["HLEN", "HKEYS", "HVALS"]), &k(rng, &hk)]),
            Norm::Sorted,
        ),
        11 => (
            v(&[
                "HINCRBY",
                &k(rng, &hk),
                rng.pick(&fields),
                rng.pick(&["1", "-3", "x"]),
            ]),
            Norm::Exact,
        ),
        12 => (
            v(&[
                "HINCRBYFLOAT",
                &k(rng, &hk),
                rng.pick(&fields),
                rng.pick(&["1", "2.5", "x"]),
            ]),
            Norm::Exact,
        ),
        13 => match rng.below(3) {
            0 => (v(&["HRANDFIELD", &k(rng, &hk)]), Norm::Shape),
            1 => (
                v(&["HRANDFIELD", &k(rng, &hk), "1000", "WITHVALUES"]),
                Norm::SortedPairs,
            ),
            _ => (
                v(&["HRANDFIELD", &k(rng, &hk), rng.pick(&["-3", "0", "x"])]),
                Norm::Shape,
            ),
        },
        14 => (
            v(&["HSCAN", &k(rng, &hk), "0", "COUNT", "1000"]),
            Norm::Scan { pairs: true },
        ),
        // Sets.
        15..=18 => {
            let key = k(rng, &sk);
            let mut c = vec![s("SADD"), key.clone()];
            for _ in 0..=rng.below(3) {
                c.push(member_pool(rng, &key));
            }
            (c, Norm::Exact)
        }
        19 => {
            let key = k(rng, &sk);
            let m = member_pool(rng, &key);
            (v(&["SREM", &key, &m, "a"]), Norm::Exact)
        }
        20 => {
            let key = k(rng, &sk);
            let m = member_pool(rng, &key);
            (
                v(&[rng.pick(&["SISMEMBER", "SMISMEMBER"]), &key, &m]),
                Norm::Exact,
            )
        }
        21 => (
            v(&[rng.pick(&["SMEMBERS", "SCARD"]), &k(rng, &sk)]),
            Norm::Sorted,
        ),
        22 => (
            v(&["SPOP", &k(rng, &sk), rng.pick(&["1000", "-1", "0"])]),
            Norm::Sorted,
        ),
        23 => match rng.below(3) {
            0 => (v(&["SRANDMEMBER", &k(rng, &sk)]), Norm::Shape),
            1 => (v(&["SRANDMEMBER", &k(rng, &sk), "1000"]), Norm::Sorted),
            _ => (
                v(&["SRANDMEMBER", &k(rng, &sk), rng.pick(&["-4", "0"])]),
                Norm::Shape,
            ),
        },
        24 => {
            let (a, b) = (k(rng, &sk), k(rng, &sk));
            let m = member_pool(rng, &a);
            (v(&["SMOVE", &a, &b, &m]), Norm::Exact)
        }
        25 => (
            v(&[
                rng.pick(&["SINTER", "SUNION", "SDIFF"]),
                &k(rng, &sk),
                &k(rng, &sk),
            ]),
            Norm::Sorted,
        ),
        26 => (
            v(&[
                rng.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]),
                &k(rng, &sk),
                &k(rng, &sk),
                &k(rng, &sk),
            ]),
            Norm::Exact,
        ),
        27 => (
            v(&[
                "SINTERCARD",
                "2",
                &k(rng, &sk),
                &k(rng, &sk),
                "LIMIT",
                rng.pick(&["0", "1", "-1"]),
            ]),
            Norm::Exact,
        ),
        28 => (
            v(&["SSCAN", &k(rng, &sk), "0", "COUNT", "1000"]),
            Norm::Scan { pairs: false },
        ),
        // Lists.
        29..=32 => {
            let mut c = vec![
                s(rng.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"])),
                k(rng, &lk),
            ];
            for _ in 0..=rng.below(3) {
                c.push(rng.pick(&elems).into());
            }
            (c, Norm::Exact)
        }
        33 => {
            let mut c = v(&[rng.pick(&["LPOP", "RPOP"]), &k(rng, &lk)]);
            if rng.below(2) == 0 {
                c.push(rng.pick(&["0", "2", "-1", "x"]).into());
            }
            (c, Norm::Exact)
        }
        34 => (v(&["LLEN", &k(rng, &lk)]), Norm::Exact),
        35 | 36 => (
            v(&["LRANGE", &k(rng, &lk), rng.pick(&idx), rng.pick(&idx)]),
            Norm::Exact,
        ),
        37 => (v(&["LINDEX", &k(rng, &lk), rng.pick(&idx)]), Norm::Exact),
        38 => (
            v(&["LSET", &k(rng, &lk), rng.pick(&idx), rng.pick(&elems)]),
            Norm::Exact,
        ),
        39 => (
            v(&[
                "LINSERT",
                &k(rng, &lk),
                rng.pick(&["BEFORE", "AFTER", "x"]),
                rng.pick(&elems),
                rng.pick(&elems),
            ]),
            Norm::Exact,
        ),
        40 => (
            v(&[
                "LREM",
                &k(rng, &lk),
                rng.pick(&["0", "1", "-1", "2"]),
                rng.pick(&elems),
            ]),
            Norm::Exact,
        ),
        41 => (
            v(&["LTRIM", &k(rng, &lk), rng.pick(&idx), rng.pick(&idx)]),
            Norm::Exact,
        ),
        42 => {
            let mut c = v(&["LPOS", &k(rng, &lk), rng.pick(&elems)]);
            match rng.below(4) {
                0 => c.extend(v(&["RANK", rng.pick(&["1", "-1", "2", "0"])])),
                1 => c.extend(v(&["COUNT", rng.pick(&["0", "1", "2"])])),
                2 => c.extend(v(&["MAXLEN", rng.pick(&["0", "2"]), "COUNT", "0"])),
                _ => {}
            }
            (c, Norm::Exact)
        }
        43 => (
            v(&[
                "LMOVE",
                &k(rng, &lk),
                &k(rng, &lk),
                rng.pick(&["LEFT", "RIGHT"]),
                rng.pick(&["LEFT", "RIGHT", "UP"]),
            ]),
            Norm::Exact,
        ),
        44 => (v(&["RPOPLPUSH", &k(rng, &lk), &k(rng, &lk)]), Norm::Exact),
        45 => match rng.below(4) {
            0 => (
                v(&[
                    rng.pick(&["BLPOP", "BRPOP"]),
                    &k(rng, &lk),
                    &k(rng, &lk),
                    "0.01",
                ]),
                Norm::Exact,
            ),
            1 => (
                v(&[
                    "BLMOVE",
                    &k(rng, &lk),
                    &k(rng, &lk),
                    "LEFT",
                    "RIGHT",
                    "0.01",
                ]),
                Norm::Exact,
            ),
            2 => (
                v(&["BRPOPLPUSH", &k(rng, &lk), &k(rng, &lk), "0.01"]),
                Norm::Exact,
            ),
            _ => (
                v(&[rng.pick(&["BZPOPMIN", "BZPOPMAX"]), &k(rng, &zk), "0.01"]),
                Norm::Exact,
            ),
        },
        // Sorted sets.
        46..=49 => {
            let mut c = vec![s("ZADD"), k(rng, &zk)];
            for _ in 0..=rng.below(3) {
                c.push(rng.pick(&scores[..7]).into());
                c.push(rng.pick(&members).into());
            }
            (c, Norm::Exact)
        }
        50 => (v(&["ZREM", &k(rng, &zk), rng.pick(&members)]), Norm::Exact),
        51 => {
            let mut c = v(&[rng.pick(&["ZPOPMIN", "ZPOPMAX"]), &k(rng, &zk)]);
            if rng.below(2) == 0 {
                c.push(rng.pick(&["0", "1", "3", "-1"]).into());
            }
            (c, Norm::Exact)
        }
        52 => (
            v(&[
                "ZREMRANGEBYSCORE",
                &k(rng, &zk),
                rng.pick(&ranges),
                rng.pick(&ranges),
            ]),
            Norm::Exact,
        ),
        53 => (
            v(&[
                "ZREMRANGEBYRANK",
                &k(rng, &zk),
                rng.pick(&idx),
                rng.pick(&idx),
            ]),
            Norm::Exact,
        ),
        54 => (v(&["ZADD", "lx", "0", rng.pick(&members)]), Norm::Exact),
        55 => (
            v(&[
                "ZREMRANGEBYLEX",
                "lx",
                rng.pick(&["-", "[b", "(c", "+"]),
                rng.pick(&["+", "[d", "(b", "-"]),
            ]),
            Norm::Exact,
        ),
        56 | 57 => {
            let op = rng.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]);
            let mut c = v(&[
                op,
                &k(rng, &zk),
                "2",
                &k(rng, &zk),
                &pick_key(rng, &["z0", "s0", "i0"]),
            ]);
            if op != "ZDIFFSTORE" {
                if rng.below(2) == 0 {
                    c.extend(v(&[
                        "WEIGHTS",
                        rng.pick(&["1", "2", "-1", "0"]),
                        rng.pick(&["1", "3", "x"]),
                    ]));
                }
                if rng.below(2) == 0 {
                    c.extend(v(&["AGGREGATE", rng.pick(&["SUM", "MIN", "MAX", "AVG"])]));
                }
            }
            (c, Norm::Exact)
        }
        58 => {
            let op = rng.pick(&["ZUNION", "ZINTER", "ZDIFF"]);
            (
                v(&[op, "2", &k(rng, &zk), &k(rng, &zk), "WITHSCORES"]),
                Norm::Exact,
            )
        }
        59 => match rng.below(3) {
            0 => (v(&["ZRANDMEMBER", &k(rng, &zk)]), Norm::Shape),
            1 => (
                v(&["ZRANDMEMBER", &k(rng, &zk), "1000", "WITHSCORES"]),
                Norm::SortedPairs,
            ),
            _ => (
                v(&["ZRANDMEMBER", &k(rng, &zk), "-3", "WITHSCORES"]),
                Norm::Shape,
            ),
        },
        60 => (
            v(&["ZSCAN", &k(rng, &zk), "0", "COUNT", "1000"]),
            Norm::Scan { pairs: true },
        ),
        61 => (
            v(&[
                "ZREVRANGE",
                &k(rng, &zk),
                rng.pick(&idx),
                rng.pick(&idx),
                "WITHSCORES",
            ]),
            Norm::Exact,
        ),
        62 => (
            v(&[
                "ZRANGESTORE",
                &k(rng, &zk),
                &k(rng, &zk),
                rng.pick(&ranges),
                rng.pick(&ranges),
                "BYSCORE",
            ]),
            Norm::Exact,
        ),
        63 => (
            v(&["ZRANGE", &k(rng, &zk), "0", "-1", "WITHSCORES"]),
            Norm::Exact,
        ),
        64 => (v(&["ZRANGEBYLEX", "lx", "-", "+"]), Norm::Exact),
        65 => (v(&["ZCARD", &k(rng, &zk)]), Norm::Exact),
        // Keys and expiry on every type.
        66 => {
            let all = ["h0", "s0", "i0", "l0", "z0", "m0", "m1", "h1", "l1"];
            (v(&["TYPE", rng.pick(&all)]), Norm::Exact)
        }
        67 => (
            v(&["DEL", rng.pick(&["h1", "s1", "l1", "z1", "m0", "i1"])]),
            Norm::Exact,
        ),
        68 => {
            let all = [
                "h0", "h1", "s0", "s1", "l0", "l1", "z0", "z1", "m0", "m1", "i0",
            ];
            (v(&["RENAME", rng.pick(&all), rng.pick(&all)]), Norm::Exact)
        }
        69 => {
            let all = ["h2", "s1", "l2", "z2", "m1", "i1"];
            match rng.below(4) {
                0 => (v(&["EXPIRE", rng.pick(&all), "0"]), Norm::Exact),
                1 => (v(&["PEXPIREAT", rng.pick(&all), "1"]), Norm::Exact),
                2 => (v(&["EXPIREAT", rng.pick(&all), "4102444800"]), Norm::Exact),
                _ => (v(&["PERSIST", rng.pick(&all)]), Norm::Exact),
            }
        }
        70 => (v(&["EXISTS", "h0", "s0", "l0", "z0", "m0"]), Norm::Exact),
        71 => (
            v(&[
                "SCAN",
                "0",
                "COUNT",
                "1000",
                "TYPE",
                rng.pick(&["hash", "set", "list", "zset", "string"]),
            ]),
            Norm::Scan { pairs: false },
        ),
        72 | 73 => {
            let all = ["h0", "h1", "s0", "i0", "i1", "l0", "z0", "z1", "m0", "lx"];
            (v(&["OBJECT", "ENCODING", rng.pick(&all)]), Norm::Encoding)
        }
        74 => (
            v(&[
                "MEMORY",
                "USAGE",
                rng.pick(&["h0", "s0", "l0", "z0", "nokey"]),
            ]),
            Norm::Usage,
        ),
        75 => (
            v(&["SET", rng.pick(&mixed), rng.pick(&values)]),
            Norm::Exact,
        ),
        76 => (v(&["APPEND", rng.pick(&mixed), "x"]), Norm::Exact),
        // COPY and RENAMENX between every type, large collections included (the copy
        // read back whole: a hash's or set's order is unspecified).
        77 | 78 => {
            let all = [
                "h0", "h1", "h2", "s0", "s1", "i0", "l0", "l1", "z0", "z1", "m0", "c0",
            ];
            let (src, dst) = (rng.pick(&all), rng.pick(&["c0", "c1", "h2", "l1", "m1"]));
            match rng.below(6) {
                0 => (v(&["RENAMENX", src, dst]), Norm::Exact),
                1 | 2 => (v(&["COPY", src, dst]), Norm::Exact),
                3 => (v(&["COPY", src, dst, "REPLACE"]), Norm::Exact),
                4 => (v(&["SMEMBERS", dst]), Norm::Sorted),
                _ => (v(&["HGETALL", dst]), Norm::SortedPairs),
            }
        }
        79 => {
            let dst = rng.pick(&["c0", "c1", "h2", "l1", "m1"]);
            match rng.below(5) {
                0 => (v(&["LRANGE", dst, "0", "-1"]), Norm::Exact),
                1 => (v(&["ZRANGE", dst, "0", "-1", "WITHSCORES"]), Norm::Exact),
                2 => (v(&["OBJECT", "ENCODING", dst]), Norm::Encoding),
                3 => (v(&["TYPE", dst]), Norm::Exact),
                _ => (v(&["PEXPIRETIME", dst]), Norm::Exact),
            }
        }
        // The string commands on every type (`WRONGTYPE`), and deadlines read back (every
        // deadline of this stream is absolute).
        80 => {
            let key = rng.pick(&["h0", "s0", "l0", "z0", "m0", "m1", "c0", "h2", "nokey"]);
            match rng.below(6) {
                0 => (v(&["GETRANGE", key, "0", "-1"]), Norm::Exact),
                1 => (v(&["SETRANGE", key, "2", "xy"]), Norm::Exact),
                2 => (v(&["GETEX", key, "PERSIST"]), Norm::Exact),
                3 => (v(&["GETEX", key, "EXAT", "4102444800"]), Norm::Exact),
                4 => (v(&["SETRANGE", rng.pick(&mixed), "0", "ab"]), Norm::Exact),
                _ => (
                    v(&[rng.pick(&["EXPIRETIME", "PEXPIRETIME"]), key]),
                    Norm::Exact,
                ),
            }
        }
        _ => (
            v(&["TTL", rng.pick(&["h0", "s0", "l0", "z0"])]),
            Norm::Shape,
        ),
    };
    (cmd, norm)
}

/// Runs `n` commands of the stream seeded `seed` against both servers. On a mismatch,
/// the earlier commands that named one of the failing command's keys are printed.
fn run(both: &mut Both, seed: u64, n: usize, what: &str) {
    let mut rng = Rng::new(seed);
    let mut history: Vec<(usize, Vec<String>, Value)> = Vec::new();
    for i in 0..n {
        let (cmd, norm) = command(&mut rng);
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let a = normalise(both.ours.cmd_value(&args), norm);
        let b = normalise(both.theirs.cmd_value(&args), norm);
        if a != b {
            // `DIFF_KEYS=k1,k2` names more keys to show the history of.
            let extra = std::env::var("DIFF_KEYS").unwrap_or_default();
            let extra: Vec<&str> = extra.split(',').collect();
            for (j, c, r) in &history {
                let named = |x: &String| cmd[1..].contains(x) || extra.contains(&x.as_str());
                if c[1..].iter().any(named) {
                    eprintln!("#{j}: {c:?} -> {r:?}");
                }
            }
        }
        assert_eq!(a, b, "{what}, seed {seed:#x}, command #{i}: {args:?}");
        history.push((i, cmd, b));
    }
}

/// Sends `args` to both servers, requiring the same reply.
fn both_ok(both: &mut Both, args: &[&str]) {
    let (a, b) = (both.ours.cmd_value(args), both.theirs.cmd_value(args));
    assert_eq!(a, b, "{args:?}");
}

#[test]
fn collections_match_redis_server() {
    streams(&[0x5eed_c011_0000_0001u64, 0x5eed_c011_0000_0002], 4000);
}

/// The same over 40 more seeds, longer streams (about a minute).
#[test]
#[ignore = "a longer campaign: cargo test -p orrery-server --test differential -- --ignored"]
fn collections_match_redis_server_many_seeds() {
    let seeds: Vec<u64> = (0..40).map(|i| 0xc011_5eed_0000_0000 + i).collect();
    streams(&seeds, 10_000);
}

/// Runs each seed's stream under the default and the tiny thresholds, then one in RESP3.
fn streams(seeds: &[u64], n: usize) {
    let Some(mut both) = Both::start() else {
        return;
    };
    assert_eq!(
        both.ours
            .cmd(&["CONFIG", "SET", "set-max-listpack-entries", "0"]),
        "+OK"
    );
    for &seed in seeds {
        run(&mut both, seed, n, "default thresholds");
        both_ok(&mut both, &["FLUSHALL"]);
    }
    both_ok(
        &mut both,
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "4",
            "hash-max-listpack-value",
            "8",
            "zset-max-listpack-entries",
            "4",
            "zset-max-listpack-value",
            "8",
            "set-max-intset-entries",
            "4",
            "list-max-listpack-size",
            "4",
        ],
    );
    for &seed in seeds {
        run(&mut both, seed ^ 0xff, n, "tiny thresholds");
        both_ok(&mut both, &["FLUSHALL"]);
    }
    // The greeting names each server's own version: not compared.
    both.ours.cmd_value(&["HELLO", "3"]);
    both.theirs.cmd_value(&["HELLO", "3"]);
    for &seed in seeds {
        run(&mut both, seed ^ 0x3, n, "RESP3, tiny thresholds");
    }
}
