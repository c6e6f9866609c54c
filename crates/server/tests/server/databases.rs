//! The logical databases: `SELECT`, `MOVE`, `SWAPDB`, `FLUSHDB`/`FLUSHALL`, `DBSIZE`,
//! `COPY … DB`, `INFO keyspace`, `CLIENT LIST`'s `db=`, expiry per database, `WATCH` and
//! `SWAPDB`, blocking pops per database, `--databases`.

use crate::common::{Server, blocked, eventually};

#[test]
fn databases_are_separate_and_keys_move_between_them() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "k", "zero"]), "+OK");
    assert_eq!(r.cmd(&["SELECT", "3"]), "+OK");
    assert_eq!(r.cmd(&["GET", "k"]), "$nil");
    assert_eq!(r.cmd(&["SET", "k", "three", "EX", "1000"]), "+OK");
    assert_eq!(r.cmd(&["DBSIZE"]), ":1");
    assert!(r.cmd(&["CLIENT", "INFO"]).contains(" db=3 "));
    // A large hash (past the compact threshold) moves with its elements.
    let mut hset = vec!["HSET".to_string(), "h".into()];
    for i in 0..600 {
        hset.push(format!("f{i}"));
        hset.push(format!("v{i}"));
    }
    let args: Vec<&str> = hset.iter().map(String::as_str).collect();
    assert_eq!(r.cmd(&args), ":600");
    assert_eq!(r.cmd(&["MOVE", "h", "5"]), ":1");
    assert_eq!(r.cmd(&["EXISTS", "h"]), ":0");
    assert_eq!(
        r.cmd(&["MOVE", "k", "0"]),
        ":0",
        "the destination has the key"
    );
    assert_eq!(r.cmd(&["MOVE", "nokey", "0"]), ":0");
    assert_eq!(
        r.cmd(&["MOVE", "k", "3"]),
        "-ERR source and destination objects are the same"
    );
    assert_eq!(r.cmd(&["MOVE", "k", "16"]), "-ERR DB index is out of range");
    assert_eq!(
        r.cmd(&["MOVE", "k", "x"]),
        "-ERR value is not an integer or out of range"
    );
    assert_eq!(r.cmd(&["MOVE", "k", "7"]), ":1");
    assert_eq!(r.cmd(&["SELECT", "7"]), "+OK");
    let ttl: i64 = r.cmd(&["TTL", "k"])[1..].parse().unwrap();
    assert!(
        (990..=1000).contains(&ttl),
        "the deadline moves along: {ttl}"
    );
    assert_eq!(r.cmd(&["SELECT", "5"]), "+OK");
    assert_eq!(r.cmd(&["HLEN", "h"]), ":600");
    assert_eq!(r.cmd(&["HGET", "h", "f599"]), "$v599");
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "h"]), "$hashtable");
    // COPY to another database, a large collection element by element.
    assert_eq!(r.cmd(&["COPY", "h", "h2", "DB", "6"]), ":1");
    assert_eq!(r.cmd(&["HDEL", "h", "f0"]), ":1");
    assert_eq!(r.cmd(&["SELECT", "6"]), "+OK");
    assert_eq!(r.cmd(&["HLEN", "h2"]), ":600");
    assert_eq!(
        r.cmd(&["COPY", "h2", "x", "DB", "99", "BOGUS"]),
        "-ERR DB index is out of range"
    );
    let info = r.cmd(&["INFO", "keyspace"]);
    let dbs: Vec<&str> = info
        .lines()
        .filter(|l| l.starts_with("db"))
        .map(|l| l.split(",avg_ttl").next().unwrap())
        .collect();
    assert_eq!(
        dbs,
        [
            "db0:keys=1,expires=0",
            "db5:keys=1,expires=0",
            "db6:keys=1,expires=0",
            "db7:keys=1,expires=1"
        ],
        "{info}"
    );
    // FLUSHDB empties the selected database only; FLUSHALL every one.
    assert_eq!(r.cmd(&["FLUSHDB", "ASYNC"]), "+OK");
    assert_eq!(r.cmd(&["DBSIZE"]), ":0");
    assert_eq!(r.cmd(&["SELECT", "0"]), "+OK");
    assert_eq!(r.cmd(&["DBSIZE"]), ":1");
    assert_eq!(r.cmd(&["FLUSHALL"]), "+OK");
    for db in ["0", "5", "7"] {
        assert_eq!(r.cmd(&["SELECT", db]), "+OK");
        assert_eq!(r.cmd(&["DBSIZE"]), ":0");
    }
    // RESET selects database 0 again.
    assert_eq!(r.cmd(&["RESET"]), "+RESET");
    assert!(r.cmd(&["CLIENT", "INFO"]).contains(" db=0 "));
}

