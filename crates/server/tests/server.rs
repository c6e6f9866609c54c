//! Integration tests: the real `orrery-server` binary driven by the Rust `redis` crate and
//! by raw sockets (exact replies, protocol errors, limits).

mod common;

use common::{Server, encode, eventually};
use redis::Commands;
use std::io::Write as _;

#[test]
fn strings_through_the_redis_crate() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let _: () = c.set("k", "v").unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    assert_eq!(c.get::<_, Option<String>>("missing").unwrap(), None);
    let _: () = c.mset(&[("a", "1"), ("b", "2")]).unwrap();
    let got: Vec<Option<String>> = c.mget(&["a", "nope", "b"]).unwrap();
    assert_eq!(got, [Some("1".into()), None, Some("2".into())]);
    assert_eq!(c.incr::<_, _, i64>("a", 10).unwrap(), 11);
    assert_eq!(c.decr::<_, _, i64>("a", 2).unwrap(), 9);
    assert_eq!(c.append::<_, _, i64>("k", "xyz").unwrap(), 4);
    assert_eq!(c.strlen::<_, i64>("k").unwrap(), 4);
    let big = vec![7u8; 100_000];
    let _: () = c.set("big", &big[..]).unwrap();
    assert_eq!(c.get::<_, Vec<u8>>("big").unwrap(), big);
    let bin = b"\x00\xff\r\n".to_vec();
    let _: () = c.set(&bin[..], &bin[..]).unwrap();
    assert_eq!(c.get::<_, Vec<u8>>(&bin[..]).unwrap(), bin);
}

#[test]
fn string_commands_reply_exactly_as_redis() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["SET", "k", "v", "NX"], "+OK"),
        (&["SET", "k", "w", "NX"], "$nil"),
        (&["SET", "k", "w", "XX", "GET"], "$v"),
        (&["SET", "new", "x", "XX"], "$nil"),
        (&["SET", "k", "v", "NX", "XX"], "-ERR syntax error"),
        (&["SET", "k", "v", "EX"], "-ERR syntax error"),
        (
            &["SET", "k", "v", "EX", "0"],
            "-ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EX", "x"],
            "-ERR value is not an integer or out of range",
        ),
        (
            &["SET", "k", "v", "EX", "10", "PX", "5"],
            "-ERR syntax error",
        ),
        (
            &["SET", "k", "v", "KEEPTTL", "EX", "5"],
            "-ERR syntax error",
        ),
        (
            &["SET", "k", "v", "EX", "9223372036854775807"],
            "-ERR invalid expire time in 'set' command",
        ),
        (&["SETNX", "k", "z"], ":0"),
        (&["SETNX", "k2", "z"], ":1"),
        (&["GETSET", "k2", "y"], "$z"),
        (&["GETSET", "k3", "y"], "$nil"),
        (&["GETDEL", "k3"], "$y"),
        (&["GETDEL", "k3"], "$nil"),
        (
            &["MSET", "a", "1", "b"],
            "-ERR wrong number of arguments for 'mset' command",
        ),
        (&["MSETNX", "a", "1", "k", "2"], ":0"),
        (&["EXISTS", "a"], ":0"),
        (&["MSETNX", "a", "1", "b", "2"], ":1"),
        (&["MGET", "a", "b", "c"], "[$1, $2, $nil]"),
        (
            &["INCR", "k"],
            "-ERR value is not an integer or out of range",
        ),
        (
            &["INCRBY", "a", "x"],
            "-ERR value is not an integer or out of range",
        ),
        (&["SET", "n", "9223372036854775806"], "+OK"),
        (&["INCR", "n"], ":9223372036854775807"),
        (&["INCR", "n"], "-ERR increment or decrement would overflow"),
        (
            &["DECRBY", "n", "-9223372036854775808"],
            "-ERR decrement would overflow",
        ),
        (&["INCR", "fresh"], ":1"),
        (&["DECR", "fresh2"], ":-1"),
        (&["SET", "f", "10.5"], "+OK"),
        (&["INCRBYFLOAT", "f", "0.1"], "$10.6"),
        (&["INCRBYFLOAT", "f", "-5.6"], "$5"),
        (
            &["INCRBYFLOAT", "f", "abc"],
            "-ERR value is not a valid float",
        ),
        (
            &["INCRBYFLOAT", "k", "1"],
            "-ERR value is not a valid float",
        ),
        (
            &["INCRBYFLOAT", "f", "inf"],
            "-ERR increment would produce NaN or Infinity",
        ),
        (&["APPEND", "ap", "ab"], ":2"),
        (&["APPEND", "ap", "cd"], ":4"),
        (&["STRLEN", "ap"], ":4"),
        (&["STRLEN", "nothing"], ":0"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
}

