//! [`collections`]: structured command sequences over the collection types, with two
//! checks after the fact:
//!
//! - after every command, each collection's count (`HLEN`, `SCARD`, `LLEN`, `ZCARD`)
//!   equals the number of elements a full read returns (a large collection's count lives
//!   apart from its elements), and no empty collection is left under a key;
//! - at the end, the records the commands logged, replayed into an empty keyspace, rebuild
//!   exactly the keyspace they were written from (the rewrite's walk of both, record by
//!   record).
//!
//! The first byte picks the thresholds: Redis's defaults, or tiny ones so that most
//! collections are large and convert mid-sequence.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use crate::clock::now_ms;
use crate::cmd::{self, Ctx};
use crate::config::Config;
use crate::layout::ThresholdValues;
use crate::resp::Reply;
use crate::state::{Client, Shared};
use crate::store::{Call, Databases, Journal, Store};

/// The frames appended, in order.
#[derive(Default)]
pub(super) struct Frames(pub(super) Mutex<Vec<Vec<u8>>>);

impl Journal for Frames {
    fn append(&self, records: &[u8]) -> u64 {
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f.push(records.to_vec());
        f.len() as u64
    }

    fn appended(&self) -> u64 {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len() as u64
    }
}

const KEYS: [&str; 4] = ["a", "b", "c", "d"];
const MEMBERS: [&str; 10] = [
    "x",
    "y",
    "z",
    "1",
    "2",
    "-7",
    "",
    "w",
    "300",
    "long-member-name-over-sixteen-bytes",
];
const NUMS: [&str; 10] = ["0", "1", "-1", "2", "-2", "5", "100", "x", "2.5", "-inf"];
const COMMANDS: [&str; 62] = [
    "HSET",
    "HSETNX",
    "HDEL",
    "HINCRBY",
    "HINCRBYFLOAT",
    "HGET",
    "HMGET",
    "HGETALL",
    "HRANDFIELD",
    "HSCAN",
    "SADD",
    "SREM",
    "SPOP",
    "SRANDMEMBER",
    "SMOVE",
    "SINTERSTORE",
    "SUNIONSTORE",
    "SDIFFSTORE",
    "SINTERCARD",
    "SSCAN",
    "SMEMBERS",
    "LPUSH",
    "RPUSH",
    "LPUSHX",
    "LPOP",
    "RPOP",
    "LSET",
    "LINSERT",
    "LREM",
    "LTRIM",
    "LPOS",
    "LMOVE",
    "RPOPLPUSH",
    "LRANGE",
    "LINDEX",
    "BLPOP",
    "BLMOVE",
    "BZPOPMIN",
    "ZADD",
    "ZINCRBY",
    "ZREM",
    "ZPOPMIN",
    "ZPOPMAX",
    "ZREMRANGEBYSCORE",
    "ZREMRANGEBYRANK",
    "ZREMRANGEBYLEX",
    "ZUNIONSTORE",
    "ZINTERSTORE",
    "ZDIFFSTORE",
    "ZRANGESTORE",
    "ZRANDMEMBER",
    "ZSCAN",
    "ZRANGE",
    "RENAME",
    "DEL",
    "EXPIRE",
    "PERSIST",
    "OBJECT",
    "MEMORY",
    "TYPE",
    "SET",
    "LLEN",
];

/// Reads the input a byte at a time (zeros once it is used up).
pub(super) struct Bytes<'a>(pub(super) &'a [u8]);

impl Bytes<'_> {
    pub(super) fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn pick<'s>(&mut self, xs: &[&'s str]) -> &'s str {
        xs[usize::from(self.next()) % xs.len()]
    }
}

/// One command drawn from the input.
fn args_for(b: &mut Bytes<'_>) -> Vec<String> {
    let name = b.pick(&COMMANDS);
    let mut v = vec![name.to_string()];
    let key = |b: &mut Bytes<'_>| b.pick(&KEYS).to_string();
    let member = |b: &mut Bytes<'_>| b.pick(&MEMBERS).to_string();
    let num = |b: &mut Bytes<'_>| b.pick(&NUMS).to_string();
    match name {
        "SINTERSTORE" | "SUNIONSTORE" | "SDIFFSTORE" | "SMOVE" | "LMOVE" | "RPOPLPUSH"
        | "RENAME" | "ZRANGESTORE" => {
            v.extend([key(b), key(b)]);
            match name {
                "SMOVE" => v.push(member(b)),
                "LMOVE" => v.extend([
                    b.pick(&["LEFT", "RIGHT"]).to_string(),
                    b.pick(&["LEFT", "RIGHT"]).to_string(),
                ]),
                "ZRANGESTORE" => v.extend([num(b), num(b)]),
                _ => {}
            }
        }
        "SINTERCARD" => v.extend(["2".into(), key(b), key(b)]),
        "ZUNIONSTORE" | "ZINTERSTORE" | "ZDIFFSTORE" => {
            v.extend([key(b), "2".into(), key(b), key(b)]);
            if b.next().is_multiple_of(2) && name != "ZDIFFSTORE" {
                v.extend(["WEIGHTS".into(), num(b), num(b)]);
            }
        }
        "BLPOP" | "BZPOPMIN" => v.extend([key(b), key(b), "0".into()]),
        "BLMOVE" => v.extend([key(b), key(b), "LEFT".into(), "RIGHT".into(), "0".into()]),
        "OBJECT" => v.extend(["ENCODING".into(), key(b)]),
        "MEMORY" => v.extend(["USAGE".into(), key(b)]),
        _ => {
            v.push(key(b));
            // Up to four more arguments, numbers or members.
            for _ in 0..b.next() % 5 {
                let x = if b.next().is_multiple_of(3) {
                    num(b)
                } else {
                    member(b)
                };
                v.push(x);
            }
        }
    }
    v
}

