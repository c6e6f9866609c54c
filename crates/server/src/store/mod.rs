//! The keyspace: one shared Orrery index holding every key, with a small header in front of
//! each value (`value`), an ordered index of expiry deadlines, striped write locks, and the
//! element index of the large collections (`large`).
//!
//! # Layout
//!
//! | module | what |
//! |---|---|
//! | `value` | the value header: type, encoding, deadline (byte layout there) |
//! | `large` | large collections: the shared element index and the table of their counts |
//! | `txn` | [`Txn`]: the writes a command makes while it holds its keys' stripes, and their log records |
//! | `evict` | the keyspace under the memory limit: accounting, sampling, eviction, access field |
//! | `watch` | `WATCH`'s table of watched keys, touched by every change; the gate that makes `EXEC` atomic |
//!
//! # Concurrency
//!
//! Reads (`GET`, `MGET`, `EXISTS`, `TTL`, scans) take no lock: they are the index's own
//! lock-free or fine-grained lookups. Every write to a key holds the mutex of the key's
//! stripe (one of [`STRIPES`], chosen by a hash of the key) for the read-modify-write it
//! performs, so `INCR`, `APPEND`, `SET NX`, `GETSET`… are atomic per key without any global
//! lock: the trait objects the server holds (`dyn KvIndex`) have no `compute`, and the
//! stripe makes the index's `get` + `insert` one atomic step. Commands on several keys
//! (`MSET`, `MSETNX`, `RENAME`, `SMOVE`, `SUNIONSTORE` …) take their stripes in ascending
//! order, so they cannot deadlock. A stripe is never held across an `.await`. Every
//! command on a collection, readers included, holds its key's stripe: a large
//! collection's elements and count change together under it.
//!
//! # Durable reads
//!
//! A write makes its value visible in the index before its record is appended to the
//! journal (both under the key's stripe), and its reply waits for the record to be durable
//! (`appendfsync always`) or written (`everysec`, `no`). A read takes no lock, so it may
//! see a value whose record is not yet durable; if its reply went out at once and the
//! server then died, a client would have seen a write the restarted server does not have
//! (found by the `kill -9` linearizability test, `tests/jepsen.rs`). So with persistence
//! on, every command that touches keys passes the stripes of its keys after it ran
//! ([`Store::read_barrier`]: any writer whose value it could have seen has appended by
//! then) and its reply waits for the journal position it noted, as a write's does —
//! as on Redis, whose replies of one event-loop turn all go out after that turn's fsync.
//! With persistence off it costs nothing.
//!
//! # Expiry
//!
//! A key with a deadline also has an entry `deadline (8 bytes, big-endian) ++ key` in
//! `deadlines`, a [`Wormhole`] (ordered, so the due entries are a prefix of it); both are
//! changed together under the key's stripe. A read that finds an expired key treats it as
//! absent and removes it (lazy expiry); [`Store::expire_cycle`], run periodically by the
//! server, walks the due prefix of `deadlines` and removes those keys (active expiry).
//!
//! # Keys made ready
//!
//! When a list or sorted set is created under a key while some client waits in a blocking
//! pop ([`Store::set_waiting`] says whether any does), the key is noted in the command's
//! [`Call`]; the command layer serves the waiters of the noted keys after the command
//! (Redis's `signalKeyAsReady` and `handleClientsBlockedOnKeys`).

mod dbs;
mod evict;
mod large;
mod txn;
mod value;
mod watch;

use std::cell::{Cell, RefCell};
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use orrery::api::{MAX_KEY_LEN, MAX_VALUE_LEN};
use orrery::mercury::Mercury;
use orrery::registry::AnyIndex;
use orrery::wormhole::Wormhole;
use orrery::{KvIndex, OrderedKvIndex};

use crate::layout::Thresholds;

pub(crate) use dbs::{Databases, select_record};
pub(crate) use evict::ITEM_STRUCTURE;
pub(crate) use large::{Meta, Node, Nodes};
pub(crate) use txn::Txn;
pub(crate) use value::{Enc, Entry, Kind, MAX_HEADER, decode, header, large_id, set_access};
pub(crate) use watch::WatchFlag;

/// Number of write-lock stripes (a power of two).
pub(crate) const STRIPES: usize = 1024;

/// Longest key the server accepts: the index's limit less the deadline prefix.
pub(crate) const MAX_KEY: usize = MAX_KEY_LEN - 8;