#[test]
fn keys_type_rename_and_flush() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["MSET", "user:1", "a", "user:2", "b", "other", "c"], "+OK"),
        (&["EXISTS", "user:1", "user:1", "nope"], ":2"),
        (&["TYPE", "user:1"], "+string"),
        (&["TYPE", "nope"], "+none"),
        (&["KEYS", "user:*"], "[$user:1, $user:2]"),
        (&["KEYS", "*"], "[$other, $user:1, $user:2]"),
        (&["KEYS", "u?er:[^1]"], "[$user:2]"),
        (&["RENAME", "nope", "x"], "-ERR no such key"),
        (&["RENAME", "other", "user:0"], "+OK"),
        (&["GET", "user:0"], "$c"),
        (&["RENAME", "user:0", "user:0"], "+OK"),
        (&["DBSIZE"], ":3"),
        (&["DEL", "user:0", "user:0", "nope"], ":1"),
        (&["UNLINK", "user:1"], ":1"),
        (&["FLUSHDB"], "+OK"),
        (&["DBSIZE"], ":0"),
        (&["FLUSHALL", "NOW"], "-ERR syntax error"),
        (&["FLUSHALL", "ASYNC"], "+OK"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
}

#[test]
fn scan_returns_keys_in_order_once_under_concurrent_writes() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let stable: Vec<String> = (0..2000).map(|i| format!("stable:{i:05}")).collect();
    for chunk in stable.chunks(500) {
        let pairs: Vec<(&str, &str)> = chunk.iter().map(|k| (k.as_str(), "v")).collect();
        let _: () = c.mset(&pairs).unwrap();
    }
    // A writer churns other keys while the scan runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let mut w = server.client();
        let (stop, writes) = (stop.clone(), writes.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = format!("churn:{}", i % 500);
                let _: () = w.set(&k, i).unwrap();
                if i.is_multiple_of(3) {
                    let _: i64 = w.del(&k).unwrap();
                }
                i += 1;
                writes.store(i, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    // The scan must overlap the writer: wait (bounded in time) until it is writing.
    let start = std::time::Instant::now();
    while writes.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        assert!(
            start.elapsed() < common::DEADLINE,
            "the writer never started"
        );
        std::thread::yield_now();
    }
    let mut seen = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("stable:*")
            .arg("COUNT")
            .arg(37)
            .query(&mut c)
            .unwrap();
        seen.extend(keys);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(seen, stable, "every stable key once, in order");
    // TYPE filter and the redis crate's own iterator.
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["SCAN", "0", "TYPE", "zset", "COUNT", "100000"]),
        "[$0, []]"
    );
    assert_eq!(r.cmd(&["SCAN", "abc"]), "-ERR invalid cursor");
    assert_eq!(r.cmd(&["SCAN", "0", "COUNT", "0"]), "-ERR syntax error");
    assert_eq!(r.cmd(&["SCAN", "0", "BOGUS", "1"]), "-ERR syntax error");
    let all: Vec<String> = c.scan_match("stable:0000*").unwrap().collect();
    assert_eq!(all.len(), 10);
}

