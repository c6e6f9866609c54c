//! Framing and limits: inline requests, pipelining, malformed input, and the limits on
//! bulks, the query buffer, clients and the output buffer.

use std::io::Write as _;

use crate::common::{Server, encode, eventually};

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
    // A value over the index's 1 MiB is stored out of line (`tests/server/large.rs`).
    let huge = "v".repeat(1024 * 1024);
    assert_eq!(r.cmd(&["SET", "k", &huge]), "+OK");
    assert_eq!(r.cmd(&["STRLEN", "k"]), ":1048576");
    big_server.child.kill().unwrap();
    assert!(!big_server.wait_exit());
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

/// The collection types' limits: a key, member or field over the element index's key
/// limit, a list element or hash value over a string's limit: an error, nothing changed.
#[test]
fn collection_limits_are_errors_that_change_nothing() {
    let server = Server::start(&["--hash-max-listpack-entries", "2"]);
    let mut r = server.raw();
    let long_key = "k".repeat(70_000);
    let long_member = "m".repeat(65_520);
    let ok_member = "m".repeat(65_519);
    let huge = "v".repeat(1024 * 1024);
    let key_err = "-ERR key too long (limit 65528 bytes)";
    let member_err = "-ERR member too long (limit 65519 bytes)";
    for args in [
        &["HSET", &long_key, "f", "v"][..],
        &["SADD", &long_key, "m"],
        &["RPUSH", &long_key, "e"],
        &["ZADD", &long_key, "1", "m"],
    ] {
        assert_eq!(r.cmd(args), key_err, "{}", args[0]);
    }
    for args in [
        &["HSET", "h", &long_member, "v"][..],
        &["HSETNX", "h", &long_member, "v"],
        &["HINCRBY", "h", &long_member, "1"],
        &["SADD", "s", "a", &long_member],
        &["SMOVE", "s", "t", &long_member],
        &["ZADD", "z", "1", "a", "2", &long_member],
        &["ZINCRBY", "z", "1", &long_member],
    ] {
        assert_eq!(r.cmd(args), member_err, "{}", args[0]);
    }
    for args in [
        &["HSET", "h", "f", &huge][..],
        &["RPUSH", "l", "a", &huge],
        &["LPUSHX", "l", &huge],
    ] {
        assert!(
            r.cmd(args)
                .starts_with("-ERR collection element exceeds maximum allowed size"),
            "{}",
            args[0]
        );
    }
    assert_eq!(r.cmd(&["DBSIZE"]), ":0");
    // At the limits: accepted, in both representations.
    assert_eq!(
        r.cmd(&["HSET", "h", &ok_member, "v", "a", "1", "b", "2"]),
        ":3"
    );
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "h"]), "$hashtable");
    assert_eq!(r.cmd(&["HSTRLEN", "h", &ok_member]), ":1");
    assert_eq!(r.cmd(&["SADD", "s", &ok_member]), ":1");
    assert_eq!(r.cmd(&["ZADD", "z", "1", &ok_member]), ":1");
    let big = "e".repeat(1024 * 1024 - 13);
    assert_eq!(r.cmd(&["RPUSH", "l", &big, "x"]), ":2");
    assert_eq!(r.cmd(&["LINDEX", "l", "0"]).len(), big.len() + 1);
    assert_eq!(r.cmd(&["HSET", "h", "big", &big]), ":1");
    // A failed change of an existing collection leaves it as it was.
    assert!(
        r.cmd(&["HSET", "h", "c", "3", "big", &huge])
            .starts_with("-ERR")
    );
    assert_eq!(r.cmd(&["HLEN", "h"]), ":4");
    assert_eq!(r.cmd(&["HEXISTS", "h", "c"]), ":0");
}
