//! The network side, on top of everything else: the accept loop with its client limit, one
//! task per connection with buffered framing and pipelining, the cron (active expiry,
//! automatic rewrite) and shutdown. The state the connections share is in `crate::state`.
//!
//! A connection reads whatever bytes arrived, runs every complete request in them in order,
//! and writes all their replies with one write: that is pipelining, at no cost to a client
//! that sends one request at a time. Limits are checked where bytes enter (the parser's
//! length limits, the query buffer limit) rather than per command; the output buffer limit
//! is checked as replies are encoded (a batch's replies are all a client has pending, since
//! they are written before the next read). A protocol error gets
//! Redis's error reply and closes the connection, as Redis does.
//!
//! A blocking command (`BLPOP` …) that must wait stops the batch: the replies before it
//! are written, then the connection waits for its reply, its timeout, or the socket's
//! close (which unregisters it), reading what the client sends meanwhile into its buffer
//! (run after the reply, as Redis does), and goes on with the rest of the batch.
//!
//! A subscribed connection (`crate::pubsub`) also drains its inbox: after each reply, and
//! while it waits for requests; its writes give up, and the connection closes, once
//! publishers found it over the `pubsub` output-buffer limit.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::aof::{Aof, AofSettings};
use crate::clock::now_ms;
use crate::cmd::{self, Ctx};
use crate::config::Config;
use crate::pubsub::Inbox;
use crate::resp::{self, Reply};
use crate::state::{Client, Shared};
use crate::store::{Call, Databases, Store};
use crate::waiters::Blocked;

