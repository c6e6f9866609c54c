//! String values over the indexes' 1 MiB value limit, stored out of line: every way a
//! key goes (`DEL`, `UNLINK`, `GETDEL`, overwrite, `RENAME` over it, expiry, `FLUSHALL`,
//! eviction) frees the buffer, so the memory accounting returns to its baseline; `WATCH`
//! sees every change; `MEMORY USAGE` counts the buffer. The replies themselves are
//! compared with `redis-server` in `tests/differential/large.rs`.

use crate::common::{Raw, Server, eventually};

fn info_field(c: &mut redis::Connection, field: &str) -> Option<usize> {
    let info: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().parse().unwrap())
}

/// `used_memory` less the clients' buffers: what the keyspace holds.
fn keyspace(c: &mut redis::Connection) -> usize {
    info_field(c, "used_memory").unwrap() - info_field(c, "mem_clients_normal").unwrap_or(0)
}

const MB: usize = 1 << 20;

#[test]
fn every_way_a_key_goes_frees_its_buffer() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let mut r = server.raw();
    let base = keyspace(&mut c);
    let big = "b".repeat(20 * MB);
    let held = |c: &mut redis::Connection| keyspace(c) - base;
    let set = |r: &mut Raw, k: &str| assert_eq!(r.cmd(&["SET", k, &big]), "+OK");
    set(&mut r, "k");
    assert!(held(&mut c) >= 20 * MB, "{}", held(&mut c));
    assert_eq!(r.cmd(&["SET", "s", "short"]), "+OK");
    let mut usage = |k: &str| -> usize { r.cmd(&["MEMORY", "USAGE", k])[1..].parse().unwrap() };
    let extra = usage("k") - usage("s");
    assert!(
        (20 * MB..20 * MB + 1024).contains(&extra),
        "MEMORY USAGE: {extra} more"
    );
    assert_eq!(r.cmd(&["DEL", "s"]), ":1");
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "k"]), "$raw");
    let gone: [&[&str]; 6] = [
        &["DEL", "k"],
        &["UNLINK", "k"],
        &["GETDEL", "k"],
        &["SET", "k", "short"],
        &["RENAME", "other", "k"],
        &["FLUSHALL"],
    ];
    for cmd in gone {
        set(&mut r, "k");
        r.cmd(&["SET", "other", "x"]);
        let reply = r.cmd(cmd);
        assert!(!reply.starts_with('-'), "{cmd:?}: {reply}");
        r.cmd(&["DEL", "k", "other"]);
        assert!(held(&mut c) < 64 * 1024, "{cmd:?} leaves {}", held(&mut c));
    }
    // Growth across the line and back.
    assert_eq!(r.cmd(&["SET", "k", &big[..MB - 20]]), "+OK");
    assert_eq!(
        r.cmd(&["APPEND", "k", &big[..100]]),
        format!(":{}", MB + 80)
    );
    assert_eq!(r.cmd(&["SETRANGE", "k", "0", "x"]), format!(":{}", MB + 80));
    assert_eq!(r.cmd(&["SET", "k", "short"]), "+OK");
    assert_eq!(r.cmd(&["DEL", "k"]), ":1");
    assert!(held(&mut c) < 64 * 1024, "growth leaves {}", held(&mut c));
    // Active expiry (nobody reads the key).
    for i in 0..3 {
        let k = format!("e{i}");
        assert_eq!(r.cmd(&["SET", &k, &big[..3 * MB], "PX", "50"]), "+OK");
    }
    assert!(held(&mut c) >= 9 * MB);
    eventually(|| held(&mut c) < 64 * 1024, "expiry to free the buffers");
    assert_eq!(r.cmd(&["DBSIZE"]), ":0");
}

#[test]
fn eviction_frees_large_values() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let mut r = server.raw();
    let base = keyspace(&mut c);
    let limit = base + 50 * MB;
    let limit_s = limit.to_string();
    assert_eq!(r.cmd(&["CONFIG", "SET", "maxmemory", &limit_s]), "+OK");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        "+OK"
    );
    let big = "v".repeat(10 * MB);
    for i in 0..12 {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), &big]), "+OK");
        let used = keyspace(&mut c);
        assert!(used <= limit + MB, "write {i}: {used} over {limit}");
    }
    let keys: usize = r.cmd(&["DBSIZE"])[1..].parse().unwrap();
    assert!(
        (3..=5).contains(&keys),
        "{keys} keys of 10 MiB under 50 MiB"
    );
    assert_eq!(r.cmd(&["FLUSHALL"]), "+OK");
    assert!(keyspace(&mut c) < base + 64 * 1024);
    // Under noeviction a large write is refused at the limit, reads go on.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
        "+OK"
    );
    for i in 0..4 {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), &big]), "+OK");
    }
    assert_eq!(
        r.cmd(&["SET", "k9", &big]),
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(r.cmd(&["STRLEN", "k0"]), format!(":{}", 10 * MB));
}

#[test]
fn watch_sees_every_change_of_a_large_value() {
    let server = Server::start(&[]);
    let mut a = server.raw();
    let mut b = server.raw();
    let big = "w".repeat(3 * MB);
    assert_eq!(a.cmd(&["SET", "k", &big]), "+OK");
    let changes: [&[&str]; 5] = [
        &["SET", "k", &big],
        &["APPEND", "k", "x"],
        &["SETRANGE", "k", "5", "y"],
        &["PEXPIRE", "k", "100000"],
        &["GETDEL", "k"],
    ];
    for change in changes {
        a.cmd(&["SET", "k", &big]);
        assert_eq!(a.cmd(&["WATCH", "k"]), "+OK");
        assert!(!b.cmd(change).starts_with('-'), "{}", change[0]);
        assert_eq!(a.cmd(&["MULTI"]), "+OK");
        assert_eq!(a.cmd(&["STRLEN", "k"]), "+QUEUED");
        assert_eq!(a.cmd(&["EXEC"]), "*nil", "{} is a change", change[0]);
    }
    // No change: EXEC runs.
    assert_eq!(a.cmd(&["SET", "k", &big]), "+OK");
    assert_eq!(a.cmd(&["WATCH", "k"]), "+OK");
    assert_eq!(b.cmd(&["GET", "k"]).len(), big.len() + 1);
    assert_eq!(a.cmd(&["MULTI"]), "+OK");
    assert_eq!(a.cmd(&["STRLEN", "k"]), "+QUEUED");
    assert_eq!(a.cmd(&["EXEC"]), format!("[:{}]", big.len()));
}
