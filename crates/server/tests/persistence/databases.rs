//! The logical databases in the append-only file: each key replays into its database
//! (frames of other databases than 0 start with `SELECT`), `SWAPDB`, `MOVE` and a
//! transaction over several databases replay, and a rewrite keeps every database.

use super::{aof_args, dir};
use crate::common::{Raw, Server};

/// What the keyspace should hold after `fill`: `(database, command, reply)`.
const EXPECTED: &[(&str, &[&str], &str)] = &[
    ("0", &["GET", "s"], "$zero"),
    ("0", &["DBSIZE"], ":2"),
    ("0", &["HLEN", "big"], ":700"),
    ("3", &["GET", "s"], "$three"),
    ("3", &["LRANGE", "l", "0", "-1"], "[$a, $b]"),
    ("3", &["DBSIZE"], ":2"),
    ("4", &["GET", "moved"], "$m"),
    ("4", &["GET", "t"], "$tx4"),
    ("5", &["GET", "t"], "$tx5"),
    ("5", &["SMEMBERS", "set"], "[$x]"),
    ("7", &["GET", "s"], "$seven"),
    ("7", &["DBSIZE"], ":1"),
    ("9", &["DBSIZE"], ":0"),
];

fn fill(r: &mut Raw) {
    assert_eq!(r.cmd(&["SET", "s", "zero"]), "+OK");
    let mut hset = vec!["HSET".to_string(), "big".into()];
    for i in 0..700 {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    let args: Vec<&str> = hset.iter().map(String::as_str).collect();
    // A large hash, moved to database 2 and back by a swap of databases 0 and 2 below.
    assert_eq!(r.cmd(&["SELECT", "2"]), "+OK");
    assert_eq!(r.cmd(&args), ":700");
    assert_eq!(r.cmd(&["SELECT", "3"]), "+OK");
    assert_eq!(r.cmd(&["SET", "s", "three"]), "+OK");
    assert_eq!(r.cmd(&["RPUSH", "l", "a", "b"]), ":2");
    assert_eq!(r.cmd(&["SET", "moved", "m"]), "+OK");
    assert_eq!(r.cmd(&["MOVE", "moved", "4"]), ":1");
    assert_eq!(r.cmd(&["SELECT", "9"]), "+OK");
    assert_eq!(r.cmd(&["SET", "s", "seven"]), "+OK");
    assert_eq!(r.cmd(&["SWAPDB", "9", "7"]), "+OK");
    // Database 0's `s` and database 2's `big` change places four times, then `big`
    // moves to database 0.
    assert_eq!(r.cmd(&["SWAPDB", "0", "2"]), "+OK");
    assert_eq!(r.cmd(&["SELECT", "2"]), "+OK");
    assert_eq!(r.cmd(&["RENAME", "s", "s2"]), "+OK");
    assert_eq!(r.cmd(&["RENAME", "s2", "s"]), "+OK");
    assert_eq!(r.cmd(&["SWAPDB", "0", "2"]), "+OK");
    assert_eq!(r.cmd(&["SWAPDB", "0", "2"]), "+OK");
    assert_eq!(r.cmd(&["SELECT", "0"]), "+OK");
    assert_eq!(r.cmd(&["SWAPDB", "0", "2"]), "+OK");
    assert_eq!(
        r.cmd(&["MOVE", "s", "0"]),
        "-ERR source and destination objects are the same"
    );
    assert_eq!(r.cmd(&["SELECT", "2"]), "+OK");
    assert_eq!(r.cmd(&["MOVE", "big", "0"]), ":1");
    assert_eq!(r.cmd(&["MOVE", "big", "0"]), ":0", "gone from database 2");
    assert_eq!(r.cmd(&["SELECT", "0"]), "+OK");
    // A transaction over two databases.
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    for c in [
        &["SELECT", "4"][..],
        &["SET", "t", "tx4"],
        &["SELECT", "5"],
        &["SET", "t", "tx5"],
        &["SADD", "set", "x"],
        &["SELECT", "0"],
    ] {
        assert_eq!(r.cmd(c), "+QUEUED");
    }
    assert_eq!(r.cmd(&["EXEC"]), "[+OK, +OK, +OK, +OK, :1, +OK]");
}

fn check(r: &mut Raw, when: &str) {
    for (db, c, want) in EXPECTED {
        assert_eq!(r.cmd(&["SELECT", db]), "+OK");
        assert_eq!(r.cmd(c), *want, "{when}: database {db}, {c:?}");
    }
}

#[test]
fn every_key_replays_into_its_database_and_a_rewrite_keeps_them() {
    let d = dir("databases");
    let mut server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    fill(&mut r);
    check(&mut r, "before the restart");
    r.send(&crate::common::encode(&["SHUTDOWN"]));
    assert!(server.wait_exit());

    // Replayed from the log.
    let mut server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    check(&mut r, "replayed");
    // Rewritten: the base names each database's keys.
    assert_eq!(r.cmd(&["SAVE"]), "+OK");
    r.send(&crate::common::encode(&["SHUTDOWN"]));
    assert!(server.wait_exit());
    let base = std::fs::read(d.join("appendonly.aof")).unwrap();
    let has = |s: &[u8]| base.windows(s.len()).any(|w| w == s);
    assert!(has(b"SELECT\r\n$1\r\n3\r\n") && has(b"SELECT\r\n$1\r\n7\r\n"));

    let server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    check(&mut r, "rewritten and replayed");
    drop(server);

    // A log naming a database the server does not have refuses to start.
    let mut args = aof_args(&d, "always");
    args.extend(["--databases", "4"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orrery-server"))
        .args(&args)
        .args(["--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("out of range"), "{err}");
}
