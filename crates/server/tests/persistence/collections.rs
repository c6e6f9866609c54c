//! Persistence of the collection types: every kind of change replayed from the log and
//! rebuilt by a rewrite (both representations, deadlines, renames, copies, the string
//! commands that write, blocking pops),
//! a rewrite that walks large collections while they change (lists above all, whose
//! records are positions), and `kill -9` under collection writers with `appendfsync
//! always`: every acknowledged change survives.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{aof_args, dir, kill_9};
use crate::common::{Raw, Server, Value, encode, eventually};

/// Every live key: its type, its contents (members of hashes and sets sorted; sorted sets
/// and lists in order; scores as the server prints them), and its deadline.
fn state(r: &mut Raw) -> BTreeMap<String, String> {
    let Value::Array(keys) = r.cmd_value(&["KEYS", "*"]) else {
        panic!("KEYS")
    };
    let mut out = BTreeMap::new();
    for k in keys {
        let Value::Bulk(k) = k else { panic!() };
        let k = String::from_utf8(k).unwrap();
        let t = r.cmd(&["TYPE", &k]);
        let v = match t.as_str() {
            "+hash" => {
                let Value::Array(items) = r.cmd_value(&["HGETALL", &k]) else {
                    panic!()
                };
                let mut pairs: Vec<Vec<Value>> = items.chunks(2).map(<[Value]>::to_vec).collect();
                pairs.sort();
                format!("{pairs:?}")
            }
            "+set" => {
                let Value::Array(mut items) = r.cmd_value(&["SMEMBERS", &k]) else {
                    panic!()
                };
                items.sort();
                format!("{items:?}")
            }
            "+zset" => format!(
                "{:?}",
                r.cmd_value(&["ZRANGE", &k, "0", "-1", "WITHSCORES"])
            ),
            "+list" => format!("{:?}", r.cmd_value(&["LRANGE", &k, "0", "-1"])),
            _ => format!("{:?}", r.cmd_value(&["GET", &k])),
        };
        let deadline = r.cmd(&["PEXPIRETIME", &k]);
        out.insert(k, format!("{t} {v} deadline={deadline}"));
    }
    out
}

/// A history touching every collection command that writes, on compact and large
/// collections.
fn history(r: &mut Raw) {
    let ok = |r: &mut Raw, args: &[&str]| {
        let reply = r.cmd(args);
        assert!(!reply.starts_with('-'), "{args:?}: {reply}");
    };
    for i in 0..300 {
        let s = i.to_string();
        ok(r, &["HSET", "hbig", &format!("f{i}"), &s]);
        ok(r, &["SADD", "sbig", &format!("m{i}")]);
        ok(r, &["SADD", "ibig", &s]);
        ok(r, &["ZADD", "zbig", &s, &format!("m{i}")]);
        ok(r, &["RPUSH", "lbig", &format!("e{i}")]);
    }
    for args in [
        &["HSET", "h", "a", "1", "b", "2", "c", "3"][..],
        &["HDEL", "h", "b"],
        &["HINCRBY", "h", "a", "41"],
        &["HINCRBYFLOAT", "h", "f", "1.25"],
        &["HDEL", "hbig", "f7", "f8"],
        &["HSET", "hbig", "f9", "changed"],
        &["SADD", "s", "x", "y", "z"],
        &["SREM", "s", "y"],
        &["SADD", "ints", "1", "2", "3"],
        &["SMOVE", "ints", "s", "2"],
        &["SPOP", "sbig", "7"],
        &["SREM", "ibig", "5"],
        &["SUNIONSTORE", "su", "s", "ints"],
        &["SINTERSTORE", "si", "sbig", "s"],
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["ZINCRBY", "z", "10", "a"],
        &["ZREM", "z", "b"],
        &["ZPOPMIN", "zbig", "3"],
        &["ZREMRANGEBYSCORE", "zbig", "100", "110"],
        &["ZUNIONSTORE", "zu", "2", "z", "zbig", "WEIGHTS", "2", "-1"],
        &[
            "ZINTERSTORE",
            "zneg",
            "2",
            "zbig",
            "zbig",
            "WEIGHTS",
            "-1",
            "0",
        ],
        &["ZRANGESTORE", "zr", "zbig", "0", "9"],
        &["RPUSH", "l", "a", "b", "c", "d", "e"],
        &["LPUSH", "l", "z"],
        &["LSET", "l", "2", "B"],
        &["LINSERT", "l", "BEFORE", "d", "c2"],
        &["LREM", "l", "1", "a"],
        &["LPOP", "l"],
        &["RPOP", "l"],
        &["LTRIM", "l", "0", "2"],
        &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
        &["LPUSH", "lbig", "front"],
        &["LINSERT", "lbig", "AFTER", "e150", "mid"],
        &["LINSERT", "lbig", "BEFORE", "e3", "early"],
        &["LREM", "lbig", "-2", "e299"],
        &["LSET", "lbig", "-1", "last"],
        &["LTRIM", "lbig", "2", "-3"],
        &["RPOPLPUSH", "lbig", "lbig"],
        &["EXPIRE", "hbig", "10000"],
        &["PEXPIREAT", "l2", "4102444800000"],
        &["EXPIRE", "z", "10000"],
        &["PERSIST", "z"],
        &["RENAME", "sbig", "sbig2"],
        &["RENAME", "l", "lrenamed"],
        &["RENAME", "zbig", "zbig2"],
        &["SET", "str", "v"],
        // COPY of every type, both forms (deadlines copied), over an existing key too.
        &["COPY", "hbig", "hbigc"],
        &["COPY", "sbig2", "sbigc"],
        &["COPY", "ibig", "ibigc"],
        &["COPY", "zbig2", "zbigc"],
        &["COPY", "lbig", "lbigc"],
        &["COPY", "h", "hc"],
        &["COPY", "l2", "l2c"],
        &["COPY", "z", "str2"],
        &["COPY", "lbig", "str2", "REPLACE"],
        &["HSET", "hbigc", "f1", "copy-only"],
        &["RPUSH", "lbigc", "copy-tail"],
        &["RENAMENX", "hc", "h2"],
        &["RENAMENX", "sbigc", "h2"],
        // The string commands that write.
        &["SETRANGE", "str", "4", "tail"],
        &["SETRANGE", "padded", "3", "x"],
        &["SETEX", "sx", "10000", "v"],
        &["PSETEX", "psx", "10000000", "v"],
        &["SET", "gx", "v"],
        &["GETEX", "gx", "EXAT", "4102444800"],
        &["SET", "gp", "v", "EX", "10000"],
        &["GETEX", "gp", "PERSIST"],
        &["SET", "gone", "v"],
        &["GETEX", "gone", "PXAT", "1"],
        &["COPY", "gx", "gxc"],
        &["DEL", "ibig"],
    ] {
        ok(r, args);
    }
}