#[test]
fn expiry_lazy_active_and_ttl_commands() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["SET", "k", "v"], "+OK"),
        (&["TTL", "k"], ":-1"),
        (&["TTL", "nope"], ":-2"),
        (&["EXPIRE", "nope", "10"], ":0"),
        (&["EXPIRE", "k", "100"], ":1"),
        (&["TTL", "k"], "~100"),
        (&["EXPIRE", "k", "50", "GT"], ":0"),
        (&["EXPIRE", "k", "50", "LT"], ":1"),
        (&["EXPIRE", "k", "500", "NX"], ":0"),
        (
            &["EXPIRE", "k", "5", "NX", "XX"],
            "-ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            &["EXPIRE", "k", "5", "GT", "LT"],
            "-ERR GT and LT options at the same time are not compatible",
        ),
        (&["EXPIRE", "k", "5", "FOO"], "-ERR Unsupported option FOO"),
        (
            &["EXPIRE", "k", "x"],
            "-ERR value is not an integer or out of range",
        ),
        (
            &["EXPIRE", "k", "9223372036854775807"],
            "-ERR invalid expire time in 'expire' command",
        ),
        (&["APPEND", "k", "w"], ":2"),
        (&["TTL", "k"], "~50"),
        (&["SET", "k", "v", "KEEPTTL"], "+OK"),
        (&["TTL", "k"], "~50"),
        (&["PERSIST", "k"], ":1"),
        (&["PERSIST", "k"], ":0"),
        (&["TTL", "k"], ":-1"),
        (&["PEXPIRE", "k", "100000"], ":1"),
        (&["SET", "k", "v"], "+OK"),
        (&["TTL", "k"], ":-1"),
        (&["EXPIREAT", "k", "1"], ":1"),
        (&["EXISTS", "k"], ":0"),
        (&["SET", "k", "v", "PXAT", "99999999999999"], "+OK"),
        (&["PEXPIREAT", "k", "99999999999998"], ":1"),
        (&["SET", "k", "v", "EX", "1000"], "+OK"),
    ];
    for (args, want) in cases {
        let got = r.cmd(args);
        if let Some(n) = want.strip_prefix('~') {
            // A TTL in seconds: at most what was set, and less by no more than the time
            // the test may take between commands on a loaded machine (generous: 40 s).
            let n: i64 = n.parse().unwrap();
            let ttl: i64 = got[1..].parse().unwrap_or(-3);
            assert!(
                (n - 40..=n).contains(&ttl),
                "{args:?}: {got} (want about {n})"
            );
        } else {
            assert_eq!(got, *want, "{args:?}");
        }
    }
    let pttl: i64 = r.cmd(&["PTTL", "k"])[1..].parse().unwrap();
    assert!((960_000..=1_000_000).contains(&pttl), "{pttl}");
    // Lazy expiry: a short deadline, then the key reads as absent.
    assert_eq!(r.cmd(&["SET", "short", "v", "PX", "30"]), "+OK");
    eventually(|| r.cmd(&["GET", "short"]) == "$nil", "lazy expiry");
    // Active expiry: keys never touched again disappear from DBSIZE.
    assert_eq!(r.cmd(&["FLUSHDB"]), "+OK");
    for i in 0..500 {
        assert_eq!(r.cmd(&["SET", &format!("t{i}"), "v", "PX", "50"]), "+OK");
    }
    assert_eq!(r.cmd(&["SET", "keep", "v"]), "+OK");
    eventually(|| r.cmd(&["DBSIZE"]) == ":1", "active expiry");
    let info = r.cmd(&["INFO", "stats"]);
    assert!(info.contains("expired_keys:5"), "{info}");
}

