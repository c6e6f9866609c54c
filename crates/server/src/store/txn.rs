//! [`Txn`]: what a command does to the keyspace while it holds its keys' stripes, and the
//! effect records it logs for the append-only file (`crate::aof` lists them).
//!
//! Strings are logged here, whole (`SET key raw`), and so are deletions (`DEL key`) and a
//! collection's deadline (`PEXPIREAT`/`PERSIST`). A collection's elements are logged by
//! the typed collections (`crate::coll`), which know what changed: they write with
//! [`Txn::store_quiet`] and add their own records with [`Txn::record`].

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use orrery::api::MAX_VALUE_LEN;
use orrery::mercury::Mercury;
use orrery::wormhole::Wormhole;

use super::value::{Enc, Entry, Header, Kind, header, large_id, put_header};
use super::{Call, Guards, Hot, MAX_HEADER, MAX_KEY, Meta, Store, WriteError, deadline_key};
use crate::layout::ThresholdValues;
use crate::resp;

/// The keys a command has locked; the only way to write the store.
pub(crate) struct Txn<'a> {
    store: &'a Store,
    call: &'a Call,
    /// The effect records of this command (empty unless persistence is on), appended to
    /// the append-only file as one frame before the stripes are released.
    log: RefCell<Vec<u8>>,
    guards: RefCell<Guards<'a>>,
}

