//! Limits and time: a line without a newline past 2048 bytes closes the connection (a
//! multi-get may be longer), the item size limit (`-I`) at its exact boundary with the
//! refused data skipped, the connection limit, expiry taking effect on both servers, and
//! the memory limit evicting (and, with eviction off, refusing writes).

use std::time::Instant;

use crate::common::DEADLINE;
use crate::harness::{Conn, ONE_MEMCACHED, Reply, start_memcached, start_ours};

/// The longest data `set k` (1-byte key, zero flags) may store under `-I 1m`:
/// memcached's item is 48 + 8 + key + 1 + data + 2 bytes.
const MAX_DATA: usize = (1 << 20) - 48 - 8 - 2 - 2;

#[test]
fn line_length_item_size_and_expiry_match_memcached() {
    let _one = ONE_MEMCACHED.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_mc, mport)) = start_memcached(&["-m", "64", "-I", "1m", "-t", "1"]) else {
        return;
    };
    let (_server, oport) = start_ours(&[]);
    for port in [oport, mport] {
        let who = if port == oport {
            "orrery-server"
        } else {
            "memcached"
        };
        let mut c = Conn::connect(port);
        // Item size: the largest item fits, one byte more is refused and its data skipped.
        let ok = format!("set k 0 0 {MAX_DATA}\r\n{}\r\n", "x".repeat(MAX_DATA));
        assert_eq!(c.text(&ok), "STORED\r\n", "{who}");
        let big = MAX_DATA + 1;
        let refused = format!("set k 0 0 {big}\r\n{}\r\n", "x".repeat(big));
        assert_eq!(
            c.text(&refused),
            "SERVER_ERROR object too large for cache\r\n",
            "{who}"
        );
        // The failed set dropped the old value; flags make the item 4 bytes larger.
        assert_eq!(c.text("get k\r\n"), "END\r\n", "{who}");
        let flagged = format!("set k 1 0 {MAX_DATA}\r\n{}\r\n", "x".repeat(MAX_DATA));
        assert_eq!(
            c.text(&flagged),
            "SERVER_ERROR object too large for cache\r\n",
            "{who}"
        );
        let quiet = format!("set k 0 0 {big} noreply\r\n{}\r\n", "x".repeat(big));
        assert_eq!(c.text(&quiet), "", "{who}");
        let ms = format!("ms k {big} T0\r\n{}\r\n", "x".repeat(big));
        assert_eq!(
            c.text(&ms),
            "SERVER_ERROR object too large for cache\r\n",
            "{who}"
        );
        // A multi-get line longer than 2048 bytes is served.
        let keys: Vec<String> = (0..400).map(|i| format!("key{i}")).collect();
        assert_eq!(
            c.text(&format!("get {}\r\n", keys.join(" "))),
            "END\r\n",
            "{who}"
        );
        // Expiry: an item set to live one second is gone within the deadline.
        assert_eq!(c.text("set e 0 1 1\r\nx\r\n"), "STORED\r\n", "{who}");
        let start = Instant::now();
        while c.text("get e\r\n") != "END\r\n" {
            assert!(start.elapsed() < DEADLINE, "{who}: the item never expired");
        }
        // Any other line without a newline past 2048 bytes closes the connection.
        c.send(&vec![b'x'; 4096]);
        assert_eq!(c.read_to_close(), "", "{who}");
    }
}

#[test]
fn connection_limit() {
    let (_server, port) = start_ours(&["--memcache-max-conns", "3"]);
    let mut open: Vec<Conn> = (0..3).map(|_| Conn::connect(port)).collect();
    for c in &mut open {
        assert_eq!(c.text("version\r\n"), "VERSION 1.6.18\r\n");
    }
    let mut extra = Conn::connect(port);
    assert_eq!(extra.read_to_close(), "ERROR Too many open connections\r\n");
    drop(open.pop());
    // The slot is freed when the server sees the close: retry until it is.
    let start = Instant::now();
    loop {
        let mut c = Conn::connect(port);
        if let Reply::Text(t) = c.request(b"version\r\n") {
            assert_eq!(t, "VERSION 1.6.18\r\n");
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the closed connection's slot was never freed"
        );
    }
}

#[test]
fn memory_limit_evicts_or_refuses() {
    let value = "v".repeat(1000);
    // 1 MiB of items with 1,000-byte values: at most ~1,000 fit; write 5,000.
    let (_server, port) = start_ours(&["--memcache-memory", "2"]);
    let mut c = Conn::connect(port);
    for i in 0..5000 {
        assert_eq!(
            c.text(&format!("set key{i} 0 0 1000\r\n{value}\r\n")),
            "STORED\r\n"
        );
    }
    let stats = c.text("stats\r\n");
    let stat = |name: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("STAT {name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
    };
    assert!(stat("evictions") >= 2500, "{stats}");
    assert!(stat("curr_items") <= 2500, "{stats}");
    // The most recent items are kept.
    assert!(
        c.text("get key4999\r\n")
            .starts_with("VALUE key4999 0 1000")
    );

    let (_server, port) = start_ours(&["--memcache-memory", "2", "--memcache-evict", "no"]);
    let mut c = Conn::connect(port);
    let mut refused = 0;
    for i in 0..5000 {
        match c
            .text(&format!("set key{i} 0 0 1000\r\n{value}\r\n"))
            .as_str()
        {
            "STORED\r\n" => {}
            "SERVER_ERROR out of memory storing object\r\n" => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(refused >= 2500, "only {refused} writes refused");
    assert!(c.text("stats\r\n").contains("STAT evictions 0\r\n"));
    // Reads go on.
    assert!(c.text("get key0\r\n").starts_with("VALUE key0 0 1000"));
}