#[test]
fn connection_commands_and_resp3() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["PING"], "+PONG"),
        (&["PING", "hi"], "$hi"),
        (&["ECHO", "x y"], "$x y"),
        (&["SELECT", "0"], "+OK"),
        (&["SELECT", "1"], "-ERR DB index is out of range"),
        (
            &["AUTH", "pw"],
            "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ),
        (&["CLIENT", "GETNAME"], "$nil"),
        (&["CLIENT", "SETNAME", "tester"], "+OK"),
        (
            &["CLIENT", "SETNAME", "bad name"],
            "-ERR Client names cannot contain spaces, newlines or special characters.",
        ),
        (&["CLIENT", "GETNAME"], "$tester"),
        (
            &["CLIENT", "SETNAME"],
            "-ERR wrong number of arguments for 'client|setname' command",
        ),
        (
            &["CLIENT", "FOO"],
            "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.",
        ),
        (&["HELLO", "4"], "-NOPROTO unsupported protocol version"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
    let id = r.cmd(&["CLIENT", "ID"]);
    let list = r.cmd(&["CLIENT", "LIST"]);
    assert!(
        list.contains(&format!("id={} ", &id[1..])) && list.contains("name=tester"),
        "{list}"
    );
    assert!(r.cmd(&["CLIENT", "INFO"]).contains(" cmd=client|info "));
    let hello = r.cmd(&["HELLO", "3"]);
    assert!(
        hello.starts_with("%{$server: $redis, $version: $7.0.0, $proto: :3"),
        "{hello}"
    );
    assert_eq!(r.cmd(&["GET", "nothing"]), "_");
    assert!(r.cmd(&["CLIENT", "INFO"]).starts_with("=txt:id="));
    assert_eq!(r.cmd(&["RESET"]), "+RESET");
    assert_eq!(r.cmd(&["GET", "nothing"]), "$nil");
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), "$nil");
    assert!(r.cmd(&["HELLO"]).starts_with("[$server, $redis"));
    assert_eq!(r.cmd(&["QUIT"]), "+OK");
    assert!(r.closed());
    // The redis crate over RESP3.
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port)).unwrap();
    let mut c = client
        .get_connection_with_timeout(common::DEADLINE)
        .unwrap();
    let _: () = c.set("r3", "v").unwrap();
    assert_eq!(c.get::<_, String>("r3").unwrap(), "v");
    assert_eq!(c.get::<_, Option<String>>("none").unwrap(), None);
}

#[test]
fn authentication() {
    let server = Server::start(&["--requirepass", "s3cret"]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["GET", "k"], "-NOAUTH Authentication required."),
        (
            &["NOSUCH"],
            "-ERR unknown command 'NOSUCH', with args beginning with: ",
        ),
        (&["GET"], "-ERR wrong number of arguments for 'get' command"),
        (
            &["AUTH", "wrong"],
            "-WRONGPASS invalid username-password pair or user is disabled.",
        ),
        (
            &["AUTH", "bob", "s3cret"],
            "-WRONGPASS invalid username-password pair or user is disabled.",
        ),
        (&["AUTH", "s3cret"], "+OK"),
        (&["SET", "k", "v"], "+OK"),
        (&["RESET"], "+RESET"),
        (&["GET", "k"], "-NOAUTH Authentication required."),
        (&["AUTH", "default", "s3cret"], "+OK"),
        (&["GET", "k"], "$v"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
    let mut h = server.raw();
    let hello = h.cmd(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "n"]);
    assert!(hello.starts_with("%{"), "{hello}");
    assert_eq!(h.cmd(&["CLIENT", "GETNAME"]), "$n");
    let url = format!("redis://:s3cret@127.0.0.1:{}/", server.port);
    let mut c = redis::Client::open(url)
        .unwrap()
        .get_connection_with_timeout(common::DEADLINE)
        .unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
}

#[test]
fn unknown_commands_arity_and_server_commands() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (
            &["FOO", "a", "b"],
            "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' ",
        ),
        (&["get"], "-ERR wrong number of arguments for 'get' command"),
        (
            &["SET", "k"],
            "-ERR wrong number of arguments for 'set' command",
        ),
        (
            &["ECHO", "a", "b"],
            "-ERR wrong number of arguments for 'echo' command",
        ),
        (
            &["PING", "a", "b"],
            "-ERR wrong number of arguments for 'ping' command",
        ),
        (&["COMMAND", "COUNT"], ":62"),
        (&["COMMAND", "DOCS"], "[]"),
        (&["CONFIG", "GET", "maxclients"], "[$maxclients, $10000]"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
    let all = r.cmd(&["COMMAND"]);
    assert!(
        all.contains("[$get, :2, [+readonly, +fast], :1, :1, :1"),
        "{all}"
    );
    let info = r.cmd(&["INFO"]);
    for section in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Keyspace",
    ] {
        assert!(info.contains(section), "{section} in {info}");
    }
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK");
    assert!(
        r.cmd(&["INFO", "keyspace"])
            .contains("db0:keys=1,expires=0")
    );
    assert!(!r.cmd(&["INFO", "keyspace"]).contains("# Server"));
}

