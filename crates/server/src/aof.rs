//! Persistence: the append-only file (`--appendonly yes`), its replay at start, its rewrite
//! while the server runs (`BGREWRITEAOF`, `SAVE`), and group commit.
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
//! # File format
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
//! At start the frames are read in order and applied. The end of the file may hold a
//! frame torn by a crash: fewer than 12 header bytes, a payload shorter than its length, a
//! last frame whose payload does not match its checksum, or a tail of zero bytes (blocks
//! the file system allocated but never wrote). Such a tail is cut off (the file is
//! truncated to the last whole frame) and a log line says how many bytes went, as Redis
//! does with `aof-load-truncated yes`. Anything else — a wrong magic, a header or payload
//! checksum mismatch before the last frame, a record that does not parse or is unknown —
//! refuses to start, naming the file and the offset.
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
//! [`Aof::rewrite`] compacts the file without stopping the server: it starts copying every
//! record appended from then on into a side buffer, walks the keyspace writing each key's
//! state to a temporary file, then — holding the file and the buffer, so briefly blocking
//! writers — appends the side buffer, `fdatasync`s, renames it over the old file and
//! syncs the directory. The walk is not a snapshot (other writers keep going), but every
//! change made during it is in the side buffer, and records are assignments to parts of
//! the keyspace (a key's whole value, one member's score, a deadline), so replaying them
//! after any state the walk saw for a key yields that key's final state.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use orrery::hash::crc32c;

use crate::resp;
use crate::store::{Kind, Store, header};

/// The file's first bytes.
const MAGIC: &[u8] = b"ORRERYAOF1\n";
/// Bytes before a frame's payload.
const FRAME_HEADER: usize = 12;
/// The file's name inside `--dir`.
pub(crate) const FILE_NAME: &str = "appendonly.aof";

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
    /// While a rewrite runs: the frames appended since it started.
    rewrite: Option<Vec<u8>>,
    stop: bool,
}

/// Flusher-side state (held while writing the file).
struct Io {
    file: File,
    /// Logical position written to `file` and the one last synced.
    written: u64,
    synced: u64,
    last_sync: Instant,
    /// Bytes in the file.
    size: u64,
}

/// Figures for `INFO persistence`.
#[derive(Default)]
pub(crate) struct AofStats {
    pub(crate) rewrites: AtomicU64,
    pub(crate) last_rewrite_ok: AtomicBool,
    pub(crate) base_size: AtomicU64,
    pub(crate) current_size: AtomicU64,
    pub(crate) rewrite_in_progress: AtomicBool,
    pub(crate) loaded_frames: AtomicU64,
}

/// An open append-only file; see the [module docs](self).
pub(crate) struct Aof {
    path: PathBuf,
    dir: PathBuf,
    fsync: Fsync,
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

/// What loading found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// Frames applied.
    pub(crate) frames: u64,
    /// Bytes cut off a torn tail (0: none).
    pub(crate) truncated: u64,
}

