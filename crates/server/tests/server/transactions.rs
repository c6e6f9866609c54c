//! Transactions: `MULTI`/`EXEC`/`DISCARD`/`WATCH`/`UNWATCH` replies and errors, `WATCH`
//! conflicts from another connection (writes, deletes, collection changes, expiry,
//! `FLUSHALL`), `EXECABORT`, blocking commands inside `MULTI`, a push inside a
//! transaction serving a waiter only at `EXEC`, and atomicity against concurrent readers
//! and writers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use crate::common::{Raw, Server, eventually};

fn multi(r: &mut Raw, cmds: &[&[&str]]) {
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    for c in cmds {
        assert_eq!(r.cmd(c), "+QUEUED", "{c:?}");
    }
}

#[test]
fn queued_commands_run_at_exec_with_their_own_replies() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    multi(
        &mut r,
        &[
            &["SET", "a", "1"],
            &["INCR", "a"],
            &["LPUSH", "a", "x"],
            &["SET", "b", "v", "BADOPT"],
            &["GET", "a"],
            &["BLPOP", "empty", "0"],
            &["UNWATCH"],
        ],
    );
    assert_eq!(
        r.cmd(&["EXEC"]),
        "[+OK, :2, -WRONGTYPE Operation against a key holding the wrong kind of value, \
         -ERR syntax error, $2, *nil, +OK]"
    );
    assert_eq!(r.cmd(&["EXEC"]), "-ERR EXEC without MULTI");
    assert_eq!(r.cmd(&["DISCARD"]), "-ERR DISCARD without MULTI");
    // An empty transaction.
    multi(&mut r, &[]);
    assert_eq!(r.cmd(&["EXEC"]), "[]");
    // DISCARD drops the queue.
    multi(&mut r, &[&["SET", "a", "9"]]);
    assert_eq!(r.cmd(&["MULTI"]), "-ERR MULTI calls can not be nested");
    assert_eq!(
        r.cmd(&["WATCH", "a"]),
        "-ERR WATCH inside MULTI is not allowed"
    );
    assert_eq!(r.cmd(&["DISCARD"]), "+OK");
    assert_eq!(r.cmd(&["GET", "a"]), "$2");
    // RESP3: a null for an aborted EXEC.
    assert!(r.cmd(&["HELLO", "3"]).starts_with("%{"));
    assert_eq!(r.cmd(&["WATCH", "a"]), "+OK");
    assert_eq!(r.cmd(&["SET", "a", "3"]), "+OK");
    multi(&mut r, &[&["GET", "a"]]);
    assert_eq!(r.cmd(&["EXEC"]), "_");
}

#[test]
fn a_command_rejected_while_queuing_aborts_the_transaction() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    assert_eq!(r.cmd(&["SET", "k", "1"]), "+QUEUED");
    assert_eq!(
        r.cmd(&["NOSUCH", "x"]),
        "-ERR unknown command 'NOSUCH', with args beginning with: 'x' "
    );
    assert_eq!(
        r.cmd(&["GET"]),
        "-ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        r.cmd(&["SAVE"]),
        "-ERR Command not allowed inside a transaction"
    );
    assert_eq!(
        r.cmd(&["EXEC"]),
        "-EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(r.cmd(&["EXISTS", "k"]), ":0");
    // The next transaction is a fresh one.
    multi(&mut r, &[&["SET", "k", "1"]]);
    assert_eq!(r.cmd(&["EXEC"]), "[+OK]");
}