#[test]
fn inline_pipelining_and_malformed_input() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    r.send(b"SET inline \"a b\"\r\nGET inline\r\n\r\nPING\n");
    assert_eq!(r.reply(), "+OK");
    assert_eq!(r.reply(), "$a b");
    assert_eq!(r.reply(), "+PONG");
    // 2,000 pipelined commands in one write.
    let mut batch = Vec::new();
    for i in 0..1000 {
        batch.extend(encode(&["SET", &format!("p{i}"), &i.to_string()]));
        batch.extend(encode(&["GET", &format!("p{i}")]));
    }
    r.send(&batch);
    for i in 0..1000 {
        assert_eq!(r.reply(), "+OK");
        assert_eq!(r.reply(), format!("${i}"));
    }
    // Malformed requests: Redis's error, then the connection closes.
    for (bad, want) in [
        (
            &b"*1\r\n+PING\r\n"[..],
            "-ERR Protocol error: expected '$', got '+'",
        ),
        (b"*x\r\n", "-ERR Protocol error: invalid multibulk length"),
        (b"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"),
        (
            b"ECHO \"unbalanced\r\n",
            "-ERR Protocol error: unbalanced quotes in request",
        ),
    ] {
        let mut c = server.raw();
        c.send(bad);
        assert_eq!(c.reply(), want);
        assert!(c.closed());
    }
    // The server is still fine, and so is the data.
    assert_eq!(r.cmd(&["GET", "p999"]), "$999");
}

#[test]
fn limits_on_bulks_query_buffer_clients_and_sizes() {
    let server = Server::start(&[
        "--proto-max-bulk-len",
        "1000",
        "--client-query-buffer-limit",
        "100000",
        "--maxclients",
        "3",
    ]);
    let mut a = server.raw();
    assert_eq!(a.cmd(&["SET", "k", &"x".repeat(1000)]), "+OK");
    let mut b = server.raw();
    b.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1001\r\n");
    assert_eq!(b.reply(), "-ERR Protocol error: invalid bulk length");
    assert!(b.closed());
    // A request that never completes but keeps growing: disconnected at the limit.
    let mut q = server.raw();
    let mut sent = 0;
    let big = vec![b'a'; 10_000];
    q.send(b"*1000\r\n");
    while sent < 200_000 {
        let ok = q.w.write_all(b"$1000\r\n").is_ok()
            && q.w.write_all(&big[..1000]).is_ok()
            && q.w.write_all(b"\r\n").is_ok();
        if !ok {
            break;
        }
        sent += 1007;
    }
    assert!(q.closed());
    // maxclients 3: a and two more.
    let mut c2 = server.raw();
    assert_eq!(c2.cmd(&["PING"]), "+PONG");
    let mut c3 = server.raw();
    assert_eq!(c3.cmd(&["PING"]), "+PONG");
    let mut c4 = server.raw();
    assert_eq!(c4.reply(), "-ERR max number of clients reached");
    drop(c3);
    eventually(
        || {
            let mut c = server.raw();
            c.send(&encode(&["PING"]));
            c.reply() == "+PONG"
        },
        "a slot to free up",
    );
    // Keys and values over the index's limits are refused and change nothing.
    let long_key = "k".repeat(70_000);
    let mut big_server = Server::start(&[]);
    let mut r = big_server.raw();
    assert_eq!(
        r.cmd(&["SET", &long_key, "v"]),
        "-ERR key too long (limit 65528 bytes)"
    );
    let huge = "v".repeat(1024 * 1024);
    assert!(
        r.cmd(&["SET", "k", &huge])
            .starts_with("-ERR string exceeds maximum allowed size")
    );
    assert_eq!(r.cmd(&["DBSIZE"]), ":0");
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK");
    assert!(
        r.cmd(&["APPEND", "k", &huge])
            .starts_with("-ERR string exceeds")
    );
    assert_eq!(r.cmd(&["GET", "k"]), "$v");
    assert_eq!(
        r.cmd(&["MSET", "a", "1", "b", &huge]).get(..4),
        Some("-ERR")
    );
    assert_eq!(r.cmd(&["EXISTS", "a"]), ":0");
    big_server.child.kill().unwrap();
    assert!(!big_server.wait_exit());
}

