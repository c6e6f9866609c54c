//! Pub/Sub against `redis-server`: a random stream of (un)subscriptions to channels and
//! patterns on a RESP2 and a RESP3 subscriber, `PUBLISH` and `PUBSUB NUMSUB|NUMPAT|
//! CHANNELS` on a third connection, and commands refused in RESP2 subscribed mode; every
//! reply must be the same on both servers. The messages each subscriber receives after a
//! `PUBLISH` are collected up to the reply to a `PING` sent after it and compared as a
//! sorted list (the order among a message's pattern matches is each server's hash order);
//! `PUBSUB CHANNELS` is compared sorted too. `UNSUBSCRIBE` without arguments confirms the
//! channels in hash order, so the stream uses it only when at most one is subscribed.

use std::collections::BTreeSet;

use super::{Both, Rng, raw};
use crate::common::Raw;

const CHANNELS: [&str; 5] = ["a", "b", "ab", "news.1", "news.2"];
const PATTERNS: [&str; 5] = ["a*", "*b", "news.*", "?", "[ab]"];

/// The replies up to and including the one to a `PING` sent now, the others sorted.
fn drain(c: &mut Raw) -> (Vec<String>, String) {
    c.send(b"PING\r\n");
    let mut got = Vec::new();
    loop {
        let r = c.reply();
        if r == "+PONG" || r == "[$pong, $]" {
            got.sort();
            return (got, r);
        }
        got.push(r);
    }
}

/// One subscriber's state on both servers, tracked to keep argument-less unsubscriptions
/// deterministic.
struct Sub {
    ours: Raw,
    theirs: Raw,
    channels: BTreeSet<&'static str>,
    patterns: BTreeSet<&'static str>,
}

impl Sub {
    fn step(&mut self, rng: &mut Rng, what: &str) {
        let (cmd, name): (&str, Option<&'static str>) = match rng.below(10) {
            0..=2 => ("SUBSCRIBE", Some(rng.pick(&CHANNELS))),
            3..=4 => ("PSUBSCRIBE", Some(rng.pick(&PATTERNS))),
            5..=6 => ("UNSUBSCRIBE", Some(rng.pick(&CHANNELS))),
            7 => ("PUNSUBSCRIBE", Some(rng.pick(&PATTERNS))),
            8 if self.channels.len() <= 1 => ("UNSUBSCRIBE", None),
            9 if self.patterns.len() <= 1 => ("PUNSUBSCRIBE", None),
            _ => ("GET", Some("k")),
        };
        let mut args = vec![cmd];
        args.extend(name);
        // One reply per confirmation: at least one (`[kind, nil, 0]` with nothing to
        // unsubscribe from).
        let expect = match (cmd, name) {
            ("UNSUBSCRIBE", None) => self.channels.len().max(1),
            ("PUNSUBSCRIBE", None) => self.patterns.len().max(1),
            _ => 1,
        };
        match (cmd, name) {
            ("SUBSCRIBE", Some(n)) => drop(self.channels.insert(n)),
            ("PSUBSCRIBE", Some(n)) => drop(self.patterns.insert(n)),
            ("UNSUBSCRIBE", Some(n)) => drop(self.channels.remove(n)),
            ("PUNSUBSCRIBE", Some(n)) => drop(self.patterns.remove(n)),
            ("UNSUBSCRIBE", None) => self.channels.clear(),
            ("PUNSUBSCRIBE", None) => self.patterns.clear(),
            _ => {}
        }
        self.ours.send(&crate::common::encode(&args));
        self.theirs.send(&crate::common::encode(&args));
        for _ in 0..expect {
            assert_eq!(self.ours.reply(), self.theirs.reply(), "{what}: {args:?}");
        }
    }
}

#[test]
fn pubsub_matches_redis_server() {
    let Some(mut both) = Both::start() else {
        return;
    };
    let port = both.redis_port;
    let mut subs: Vec<Sub> = (0..2)
        .map(|_| Sub {
            ours: both._server.raw(),
            theirs: raw(port),
            channels: BTreeSet::new(),
            patterns: BTreeSet::new(),
        })
        .collect();
    // The second subscriber speaks RESP3 (HELLO's reply names each server: not compared).
    subs[1].ours.cmd(&["HELLO", "3"]);
    subs[1].theirs.cmd(&["HELLO", "3"]);
    let (p_ours, p_theirs) = (&mut both.ours, &mut both.theirs);
    let mut delivered = 0;
    for seed in [0x5eb5_0001u64, 0x5eb5_0002] {
        let mut rng = Rng::new(seed);
        for i in 0..1_500 {
            let what = format!("seed {seed:#x}, step #{i}");
            match rng.below(6) {
                0..=2 => {
                    let s = rng.below(2);
                    subs[s].step(&mut rng, &what);
                }
                3 | 4 => {
                    let ch = rng.pick(&CHANNELS);
                    let args = ["PUBLISH", ch, "m"];
                    let a = p_ours.cmd(&args);
                    assert_eq!(a, p_theirs.cmd(&args), "{what}: {args:?}");
                    for s in subs.iter_mut() {
                        let got = drain(&mut s.ours);
                        delivered += got.0.len();
                        assert_eq!(got, drain(&mut s.theirs), "{what}: messages of {args:?}");
                    }
                }
                _ => {
                    let args: Vec<&str> = match rng.below(3) {
                        0 => vec!["PUBSUB", "NUMSUB", rng.pick(&CHANNELS), rng.pick(&CHANNELS)],
                        1 => vec!["PUBSUB", "NUMPAT"],
                        _ => vec!["PUBSUB", "CHANNELS", rng.pick(&PATTERNS)],
                    };
                    let (mut a, mut b) = (p_ours.cmd_value(&args), p_theirs.cmd_value(&args));
                    if args[1] == "CHANNELS" {
                        for v in [&mut a, &mut b] {
                            if let crate::common::Value::Array(items) = v {
                                items.sort();
                            }
                        }
                    }
                    assert_eq!(a, b, "{what}: {args:?}");
                }
            }
        }
    }
    assert!(
        delivered > 100,
        "the stream delivered only {delivered} messages"
    );
}