#[test]
fn watch_aborts_on_any_change_by_another_client() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let mut other = server.raw();
    let setup: &[&[&str]] = &[
        &["SET", "s", "1"],
        &["HSET", "h", "f", "1"],
        &["SADD", "set", "a"],
        &["RPUSH", "l", "a", "b"],
        &["ZADD", "z", "1", "m"],
    ];
    // Each change by `other` aborts; a read or a no-op write does not.
    let cases: &[(&str, &[&str], bool)] = &[
        ("s", &["GET", "s"], false),
        ("s", &["SET", "s", "1"], true),
        ("s", &["DEL", "s"], true),
        ("s", &["EXPIRE", "s", "100"], true),
        ("s", &["APPEND", "s", "x"], true),
        ("h", &["HGET", "h", "f"], false),
        ("h", &["HSET", "h", "g", "2"], true),
        ("h", &["HDEL", "h", "nope"], false),
        ("set", &["SADD", "set", "a"], false),
        ("set", &["SADD", "set", "b"], true),
        ("l", &["LRANGE", "l", "0", "-1"], false),
        ("l", &["LPOP", "l"], true),
        ("l", &["LSET", "l", "0", "q"], true),
        ("z", &["ZINCRBY", "z", "1", "m"], true),
        ("absent", &["DEL", "absent"], false),
        ("absent", &["SET", "absent", "1"], true),
        ("s", &["RENAME", "h", "s"], true),
        ("s", &["FLUSHALL"], true),
        ("s", &["SET", "other-key", "1"], false),
    ];
    for (key, change, aborts) in cases {
        assert_eq!(r.cmd(&["FLUSHALL"]), "+OK");
        for c in setup {
            r.cmd(c);
        }
        assert_eq!(r.cmd(&["WATCH", key]), "+OK");
        other.cmd(change);
        multi(&mut r, &[&["SET", "done", "1"]]);
        let reply = r.cmd(&["EXEC"]);
        if *aborts {
            assert_eq!(reply, "*nil", "{change:?} on {key}");
            assert_eq!(r.cmd(&["EXISTS", "done"]), ":0");
        } else {
            assert_eq!(reply, "[+OK]", "{change:?} on {key}");
        }
    }
    // UNWATCH and DISCARD forget the watched keys; EXEC does too.
    r.cmd(&["WATCH", "s"]);
    assert_eq!(r.cmd(&["UNWATCH"]), "+OK");
    other.cmd(&["SET", "s", "2"]);
    multi(&mut r, &[&["GET", "s"]]);
    assert_eq!(r.cmd(&["EXEC"]), "[$2]");
    other.cmd(&["SET", "s", "3"]);
    multi(&mut r, &[&["GET", "s"]]);
    assert_eq!(r.cmd(&["EXEC"]), "[$3]", "EXEC unwatched");
    // Several keys: a change to any one aborts.
    r.cmd(&["WATCH", "a", "b", "c"]);
    other.cmd(&["SET", "c", "1"]);
    multi(&mut r, &[&["GET", "c"]]);
    assert_eq!(r.cmd(&["EXEC"]), "*nil");
}

#[test]
fn watch_aborts_when_a_watched_key_expires() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let mut admin = server.raw();
    // Expired but not removed yet (no access, no active expiry yet: the deadline check
    // at EXEC sees it), or removed by active expiry: both abort.
    assert_eq!(r.cmd(&["SET", "k", "v", "PX", "100"]), "+OK");
    assert_eq!(r.cmd(&["WATCH", "k"]), "+OK");
    eventually(|| admin.cmd(&["EXISTS", "k"]) == ":0", "k expired");
    multi(&mut r, &[&["SET", "done", "1"]]);
    assert_eq!(r.cmd(&["EXEC"]), "*nil");
    // A key already expired when watched: its removal is no change.
    assert_eq!(r.cmd(&["SET", "k", "v", "PX", "1"]), "+OK");
    eventually(|| admin.cmd(&["DBSIZE"]) == ":0", "k expired");
    assert_eq!(r.cmd(&["WATCH", "k"]), "+OK");
    multi(&mut r, &[&["SET", "done", "1"]]);
    assert_eq!(r.cmd(&["EXEC"]), "[+OK]");
}

#[test]
fn a_push_inside_a_transaction_serves_a_waiter_only_at_exec() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let mut admin = server.raw();
    let mut waiter = server.raw();
    waiter.send(&crate::common::encode(&["BLPOP", "q", "0"]));
    eventually(
        || {
            admin
                .cmd(&["INFO", "clients"])
                .contains("blocked_clients:1\r\n")
        },
        "one blocked client",
    );
    // Pushed and popped inside one transaction: the waiter gets nothing.
    multi(
        &mut r,
        &[&["RPUSH", "q", "a", "b"], &["LPOP", "q"], &["LPOP", "q"]],
    );
    assert_eq!(r.cmd(&["EXEC"]), "[:2, $a, $b]");
    // Pushed and left: served after EXEC, with what is left at the end.
    multi(&mut r, &[&["RPUSH", "q", "c", "d"], &["LPOP", "q"]]);
    assert_eq!(r.cmd(&["EXEC"]), "[:2, $c]");
    assert_eq!(waiter.reply(), "[$q, $d]");
    assert_eq!(admin.cmd(&["EXISTS", "q"]), ":0");
}

