//! The logical databases (`SELECT 0` … `databases - 1`): one [`Store`] per database, each
//! with its own key index, deadline index and stripes, all sharing the large collections'
//! element indexes, the thresholds, the memory limit, the journal, `WATCH`'s table and
//! the transaction gate.
//!
//! # Why an index per database
//!
//! The other representation, a database-number prefix on every key in one shared index,
//! costs the single-database hot path a copy of every key (the prefix in front of it) on
//! every command, and makes `FLUSHDB` a range removal and `SWAPDB` a renumbering table
//! consulted by every lookup. An index per database costs the hot path one array load
//! (the connection's database → its keyspace), `SWAPDB` is the exchange of two entries of
//! that array, `FLUSHDB` empties one index, `DBSIZE` is its length, and `SCAN`/`KEYS`/
//! `RANDOMKEY`/expiry need no filtering. Its cost is an index per database in use: the
//! databases are built on first use (a Wormhole reserves about 2 MiB when built), so a
//! server that only uses database 0 builds one. Measured in `docs/server.md`
//! ("Representation").
//!
//! # Numbering
//!
//! A *slot* holds a keyspace, built on first use; `map` says which slot each logical
//! database is. `SWAPDB` exchanges two entries of `map` (and the keyspaces' own numbers,
//! which their `WATCH` touches, blocked keys and log records carry) while it holds the
//! gate exclusively, so no command runs against a half-swapped pair; every other command
//! holds the gate shared, which is what makes the plain atomic loads of `map` enough.
//! Slot 0 is built at start and is the template of the others (the shared parts).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard, OnceLock};

use super::{Call, Guards, Hot, Journal, Store, Txn};
use crate::resp;

use crate::config::MAX_DATABASES;

/// The `SELECT n` record that starts the records of database `n` in a log frame
/// (`crate::aof`).
pub(crate) fn select_record(db: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    resp::encode_request(&mut out, &[b"SELECT", db.to_string().as_bytes()]);
    out
}

/// The databases (see the [module docs](self)).
pub(crate) struct Databases {
    slots: Box<[OnceLock<Arc<Store>>]>,
    map: Box<[AtomicUsize]>,
}

impl Databases {
    /// `count` databases (1 ..= [`MAX_DATABASES`]), database 0 being `first`.
    pub(crate) fn new(first: Store, count: usize) -> Databases {
        let count = count.clamp(1, MAX_DATABASES);
        let slots: Box<[OnceLock<Arc<Store>>]> = (0..count).map(|_| OnceLock::new()).collect();
        let _ = slots[0].set(Arc::new(first));
        Databases {
            slots,
            map: (0..count).map(AtomicUsize::new).collect(),
        }
    }

    /// Number of databases.
    pub(crate) fn count(&self) -> usize {
        self.slots.len()
    }

    /// Database 0's slot: the shared parts (gate, `WATCH` table, memory limit,
    /// thresholds) are reached through it.
    pub(crate) fn shared(&self) -> &Arc<Store> {
        self.slots[0].get().expect("slot 0 is built at start")
    }

    /// The keyspace of database `db` (`< count`), built on first use.
    pub(crate) fn get(&self, db: usize) -> &Arc<Store> {
        let slot = self.map[db].load(Ordering::Acquire);
        self.slots[slot].get_or_init(|| {
            // The same backend as database 0, which was built: it builds again.
            Arc::new(
                self.shared()
                    .sibling(db)
                    .unwrap_or_else(|e| unreachable!("database 0's backend builds: {e}")),
            )
        })
    }

    /// The keyspace of database `db` if it was built (an unbuilt one is empty).
    pub(crate) fn built(&self, db: usize) -> Option<&Arc<Store>> {
        self.slots[self.map[db].load(Ordering::Acquire)].get()
    }

    /// The built databases, with their numbers, in order.
    pub(crate) fn each(&self) -> impl Iterator<Item = (usize, &Arc<Store>)> {
        (0..self.count()).filter_map(|db| self.built(db).map(|s| (db, s)))
    }

    /// `SWAPDB a b`: exchanges the two databases. The caller holds the gate exclusively.
    pub(crate) fn swap(&self, a: usize, b: usize) {
        if a == b {
            return;
        }
        // Both built, so that each keyspace can carry its new number.
        let (sa, sb) = (self.get(a).clone(), self.get(b).clone());
        let pa = self.map[a].load(Ordering::Acquire);
        let pb = self.map[b].swap(pa, Ordering::AcqRel);
        self.map[a].store(pb, Ordering::Release);
        sa.db.store(b, Ordering::Relaxed);
        sb.db.store(a, Ordering::Relaxed);
    }

