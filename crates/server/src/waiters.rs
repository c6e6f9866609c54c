//! Clients blocked in `BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BZPOPMIN` and
//! `BZPOPMAX`: for each key, the clients waiting on it in the order they blocked (Redis's
//! `blocking_keys`), and each waiter's state.
//!
//! # Protocol
//!
//! - A blocking command that finds none of its keys ready registers a [`Waiter`] while it
//!   still holds the stripes of its keys ([`Waiters::add`]). A write that creates a list
//!   or sorted set under a key holds that key's stripe too, and notes the key in its call
//!   (`crate::store`, while [`Waiters`] says someone waits): so either the blocking
//!   command saw the data, or the write sees the waiter. Nothing is missed.
//! - After the command (or, later, after a transaction's `EXEC`), the command layer takes
//!   the noted keys and serves their waiters in order (`crate::cmd::blocking`): under the
//!   key's stripe it checks that the key holds data of the type the first waiter wants,
//!   [claims](Waiters::claim) the waiter (which removes it from every key it waits on),
//!   pops for it, and [delivers](Waiters::deliver) the reply with the log position the
//!   pop reached.
//! - The blocked connection waits for the delivery, its timeout, or its socket closing.
//!   On a timeout or a close it [cancels](Waiters::cancel): a waiter still waiting is
//!   removed; one already claimed gets its reply (which is on its way, since the claim
//!   and the pop happen under the same stripes).
//!
//! Lock order: a key's stripe, then the registry's mutex, then a waiter's state.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use crate::resp::Reply;
use crate::store::Store;

/// What a blocked client asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    /// `BLPOP` (`left`) or `BRPOP`: one element from a list.
    Pop {
        /// From the head.
        left: bool,
    },
    /// `BLMOVE` / `BRPOPLPUSH`: an element moved from a list to `dst`.
    Move {
        /// The destination list.
        dst: Vec<u8>,
        /// Pop from the head of the source.
        from_left: bool,
        /// Push onto the head of the destination.
        to_left: bool,
    },
    /// `BZPOPMIN` or `BZPOPMAX` (`max`): one member of a sorted set.
    ZPop {
        /// The highest score.
        max: bool,
    },
}

impl Want {
    /// Whether this request waits for a sorted set (else for a list).
    pub(crate) fn wants_zset(&self) -> bool {
        matches!(self, Want::ZPop { .. })
    }
}

#[derive(Debug)]
enum State {
    Waiting,
    /// Being served under the key's stripe: the reply follows.
    Claimed,
    /// The reply and the append-only-file position that must be durable before it is sent.
    Served(Reply, u64),
    /// Timed out or disconnected.
    Cancelled,
}

/// One blocked client.
#[derive(Debug)]
pub(crate) struct Waiter {
    /// The keys, in the order given.
    pub(crate) keys: Vec<Vec<u8>>,
    /// What it waits for.
    pub(crate) want: Want,
    state: Mutex<State>,
    notify: Notify,
}

impl Waiter {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the waiter was served (or [`Waiter::take`] has something).
    pub(crate) async fn served(&self) {
        self.notify.notified().await;
    }

    /// The reply, once served (taken once).
    pub(crate) fn take(&self) -> Option<(Reply, u64)> {
        let mut s = self.state();
        if matches!(*s, State::Served(..)) {
            match std::mem::replace(&mut *s, State::Cancelled) {
                State::Served(r, pos) => return Some((r, pos)),
                _ => unreachable!("matched above"),
            }
        }
        None
    }
}

/// A connection's pending blocking command (`crate::state::Client::blocked`).
pub(crate) struct Blocked {
    /// Its registration.
    pub(crate) waiter: Arc<Waiter>,
    /// When it times out (`None`: never).
    pub(crate) deadline: Option<Instant>,
    /// What it replies on a timeout.
    pub(crate) timeout_reply: Reply,
}

/// Every blocked client, by key (see the module docs).
pub(crate) struct Waiters {
    by_key: Mutex<HashMap<Vec<u8>, VecDeque<Arc<Waiter>>>>,
    count: AtomicUsize,
    store: Arc<Store>,
}