/// Runs one command on the in-process server; a blocking command times out at once.
pub(super) fn run(shared: &Shared, client: &mut Client, args: &[&str]) -> Reply {
    let call = Call::new(now_ms());
    let mut ctx = Ctx {
        shared,
        client,
        call: &call,
    };
    let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let reply = cmd::dispatch(&mut ctx, &argv);
    match client.blocked.take() {
        Some(blocked) => match shared.waiters.cancel(&blocked.waiter) {
            Ok(Some((r, _))) => r,
            _ => blocked.timeout_reply,
        },
        None => reply,
    }
}

/// Whether each collection's count equals what a full read returns.
fn counts_agree(shared: &Shared, client: &mut Client) -> Result<(), String> {
    for key in KEYS {
        let mut r = |args: &[&str]| run(shared, client, args);
        let (count, read, per) = match r(&["TYPE", key]) {
            Reply::Simple("hash") => (r(&["HLEN", key]), r(&["HGETALL", key]), 1),
            Reply::Simple("set") => (r(&["SCARD", key]), r(&["SMEMBERS", key]), 1),
            Reply::Simple("list") => (r(&["LLEN", key]), r(&["LRANGE", key, "0", "-1"]), 1),
            Reply::Simple("zset") => (
                r(&["ZCARD", key]),
                r(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
                2,
            ),
            _ => continue,
        };
        let n = match read {
            Reply::Array(items) | Reply::Set(items) => items.len() / per,
            Reply::Bulks { count, .. } => count / per,
            Reply::Map(pairs) => pairs.len(),
            other => return Err(format!("{key}: full read {other:?}")),
        };
        if count != Reply::Int(n as i64) || n == 0 {
            return Err(format!("{key}: count {count:?}, {n} elements read"));
        }
    }
    Ok(())
}

/// Every key's rebuilding records (`crate::coll::dump`), in key order.
pub(super) fn dump_all(store: &Store) -> Vec<Vec<Vec<u8>>> {
    let mut pairs = Vec::new();
    store.walk(&mut |k, v| {
        // The access field is when the value was last used, not what it holds.
        let mut v = v.to_vec();
        crate::store::set_access(&mut v, 0);
        pairs.push((k.to_vec(), v));
        ControlFlow::Continue(())
    });
    let mut out = Vec::new();
    for (k, v) in pairs {
        let _ = crate::coll::dump(store, &k, &v, &mut |parts| {
            out.push(parts.iter().map(|p| p.to_vec()).collect());
            Ok(())
        });
    }
    out
}

/// Runs a structured sequence from `data` and checks it (see the module docs); panics
/// on a broken check.
pub fn collections(data: &[u8]) {
    let mut b = Bytes(data);
    let mut config = Config::default();
    if b.next() % 2 == 1 {
        for (name, v) in [
            ("hash-max-listpack-entries", "2"),
            ("set-max-intset-entries", "2"),
            ("set-max-listpack-entries", "2"),
            ("zset-max-listpack-entries", "2"),
            ("list-max-listpack-size", "2"),
            ("hash-max-listpack-value", "8"),
        ] {
            let _ = config.thresholds.set_named(name, v);
        }
    }
    let thresholds = config.thresholds;
    let frames = Arc::new(Frames::default());
    let mut store = Store::open("wormhole").expect("the default index builds");
    store.set_journal(frames.clone());
    let shared = Shared::new(config, Databases::new(store, 1), None, 0);
    let mut client = Client::new(shared.clients.detached(), true);
    for _ in 0..64 {
        if b.0.is_empty() {
            break;
        }
        let args = args_for(&mut b);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = run(&shared, &mut client, &argv);
        let mut out = Vec::new();
        reply.encode(2, &mut out);
        reply.encode(3, &mut out);
        if let Err(e) = counts_agree(&shared, &mut client) {
            panic!("after {args:?}: {e}");
        }
    }
    assert_replays(&frames, thresholds, shared.dbs.get(0));
}

/// Replays what was logged into an empty keyspace under `thresholds`, and checks that it
/// rebuilds `store`.
pub(super) fn assert_replays(frames: &Frames, thresholds: ThresholdValues, store: &Store) {
    let replayed = Store::open("wormhole").expect("the default index builds");
    replayed.thresholds().set_all(thresholds);
    let replayed = Databases::new(replayed, 1);
    let now = now_ms();
    for f in frames.0.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        if let Err(e) = crate::aof::replay_frame(&replayed, f, now) {
            panic!("a logged frame does not replay: {e}");
        }
    }
    let (a, b) = (dump_all(store), dump_all(replayed.get(0)));
    assert!(
        a == b,
        "the log does not rebuild the keyspace:\n{a:?}\n{b:?}"
    );
}

#[cfg(test)]
mod tests {
    /// The structured entry point over a deterministic set of inputs, both thresholds.
    #[test]
    fn random_collection_sequences_keep_counts_and_replay_exactly() {
        use rand::Rng;
        let mut rng = orrery_core::testing::rng::rng(0xc011_ec71_0115);
        for i in 0..400u32 {
            let mut data = vec![(i % 2) as u8];
            data.extend((0..rng.random_range(20..400)).map(|_| rng.random::<u8>()));
            super::collections(&data);
        }
    }
}
