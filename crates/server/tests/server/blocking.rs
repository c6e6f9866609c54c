//! Blocking pops: clients served in the order they blocked, timeouts, a client that
//! closes while blocked, `BLMOVE` waking the destination's waiters, pipelined requests
//! after a blocking one, and the immediate cases.

use crate::common::{Server, blocked};

#[test]
fn many_clients_on_one_list_are_served_in_arrival_order() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut waiting = Vec::new();
    for i in 0..6 {
        let mut c = server.raw();
        // Half wait on two keys: the second key must not change their turn on the first.
        if i % 2 == 0 {
            c.send(&crate::common::encode(&["BLPOP", "q", "0"]));
        } else {
            c.send(&crate::common::encode(&["BRPOP", "other", "q", "0"]));
        }
        blocked(&mut admin, i + 1);
        waiting.push(c);
    }
    // One push of several elements serves several waiters, in order.
    assert_eq!(admin.cmd(&["RPUSH", "q", "a", "b", "c"]), ":3");
    assert_eq!(waiting[0].reply(), "[$q, $a]");
    assert_eq!(waiting[1].reply(), "[$q, $c]", "BRPOP pops from the tail");
    assert_eq!(waiting[2].reply(), "[$q, $b]");
    blocked(&mut admin, 3);
    // The list was emptied by the waiters (and deleted).
    assert_eq!(admin.cmd(&["EXISTS", "q"]), ":0");
    for (i, v) in ["d", "e", "f"].iter().enumerate() {
        assert_eq!(admin.cmd(&["LPUSH", "q", v]), ":1");
        assert_eq!(waiting[3 + i].reply(), format!("[$q, ${v}]"));
    }
    blocked(&mut admin, 0);
    assert_eq!(admin.cmd(&["LLEN", "q"]), ":0");
}

#[test]
fn timeouts_reply_nil_in_both_protocols() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["BLPOP", "nope", "0.05"]), "*nil");
    assert_eq!(
        r.cmd(&["BLMOVE", "nope", "dst", "LEFT", "RIGHT", "0.05"]),
        "$nil"
    );
    assert_eq!(r.cmd(&["BZPOPMAX", "nope", "0.05"]), "*nil");
    assert!(r.cmd(&["HELLO", "3"]).starts_with("%{"));
    assert_eq!(r.cmd(&["BRPOP", "nope", "0.05"]), "_");
    // Errors come at once.
    for (args, want) in [
        (
            &["BLPOP", "k", "x"][..],
            "-ERR timeout is not a float or out of range",
        ),
        (&["BLPOP", "k", "-1"], "-ERR timeout is negative"),
        (
            &["BLMOVE", "a", "b", "UP", "LEFT", "0"],
            "-ERR syntax error",
        ),
        (
            &["BLPOP", "k"],
            "-ERR wrong number of arguments for 'blpop' command",
        ),
    ] {
        assert_eq!(r.cmd(args), want, "{args:?}");
    }
    assert_eq!(r.cmd(&["SET", "s", "x"]), "+OK");
    assert_eq!(
        r.cmd(&["BLPOP", "empty", "s", "0"]),
        "-WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert!(r.cmd(&["INFO", "clients"]).contains("blocked_clients:0"));
}

#[test]
fn a_client_closing_while_blocked_is_forgotten() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut gone = server.raw();
    gone.send(&crate::common::encode(&["BLPOP", "q", "0"]));
    blocked(&mut admin, 1);
    let mut next = server.raw();
    next.send(&crate::common::encode(&["BLPOP", "q", "0"]));
    blocked(&mut admin, 2);
    drop(gone);
    blocked(&mut admin, 1);
    assert_eq!(admin.cmd(&["RPUSH", "q", "x", "y"]), ":2");
    assert_eq!(next.reply(), "[$q, $x]");
    assert_eq!(admin.cmd(&["LRANGE", "q", "0", "-1"]), "[$y]");
}

#[test]
fn blmove_wakes_the_destination_and_pipelined_requests_wait_their_turn() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut mover = server.raw();
    let mut popper = server.raw();
    let mut zpopper = server.raw();
    mover.send(&crate::common::encode(&[
        "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0",
    ]));
    blocked(&mut admin, 1);
    popper.send(&crate::common::encode(&["BLPOP", "dst", "0"]));
    // A request pipelined behind the blocking one runs after it.
    popper.send(&crate::common::encode(&["PING"]));
    blocked(&mut admin, 2);
    zpopper.send(&crate::common::encode(&["BZPOPMIN", "z", "0"]));
    blocked(&mut admin, 3);
    assert_eq!(admin.cmd(&["RPUSH", "src", "1", "2"]), ":2");
    assert_eq!(mover.reply(), "$2");
    assert_eq!(popper.reply(), "[$dst, $2]");
    assert_eq!(popper.reply(), "+PONG");
    assert_eq!(admin.cmd(&["LRANGE", "src", "0", "-1"]), "[$1]");
    assert_eq!(admin.cmd(&["EXISTS", "dst"]), ":0");
    assert_eq!(admin.cmd(&["ZADD", "z", "2", "b", "1", "a"]), ":2");
    assert_eq!(zpopper.reply(), "[$z, $a, $1]");
    assert_eq!(admin.cmd(&["ZRANGE", "z", "0", "-1"]), "[$b]");
    // Data present: no blocking at all.
    assert_eq!(admin.cmd(&["BRPOPLPUSH", "src", "dst", "0"]), "$1");
    assert_eq!(admin.cmd(&["BZPOPMAX", "z", "nope", "0"]), "[$z, $b, $2]");
    blocked(&mut admin, 0);
}

#[test]
fn a_list_of_another_type_keeps_the_waiter_blocked() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    let mut c = server.raw();
    c.send(&crate::common::encode(&["BLPOP", "k", "0"]));
    blocked(&mut admin, 1);
    // A sorted set under the key does not serve a list waiter (Redis 7.0).
    assert_eq!(admin.cmd(&["ZADD", "k", "1", "m"]), ":1");
    assert_eq!(admin.cmd(&["DEL", "k"]), ":1");
    blocked(&mut admin, 1);
    assert_eq!(admin.cmd(&["LPUSH", "k", "v"]), ":1");
    assert_eq!(c.reply(), "[$k, $v]");
}