#[test]
fn exec_is_atomic_against_other_clients() {
    // Two writers move units between two counters inside transactions; readers read
    // both in one MGET outside any transaction, pipelined, until the writers are done:
    // the sum is always constant, so no read ever falls between the two writes of a
    // transaction.
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["MSET", "x", "1000", "y", "1000"]), "+OK");
    let start = Arc::new(Barrier::new(4));
    let writers_done = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for t in 0..4 {
        let mut c = server.raw();
        let start = start.clone();
        let writers_done = writers_done.clone();
        threads.push(std::thread::spawn(move || {
            start.wait();
            if t < 2 {
                for _ in 0..200 {
                    // Work between the two writes widens the window a reader must miss.
                    let mut cmds: Vec<&[&str]> = vec![&["DECR", "x"]];
                    cmds.extend(std::iter::repeat_n(&["INCR", "pad"][..], 50));
                    cmds.push(&["INCR", "y"]);
                    multi(&mut c, &cmds);
                    let reply = c.cmd(&["EXEC"]);
                    assert!(reply.starts_with("[:"), "{reply}");
                }
                writers_done.fetch_add(1, Ordering::SeqCst);
            } else {
                let batch = crate::common::encode(&["MGET", "x", "y"]).repeat(50);
                while writers_done.load(Ordering::SeqCst) < 2 {
                    c.send(&batch);
                    for _ in 0..50 {
                        let reply = c.reply();
                        let nums: Vec<i64> = reply
                            .trim_matches(|c| c == '[' || c == ']')
                            .split(", ")
                            .map(|v| v[1..].parse().unwrap())
                            .collect();
                        assert_eq!(nums[0] + nums[1], 2000, "{reply}");
                    }
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(r.cmd(&["GET", "x"]), "$600");
    assert_eq!(r.cmd(&["GET", "y"]), "$1400");
}

#[test]
fn optimistic_increments_from_many_clients_lose_nothing() {
    // The WATCH/GET/MULTI/SET/EXEC retry loop of every Redis client library.
    let server = Server::start(&[]);
    let start = Arc::new(Barrier::new(4));
    let mut threads = Vec::new();
    for _ in 0..4 {
        let mut c = server.raw();
        let start = start.clone();
        threads.push(std::thread::spawn(move || {
            start.wait();
            let mut done = 0;
            while done < 100 {
                c.cmd(&["WATCH", "n"]);
                let v = c.cmd(&["GET", "n"]);
                let n: i64 = if v == "$nil" {
                    0
                } else {
                    v[1..].parse().unwrap()
                };
                multi(&mut c, &[&["SET", "n", &(n + 1).to_string()]]);
                if c.cmd(&["EXEC"]) == "[+OK]" {
                    done += 1;
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(server.raw().cmd(&["GET", "n"]), "$400");
}

/// At the memory limit under `noeviction`, a request queued inside `MULTI` is refused
/// with the `OOM` error and the transaction aborts; an `EXEC` that would add data is
/// refused whole (replies as `redis-server` 7.0 gives them).
#[test]
fn oom_at_queue_time_aborts_the_transaction() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "a", "1"]), "+OK");
    // Queued under the limit, executed over it: refused whole.
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    assert_eq!(r.cmd(&["SET", "b", "1"]), "+QUEUED");
    let mut other = server.raw();
    assert_eq!(other.cmd(&["CONFIG", "SET", "maxmemory", "1"]), "+OK");
    assert_eq!(
        r.cmd(&["EXEC"]),
        "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(r.cmd(&["EXISTS", "b"]), ":0");
    // Over the limit: every queued request is refused (reads too, as Redis 7.0).
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    assert_eq!(
        r.cmd(&["GET", "a"]),
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(
        r.cmd(&["SET", "b", "1"]),
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(
        r.cmd(&["EXEC"]),
        "-EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    assert_eq!(r.cmd(&["DISCARD"]), "+OK");
    // Reads outside a transaction go on; under the limit again, transactions run.
    assert_eq!(r.cmd(&["GET", "a"]), "$1");
    assert_eq!(r.cmd(&["CONFIG", "SET", "maxmemory", "0"]), "+OK");
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    assert_eq!(r.cmd(&["SET", "b", "1"]), "+QUEUED");
    assert_eq!(r.cmd(&["EXEC"]), "[+OK]");
}