/// The last large collection a stripe's writers touched: its key's header and
/// bookkeeping, so that the next command on that key (a queue, a counter hash) skips the
/// index lookup and the table lookup. Kept under the stripe's mutex, and changed by every
/// write of a key of that stripe (`Txn::put`, `Txn::remove`), so it is never stale.
pub(super) struct Hot {
    pub(super) key: Vec<u8>,
    pub(super) kind: Kind,
    pub(super) deadline: Option<u64>,
    pub(super) id: u64,
    pub(super) meta: Arc<Meta>,
    /// The second its access field was last refreshed (`evict`'s module docs).
    pub(super) seen_s: u64,
}

/// One write-lock stripe, with its [`Hot`] entry.
type Stripe = Mutex<Option<Hot>>;

/// The stripes a [`Txn`] holds (released when it is dropped), with their indexes.
pub(super) enum Guards<'a> {
    One(usize, MutexGuard<'a, Option<Hot>>),
    Many(Vec<(usize, MutexGuard<'a, Option<Hot>>)>),
}

impl Guards<'_> {
    /// The hot entry of stripe `i` (which these guards hold).
    pub(super) fn hot(&mut self, i: usize) -> Option<&mut Option<Hot>> {
        match self {
            Guards::One(j, g) if *j == i => Some(&mut **g),
            Guards::Many(v) => v.iter_mut().find(|(j, _)| *j == i).map(|(_, g)| &mut **g),
            _ => None,
        }
    }
}

fn deadline_key(deadline: u64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + key.len());
    k.extend_from_slice(&deadline.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// How blocked clients' keys are named (`crate::waiters`, [`Call::take_ready`]): the
/// database number (one byte: at most 256 databases) then the key, so that a push in one
/// database wakes only that database's waiters.
pub(crate) fn ready_key(db: usize, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len());
    k.push(db as u8);
    k.extend_from_slice(key);
    k
}

/// Why a write was refused; each maps to a Redis-style error reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// The key is longer than [`MAX_KEY`].
    KeyTooLong,
    /// A collection's element (list element, hash value) is longer than the element
    /// index accepts (strings have no such limit: they go out of line).
    ValueTooLong,
    /// The index could not obtain memory.
    OutOfMemory,
}

impl WriteError {
    /// Redis-style error text.
    pub(crate) fn message(self) -> String {
        match self {
            WriteError::KeyTooLong => format!("ERR key too long (limit {MAX_KEY} bytes)"),
            WriteError::ValueTooLong => format!(
                "ERR collection element exceeds maximum allowed size (limit {} bytes)",
                MAX_VALUE_LEN - MAX_HEADER
            ),
            WriteError::OutOfMemory => {
                "OOM command not allowed when used memory > 'maxmemory'.".into()
            }
        }
    }
}

/// The visitor of [`Store::read_many`]: the key's position and its live type and payload.
pub(crate) type ManyVisitor<'a> = dyn FnMut(usize, Option<(Kind, &[u8])>) + 'a;

impl From<orrery::Error> for WriteError {
    fn from(e: orrery::Error) -> Self {
        match e {
            orrery::Error::KeyTooLong { .. } => WriteError::KeyTooLong,
            orrery::Error::ValueTooLong { .. } => WriteError::ValueTooLong,
            _ => WriteError::OutOfMemory,
        }
    }
}

/// Where the store logs its writes: the append-only file (`crate::aof`), attached with
/// [`Store::set_journal`]. The store sees only this, so persistence, which replays into
/// the store and walks it to rewrite, sits above it.
pub(crate) trait Journal: Send + Sync {
    /// Appends one command's effect records (RESP arrays, see `crate::aof`) as one frame;
    /// returns the position that must be durable before the command's reply is sent.
    fn append(&self, records: &[u8]) -> u64;

    /// The position after the last frame appended so far.
    fn appended(&self) -> u64;
}

/// What a store call knows of the command that makes it, and what it tells back: the time
/// the command runs at, and the journal position its writes reached (0: none). A
/// connection gives one to a batch of requests (through the handlers' context) and, after
/// the batch, waits for [`Call::logged`] to be durable before it sends the replies.
#[derive(Debug, Default)]
pub(crate) struct Call {
    now: u64,
    logged: Cell<u64>,
    /// Keys made ready for blocked clients (see the module docs), in the order noted.
    ready: RefCell<Vec<Vec<u8>>>,
    /// While a transaction runs (`EXEC`): its records, appended as one frame at its end
    /// ([`Call::begin_batch`], [`Store::end_batch`]) so that a crash never replays half.
    batch: RefCell<Option<Vec<u8>>>,
    /// The database the batch's last records were for (a frame starts in database 0; a
    /// `SELECT` record changes it: `crate::aof`).
    batch_db: Cell<usize>,
}

