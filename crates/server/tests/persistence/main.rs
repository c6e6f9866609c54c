//! Persistence: the append-only file survives `kill -9` (nothing acknowledged is lost with
//! `appendfsync always`; with `everysec` the loss is printed), a torn last record is cut
//! off with a log line, other corruption refuses to start, a rewrite under concurrent
//! writes keeps every key, and `SIGTERM` flushes. Also the unordered backend's `KEYS`,
//! `SCAN` and `FLUSHDB`. The collection types (hashes, sets, lists, sorted sets in both
//! representations, blocking pops) are in `collections`.
//!
//! Every wait is bounded by a time deadline; threads that must overlap the kill are seen
//! writing before it happens.

mod collections;
#[path = "../common/mod.rs"]
mod common;
mod databases;
mod large;
mod transactions;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use common::{DEADLINE, Server, eventually};
use redis::Commands;

/// A fresh directory for one test's append-only file.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("persistence-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn aof_args<'a>(dir: &'a Path, fsync: &'a str) -> Vec<&'a str> {
    vec![
        "--appendonly",
        "yes",
        "--appendfsync",
        fsync,
        "--dir",
        dir.to_str().unwrap(),
    ]
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

/// The append-only files in `d` (base and increments), sorted by name.
fn aof_files(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("appendonly.aof"))
        .collect();
    v.sort();
    v
}

/// Bytes in the append-only files of `d`.
fn chain_size(d: &Path) -> u64 {
    aof_files(d)
        .iter()
        .map(|n| std::fs::metadata(d.join(n)).unwrap().len())
        .sum()
}

fn kill_9(server: &mut Server) {
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

/// Every live key with its string value (or `zset:` and its members with scores).
fn dump(c: &mut redis::Connection) -> BTreeMap<String, String> {
    let keys: Vec<String> = c.keys("*").unwrap();
    let mut out = BTreeMap::new();
    for k in keys {
        let t: String = redis::cmd("TYPE").arg(&k).query(c).unwrap();
        let v = if t == "zset" {
            let m: Vec<(String, f64)> = c.zrange_withscores(&k, 0, -1).unwrap();
            format!("zset:{m:?}")
        } else {
            c.get::<_, String>(&k).unwrap()
        };
        out.insert(k, v);
    }
    out
}

/// Drives `threads` writers (SET of distinct keys, one pipelined, plus one INCR counter
/// each) until killed; returns what each acknowledged.
struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
    handles: Vec<std::thread::JoinHandle<(Vec<String>, u64)>>,
}

impl Load {
    fn start(port: u16, threads: usize) -> Load {
        Load::start_with(port, threads, "")
    }

    /// [`Load::start`] with keys and counters named after `prefix`.
    fn start_with(port: u16, threads: usize, prefix: &'static str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(0));
        let handles = (0..threads)
            .map(|t| {
                let (stop, acked) = (stop.clone(), acked.clone());
                std::thread::spawn(move || {
                    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                        .unwrap()
                        .get_connection_with_timeout(DEADLINE)
                        .unwrap();
                    let mut done = Vec::new();
                    let mut incrs = 0;
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        if t == 0 {
                            // A pipeline of 16: each acknowledged reply counts.
                            let mut p = redis::pipe();
                            let keys: Vec<String> =
                                (0..16).map(|j| format!("{prefix}t{t}:{}", i + j)).collect();
                            for k in &keys {
                                p.set(k, format!("v{k}"));
                            }
                            let r: redis::RedisResult<Vec<String>> = p.query(&mut c);
                            let Ok(r) = r else { break };
                            assert_eq!(r.len(), 16);
                            done.extend(keys);
                            i += 16;
                        } else {
                            let k = format!("{prefix}t{t}:{i}");
                            let r: redis::RedisResult<()> = c.set(&k, format!("v{k}"));
                            if r.is_err() {
                                break;
                            }
                            done.push(k);
                            i += 1;
                            let r: redis::RedisResult<u64> = c.incr(format!("{prefix}count{t}"), 1);
                            match r {
                                Ok(n) => {
                                    incrs += 1;
                                    assert_eq!(n, incrs);
                                }
                                Err(_) => break,
                            }
                        }
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    (done, incrs)
                })
            })
            .collect();
        Load {
            stop,
            acked,
            handles,
        }
    }

