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
    let info: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    let field = |f: &str| -> usize {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{f}:")))
            .map_or(0, |v| v.trim().parse().unwrap())
    };
    field("used_memory")
        .checked_sub(field("mem_clients_normal"))
        .unwrap_or_else(|| panic!("{info}"))
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
        assert_eq!(r.cmd(&["SET", &k, &big[..3 * MB], "PX", "1000000"]), "+OK");
    }
    assert!(held(&mut c) >= 9 * MB);
    for i in 0..3 {
        assert_eq!(r.cmd(&["PEXPIRE", &format!("e{i}"), "1"]), ":1");
    }
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
    // (The request buffer holding the value counts too, as in Redis.)
    let mut stored = 0;
    let oom = loop {
        match r.cmd(&["SET", &format!("k{stored}"), &big]).as_str() {
            "+OK" if stored < 5 => stored += 1,
            other => break other.to_string(),
        }
    };
    assert_eq!(
        oom,
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    assert!(stored >= 2, "{stored} stored");
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

/// Clients' buffers count in `used_memory` (`mem_clients_normal`) and so in the
/// `maxmemory` check, as in Redis: a large reply the client does not read, a large
/// request still arriving; both go when the client disconnects.
#[test]
fn connection_buffers_count_in_used_memory() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let clients = |c: &mut redis::Connection| info_field(c, "mem_clients_normal").unwrap();
    let used = |c: &mut redis::Connection| info_field(c, "used_memory").unwrap();
    assert_eq!(info_field(&mut c, "mem_clients_slaves"), Some(0));
    let idle = clients(&mut c);
    assert!(idle < 256 * 1024, "idle connections hold {idle}");
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "k", &"x".repeat(5 * MB)]), "+OK");
    // The request buffer that took 5 MiB is given back once empty.
    eventually(
        || clients(&mut c) < idle + 256 * 1024,
        "the request buffer to shrink",
    );
    let keys = keyspace(&mut c);
    // 40 MiB of replies, never read: more than the sockets' buffers hold.
    let mut mget = vec!["MGET"];
    mget.extend(["k"; 8]);
    r.send(&crate::common::encode(&mget));
    eventually(|| clients(&mut c) > 20 * MB, "the pending replies to count");
    assert!(used(&mut c) > keys + 20 * MB);
    // They count against the limit: another client's write is refused.
    let limit = (keys + 10 * MB).to_string();
    assert_eq!(
        redis::cmd("CONFIG")
            .arg(&["SET", "maxmemory", &limit])
            .query::<String>(&mut c)
            .unwrap(),
        "OK"
    );
    let e = redis::cmd("SET")
        .arg(&["a", "b"])
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("OOM"), "{e}");
    drop(r);
    eventually(|| clients(&mut c) < idle + 256 * 1024, "the replies to go");
    let ok: String = redis::cmd("SET").arg(&["a", "b"]).query(&mut c).unwrap();
    assert_eq!(ok, "OK");
    // A large request still arriving counts too.
    let mut r = server.raw();
    let mut partial = format!("*3\r\n$3\r\nSET\r\n$1\r\nq\r\n${}\r\n", 16 * MB).into_bytes();
    partial.extend(std::iter::repeat_n(b'y', 8 * MB));
    r.send(&partial);
    eventually(|| clients(&mut c) > 8 * MB, "the request buffer to count");
    drop(r);
    eventually(
        || clients(&mut c) < idle + 256 * 1024,
        "the request buffer to go",
    );
}
