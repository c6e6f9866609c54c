//! A connection's transaction state: the commands queued since `MULTI`, whether one was
//! rejected while queuing (`EXECABORT`), and the keys it watches with its watch flag
//! (`crate::store`'s watch table). The commands themselves are in
//! `crate::cmd::transactions`.
//!
//! Below the client state (`crate::state::Client` holds one) and above the store. Dropping
//! it (the connection closed) unregisters its watched keys.

use std::sync::Arc;

use crate::store::{Store, WatchFlag};

/// One connection's `MULTI`/`WATCH` state.
#[derive(Default)]
pub(crate) struct Multi {
    /// The queued requests (name first) while in `MULTI`; `None` outside.
    queued: Option<Vec<Vec<Vec<u8>>>>,
    /// A command was rejected while queuing: `EXEC` answers `EXECABORT`.
    pub(crate) aborted: bool,
    /// `EXEC` is running the queued commands (blocking commands do not block).
    pub(crate) in_exec: bool,
    /// The watched keys, by database, and the store they are registered in.
    watched: Vec<(usize, Vec<u8>)>,
    store: Option<Arc<Store>>,
    flag: Arc<WatchFlag>,
}

impl Multi {
    /// Whether the connection is inside `MULTI` (queuing).
    pub(crate) fn queuing(&self) -> bool {
        self.queued.is_some()
    }

    /// Enters `MULTI`.
    pub(crate) fn begin(&mut self) {
        self.queued = Some(Vec::new());
        self.aborted = false;
    }

    /// Queues a request.
    pub(crate) fn push(&mut self, args: &[Vec<u8>]) {
        if let Some(q) = &mut self.queued {
            q.push(args.to_vec());
        }
    }

    /// Leaves `MULTI`, returning what was queued (empty outside `MULTI`).
    pub(crate) fn take(&mut self) -> Vec<Vec<Vec<u8>>> {
        self.aborted = false;
        self.queued.take().unwrap_or_default()
    }

    /// Watches `key` in database `db` (the flag is set by any change from now on).
    pub(crate) fn watch(&mut self, store: &Arc<Store>, db: usize, key: &[u8]) {
        if self.watched.iter().any(|(d, k)| *d == db && k == key) {
            return;
        }
        store.watch(db, key, &self.flag);
        self.watched.push((db, key.to_vec()));
        self.store = Some(store.clone());
    }

    /// The watched keys.
    pub(crate) fn watched(&self) -> &[(usize, Vec<u8>)] {
        &self.watched
    }

    /// Whether a watched key changed since it was watched.
    pub(crate) fn dirty(&self) -> bool {
        self.flag.is_set()
    }

    /// Forgets every watched key and clears the flag.
    pub(crate) fn unwatch_all(&mut self) {
        if let Some(store) = &self.store {
            for (db, key) in self.watched.drain(..) {
                store.unwatch(db, &key, &self.flag);
            }
        }
        self.flag.clear();
    }

    /// `RESET`: out of `MULTI`, nothing watched.
    pub(crate) fn reset(&mut self) {
        self.take();
        self.in_exec = false;
        self.unwatch_all();
    }
}

impl Drop for Multi {
    fn drop(&mut self) {
        self.unwatch_all();
    }
}