#[test]
fn every_collection_change_replays_and_rewrites_to_the_same_state() {
    let d = dir("collections");
    let mut server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    // Small thresholds: both forms and the moves between them.
    r.cmd(&[
        "CONFIG",
        "SET",
        "hash-max-listpack-entries",
        "16",
        "list-max-listpack-size",
        "16",
    ]);
    history(&mut r);
    // A blocked client served by a push: its pop is logged too.
    let mut waiter = server.raw();
    waiter.send(&encode(&["BLPOP", "jobs", "0"]));
    eventually(
        || {
            r.cmd(&["INFO", "clients"])
                .contains("blocked_clients:1\r\n")
        },
        "the waiter blocks",
    );
    assert_eq!(r.cmd(&["RPUSH", "jobs", "j1", "j2"]), ":2");
    assert_eq!(waiter.reply(), "[$jobs, $j1]");
    let expect = state(&mut r);
    assert!(expect.len() > 15, "{expect:?}");
    kill_9(&mut server);

    // Replayed from the log, under other thresholds (other forms, the same contents).
    let mut server = Server::start(
        &[
            &aof_args(&d, "always")[..],
            &[
                "--zset-max-listpack-entries",
                "1",
                "--set-max-intset-entries",
                "1",
            ],
        ]
        .concat(),
    );
    let mut r = server.raw();
    assert_eq!(state(&mut r), expect);
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "z"]), "$skiplist");
    // Rewritten, then replayed from the new base.
    assert_eq!(r.cmd(&["SAVE"]), "+OK");
    kill_9(&mut server);
    let server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    assert_eq!(state(&mut r), expect);
}

/// Drives changes of large collections from one client until stopped; returns how many
/// commands were acknowledged.
fn churn(port: u16, stop: Arc<AtomicBool>, acked: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = Raw::connect(port);
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let s = i.to_string();
            let cmds: [&[&str]; 8] = [
                &["LPUSH", "list", &s],
                &["RPOP", "list"],
                &["LSET", "list", "100", &s],
                &["LINSERT", "list", "AFTER", "e5000", &s],
                &["LREM", "list", "1", &s],
                &["HSET", "hash", &format!("f{}", i % 3000), &s],
                &["ZADD", "zset", &s, &format!("m{}", i % 3000)],
                &["SREM", "set", &format!("m{}", i % 3000)],
            ];
            let reply = r.cmd(cmds[(i % 8) as usize]);
            assert!(!reply.starts_with('-'), "{reply}");
            acked.fetch_add(1, Ordering::Relaxed);
            i += 1;
        }
    })
}

