//! The network side: the accept loop with its client limit, one task per connection with
//! buffered framing and pipelining, the client registry (`CLIENT LIST`), the `SCAN` cursor
//! table, active expiry and shutdown.
//!
//! A connection reads whatever bytes arrived, runs every complete request in them in order,
//! and writes all their replies with one write: that is pipelining, at no cost to a client
//! that sends one request at a time. Limits are checked where bytes enter (the parser's
//! length limits, the query buffer limit) rather than per command; the output buffer limit
//! is checked as replies are encoded (a batch's replies are all a client has pending, since
//! they are written before the next read). A protocol error gets
//! Redis's error reply and closes the connection, as Redis does.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::cmd::{self, Ctx, Spec};
use crate::config::{Config, Live};
use crate::resp::{self, Reply};
use crate::store::Store;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Counters for `INFO stats`.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) connections: AtomicU64,
    pub(crate) commands: AtomicU64,
    pub(crate) rejected: AtomicU64,
}

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) store: Arc<Store>,
    pub(crate) config: Config,
    /// The settings `CONFIG SET` changes.
    pub(crate) live: Live,
    /// The port actually bound.
    pub(crate) port: u16,
    pub(crate) clients: Clients,
    pub(crate) cursors: Cursors,
    pub(crate) listed: ListedCursors,
    pub(crate) stats: Stats,
    pub(crate) started_ms: u64,
    /// Signalled by `SHUTDOWN`.
    pub(crate) shutdown: Notify,
}

