//! The memcached front end's fuzz entry (`fuzz/fuzz_targets/memcache.rs`, through
//! `crate::fuzzing::memcache_requests`): arbitrary bytes through the framing, the parser
//! and every command against one in-process keyspace with small limits, swallowing refused
//! data as a connection does. A panic anywhere is the bug the fuzzer looks for.

use std::sync::LazyLock;

use super::counters::Tally;
use super::exec::{self, After, Ctx};
use super::parse::{self, Parsed};
use super::state::{Memcache, Settings};
use super::store::Now;
use super::token::Limits;

static MC: LazyLock<Memcache> = LazyLock::new(|| {
    super::build(Settings {
        port: 0,
        bind: "127.0.0.1".into(),
        index: "mercury".into(),
        memory: 256 * 1024,
        max_item: 4096,
        no_evict: false,
        max_conns: 16,
        samples: 5,
    })
    .expect("the fuzzing keyspace builds")
});

/// Runs `data` as one connection's input; see the module docs.
pub(crate) fn requests(data: &[u8]) {
    let mc = &*MC;
    let limits = Limits {
        max_item: 4096,
        max_get_line: 8192,
    };
    let mut tally = Tally::default();
    let mut out = Vec::new();
    let mut at = 0;
    let now = Now::read();
    while at < data.len() {
        match parse::parse(&data[at..], &limits) {
            Parsed::Incomplete => break,
            Parsed::Request(req, used) => {
                assert!(used > 0 && at + used <= data.len());
                at += used;
                out.clear();
                let mut ctx = Ctx {
                    mc,
                    tally: &mut tally,
                    now,
                    out: &mut out,
                };
                match exec::run(&mut ctx, req) {
                    After::Continue => {}
                    After::Swallow(n) => at = at.saturating_add(n).min(data.len()),
                    After::Close => break,
                }
            }
        }
    }
    tally.flush(&mc.counters);
}

#[cfg(test)]
mod tests {
    /// The fuzz entry on a deterministic stream of memcached-shaped inputs, so that
    /// `cargo test` covers it without a fuzzer.
    #[test]
    fn random_requests_never_panic() {
        use rand::Rng;
        let words: &[&[u8]] = &[
            b"set",
            b"add",
            b"replace",
            b"append",
            b"prepend",
            b"cas",
            b"get",
            b"gets",
            b"gat",
            b"gats",
            b"delete",
            b"incr",
            b"decr",
            b"touch",
            b"flush_all",
            b"stats",
            b"version",
            b"verbosity",
            b"mg",
            b"ms",
            b"md",
            b"ma",
            b"mn",
            b"me",
            b"k",
            b"x",
            b"0",
            b"1",
            b"-1",
            b"5",
            b"99999999999",
            b"noreply",
            b"v",
            b"T1",
            b"N5",
            b"c",
            b"f",
            b"t",
            b"s",
            b"q",
            b"k",
            b"b",
            b"Zm9v",
            b"MA",
            b"ME",
            b"MD",
            b"I",
            b"C1",
            b"D9",
            b"J3",
            b"Oop",
            b"h",
            b"l",
            b"u",
            b"R3",
            b"F7",
            b"\r\n",
            b"\n",
            b" ",
            b"settings",
            b"items",
            b"hello",
            b"18446744073709551615",
        ];
        let mut rng = orrery_core::testing::rng::rng(0x6d65_6d63_6163_6865);
        for _ in 0..3000 {
            let mut data = Vec::new();
            for _ in 0..rng.random_range(1..=6) {
                for _ in 0..rng.random_range(1..=7) {
                    data.extend_from_slice(words[rng.random_range(0..words.len())]);
                    data.push(b' ');
                }
                data.extend_from_slice(b"\r\n");
                if rng.random_bool(0.3) {
                    data.extend_from_slice(b"12345\r\n");
                }
            }
            super::requests(&data);
        }
    }
}