#[test]
fn a_rewrite_walking_large_collections_while_they_change_keeps_them_exact() {
    let d = dir("collections-rewrite");
    let mut server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    let mut batch = Vec::new();
    for i in 0..10_000 {
        batch.extend(encode(&["RPUSH", "list", &format!("e{i}")]));
        if i < 3000 {
            batch.extend(encode(&["HSET", "hash", &format!("f{i}"), "v"]));
            batch.extend(encode(&["ZADD", "zset", "0", &format!("m{i}")]));
            batch.extend(encode(&["SADD", "set", &format!("m{i}")]));
        }
    }
    r.send(&batch);
    for _ in 0..19_000 {
        r.reply();
    }
    // 10 ms per 1024 records: the list's walk alone takes 100 ms or more.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "aof-rewrite-key-delay", "10000"]),
        "+OK"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let writer = churn(server.port, stop.clone(), acked.clone());
    eventually(|| acked.load(Ordering::Relaxed) > 50, "the writer runs");
    assert!(r.cmd(&["BGREWRITEAOF"]).starts_with('+'));
    let before = acked.load(Ordering::Relaxed);
    eventually(
        || {
            let info = r.cmd(&["INFO", "persistence"]);
            info.contains("aof_rewrites:1") && info.contains("aof_rewrite_in_progress:0")
        },
        "the rewrite",
    );
    let during = acked.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let expect = state(&mut r);
    kill_9(&mut server);
    let server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    assert_eq!(state(&mut r), expect);
    println!("{during} changes were acknowledged while the rewrite ran");
    assert!(
        during > 0,
        "the writer changed the collections during the rewrite"
    );
}

/// The list a client's `RPUSH`/`LPOP` sequence left, given what was acknowledged; the
/// one command in flight at the kill may or may not have been applied.
fn list_matches(
    got: &[String],
    model: &VecDeque<String>,
    in_flight: Option<&(bool, String)>,
) -> bool {
    if got.iter().eq(model.iter()) {
        return true;
    }
    let mut m = model.clone();
    match in_flight {
        Some((true, v)) => m.push_back(v.clone()),
        Some((false, _)) => {
            m.pop_front();
        }
        None => return false,
    }
    got.iter().eq(m.iter())
}

#[test]
fn kill_9_under_collection_writers_loses_no_acknowledged_change() {
    let d = dir("collections-kill");
    let mut server = Server::start(&aof_args(&d, "always"));
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    type Acked = (Vec<u64>, VecDeque<String>, Option<(bool, String)>);
    let handles: Vec<std::thread::JoinHandle<Acked>> = (0..3)
        .map(|t| {
            let (stop, progress) = (stop.clone(), progress.clone());
            std::thread::spawn(move || {
                let mut r = Raw::connect(port);
                let mut done = Vec::new();
                let mut list = VecDeque::new();
                let mut in_flight = None;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let s = i.to_string();
                    // Thread 0: hash fields; 1: set members and sorted-set scores;
                    // 2: a queue (pushes, and a pop every third step).
                    let (args, push): (Vec<String>, Option<bool>) = match t {
                        0 => (
                            vec!["HSET".into(), "h".into(), format!("f{i}"), s.clone()],
                            None,
                        ),
                        1 if i.is_multiple_of(2) => {
                            (vec!["SADD".into(), "s".into(), s.clone()], None)
                        }
                        1 => (
                            vec!["ZADD".into(), "z".into(), s.clone(), format!("m{i}")],
                            None,
                        ),
                        _ if i % 3 == 2 => (vec!["LPOP".into(), "q".into()], Some(false)),
                        _ => (vec!["RPUSH".into(), "q".into(), s.clone()], Some(true)),
                    };
                    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                    in_flight = push.map(|p| (p, s.clone()));
                    r.send(&encode(&argv));
                    let Some(reply) = r.try_reply() else { break };
                    assert!(!reply.starts_with('-'), "{reply}");
                    match push {
                        Some(true) => list.push_back(s),
                        Some(false) => {
                            list.pop_front();
                        }
                        None => done.push(i),
                    }
                    in_flight = None;
                    progress.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                (done, list, in_flight)
            })
        })
        .collect();
    eventually(
        || progress.load(Ordering::Relaxed) > 3000,
        "the writers run",
    );
    kill_9(&mut server);
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<Acked> = handles.into_iter().map(|h| h.join().unwrap()).collect();

    let server = Server::start(&aof_args(&d, "always"));
    let mut r = server.raw();
    for &i in &acked[0].0 {
        assert_eq!(
            r.cmd(&["HGET", "h", &format!("f{i}")]),
            format!("${i}"),
            "field f{i}"
        );
    }
    for &i in &acked[1].0 {
        if i % 2 == 0 {
            assert_eq!(
                r.cmd(&["SISMEMBER", "s", &i.to_string()]),
                ":1",
                "member {i}"
            );
        } else {
            assert_eq!(r.cmd(&["ZSCORE", "z", &format!("m{i}")]), format!("${i}"));
        }
    }
    let Value::Array(items) = r.cmd_value(&["LRANGE", "q", "0", "-1"]) else {
        panic!()
    };
    let got: Vec<String> = items
        .into_iter()
        .map(|v| match v {
            Value::Bulk(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    let (_, model, in_flight) = &acked[2];
    assert!(
        list_matches(&got, model, in_flight.as_ref()),
        "the queue after the crash: {} elements, acknowledged {} (in flight: {in_flight:?})",
        got.len(),
        model.len()
    );
    println!(
        "acknowledged before the kill: {} fields, {} set/zset members, a queue of {}",
        acked[0].0.len(),
        acked[1].0.len(),
        model.len()
    );
}