    /// Waits (bounded) until `n` writes were acknowledged.
    fn wait_for(&self, n: u64) {
        eventually(|| self.acked.load(Ordering::Relaxed) >= n, "the write load");
    }

    fn finish(self) -> Vec<(Vec<String>, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect()
    }
}

/// What each writer of a [`Load`] acknowledged: its keys and its counter's increments.
type Acked = Vec<(Vec<String>, u64)>;

/// Counts the acknowledged writes missing after a restart (and checks values).
fn lost(server: &Server, acked: &[(Vec<String>, u64)]) -> (usize, usize) {
    lost_with(server, acked, "")
}

/// [`lost`] for a load started with `prefix`.
fn lost_with(server: &Server, acked: &[(Vec<String>, u64)], prefix: &str) -> (usize, usize) {
    let mut c = server.client();
    let (mut total, mut missing) = (0, 0);
    for (t, (keys, incrs)) in acked.iter().enumerate() {
        for chunk in keys.chunks(1000) {
            let got: Vec<Option<String>> = redis::cmd("MGET").arg(chunk).query(&mut c).unwrap();
            for (k, v) in chunk.iter().zip(got) {
                total += 1;
                match v {
                    Some(v) => assert_eq!(v, format!("v{k}")),
                    None => missing += 1,
                }
            }
        }
        if *incrs > 0 {
            total += *incrs as usize;
            let n: u64 = c
                .get::<_, Option<u64>>(format!("{prefix}count{t}"))
                .unwrap()
                .unwrap_or(0);
            missing += incrs.saturating_sub(n) as usize;
        }
    }
    (total, missing)
}

#[test]
fn kill_9_loses_no_acknowledged_write_with_appendfsync_always() {
    let d = dir("always");
    let mut server = Server::start(&aof_args(&d, "always"));
    let load = Load::start(server.port, 4);
    load.wait_for(300);
    kill_9(&mut server);
    let acked = load.finish();
    let server = Server::start(&aof_args(&d, "always"));
    let (total, missing) = lost(&server, &acked);
    println!("appendfsync always: {total} acknowledged writes, {missing} lost after kill -9");
    assert!(total >= 300);
    assert_eq!(missing, 0, "acknowledged writes were lost");
}

