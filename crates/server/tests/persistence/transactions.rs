//! Transactions in the append-only file: a transaction's writes replay whole, and a
//! crash in the middle of writing its frame replays none of it.

use super::{aof_args, dir};
use crate::common::{Raw, Server};

/// Runs one transaction over strings, a list, a hash and a delete, then stops cleanly.
fn write_transaction(d: &std::path::Path) {
    let mut server = Server::start(&aof_args(d, "always"));
    let mut r: Raw = server.raw();
    assert_eq!(r.cmd(&["SET", "before", "1"]), "+OK");
    assert_eq!(r.cmd(&["MULTI"]), "+OK");
    for c in [
        &["SET", "a", "1"][..],
        &["RPUSH", "l", "x", "y"],
        &["HSET", "h", "f", "v"],
        &["INCR", "n"],
        &["DEL", "before"],
    ] {
        assert_eq!(r.cmd(c), "+QUEUED");
    }
    assert_eq!(r.cmd(&["EXEC"]), "[+OK, :2, :1, :1, :1]");
    r.send(&crate::common::encode(&["SHUTDOWN"]));
    assert!(server.wait_exit());
}

#[test]
fn a_transaction_replays_whole_or_not_at_all() {
    let d = dir("txn-whole");
    write_transaction(&d);
    let server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    assert_eq!(r.cmd(&["MGET", "a", "n", "before"]), "[$1, $1, $nil]");
    assert_eq!(r.cmd(&["LRANGE", "l", "0", "-1"]), "[$x, $y]");
    assert_eq!(r.cmd(&["HGET", "h", "f"]), "$v");
    drop(server);

    // Torn inside the transaction's frame (its last bytes, the `DEL before` record):
    // none of the transaction's writes come back, not only its last one.
    let d = dir("txn-torn");
    write_transaction(&d);
    let path = d.join("appendonly.aof");
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() - 5]).unwrap();
    let server = Server::start(&aof_args(&d, "always"));
    assert!(
        server.early.iter().any(|l| l.contains("torn write")),
        "{:?}",
        server.early
    );
    let mut r = server.raw();
    assert_eq!(r.cmd(&["MGET", "a", "n", "before"]), "[$nil, $nil, $1]");
    assert_eq!(r.cmd(&["EXISTS", "l", "h"]), ":0");
}