#[test]
fn swapdb_exchanges_contents_and_expiry_runs_in_every_database() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "a", "in0"]), "+OK");
    assert_eq!(r.cmd(&["SELECT", "9"]), "+OK");
    assert_eq!(r.cmd(&["SET", "b", "in9"]), "+OK");
    assert_eq!(r.cmd(&["SET", "gone", "x", "PX", "30"]), "+OK");
    eventually(|| r.cmd(&["DBSIZE"]) == ":1", "active expiry in database 9");
    assert_eq!(r.cmd(&["SWAPDB", "0", "9"]), "+OK");
    assert_eq!(r.cmd(&["GET", "a"]), "$in0");
    assert_eq!(r.cmd(&["GET", "b"]), "$nil");
    assert_eq!(r.cmd(&["SELECT", "0"]), "+OK");
    assert_eq!(r.cmd(&["GET", "b"]), "$in9");
    // With a database never used: the keys go there, the other is empty.
    assert_eq!(r.cmd(&["SWAPDB", "0", "12"]), "+OK");
    assert_eq!(r.cmd(&["DBSIZE"]), ":0");
    assert_eq!(r.cmd(&["SWAPDB", "12", "12"]), "+OK");
    assert_eq!(r.cmd(&["SWAPDB", "x", "1"]), "-ERR invalid first DB index");
    assert_eq!(r.cmd(&["SWAPDB", "1", "x"]), "-ERR invalid second DB index");
    assert_eq!(
        r.cmd(&["SWAPDB", "1", "16"]),
        "-ERR DB index is out of range"
    );
    assert_eq!(r.cmd(&["SELECT", "12"]), "+OK");
    assert_eq!(r.cmd(&["GET", "b"]), "$in9");
    // Inside a transaction the swap takes effect between its commands.
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    assert_eq!(r.cmd(&["SWAPDB", "12", "2"]), "+QUEUED");
    assert_eq!(r.cmd(&["GET", "b"]), "+QUEUED");
    assert_eq!(r.cmd(&["SELECT", "2"]), "+QUEUED");
    assert_eq!(r.cmd(&["GET", "b"]), "+QUEUED");
    assert_eq!(r.cmd(&["EXEC"]), "[+OK, $nil, +OK, $in9]");
}

#[test]
fn swapdb_touches_the_watchers_of_both_databases() {
    let server = Server::start(&[]);
    let mut w = server.raw();
    let mut other = server.raw();
    assert_eq!(other.cmd(&["SELECT", "2"]), "+OK");
    assert_eq!(other.cmd(&["SET", "k", "v"]), "+OK");
    // A key that exists in the other database: the swap changes it.
    assert_eq!(w.cmd(&["SELECT", "1"]), "+OK");
    assert_eq!(w.cmd(&["WATCH", "k"]), "+OK");
    assert_eq!(other.cmd(&["SWAPDB", "1", "2"]), "+OK");
    assert_eq!(w.cmd(&["MULTI"]), "+OK");
    assert_eq!(w.cmd(&["GET", "k"]), "+QUEUED");
    assert_eq!(w.cmd(&["EXEC"]), "*nil");
    // A key in neither database: no change.
    assert_eq!(w.cmd(&["WATCH", "absent"]), "+OK");
    assert_eq!(other.cmd(&["SWAPDB", "1", "2"]), "+OK");
    assert_eq!(w.cmd(&["MULTI"]), "+OK");
    assert_eq!(w.cmd(&["GET", "absent"]), "+QUEUED");
    assert_eq!(w.cmd(&["EXEC"]), "[$nil]");
    // A write to the same key name in another database is not a change.
    assert_eq!(w.cmd(&["SELECT", "3"]), "+OK");
    assert_eq!(w.cmd(&["WATCH", "k"]), "+OK");
    assert_eq!(other.cmd(&["SET", "k", "again"]), "+OK");
    assert_eq!(w.cmd(&["MULTI"]), "+OK");
    assert_eq!(w.cmd(&["SET", "k", "mine"]), "+QUEUED");
    assert_eq!(w.cmd(&["EXEC"]), "[+OK]");
}

#[test]
fn a_push_wakes_only_the_waiters_of_its_database() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut in3 = server.raw();
    let mut in0 = server.raw();
    assert_eq!(in3.cmd(&["SELECT", "3"]), "+OK");
    in3.send(&crate::common::encode(&["BLPOP", "q", "0"]));
    blocked(&mut admin, 1);
    in0.send(&crate::common::encode(&["BLPOP", "q", "0"]));
    blocked(&mut admin, 2);
    // Database 0's push serves database 0's waiter, though the other came first.
    assert_eq!(admin.cmd(&["RPUSH", "q", "zero"]), ":1");
    assert_eq!(in0.reply(), "[$q, $zero]");
    blocked(&mut admin, 1);
    assert_eq!(admin.cmd(&["SELECT", "3"]), "+OK");
    assert_eq!(admin.cmd(&["RPUSH", "q", "three"]), ":1");
    assert_eq!(in3.reply(), "[$q, $three]");
    blocked(&mut admin, 0);
    // SWAPDB serves a waiter whose key holds data after the swap.
    assert_eq!(in0.cmd(&["SELECT", "5"]), "+OK");
    in0.send(&crate::common::encode(&["BLPOP", "q", "0"]));
    blocked(&mut admin, 1);
    assert_eq!(admin.cmd(&["RPUSH", "q", "swapped"]), ":1");
    assert_eq!(admin.cmd(&["SWAPDB", "3", "5"]), "+OK");
    assert_eq!(in0.reply(), "[$q, $swapped]");
    blocked(&mut admin, 0);
}

#[test]
fn the_databases_setting() {
    let server = Server::start(&["--databases", "4"]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["CONFIG", "GET", "databases"]), "[$databases, $4]");
    assert_eq!(r.cmd(&["SELECT", "3"]), "+OK");
    assert_eq!(r.cmd(&["SELECT", "4"]), "-ERR DB index is out of range");
    assert_eq!(r.cmd(&["SELECT", "-1"]), "-ERR DB index is out of range");
    assert_eq!(
        r.cmd(&["SELECT", "x"]),
        "-ERR value is not an integer or out of range"
    );
    assert_eq!(r.cmd(&["MOVE", "k", "4"]), "-ERR DB index is out of range");
    assert_eq!(
        r.cmd(&["SWAPDB", "0", "4"]),
        "-ERR DB index is out of range"
    );
}