/// The crash test again while automatic rewrites run one after the other (a small
/// `auto-aof-rewrite-min-size`, and a per-key delay that makes each rewrite last): each
/// round kills the server at a different point — during a rewrite, just after one, during
/// the second rewrite of one process, at an arbitrary moment — restarts it on the files
/// left, and checks every acknowledged write of every round so far.
///
/// A rewrite with the per-key delay lasts as long as the keys written so far, a number that
/// grows with the machine's speed; so the rounds that wait for a rewrite to *finish* lift the
/// delay first (`CONFIG SET aof-rewrite-key-delay 0`), and put it back only to catch the
/// next rewrite in progress.
#[test]
fn kill_9_during_automatic_rewrites_loses_no_acknowledged_write() {
    let d = dir("auto-rewrite");
    let mut args = aof_args(&d, "always");
    args.extend([
        "--auto-aof-rewrite-min-size",
        "16kb",
        "--auto-aof-rewrite-percentage",
        "20",
        "--aof-rewrite-key-delay",
        "20",
    ]);
    let prefixes = ["a", "b", "c", "d"];
    let mut rounds: Vec<(&str, Acked)> = Vec::new();
    for (round, prefix) in prefixes.into_iter().enumerate() {
        let t0 = Instant::now();
        let mut server = Server::start(&args);
        for (p, acked) in &rounds {
            let (total, missing) = lost_with(&server, acked, p);
            assert_eq!(missing, 0, "round {p}: {missing} of {total} lost");
        }
        let load = Load::start_with(server.port, 4, prefix);
        load.wait_for(200);
        let mut c = server.client();
        let rewrites = info_u64(&mut c, "aof_rewrites");
        match round {
            0 => eventually(
                || info_u64(&mut c, "aof_rewrite_in_progress") == 1,
                "an automatic rewrite to start",
            ),
            1 => {
                set_key_delay(&mut c, 0);
                eventually(
                    || info_u64(&mut c, "aof_rewrites") > rewrites,
                    "an automatic rewrite to finish",
                );
            }
            2 => {
                set_key_delay(&mut c, 0);
                eventually(
                    || info_u64(&mut c, "aof_rewrites") > rewrites,
                    "a first automatic rewrite to finish",
                );
                set_key_delay(&mut c, 20);
                let first = info_u64(&mut c, "aof_rewrites");
                eventually(
                    || {
                        info_u64(&mut c, "aof_rewrite_in_progress") == 1
                            && info_u64(&mut c, "aof_rewrites") >= first
                    },
                    "a second automatic rewrite to start",
                );
            }
            _ => load.wait_for(load.acked.load(Ordering::Relaxed) + 500),
        }
        assert!(info_u64(&mut c, "aof_auto_rewrites") >= 1 || round > 0);
        kill_9(&mut server);
        rounds.push((prefix, load.finish()));
        println!(
            "round {round}: {:?}, {} keys",
            t0.elapsed(),
            rounds
                .iter()
                .map(|r| r.1.iter().map(|w| w.0.len()).sum::<usize>())
                .sum::<usize>()
        );
    }
    let server = Server::start(&args);
    let mut total = 0;
    for (p, acked) in &rounds {
        let (t, missing) = lost_with(&server, acked, p);
        assert_eq!(missing, 0, "round {p}: {missing} of {t} lost");
        total += t;
    }
    println!("automatic rewrites, 4 kills: {total} acknowledged writes, none lost");
}

/// `CONFIG SET aof-rewrite-key-delay us`.
fn set_key_delay(c: &mut redis::Connection, us: u64) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("aof-rewrite-key-delay")
        .arg(us.to_string())
        .query(c)
        .unwrap();
}

/// An automatic rewrite starts on growth; what is written while it runs goes to the new
/// increment file on disk (not to memory), and the result loads back whole.
#[test]
fn automatic_rewrite_on_growth_writes_meanwhile_go_to_disk() {
    let d = dir("auto-growth");
    let mut args = aof_args(&d, "everysec");
    args.extend(["--auto-aof-rewrite-percentage", "0"]);
    let mut server = Server::start(&args);
    let mut c = server.client();
    for i in 0..1000 {
        let _: () = c.set(format!("k{i}"), "x".repeat(100)).unwrap();
    }
    assert_eq!(info_u64(&mut c, "aof_rewrites"), 0, "percentage 0 is off");
    // 100 ms per key: the rewrite lasts until the delay is lifted below.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("aof-rewrite-key-delay")
        .arg("100000")
        .arg("auto-aof-rewrite-min-size")
        .arg("50kb")
        .arg("auto-aof-rewrite-percentage")
        .arg("100")
        .query(&mut c)
        .unwrap();
    let incr = d.join("appendonly.aof.incr.1");
    eventually(
        || info_u64(&mut c, "aof_rewrite_in_progress") == 1 && incr.exists(),
        "an automatic rewrite",
    );
    assert_eq!(info_u64(&mut c, "aof_auto_rewrites"), 1);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("auto-aof-rewrite-percentage")
        .arg("0")
        .query(&mut c)
        .unwrap();
    let before = std::fs::metadata(&incr).unwrap().len();
    for i in 0..200 {
        let _: () = c.set(format!("during{i}"), "y".repeat(1000)).unwrap();
    }
    let grown = std::fs::metadata(&incr).unwrap().len();
    assert_eq!(info_u64(&mut c, "aof_rewrite_in_progress"), 1);
    assert_eq!(
        info_u64(&mut c, "aof_rewrites"),
        0,
        "still the first rewrite"
    );
    assert!(
        grown >= before + 200_000,
        "writes during the rewrite are on disk: {before} -> {grown} bytes"
    );
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("aof-rewrite-key-delay")
        .arg("0")
        .query(&mut c)
        .unwrap();
    eventually(
        || info_u64(&mut c, "aof_rewrites") == 1,
        "the rewrite to finish",
    );
    let expect = dump(&mut c);
    assert_eq!(expect.len(), 1200);
    kill_9(&mut server);
    let server = Server::start(&args);
    assert_eq!(dump(&mut server.client()), expect);
}

