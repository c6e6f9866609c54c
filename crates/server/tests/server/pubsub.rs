//! Pub/Sub: delivery between connections in RESP2 and RESP3, patterns, the replies of
//! (un)subscription and `PUBSUB`, subscribed mode, `RESET` and close unsubscribing,
//! `PUBLISH` in a transaction, and a subscriber that never reads being disconnected at
//! the `pubsub` output-buffer limit while the publisher keeps going.

use std::time::Instant;

use crate::common::{DEADLINE, Server, encode, eventually};

#[test]
fn messages_reach_channel_and_pattern_subscribers() {
    let server = Server::start(&[]);
    let mut sub = server.raw();
    let mut publisher = server.raw();
    sub.send(&encode(&["SUBSCRIBE", "news", "sport"]));
    assert_eq!(sub.reply(), "[$subscribe, $news, :1]");
    assert_eq!(sub.reply(), "[$subscribe, $sport, :2]");
    assert_eq!(sub.cmd(&["PSUBSCRIBE", "n*"]), "[$psubscribe, $n*, :3]");
    assert_eq!(publisher.cmd(&["PUBLISH", "news", "hello"]), ":2");
    assert_eq!(sub.reply(), "[$message, $news, $hello]");
    assert_eq!(sub.reply(), "[$pmessage, $n*, $news, $hello]");
    assert_eq!(publisher.cmd(&["PUBLISH", "nothing", "x"]), ":1");
    assert_eq!(sub.reply(), "[$pmessage, $n*, $nothing, $x]");
    assert_eq!(publisher.cmd(&["PUBLISH", "other", "x"]), ":0");
    assert_eq!(publisher.cmd(&["PUBLISH", "sport", "goal"]), ":1");
    assert_eq!(sub.reply(), "[$message, $sport, $goal]");

    // RESP3: push frames, and any command is allowed.
    let mut sub3 = server.raw();
    sub3.send(&encode(&["HELLO", "3"]));
    sub3.reply();
    assert_eq!(sub3.cmd(&["SUBSCRIBE", "news"]), ">[$subscribe, $news, :1]");
    assert_eq!(sub3.cmd(&["SET", "k", "v"]), "+OK");
    assert_eq!(sub3.cmd(&["PING"]), "+PONG");
    assert_eq!(publisher.cmd(&["PUBLISH", "news", "m"]), ":3");
    assert_eq!(sub3.reply(), ">[$message, $news, $m]");
    assert_eq!(sub.reply(), "[$message, $news, $m]");
    assert_eq!(sub.reply(), "[$pmessage, $n*, $news, $m]");
}

#[test]
fn unsubscribe_replies_and_pubsub_counts() {
    let server = Server::start(&[]);
    let mut a = server.raw();
    let mut b = server.raw();
    let mut q = server.raw();
    assert_eq!(a.cmd(&["UNSUBSCRIBE"]), "[$unsubscribe, $nil, :0]");
    assert_eq!(a.cmd(&["PUNSUBSCRIBE"]), "[$punsubscribe, $nil, :0]");
    a.send(&encode(&["SUBSCRIBE", "c1", "c2"]));
    a.reply();
    a.reply();
    assert_eq!(a.cmd(&["PSUBSCRIBE", "c*"]), "[$psubscribe, $c*, :3]");
    assert_eq!(b.cmd(&["SUBSCRIBE", "c1"]), "[$subscribe, $c1, :1]");
    assert_eq!(b.cmd(&["PSUBSCRIBE", "c*"]), "[$psubscribe, $c*, :2]");
    assert_eq!(
        q.cmd(&["PUBSUB", "NUMSUB", "c1", "c2", "c3"]),
        "[$c1, :2, $c2, :1, $c3, :0]"
    );
    assert_eq!(q.cmd(&["PUBSUB", "NUMPAT"]), ":1");
    let list = q.cmd(&["CLIENT", "LIST"]);
    assert!(list.contains("flags=P db=0 sub=2 psub=1 "), "{list}");
    assert!(list.contains("flags=N db=0 sub=0 psub=0 "), "{list}");
    let info = q.cmd(&["INFO", "stats"]);
    assert!(
        info.contains("pubsub_channels:2\r\npubsub_patterns:1\r\n"),
        "{info}"
    );
    let channels = q.cmd(&["PUBSUB", "CHANNELS"]);
    assert!(
        channels == "[$c1, $c2]" || channels == "[$c2, $c1]",
        "{channels}"
    );
    assert_eq!(q.cmd(&["PUBSUB", "CHANNELS", "*2"]), "[$c2]");
    // Unsubscribing from everything confirms each channel, in some order.
    a.send(&encode(&["UNSUBSCRIBE"]));
    let mut got = [a.reply(), a.reply()];
    got.sort();
    assert!(
        got[0].starts_with("[$unsubscribe, $c1, :") && got[1].starts_with("[$unsubscribe, $c2, :")
    );
    assert_eq!(a.cmd(&["PUNSUBSCRIBE"]), "[$punsubscribe, $c*, :0]");
    assert_eq!(a.cmd(&["GET", "k"]), "$nil", "out of subscribed mode");
    // RESET and close unsubscribe.
    assert_eq!(b.cmd(&["RESET"]), "+RESET");
    assert_eq!(q.cmd(&["PUBSUB", "NUMSUB", "c1"]), "[$c1, :0]");
    assert_eq!(q.cmd(&["PUBSUB", "NUMPAT"]), ":0");
    assert_eq!(b.cmd(&["SUBSCRIBE", "c9"]), "[$subscribe, $c9, :1]");
    drop(b);
    eventually(
        || q.cmd(&["PUBSUB", "NUMSUB", "c9"]) == "[$c9, :0]",
        "a closed subscriber to be unsubscribed",
    );
    assert_eq!(q.cmd(&["PUBLISH", "c9", "x"]), ":0");
}

