//! The open log: appending frames, the flusher thread, the fsync policy, group commit.
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

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::chain::{FILE_NAME, encode_frame, incr_name, io_err};
use super::replay::load_chain;
use super::settings::{AofSettings, AofStats, Fsync};
use crate::store::{Databases, Journal};

/// Appender-side state.
pub(super) struct State {
    /// Frames not yet handed to the file.
    pub(super) buf: Vec<u8>,
    /// Logical position after the last appended frame.
    pub(super) appended: u64,
    pub(super) stop: bool,
}

/// Flusher-side state (held while writing the file).
pub(super) struct Io {
    /// The live file: the last of the chain, the one frames are appended to.
    pub(super) file: File,
    /// Its increment number (0: the base file is live).
    pub(super) live_seq: u64,
    /// Logical position written to `file` and the one last synced.
    pub(super) written: u64,
    pub(super) synced: u64,
    pub(super) last_sync: Instant,
    /// When the oldest write not yet synced reached the file (`None`: all synced).
    pub(super) unsynced_since: Option<Instant>,
    /// Bytes in the chain's files before the live one, and in the live one.
    pub(super) before_live: u64,
    pub(super) live_size: u64,
}

impl Io {
    pub(super) fn chain_size(&self) -> u64 {
        self.before_live + self.live_size
    }
}

/// An open append-only file; see the [module docs](self).
pub(crate) struct Aof {
    pub(super) dir: PathBuf,
    pub(crate) settings: Arc<AofSettings>,
    pub(super) state: Mutex<State>,
    pub(super) wake: Condvar,
    pub(super) io: Mutex<Io>,
    /// The position replies may be sent at (durable per `fsync`).
    pub(super) acked: tokio::sync::watch::Sender<u64>,
    pub(crate) stats: AofStats,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Aof {
    /// Opens (or creates) the append-only file chain in `dir`, replays it into `store`
    /// and starts the flusher thread. `Err` is a message for the user (corruption, I/O).
    pub(crate) fn open(
        dir: &Path,
        settings: Arc<AofSettings>,
        store: &Databases,
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
                unsynced_since: None,
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
    pub(super) fn flush_once(&self) -> Result<(), String> {
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
    pub(super) fn flush_locked(&self, io: &mut Io, force_sync: bool) -> Result<(), String> {
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
            io.unsynced_since.get_or_insert_with(Instant::now);
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
            if let Some(since) = io.unsynced_since.take()
                && fsync != Fsync::Always
            {
                let waited = since.elapsed().as_micros() as u64;
                self.stats
                    .max_unsynced_us
                    .fetch_max(waited, Ordering::Relaxed);
            }
        }
        self.stats
            .unsynced_bytes
            .store(io.written - io.synced, Ordering::Relaxed);
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
}

impl Journal for Aof {
    fn append(&self, records: &[u8]) -> u64 {
        Aof::append(self, records)
    }

    fn appended(&self) -> u64 {
        lock(&self.state).appended
    }
}