#[test]
fn kill_9_with_appendfsync_everysec_reports_the_loss() {
    let d = dir("everysec");
    let mut server = Server::start(&aof_args(&d, "everysec"));
    let load = Load::start(server.port, 4);
    load.wait_for(300);
    kill_9(&mut server);
    let acked = load.finish();
    let server = Server::start(&aof_args(&d, "everysec"));
    let (total, missing) = lost(&server, &acked);
    // Not asserted: everysec promises at most about a second of writes lost on a machine
    // crash. A killed process loses none here, since replies wait for the write(2).
    println!("appendfsync everysec: {total} acknowledged writes, {missing} lost after kill -9");
}

/// A server's state written, then the server stopped cleanly; returns the file's path.
fn write_three(d: &Path) -> PathBuf {
    let mut server = Server::start(&aof_args(d, "always"));
    let mut c = server.client();
    for k in ["a", "b", "c"] {
        let _: () = c.set(k, format!("value of {k}")).unwrap();
    }
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
    assert!(server.wait_exit());
    d.join("appendonly.aof")
}

#[test]
fn a_torn_last_record_is_truncated_with_a_log_line() {
    let d = dir("torn");
    let path = write_three(&d);
    let full = std::fs::read(&path).unwrap();
    // Cut the last record (SET c) short, as a crash during its write would.
    std::fs::write(&path, &full[..full.len() - 5]).unwrap();
    let server = Server::start(&aof_args(&d, "always"));
    assert!(
        server
            .early
            .iter()
            .any(|l| l.contains("torn write") && l.contains("truncating")),
        "{:?}",
        server.early
    );
    let mut c = server.client();
    assert_eq!(
        c.get::<_, Option<String>>("a").unwrap().as_deref(),
        Some("value of a")
    );
    assert_eq!(
        c.get::<_, Option<String>>("b").unwrap().as_deref(),
        Some("value of b")
    );
    assert_eq!(c.get::<_, Option<String>>("c").unwrap(), None);
    // The file was cut back to whole records and stays usable.
    let _: () = c.set("d", "4").unwrap();
    drop(server);
    let server = Server::start(&aof_args(&d, "always"));
    assert!(
        server.early.iter().all(|l| !l.contains("torn write")),
        "{:?}",
        server.early
    );
    let mut c = server.client();
    assert_eq!(
        c.get::<_, Option<String>>("d").unwrap().as_deref(),
        Some("4")
    );
    assert_eq!(c.get::<_, Option<String>>("c").unwrap(), None);

    // A zero-filled tail (blocks allocated, never written) is torn too.
    drop(server);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0; 4096]);
    std::fs::write(&path, &bytes).unwrap();
    let server = Server::start(&aof_args(&d, "always"));
    assert!(server.early.iter().any(|l| l.contains("torn write")));
    assert_eq!(
        server
            .client()
            .get::<_, Option<String>>("d")
            .unwrap()
            .as_deref(),
        Some("4")
    );
}