#[test]
fn subscribed_mode_allows_only_subscription_commands() {
    let server = Server::start(&[]);
    let mut c = server.raw();
    c.cmd(&["SUBSCRIBE", "ch"]);
    assert_eq!(
        c.cmd(&["GET", "k"]),
        "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "maxmemory"]),
        "-ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    );
    assert_eq!(c.cmd(&["PING"]), "[$pong, $]");
    assert_eq!(c.cmd(&["PING", "hi"]), "[$pong, $hi]");
    assert_eq!(c.cmd(&["RESET"]), "+RESET");
    assert_eq!(c.cmd(&["PING"]), "+PONG");
    assert_eq!(c.cmd(&["QUIT"]), "+OK");
}

#[test]
fn publish_inside_a_transaction() {
    let server = Server::start(&[]);
    let mut sub = server.raw();
    let mut tx = server.raw();
    sub.cmd(&["SUBSCRIBE", "ch"]);
    assert_eq!(tx.cmd(&["MULTI"]), "+OK");
    assert_eq!(tx.cmd(&["PUBLISH", "ch", "one"]), "+QUEUED");
    assert_eq!(tx.cmd(&["SET", "k", "v"]), "+QUEUED");
    assert_eq!(tx.cmd(&["PUBLISH", "ch", "two"]), "+QUEUED");
    assert_eq!(tx.cmd(&["EXEC"]), "[:1, +OK, :1]");
    assert_eq!(sub.reply(), "[$message, $ch, $one]");
    assert_eq!(sub.reply(), "[$message, $ch, $two]");
}

/// A subscriber that never reads is closed once the bytes waiting for it pass the hard
/// limit; every `PUBLISH` meanwhile gets its reply (a publisher never waits for it).
#[test]
fn slow_subscriber_is_disconnected_and_never_blocks_publishers() {
    let server = Server::start(&[]);
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 256kb 0 0"
        ]),
        "+OK"
    );
    assert_eq!(
        admin.cmd(&["CONFIG", "GET", "client-output-buffer-limit"]),
        "[$client-output-buffer-limit, $normal 0 0 0 slave 268435456 67108864 60 pubsub 262144 0 0]"
    );
    let mut slow = server.raw();
    assert_eq!(
        slow.cmd(&["SUBSCRIBE", "flood"]),
        "[$subscribe, $flood, :1]"
    );
    let mut fast = server.raw();
    assert_eq!(fast.cmd(&["SUBSCRIBE", "calm"]), "[$subscribe, $calm, :1]");
    let mut publisher = server.raw();
    let payload = "x".repeat(64 * 1024);
    let start = Instant::now();
    let mut sent = 0u64;
    // Publish until the server drops the slow subscriber (the socket buffers take a few
    // MB first); each PUBLISH must answer, so a publisher blocked on it fails the test at
    // the read timeout.
    loop {
        let n = publisher.cmd(&["PUBLISH", "flood", &payload]);
        sent += 1;
        if n == ":0" {
            break;
        }
        assert_eq!(n, ":1");
        assert!(
            start.elapsed() < DEADLINE,
            "the slow subscriber was not disconnected ({sent} messages)"
        );
    }
    assert_eq!(
        publisher.cmd(&["PUBSUB", "NUMSUB", "flood"]),
        "[$flood, :0]"
    );
    // The slow connection is closed (after whatever the kernel had buffered).
    assert!(slow.closed());
    // Other subscribers are untouched.
    assert_eq!(publisher.cmd(&["PUBLISH", "calm", "ok"]), ":1");
    assert_eq!(fast.reply(), "[$message, $calm, $ok]");
}