/// Runs the server until `SIGTERM`, `SIGINT` or `SHUTDOWN`; see the crate docs.
pub fn run(config: Config) -> Result<(), String> {
    config.validate()?;
    let store = Store::open(&config.index)?;
    // Before the log is replayed: replay builds collections under these thresholds.
    store.thresholds().set_all(config.thresholds);
    let mut store = Databases::new(store, config.databases);
    let mut aof = None;
    if config.appendonly {
        let settings = Arc::new(AofSettings::new(
            config.appendfsync,
            config.auto_aof_rewrite_percentage,
            config.auto_aof_rewrite_min_size,
            config.aof_rewrite_key_delay,
        ));
        let log = Aof::open(&config.dir, settings, &store)?;
        store.set_journal(log.clone());
        aof = Some(log);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if config.threads > 0 {
        builder.worker_threads(config.threads);
    }
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let res = runtime.block_on(serve(config, store, aof));
    runtime.shutdown_timeout(Duration::from_secs(1));
    res
}

async fn serve(config: Config, store: Databases, aof: Option<Arc<Aof>>) -> Result<(), String> {
    let addr = format!("{}:{}", config.bind, config.port);
    let listener = TcpListener::bind(addr.parse::<SocketAddr>().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    if let Some(port) = config.memcache_port {
        // Logged before the ready line, which tells clients that both ports are open.
        let at = crate::memcache::start(crate::memcache::Settings {
            port,
            bind: config.bind.clone(),
            index: config.memcache_index.clone(),
            memory: config.memcache_memory_mb << 20,
            max_item: config.memcache_max_item,
            no_evict: !config.memcache_evict,
            max_conns: config.memcache_max_conns,
            samples: config.memcache_samples,
        })
        .await?;
        println!(
            "orrery-server memcached protocol (index {}) on {at}",
            config.memcache_index
        );
    }
    let shared = Arc::new(Shared::new(config, store, aof, local.port()));
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
    if let Some(aof) = &shared.aof {
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
        // Under the gate: no expiry between a transaction's commands.
        while {
            let _gate = shared.dbs.shared().gate_shared();
            // Each database in turn, 256 due keys at a time at most.
            let now = now_ms();
            shared
                .dbs
                .each()
                .map(|(_, s)| s.expire_cycle(now, 256))
                .max()
                .unwrap_or(0)
        } == 256
            && start.elapsed() < Duration::from_millis(25)
        {}
        if let Some(aof) = &shared.aof
            && let Some(growth) = aof.wants_auto_rewrite()
            && aof.rewrite_in_background(shared.dbs.clone(), true)
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

/// A connection's buffers as counted in `used_memory` (`mem_clients_normal`, and so in the
/// `maxmemory` check, as Redis counts clients' query and output buffers): the capacity of
/// its request buffer and of its pending replies, added to the keyspace's
/// [`Memory::buffers`](crate::memory::Memory::buffers) when it changes (one atomic pair;
/// nothing while the capacities stay the same, the common case) and taken back when the
/// connection ends.
struct Held<'a> {
    counter: &'a AtomicUsize,
    accounted: usize,
}

impl Held<'_> {
    fn set(&mut self, bytes: usize) {
        if bytes != self.accounted {
            self.counter.fetch_add(bytes, Ordering::Relaxed);
            self.counter.fetch_sub(self.accounted, Ordering::Relaxed);
            self.accounted = bytes;
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(self.accounted, Ordering::Relaxed);
    }
}

/// Request-buffer capacity above which an emptied buffer is given back (after a large
/// argument), so an idle connection does not keep megabytes counted.
const KEEP_BUF: usize = 1 << 20;

async fn serve_client(
    shared: &Shared,
    client: &mut Client,
    stream: &mut TcpStream,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut held = Held {
        counter: shared.dbs.shared().memory().buffers(),
        accounted: 0,
    };
    let mut args = resp::Args::default();
    loop {
        let limits = shared.live.limits(shared.config.limits);
        let out_limit = shared.live.output_buffer_limit.load(Ordering::Relaxed);
        let mut used = 0;
        let mut ran = 0;
        let mut fatal = false;
        let mut blocked = None;
        // Pub/Sub bytes moved from the inbox into `out` (in flight until written).
        let mut taken = 0;
        // One clock reading per batch: the commands of one read run at one time (Redis,
        // too, reads the clock once per event-loop round for expiry checks). The batch's
        // handlers note in `call` how far their writes reached in the append-only file.
        let now = now_ms();
        let call = Call::new(now);
        loop {
            match resp::parse_into(&buf[used..], &limits, &mut args) {
                Ok(Some(n)) => {
                    used += n;
                    let args = args.as_slice();
                    if args.is_empty() {
                        continue;
                    }
                    if let Some(inbox) = client.subs.inbox() {
                        // Messages published before this command go out before its reply.
                        taken += inbox.take_into(&mut out);
                    }
                    let mut ctx = Ctx {
                        shared,
                        client,
                        call: &call,
                    };
                    let reply = cmd::dispatch(&mut ctx, args);
                    ran += 1;
                    if let Some(b) = client.blocked.take() {
                        blocked = Some(b);
                        break;
                    }
                    reply.encode(client.proto, &mut out);
                    if let Some(inbox) = client.subs.inbox() {
                        // Messages published while it ran go out after its reply.
                        taken += inbox.take_into(&mut out);
                    }
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
        if buf.is_empty() && buf.capacity() > KEEP_BUF {
            buf = Vec::with_capacity(16 * 1024);
        }
        // Pending replies count while they wait for the socket.
        held.set(buf.capacity() + out.capacity());
        if ran > 0 {
            shared.stats.commands.fetch_add(ran, Ordering::Relaxed);
            client.info.last_ms.store(now, Ordering::Relaxed);
        }
        let pending = call.logged();
        if pending > 0
            && let Some(aof) = &shared.aof
        {
            // Replies to writes go out once their records are durable (group commit).
            aof.wait(pending).await;
        }
        if !out.is_empty() {
            if !write_out(stream, &out, client.subs.inbox()).await? {
                return Ok(());
            }
            if let Some(inbox) = client.subs.inbox() {
                inbox.written(taken);
            }
            out.clear();
            if out.capacity() > 1024 * 1024 {
                out.shrink_to(16 * 1024);
            }
        }
        if fatal || client.close_after_reply {
            return Ok(());
        }
        if let Some(b) = blocked {
            let Some((reply, position)) = wait_blocked(shared, stream, &mut buf, b).await? else {
                return Ok(());
            };
            if position > 0
                && let Some(aof) = &shared.aof
            {
                aof.wait(position).await;
            }
            reply.encode(client.proto, &mut out);
            stream.write_all(&out).await?;
            out.clear();
            // The requests that arrived meanwhile are in `buf`: run them before reading.
            continue;
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
        held.set(buf.capacity() + out.capacity());
        let read = match client.subs.inbox().cloned() {
            None => stream.read_buf(&mut buf).await?,
            Some(inbox) => match deliver_until_read(stream, &mut buf, &inbox).await? {
                Some(n) => n,
                None => return Ok(()),
            },
        };
        if read == 0 {
            return Ok(());
        }
    }
}

/// Writes `out`; while it waits for the socket, watches `inbox` (if subscribed) and gives
/// up when it is killed for passing the output-buffer limit: `false`, close the client.
async fn write_out(
    stream: &mut TcpStream,
    out: &[u8],
    inbox: Option<&Arc<Inbox>>,
) -> std::io::Result<bool> {
    let Some(inbox) = inbox else {
        stream.write_all(out).await?;
        return Ok(true);
    };
    let mut at = 0;
    while at < out.len() {
        if inbox.killed() {
            println!("closing a subscriber: output buffer over the pubsub limit");
            return Ok(false);
        }
        tokio::select! {
            n = stream.write(&out[at..]) => match n? {
                0 => return Err(std::io::ErrorKind::WriteZero.into()),
                n => at += n,
            },
            () = inbox.wait() => {}
        }
    }
    Ok(true)
}

/// A subscriber between requests: writes messages as they arrive until the client sends
/// bytes (`Some(n)`, read into `buf`) or must be closed (`None`: gone, or killed for
/// passing the output-buffer limit).
async fn deliver_until_read(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    inbox: &Arc<Inbox>,
) -> std::io::Result<Option<usize>> {
    let mut out = Vec::new();
    loop {
        if inbox.killed() {
            println!("closing a subscriber: output buffer over the pubsub limit");
            return Ok(None);
        }
        if inbox.has_pending() {
            out.clear();
            let n = inbox.take_into(&mut out);
            if !write_out(stream, &out, Some(inbox)).await? {
                return Ok(None);
            }
            inbox.written(n);
            continue;
        }
        tokio::select! {
            n = stream.read_buf(buf) => return Ok(Some(n?)),
            () = inbox.wait() => {}
        }
    }
}

/// Waits for a blocked command's reply (and the log position it must wait for), its
/// timeout, or the client's close (`None`: the client is gone and unregistered).
/// Requests the client sends meanwhile are read into `buf`.
async fn wait_blocked(
    shared: &Shared,
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    b: Blocked,
) -> std::io::Result<Option<(Reply, u64)>> {
    let w = &b.waiter;
    let sleep = async {
        match b.deadline {
            Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    let mut timed_out = false;
    loop {
        if let Some(r) = w.take() {
            return Ok(Some(r));
        }
        if timed_out {
            match shared.waiters.cancel(w) {
                Ok(Some(r)) => return Ok(Some(r)),
                Ok(None) => return Ok(Some((b.timeout_reply.clone(), 0))),
                // Being served: the reply follows.
                Err(()) => {}
            }
        }
        tokio::select! {
            () = w.served() => {}
            () = &mut sleep, if !timed_out => timed_out = true,
            n = stream.read_buf(buf) => {
                let over = buf.len() > shared.live.query_buffer_limit.load(Ordering::Relaxed);
                if over {
                    println!("closing a blocked client: query buffer over the limit");
                }
                if over || matches!(n, Ok(0) | Err(_)) {
                    // Gone: unregister (a reply already on its way is dropped, as Redis
                    // drops the reply of a client that closed).
                    while shared.waiters.cancel(w).is_err() {
                        w.served().await;
                    }
                    return Ok(None);
                }
            }
        }
    }
}