fn start_fails(d: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orrery-server"))
        .args(["--port", "0"])
        .args(aof_args(d, "always"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "a corrupt file must refuse to start");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn corruption_before_the_last_record_refuses_to_start() {
    let d = dir("corrupt");
    let path = write_three(&d);
    let good = std::fs::read(&path).unwrap();
    // Flip a byte inside the first record's value ("value of a").
    let at = good.windows(10).position(|w| w == b"value of a").unwrap();
    let mut bad = good.clone();
    bad[at + 3] ^= 0x20;
    std::fs::write(&path, &bad).unwrap();
    let err = start_fails(&d);
    assert!(
        err.contains("is corrupt at byte") && err.contains("checksum"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bad,
        "a refused file is left as it was"
    );
    // A foreign file.
    std::fs::write(&path, b"*2\r\n$3\r\nDEL\r\n$1\r\na\r\n").unwrap();
    let err = start_fails(&d);
    assert!(err.contains("magic"), "{err}");
    // The good file still loads.
    std::fs::write(&path, &good).unwrap();
    let server = Server::start(&aof_args(&d, "always"));
    assert_eq!(
        server
            .client()
            .get::<_, Option<String>>("c")
            .unwrap()
            .as_deref(),
        Some("value of c")
    );
}

#[test]
fn rewrite_under_concurrent_writes_keeps_every_key() {
    let d = dir("rewrite");
    let mut server = Server::start(&aof_args(&d, "everysec"));
    let mut c = server.client();
    // History that compacts: overwrites, deletes, expiry, sorted sets, renames.
    for i in 0..300 {
        let _: () = c.set(format!("k{}", i % 50), i).unwrap();
    }
    let _: i64 = c.del(&["k1", "k2"]).unwrap();
    let _: () = redis::cmd("SET")
        .arg("soon")
        .arg("x")
        .arg("EX")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    for i in 0..200 {
        let _: i64 = c.zadd("big", format!("m{i}"), i).unwrap();
        let _: i64 = c.zadd("small", format!("m{}", i % 5), i).unwrap();
    }
    let _: i64 = c.zrem("big", "m7").unwrap();
    let _: () = c.rename("small", "renamed").unwrap();
    let _: i64 = c.pexpire("renamed", 1_000_000).unwrap();
    let _: f64 = redis::cmd("INCRBYFLOAT")
        .arg("f")
        .arg("1.5")
        .query(&mut c)
        .unwrap();
    let load = Load::start(server.port, 2);
    load.wait_for(100);
    let r: String = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    assert_eq!(r, "Background append only file rewriting started");
    eventually(
        || {
            let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
            info.contains("aof_rewrites:1") && info.contains("aof_rewrite_in_progress:0")
        },
        "the rewrite",
    );
    load.wait_for(load.acked.load(Ordering::Relaxed) + 100);
    let acked = load.finish();
    let before = info_u64(&mut c, "aof_current_size");
    assert_eq!(before, chain_size(&d), "INFO's size is the files' size");
    let r: String = redis::cmd("SAVE").query(&mut c).unwrap();
    assert_eq!(r, "OK");
    let after = info_u64(&mut c, "aof_current_size");
    assert_eq!(after, chain_size(&d));
    // The chain is now the new base and the increment the second rewrite started.
    assert_eq!(
        aof_files(&d),
        ["appendonly.aof", "appendonly.aof.incr.2"],
        "older increments are deleted"
    );
    // The INCR counters and overwritten keys compact to one record each.
    assert!(after < before, "SAVE compacts: {before} -> {after} bytes");
    let expect = dump(&mut c);
    assert!(expect.contains_key("renamed") && !expect.contains_key("small"));
    let ttl: i64 = c.ttl("renamed").unwrap();
    // More writes after the rewrite, then a crash.
    let _: () = c.set("late", "1").unwrap();
    kill_9(&mut server);

    let server = Server::start(&aof_args(&d, "everysec"));
    let mut c = server.client();
    let mut got = dump(&mut c);
    assert_eq!(got.remove("late").as_deref(), Some("1"));
    assert_eq!(got, expect);
    let ttl2: i64 = c.ttl("renamed").unwrap();
    assert!(ttl2 > 0 && ttl2 <= ttl, "{ttl2} vs {ttl}");
    assert_eq!(lost(&server, &acked).1, 0);
    println!("append-only file: {before} bytes before SAVE, {after} after");
}

#[test]
fn sigterm_flushes_and_appendonly_no_keeps_nothing() {
    let d = dir("sigterm");
    let mut server = Server::start(&aof_args(&d, "no"));
    let mut c = server.client();
    let _: () = c.set("k", "v").unwrap();
    let _: i64 = c.zadd("z", "m", 2.5).unwrap();
    let st = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    assert!(server.wait_exit());
    let server = Server::start(&aof_args(&d, "no"));
    let mut c = server.client();
    assert_eq!(
        c.get::<_, Option<String>>("k").unwrap().as_deref(),
        Some("v")
    );
    assert_eq!(c.zscore::<_, _, Option<f64>>("z", "m").unwrap(), Some(2.5));
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(info.contains("aof_enabled:1"), "{info}");
    drop(server);
    // Without --appendonly the file is neither read nor written.
    let server = Server::start(&["--dir", d.to_str().unwrap()]);
    let mut c = server.client();
    assert_eq!(c.get::<_, Option<String>>("k").unwrap(), None);
    let e = redis::cmd("BGREWRITEAOF")
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("persistence is off"), "{e}");
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
    assert!(info.contains("aof_enabled:0"), "{info}");
}

#[test]
fn unordered_backend_keys_scan_flush_and_persistence() {
    for index in ["mercury", "slb:mercury"] {
        let d = dir(&index.replace(':', "-"));
        let mut args = aof_args(&d, "always");
        args.extend(["--index", index]);
        let mut server = Server::start(&args);
        let mut c = server.client();
        let all: BTreeSet<String> = (0..500).map(|i| format!("key:{i}")).collect();
        for k in &all {
            let _: () = c.set(k, "v").unwrap();
        }
        let _: i64 = c.zadd("zs", "m", 1).unwrap();
        let keys: BTreeSet<String> = c.keys("key:*").unwrap();
        assert_eq!(keys, all, "{index}");
        // A full SCAN while another client deletes and adds keys: every key present
        // throughout is returned, none twice.
        let port = server.port;
        let churn = std::thread::spawn(move || {
            let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                .unwrap()
                .get_connection()
                .unwrap();
            for i in 0..200 {
                let _: () = c.set(format!("new:{i}"), "x").unwrap();
                let _: i64 = c.del(format!("key:{}", i * 2)).unwrap();
            }
        });
        let mut seen = Vec::new();
        let mut cursor = 0u64;
        let start = Instant::now();
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(37)
                .query(&mut c)
                .unwrap();
            seen.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
            assert!(start.elapsed() < DEADLINE);
        }
        churn.join().unwrap();
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{index}: a key returned twice");
        for i in (1..500).step_by(2) {
            assert!(
                unique.contains(&format!("key:{i}")),
                "{index}: key:{i} missed"
            );
        }
        let (_, typed): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(0)
            .arg("TYPE")
            .arg("zset")
            .arg("COUNT")
            .arg(10_000)
            .query(&mut c)
            .unwrap();
        assert_eq!(typed, ["zs"], "{index}");
        kill_9(&mut server);
        let server = Server::start(&args);
        let mut c = server.client();
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, 500 - 200 + 200 + 1, "{index}");
        let _: () = redis::cmd("FLUSHDB").query(&mut c).unwrap();
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        assert_eq!(n, 0, "{index}");
        let keys: Vec<String> = c.keys("*").unwrap();
        assert!(keys.is_empty());
    }
}

/// An eviction is a delete in the log: a restart without the limit has exactly the keys
/// the limited server kept.
#[test]
fn evictions_are_logged_as_deletes() {
    let d = dir("evict");
    let mut args = aof_args(&d, "always");
    args.extend(["--maxmemory", "1mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut server = Server::start(&args);
    let mut c = server.client();
    for i in 0..3000 {
        let _: () = c.set(format!("k{i}"), "v".repeat(1000)).unwrap();
    }
    let _: () = c.hset_multiple("h", &[("a", "1"), ("b", "2")]).unwrap();
    let kept: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert!(kept < 3000, "{kept}");
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut c);
    assert!(server.wait_exit());
    let server = Server::start(&aof_args(&d, "always"));
    let mut c = server.client();
    let mut again: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    again.sort();
    assert_eq!(keys, again);
}