    /// Attaches the append-only file to every database (at start, before the keyspaces
    /// are shared): every write from now on is logged to it.
    pub(crate) fn set_journal(&mut self, journal: Arc<dyn Journal>) {
        for slot in self.slots.iter_mut() {
            if let Some(store) = slot.get_mut().and_then(Arc::get_mut) {
                store.set_journal(journal.clone());
            }
        }
    }

    /// Runs `f` with write access to `ka` in database `a` (first `Txn`) and `kb` in
    /// database `b` (second), `a != b` (`MOVE`, `COPY … DB`): both stripes held (the
    /// lower database's first: the numbers do not change while commands hold the gate),
    /// the records of both logged as one frame, so that a crash never replays half.
    pub(crate) fn write_pair<R>(
        &self,
        (a, b): (usize, usize),
        (ka, kb): (&[u8], &[u8]),
        call: &Call,
        f: impl FnOnce(&Txn<'_>, &Txn<'_>) -> R,
    ) -> R {
        let (sa, sb) = (self.get(a), self.get(b));
        fn lock<'s>(s: &'s Store, key: &[u8]) -> (usize, MutexGuard<'s, Option<Hot>>) {
            let i = s.stripe(key);
            (i, s.stripes[i].lock().unwrap_or_else(|p| p.into_inner()))
        }
        let (ga, gb) = if a < b {
            let ga = lock(sa, ka);
            (ga, lock(sb, kb))
        } else {
            let gb = lock(sb, kb);
            (lock(sa, ka), gb)
        };
        let ta = Txn::new(sa, call, Guards::One(ga.0, ga.1));
        let tb = Txn::new(sb, call, Guards::One(gb.0, gb.1));
        let r = f(&ta, &tb);
        let (la, lb) = (ta.take_log(), tb.take_log());
        sa.commit_logs(call, &[(a, &la), (b, &lb)]);
        r
    }

    /// Logs `records` (a `SWAPDB`) as one frame, or into the call's transaction.
    pub(crate) fn log(&self, call: &Call, records: &[u8]) {
        self.shared().commit_logs(call, &[(0, records)]);
    }

    /// `keyspace_hits`, `keyspace_misses` over every database.
    pub(crate) fn lookups(&self) -> (u64, u64) {
        self.each().fold((0, 0), |(h, m), (_, s)| {
            let (a, b) = s.lookups();
            (h + a, m + b)
        })
    }

    /// `CONFIG RESETSTAT`: the lookup, expiry and eviction counts back to 0.
    pub(crate) fn reset_stats(&self) {
        for (_, s) in self.each() {
            s.hits.store(0, Ordering::Relaxed);
            s.misses.store(0, Ordering::Relaxed);
            s.expired.store(0, Ordering::Relaxed);
        }
        self.shared().memory().reset_evictions();
    }

    /// Keys removed by expiry so far, over every database.
    pub(crate) fn expired_keys(&self) -> u64 {
        self.each().map(|(_, s)| s.expired_keys()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Call, Entry};
    use super::*;

    #[test]
    fn databases_are_separate_built_on_use_and_swap() {
        let d = Databases::new(Store::open("wormhole").unwrap(), 16);
        assert_eq!(d.each().count(), 1);
        let put = |db: usize, k: &[u8]| {
            d.get(db)
                .write(&[k], &Call::new(0), |t| t.store(k, &Entry::string(vec![1])))
                .unwrap()
        };
        put(0, b"a");
        put(3, b"b");
        put(3, b"c");
        assert_eq!(d.each().map(|(n, _)| n).collect::<Vec<_>>(), [0, 3]);
        assert_eq!(d.get(0).kv().len(), 1);
        assert_eq!(d.get(3).kv().len(), 2);
        d.swap(0, 3);
        assert_eq!(d.get(0).kv().len(), 2);
        assert_eq!(d.get(3).kv().len(), 1);
        assert_eq!((d.get(0).db(), d.get(3).db()), (0, 3));
        // Swapping with a database never used: it is built, empty.
        d.swap(3, 7);
        assert_eq!(d.get(3).kv().len(), 0);
        assert_eq!(d.get(7).kv().len(), 1);
        assert_eq!(d.get(7).db(), 7);
    }
}
