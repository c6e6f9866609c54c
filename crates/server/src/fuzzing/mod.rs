//! Entry points for the fuzz targets (`fuzz/fuzz_targets/server.rs`,
//! `server_collections.rs`, `server_lists.rs`): not part of the API.
//!
//! [`requests`] runs arbitrary bytes through the whole request path without a network:
//! the parser (with small limits, so that every limit is reachable), then every complete
//! command through the dispatcher against one in-process keyspace, encoding each reply in
//! RESP2 and RESP3. A panic anywhere is the bug the fuzzer looks for.

mod collections;
mod lists;

use std::sync::{Arc, LazyLock};

use crate::clock::now_ms;
use crate::cmd::{self, Ctx};
use crate::config::Config;
use crate::resp::{self, Limits};
use crate::state::{Client, Shared};
use crate::store::Call;

pub use collections::collections;
pub use lists::lists;

static SHARED: LazyLock<Arc<Shared>> = LazyLock::new(|| {
    let config = Config::default();
    let index = orrery::registry::build(&config.index).expect("the default index builds");
    Arc::new(Shared::new(
        config,
        crate::store::Databases::new(crate::store::Store::new(index), 16),
        None,
        0,
    ))
});

/// Runs `data` through the memcached front end's request path: framing, parser and every
/// command on an in-process item store with small limits (`crate::memcache`).
pub fn memcache_requests(data: &[u8]) {
    crate::memcache::fuzzing::requests(data)
}

/// Parses `data` as a stream of requests and runs each one; see the module docs.
pub fn requests(data: &[u8]) {
    let shared = &**SHARED;
    let limits = Limits {
        max_bulk_len: 256,
        max_multibulk_len: 16,
        max_inline_len: 128,
    };
    // An earlier input may have set a password (`CONFIG SET requirepass`): clear it, so
    // that every input starts from the same settings and reaches every command.
    let _ = shared.live.set(&[("requirepass", "")]);
    let mut client = Client::new(shared.clients.detached(), !shared.live.needs_auth());
    let call = Call::new(now_ms());
    let mut ctx = Ctx {
        shared,
        client: &mut client,
        call: &call,
    };
    cmd::dispatch(&mut ctx, &[b"FLUSHALL".to_vec()]);
    let mut at = 0;
    let mut out = Vec::new();
    while at < data.len() {
        match resp::parse(&data[at..], &limits) {
            Ok(Some((args, used))) => {
                assert!(used > 0 && at + used <= data.len());
                at += used;
                if args.is_empty() {
                    continue;
                }
                let call = Call::new(now_ms());
                let mut ctx = Ctx {
                    shared,
                    client: &mut client,
                    call: &call,
                };
                let mut reply = cmd::dispatch(&mut ctx, &args);
                if let Some(b) = client.blocked.take() {
                    // No connection to wait on: a blocking command times out at once.
                    reply = match shared.waiters.cancel(&b.waiter) {
                        Ok(Some((r, _))) => r,
                        _ => b.timeout_reply,
                    };
                }
                out.clear();
                reply.encode(2, &mut out);
                reply.encode(3, &mut out);
            }
            Ok(None) | Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    /// The fuzz entry point on a deterministic stream of RESP-shaped inputs built from
    /// real command names, so that `cargo test` covers it without a fuzzer.
    #[test]
    fn random_requests_never_panic() {
        let words: &[&[u8]] = &[
            b"SET",
            b"GET",
            b"MULTI",
            b"EXEC",
            b"WATCH",
            b"DISCARD",
            b"ZADD",
            b"ZRANGE",
            b"INCR",
            b"EXPIRE",
            b"RENAME",
            b"MSET",
            b"SCAN",
            b"HELLO",
            b"CLIENT",
            b"ZRANGEBYLEX",
            b"k",
            b"z",
            b"1",
            b"-1",
            b"(1",
            b"[a",
            b"+inf",
            b"BYSCORE",
            b"REV",
            b"LIMIT",
            b"WITHSCORES",
            b"NX",
            b"GT",
            b"INCR",
            b"EX",
            b"KEEPTTL",
            b"\"",
            b"*",
            b"$",
            b"\r\n",
            b" ",
            b"3",
            b"SETNAME",
            b"QUIT",
            b"RESET",
            b"AUTH",
            b"APPEND",
            b"INCRBYFLOAT",
            b"nan",
            b"1e308",
            b"HSET",
            b"HGETALL",
            b"HINCRBYFLOAT",
            b"SADD",
            b"SPOP",
            b"SINTERSTORE",
            b"LPUSH",
            b"LRANGE",
            b"LINSERT",
            b"LREM",
            b"BLPOP",
            b"BLMOVE",
            b"ZPOPMIN",
            b"ZUNIONSTORE",
            b"WEIGHTS",
            b"ZRANDMEMBER",
            b"OBJECT",
            b"ENCODING",
            b"HSCAN",
            b"0",
            b"LEFT",
        ];
        use rand::Rng;
        let mut rng = orrery_core::testing::rng::rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..3000 {
            let mut data = Vec::new();
            let n = rng.random_range(1..=12);
            if rng.random() {
                data.extend_from_slice(format!("*{n}\r\n").as_bytes());
                for _ in 0..n {
                    let w = words[rng.random_range(0..words.len())];
                    data.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
                    data.extend_from_slice(w);
                    data.extend_from_slice(b"\r\n");
                }
            } else {
                for _ in 0..n {
                    data.extend_from_slice(words[rng.random_range(0..words.len())]);
                    data.push(b' ');
                }
                data.push(b'\n');
            }
            super::requests(&data);
        }
    }
}