impl Aof {
    /// Opens (or creates) `dir/appendonly.aof`, replays it into `store` and starts the
    /// flusher thread. `Err` is a message for the user (corruption, I/O).
    pub(crate) fn open(dir: &Path, fsync: Fsync, store: &Store) -> Result<Arc<Aof>, String> {
        std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        let path = dir.join(FILE_NAME);
        let loaded = if path.exists() {
            load(&path, store)?
        } else {
            let mut f = File::create(&path).map_err(|e| io_err("cannot create", &path, e))?;
            f.write_all(MAGIC)
                .and_then(|()| f.sync_all())
                .map_err(|e| io_err("cannot write", &path, e))?;
            sync_dir(dir)?;
            Loaded {
                frames: 0,
                truncated: 0,
            }
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| io_err("cannot open", &path, e))?;
        let size = file
            .metadata()
            .map_err(|e| io_err("cannot stat", &path, e))?
            .len();
        println!(
            "append-only file {} loaded: {} writes replayed, {size} bytes (appendfsync {})",
            path.display(),
            loaded.frames,
            fsync.name()
        );
        let aof = Arc::new(Aof {
            path,
            dir: dir.to_path_buf(),
            fsync,
            state: Mutex::new(State {
                buf: Vec::new(),
                appended: 0,
                rewrite: None,
                stop: false,
            }),
            wake: Condvar::new(),
            io: Mutex::new(Io {
                file,
                written: 0,
                synced: 0,
                last_sync: Instant::now(),
                size,
            }),
            acked: tokio::sync::watch::Sender::new(0),
            stats: AofStats::default(),
        });
        aof.stats.base_size.store(size, Ordering::Relaxed);
        aof.stats.current_size.store(size, Ordering::Relaxed);
        aof.stats.last_rewrite_ok.store(true, Ordering::Relaxed);
        aof.stats
            .loaded_frames
            .store(loaded.frames, Ordering::Relaxed);
        let flusher = aof.clone();
        std::thread::Builder::new()
            .name("aof-flusher".into())
            .spawn(move || flusher.flush_loop())
            .map_err(|e| format!("cannot start the append-only file's thread: {e}"))?;
        Ok(aof)
    }

    /// The fsync policy.
    pub(crate) fn fsync(&self) -> Fsync {
        self.fsync
    }

    /// Appends one command's records as a frame; returns the position a reply must wait
    /// for ([`Aof::wait`]).
    pub(crate) fn append(&self, records: &[u8]) -> u64 {
        let mut st = lock(&self.state);
        let before = st.buf.len();
        encode_frame(&mut st.buf, records);
        let n = st.buf.len() - before;
        let st = &mut *st;
        if let Some(rw) = st.rewrite.as_mut() {
            rw.extend_from_slice(&st.buf[before..]);
        }
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
        let (buf, end) = {
            let mut st = lock(&self.state);
            (std::mem::take(&mut st.buf), st.appended)
        };
        if !buf.is_empty() {
            io.file
                .write_all(&buf)
                .map_err(|e| io_err("cannot write", &self.path, e))?;
            io.size += buf.len() as u64;
            io.written = end;
            self.stats.current_size.store(io.size, Ordering::Relaxed);
            let mut st = lock(&self.state);
            if st.buf.capacity() == 0 && buf.capacity() <= 1 << 20 {
                // Reuse the allocation.
                let mut buf = buf;
                buf.clear();
                st.buf = buf;
            }
        }
        let sync_now = match self.fsync {
            Fsync::Always => io.synced < io.written,
            Fsync::EverySec => {
                io.synced < io.written && io.last_sync.elapsed() >= Duration::from_secs(1)
            }
            Fsync::No => false,
        };
        if sync_now {
            io.file
                .sync_data()
                .map_err(|e| io_err("cannot fdatasync", &self.path, e))?;
            io.synced = io.written;
            io.last_sync = Instant::now();
        }
        let acked = match self.fsync {
            Fsync::Always => io.synced,
            _ => io.written,
        };
        self.acked.send_if_modified(|a| {
            let changed = *a < acked;
            *a = (*a).max(acked);
            changed
        });
        Ok(())
    }

    /// Writes and syncs everything appended so far and stops the flusher (shutdown).
    pub(crate) fn close(&self) {
        lock(&self.state).stop = true;
        self.wake.notify_one();
        let res = self.flush_once().and_then(|()| {
            let mut io = lock(&self.io);
            io.file
                .sync_data()
                .map_err(|e| io_err("cannot fdatasync", &self.path, e))?;
            io.synced = io.written;
            Ok(())
        });
        match res {
            Ok(()) => println!("append-only file synced"),
            Err(e) => eprintln!("orrery-server: cannot sync the append-only file: {e}"),
        }
    }