impl Shared {
    /// The state of a server listening on `port`.
    pub(crate) fn new(config: Config, store: Store, port: u16) -> Shared {
        Shared {
            live: Live::new(&config, store.aof().map(|a| a.settings.clone())),
            store: Arc::new(store),
            port,
            clients: Clients::default(),
            cursors: Cursors::default(),
            listed: ListedCursors::default(),
            stats: Stats::default(),
            started_ms: now_ms(),
            shutdown: Notify::new(),
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
    last_ms: AtomicU64,
    pub(crate) proto: AtomicU8,
    name: Mutex<Option<Vec<u8>>>,
    /// The last command: its index in the command table, or past it an index in
    /// [`SUBCOMMANDS`] (`usize::MAX`: none yet). An atomic, not a lock: it is set on
    /// every command.
    last_cmd: AtomicUsize,
}

/// Subcommand names `CLIENT LIST` may show as a client's last command.
const SUBCOMMANDS: [&str; 5] = [
    "client|setname",
    "client|getname",
    "client|id",
    "client|info",
    "client|list",
];

impl ClientInfo {
    pub(crate) fn set_name(&self, name: Vec<u8>) {
        *self.name.lock().unwrap_or_else(|p| p.into_inner()) = Some(name).filter(|n| !n.is_empty());
    }

    pub(crate) fn clear_name(&self) {
        *self.name.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub(crate) fn name(&self) -> Option<Vec<u8>> {
        self.name.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records `spec` (an entry of the command table) as the last command run.
    pub(crate) fn set_last_command(&self, spec: &'static Spec) {
        let at = (std::ptr::from_ref(spec) as usize - cmd::TABLE.as_ptr() as usize)
            / std::mem::size_of::<Spec>();
        if self.last_cmd.load(Ordering::Relaxed) != at {
            self.last_cmd.store(at, Ordering::Relaxed);
        }
    }

    /// Records subcommand `name` (one of [`SUBCOMMANDS`]) as the last command run.
    pub(crate) fn set_last_subcommand(&self, name: &'static str) {
        let at = SUBCOMMANDS.iter().position(|&s| s == name).unwrap_or(4);
        self.last_cmd
            .store(cmd::TABLE.len() + at, Ordering::Relaxed);
    }

    /// One `CLIENT LIST` line (Redis's field names, the subset that applies).
    pub(crate) fn describe(&self, now: u64, proto: u8) -> String {
        let name = self
            .name()
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        let at = self.last_cmd.load(Ordering::Relaxed);
        let cmd = cmd::TABLE.get(at).map(|s| s.name).unwrap_or_else(|| {
            at.checked_sub(cmd::TABLE.len())
                .and_then(|i| SUBCOMMANDS.get(i))
                .copied()
                .unwrap_or("NULL")
        });
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd={} user=default resp={}",
            self.id,
            self.addr,
            self.laddr,
            name,
            now.saturating_sub(self.created_ms) / 1000,
            now.saturating_sub(self.last_ms.load(Ordering::Relaxed)) / 1000,
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
    fn register(&self, max: usize, addr: SocketAddr, laddr: SocketAddr) -> Option<Arc<ClientInfo>> {
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
        })
    }

    fn unregister(&self, id: u64) {
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
    pub(crate) authenticated: bool,
    /// Close once the current replies are written (`QUIT`, `SHUTDOWN`).
    pub(crate) close_after_reply: bool,
}

impl Client {
    /// A fresh connection's state (RESP2, authenticated when no password is set).
    pub(crate) fn new(info: Arc<ClientInfo>, authenticated: bool) -> Client {
        Client {
            info,
            proto: 2,
            authenticated,
            close_after_reply: false,
        }
    }
}

/// Runs the server until `SIGTERM`, `SIGINT` or `SHUTDOWN`; see the crate docs.
pub fn run(config: Config) -> Result<(), String> {
    config.validate()?;
    let mut store = Store::open(&config.index)?;
    if config.appendonly {
        let settings = Arc::new(crate::aof::AofSettings::new(
            config.appendfsync,
            config.auto_aof_rewrite_percentage,
            config.auto_aof_rewrite_min_size,
            config.aof_rewrite_key_delay,
        ));
        let aof = crate::aof::Aof::open(&config.dir, settings, &store)?;
        store.set_aof(aof);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let res = runtime.block_on(serve(config, store));
    runtime.shutdown_timeout(Duration::from_secs(1));
    res
}

async fn serve(config: Config, store: Store) -> Result<(), String> {
    let addr = format!("{}:{}", config.bind, config.port);
    let listener = TcpListener::bind(addr.parse::<SocketAddr>().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let shared = Arc::new(Shared::new(config, store, local.port()));
    println!(
        "orrery-server {} (index {}) ready to accept connections on {local}",
        env!("CARGO_PKG_VERSION"),
        shared.config.index
    );
    tokio::spawn(cron(shared.clone()));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                shared.stats.connections.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(connection(shared.clone(), stream, peer, local));
            }
            _ = term.recv() => {
                println!("received SIGTERM, shutting down");
                break;
            }
            _ = tokio::signal::ctrl_c() => {
                println!("received SIGINT, shutting down");
                break;
            }
            _ = shared.shutdown.notified() => {
                println!("SHUTDOWN received, shutting down");
                break;
            }
        }
    }
    if let Some(aof) = shared.store.aof() {
        aof.close();
    }
    println!("bye");
    Ok(())
}

/// Every 100 ms: removes due keys (up to 25 ms of work) and starts an automatic rewrite of
/// the append-only file when it grew enough (`auto-aof-rewrite-percentage`), as Redis's
/// `serverCron` does.
async fn cron(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let start = std::time::Instant::now();
        while shared.store.expire_cycle(now_ms(), 256) == 256
            && start.elapsed() < Duration::from_millis(25)
        {}
        if let Some(aof) = shared.store.aof()
            && let Some(growth) = aof.wants_auto_rewrite()
            && aof.rewrite_in_background(shared.store.clone(), true)
        {
            println!("starting automatic rewriting of the append-only file on {growth}% growth");
        }
    }
}

async fn connection(
    shared: Arc<Shared>,
    mut stream: TcpStream,
    peer: SocketAddr,
    local: SocketAddr,
) {
    let _ = stream.set_nodelay(true);
    let Some(info) =
        shared
            .clients
            .register(shared.live.maxclients.load(Ordering::Relaxed), peer, local)
    else {
        shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    };
    let id = info.id;
    let mut client = Client::new(info, !shared.live.needs_auth());
    let _ = serve_client(&shared, &mut client, &mut stream).await;
    shared.clients.unregister(id);
}

async fn serve_client(
    shared: &Shared,
    client: &mut Client,
    stream: &mut TcpStream,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut args = resp::Args::default();
    loop {
        let limits = shared.live.limits(shared.config.limits);
        let out_limit = shared.live.output_buffer_limit.load(Ordering::Relaxed);
        let mut used = 0;
        let mut ran = 0;
        crate::store::take_pending();
        let mut fatal = false;
        // One clock reading per batch: the commands of one read run at one time (Redis,
        // too, reads the clock once per event-loop round for expiry checks).
        let now = now_ms();
        loop {
            match resp::parse_into(&buf[used..], &limits, &mut args) {
                Ok(Some(n)) => {
                    used += n;
                    let args = args.as_slice();
                    if args.is_empty() {
                        continue;
                    }
                    let mut ctx = Ctx {
                        shared,
                        client,
                        now,
                    };
                    let reply = cmd::dispatch(&mut ctx, args);
                    ran += 1;
                    reply.encode(client.proto, &mut out);
                    let limit = out_limit;
                    if limit > 0 && out.len() > limit {
                        // As Redis's hard limit: the client is closed, its replies dropped
                        // (the commands ran: their writes are kept and logged).
                        println!(
                            "closing client id={}: output buffer over the limit ({} > {limit} bytes)",
                            client.info.id,
                            out.len()
                        );
                        out.clear();
                        fatal = true;
                        break;
                    }
                    client.info.proto.store(client.proto, Ordering::Relaxed);
                    if client.close_after_reply {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    Reply::err(format!("ERR {}", e.0)).encode(client.proto, &mut out);
                    fatal = true;
                    break;
                }
            }
        }
        buf.drain(..used);
        if ran > 0 {
            shared.stats.commands.fetch_add(ran, Ordering::Relaxed);
            client.info.last_ms.store(now, Ordering::Relaxed);
        }
        let pending = crate::store::take_pending();
        if pending > 0
            && let Some(aof) = shared.store.aof()
        {
            // Replies to writes go out once their records are durable (group commit).
            aof.wait(pending).await;
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
            if out.capacity() > 1024 * 1024 {
                out.shrink_to(16 * 1024);
            }
        }
        if fatal || client.close_after_reply {
            return Ok(());
        }
        if buf.len() > shared.live.query_buffer_limit.load(Ordering::Relaxed) {
            println!(
                "closing client id={}: query buffer over the limit",
                client.info.id
            );
            return Ok(());
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}