#[test]
fn config_set_changes_settings_while_running() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let failed = |name: &str, why: &str| {
        format!("-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
    };
    let cases: &[(&[&str], String)] = &[
        (&["CONFIG", "SET", "maxclients", "5"], "+OK".into()),
        (
            &["CONFIG", "GET", "maxclients"],
            "[$maxclients, $5]".into(),
        ),
        (
            &["CONFIG", "SET", "FOO", "1"],
            "-ERR Unknown option or number of arguments for CONFIG SET - 'FOO'".into(),
        ),
        (
            &["CONFIG", "SET", "maxclients", "x"],
            failed("maxclients", "argument couldn't be parsed into an integer"),
        ),
        (
            &["CONFIG", "SET", "MAXCLIENTS", "0"],
            failed(
                "maxclients",
                "argument must be between 1 and 4294967295 inclusive",
            ),
        ),
        (
            &["CONFIG", "SET", "maxclients", "6", "MAXCLIENTS", "7"],
            failed("MAXCLIENTS", "duplicate parameter"),
        ),
        (
            &["CONFIG", "SET", "port", "1"],
            failed("port", "can't set immutable config"),
        ),
        (
            &["CONFIG", "SET", "maxclients"],
            "-ERR wrong number of arguments for 'config|set' command".into(),
        ),
        // Nothing of a refused command is applied.
        (
            &["CONFIG", "SET", "maxclients", "9", "appendfsync", "sometimes"],
            failed(
                "appendfsync",
                "argument(s) must be one of the following: everysec, always, no",
            ),
        ),
        (
            &["CONFIG", "GET", "maxclients"],
            "[$maxclients, $5]".into(),
        ),
        (
            &[
                "CONFIG",
                "SET",
                "appendfsync",
                "ALWAYS",
                "auto-aof-rewrite-min-size",
                "10mb",
                "auto-aof-rewrite-percentage",
                "50",
            ],
            "+OK".into(),
        ),
        (
            &["CONFIG", "GET", "a*"],
            "[$appendonly, $no, $appendfsync, $always, $appendfilename, $appendonly.aof, \
             $auto-aof-rewrite-percentage, $50, $auto-aof-rewrite-min-size, $10485760, \
             $aof-rewrite-key-delay, $0]"
                .into(),
        ),
        (
            &["CONFIG", "SET", "auto-aof-rewrite-min-size", "1xb"],
            failed("auto-aof-rewrite-min-size", "argument must be a memory value"),
        ),
        (
            &["CONFIG", "SET", "proto-max-bulk-len", "10"],
            failed(
                "proto-max-bulk-len",
                "argument must be between 1048576 and 9223372036854775807 inclusive",
            ),
        ),
        (
            &["CONFIG", "SET", "client-output-buffer-limit", "normal 10"],
            failed(
                "client-output-buffer-limit",
                "Wrong number of arguments in buffer limit configuration.",
            ),
        ),
        (
            &["CONFIG", "SET", "client-output-buffer-limit", "foo 1 1 1"],
            failed(
                "client-output-buffer-limit",
                "Invalid client class specified in buffer limit configuration.",
            ),
        ),
        (
            &["CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 2 3"],
            "+OK".into(),
        ),
        (
            &["CONFIG", "GET", "client-output-buffer-limit"],
            "[$client-output-buffer-limit, $normal 0 0 0 slave 1048576 2 3 pubsub 33554432 8388608 60]"
                .into(),
        ),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }

    // maxclients: r and three more, then the limit.
    assert_eq!(r.cmd(&["CONFIG", "SET", "maxclients", "4"]), "+OK");
    let others: Vec<_> = (0..3)
        .map(|_| {
            let mut c = server.raw();
            assert_eq!(c.cmd(&["PING"]), "+PONG");
            c
        })
        .collect();
    let mut over = server.raw();
    assert_eq!(over.reply(), "-ERR max number of clients reached");
    drop(others);
    assert_eq!(r.cmd(&["CONFIG", "SET", "maxclients", "100"]), "+OK");

    // requirepass: new connections must authenticate; existing ones stay authenticated.
    assert_eq!(r.cmd(&["CONFIG", "SET", "requirepass", "pw"]), "+OK");
    assert_eq!(r.cmd(&["PING"]), "+PONG");
    let mut fresh = server.raw();
    assert_eq!(fresh.cmd(&["GET", "k"]), "-NOAUTH Authentication required.");
    assert_eq!(fresh.cmd(&["AUTH", "pw"]), "+OK");
    assert_eq!(fresh.cmd(&["GET", "k"]), "$nil");
    assert_eq!(r.cmd(&["CONFIG", "SET", "requirepass", ""]), "+OK");
    assert_eq!(server.raw().cmd(&["PING"]), "+PONG");

    // proto-max-bulk-len and client-query-buffer-limit (Redis's minimum: 1 MiB).
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1mb"]),
        "+OK"
    );
    let mut b = server.raw();
    b.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n");
    assert_eq!(b.reply(), "-ERR Protocol error: invalid bulk length");
    assert!(b.closed());
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]),
        "+OK"
    );
    let mut q = server.raw();
    q.send(b"*100000\r\n");
    let chunk = [b"$1000\r\n".as_slice(), &[b'a'; 1000], b"\r\n"].concat();
    let mut sent = 0;
    while sent < 4 << 20 && q.w.write_all(&chunk).is_ok() {
        sent += chunk.len();
    }
    assert!(q.closed(), "disconnected past 1 MiB of buffered request");

    // client-output-buffer-limit for normal clients.
    assert_eq!(r.cmd(&["SET", "big", &"x".repeat(4000)]), "+OK");
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 10000 10000 0"
        ]),
        "+OK"
    );
    let mut o = server.raw();
    o.send(&encode(&["MGET", "big", "big", "big"]));
    assert!(o.closed());
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 0 0"
        ]),
        "+OK"
    );
    let mut o = server.raw();
    assert!(o.cmd(&["MGET", "big", "big", "big"]).starts_with("[$xxx"));
}