impl<'a> Txn<'a> {
    pub(super) fn new(store: &'a Store, call: &'a Call, guards: Guards<'a>) -> Txn<'a> {
        Txn {
            store,
            call,
            log: RefCell::new(Vec::new()),
            guards: RefCell::new(guards),
        }
    }

    pub(super) fn take_log(&self) -> Vec<u8> {
        self.log.take()
    }

    /// The time the command runs at (Unix milliseconds).
    pub(crate) fn now(&self) -> u64 {
        self.call.now()
    }

    /// The shared index of large hashes', sets' and sorted sets' elements.
    pub(crate) fn elements(&self) -> &Wormhole {
        self.store.elements()
    }

    /// The shared table of large lists' elements.
    pub(crate) fn positions(&self) -> &Mercury {
        self.store.positions()
    }

    /// The compact-encoding thresholds now.
    pub(crate) fn thresholds(&self) -> ThresholdValues {
        self.store.thresholds.get()
    }

    /// Runs `f` on the hot entry of `key`'s stripe (`None` if this transaction does not
    /// hold that stripe).
    fn with_hot<R>(&self, key: &[u8], f: impl FnOnce(&mut Option<Hot>) -> R) -> Option<R> {
        let i = self.store.stripe_of(key);
        self.guards.borrow_mut().hot(i).map(f)
    }

    /// The live value of `key` (an expired one is removed and reported absent).
    pub(crate) fn load(&self, key: &[u8]) -> Option<Entry> {
        let now = self.now();
        let tracking = self.store.tracking();
        let hot = self.with_hot(key, |h| match h {
            // While reads are tracked, once a second the hot entry is passed over so that
            // the index lookup below refreshes the key's access field.
            Some(h) if tracking && h.key == key && h.seen_s != now / 1000 => {
                h.seen_s = now / 1000;
                None
            }
            Some(h) if h.key == key && h.deadline.is_none_or(|d| d > now) => Some(Entry {
                kind: h.kind,
                enc: Enc::Large,
                deadline: h.deadline,
                payload: h.id.to_be_bytes().to_vec(),
            }),
            _ => None,
        });
        if let Some(Some(e)) = hot {
            return Some(e);
        }
        let mut e = None;
        let mut access = None;
        self.store.kv().get_with(key, &mut |v| {
            e = super::decode(v);
            access = header(v).and_then(|h| h.access);
        });
        let mut e = e?;
        if e.kind == Kind::String && e.enc == Enc::Large {
            // Under the key's stripe the bytes cannot go: the string is handed out inline.
            let bytes = e.large_id().and_then(|id| self.store.large.blob(id));
            e.payload = bytes.map(|b| b.to_vec()).unwrap_or_default();
            e.enc = Enc::Compact;
        }
        if let Some(a) = access.filter(|_| e.deadline.is_none_or(|d| d > self.now())) {
            // Under the key's stripe: the access field may be rewritten in place.
            self.store.note_access(key, a, self.now(), true);
        }
        if e.deadline.is_some_and(|d| d <= self.now()) {
            self.delete(key);
            self.store.expired.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(e)
    }

    /// Writes `entry` under `key`, keeping the deadline index in step; logs a string
    /// whole and a collection's deadline (its elements are the caller's to log).
    pub(crate) fn store(&self, key: &[u8], entry: &Entry) -> Result<(), WriteError> {
        self.store_entry(key, entry, true)
    }

    /// [`Txn::store`] without a record: for a collection whose change the caller logs.
    pub(crate) fn store_quiet(&self, key: &[u8], entry: &Entry) -> Result<(), WriteError> {
        self.store_entry(key, entry, false)
    }

    fn store_entry(&self, key: &[u8], entry: &Entry, log: bool) -> Result<(), WriteError> {
        if key.len() > MAX_KEY {
            return Err(WriteError::KeyTooLong);
        }
        if entry.payload.len() + MAX_HEADER > MAX_VALUE_LEN {
            if entry.kind == Kind::String && entry.enc == Enc::Compact {
                return self.store_large_string(key, entry.deadline, &entry.payload, log);
            }
            return Err(WriteError::ValueTooLong);
        }
        self.put(
            key,
            entry.kind,
            entry.deadline,
            &mut super::value::encode(entry),
            log,
        )
    }

    /// Writes the string `payload` under `key` with `deadline`, whatever the key held (the
    /// plain `SET`: no copy of the old value, no [`Entry`]).
    pub(crate) fn store_string(
        &self,
        key: &[u8],
        deadline: Option<u64>,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        if key.len() > MAX_KEY {
            return Err(WriteError::KeyTooLong);
        }
        if payload.len() + MAX_HEADER > MAX_VALUE_LEN {
            return self.store_large_string(key, deadline, payload, true);
        }
        let mut raw = Vec::with_capacity(payload.len() + MAX_HEADER);
        put_header(&mut raw, Kind::String, Enc::Compact, deadline);
        raw.extend_from_slice(payload);
        self.put(key, Kind::String, deadline, &mut raw, true)
    }

    /// Stores a string too long for the index out of line (`large`'s module docs): its
    /// bytes in the table of large strings, their id under `key`.
    fn store_large_string(
        &self,
        key: &[u8],
        deadline: Option<u64>,
        payload: &[u8],
        log: bool,
    ) -> Result<(), WriteError> {
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(payload.len())
            .map_err(|_| WriteError::OutOfMemory)?;
        bytes.extend_from_slice(payload);
        let id = self.store.large.create_blob(bytes);
        let mut raw = Vec::with_capacity(MAX_HEADER + 8);
        put_header(&mut raw, Kind::String, Enc::Large, deadline);
        raw.extend_from_slice(&id.to_be_bytes());
        if let Err(e) = self.put(key, Kind::String, deadline, &mut raw, false) {
            self.store.large.drop_collection(id);
            return Err(e);
        }
        if log && self.logging() {
            // Logged inline, as a short string is (replay stores it out of line again).
            let mut inline = Vec::with_capacity(MAX_HEADER + payload.len());
            put_header(&mut inline, Kind::String, Enc::Compact, deadline);
            inline.extend_from_slice(payload);
            self.record(&[b"SET", key, &inline]);
        }
        Ok(())
    }

    /// Stores the encoded value `raw` (of `kind`, with `deadline`) under `key`.
    fn put(
        &self,
        key: &[u8],
        kind: Kind,
        deadline: Option<u64>,
        raw: &mut [u8],
        log: bool,
    ) -> Result<(), WriteError> {
        if key.len() > MAX_KEY {
            return Err(WriteError::KeyTooLong);
        }
        self.store.touch_watched(self.store.db(), key);
        let new_large = header(raw).and_then(|h| large_id(h.enc, &raw[h.at..]));
        let old = self.old_header(key);
        // A write is an access: the old key's counter carries over (as Redis's LFU).
        let access = match old.and_then(|(h, _)| h.access) {
            Some(a) => self.store.touched(a, self.now() / 1000),
            None => crate::memory::lfu::new(self.now() / 1000),
        };
        super::value::set_access(raw, access);
        let raw: &[u8] = raw;
        let old_deadline = old.and_then(|(h, _)| h.deadline);
        let old_large = old.and_then(|(_, id)| id);
        if let Some(d) = deadline.filter(|&d| old_deadline != Some(d)) {
            self.store
                .deadlines
                .insert(&deadline_key(d, key), b"")
                .map_err(|_| WriteError::OutOfMemory)?;
        }
        if let Err(e) = self.store.kv().insert(key, raw) {
            if let Some(d) = deadline.filter(|&d| old_deadline != Some(d)) {
                self.store.deadlines.remove(&deadline_key(d, key));
            }
            return Err(e.into());
        }
        if let Some(o) = old_deadline.filter(|&o| deadline != Some(o)) {
            self.store.deadlines.remove(&deadline_key(o, key));
        }
        if let Some(id) = old_large.filter(|&id| new_large != Some(id)) {
            self.store.large.drop_collection(id);
        }
        let meta = new_large.and_then(|id| self.store.large.get(id).map(|m| (id, m)));
        self.with_hot(key, |h| match meta {
            Some((id, meta)) => {
                *h = Some(Hot {
                    key: key.to_vec(),
                    kind,
                    deadline,
                    id,
                    meta,
                    seen_s: self.now() / 1000,
                })
            }
            None if h.as_ref().is_some_and(|h| h.key == key) => *h = None,
            None => {}
        });
        if matches!(kind, Kind::List | Kind::ZSet)
            && old.is_none_or(|(h, _)| h.kind != kind)
            && self.store.waiting.load(Ordering::Acquire) > 0
        {
            self.call.signal_ready(self.store.db(), key);
        }
        if log && self.logging() {
            match kind {
                // A large string logs itself (`store_large_string`).
                Kind::String => self.record(&[b"SET", key, raw]),
                _ => match deadline {
                    Some(d) => self.record(&[b"PEXPIREAT", key, d.to_string().as_bytes()]),
                    None => self.record(&[b"PERSIST", key]),
                },
            }
        }
        Ok(())
    }

    /// The current end of this command's records (for [`Txn::rollback_log`]).
    pub(crate) fn log_mark(&self) -> usize {
        self.log.borrow().len()
    }

    /// Takes back the records added since `mark` (a change that failed after logging).
    pub(crate) fn rollback_log(&self, mark: usize) {
        self.log.borrow_mut().truncate(mark);
    }

    /// Whether writes are being logged (persistence on).
    pub(crate) fn logging(&self) -> bool {
        self.store.journal.is_some()
    }

    /// Adds one effect record (see `crate::aof` for the records); nothing when persistence
    /// is off.
    pub(crate) fn record(&self, parts: &[&[u8]]) {
        // Every record names the key it changes second (`crate::aof`): a collection's
        // element changes reach `WATCH` here.
        if let Some(key) = parts.get(1) {
            self.store.touch_watched(self.store.db(), key);
        }
        if self.logging() {
            resp::encode_request(&mut self.log.borrow_mut(), parts);
        }
    }

    /// Removes `key` (live or expired) and drops its large collection, if any; whether it
    /// was present.
    pub(crate) fn delete(&self, key: &[u8]) -> bool {
        self.remove(key, true)
    }

    /// Removes `key` but keeps its large collection, which another key now holds
    /// (`RENAME`).
    pub(crate) fn detach(&self, key: &[u8]) -> bool {
        self.remove(key, false)
    }

    fn remove(&self, key: &[u8], drop_large: bool) -> bool {
        self.with_hot(key, |h| {
            if h.as_ref().is_some_and(|h| h.key == key) {
                *h = None;
            }
        });
        let old = self.old_header(key);
        let removed = self.store.kv().remove(key);
        if let Some(o) = old.and_then(|(h, _)| h.deadline) {
            self.store.deadlines.remove(&deadline_key(o, key));
        }
        // A large string is never moved by id (`load` hands its bytes out inline), so
        // its bytes go with its key even when `detach`ed.
        let string = old.is_some_and(|(h, _)| h.kind == Kind::String);
        if let Some(id) = old.and_then(|(_, id)| id).filter(|_| drop_large || string) {
            self.store.large.drop_collection(id);
        }
        if removed {
            self.store.touch_watched(self.store.db(), key);
            self.record(&[b"DEL", key]);
        }
        removed
    }

    /// The stored value's header and large-collection id.
    fn old_header(&self, key: &[u8]) -> Option<(Header, Option<u64>)> {
        let mut out = None;
        self.store.kv().get_with(key, &mut |v| {
            if let Some(h) = header(v) {
                out = Some((h, large_id(h.enc, &v[h.at..])));
            }
        });
        out
    }

    /// The bookkeeping of the large collection a live `entry` holds.
    pub(crate) fn large(&self, entry: &Entry) -> Option<Arc<Meta>> {
        let id = entry.large_id()?;
        // Usually the key just loaded: its stripe's hot entry has the bookkeeping.
        let guards = self.guards.borrow();
        let hot = match &*guards {
            Guards::One(_, g) => g.as_ref().filter(|h| h.id == id).map(|h| h.meta.clone()),
            Guards::Many(v) => v
                .iter()
                .find_map(|(_, g)| g.as_ref().filter(|h| h.id == id).map(|h| h.meta.clone())),
        };
        drop(guards);
        hot.or_else(|| self.store.large.get(id))
    }

    /// A new, empty large collection (not yet under any key; a list with `list`): its id
    /// and bookkeeping. The caller stores its id under a key, or drops it with
    /// [`Txn::drop_large`].
    pub(crate) fn create_large(&self, list: bool) -> (u64, Arc<Meta>) {
        self.store.large.create(list)
    }

    /// Drops a large collection that no key holds (a conversion that failed).
    pub(crate) fn drop_large(&self, id: u64) {
        self.store.large.drop_collection(id);
    }
}
