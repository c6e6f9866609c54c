//! Differential test: one deterministic random command stream sent to `orrery-server` and
//! to a real `redis-server` (started by the test on another loopback port) must get the
//! same replies. Skipped, with a message, when `redis-server` is not installed.
//!
//! The stream covers the string, key, expiry and sorted-set commands whose replies are
//! deterministic (`EXPIRETIME`/`PEXPIRETIME` on a key given absolute deadlines only), and
//! the logical databases (`SELECT`, `MOVE`, `SWAPDB`, `FLUSHDB`, `FLUSHALL`, `DBSIZE`,
//! `COPY … DB`) over three of them.
//! Left out, and why: `RANDOMKEY` (random: `tests/server/keys.rs` tests it), `KEYS` (Redis's order is its hash table's),
//! `INCRBYFLOAT` on fractions and huge values (Redis computes in `long double`; here it
//! runs only on its own key with integral steps), `TTL` (depends on timing),
//! `ZRANGEBYLEX` on sets with different scores (unspecified by Redis).

mod collections;
#[path = "../common/mod.rs"]
mod common;
mod large;
mod lists;
mod pubsub;
mod transactions;

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use rand::Rng as _;
use rand::rngs::SmallRng;

use common::{DEADLINE, Raw, Server};

struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Held by each test for its whole run: a port is chosen by binding port 0 and releasing
/// it, so two tests starting redis-server at once could be given the same free port; one
/// redis-server would then fail to bind, and both tests would talk to the other one until
/// its test ends and kills it (seen in CI as "connection refused").
static ONE_REDIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn start_redis() -> Option<(Redis, u16)> {
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let guard = Redis(child);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < DEADLINE, "redis-server did not start");
    }
    Some((guard, port))
}