    /// Starts [`Aof::rewrite`] on its own thread unless one runs; `false` if one does.
    pub(crate) fn rewrite_in_background(self: &Arc<Self>, store: Arc<Store>) -> bool {
        if self.stats.rewrite_in_progress.swap(true, Ordering::AcqRel) {
            return false;
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
        lock(&self.state).rewrite = Some(Vec::new());
        let tmp = self
            .dir
            .join(format!("temp-rewriteaof-{}.aof", std::process::id()));
        let res = self
            .write_snapshot(store, &tmp)
            .and_then(|f| self.switch(f, &tmp));
        if res.is_err() {
            lock(&self.state).rewrite = None;
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

    /// Writes every live key's state to `tmp` (synced); returns the open file.
    fn write_snapshot(&self, store: &Store, tmp: &Path) -> Result<File, String> {
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
        store.walk(&mut |key, raw| {
            let Some((kind, deadline, at)) = header(raw) else {
                return ControlFlow::Continue(());
            };
            if deadline.is_some_and(|d| d <= now) {
                return ControlFlow::Continue(());
            }
            let res = match kind {
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
            };
            match res {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    err = Some(e);
                    ControlFlow::Break(())
                }
            }
        });
        if let Some(e) = err {
            return Err(io_err("cannot write", tmp, e));
        }
        let file = w
            .into_inner()
            .map_err(|e| io_err("cannot write", tmp, e.into_error()))?;
        file.sync_data()
            .map_err(|e| io_err("cannot fdatasync", tmp, e))?;
        Ok(file)
    }

    /// Appends what was written meanwhile to the rewritten file and puts it in place.
    fn switch(&self, mut file: File, tmp: &Path) -> Result<(), String> {
        let mut io = lock(&self.io);
        let mut st = lock(&self.state);
        let diff = st.rewrite.take().unwrap_or_default();
        file.write_all(&diff)
            .and_then(|()| file.sync_data())
            .map_err(|e| io_err("cannot write", tmp, e))?;
        std::fs::rename(tmp, &self.path).map_err(|e| io_err("cannot rename", tmp, e))?;
        sync_dir(&self.dir)?;
        let size = file
            .metadata()
            .map_err(|e| io_err("cannot stat", &self.path, e))?
            .len();
        // Every frame still buffered was appended either before the walk (its effect is
        // in the snapshot) or after it started (it is in `diff`).
        st.buf.clear();
        io.file = file;
        io.size = size;
        io.written = st.appended;
        io.synced = st.appended;
        io.last_sync = Instant::now();
        let end = st.appended;
        drop(st);
        self.stats.base_size.store(size, Ordering::Relaxed);
        self.stats.current_size.store(size, Ordering::Relaxed);
        self.acked.send_if_modified(|a| {
            let changed = *a < end;
            *a = (*a).max(end);
            changed
        });
        drop(io);
        println!(
            "append-only file rewritten: {size} bytes ({} bytes written meanwhile)",
            diff.len()
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

/// Replays the file at `path` into `store`, truncating a torn tail.
pub(crate) fn load(path: &Path, store: &Store) -> Result<Loaded, String> {
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

/// Applies the records of one frame.
fn apply_frame(store: &Store, mut payload: &[u8], now: u64) -> Result<(), String> {
    let limits = resp::Limits {
        max_bulk_len: 1 << 32,
        max_multibulk_len: 1 << 30,
        max_inline_len: 64,
    };
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
        let loaded = load(&path, &s).unwrap();
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
            let loaded = load(&path, &s).unwrap();
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
                let err = load(&path, &store()).unwrap_err();
                assert!(err.contains("corrupt at byte"), "{at}: {err}");
                assert_eq!(std::fs::read(&path).unwrap(), bad, "left untouched");
            }
        }
        // In the last frame: its length is checked (corrupt), its payload is torn.
        for at in last..data.len() {
            let mut bad = data.clone();
            bad[at] ^= 0x01;
            let res = load(&file("flip-last", &bad), &store());
            if at < last + 8 {
                assert!(res.is_err(), "{at}");
            } else {
                assert_eq!(res.unwrap().frames, 2, "{at}");
            }
        }
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
            if let Ok(l) = load(&file("random", &bad), &store()) {
                assert!(l.frames <= 3, "{i}");
            }
        }
    }
}
