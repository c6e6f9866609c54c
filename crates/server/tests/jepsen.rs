//! The server under `kill -9`, Jepsen-style: client connections run `SET`, `INCR`, `GET`,
//! `DEL` and `APPEND` on a small key set while the server is killed with SIGKILL and
//! restarted on its append-only file again and again (automatic rewrites running, or just
//! finished, at some of the kills). Every operation's invocation and response are recorded
//! on one clock; an operation whose connection died before its reply is *pending* (it may
//! or may not have taken effect). After a last restart each key is read once more, and the
//! history of every key is checked for linearizability as a register
//! (`orrery_core::testing::linearize`): an acknowledged write that a restart lost, a write
//! applied twice, or a stale read is a violation.
//!
//! With `appendfsync always` no violation may appear. With `everysec` none may either when
//! only the process dies: a reply is sent after the `write(2)` that puts the record in the
//! kernel's page cache, which survives the process; what `everysec` risks is the last
//! second of writes on a crash of the whole machine, which a test on one machine cannot
//! stage (the run prints the fsync lag it saw instead, from `INFO persistence`).
//!
//! Bounded by time and keys: a handful of keys (so a rewrite writes a handful of records,
//! slowed per key to be caught in progress) and a few hundred acknowledged operations per
//! round; every wait is bounded by a deadline.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{DEADLINE, Server, eventually};
use orrery_core::testing::linearize::{
    Budget, Clock, History, Out, Recorder, RegOp, Register, check,
};
use orrery_core::testing::rng;
use rand::Rng;