impl Call {
    /// A call at `now` (Unix milliseconds) that has logged nothing yet.
    pub(crate) fn new(now: u64) -> Call {
        Call {
            now,
            logged: Cell::new(0),
            ready: RefCell::new(Vec::new()),
            batch: RefCell::new(None),
            batch_db: Cell::new(0),
        }
    }

    /// Starts collecting the records of the writes made through this call into one frame
    /// (a transaction's), appended by [`Store::end_batch`].
    pub(crate) fn begin_batch(&self) {
        *self.batch.borrow_mut() = Some(Vec::new());
        self.batch_db.set(0);
    }

    /// Notes that `key` of database `db` became a list or sorted set while clients wait
    /// on keys (noted as [`ready_key`]).
    pub(crate) fn signal_ready(&self, db: usize, key: &[u8]) {
        let noted = ready_key(db, key);
        let mut r = self.ready.borrow_mut();
        if !r.contains(&noted) {
            r.push(noted);
        }
    }

    /// Whether keys were made ready and not yet taken.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.borrow().is_empty()
    }

    /// The keys made ready so far, in order (emptied), each as [`ready_key`] names it.
    pub(crate) fn take_ready(&self) -> Vec<Vec<u8>> {
        self.ready.take()
    }

    /// The time the command runs at (Unix milliseconds).
    pub(crate) fn now(&self) -> u64 {
        self.now
    }

    /// The journal position the writes made through this call must reach before their
    /// replies are sent (0: none).
    pub(crate) fn logged(&self) -> u64 {
        self.logged.get()
    }

    fn note(&self, position: u64) {
        self.logged.set(self.logged.get().max(position));
    }
}

/// The shared keyspace; see the [module docs](self).
pub(crate) struct Store {
    /// The logical database this keyspace is now (`SELECT`'s number; `SWAPDB` changes it
    /// under the exclusive gate): the `db` of its `WATCH` touches, blocked keys and log
    /// records.
    db: AtomicUsize,
    /// The backend's registry name (a new database is built with the same).
    name: String,
    index: AnyIndex,
    /// The hash table under an unordered backend (`mercury`, `slb:mercury`), kept for
    /// its unordered iteration (the `KvIndex` trait object has none).
    unordered: Option<Arc<Mercury>>,
    /// The append-only file, when persistence is on.
    journal: Option<Arc<dyn Journal>>,
    deadlines: Wormhole,
    stripes: Box<[Stripe]>,
    expired: AtomicU64,
    /// Shared by every database: a collection's id stays valid when `MOVE` or `SWAPDB`
    /// moves its key to another database.
    large: Arc<large::Large>,
    /// The compact-encoding thresholds (`CONFIG SET hash-max-listpack-entries` …).
    thresholds: Arc<Thresholds>,
    /// Whether clients wait in blocking pops (see the module docs); shared by every
    /// database.
    waiting: Arc<AtomicUsize>,
    /// The memory limit (`maxmemory`, `evict`).
    memory: Arc<crate::memory::Memory>,
    /// `keyspace_hits`, `keyspace_misses`.
    hits: AtomicU64,
    misses: AtomicU64,
    /// The eviction samplers' hands (`evict`).
    hands: evict::Hands,
    /// `WATCH`'s table and the transaction gate, shared by every database.
    watches: Arc<watch::Watches>,
}

impl Store {
    /// A keyspace over `index`.
    pub(crate) fn new(index: AnyIndex) -> Store {
        Store::with_parts(index, None, String::from("wormhole"))
    }

    /// The keyspace over the structure named `name` (`orrery::registry`'s names). Mercury,
    /// alone or under an SLB, is built here so that the store keeps a handle to iterate it
    /// (`KEYS`, `SCAN`, `FLUSHDB`, the append-only file's rewrite).
    pub(crate) fn open(name: &str) -> Result<Store, String> {
        let mercury = || {
            Mercury::with_config(Default::default())
                .map(Arc::new)
                .map_err(|e| e.to_string())
        };
        match name {
            "mercury" => {
                let m = mercury()?;
                let index = AnyIndex::Unordered(Box::new(m.clone()));
                Ok(Store::with_parts(index, Some(m), name.into()))
            }
            "slb:mercury" => {
                let m = mercury()?;
                let slb = orrery::slb::Slb::try_new(m.clone()).map_err(|e| e.to_string())?;
                Ok(Store::with_parts(
                    AnyIndex::Unordered(Box::new(slb)),
                    Some(m),
                    name.into(),
                ))
            }
            _ => Ok(Store::with_parts(
                orrery::registry::build(name).map_err(|e| e.to_string())?,
                None,
                name.into(),
            )),
        }
    }

