//! Server commands and the process: unknown commands and arity, `CONFIG SET` at run time,
//! every backend, signals and `SHUTDOWN`, bad command lines.

use std::io::Write as _;

use crate::common::{Server, encode};

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
        (&["COMMAND", "COUNT"], ":158"),
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
    // Redis 7's flags and key positions (`COMMAND INFO` of redis-server 7.0).
    for entry in [
        "[$copy, :-3, [+write, +denyoom], :1, :2, :1",
        "[$getex, :-2, [+write, +fast], :1, :1, :1",
        "[$setrange, :4, [+write, +denyoom], :1, :1, :1",
        "[$randomkey, :1, [+readonly], :0, :0, :0",
        "[$pexpiretime, :2, [+readonly, +fast], :1, :1, :1",
        "[$renamenx, :3, [+write, +fast], :1, :2, :1",
    ] {
        assert!(all.contains(entry), "{entry} in {all}");
    }
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
             $aof-rewrite-key-delay, $0, $activerehashing, $yes, $aof-use-rdb-preamble, $yes, \
             $aof-load-truncated, $yes, $aof-timestamp-enabled, $no]"
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
fn config_resetstat_zeroes_the_counters_it_names() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["GET", "missing"]), "$nil");
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK");
    assert_eq!(r.cmd(&["GET", "k"]), "$v");
    assert_eq!(r.cmd(&["SET", "gone", "v", "PX", "1"]), "+OK");
    crate::common::eventually(
        || r.cmd(&["INFO", "stats"]).contains("expired_keys:1\r\n"),
        "the key to expire",
    );
    let stats = r.cmd(&["INFO", "stats"]);
    assert!(stats.contains("keyspace_hits:1\r\n"), "{stats}");
    assert!(stats.contains("keyspace_misses:1\r\n"), "{stats}");
    assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), "+OK");
    let stats = r.cmd(&["INFO", "stats"]);
    for zero in [
        "keyspace_hits:0\r\n",
        "keyspace_misses:0\r\n",
        "expired_keys:0\r\n",
        "evicted_keys:0\r\n",
        "total_connections_received:0\r\n",
    ] {
        assert!(stats.contains(zero), "{zero}: {stats}");
    }
    // The settings without effect here are stored and reported.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "save", "", "notify-keyspace-events", "KEA"]),
        "+OK"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "notify-keyspace-events"]),
        "[$notify-keyspace-events, $AKE]"
    );
}
