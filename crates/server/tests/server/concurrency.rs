//! Atomicity under concurrent clients: counters, multi-key writes, sorted sets.

use crate::common::Server;
use redis::Commands;

#[test]
fn concurrent_increments_are_atomic() {
    let server = Server::start(&[]);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mut c = server.client();
            std::thread::spawn(move || {
                for _ in 0..500 {
                    let _: i64 = c.incr("counter", 1).unwrap();
                    let _: String = c.append("log", "x").map(|_: i64| String::new()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = server.client();
    assert_eq!(c.get::<_, i64>("counter").unwrap(), 2000);
    assert_eq!(c.strlen::<_, i64>("log").unwrap(), 2000);
}

#[test]
fn concurrent_multi_key_writes_and_sorted_sets_stay_consistent() {
    let server = Server::start(&[]);
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let mut r = server.raw();
            std::thread::spawn(move || {
                let mut rng = orrery_core::testing::rng::rng(0x9e37_79b9_7f4a_7c15 ^ t);
                for _ in 0..1500 {
                    let x: u64 = rand::Rng::random(&mut rng);
                    let (a, b) = (format!("key{}", x % 8), format!("key{}", (x >> 8) % 8));
                    let m = format!("m{}", (x >> 16) % 50);
                    let score = ((x >> 24) % 100).to_string();
                    match x % 6 {
                        0 => assert_eq!(r.cmd(&["MSET", &a, "1", &b, "2"]), "+OK"),
                        1 => {
                            let reply = r.cmd(&["RENAME", &a, &b]);
                            assert!(reply == "+OK" || reply == "-ERR no such key", "{reply}");
                        }
                        2 => {
                            let reply = r.cmd(&["ZADD", "zs", &score, &m]);
                            assert!(reply == ":0" || reply == ":1", "{reply}");
                        }
                        3 => {
                            let reply = r.cmd(&["ZREM", "zs", &m]);
                            assert!(reply == ":0" || reply == ":1", "{reply}");
                        }
                        4 => {
                            let reply = r.cmd(&["ZRANGE", "zs", "0", "-1"]);
                            assert!(reply.starts_with('['), "{reply}");
                        }
                        _ => {
                            let reply = r.cmd(&["MGET", &a, &b]);
                            assert!(reply.starts_with('['), "{reply}");
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut r = server.raw();
    // The two indexes of the set agree: every member once, in score order, and the counts
    // by rank, by score and by member match.
    let card: usize = r.cmd(&["ZCARD", "zs"])[1..].parse().unwrap();
    let by_rank = r.cmd(&["ZRANGE", "zs", "0", "-1", "WITHSCORES"]);
    let by_score = r.cmd(&["ZRANGEBYSCORE", "zs", "-inf", "+inf", "WITHSCORES"]);
    assert_eq!(by_rank, by_score);
    assert_eq!(r.cmd(&["ZCOUNT", "zs", "-inf", "+inf"]), format!(":{card}"));
    assert_eq!(r.cmd(&["ZLEXCOUNT", "zs", "-", "+"]), format!(":{card}"));
    let inner = by_rank.trim_start_matches('[').trim_end_matches(']');
    let items: Vec<&str> = if inner.is_empty() {
        vec![]
    } else {
        inner.split(", ").collect()
    };
    assert_eq!(items.len(), 2 * card);
    let scores: Vec<f64> = items
        .iter()
        .skip(1)
        .step_by(2)
        .map(|s| s[1..].parse().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    // DBSIZE counts exactly the keys that exist.
    let existing = (0..8)
        .filter(|i| r.cmd(&["EXISTS", &format!("key{i}")]) == ":1")
        .count()
        + usize::from(card > 0);
    assert_eq!(r.cmd(&["DBSIZE"]), format!(":{existing}"));
}