    /// An empty keyspace for database `db`, over a new index of the same backend, sharing
    /// this one's large collections, thresholds, memory limit, journal, watch table, gate
    /// and waiting flag (`dbs`).
    pub(crate) fn sibling(&self, db: usize) -> Result<Store, String> {
        let mut s = Store::open(&self.name)?;
        s.db = AtomicUsize::new(db);
        s.large = self.large.clone();
        s.thresholds = self.thresholds.clone();
        s.memory = self.memory.clone();
        s.journal = self.journal.clone();
        s.watches = self.watches.clone();
        s.waiting = self.waiting.clone();
        Ok(s)
    }

    /// The logical database this keyspace is now.
    pub(crate) fn db(&self) -> usize {
        self.db.load(Ordering::Relaxed)
    }

    fn with_parts(index: AnyIndex, unordered: Option<Arc<Mercury>>, name: String) -> Store {
        Store {
            db: AtomicUsize::new(0),
            name,
            index,
            unordered,
            journal: None,
            deadlines: Wormhole::new(),
            stripes: (0..STRIPES).map(|_| Mutex::new(None)).collect(),
            expired: AtomicU64::new(0),
            large: Arc::new(large::Large::new()),
            thresholds: Arc::new(Thresholds::default()),
            waiting: Arc::new(AtomicUsize::new(0)),
            memory: Arc::new(crate::memory::Memory::new(
                0,
                crate::memory::Policy::NoEviction,
                5,
            )),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            hands: evict::Hands::default(),
            watches: Arc::default(),
        }
    }

    /// The point operations of the backend.
    pub(crate) fn kv(&self) -> &dyn KvIndex {
        self.index.as_kv()
    }

    /// The ordered operations, when the backend has them.
    pub(crate) fn ordered(&self) -> Option<&dyn OrderedKvIndex> {
        self.index.as_ordered()
    }

    /// Attaches the append-only file: every write from now on is logged to it.
    pub(crate) fn set_journal(&mut self, journal: Arc<dyn Journal>) {
        self.journal = Some(journal);
    }

    /// Whether the backend can list its keys (ordered, or Mercury's unordered iteration).
    pub(crate) fn iterable(&self) -> bool {
        self.ordered().is_some() || self.unordered.is_some()
    }

    /// Visits every stored pair (raw values, expired ones included) until `f` breaks: in
    /// key order on an ordered backend, in no order on Mercury; `false` when the backend
    /// cannot iterate. Not a snapshot: a key present throughout is visited exactly once,
    /// one written meanwhile at most once.
    pub(crate) fn walk(&self, f: &mut orrery::api::ScanVisitor<'_>) -> bool {
        if let Some(o) = self.ordered() {
            o.scan(Bound::Unbounded, f);
            true
        } else if let Some(m) = &self.unordered {
            m.for_each(f);
            true
        } else {
            false
        }
    }

