//! The state connections share, and each connection's own: the keyspace and settings
//! ([`Shared`]), the client registry (`CLIENT LIST`), the `SCAN` cursor tables, the
//! counters of `INFO`, and a connection's protocol and authentication ([`Client`]).
//!
//! Below the command layer and the network layer, which both use it: command handlers get
//! a [`Shared`] and a [`Client`] in their context (`crate::cmd::Ctx`), and the accept loop
//! (`crate::server`) creates them. Nothing here knows the command table: a client's last
//! command is a number the command layer gives and names.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::aof::Aof;
use crate::clock::now_ms;
use crate::config::{Config, Live};
use crate::multi::Multi;
use crate::pubsub::{Hub, Subscriptions};
use crate::store::Databases;
use crate::waiters::{Blocked, Waiters};

/// Counters for `INFO stats`.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) connections: AtomicU64,
    pub(crate) commands: AtomicU64,
    pub(crate) rejected: AtomicU64,
}

/// What every connection shares.
pub(crate) struct Shared {
    /// The logical databases (`SELECT`), each a keyspace.
    pub(crate) dbs: Arc<Databases>,
    /// The append-only file, when persistence is on (the store holds it too, as the
    /// journal its writes go to).
    pub(crate) aof: Option<Arc<Aof>>,
    pub(crate) config: Config,
    /// The settings `CONFIG SET` changes.
    pub(crate) live: Live,
    /// The port actually bound.
    pub(crate) port: u16,
    pub(crate) clients: Clients,
    pub(crate) cursors: Cursors,
    pub(crate) listed: ListedCursors,
    pub(crate) stats: Stats,
    /// Clients blocked in `BLPOP` and its relatives.
    pub(crate) waiters: Waiters,
    pub(crate) started_ms: u64,
    /// Signalled by `SHUTDOWN`.
    pub(crate) shutdown: Notify,
    /// Pub/Sub subscriptions.
    pub(crate) pubsub: Arc<Hub>,
}

impl Shared {
    /// The state of a server listening on `port`, over the databases `dbs` and their
    /// append-only file.
    pub(crate) fn new(config: Config, dbs: Databases, aof: Option<Arc<Aof>>, port: u16) -> Shared {
        let store = dbs.shared().clone();
        store.thresholds().set_all(config.thresholds);
        store.configure_memory(&config);
        Shared {
            live: Live::new(
                &config,
                aof.as_ref().map(|a| a.settings.clone()),
                store.thresholds().clone(),
                store.memory_handle(),
            ),
            waiters: Waiters::new(store),
            dbs: Arc::new(dbs),
            aof,
            port,
            clients: Clients::default(),
            cursors: Cursors::default(),
            listed: ListedCursors::default(),
            stats: Stats::default(),
            started_ms: now_ms(),
            shutdown: Notify::new(),
            pubsub: Arc::default(),
            config,
        }
    }
}

/// One connection's public face (what `CLIENT LIST` shows).
pub(crate) struct ClientInfo {
    pub(crate) id: u64,
    addr: String,
    laddr: String,
    created_ms: u64,
    /// When it last ran a command (Unix milliseconds).
    pub(crate) last_ms: AtomicU64,
    pub(crate) proto: AtomicU8,
    name: Mutex<Option<Vec<u8>>>,
    /// The number of the last command (`crate::cmd` numbers them; `usize::MAX`: none
    /// yet). An atomic, not a lock: it is set on
    /// every command.
    last_cmd: AtomicUsize,
    /// Channels and patterns subscribed to (`sub=`, `psub=` in `CLIENT LIST`).
    subscriptions: [AtomicUsize; 2],
    /// The selected database (`db=`).
    pub(crate) db: AtomicUsize,
}

impl ClientInfo {
    /// Records how many channels and patterns the client is subscribed to.
    pub(crate) fn set_subscriptions(&self, channels: usize, patterns: usize) {
        self.subscriptions[0].store(channels, Ordering::Relaxed);
        self.subscriptions[1].store(patterns, Ordering::Relaxed);
    }

    pub(crate) fn set_name(&self, name: Vec<u8>) {
        *self.name.lock().unwrap_or_else(|p| p.into_inner()) = Some(name).filter(|n| !n.is_empty());
    }