#[test]
fn a_client_over_the_output_buffer_limit_is_disconnected() {
    let server = Server::start(&["--client-output-buffer-limit", "10000"]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "big", &"x".repeat(4000)]), "+OK");
    assert_eq!(r.cmd(&["GET", "big"]).len(), 4001);
    // One reply of three 4 KB values passes 10,000 bytes.
    r.send(&encode(&["MGET", "big", "big", "big"]));
    assert!(r.closed());
    // Others are unaffected, and the write stays.
    let mut other = server.raw();
    assert_eq!(other.cmd(&["STRLEN", "big"]), ":4000");
}

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
fn every_backend_serves_strings_and_lists_its_keys() {
    for index in ["wormhole", "mercury", "slb:wormhole", "slb:mercury"] {
        let server = Server::start(&["--index", index]);
        let mut r = server.raw();
        assert_eq!(r.cmd(&["SET", "a", "1"]), "+OK", "{index}");
        assert_eq!(r.cmd(&["INCR", "a"]), ":2", "{index}");
        assert_eq!(r.cmd(&["MGET", "a", "b"]), "[$2, $nil]", "{index}");
        assert_eq!(r.cmd(&["DEL", "a"]), ":1", "{index}");
        let info = r.cmd(&["INFO", "server"]);
        assert!(info.contains(&format!("orrery_index:{index}")), "{info}");
        assert_eq!(r.cmd(&["SCAN", "0"]), "[$0, []]", "{index}");
        assert_eq!(r.cmd(&["KEYS", "*"]), "[]", "{index}");
    }
}

#[test]
fn sigterm_and_shutdown_exit_cleanly() {
    let mut server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(server.wait_exit(), "SIGTERM exits with status 0");
    let mut server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SHUTDOWN", "BOGUS"]), "-ERR syntax error");
    r.send(&encode(&["SHUTDOWN", "NOSAVE"]));
    assert!(r.closed(), "SHUTDOWN closes the connection without a reply");
    assert!(server.wait_exit(), "SHUTDOWN exits with status 0");
}

#[test]
fn bad_command_lines_are_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orrery-server"))
        .args(["--bind", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("without --requirepass"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orrery-server"))
        .args(["--index", "nope", "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown index"));
}

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

#[test]
fn concurrent_multi_key_writes_and_sorted_sets_stay_consistent() {
    let server = Server::start(&[]);
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let mut r = server.raw();
            std::thread::spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t;
                for _ in 0..1500 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
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
