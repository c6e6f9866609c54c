//! String values over the indexes' 1 MiB value limit (stored out of line by
//! `orrery-server`), through every string command, against `redis-server`: values at the
//! inline limit and one byte either side of it, 1 MiB ± 1, 3 MiB and 20 MiB; values that
//! cross the limit both ways (`APPEND` and `SETRANGE` growing a short value past it, `SET`
//! and `GETSET` replacing a long one with a short one); and `proto-max-bulk-len` refusing
//! a longer bulk argument, `APPEND` and `SETRANGE` exactly as Redis does.

use super::Both;
use crate::common::Value;

/// The longest value kept inline: 1 MiB less the 13-byte value header.
const INLINE: usize = 1024 * 1024 - 13;

/// A short rendering of a reply for failure messages (values here are megabytes).
fn show(v: &Value) -> String {
    match v {
        Value::Bulk(b) if b.len() > 40 => format!(
            "<{} bytes {:?}…>",
            b.len(),
            String::from_utf8_lossy(&b[..16])
        ),
        Value::Array(xs) => format!("[{}]", xs.iter().map(show).collect::<Vec<_>>().join(", ")),
        other => format!("{other:?}"),
    }
}

fn show_args(args: &[&str]) -> String {
    args.iter()
        .map(|a| {
            if a.len() > 40 {
                format!("<{} bytes>", a.len())
            } else {
                (*a).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Sends `args` to both servers; their replies must be equal.
fn same(both: &mut Both, args: &[&str]) -> Value {
    let a = both.ours.cmd_value(args);
    let b = both.theirs.cmd_value(args);
    assert!(
        a == b,
        "{}: orrery {} / redis {}",
        show_args(args),
        show(&a),
        show(&b)
    );
    a
}

/// `n` bytes of a pattern that starts with `tag` (so values of one size differ).
fn value(n: usize, tag: u8) -> String {
    (0..n)
        .map(|i| char::from(b'a' + ((i as u8).wrapping_add(tag)) % 26))
        .collect()
}

#[test]
fn large_values_through_every_string_command() {
    let Some(mut both) = Both::start() else {
        return;
    };
    let b = &mut both;
    let far = "4102444800000"; // 2100-01-01, an absolute deadline both servers report
    for n in [
        INLINE - 1,
        INLINE,
        INLINE + 1,
        1024 * 1024 - 1,
        1024 * 1024,
        1024 * 1024 + 1,
        3 << 20,
        20 << 20,
    ] {
        let v = value(n, 0);
        let w = value(n, 7);
        let ns = n.to_string();
        same(b, &["FLUSHALL"]);
        same(b, &["SET", "k", &v]);
        same(b, &["GET", "k"]);
        same(b, &["STRLEN", "k"]);
        same(b, &["TYPE", "k"]);
        same(b, &["OBJECT", "ENCODING", "k"]);
        for (s, e) in [
            ("0", "9"),
            ("-10", "-1"),
            (&*(n - 5).to_string(), &*(n + 5).to_string()),
            ("5", "2"),
            ("1000", "-1000"),
        ] {
            same(b, &["GETRANGE", "k", s, e]);
        }
        // Growing: APPEND, SETRANGE past the end (zero-filled), SETRANGE inside.
        same(b, &["APPEND", "k", "tail"]);
        same(b, &["GETRANGE", "k", "-8", "-1"]);
        same(b, &["SETRANGE", "k", &(n + 10).to_string(), "end"]);
        same(b, &["STRLEN", "k"]);
        same(b, &["GETRANGE", "k", "-20", "-1"]);
        same(b, &["SETRANGE", "k", "3", "mid"]);
        same(b, &["GET", "k"]);
        // Counters refuse it.
        for c in [
            &["INCR", "k"][..],
            &["DECR", "k"],
            &["INCRBY", "k", "5"],
            &["DECRBY", "k", "5"],
            &["INCRBYFLOAT", "k", "1.5"],
        ] {
            same(b, c);
        }
        // Keys: COPY, RENAME, RENAMENX, MOVE's database errors aside.
        same(b, &["COPY", "k", "c"]);
        same(b, &["COPY", "k", "c"]);
        same(b, &["SET", "k", &w]);
        same(b, &["GET", "c"]);
        same(b, &["COPY", "k", "c", "REPLACE"]);
        same(b, &["GET", "c"]);
        same(b, &["RENAME", "c", "r"]);
        same(b, &["EXISTS", "c", "r"]);
        same(b, &["GET", "r"]);
        same(b, &["RENAMENX", "r", "k"]);
        same(b, &["RENAMENX", "r", "r2"]);
        same(b, &["GET", "r2"]);
        // MSET, MSETNX, MGET, GETSET.
        same(b, &["MSET", "m1", &v, "m2", "small", "m3", &w]);
        same(b, &["MGET", "m1", "m2", "nosuch", "m3", "k"]);
        same(b, &["MSETNX", "m1", "x", "n3", &v]);
        same(b, &["MSETNX", "n1", &v, "n2", &w]);
        same(b, &["MGET", "n1", "n2"]);
        same(b, &["GETSET", "m1", "short"]);
        same(b, &["GET", "m1"]);
        same(b, &["GETSET", "m2", &w]);
        same(b, &["GET", "m2"]);
        // SET's options, GETEX, GETDEL, deadlines.
        same(b, &["SET", "s", &v, "PXAT", far]);
        same(b, &["PEXPIRETIME", "s"]);
        same(b, &["SET", "s", &w, "KEEPTTL", "GET"]);
        same(b, &["PEXPIRETIME", "s"]);
        same(b, &["GETEX", "s", "PERSIST"]);
        same(b, &["PEXPIRETIME", "s"]);
        same(b, &["GETEX", "s", "PXAT", far]);
        same(b, &["PEXPIRETIME", "s"]);
        same(b, &["SET", "s", &v, "NX"]);
        same(b, &["SET", "s", "tiny", "XX", "GET"]);
        same(b, &["SET", "s", &v, "XX", "GET"]);
        same(b, &["SET", "t", &w, "NX", "GET"]);
        same(b, &["SETNX", "t", &v]);
        same(b, &["GETDEL", "t"]);
        same(b, &["EXISTS", "t"]);
        same(b, &["SETEX", "t", "1000", &v]);
        same(b, &["PSETEX", "t", "1000000", &w]);
        same(b, &["GET", "t"]);
        // Across the line both ways: grown from short by APPEND and SETRANGE, replaced
        // by a short value.
        same(b, &["SET", "a", &v[..n.saturating_sub(10)]]);
        same(b, &["APPEND", "a", &w[..20]]);
        same(b, &["GET", "a"]);
        same(b, &["SETRANGE", "z", &ns, "x"]);
        same(b, &["STRLEN", "z"]);
        same(b, &["GET", "z"]);
        same(b, &["SET", "a", "short"]);
        same(b, &["GET", "a"]);
        same(b, &["APPEND", "z", "more"]);
        same(b, &["GETRANGE", "z", "-6", "-1"]);
        same(b, &["DEL", "k", "r2", "m1", "s", "nosuch"]);
        same(b, &["UNLINK", "m3", "n1"]);
        same(b, &["DBSIZE"]);
    }
}

/// A bulk argument over `proto-max-bulk-len`, and `APPEND`/`SETRANGE` results past it,
/// are refused as Redis refuses them; the limit goes to 512 MB and beyond.
#[test]
fn proto_max_bulk_len_limits_as_redis() {
    let Some(mut both) = Both::start() else {
        return;
    };
    let b = &mut both;
    same(b, &["CONFIG", "GET", "proto-max-bulk-len"]);
    for v in ["4gb", "536870912", "1mb", "1048575", "2mb"] {
        same(b, &["CONFIG", "SET", "proto-max-bulk-len", v]);
        same(b, &["CONFIG", "GET", "proto-max-bulk-len"]);
    }
    let limit = 2 << 20;
    let at = value(limit, 1);
    same(b, &["SET", "k", &at]);
    same(b, &["STRLEN", "k"]);
    same(b, &["APPEND", "k", "x"]);
    same(b, &["SETRANGE", "k", &(limit - 1).to_string(), "xy"]);
    same(b, &["SETRANGE", "k", &(limit - 2).to_string(), "xy"]);
    same(b, &["SETRANGE", "new", &limit.to_string(), "x"]);
    same(b, &["SETRANGE", "new", "536870911", "xy"]);
    same(b, &["SET", "k", &at[..limit - 1]]);
    same(b, &["APPEND", "k", "x"]);
    same(b, &["APPEND", "k", "x"]);
    same(b, &["EXISTS", "new"]);
    // One byte over the limit: a protocol error at the bulk's length line, and the
    // connection is closed. Only the request's head is sent: both servers refuse at the
    // length line, and bytes still unsent (or unread by the server when it closes) would
    // turn the close into a reset that races the error reply.
    let request = format!("*3\r\n$3\r\nSET\r\n$4\r\nover\r\n${}\r\n", limit + 1).into_bytes();
    both.ours.send(&request);
    both.theirs.send(&request);
    let (a, r) = (both.ours.value(), both.theirs.value());
    assert_eq!(a, r);
    assert!(both.ours.closed() && both.theirs.closed());
}
