//! Compacting the log while the server runs.
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
//! string's whole value, a field's value, a member's presence or score, the element at a
//! list position, a list's span, a deadline), so replaying `N` after any state the walk
//! saw for a key yields that key's final state. A large collection is walked in chunks
//! (`crate::coll::dump`), each element as it was when its chunk was read: an element
//! changed since the rewrite began has its record in `N`; a list's span is written as it
//! was when its walk began, after its elements, so an element the walk read outside
//! that span (pushed meanwhile) is dropped on replay and put back by `N`.
//!
//! **Automatic rewrite**: the server's cron (every 100 ms) starts a background rewrite
//! when the chain is at least `auto-aof-rewrite-min-size` bytes (default 64 MiB) and has
//! grown by `auto-aof-rewrite-percentage` percent (default 100; 0: off) since the last
//! rewrite, or since start, as Redis does. Both, the fsync policy and a testing delay per
//! key (and per 1024 records of a large collection) written by a rewrite
//! (`aof-rewrite-key-delay`, like Redis's `rdb-key-save-delay`)
//! are [`super::settings::AofSettings`], changed by `CONFIG SET` while the server runs.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::ops::{Bound, ControlFlow};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::chain::{
    FILE_NAME, MAGIC, TEMP_PREFIX, encode_frame, file_len, incr_name, io_err, list_incr, sync_dir,
};
use super::commit::{Aof, lock};
use crate::clock::now_ms;
use crate::coll::dump;
use crate::resp::encode_request;
use crate::store::{Databases, Store, header, select_record};

impl Aof {
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
    pub(crate) fn rewrite_in_background(
        self: &Arc<Self>,
        store: Arc<Databases>,
        auto: bool,
    ) -> bool {
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
    pub(crate) fn rewrite(&self, store: &Databases) -> Result<(), String> {
        if self.stats.rewrite_in_progress.swap(true, Ordering::AcqRel) {
            return Err("a rewrite is already in progress".into());
        }
        let res = self.rewrite_now(store);
        self.stats
            .rewrite_in_progress
            .store(false, Ordering::Release);
        res
    }

    fn rewrite_now(&self, store: &Databases) -> Result<(), String> {
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
    pub(super) fn start_increment(&self) -> Result<u64, String> {
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
    /// naming the first increment that follows it; returns the file's size. Each
    /// database's frames start with `SELECT n` (but database 0's: a frame starts there).
    pub(super) fn write_snapshot(
        &self,
        dbs: &Databases,
        tmp: &Path,
        seq: u64,
    ) -> Result<u64, String> {
        let file = File::create(tmp).map_err(|e| io_err("cannot create", tmp, e))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let now = now_ms();
        w.write_all(MAGIC)
            .map_err(|e| io_err("cannot write", tmp, e))?;
        let mut records = Vec::new();
        encode_request(&mut records, &[b"BASE", seq.to_string().as_bytes()]);
        let mut frame = Vec::new();
        encode_frame(&mut frame, &records);
        w.write_all(&frame)
            .map_err(|e| io_err("cannot write", tmp, e))?;
        for (db, store) in dbs.each() {
            self.snapshot_db(store, db, &mut w, now)
                .map_err(|e| io_err("cannot write", tmp, e))?;
        }
        let file = w
            .into_inner()
            .map_err(|e| io_err("cannot write", tmp, e.into_error()))?;
        file.sync_data()
            .map_err(|e| io_err("cannot fdatasync", tmp, e))?;
        file_len(tmp)
    }

    /// Writes the live keys of database `db` (its keyspace `store`) to `w`.
    fn snapshot_db(
        &self,
        store: &Store,
        db: usize,
        w: &mut BufWriter<File>,
        now: u64,
    ) -> std::io::Result<()> {
        let mut err = None;
        let mut frame = Vec::new();
        let prefix = if db == 0 {
            Vec::new()
        } else {
            select_record(db)
        };
        let mut records = prefix.clone();
        let mut emit = |w: &mut BufWriter<File>, records: &mut Vec<u8>| {
            frame.clear();
            encode_frame(&mut frame, records);
            records.clone_from(&prefix);
            w.write_all(&frame)
        };
        let mut write_key = |key: &[u8], raw: &[u8]| -> std::io::Result<()> {
            let Some(h) = header(raw) else {
                return Ok(());
            };
            if h.deadline.is_some_and(|d| d <= now) {
                return Ok(());
            }
            let delay = self.settings.key_delay_us.load(Ordering::Relaxed);
            if delay > 0 {
                std::thread::sleep(Duration::from_micros(delay));
            }
            // A key's records, in frames of up to 1024 records (a large collection's
            // elements come in chunks; see `crate::coll::dump`).
            let mut n = 0;
            dump(store, key, raw, &mut |parts| {
                encode_request(&mut records, parts);
                n += 1;
                if n % 1024 == 0 {
                    emit(w, &mut records)?;
                    // The testing delay applies to each chunk of a large collection too,
                    // so that writers can change one while it is being walked.
                    if delay > 0 {
                        std::thread::sleep(Duration::from_micros(delay));
                    }
                }
                Ok(())
            })?;
            if records.len() == prefix.len() {
                Ok(())
            } else {
                emit(w, &mut records)
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
        err.map_or(Ok(()), Err)
    }

    /// Step 3: the new base replaces the old one (the commit point: one `rename`), then
    /// the increments it contains are deleted.
    pub(super) fn commit(&self, tmp: &Path, seq: u64, size: u64) -> Result<(), String> {
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