/// Both servers, each with a connection, for one test; `None` (the test is skipped, with
/// a message) when `redis-server` is not installed. Fields drop in order: connections,
/// our server, redis-server, then the [`ONE_REDIS`] lock.
struct Both {
    ours: Raw,
    theirs: Raw,
    /// redis-server's port (for more connections).
    redis_port: u16,
    _server: Server,
    _redis: Redis,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Both {
    fn start() -> Option<Both> {
        let one = ONE_REDIS.lock().unwrap_or_else(|e| e.into_inner());
        let Some((redis, port)) = start_redis() else {
            eprintln!("SKIPPED: redis-server is not installed (Debian package redis-server)");
            return None;
        };
        let server = Server::start(&[]);
        Some(Both {
            ours: server.raw(),
            theirs: raw(port),
            redis_port: port,
            _server: server,
            _redis: redis,
            _one: one,
        })
    }
}

fn raw(port: u16) -> Raw {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    Raw {
        r: std::io::BufReader::new(s.try_clone().unwrap()),
        w: s,
    }
}

/// The command generator's random source: the suite's seeded generator
/// (`orrery_core::testing::rng`) with the two draws the generator needs.
pub(crate) struct Rng(SmallRng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(orrery_core::testing::rng::rng(seed))
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
    pub(crate) fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

fn command(rng: &mut Rng) -> Vec<String> {
    let keys = ["k0", "k1", "k2", "k3", "k4", "k5"];
    let lex = ["lex0", "lex1"];
    let members = ["a", "b", "c", "d", "e", "f", "g"];
    let values = [
        "",
        "v",
        "12",
        "-3",
        "abc",
        "9223372036854775807",
        "0",
        "1.5",
    ];
    let scores = ["0", "1", "-1", "2.5", "-inf", "+inf", "3", "1e3", "x"];
    let ranges = ["-inf", "+inf", "(1", "1", "2.5", "(0", "x", "-1"];
    let lexr = ["-", "+", "[a", "(b", "[d", "(g", "c"];
    let ints = ["0", "1", "-1", "2", "5", "-3", "100", "x"];
    let k = rng.pick(&keys).to_string();
    let mut v: Vec<String> = match rng.below(58) {
        0 => vec!["GET".into(), k],
        1 | 2 => {
            let mut c = vec!["SET".into(), k, rng.pick(&values).into()];
            for _ in 0..rng.below(3) {
                match rng.below(7) {
                    0 => c.push("NX".into()),
                    1 => c.push("XX".into()),
                    2 => c.push("GET".into()),
                    3 => c.push("KEEPTTL".into()),
                    4 => c.extend([
                        "EX".into(),
                        rng.pick(&["100", "0", "-5", "x", "200"]).into(),
                    ]),
                    5 => c.extend(["PX".into(), rng.pick(&["100000", "0"]).into()]),
                    _ => c.push("BOGUS".into()),
                }
            }
            c
        }
        3 => vec!["SETNX".into(), k, rng.pick(&values).into()],
        4 => vec!["GETSET".into(), k, rng.pick(&values).into()],
        5 => vec!["GETDEL".into(), k],
        6 => vec![
            "MGET".into(),
            k,
            rng.pick(&keys).into(),
            rng.pick(&keys).into(),
        ],
        7 => vec![
            "MSET".into(),
            k,
            rng.pick(&values).into(),
            rng.pick(&keys).into(),
            rng.pick(&values).into(),
        ],
        8 => vec![
            "MSETNX".into(),
            k,
            rng.pick(&values).into(),
            rng.pick(&keys).into(),
            "x".into(),
        ],
        9 => vec!["APPEND".into(), k, rng.pick(&values).into()],
        10 => vec!["STRLEN".into(), k],
        11 => vec!["INCR".into(), k],
        12 => vec!["DECRBY".into(), k, rng.pick(&ints).into()],
        13 => vec!["INCRBY".into(), k, rng.pick(&ints).into()],
        14 => vec![
            "INCRBYFLOAT".into(),
            "fl".into(),
            rng.pick(&["1", "-2", "10", "x"]).into(),
        ],
        15 => vec!["DEL".into(), k, rng.pick(&keys).into()],
        16 => vec!["EXISTS".into(), k, rng.pick(&keys).into()],
        17 => vec!["TYPE".into(), k],
        18 => vec!["RENAME".into(), k, rng.pick(&keys).into()],
        19 => vec![
            // Absolute deadlines far ahead, so that GT/LT compare the same way on both
            // servers however long the commands take.
            "EXPIREAT".into(),
            k,
            rng.pick(&["4102444800", "4102444900", "-1", "x"]).into(),
            rng.pick(&["NX", "XX", "GT", "LT"]).into(),
        ],
        20 => vec!["PERSIST".into(), k],
        21 => vec!["DBSIZE".into()],
        22..=25 => {
            let mut c = vec!["ZADD".into(), k];
            for _ in 0..rng.below(3) {
                c.push(rng.pick(&["NX", "XX", "GT", "LT", "CH", "INCR"]).into());
            }
            for _ in 0..=rng.below(2) {
                c.push(rng.pick(&scores).into());
                c.push(rng.pick(&members).into());
            }
            c
        }
        26 => vec![
            "ZREM".into(),
            k,
            rng.pick(&members).into(),
            rng.pick(&members).into(),
        ],
        27 => vec!["ZSCORE".into(), k, rng.pick(&members).into()],
        28 => vec![
            "ZMSCORE".into(),
            k,
            rng.pick(&members).into(),
            rng.pick(&members).into(),
        ],
        29 => vec!["ZCARD".into(), k],
        30 => vec![
            "ZCOUNT".into(),
            k,
            rng.pick(&ranges).into(),
            rng.pick(&ranges).into(),
        ],
        31 => vec!["ZRANK".into(), k, rng.pick(&members).into()],
        32 => vec![
            "ZINCRBY".into(),
            k,
            rng.pick(&scores).into(),
            rng.pick(&members).into(),
        ],
        33 | 34 => {
            let mut c = vec!["ZRANGE".into(), k];
            match rng.below(2) {
                0 => {
                    c.push(rng.pick(&ints).into());
                    c.push(rng.pick(&ints).into());
                }
                _ => {
                    c.push(rng.pick(&ranges).into());
                    c.push(rng.pick(&ranges).into());
                    c.push("BYSCORE".into());
                    if rng.below(2) == 0 {
                        c.extend([
                            "LIMIT".into(),
                            rng.pick(&ints).into(),
                            rng.pick(&ints).into(),
                        ]);
                    }
                }
            }
            if rng.below(2) == 0 {
                c.push("REV".into());
            }
            if rng.below(2) == 0 {
                c.push("WITHSCORES".into());
            }
            c
        }
        35 => vec![
            rng.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]).into(),
            k,
            rng.pick(&ranges).into(),
            rng.pick(&ranges).into(),
            "WITHSCORES".into(),
        ],
        36 => vec![
            "ZADD".into(),
            rng.pick(&lex).into(),
            "0".into(),
            rng.pick(&members).into(),
        ],
        37 => vec![
            rng.pick(&["ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT"])
                .into(),
            rng.pick(&lex).into(),
            rng.pick(&lexr).into(),
            rng.pick(&lexr).into(),
        ],
        38 => vec![
            "ZREM".into(),
            rng.pick(&lex).into(),
            rng.pick(&members).into(),
        ],
        39 => vec![
            rng.pick(&["GETRANGE", "SUBSTR"]).into(),
            k,
            rng.pick(&ints).into(),
            rng.pick(&ints).into(),
        ],
        40 => vec![
            "SETRANGE".into(),
            k,
            rng.pick(&["0", "1", "3", "-1", "x", "12", "536870912"])
                .into(),
            rng.pick(&values).into(),
        ],
        41 => vec![
            rng.pick(&["SETEX", "PSETEX"]).into(),
            k,
            rng.pick(&["100000", "0", "-5", "x", "9223372036854775807"])
                .into(),
            rng.pick(&values).into(),
        ],
        42 => {
            let mut c = vec!["GETEX".into(), k];
            for _ in 0..rng.below(3) {
                match rng.below(6) {
                    0 => c.push("PERSIST".into()),
                    1 => c.extend(["EX".into(), rng.pick(&["100", "0", "-5", "x"]).into()]),
                    2 => c.extend(["PX".into(), rng.pick(&["100000", "0"]).into()]),
                    3 => c.extend(["EXAT".into(), rng.pick(&["4102444800", "1"]).into()]),
                    4 => c.extend(["PXAT".into(), rng.pick(&["4102444800000", "1"]).into()]),
                    _ => c.push("BOGUS".into()),
                }
            }
            c
        }
        43 => vec!["RENAMENX".into(), k, rng.pick(&keys).into()],
        44 | 45 => {
            let mut c = vec!["COPY".into(), k, rng.pick(&keys).into()];
            for _ in 0..rng.below(3) {
                match rng.below(4) {
                    0 => c.push("REPLACE".into()),
                    1 => c.extend([
                        "DB".into(),
                        rng.pick(&["0", "1", "2", "x", "99", "-1"]).into(),
                    ]),
                    2 => c.push("DB".into()),
                    _ => c.push("BOGUS".into()),
                }
            }
            c
        }
        // Deadlines read back only on a key whose deadlines are absolute (the stream's
        // relative ones depend on timing).
        46 | 47 => {
            let (opt, at) = match rng.below(4) {
                0 => ("EXAT", "4102444800"),
                1 => ("PXAT", "4102444800123"),
                2 => ("EXAT", "4102444900"),
                _ => ("PXAT", "4102444900456"),
            };
            if rng.below(2) == 0 {
                vec![
                    "SET".into(),
                    "at".into(),
                    rng.pick(&values).into(),
                    opt.into(),
                    at.into(),
                ]
            } else {
                vec!["GETEX".into(), "at".into(), opt.into(), at.into()]
            }
        }
        48 => vec!["GETEX".into(), "at".into(), "PERSIST".into()],
        49 | 50 => vec![
            rng.pick(&["EXPIRETIME", "PEXPIRETIME"]).into(),
            rng.pick(&["at", "nokey", "at"]).into(),
        ],
        // The logical databases: keys move between three of them, which are swapped
        // and (rarely) flushed; errors for the numbers out of range.
        52 | 53 => vec![
            "SELECT".into(),
            rng.pick(&["0", "1", "2", "0", "1", "16", "-1", "x"]).into(),
        ],
        54 => vec![
            "MOVE".into(),
            k,
            rng.pick(&["0", "1", "2", "16", "x"]).into(),
        ],
        55 => vec![
            "SWAPDB".into(),
            rng.pick(&["0", "1", "2", "x", "16"]).into(),
            rng.pick(&["0", "1", "2", "-1"]).into(),
        ],
        56 if rng.below(8) == 0 => vec![
            rng.pick(&["FLUSHDB", "FLUSHDB", "FLUSHALL"]).into(),
            rng.pick(&["ASYNC", "SYNC", "BOGUS"]).into(),
        ],
        56 | 57 => vec!["DBSIZE".into()],
        _ => vec![rng.pick(&["NOSUCH", "GET", "SET", "ZADD"]).into()],
    };
    if v.is_empty() {
        v.push("PING".into());
    }
    v
}

