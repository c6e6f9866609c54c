//! Persistence: the append-only file (`--appendonly yes`), its replay at start, its rewrite
//! while the server runs (`BGREWRITEAOF`, `SAVE`, or automatically on growth), and group
//! commit.
//!
//! # What is logged
//!
//! Not the commands but their *effects*, as one record per change, written by the store
//! while the command still holds its keys' stripes ([`crate::store::Txn`]):
//!
//! | record | effect on replay |
//! |---|---|
//! | `SET key raw` | the key holds the string value `raw` (the stored bytes: type, deadline, payload) |
//! | `DEL key` | the key is absent |
//! | `ZADD key member score` | the key is a sorted set (a new one if it held anything else) in which `member` has `score` (8 bytes: the `f64`'s bits, big-endian) |
//! | `ZREM key member` | `member` is not in the set (an emptied set deletes its key) |
//! | `PEXPIREAT key ms` / `PERSIST key` | the key's deadline (on a sorted set; strings carry theirs in `SET`) |
//!
//! Effects make replay deterministic (an `INCRBYFLOAT` or a relative `EXPIRE` is logged as
//! its result), and each is an assignment to a part of the keyspace, which is what makes
//! the rewrite below correct. A record is a RESP array, so the file can be read with a hex
//! dump and a little patience.
//!
//! # Files
//!
//! The log is a chain of files in `--dir`, replayed in order: the *base* `appendonly.aof`,
//! then the *increments* `appendonly.aof.incr.N`, `N+1`, … (consecutive numbers). New
//! frames go to the last file of the chain (the *live* one). A server that never
//! rewrote has the base alone; each rewrite starts a new increment. The layout follows
//! Redis 7's multi-part AOF, without its manifest: a rewritten base names, in its first
//! frame (the record `BASE n`), the first increment that follows it, and so the rename
//! that installs a new base also drops the increments it contains (a base without the
//! record is followed by the increments from 1). Increments older than the base's `n`
//! and temporary files of an interrupted rewrite are deleted at start.
//!
//! Each file:
//!
//! ```text
//! "ORRERYAOF1\n"                        11-byte magic
//! frame*                                one frame per write command
//! frame = len:u32le  crc_len:u32le  crc_payload:u32le  payload[len]
//! ```
//!
//! `crc_len` is the CRC32C of the 4 length bytes and `crc_payload` that of the payload
//! (`orrery::hash::crc32c`). A frame holds all the records of one command, so a command is
//! replayed whole or not at all.
//!
//! # Loading
//!
//! At start the files' frames are read in order and applied. The end of the live (last)
//! file may hold a frame torn by a crash: fewer than 12 header bytes, a payload shorter than its length, a
//! last frame whose payload does not match its checksum, or a tail of zero bytes (blocks
//! the file system allocated but never wrote). Such a tail is cut off (the file is
//! truncated to the last whole frame) and a log line says how many bytes went, as Redis
//! does with `aof-load-truncated yes`. Anything else — a wrong magic, a header or payload
//! checksum mismatch before the last frame, a record that does not parse or is unknown, a
//! torn end in a file that is not the last (each was synced whole before the next was
//! started), a missing increment, increments without a base — refuses to start, naming
//! the file and the offset.
//!
//! # Durability and group commit
//!
//! Appenders add their frame to a shared buffer and get its end position (a logical byte
//! count since start). One flusher thread takes the whole buffer, writes it, and with
//! `appendfsync always` `fdatasync`s it before publishing the new durable position; a
//! connection sends its replies only once the position of its last write is published.
//! Everything appended while one `fdatasync` runs goes into the next one, so concurrent
//! writers share the cost (group commit). With `everysec` and `no` the reply waits only
//! for the `write` to the file (so a killed process loses nothing, as with Redis); the
//! flusher `fdatasync`s once a second (`everysec`) or leaves it to the kernel (`no`).
//! A write or `fdatasync` error is fatal: the server exits rather than acknowledge writes
//! it cannot keep.
//!
//! A reader on another connection may see a write before it is durable (its reply is not
//! delayed), as on Redis; what is acknowledged to the writer is durable.
//!
//! # Rewrite
//!
//! [`Aof::rewrite`] compacts the log without stopping the server, in three steps, each of
//! which leaves a chain that replays to every acknowledged write if the process dies
//! right after it:
//!
//! 1. *New increment*: holding the file, the buffered frames are written to the live file
//!    and synced, and a new empty increment `N` is created, synced (with the directory)
//!    and made live. Chain: old base, older increments, `N`: complete.
//! 2. *Walk*: every live key's state is written to a temporary file (after the record
//!    `BASE N`), which is then synced. Writers keep going, and their frames go to
//!    increment `N` on disk: nothing is held in memory for the rewrite, however long it
//!    takes (Redis before 7 kept such a buffer). The walk copies batches of keys out of
//!    the index and writes them outside its scan, so a writer never waits for the file.
//!    The crash chain is unchanged (the temporary file is ignored and deleted).
//! 3. *Commit*: the temporary file is renamed over the base and the directory synced:
//!    that one `rename` switches the chain to new base + `N`. The older increments are
//!    deleted after it (left over by a crash, they are older than `BASE N` and ignored).
//!
//! Correctness of the new chain: the walk is not a snapshot, but every frame appended
//! after step 1 is in increment `N`, every frame before it was applied to the index
//! before the walk started, and records are assignments to parts of the keyspace (a
//! key's whole value, one member's score, a deadline), so replaying `N` after any state
//! the walk saw for a key yields that key's final state.
//!
//! **Automatic rewrite**: the server's cron (every 100 ms) starts a background rewrite
//! when the chain is at least `auto-aof-rewrite-min-size` bytes (default 64 MiB) and has
//! grown by `auto-aof-rewrite-percentage` percent (default 100; 0: off) since the last
//! rewrite, or since start, as Redis does. Both, the fsync policy and a testing delay per
//! key written by a rewrite (`aof-rewrite-key-delay`, like Redis's `rdb-key-save-delay`)
//! are [`AofSettings`], changed by `CONFIG SET` while the server runs.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::ops::{Bound, ControlFlow};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use orrery::hash::crc32c;