impl Waiters {
    /// An empty registry for `store` (which it tells whether anyone waits).
    pub(crate) fn new(store: Arc<Store>) -> Waiters {
        Waiters {
            by_key: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            store,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, VecDeque<Arc<Waiter>>>> {
        self.by_key.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of blocked clients.
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Registers a client waiting on `keys` (call with the keys' stripes held).
    pub(crate) fn add(&self, keys: Vec<Vec<u8>>, want: Want) -> Arc<Waiter> {
        let w = Arc::new(Waiter {
            keys,
            want,
            state: Mutex::new(State::Waiting),
            notify: Notify::new(),
        });
        let mut map = self.lock();
        for k in &w.keys {
            let q = map.entry(k.clone()).or_default();
            if !q.iter().any(|x| Arc::ptr_eq(x, &w)) {
                q.push_back(w.clone());
            }
        }
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            self.store.set_waiting(true);
        }
        w
    }

    /// Every key some client waits on (`SWAPDB` looks for the ones it made ready).
    pub(crate) fn keys(&self) -> Vec<Vec<u8>> {
        self.lock().keys().cloned().collect()
    }

    /// The first client waiting on `key` for a sorted set (`zset`) or a list.
    pub(crate) fn first(&self, key: &[u8], zset: bool) -> Option<Arc<Waiter>> {
        self.lock()
            .get(key)?
            .iter()
            .find(|w| w.want.wants_zset() == zset)
            .cloned()
    }

    fn unlink(&self, map: &mut HashMap<Vec<u8>, VecDeque<Arc<Waiter>>>, w: &Arc<Waiter>) {
        for k in &w.keys {
            if let Some(q) = map.get_mut(k) {
                q.retain(|x| !Arc::ptr_eq(x, w));
                if q.is_empty() {
                    map.remove(k);
                }
            }
        }
        if self.count.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.store.set_waiting(false);
        }
    }

    /// Takes `w` for serving (call with the served key's stripe held): `false` when it is
    /// no longer waiting.
    pub(crate) fn claim(&self, w: &Arc<Waiter>) -> bool {
        let mut map = self.lock();
        let mut s = w.state();
        if !matches!(*s, State::Waiting) {
            return false;
        }
        *s = State::Claimed;
        drop(s);
        self.unlink(&mut map, w);
        true
    }

    /// Hands a claimed waiter its reply.
    pub(crate) fn deliver(&self, w: &Waiter, reply: Reply, position: u64) {
        *w.state() = State::Served(reply, position);
        w.notify.notify_one();
    }

    /// Gives up waiting (timeout, disconnection): `Ok(None)` when the waiter was removed,
    /// `Ok(Some(reply))` when it had been served, `Err(())` when it is being served (its
    /// reply follows: wait for [`Waiter::served`] and cancel again).
    pub(crate) fn cancel(&self, w: &Arc<Waiter>) -> Result<Option<(Reply, u64)>, ()> {
        let mut map = self.lock();
        let mut s = w.state();
        match &*s {
            State::Waiting => {
                *s = State::Cancelled;
                drop(s);
                self.unlink(&mut map, w);
                Ok(None)
            }
            State::Claimed => Err(()),
            State::Served(..) => match std::mem::replace(&mut *s, State::Cancelled) {
                State::Served(r, pos) => Ok(Some((r, pos))),
                _ => unreachable!("matched above"),
            },
            State::Cancelled => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Waiters {
        Waiters::new(Arc::new(Store::new(
            orrery::registry::build("wormhole").unwrap(),
        )))
    }

    #[test]
    fn order_claims_and_cancels() {
        let r = registry();
        let a = r.add(vec![b"k".to_vec(), b"j".to_vec()], Want::Pop { left: true });
        let b = r.add(vec![b"k".to_vec()], Want::ZPop { max: false });
        let c = r.add(vec![b"k".to_vec()], Want::Pop { left: false });
        assert_eq!(r.len(), 3);
        assert!(Arc::ptr_eq(&r.first(b"k", false).unwrap(), &a));
        assert!(Arc::ptr_eq(&r.first(b"k", true).unwrap(), &b));
        assert!(r.claim(&a));
        assert!(!r.claim(&a));
        assert!(r.first(b"j", false).is_none(), "a claim removes every key");
        assert!(Arc::ptr_eq(&r.first(b"k", false).unwrap(), &c));
        assert_eq!(r.cancel(&a), Err(()));
        r.deliver(&a, Reply::Int(1), 7);
        assert_eq!(a.take().map(|x| x.1), Some(7));
        assert_eq!(r.cancel(&b), Ok(None));
        assert_eq!(r.len(), 1);
        assert!(r.claim(&c));
        r.deliver(&c, Reply::Nil, 0);
        assert!(matches!(r.cancel(&c), Ok(Some((Reply::Nil, 0)))));
        assert_eq!(r.len(), 0);
    }
}