#[test]
fn same_replies_as_redis_server() {
    let Some(mut both) = Both::start() else {
        return;
    };
    let (ours, theirs) = (&mut both.ours, &mut both.theirs);
    for seed in [
        0x9e37_79b9_7f4a_7c15,
        0x0bad_5eed_0000_0001,
        0x5eed_0000_0000_0004,
    ] {
        let mut rng = Rng::new(seed);
        for i in 0..20_000 {
            let cmd = command(&mut rng);
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let (a, b) = (ours.cmd(&args), theirs.cmd(&args));
            assert_eq!(a, b, "seed {seed:#x}, command #{i}: {args:?}");
        }
        // Every database holds the same keys (`INFO keyspace` counts them).
        let keyspace = |r: &mut Raw| {
            let info = r.cmd(&["INFO", "keyspace"]);
            info.lines()
                .filter(|l| l.starts_with("db"))
                .map(|l| l.split(",avg_ttl").next().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(keyspace(ours), keyspace(theirs), "seed {seed:#x}");
        assert_eq!(ours.cmd(&["FLUSHALL"]), theirs.cmd(&["FLUSHALL"]));
        assert_eq!(ours.cmd(&["SELECT", "0"]), theirs.cmd(&["SELECT", "0"]));
    }
}

/// One `CONFIG SET` (one to three assignments) or `CONFIG GET` over the parameters whose
/// replies both servers give the same way.
fn config_command(rng: &mut Rng) -> Vec<String> {
    let params: &[(&str, &[&str])] = &[
        (
            "maxclients",
            &["1000", "500", "0", "-1", "x", "4294967296", "1.5"],
        ),
        (
            "appendfsync",
            &["always", "EVERYSEC", "no", "sometimes", ""],
        ),
        (
            "auto-aof-rewrite-percentage",
            &["0", "100", "50", "-1", "x", "2147483648"],
        ),
        (
            "auto-aof-rewrite-min-size",
            &["64mb", "1gb", "10", "0", "1xb", "-1", "5k"],
        ),
        (
            "proto-max-bulk-len",
            &["512mb", "1mb", "2097152", "10", "x", "1g"],
        ),
        (
            "client-query-buffer-limit",
            &["1gb", "1mb", "3mb", "100", "x"],
        ),
        (
            "client-output-buffer-limit",
            &[
                "normal 0 0 0",
                "normal 10mb 5mb 30",
                "replica 1 2 3",
                "pubsub 1mb 1mb 0",
                "slave 256mb 64mb 60 pubsub 32mb 8mb 60",
                "foo 1 1 1",
                "normal 1",
                "normal x 1 1",
                "normal 1 1 -1",
                "",
            ],
        ),
        // Accepted and reported, without effect on this server (`crate::stored`).
        (
            "save",
            &[
                "",
                "3600 1 300 100",
                "0100 1 60 0",
                "100",
                "0 1",
                "1 -1",
                "100  1",
                "x y",
            ],
        ),
        (
            "notify-keyspace-events",
            &[
                "",
                "KEA",
                "Exg",
                "mEKn",
                "AKEmn",
                "ndt$g",
                "Q",
                "g$lshzxet",
                "KEA ",
            ],
        ),
        ("lazyfree-lazy-user-flush", &["yes", "NO", "maybe", ""]),
        ("lazyfree-lazy-eviction", &["yes", "no"]),
        ("timeout", &["0", "300", "-1", "1.5", "2147483648"]),
        ("tcp-keepalive", &["0", "60", "-5"]),
        ("loglevel", &["debug", "WARNING", "loud"]),
        ("slowlog-log-slower-than", &["-1", "0", "-2", "100000"]),
        ("slowlog-max-len", &["0", "1024", "-1"]),
        ("latency-monitor-threshold", &["0", "100", "-1"]),
        (
            "latency-tracking-info-percentiles",
            &["50 99 99.9", "99.90 50.0 0", "", "x", "101", "1e1 99.99999"],
        ),
        ("hz", &["0", "10", "1000", "-1", "x"]),
        ("activerehashing", &["yes", "no", "1"]),
        ("stop-writes-on-bgsave-error", &["no", "yes"]),
        ("rdbcompression", &["YES", "no"]),
        ("maxmemory-eviction-tenacity", &["0", "100", "101"]),
        ("appendonly", &["no", "maybe"]),
        ("dir", &["/tmp", "."]),
        ("databases", &["1", "16"]),
        ("appendfilename", &["x.aof"]),
        ("nosuchparam", &["1"]),
    ];
    let name = |rng: &mut Rng, i: usize| {
        let n = params[i].0;
        if rng.below(4) == 0 {
            n.to_ascii_uppercase()
        } else {
            n.to_string()
        }
    };
    if rng.below(3) == 0 {
        let i = rng.below(params.len() - 4);
        let pattern = match rng.below(5) {
            0 | 1 => name(rng, i),
            2 => "auto-aof-*".to_string(),
            3 => "lazyfree-*".to_string(),
            _ => "client-*".to_string(),
        };
        return vec!["CONFIG".into(), "GET".into(), pattern];
    }
    let mut c = vec!["CONFIG".into(), "SET".into()];
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(params.len());
        c.push(name(rng, i));
        c.push(rng.pick(params[i].1).into());
    }
    if rng.below(20) == 0 {
        c.pop();
    }
    c
}

/// `CONFIG SET` and `CONFIG GET` against redis-server: the same replies (values accepted
/// or refused with the same error, settings reported the same way afterwards).
#[test]
fn config_set_replies_match_redis_server() {
    let Some(mut both) = Both::start() else {
        return;
    };
    let (ours, theirs) = (&mut both.ours, &mut both.theirs);
    // Start from the same settings: this server's defaults differ from Redis's only in
    // the output-buffer classes it reports.
    let mut rng = Rng::new(0x00c0_ff1e_5eed_0001);
    for i in 0..3_000 {
        let cmd = config_command(&mut rng);
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let (a, b) = (ours.cmd(&args), theirs.cmd(&args));
        // A pattern's matches come in Redis's hash-table order: compare them as sets.
        assert_eq!(pairs(&a), pairs(&b), "command #{i}: {args:?}");
    }
}

/// A `CONFIG GET` reply's (name, value) pairs, sorted (other replies as they are).
fn pairs(reply: &str) -> Vec<String> {
    let Some(inner) = reply.strip_prefix("[$").and_then(|r| r.strip_suffix(']')) else {
        return vec![reply.to_string()];
    };
    let items: Vec<&str> = inner.split(", $").collect();
    let mut out: Vec<String> = items.chunks(2).map(|p| p.join(" = ")).collect();
    out.sort();
    out
}