use crate::resp;
use crate::store::{Kind, Store, header};

/// The file's first bytes.
const MAGIC: &[u8] = b"ORRERYAOF1\n";
/// Bytes before a frame's payload.
const FRAME_HEADER: usize = 12;
/// The base file's name inside `--dir`.
pub(crate) const FILE_NAME: &str = "appendonly.aof";
/// Between [`FILE_NAME`] and an increment file's number.
const INCR_INFIX: &str = ".incr.";
/// How a rewrite's output starts until it is renamed over the base.
const TEMP_PREFIX: &str = "temp-rewriteaof-";

/// When the file is `fdatasync`ed (`--appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// Before every reply to a write (group-committed).
    Always,
    /// Once a second.
    EverySec,
    /// Never explicitly (the kernel writes back).
    No,
}

impl Fsync {
    /// The setting's name.
    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// Appends `parts` as one RESP array to `out` (one record).
pub(crate) fn encode_op(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends `payload` as one frame to `out`.
fn encode_frame(out: &mut Vec<u8>, payload: &[u8]) {
    let len = (payload.len() as u32).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc32c(&len).to_le_bytes());
    out.extend_from_slice(&crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Appender-side state.
struct State {
    /// Frames not yet handed to the file.
    buf: Vec<u8>,
    /// Logical position after the last appended frame.
    appended: u64,
    stop: bool,
}

/// Flusher-side state (held while writing the file).
struct Io {
    /// The live file: the last of the chain, the one frames are appended to.
    file: File,
    /// Its increment number (0: the base file is live).
    live_seq: u64,
    /// Logical position written to `file` and the one last synced.
    written: u64,
    synced: u64,
    last_sync: Instant,
    /// Bytes in the chain's files before the live one, and in the live one.
    before_live: u64,
    live_size: u64,
}

impl Io {
    fn chain_size(&self) -> u64 {
        self.before_live + self.live_size
    }
}

/// Figures for `INFO persistence`.
#[derive(Default)]
pub(crate) struct AofStats {
    pub(crate) rewrites: AtomicU64,
    pub(crate) auto_rewrites: AtomicU64,
    pub(crate) last_rewrite_ok: AtomicBool,
    pub(crate) base_size: AtomicU64,
    pub(crate) current_size: AtomicU64,
    pub(crate) rewrite_in_progress: AtomicBool,
    pub(crate) loaded_frames: AtomicU64,
}

/// The settings `CONFIG SET` may change while the server runs.
pub(crate) struct AofSettings {
    fsync: AtomicU8,
    /// `auto-aof-rewrite-percentage` (0: off).
    pub(crate) auto_percentage: AtomicU64,
    /// `auto-aof-rewrite-min-size`, bytes.
    pub(crate) auto_min_size: AtomicU64,
    /// `aof-rewrite-key-delay`: microseconds the rewrite sleeps after each key (0: none;
    /// a testing knob, like Redis's `rdb-key-save-delay`, that makes a rewrite long
    /// enough to be interrupted).
    pub(crate) key_delay_us: AtomicU64,
}

impl AofSettings {
    /// Settings with the given values.
    pub(crate) fn new(fsync: Fsync, percentage: u64, min_size: u64, key_delay_us: u64) -> Self {
        AofSettings {
            fsync: AtomicU8::new(fsync as u8),
            auto_percentage: AtomicU64::new(percentage),
            auto_min_size: AtomicU64::new(min_size),
            key_delay_us: AtomicU64::new(key_delay_us),
        }
    }

    /// The fsync policy in force.
    pub(crate) fn fsync(&self) -> Fsync {
        match self.fsync.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    /// Changes the fsync policy (takes effect at the flusher's next round).
    pub(crate) fn set_fsync(&self, f: Fsync) {
        self.fsync.store(f as u8, Ordering::Relaxed);
    }
}

/// An open append-only file; see the [module docs](self).
pub(crate) struct Aof {
    dir: PathBuf,
    pub(crate) settings: Arc<AofSettings>,
    state: Mutex<State>,
    wake: Condvar,
    io: Mutex<Io>,
    /// The position replies may be sent at (durable per `fsync`).
    acked: tokio::sync::watch::Sender<u64>,
    pub(crate) stats: AofStats,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("{what} {}: {e}", path.display())
}

/// Syncs directory `dir` (so that a created or renamed file's name is durable).
fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot sync directory", dir, e))
}

/// The name of increment file `seq`.
pub(crate) fn incr_name(seq: u64) -> String {
    format!("{FILE_NAME}{INCR_INFIX}{seq}")
}

/// The increment files in `dir`, by number, ascending.
fn list_incr(dir: &Path) -> Result<Vec<(u64, PathBuf)>, String> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| io_err("cannot list", dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| io_err("cannot list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let seq = name
            .strip_prefix(FILE_NAME)
            .and_then(|r| r.strip_prefix(INCR_INFIX))
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| n > 0 && incr_name(n) == name);
        if let Some(seq) = seq {
            out.push((seq, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// What loading found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// Frames applied.
    pub(crate) frames: u64,
    /// Bytes cut off a torn tail (0: none).
    pub(crate) truncated: u64,
}

/// The files loading found, in replay order.
struct Chain {
    frames: u64,
    /// (increment number, 0 for the base; bytes after loading) of each file.
    files: Vec<(u64, u64)>,
}

/// Replays the chain in `dir` (base, then its increments) into `store`; creates the
/// base when there is none; removes stale files (increments older than the base,
/// temporary files of an interrupted rewrite).
fn load_chain(dir: &Path, store: &Store) -> Result<Chain, String> {
    let base = dir.join(FILE_NAME);
    let incr = list_incr(dir)?;
    if !base.exists() {
        if let Some((_, p)) = incr.first() {
            return Err(format!(
                "found the append-only increment file {} but no base file {}; refusing to \
                 start (restore the base file, or move the increments away to start empty)",
                p.display(),
                base.display()
            ));
        }
        let mut f = File::create(&base).map_err(|e| io_err("cannot create", &base, e))?;
        f.write_all(MAGIC)
            .and_then(|()| f.sync_all())
            .map_err(|e| io_err("cannot write", &base, e))?;
        sync_dir(dir)?;
    }
    let mut chain = Chain {
        frames: 0,
        files: Vec::new(),
    };
    let live: Vec<&(u64, PathBuf)> = {
        // Which increments follow the base is known only once its first frame is read;
        // the base is the last file when none does.
        let data = std::fs::read(&base).map_err(|e| io_err("cannot read", &base, e))?;
        let from = base_record(&data).unwrap_or(1);
        let live: Vec<_> = incr.iter().filter(|(s, _)| *s >= from).collect();
        for (i, (s, p)) in live.iter().enumerate() {
            if *s != from + i as u64 {
                return Err(format!(
                    "the append-only increment file {} follows a missing one (number {}); \
                     refusing to start",
                    p.display(),
                    from + i as u64
                ));
            }
        }
        let loaded = load(&base, store, live.is_empty())?;
        chain.frames += loaded.frames;
        chain.files.push((0, file_len(&base)?));
        live
    };
    for (i, (seq, path)) in live.iter().enumerate() {
        let loaded = load(path, store, i + 1 == live.len())?;
        chain.frames += loaded.frames;
        chain.files.push((*seq, file_len(path)?));
    }
    // Stale files: increments the base already contains, an interrupted rewrite's output.
    for (seq, path) in &incr {
        if chain.files.iter().all(|(s, _)| s != seq) {
            let _ = std::fs::remove_file(path);
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(TEMP_PREFIX))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(chain)
}

fn file_len(path: &Path) -> Result<u64, String> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| io_err("cannot stat", path, e))
}

impl Aof {
    /// Opens (or creates) the append-only file chain in `dir`, replays it into `store`
    /// and starts the flusher thread. `Err` is a message for the user (corruption, I/O).
    pub(crate) fn open(
        dir: &Path,
        settings: Arc<AofSettings>,
        store: &Store,
    ) -> Result<Arc<Aof>, String> {
        std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        let chain = load_chain(dir, store)?;
        let &(live_seq, live_size) = chain.files.last().expect("the chain has a base");
        let live_path = if live_seq == 0 {
            dir.join(FILE_NAME)
        } else {
            dir.join(incr_name(live_seq))
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&live_path)
            .map_err(|e| io_err("cannot open", &live_path, e))?;
        let total: u64 = chain.files.iter().map(|f| f.1).sum();
        println!(
            "append-only file {} loaded: {} writes replayed from {} file(s), {total} bytes \
             (appendfsync {})",
            dir.join(FILE_NAME).display(),
            chain.frames,
            chain.files.len(),
            settings.fsync().name()
        );
        let aof = Arc::new(Aof {
            dir: dir.to_path_buf(),
            settings,
            state: Mutex::new(State {
                buf: Vec::new(),
                appended: 0,
                stop: false,
            }),
            wake: Condvar::new(),
            io: Mutex::new(Io {
                file,
                live_seq,
                written: 0,
                synced: 0,
                last_sync: Instant::now(),
                before_live: total - live_size,
                live_size,
            }),
            acked: tokio::sync::watch::Sender::new(0),
            stats: AofStats::default(),
        });
        // As Redis after loading: growth is measured from the size found at start.
        aof.stats.base_size.store(total, Ordering::Relaxed);
        aof.stats.current_size.store(total, Ordering::Relaxed);
        aof.stats.last_rewrite_ok.store(true, Ordering::Relaxed);
        aof.stats
            .loaded_frames
            .store(chain.frames, Ordering::Relaxed);
        let flusher = aof.clone();
        std::thread::Builder::new()
            .name("aof-flusher".into())
            .spawn(move || flusher.flush_loop())
            .map_err(|e| format!("cannot start the append-only file's thread: {e}"))?;
        Ok(aof)
    }

    /// The fsync policy in force.
    pub(crate) fn fsync(&self) -> Fsync {
        self.settings.fsync()
    }

    /// Appends one command's records as a frame; returns the position a reply must wait
    /// for ([`Aof::wait`]).
    pub(crate) fn append(&self, records: &[u8]) -> u64 {
        let mut st = lock(&self.state);
        let before = st.buf.len();
        encode_frame(&mut st.buf, records);
        let n = st.buf.len() - before;
        st.appended += n as u64;
        let seq = st.appended;
        if before == 0 {
            self.wake.notify_one();
        }
        seq
    }

    /// Waits until position `seq` may be acknowledged (see the module docs).
    pub(crate) async fn wait(&self, seq: u64) {
        let mut rx = self.acked.subscribe();
        let _ = rx.wait_for(|&a| a >= seq).await;
    }

    /// The flusher thread: writes what was appended, syncs per the policy, publishes.
    fn flush_loop(&self) {
        loop {
            let stop = {
                let mut st = lock(&self.state);
                if st.buf.is_empty() && !st.stop {
                    st = self
                        .wake
                        .wait_timeout(st, Duration::from_millis(100))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                st.stop
            };
            if let Err(e) = self.flush_once() {
                eprintln!("orrery-server: fatal: cannot write the append-only file: {e}");
                std::process::exit(1);
            }
            if stop {
                return;
            }
        }
    }

    /// Writes the buffered frames and syncs per the policy; publishes the new position.
    fn flush_once(&self) -> Result<(), String> {
        let mut io = lock(&self.io);
        self.flush_locked(&mut io, false)
    }

    fn live_path(&self, io: &Io) -> PathBuf {
        if io.live_seq == 0 {
            self.dir.join(FILE_NAME)
        } else {
            self.dir.join(incr_name(io.live_seq))
        }
    }

    /// [`Aof::flush_once`] with the file held; `force_sync` syncs whatever the policy.
    fn flush_locked(&self, io: &mut Io, force_sync: bool) -> Result<(), String> {
        let (buf, end) = {
            let mut st = lock(&self.state);
            (std::mem::take(&mut st.buf), st.appended)
        };
        if !buf.is_empty() {
            io.file
                .write_all(&buf)
                .map_err(|e| io_err("cannot write", &self.live_path(io), e))?;
            io.live_size += buf.len() as u64;
            io.written = end;
            self.stats
                .current_size
                .store(io.chain_size(), Ordering::Relaxed);
            let mut st = lock(&self.state);
            if st.buf.capacity() == 0 && buf.capacity() <= 1 << 20 {
                // Reuse the allocation.
                let mut buf = buf;
                buf.clear();
                st.buf = buf;
            }
        }
        let fsync = self.fsync();
        let sync_now = io.synced < io.written
            && match fsync {
                Fsync::Always => true,
                Fsync::EverySec => force_sync || io.last_sync.elapsed() >= Duration::from_secs(1),
                Fsync::No => force_sync,
            };
        if sync_now {
            io.file
                .sync_data()
                .map_err(|e| io_err("cannot fdatasync", &self.live_path(io), e))?;
            io.synced = io.written;
            io.last_sync = Instant::now();
        }
        let acked = match fsync {
            // Under `always` only what is synced; a switch from `everysec` to `always`
            // thus waits for the next sync.
            Fsync::Always => io.synced,
            _ => io.written,
        };
        self.publish(acked);
        Ok(())
    }

    fn publish(&self, acked: u64) {
        self.acked.send_if_modified(|a| {
            let changed = *a < acked;
            *a = (*a).max(acked);
            changed
        });
    }

    /// Writes and syncs everything appended so far and stops the flusher (shutdown).
    pub(crate) fn close(&self) {
        lock(&self.state).stop = true;
        self.wake.notify_one();
        let res = {
            let mut io = lock(&self.io);
            self.flush_locked(&mut io, true)
        };
        match res {
            Ok(()) => println!("append-only file synced"),
            Err(e) => eprintln!("orrery-server: cannot sync the append-only file: {e}"),
        }
    }

    /// Whether the file grew enough for an automatic rewrite (Redis's rule: at least
    /// `auto-aof-rewrite-min-size` bytes, and `auto-aof-rewrite-percentage` percent
    /// more than after the last rewrite, or than at start), and none runs.
    pub(crate) fn wants_auto_rewrite(&self) -> Option<u64> {
        let pct = self.settings.auto_percentage.load(Ordering::Relaxed);
        if pct == 0 || self.stats.rewrite_in_progress.load(Ordering::Relaxed) {
            return None;
        }
        let size = self.stats.current_size.load(Ordering::Relaxed);
        if size < self.settings.auto_min_size.load(Ordering::Relaxed) {
            return None;
        }
        let base = self.stats.base_size.load(Ordering::Relaxed).max(1);
        let growth = size.saturating_sub(base).saturating_mul(100) / base;
        (growth >= pct).then_some(growth)
    }

    /// Starts [`Aof::rewrite`] on its own thread unless one runs; `false` if one does.
    /// `auto`: started by growth (counted in `aof_auto_rewrites`).
    pub(crate) fn rewrite_in_background(self: &Arc<Self>, store: Arc<Store>, auto: bool) -> bool {
        if self.stats.rewrite_in_progress.swap(true, Ordering::AcqRel) {
            return false;
        }
        if auto {
            self.stats.auto_rewrites.fetch_add(1, Ordering::Relaxed);
        }
        let aof = self.clone();
        let spawned = std::thread::Builder::new()
            .name("aof-rewrite".into())
            .spawn(move || {
                let res = aof.rewrite_now(&store);
                aof.stats
                    .rewrite_in_progress
                    .store(false, Ordering::Release);
                if let Err(e) = res {
                    eprintln!("orrery-server: append-only file rewrite failed: {e}");
                }
            });
        if spawned.is_err() {
            self.stats
                .rewrite_in_progress
                .store(false, Ordering::Release);
        }
        spawned.is_ok()
    }

    /// Rewrites the file on the calling thread (`SAVE`); `Err` if a rewrite runs already
    /// or the rewrite failed.
    pub(crate) fn rewrite(&self, store: &Store) -> Result<(), String> {
        if self.stats.rewrite_in_progress.swap(true, Ordering::AcqRel) {
            return Err("a rewrite is already in progress".into());
        }
        let res = self.rewrite_now(store);
        self.stats
            .rewrite_in_progress
            .store(false, Ordering::Release);
        res
    }

    fn rewrite_now(&self, store: &Store) -> Result<(), String> {
        let tmp = self
            .dir
            .join(format!("{TEMP_PREFIX}{}.aof", std::process::id()));
        let res = self.start_increment().and_then(|seq| {
            self.write_snapshot(store, &tmp, seq)
                .and_then(|size| self.commit(&tmp, seq, size))
        });
        if res.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        self.stats
            .last_rewrite_ok
            .store(res.is_ok(), Ordering::Relaxed);
        if res.is_ok() {
            self.stats.rewrites.fetch_add(1, Ordering::Relaxed);
        }
        res
    }

    /// Step 1 of a rewrite: the live file is written out and synced, and a new, empty
    /// increment file becomes the live one; returns its number.
    fn start_increment(&self) -> Result<u64, String> {
        let mut io = lock(&self.io);
        self.flush_locked(&mut io, true)?;
        let seq = io.live_seq + 1;
        let path = self.dir.join(incr_name(seq));
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .map_err(|e| io_err("cannot create", &path, e))?;
        file.write_all(MAGIC)
            .and_then(|()| file.sync_all())
            .map_err(|e| io_err("cannot write", &path, e))?;
        sync_dir(&self.dir)?;
        io.file = file;
        io.live_seq = seq;
        io.before_live += io.live_size;
        io.live_size = MAGIC.len() as u64;
        self.stats
            .current_size
            .store(io.chain_size(), Ordering::Relaxed);
        Ok(seq)
    }

    /// Step 2: writes every live key's state to `tmp` (synced), headed by the record
    /// naming the first increment that follows it; returns the file's size.
    fn write_snapshot(&self, store: &Store, tmp: &Path, seq: u64) -> Result<u64, String> {
        let file = File::create(tmp).map_err(|e| io_err("cannot create", tmp, e))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut err = None;
        let mut frame = Vec::new();
        let mut records = Vec::new();
        let mut emit = |w: &mut BufWriter<File>, records: &mut Vec<u8>| {
            frame.clear();
            encode_frame(&mut frame, records);
            records.clear();
            w.write_all(&frame)
        };
        let now = crate::server::now_ms();
        w.write_all(MAGIC)
            .map_err(|e| io_err("cannot write", tmp, e))?;
        encode_op(&mut records, &[b"BASE", seq.to_string().as_bytes()]);
        emit(&mut w, &mut records).map_err(|e| io_err("cannot write", tmp, e))?;
        let mut write_key = |key: &[u8], raw: &[u8]| -> std::io::Result<()> {
            let Some((kind, deadline, at)) = header(raw) else {
                return Ok(());
            };
            if deadline.is_some_and(|d| d <= now) {
                return Ok(());
            }
            let delay = self.settings.key_delay_us.load(Ordering::Relaxed);
            if delay > 0 {
                std::thread::sleep(Duration::from_micros(delay));
            }
            match kind {
                Kind::String => {
                    encode_op(&mut records, &[b"SET", key, raw]);
                    emit(&mut w, &mut records)
                }
                Kind::ZSet => {
                    let id = raw[at..].try_into().map(u64::from_be_bytes).ok();
                    let set = id.and_then(|id| store.zset_by_id(id));
                    let mut res = Ok(());
                    if let Some(set) = set {
                        let mut after: Option<Vec<u8>> = None;
                        loop {
                            let chunk = set.members_after(after.as_deref(), 1024);
                            for (m, score) in &chunk {
                                let bits = score.to_bits().to_be_bytes();
                                encode_op(&mut records, &[b"ZADD", key, m, &bits]);
                            }
                            if let Some(d) = deadline {
                                encode_op(
                                    &mut records,
                                    &[b"PEXPIREAT", key, d.to_string().as_bytes()],
                                );
                            }
                            res = emit(&mut w, &mut records);
                            match chunk.into_iter().last() {
                                Some((m, _)) if res.is_ok() => after = Some(m),
                                _ => break,
                            }
                        }
                    }
                    res
                }
            }
        };
        if let Some(o) = store.ordered() {
            // In batches copied out of the index, so that file writes (and the testing
            // delay) never run inside the index's scan, where they would hold up writers
            // of the keys being visited.
            let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut resume: Option<Vec<u8>> = None;
            loop {
                batch.clear();
                let mut bytes = 0;
                let start = resume.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                o.scan(start, &mut |k, v| {
                    batch.push((k.to_vec(), v.to_vec()));
                    bytes += k.len() + v.len();
                    if batch.len() >= 256 || bytes >= 1 << 20 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
                for (k, v) in &batch {
                    if let Err(e) = write_key(k, v) {
                        err = Some(e);
                        break;
                    }
                }
                match batch.pop() {
                    Some((k, _)) if err.is_none() => resume = Some(k),
                    _ => break,
                }
            }
        } else {
            store.walk(&mut |key, raw| match write_key(key, raw) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    err = Some(e);
                    ControlFlow::Break(())
                }
            });
        }
        if let Some(e) = err {
            return Err(io_err("cannot write", tmp, e));
        }
        let file = w
            .into_inner()
            .map_err(|e| io_err("cannot write", tmp, e.into_error()))?;
        file.sync_data()
            .map_err(|e| io_err("cannot fdatasync", tmp, e))?;
        file_len(tmp)
    }

    /// Step 3: the new base replaces the old one (the commit point: one `rename`), then
    /// the increments it contains are deleted.
    fn commit(&self, tmp: &Path, seq: u64, size: u64) -> Result<(), String> {
        let base = self.dir.join(FILE_NAME);
        {
            let mut io = lock(&self.io);
            std::fs::rename(tmp, &base).map_err(|e| io_err("cannot rename", tmp, e))?;
            sync_dir(&self.dir)?;
            // Only the base and the live increment remain in the chain (one rewrite runs
            // at a time, so `seq` is still the live file).
            debug_assert_eq!(io.live_seq, seq);
            io.before_live = size;
            self.stats.base_size.store(size, Ordering::Relaxed);
            self.stats
                .current_size
                .store(io.chain_size(), Ordering::Relaxed);
        }
        for (old, path) in list_incr(&self.dir)? {
            if old < seq {
                let _ = std::fs::remove_file(path);
            }
        }
        println!(
            "append-only file rewritten: base {size} bytes; writes made meanwhile are in {}",
            incr_name(seq)
        );
        Ok(())
    }
}

/// Why a frame could not be read.
enum Bad {
    /// The end of the file is a torn write.
    Torn,
    /// Anything else.
    Corrupt(String),
}

/// The increment number a base file's first frame names (`BASE n`), if it has one.
fn base_record(data: &[u8]) -> Option<u64> {
    if !data.starts_with(MAGIC) {
        return None;
    }
    let (payload, _) = frame_at(data, MAGIC.len()).ok()?;
    let (args, used) = resp::parse(payload, &record_limits()).ok()??;
    if used != payload.len() || args.len() != 2 || args[0] != b"BASE" {
        return None;
    }
    std::str::from_utf8(&args[1]).ok()?.parse().ok()
}

/// Replays the file at `path` into `store`. A torn tail is truncated when the file is
/// the `last` of the chain (the live one), and refused otherwise (an older file was
/// synced whole before the next one was started).
pub(crate) fn load(path: &Path, store: &Store, last: bool) -> Result<Loaded, String> {
    let data = std::fs::read(path).map_err(|e| io_err("cannot read", path, e))?;
    let refuse = |at: usize, why: &str| {
        format!(
            "the append-only file {} is corrupt at byte {at}: {why}; refusing to start \
             (move the file away to start empty, or repair it)",
            path.display()
        )
    };
    let now = crate::server::now_ms();
    let mut at;
    if data.len() < MAGIC.len() && MAGIC.starts_with(&data) {
        // Torn while it was being created.
        at = 0;
    } else if !data.starts_with(MAGIC) {
        return Err(refuse(
            0,
            "it does not start with the orrery append-only file magic",
        ));
    } else {
        at = MAGIC.len();
    }
    let mut frames = 0;
    let mut torn = false;
    if at == MAGIC.len()
        && base_record(&data).is_some()
        && let Ok((_, next)) = frame_at(&data, at)
    {
        // The `BASE` record is read by the chain's loader.
        at = next;
    }
    while at < data.len() && at >= MAGIC.len() {
        match frame_at(&data, at) {
            Ok((payload, next)) => {
                apply_frame(store, payload, now).map_err(|why| refuse(at, &why))?;
                frames += 1;
                at = next;
            }
            Err(Bad::Torn) => {
                torn = true;
                break;
            }
            Err(Bad::Corrupt(why)) => return Err(refuse(at, &why)),
        }
    }
    let truncated = (data.len() - at) as u64;
    if (torn || at < MAGIC.len()) && !last {
        return Err(refuse(
            at,
            "a torn write at the end of a file that is not the last of the chain",
        ));
    }
    if torn || at < MAGIC.len() {
        println!(
            "!!! Warning: the append-only file {} ends with a torn write: {truncated} bytes \
             after byte {at} do not form a whole record; truncating the file there \
             (the writes before it are kept; like Redis's aof-load-truncated) !!!",
            path.display()
        );
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| io_err("cannot open", path, e))?;
        let mut f = f;
        let res = if at < MAGIC.len() {
            f.set_len(0).and_then(|()| f.write_all(MAGIC))
        } else {
            f.set_len(at as u64)
        };
        res.and_then(|()| f.sync_all())
            .map_err(|e| io_err("cannot truncate", path, e))?;
    }
    Ok(Loaded { frames, truncated })
}

/// The payload of the frame at `at` and where the next one starts.
fn frame_at(data: &[u8], at: usize) -> Result<(&[u8], usize), Bad> {
    let rest = &data[at..];
    if rest.iter().all(|&b| b == 0) {
        return Err(Bad::Torn);
    }
    if rest.len() < FRAME_HEADER {
        return Err(Bad::Torn);
    }
    let word = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
    let (len, crc_len, crc_payload) = (word(0), word(4), word(8));
    if crc32c(&rest[..4]) != crc_len {
        return Err(Bad::Corrupt("a record header fails its checksum".into()));
    }
    let end = FRAME_HEADER + len as usize;
    if rest.len() < end {
        return Err(Bad::Torn);
    }
    let payload = &rest[FRAME_HEADER..end];
    if crc32c(payload) != crc_payload {
        if rest.len() == end {
            return Err(Bad::Torn);
        }
        return Err(Bad::Corrupt("a record fails its checksum".into()));
    }
    Ok((payload, at + end))
}

/// The parser's limits for records (the file was written by us: generous).
fn record_limits() -> resp::Limits {
    resp::Limits {
        max_bulk_len: 1 << 32,
        max_multibulk_len: 1 << 30,
        max_inline_len: 64,
    }
}

/// Applies the records of one frame.
fn apply_frame(store: &Store, mut payload: &[u8], now: u64) -> Result<(), String> {
    let limits = record_limits();
    while !payload.is_empty() {
        let (args, used) = match resp::parse(payload, &limits) {
            Ok(Some(x)) => x,
            _ => return Err("a record does not parse".into()),
        };
        payload = &payload[used..];
        apply(store, &args, now)?;
    }
    Ok(())
}

/// Applies one record (see the module docs).
fn apply(store: &Store, args: &[Vec<u8>], now: u64) -> Result<(), String> {
    let op = args.first().map(|a| &a[..]).unwrap_or_default();
    let key = args.get(1).map(|a| &a[..]).unwrap_or_default();
    let bad = || {
        format!(
            "unknown record {:?} with {} arguments",
            String::from_utf8_lossy(op),
            args.len()
        )
    };
    store.write(&[key], now, |t| match (op, args.len()) {
        (b"SET", 3) => {
            let entry = crate::store::decode_raw(&args[2]).ok_or_else(bad)?;
            t.store(key, &entry).map_err(|e| e.message())
        }
        (b"DEL", 2) => {
            t.delete(key);
            Ok(())
        }
        (b"ZADD", 4) => {
            let bits: [u8; 8] = args[3][..].try_into().map_err(|_| bad())?;
            let score = f64::from_bits(u64::from_be_bytes(bits));
            let set = match t.load(key) {
                Some(e) if e.kind == Kind::ZSet => t.zset(&e),
                _ => None,
            };
            let set = match set {
                Some(s) => s,
                None => {
                    t.delete(key);
                    t.create_zset(key).map_err(|e| e.message())?
                }
            };
            let old = set.score(&args[2]);
            t.zset_insert(key, &set, &args[2], score, old)
                .map_err(|e| crate::store::WriteError::from(e).message())
        }
        (b"ZREM", 3) => {
            let set = t
                .load(key)
                .filter(|e| e.kind == Kind::ZSet)
                .and_then(|e| t.zset(&e));
            if let Some(set) = set {
                t.zset_remove(key, &set, &args[2]);
                if set.len() == 0 {
                    t.delete(key);
                }
            }
            Ok(())
        }
        (b"PEXPIREAT", 3) | (b"PERSIST", 2) => {
            let deadline = match args.get(2) {
                Some(d) => Some(
                    std::str::from_utf8(d)
                        .ok()
                        .and_then(|d| d.parse::<u64>().ok())
                        .ok_or_else(bad)?,
                ),
                None => None,
            };
            if let Some(mut e) = t.load(key) {
                e.deadline = deadline;
                t.store(key, &e).map_err(|e| e.message())?;
            }
            Ok(())
        }
        _ => Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Entry;

    /// A file of `MAGIC` and three frames (SET a, SET b + ZADD z, DEL a); the offsets at
    /// which each frame starts.
    fn sample() -> (Vec<u8>, Vec<usize>) {
        let mut data = MAGIC.to_vec();
        let mut starts = Vec::new();
        let raw = |v: &[u8]| {
            let mut r = vec![0u8];
            r.extend_from_slice(v);
            r
        };
        let frames: Vec<Vec<u8>> = vec![
            {
                let mut r = Vec::new();
                encode_op(&mut r, &[b"SET", b"a", &raw(b"1")]);
                r
            },
            {
                let mut r = Vec::new();
                encode_op(&mut r, &[b"SET", b"b", &raw(b"2")]);
                encode_op(
                    &mut r,
                    &[b"ZADD", b"z", b"m", &2.5f64.to_bits().to_be_bytes()],
                );
                r
            },
            {
                let mut r = Vec::new();
                encode_op(&mut r, &[b"DEL", b"a"]);
                r
            },
        ];
        for f in frames {
            starts.push(data.len());
            encode_frame(&mut data, &f);
        }
        (data, starts)
    }

    /// A log file in its own temporary directory, removed with it when dropped.
    struct TempLog(PathBuf);

    impl std::ops::Deref for TempLog {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl AsRef<Path> for TempLog {
        fn as_ref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempLog {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn file(name: &str, bytes: &[u8]) -> TempLog {
        let dir = std::env::temp_dir().join(format!("orrery-aof-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        std::fs::write(&path, bytes).unwrap();
        TempLog(path)
    }

    fn store() -> Store {
        Store::open("wormhole").unwrap()
    }

    #[test]
    fn replays_every_record() {
        let (data, _) = sample();
        let path = file("replay", &data);
        let s = store();
        let loaded = load(&path, &s, true).unwrap();
        assert_eq!(
            loaded,
            Loaded {
                frames: 3,
                truncated: 0
            }
        );
        assert!(s.kv().get(b"a").is_none());
        assert_eq!(s.read(b"b", 0, |_, _, v| v.to_vec()), Some(b"2".to_vec()));
        let z = s
            .write(&[b"z"], 0, |t| t.load(b"z").and_then(|e| t.zset(&e)))
            .unwrap();
        assert_eq!(z.score(b"m"), Some(2.5));
    }

    #[test]
    fn every_cut_inside_the_last_frame_is_a_torn_tail() {
        let (data, starts) = sample();
        let last = *starts.last().unwrap();
        for cut in last + 1..data.len() {
            let path = file("cut", &data[..cut]);
            let s = store();
            let loaded = load(&path, &s, true).unwrap();
            assert_eq!(
                loaded,
                Loaded {
                    frames: 2,
                    truncated: (cut - last) as u64
                },
                "{cut}"
            );
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                last as u64,
                "{cut}"
            );
            assert!(s.kv().get(b"a").is_some(), "the DEL was torn off");
        }
    }

    #[test]
    fn a_flipped_byte_before_the_last_frame_refuses_to_load() {
        let (data, starts) = sample();
        let last = *starts.last().unwrap();
        for at in 0..last {
            for bit in [0x01, 0x80] {
                let mut bad = data.clone();
                bad[at] ^= bit;
                let path = file("flip", &bad);
                let err = load(&path, &store(), true).unwrap_err();
                assert!(err.contains("corrupt at byte"), "{at}: {err}");
                assert_eq!(std::fs::read(&path).unwrap(), bad, "left untouched");
            }
        }
        // In the last frame: its length is checked (corrupt), its payload is torn.
        for at in last..data.len() {
            let mut bad = data.clone();
            bad[at] ^= 0x01;
            let res = load(&file("flip-last", &bad), &store(), true);
            if at < last + 8 {
                assert!(res.is_err(), "{at}");
            } else {
                assert_eq!(res.unwrap().frames, 2, "{at}");
            }
        }
    }

    /// Every key with its stored bytes.
    fn dump(s: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        s.walk(&mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        out
    }

    /// A copy of the files of `dir` in a new directory (the disk as a crash leaves it).
    fn crash_copy(dir: &Path, name: &str) -> TempLog {
        let copy = file(name, b"");
        let to = copy.parent().unwrap().to_path_buf();
        std::fs::remove_file(&*copy).unwrap();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        copy
    }

    /// A crash at each step of a rewrite leaves files that load to the state of the
    /// last write made before it, and a restarted server rewrites again correctly.
    #[test]
    fn a_crash_at_every_step_of_a_rewrite_loses_nothing() {
        let home = file("steps", b"");
        let dir = home.parent().unwrap().to_path_buf();
        std::fs::remove_file(&*home).unwrap();
        let settings = Arc::new(AofSettings::new(Fsync::Always, 0, 0, 0));
        let mut s = store();
        let aof = Aof::open(&dir, settings, &s).unwrap();
        s.set_aof(aof.clone());
        let set = |s: &Store, k: &str, v: &str| {
            s.write(&[k.as_bytes()], 0, |t| {
                t.store(k.as_bytes(), &Entry::string(v.as_bytes().to_vec()))
                    .unwrap()
            })
        };
        let del = |s: &Store, k: &str| s.write(&[k.as_bytes()], 0, |t| t.delete(k.as_bytes()));
        // The disk state at a crash now must load to `dump(&s)`.
        let check = |s: &Store, step: &str| {
            aof.flush_once().unwrap();
            let copy = crash_copy(&dir, step);
            let loaded = store();
            load_chain(copy.parent().unwrap(), &loaded).unwrap();
            assert_eq!(dump(&loaded), dump(s), "crash after: {step}");
        };
        for i in 0..50 {
            set(&s, &format!("k{}", i % 10), &i.to_string());
        }
        check(&s, "writes");
        for round in 1..=2u64 {
            let seq = aof.start_increment().unwrap();
            assert_eq!(seq, round);
            check(&s, "a new increment file is live");
            set(&s, "k1", "during");
            del(&s, "k2");
            set(&s, &format!("new{round}"), "x");
            check(&s, "writes to the increment");
            let tmp = dir.join(format!("{TEMP_PREFIX}test.aof"));
            let size = aof.write_snapshot(&s, &tmp, seq).unwrap();
            set(&s, "k3", "after the walk");
            check(&s, "the new base written, not renamed");
            // The rename done, the older increment not yet deleted.
            std::fs::copy(&tmp, dir.join("saved-base")).unwrap();
            let stale = (round > 1).then(|| std::fs::read(dir.join(incr_name(round - 1))).unwrap());
            aof.commit(&tmp, seq, size).unwrap();
            let after_commit = crash_copy(&dir, "after-commit");
            if let Some(stale) = &stale {
                std::fs::write(
                    after_commit.parent().unwrap().join(incr_name(round - 1)),
                    stale,
                )
                .unwrap();
                let loaded = store();
                load_chain(after_commit.parent().unwrap(), &loaded).unwrap();
                aof.flush_once().unwrap();
                assert_eq!(
                    dump(&loaded),
                    dump(&s),
                    "crash before the stale increment went"
                );
                assert!(
                    !after_commit
                        .parent()
                        .unwrap()
                        .join(incr_name(round - 1))
                        .exists(),
                    "the stale increment is removed at load"
                );
            }
            std::fs::remove_file(dir.join("saved-base")).unwrap();
            set(&s, "k4", "after the commit");
            check(&s, "the commit");
        }
        assert!(!dir.join(incr_name(1)).exists());
        aof.close();
    }

    /// Regression guard for the loader on hostile files: random edits never panic; each
    /// load either refuses or replays whole frames.
    #[test]
    fn random_damage_never_panics() {
        let (data, _) = sample();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..300 {
            let mut bad = data.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bad.len();
                match next() % 3 {
                    0 => bad[at] = next() as u8,
                    1 => bad.truncate(at.max(1)),
                    _ => bad.insert(at, next() as u8),
                }
            }
            if let Ok(l) = load(&file("random", &bad), &store(), true) {
                assert!(l.frames <= 3, "{i}");
            }
        }
    }
}