    /// A live key at random (`RANDOMKEY`), `None` when none is live at `now`; `seed` picks
    /// it. On Mercury the walk starts at a random table position (`O(1)` expected, each key
    /// picked about as often as Redis's bucket sampling picks it); on an ordered backend
    /// the `seed % len`-th pair in key order (uniform, but `O(n)`: the ordered indexes have
    /// no rank access; the last live key when fewer are live).
    pub(crate) fn random_key(&self, seed: u64, now: u64) -> Option<Vec<u8>> {
        let mut found = None;
        let mut first = |k: &[u8], v: &[u8]| {
            if Store::live(v, now).is_some() {
                found = Some(k.to_vec());
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        if let Some(m) = &self.unordered {
            m.for_each_from(seed, &mut first);
            return found;
        }
        let o = self.ordered()?;
        let len = self.kv().len() as u64;
        if len == 0 {
            return None;
        }
        let mut skip = seed % len;
        o.scan(Bound::Unbounded, &mut |k, v| {
            if Store::live(v, now).is_none() {
                return ControlFlow::Continue(());
            }
            found = Some(k.to_vec());
            if skip == 0 {
                return ControlFlow::Break(());
            }
            skip -= 1;
            ControlFlow::Continue(())
        });
        found
    }

    /// The large collection with id `id`, if it still exists.
    pub(crate) fn large(&self, id: u64) -> Option<Arc<Meta>> {
        self.large.get(id)
    }

    /// The shared index of the large hashes', sets' and sorted sets' elements
    /// (`crate::layout::keys`).
    pub(crate) fn elements(&self) -> &Wormhole {
        &self.large.elements
    }

    /// The shared table of the large lists' packed nodes, by `id ++ node number`.
    pub(crate) fn positions(&self) -> &Mercury {
        &self.large.positions
    }

    /// The compact-encoding thresholds (shared with `CONFIG SET`).
    pub(crate) fn thresholds(&self) -> &Arc<Thresholds> {
        &self.thresholds
    }

    /// Says whether any client waits in a blocking pop: while one does, the lists and
    /// sorted sets writes create are noted in their [`Call`] (see the module docs).
    pub(crate) fn set_waiting(&self, any: bool) {
        self.waiting.store(usize::from(any), Ordering::Release);
    }

    /// Keys removed by expiry so far.
    pub(crate) fn expired_keys(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// Keys that carry a deadline.
    pub(crate) fn keys_with_deadline(&self) -> usize {
        self.deadlines.len()
    }

    /// `INFO keyspace`'s `avg_ttl`: the mean time to live, in milliseconds, of the keys
    /// with a deadline (0: none), over the first 1024 entries of the deadline index (the
    /// nearest deadlines: an estimate, as Redis's, which averages the keys its expiry
    /// cycle sampled).
    pub(crate) fn average_ttl(&self, now: u64) -> u64 {
        let (mut n, mut sum) = (0u64, 0u64);
        self.deadlines.scan(Bound::Unbounded, &mut |k, _| {
            let d = u64::from_be_bytes(k[..8].try_into().expect("deadline keys have 8 bytes"));
            sum += d.saturating_sub(now);
            n += 1;
            if n >= 1024 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        sum.checked_div(n).unwrap_or(0)
    }

    fn stripe(&self, key: &[u8]) -> usize {
        // CRC32C (hardware): a key's stripe is computed at least twice per write.
        orrery::hash::crc32c(key) as usize & (STRIPES - 1)
    }

    /// The stripe of `key` (for `Txn`).
    pub(super) fn stripe_of(&self, key: &[u8]) -> usize {
        self.stripe(key)
    }

    /// Makes `call`'s reply wait until every write already applied to `keys` is as durable
    /// as a reply to a write (see the [module docs](self), "Durable reads"): passes each
    /// key's stripe once, then notes the journal's current end in `call`. `None`: every
    /// stripe (a command that reads the whole keyspace). Nothing without a journal.
    pub(crate) fn read_barrier(&self, keys: Option<&mut dyn Iterator<Item = &[u8]>>, call: &Call) {
        let Some(journal) = &self.journal else {
            return;
        };
        let pass = |i: usize| drop(self.stripes[i].lock().unwrap_or_else(|p| p.into_inner()));
        match keys {
            Some(keys) => keys.for_each(|k| pass(self.stripe(k))),
            None => (0..STRIPES).for_each(pass),
        }
        call.note(journal.appended());
    }

    /// Locks the stripes of `keys` (in ascending order) and runs `f` with the write access;
    /// the journal position of its records is noted in `call`.
    pub(crate) fn write<R>(&self, keys: &[&[u8]], call: &Call, f: impl FnOnce(&Txn<'_>) -> R) -> R {
        // A panic while a stripe was held cannot leave a half-written value (every write
        // is one index call), so a poisoned stripe is still usable.
        let lock = |i: usize| self.stripes[i].lock().unwrap_or_else(|p| p.into_inner());
        let guards = if let [key] = keys {
            // The common case, without allocating.
            let i = self.stripe(key);
            Guards::One(i, lock(i))
        } else {
            let mut ids: Vec<usize> = keys.iter().map(|k| self.stripe(k)).collect();
            ids.sort_unstable();
            ids.dedup();
            Guards::Many(ids.into_iter().map(|i| (i, lock(i))).collect())
        };
        let txn = Txn::new(self, call, guards);
        let r = f(&txn);
        if self.journal.is_some() {
            let log = txn.take_log();
            self.commit_logs(call, &[(self.db(), &log)]);
        }
        r
    }

    /// Appends the records of one command, database by database (`(db, records)`), as
    /// one frame, or to the call's transaction batch. Called while the stripes of the
    /// keys are held: records of one key are in the order their writes were applied. A
    /// frame starts in database 0; a `SELECT` record goes before the records of any
    /// other (`crate::aof`).
    pub(super) fn commit_logs(&self, call: &Call, parts: &[(usize, &[u8])]) {
        let Some(journal) = &self.journal else {
            return;
        };
        if let Some(batch) = call.batch.borrow_mut().as_mut() {
            // A transaction's: appended at its end, other writers held back.
            for &(db, log) in parts.iter().filter(|p| !p.1.is_empty()) {
                if call.batch_db.replace(db) != db {
                    batch.extend_from_slice(&select_record(db));
                }
                batch.extend_from_slice(log);
            }
            return;
        }
        match parts {
            [] | [(_, [])] => {}
            // The common case, without copying.
            [(0, log)] => call.note(journal.append(log)),
            _ => {
                let mut frame = Vec::new();
                let mut current = 0;
                for &(db, log) in parts.iter().filter(|p| !p.1.is_empty()) {
                    if db != current {
                        frame.extend_from_slice(&select_record(db));
                        current = db;
                    }
                    frame.extend_from_slice(log);
                }
                if !frame.is_empty() {
                    call.note(journal.append(&frame));
                }
            }
        }
    }

    /// Ends [`Call::begin_batch`]: appends the transaction's records as one frame (replay
    /// applies a frame whole or, torn at a crash, not at all). The caller holds the gate
    /// exclusively, so no other write comes between the records and this append.
    pub(crate) fn end_batch(&self, call: &Call) {
        let batch = call.batch.borrow_mut().take();
        if let (Some(journal), Some(log)) = (&self.journal, batch)
            && !log.is_empty()
        {
            call.note(journal.append(&log));
        }
    }

    /// Runs `f` on the live value of `key` without locking (zero-copy); `None` when absent
    /// or expired (an expired key is then removed, through `call`). A large string's
    /// payload is its bytes (from the table of large strings, `large`), not its id.
    pub(crate) fn read<R>(
        &self,
        key: &[u8],
        call: &Call,
        f: impl FnOnce(Kind, Option<u64>, &[u8]) -> R,
    ) -> Option<R> {
        let mut f = Some(f);
        let now = call.now();
        let mut out = None;
        let mut expired = false;
        let mut access = None;
        loop {
            let mut blob = None;
            self.kv().get_with(key, &mut |v| {
                if let Some(h) = header(v) {
                    if h.deadline.is_some_and(|d| d <= now) {
                        expired = true;
                    } else if h.kind == Kind::String && h.enc == Enc::Large {
                        access = h.access;
                        blob = Some((large_id(h.enc, &v[h.at..]), h.deadline));
                    } else if let Some(f) = f.take() {
                        access = h.access;
                        out = Some(f(h.kind, h.deadline, &v[h.at..]));
                    }
                }
            });
            if let Some((id, deadline)) = blob {
                match id.and_then(|id| self.large.blob(id)) {
                    Some(b) => {
                        if let Some(f) = f.take() {
                            out = Some(f(Kind::String, deadline, &b[..]));
                        }
                    }
                    // Replaced or deleted since the lookup: look again.
                    None if id.is_some() => continue,
                    None => {}
                }
            }
            break;
        }
        self.note_lookup(out.is_some());
        if let Some(a) = access {
            self.note_access(key, a, now, false);
        }
        if expired {
            self.write(&[key], call, |t| {
                t.load(key);
            });
        }
        out
    }

    /// Runs `f(i, value)` for every key of `keys`, through the backend's `get_many`;
    /// expired keys are seen as absent (and removed afterwards). Each key is visited once,
    /// in order except for a large string replaced during the call (visited after the
    /// others, through [`Store::read`]).
    pub(crate) fn read_many(&self, keys: &[&[u8]], call: &Call, f: &mut ManyVisitor<'_>) {
        let now = call.now();
        let mut expired = Vec::new();
        let tracking = self.tracking();
        let mut accessed = Vec::new();
        let mut again = Vec::new();
        self.kv().get_many(
            keys,
            &mut |i, v| match v.and_then(|v| header(v).map(|h| (h, v))) {
                Some((h, _)) if h.deadline.is_some_and(|d| d <= now) => {
                    expired.push(i);
                    self.note_lookup(false);
                    f(i, None)
                }
                Some((h, v)) => {
                    if let Some(a) = h.access.filter(|_| tracking) {
                        accessed.push((i, a));
                    }
                    let payload = &v[h.at..];
                    if h.kind == Kind::String && h.enc == Enc::Large {
                        match large_id(h.enc, payload).and_then(|id| self.large.blob(id)) {
                            Some(b) => {
                                self.note_lookup(true);
                                f(i, Some((Kind::String, &b[..])))
                            }
                            None => again.push(i),
                        }
                    } else {
                        self.note_lookup(true);
                        f(i, Some((h.kind, payload)))
                    }
                }
                None => {
                    self.note_lookup(false);
                    f(i, None)
                }
            },
        );
        for i in again {
            if self
                .read(keys[i], call, |kind, _, v| f(i, Some((kind, v))))
                .is_none()
            {
                f(i, None);
            }
        }
        for (i, a) in accessed {
            self.note_access(keys[i], a, now, false);
        }
        for i in expired {
            self.write(&[keys[i]], call, |t| {
                t.load(keys[i]);
            });
        }
    }

    /// The string value `raw` as stored inline (header and bytes), for a record that
    /// rebuilds it (`SET key value`): `raw` itself, or for a large string its bytes
    /// behind a `Compact` header; `None` when a large string's bytes are gone (the key
    /// changed since `raw` was read).
    pub(crate) fn inline_string<'v>(&self, raw: &'v [u8]) -> Option<std::borrow::Cow<'v, [u8]>> {
        let h = header(raw)?;
        if h.enc != Enc::Large {
            return Some(std::borrow::Cow::Borrowed(raw));
        }
        let b = self.large.blob(large_id(h.enc, &raw[h.at..])?)?;
        let mut out = Vec::new();
        out.try_reserve_exact(b.len() + MAX_HEADER).ok()?;
        value::put_header(&mut out, Kind::String, Enc::Compact, h.deadline);
        if let Some(a) = h.access {
            set_access(&mut out, a);
        }
        out.extend_from_slice(&b);
        Some(std::borrow::Cow::Owned(out))
    }

    /// Whether the raw stored `value` is live at `now` (for scans).
    pub(crate) fn live(value: &[u8], now: u64) -> Option<Kind> {
        match header(value)? {
            h if h.deadline.is_some_and(|d| d <= now) => None,
            h => Some(h.kind),
        }
    }

    /// Active expiry: removes up to `budget` keys whose deadline is due at `now`; returns
    /// how many due entries were handled (a full budget means more may be due).
    pub(crate) fn expire_cycle(&self, now: u64, budget: usize) -> usize {
        // Nobody waits for these deletions: their journal position is not needed.
        let call = Call::new(now);
        let mut due = Vec::new();
        self.deadlines.scan(Bound::Unbounded, &mut |k, _| {
            let d = u64::from_be_bytes(k[..8].try_into().expect("deadline keys have 8 bytes"));
            if d > now || due.len() >= budget {
                return ControlFlow::Break(());
            }
            due.push((d, k[8..].to_vec()));
            ControlFlow::Continue(())
        });
        for (d, key) in &due {
            self.write(&[key], &call, |t| {
                let live_deadline = t.load(key).and_then(|e| e.deadline);
                if live_deadline != Some(*d) {
                    // Stale (cannot happen while both change under the stripe, but an
                    // entry that outlived its key must not be retried forever).
                    self.deadlines.remove(&deadline_key(*d, key));
                }
            });
        }
        due.len()
    }

    /// Removes every key; `false` when the backend cannot iterate. Keys written while the
    /// flush runs may survive it.
    pub(crate) fn flush(&self, call: &Call) -> bool {
        if !self.iterable() {
            return false;
        }
        loop {
            let mut batch = Vec::new();
            self.walk(&mut |k, _| {
                batch.push(k.to_vec());
                if batch.len() >= 1024 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            if batch.is_empty() {
                break;
            }
            for key in &batch {
                self.write(&[key], call, |t| t.delete(key));
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Store {
        Store::new(orrery::registry::build("wormhole").unwrap())
    }

    #[test]
    fn deadlines_follow_writes_and_expiry() {
        let s = store();
        let e = |d| Entry {
            deadline: d,
            ..Entry::string(b"v".to_vec())
        };
        s.write(&[b"a"], &Call::new(100), |t| t.store(b"a", &e(Some(200))))
            .unwrap();
        s.write(&[b"b"], &Call::new(100), |t| t.store(b"b", &e(Some(300))))
            .unwrap();
        assert_eq!(s.keys_with_deadline(), 2);
        s.write(&[b"a"], &Call::new(100), |t| t.store(b"a", &e(Some(250))))
            .unwrap();
        assert_eq!(s.keys_with_deadline(), 2);
        s.write(&[b"b"], &Call::new(100), |t| t.store(b"b", &e(None)))
            .unwrap();
        assert_eq!(s.keys_with_deadline(), 1);
        assert!(s.read(b"a", &Call::new(249), |_, _, _| ()).is_some());
        assert_eq!(s.expire_cycle(249, 10), 0);
        assert_eq!(s.expire_cycle(250, 10), 1);
        assert_eq!(s.keys_with_deadline(), 0);
        assert_eq!(s.kv().len(), 1);
        assert_eq!(s.expired_keys(), 1);
        // Lazy expiry on read.
        s.write(&[b"c"], &Call::new(100), |t| t.store(b"c", &e(Some(150))))
            .unwrap();
        assert!(s.read(b"c", &Call::new(150), |_, _, _| ()).is_none());
        assert!(!s.kv().contains_key(b"c"));
        assert_eq!(s.keys_with_deadline(), 0);
    }

    #[test]
    fn limits_are_errors_that_leave_the_store_unchanged() {
        let s = store();
        let long_key = vec![b'k'; MAX_KEY + 1];
        let r = s.write(&[&long_key], &Call::new(0), |t| {
            t.store(&long_key, &Entry::string(vec![]))
        });
        assert_eq!(r, Err(WriteError::KeyTooLong));
        let big = Entry {
            kind: Kind::Hash,
            enc: Enc::Compact,
            deadline: Some(5),
            payload: vec![0; MAX_VALUE_LEN],
        };
        assert_eq!(
            s.write(&[b"k"], &Call::new(0), |t| t.store(b"k", &big)),
            Err(WriteError::ValueTooLong)
        );
        assert_eq!(s.kv().len(), 0);
        assert_eq!(s.keys_with_deadline(), 0);
    }

    #[test]
    fn large_strings_live_out_of_line_and_are_freed() {
        use crate::memory::Keyspace as _;
        let s = store();
        let base = s.used_bytes();
        let inline = vec![b'a'; MAX_VALUE_LEN - MAX_HEADER];
        let big = vec![b'b'; MAX_VALUE_LEN - MAX_HEADER + 1];
        let c = Call::new(0);
        s.write(&[b"i"], &c, |t| t.store_string(b"i", None, &inline))
            .unwrap();
        assert_eq!(s.large.blob_bytes(), 0, "at the limit: inline");
        s.write(&[b"k"], &c, |t| t.store_string(b"k", Some(50), &big))
            .unwrap();
        assert_eq!(s.large.blob_bytes(), big.len());
        assert!(s.used_bytes() >= base + inline.len() + big.len());
        assert_eq!(
            s.read(b"k", &c, |k, d, v| (k, d, v == &big[..])),
            Some((Kind::String, Some(50), true))
        );
        let mut seen = Vec::new();
        s.read_many(&[b"k", b"i", b"x"], &c, &mut |i, v| {
            seen.push((i, v.map(|(_, v)| v.len())))
        });
        assert_eq!(
            seen,
            [(0, Some(big.len())), (1, Some(inline.len())), (2, None)]
        );
        let loaded = s.write(&[b"k"], &c, |t| t.load(b"k")).unwrap();
        assert_eq!(
            (loaded.enc, loaded.payload.len()),
            (Enc::Compact, big.len())
        );
        // Overwritten by a short string, then long again, then expired: freed each time.
        s.write(&[b"k"], &c, |t| t.store_string(b"k", None, b"x"))
            .unwrap();
        assert_eq!(s.large.blob_bytes(), 0);
        s.write(&[b"k"], &c, |t| {
            t.store(
                b"k",
                &Entry {
                    deadline: Some(50),
                    ..Entry::string(big.clone())
                },
            )
        })
        .unwrap();
        assert_eq!(s.large.blob_bytes(), big.len());
        assert_eq!(s.expire_cycle(50, 10), 1);
        assert_eq!(s.large.blob_bytes(), 0);
        s.write(&[b"i"], &c, |t| t.delete(b"i"));
        assert_eq!(s.used_bytes(), base);
    }

    #[test]
    fn flush_empties_ordered_and_unordered_backends() {
        let s = store();
        for i in 0..3000u32 {
            let k = i.to_be_bytes();
            s.write(&[&k], &Call::new(0), |t| {
                t.store(&k, &Entry::string(vec![1]))
            })
            .unwrap();
        }
        assert!(s.flush(&Call::new(0)));
        assert_eq!(s.kv().len(), 0);
        for name in ["mercury", "slb:mercury"] {
            let m = Store::open(name).unwrap();
            for i in 0..3000u32 {
                let k = i.to_be_bytes();
                m.write(&[&k], &Call::new(0), |t| {
                    t.store(&k, &Entry::string(vec![1]))
                })
                .unwrap();
            }
            assert!(m.flush(&Call::new(0)), "{name}");
            assert_eq!(m.kv().len(), 0, "{name}");
        }
        // Without the handle to the table there is no iteration.
        let m = Store::new(orrery::registry::build("mercury").unwrap());
        assert!(!m.flush(&Call::new(0)));
    }
}