/// Keys the clients share (few, so that operations on one key overlap).
const KEYS: usize = 4;
/// Client connections.
const CLIENTS: usize = 6;
/// Server processes killed with SIGKILL: 10, or `ORRERY_JEPSEN_KILLS` (a longer campaign,
/// `docs/results/reliability.md`).
fn kills() -> usize {
    std::env::var("ORRERY_JEPSEN_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}
/// Acknowledged operations each round waits for before its kill.
const OPS_PER_ROUND: u64 = 300;

/// A fresh directory for one run's append-only file.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("jepsen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A numeric field of `INFO persistence`.
fn info_u64(c: &mut redis::Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .trim()
        .parse()
        .unwrap()
}

/// Where the clients find the server: `Some(port)` while one runs, `None` between a kill
/// and the next start. Each start bumps the generation, so a client waits for a new server
/// rather than reconnecting to a dead port.
#[derive(Default)]
struct Door {
    state: Mutex<(Option<u16>, u64)>,
    changed: Condvar,
}

impl Door {
    fn open(&self, port: u16) {
        let mut s = self.state.lock().unwrap();
        *s = (Some(port), s.1 + 1);
        self.changed.notify_all();
    }

    fn close(&self) {
        self.state.lock().unwrap().0 = None;
    }

    /// The port of a server newer than generation `seen` (and its generation); `None` once
    /// `stop` is set.
    fn next(&self, seen: u64, stop: &AtomicBool) -> Option<(u16, u64)> {
        let start = Instant::now();
        let mut s = self.state.lock().unwrap();
        loop {
            if stop.load(Ordering::Acquire) {
                return None;
            }
            if let (Some(port), generation) = *s
                && generation > seen
            {
                return Some((port, generation));
            }
            assert!(start.elapsed() < DEADLINE, "no server came back");
            s = self
                .changed
                .wait_timeout(s, Duration::from_millis(50))
                .unwrap()
                .0;
        }
    }
}

/// What the clients share with the test.
struct Run {
    door: Door,
    stop: AtomicBool,
    /// Operations that got a reply, over all clients.
    acked: AtomicU64,
    clock: Clock,
}

/// One client: random operations on random keys, reconnecting after every kill, until told
/// to stop. Returns its history.
fn client(run: Arc<Run>, id: usize) -> Recorder<RegOp, Out> {
    let mut rng = rng::rng(rng::derive(0x6a65_7073_656e, id as u64));
    let mut history = Recorder::new(id, run.clock);
    let mut generation = 0;
    while let Some((port, g)) = run.door.next(generation, &run.stop) {
        generation = g;
        let Ok(mut c) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection_with_timeout(DEADLINE)
        else {
            continue; // killed before we connected: wait for the next one
        };
        c.set_read_timeout(Some(DEADLINE)).unwrap();
        while !run.stop.load(Ordering::Acquire) {
            let key = rng.random_range(0..KEYS);
            let op = match rng.random_range(0..100) {
                0..30 => RegOp::Get,
                30..50 => RegOp::Set(rng.random_range(1..1000u32).to_string().into_bytes()),
                50..70 => RegOp::Incr(1),
                70..85 => RegOp::Append(vec![b'0' + rng.random_range(1..10u8)]),
                _ => RegOp::Remove,
            };
            let call = history.now();
            match send(&mut c, key, &op) {
                Ok(out) => {
                    history.done(&key_name(key), op, call, out);
                    run.acked.fetch_add(1, Ordering::Relaxed);
                }
                Err(()) => {
                    // The connection died (the server was killed): the operation may or may
                    // not have been applied.
                    history.pending(&key_name(key), op, call);
                    break;
                }
            }
        }
    }
    history
}

fn key_name(key: usize) -> Vec<u8> {
    format!("jepsen:{key}").into_bytes()
}

/// Sends `op` on `key`; its output, or `Err` when the connection failed.
fn send(c: &mut redis::Connection, key: usize, op: &RegOp) -> Result<Out, ()> {
    let k = key_name(key);
    let cmd = match op {
        RegOp::Get => redis::cmd("GET").arg(&k).clone(),
        RegOp::Set(v) => redis::cmd("SET").arg(&k).arg(v).clone(),
        RegOp::Incr(1) => redis::cmd("INCR").arg(&k).clone(),
        RegOp::Append(v) => redis::cmd("APPEND").arg(&k).arg(v).clone(),
        RegOp::Remove => redis::cmd("DEL").arg(&k).clone(),
        other => unreachable!("not sent: {other:?}"),
    };
    match cmd.query::<redis::Value>(c) {
        Ok(v) => Ok(match (op, v) {
            (RegOp::Get, redis::Value::Nil) => Out::Value(None),
            (RegOp::Get, redis::Value::BulkString(b)) => Out::Value(Some(b)),
            (RegOp::Set(_), redis::Value::Okay) => Out::Ok,
            (RegOp::Incr(_), redis::Value::Int(n)) => Out::Int(n),
            (RegOp::Append(_), redis::Value::Int(n)) => Out::Len(n as usize),
            (RegOp::Remove, redis::Value::Int(n)) => Out::Present(n == 1),
            (op, v) => panic!("unexpected reply to {op:?}: {v:?}"),
        }),
        Err(e) if e.kind() == redis::ErrorKind::ResponseError => match op {
            RegOp::Incr(_) => Ok(Out::Error),
            _ => panic!("error reply to {op:?}: {e}"),
        },
        Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() => {
            Err(())
        }
        Err(e) => panic!("client error on {op:?}: {e}"),
    }
}

/// Runs the clients against a server killed `kills()` times with `appendfsync fsync`, then
/// checks every key's history. Returns (operations, acknowledged, pending).
fn campaign(name: &str, fsync: &str) -> (usize, usize, usize) {
    let d = dir(name);
    let args = vec![
        "--appendonly".to_string(),
        "yes".into(),
        "--appendfsync".into(),
        fsync.into(),
        "--dir".into(),
        d.to_str().unwrap().into(),
        // Rewrites often (every few kilobytes of growth), each slowed per key so that a
        // kill can land inside one.
        "--auto-aof-rewrite-min-size".into(),
        "4kb".into(),
        "--auto-aof-rewrite-percentage".into(),
        "20".into(),
        "--aof-rewrite-key-delay".into(),
        "40000".into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = Arc::new(Run {
        door: Door::default(),
        stop: AtomicBool::new(false),
        acked: AtomicU64::new(0),
        clock: Clock::new(),
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let run = run.clone();
            std::thread::spawn(move || client(run, id))
        })
        .collect();
    let mut in_rewrite = 0;
    // The longest any acknowledged write waited for its fdatasync, over the servers.
    let mut window = 0;
    for kill in 0..kills() {
        let mut server = Server::start(&args);
        run.door.open(server.port);
        let target = run.acked.load(Ordering::Relaxed) + OPS_PER_ROUND;
        eventually(
            || run.acked.load(Ordering::Relaxed) >= target,
            "the clients' operations",
        );
        let mut c = server.client();
        match kill % 3 {
            // Inside an automatic rewrite.
            0 => {
                eventually(
                    || info_u64(&mut c, "aof_rewrite_in_progress") == 1,
                    "an automatic rewrite to start",
                );
                in_rewrite += 1;
            }
            // Just after one finished.
            1 => {
                let done = info_u64(&mut c, "aof_rewrites");
                eventually(
                    || info_u64(&mut c, "aof_rewrites") > done,
                    "an automatic rewrite to finish",
                );
            }
            // Anywhere.
            _ => {}
        }
        window = window.max(info_u64(&mut c, "aof_max_unsynced_ms"));
        run.door.close();
        server.child.kill().unwrap();
        server.child.wait().unwrap();
    }
    // The last server: the clients go on for a round, stop, and every key is read once
    // more (recorded like any other operation).
    let server = Server::start(&args);
    run.door.open(server.port);
    let target = run.acked.load(Ordering::Relaxed) + OPS_PER_ROUND;
    eventually(
        || run.acked.load(Ordering::Relaxed) >= target,
        "the clients' operations after the last restart",
    );
    run.stop.store(true, Ordering::Release);
    run.door.changed.notify_all();
    let mut recorders: Vec<Recorder<RegOp, Out>> =
        clients.into_iter().map(|t| t.join().unwrap()).collect();
    let mut last = Recorder::new(CLIENTS, run.clock);
    let mut c = server.client();
    window = window.max(info_u64(&mut c, "aof_max_unsynced_ms"));
    for key in 0..KEYS {
        let call = last.now();
        let out = send(&mut c, key, &RegOp::Get).expect("final read");
        last.done(&key_name(key), RegOp::Get, call, out);
    }
    recorders.push(last);
    let history = History::from_recorders(recorders).expect("a well-formed history");
    let total = history.entries().len();
    let pending = history.entries().iter().filter(|e| !e.completed()).count();
    let per_key: BTreeMap<String, usize> = history
        .by_key()
        .into_iter()
        .map(|(k, ops)| (String::from_utf8_lossy(k).into_owned(), ops.len()))
        .collect();
    let report = check(&Register, &history, Budget::default());
    println!(
        "appendfsync {fsync}: {} kills ({in_rewrite} inside a rewrite), {total} operations \
         ({} acknowledged, {pending} pending) over {} keys {per_key:?}; \
         longest wait of an acknowledged write for its fdatasync {window} ms \
         (what a machine crash could lose); {report}",
        kills(),
        total - pending,
        per_key.len()
    );
    assert!(
        report.violations.is_empty(),
        "not linearizable after kill -9 with appendfsync {fsync}: {report}"
    );
    assert!(report.unknown.is_empty(), "undecided keys: {report}");
    assert_eq!(report.keys, KEYS);
    (total, total - pending, pending)
}

#[test]
fn kill_9_with_appendfsync_always_is_linearizable_and_loses_nothing() {
    let (total, acked, _) = campaign("always", "always");
    assert!(acked as u64 >= OPS_PER_ROUND * (kills() as u64 + 1) && total >= acked);
}

#[test]
fn kill_9_with_appendfsync_everysec_loses_nothing_a_process_crash_can_lose() {
    let (_, acked, _) = campaign("everysec", "everysec");
    assert!(acked as u64 >= OPS_PER_ROUND * (kills() as u64 + 1));
}
