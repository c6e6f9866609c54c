//! String values over the indexes' 1 MiB value limit (stored out of line) in the
//! append-only file: logged whole by every string command, replayed after `kill -9`
//! (`appendfsync always`), and emitted whole by a rewrite (`SAVE`), deadlines included.

use std::collections::BTreeMap;

use super::{aof_args, dir, kill_9};
use crate::common::{Raw, Server, Value};

const MB: usize = 1 << 20;

fn value(n: usize, tag: u8) -> String {
    (0..n)
        .map(|i| char::from(b'a' + ((i as u8).wrapping_add(tag)) % 26))
        .collect()
}

/// Every key's value and deadline (`PEXPIRETIME`), as bytes.
fn state(r: &mut Raw) -> BTreeMap<String, (Value, Value)> {
    let Value::Array(keys) = r.cmd_value(&["KEYS", "*"]) else {
        panic!("KEYS");
    };
    keys.into_iter()
        .map(|k| {
            let Value::Bulk(k) = k else { panic!("key") };
            let k = String::from_utf8(k).unwrap();
            let v = r.cmd_value(&["GET", &k]);
            let d = r.cmd_value(&["PEXPIRETIME", &k]);
            (k, (v, d))
        })
        .collect()
}

fn lens(s: &BTreeMap<String, (Value, Value)>) -> Vec<(String, usize)> {
    s.iter()
        .map(|(k, (v, _))| match v {
            Value::Bulk(b) => (k.clone(), b.len()),
            _ => (k.clone(), 0),
        })
        .collect()
}

#[test]
fn large_values_are_replayed_and_rewritten() {
    let d = dir("large");
    let args = aof_args(&d, "always");
    let mut server = Server::start(&args);
    let mut r = server.raw();
    let far = "4102444800000";
    let big = value(3 * MB, 0);
    for cmd in [
        &["SET", "a", &big][..],
        &["SET", "b", &value(MB + 1, 1), "PXAT", far],
        &["SET", "c", &value(MB - 20, 2)],
        &["APPEND", "c", &value(40, 3)],
        &["SETRANGE", "d", &(2 * MB).to_string(), "x"],
        &["SETRANGE", "a", "10", "middle"],
        &["SET", "gone", &big],
        &["DEL", "gone"],
        &["SET", "short", &big],
        &["SET", "short", "now short"],
        &["MSET", "m1", &value(MB, 4), "m2", &value(2 * MB, 5)],
        &["GETSET", "m1", &value(MB + 7, 6)],
        &["COPY", "a", "a2"],
        &["RENAME", "m2", "m3"],
        &["GETEX", "m3", "PXAT", far],
        &["SET", "e", &value(20 * MB, 7)],
    ] {
        let reply = r.cmd_value(cmd);
        assert!(!matches!(reply, Value::Error(_)), "{}: {reply:?}", cmd[0]);
    }
    let before = state(&mut r);
    assert_eq!(before.len(), 9, "{:?}", lens(&before));
    kill_9(&mut server);
    let mut server = Server::start(&args);
    let mut r = server.raw();
    let replayed = state(&mut r);
    assert!(replayed == before, "replayed {:?}", lens(&replayed));
    // The rewrite emits every large value whole; after it, the base replays alone.
    assert_eq!(r.cmd(&["SAVE"]), "+OK");
    let base = std::fs::metadata(d.join("appendonly.aof")).unwrap().len();
    assert!(base > 33 * MB as u64, "base of {base} bytes");
    kill_9(&mut server);
    let server = Server::start(&args);
    let mut r = server.raw();
    let rewritten = state(&mut r);
    assert!(rewritten == before, "rewritten {:?}", lens(&rewritten));
}
