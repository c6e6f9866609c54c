//! `WATCH`'s table and the transaction gate: what makes `MULTI`/`EXEC` optimistic and
//! atomic.
//!
//! # Watched keys
//!
//! A table from `(database, key)` to the flags of the clients watching it. Every change
//! the store makes to a key — a write, a delete (expiry, `FLUSHDB`/`FLUSHALL` and
//! eviction included, since they all delete through [`super::Txn`]) — calls
//! [`Store::touch_watched`], which sets the flags of the key's watchers (Redis's
//! `touchWatchedKey`); `EXEC` aborts when its client's flag is set. The `Txn` hooks are
//! `put` (every store of a key), `remove` (when a key was present) and `record` (every
//! effect record names its key second: a collection's element change). A count of
//! watched entries makes the touch one atomic load while nobody watches. Redis keys the
//! table by database; so does this one.
//!
//! # The gate
//!
//! A read-write lock over the whole keyspace: every command takes it shared (the dispatcher,
//! for the command and the serving of blocked clients after it; the cron, for active
//! expiry), and `EXEC` takes it exclusively for its queued commands, so no other client's
//! command — a read, a write, a blocked client being served, an expiry — runs between
//! them (Redis runs commands one at a time; here they run in parallel, so a transaction
//! waits for the commands in flight and holds the others back). Never taken twice by one
//! thread, never held across an `.await`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Store;
use super::value::header;

/// One client's "a watched key changed" flag (Redis's `CLIENT_DIRTY_CAS`).
#[derive(Debug, Default)]
pub(crate) struct WatchFlag(AtomicBool);

impl WatchFlag {
    /// Whether a key this flag watches changed since it was cleared.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Clears the flag (after `EXEC`, `DISCARD`, `UNWATCH`).
    pub(crate) fn clear(&self) {
        self.0.store(false, Ordering::Release);
    }
}

/// `(database, key)` → the flags of the clients watching it.
type Table = HashMap<(usize, Vec<u8>), Vec<Arc<WatchFlag>>>;

/// The watch table and the gate (see the [module docs](self)).
#[derive(Default)]
pub(super) struct Watches {
    /// Entries in `table` (watchers summed over keys).
    count: AtomicUsize,
    table: Mutex<Table>,
    gate: RwLock<()>,
}

impl Store {
    /// Marks the watchers of `key` in database `db` as dirty: a write, a delete, an expiry
    /// or an eviction of the key. The store's own write path calls it; other deleting
    /// paths outside [`super::Txn`] must call it too.
    pub(crate) fn touch_watched(&self, db: usize, key: &[u8]) {
        let w = &self.watches;
        if w.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let table = w.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(flags) = table.get(&(db, key.to_vec())) {
            for f in flags {
                f.0.store(true, Ordering::Release);
            }
        }
    }

    /// `SWAPDB a b`: marks the watchers of every watched key of database `a` or `b` that
    /// `exists` (in either) as dirty (Redis's `touchAllWatchedKeysInDb`).
    pub(crate) fn touch_swapped(&self, a: usize, b: usize, exists: &dyn Fn(&[u8]) -> bool) {
        if self.watches.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let table = self.watches.table.lock().unwrap_or_else(|p| p.into_inner());
        for ((db, key), flags) in table.iter() {
            if (*db == a || *db == b) && exists(key) {
                for f in flags {
                    f.0.store(true, Ordering::Release);
                }
            }
        }
    }

    /// Registers `flag` as a watcher of `key` in database `db` (once per flag and key).
    pub(crate) fn watch(&self, db: usize, key: &[u8], flag: &Arc<WatchFlag>) {
        let mut table = self.watches.table.lock().unwrap_or_else(|p| p.into_inner());
        let flags = table.entry((db, key.to_vec())).or_default();
        if !flags.iter().any(|f| Arc::ptr_eq(f, flag)) {
            flags.push(flag.clone());
            self.watches.count.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Removes `flag` from the watchers of `key` in database `db`.
    pub(crate) fn unwatch(&self, db: usize, key: &[u8], flag: &Arc<WatchFlag>) {
        let mut table = self.watches.table.lock().unwrap_or_else(|p| p.into_inner());
        let k = (db, key.to_vec());
        if let Some(flags) = table.get_mut(&k) {
            let before = flags.len();
            flags.retain(|f| !Arc::ptr_eq(f, flag));
            let removed = before - flags.len();
            self.watches.count.fetch_sub(removed, Ordering::AcqRel);
            if flags.is_empty() {
                table.remove(&k);
            }
        }
    }

    /// Whether `key` is stored with a deadline that is due at `now` (expired, not yet
    /// removed): `EXEC` aborts on a watched key that expired this way since `WATCH`.
    pub(crate) fn is_expired(&self, key: &[u8], now: u64) -> bool {
        let mut due = false;
        self.kv().get_with(key, &mut |v| {
            due = header(v).is_some_and(|h| h.deadline.is_some_and(|d| d <= now));
        });
        due
    }

    /// The gate shared: any command but `EXEC` (see the [module docs](self)).
    pub(crate) fn gate_shared(&self) -> RwLockReadGuard<'_, ()> {
        self.watches.gate.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The gate exclusive: `EXEC`, for its queued commands.
    pub(crate) fn gate_exclusive(&self) -> RwLockWriteGuard<'_, ()> {
        self.watches.gate.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Call, Entry};
    use super::*;

    #[test]
    fn writes_deletes_and_expiry_touch_watchers_of_their_key_only() {
        let s = Store::new(orrery::registry::build("wormhole").unwrap());
        let a = Arc::new(WatchFlag::default());
        let b = Arc::new(WatchFlag::default());
        s.watch(0, b"k", &a);
        s.watch(0, b"k", &a);
        s.watch(0, b"other", &b);
        s.watch(1, b"k", &b);
        let call = Call::new(100);
        s.write(&[b"x"], &call, |t| t.store(b"x", &Entry::string(vec![1])))
            .unwrap();
        assert!(!a.is_set() && !b.is_set());
        let e = Entry {
            deadline: Some(150),
            ..Entry::string(vec![1])
        };
        s.write(&[b"k"], &call, |t| t.store(b"k", &e)).unwrap();
        assert!(a.is_set() && !b.is_set());
        a.clear();
        assert!(s.is_expired(b"k", 150) && !s.is_expired(b"k", 149));
        assert_eq!(s.expire_cycle(200, 10), 1);
        assert!(a.is_set() && !b.is_set());
        a.clear();
        s.unwatch(0, b"k", &a);
        s.write(&[b"k"], &call, |t| t.store(b"k", &Entry::string(vec![2])))
            .unwrap();
        assert!(!a.is_set());
        s.write(&[b"other"], &call, |t| t.delete(b"other"));
        assert!(!b.is_set(), "deleting an absent key changes nothing");
        s.unwatch(0, b"other", &b);
        s.unwatch(1, b"k", &b);
        assert_eq!(s.watches.count.load(Ordering::Relaxed), 0);
        assert!(s.watches.table.lock().unwrap().is_empty());
    }
}