    pub(crate) fn clear_name(&self) {
        *self.name.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub(crate) fn name(&self) -> Option<Vec<u8>> {
        self.name.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records command number `at` as the last one run (the command layer numbers its
    /// commands: `crate::cmd`).
    pub(crate) fn set_last_command(&self, at: usize) {
        if self.last_cmd.load(Ordering::Relaxed) != at {
            self.last_cmd.store(at, Ordering::Relaxed);
        }
    }

    /// The number of the last command run (`usize::MAX`: none yet).
    pub(crate) fn last_command(&self) -> usize {
        self.last_cmd.load(Ordering::Relaxed)
    }

    /// One `CLIENT LIST` line (Redis's field names, the subset that applies); `cmd` is the
    /// name of its last command.
    pub(crate) fn describe(&self, now: u64, proto: u8, cmd: &str) -> String {
        let name = self
            .name()
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        let sub = self.subscriptions[0].load(Ordering::Relaxed);
        let psub = self.subscriptions[1].load(Ordering::Relaxed);
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={} db={} sub={} psub={} ssub=0 multi=-1 cmd={} user=default resp={}",
            self.id,
            self.addr,
            self.laddr,
            name,
            now.saturating_sub(self.created_ms) / 1000,
            now.saturating_sub(self.last_ms.load(Ordering::Relaxed)) / 1000,
            if sub + psub > 0 { "P" } else { "N" },
            self.db.load(Ordering::Relaxed),
            sub,
            psub,
            cmd,
            proto
        )
    }
}

/// The connected clients; touched on connect, disconnect and `CLIENT LIST` only.
#[derive(Default)]
pub(crate) struct Clients {
    map: Mutex<HashMap<u64, Arc<ClientInfo>>>,
    count: AtomicUsize,
    next_id: AtomicU64,
}

impl Clients {
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn snapshot(&self) -> Vec<Arc<ClientInfo>> {
        let mut v: Vec<_> = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        v.sort_by_key(|c| c.id);
        v
    }

    /// Registers a connection unless `max` are connected already.
    pub(crate) fn register(
        &self,
        max: usize,
        addr: SocketAddr,
        laddr: SocketAddr,
    ) -> Option<Arc<ClientInfo>> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= max {
            return None;
        }
        let now = now_ms();
        let info = Arc::new(ClientInfo {
            id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            addr: addr.to_string(),
            laddr: laddr.to_string(),
            created_ms: now,
            last_ms: AtomicU64::new(now),
            proto: AtomicU8::new(2),
            name: Mutex::new(None),
            last_cmd: AtomicUsize::new(usize::MAX),
            subscriptions: Default::default(),
            db: AtomicUsize::new(0),
        });
        map.insert(info.id, info.clone());
        self.count.store(map.len(), Ordering::Relaxed);
        Some(info)
    }

    /// A client description not in the registry (for in-process callers: the fuzz
    /// targets).
    pub(crate) fn detached(&self) -> Arc<ClientInfo> {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let now = now_ms();
        Arc::new(ClientInfo {
            id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            addr: addr.to_string(),
            laddr: addr.to_string(),
            created_ms: now,
            last_ms: AtomicU64::new(now),
            proto: AtomicU8::new(2),
            name: Mutex::new(None),
            last_cmd: AtomicUsize::new(usize::MAX),
            subscriptions: Default::default(),
            db: AtomicUsize::new(0),
        })
    }

    pub(crate) fn unregister(&self, id: u64) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&id);
        self.count.store(map.len(), Ordering::Relaxed);
    }
}

/// `SCAN` cursors: number → the last key returned. Bounded; the oldest are forgotten
/// first (a forgotten cursor is an `invalid cursor` error, never a wrong position).
#[derive(Default)]
pub(crate) struct Cursors {
    inner: Mutex<CursorTable>,
}

#[derive(Default)]
struct CursorTable {
    next: u64,
    keys: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

/// Most cursors remembered at once.
const MAX_CURSORS: usize = 100_000;

/// Most `SCAN`s over an unordered backend in progress at once (each holds a list of keys).
const MAX_LISTED: usize = 4;

/// The keys an unordered `SCAN` listed when it started.
pub(crate) type KeyList = Arc<Vec<Vec<u8>>>;

/// The key lists of `SCAN`s over an unordered backend: cursor → (keys, next position).
#[derive(Default)]
pub(crate) struct ListedCursors {
    inner: Mutex<VecDeque<(u64, KeyList, usize)>>,
}

impl ListedCursors {
    /// Remembers position `at` in `keys` under a new cursor taken from `ids`.
    pub(crate) fn put(&self, ids: &Cursors, keys: KeyList, at: usize) -> u64 {
        let id = ids.next_id();
        let mut t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        t.push_back((id, keys, at));
        while t.len() > MAX_LISTED {
            t.pop_front();
        }
        id
    }

    /// The list and position of cursor `id` (forgotten: it is used once).
    pub(crate) fn take(&self, id: u64) -> Option<(KeyList, usize)> {
        let mut t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let i = t.iter().position(|e| e.0 == id)?;
        t.remove(i).map(|(_, keys, at)| (keys, at))
    }
}

impl Cursors {
    fn next_id(&self) -> u64 {
        let mut t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        t.next += 1;
        t.next
    }

    pub(crate) fn put(&self, key: Vec<u8>) -> u64 {
        let mut t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        t.next += 1;
        let id = t.next;
        t.keys.insert(id, key);
        t.order.push_back(id);
        while t.order.len() > MAX_CURSORS {
            if let Some(old) = t.order.pop_front() {
                t.keys.remove(&old);
            }
        }
        id
    }

    pub(crate) fn get(&self, id: u64) -> Option<Vec<u8>> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys
            .get(&id)
            .cloned()
    }
}

/// One connection's private state.
pub(crate) struct Client {
    pub(crate) info: Arc<ClientInfo>,
    /// Protocol version in use (2 or 3).
    pub(crate) proto: u8,
    /// The selected database (`SELECT`).
    pub(crate) db: usize,
    pub(crate) authenticated: bool,
    /// Close once the current replies are written (`QUIT`, `SHUTDOWN`).
    pub(crate) close_after_reply: bool,
    /// The blocking command the client waits in, set by the command (`crate::waiters`).
    pub(crate) blocked: Option<Blocked>,
    /// `MULTI` and `WATCH` state (`crate::multi`).
    pub(crate) multi: Multi,
    /// Pub/Sub subscriptions (`crate::pubsub`).
    pub(crate) subs: Subscriptions,
}

impl Client {
    /// A fresh connection's state (RESP2, authenticated when no password is set).
    pub(crate) fn new(info: Arc<ClientInfo>, authenticated: bool) -> Client {
        Client {
            info,
            proto: 2,
            db: 0,
            authenticated,
            close_after_reply: false,
            blocked: None,
            multi: Multi::default(),
            subs: Subscriptions::default(),
        }
    }
}
