//! The memcached listener: the accept loop with its connection limit (`-c`), one task per
//! connection with buffered framing and pipelining, and the periodic reaper of dead
//! items.
//!
//! A connection reads whatever bytes arrived, runs every complete request in them in
//! order, and writes all their replies with one write (pipelining at no cost to a client
//! that sends one request at a time). A refused data block (too large, malformed flags) is
//! skipped by counting its bytes as they arrive, as memcached's `conn_swallow` does. A line
//! of more than 2048 bytes without a newline closes the connection unless it is a
//! multi-get, as in memcached.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::counters::{Stat, Tally};
use super::exec::{self, After, Ctx};
use super::parse::{self, Parsed};
use super::state::Memcache;
use super::store::Now;

/// Accepts connections until the runtime stops.
pub(crate) async fn accept(mc: Arc<Memcache>, listener: TcpListener) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        if mc.curr_conns.load(Ordering::Relaxed) >= mc.settings.max_conns {
            mc.rejected_conns.fetch_add(1, Ordering::Relaxed);
            let _ = stream
                .write_all(b"ERROR Too many open connections\r\n")
                .await;
            continue;
        }
        mc.curr_conns.fetch_add(1, Ordering::Relaxed);
        mc.total_conns.fetch_add(1, Ordering::Relaxed);
        let mc = mc.clone();
        tokio::spawn(async move {
            let _ = serve(&mc, stream).await;
            mc.curr_conns.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Every 100 ms: removes dead items (expired, flushed) met in a sample of the items.
pub(crate) async fn reaper(mc: Arc<Memcache>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    loop {
        tick.tick().await;
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        mc.items.reap(Now::read(), seed, 256);
    }
}

async fn serve(mc: &Memcache, mut stream: TcpStream) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    let limits = mc.limits();
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut tally = Tally::default();
    let mut swallow = 0usize;
    let mut accounted = 0usize;
    let result = loop {
        let mut used = 0;
        let mut close = false;
        let now = Now::read();
        loop {
            if swallow > 0 {
                let n = swallow.min(buf.len() - used);
                used += n;
                swallow -= n;
                if swallow > 0 {
                    break;
                }
            }
            match parse::parse(&buf[used..], &limits) {
                Parsed::Incomplete => break,
                Parsed::Request(req, n) => {
                    used += n;
                    let mut ctx = Ctx {
                        mc,
                        tally: &mut tally,
                        now,
                        out: &mut out,
                    };
                    match exec::run(&mut ctx, req) {
                        After::Continue => {}
                        After::Swallow(n) => swallow = n,
                        After::Close => {
                            close = true;
                            break;
                        }
                    }
                }
            }
        }
        buf.drain(..used);
        if !out.is_empty() {
            tally.add(Stat::bytes_written, out.len() as u64);
            if let Err(e) = stream.write_all(&out).await {
                break Err(e);
            }
            out.clear();
            if out.capacity() > 1 << 20 {
                out.shrink_to(16 * 1024);
            }
        }
        tally.flush(&mc.counters);
        if close {
            break Ok(());
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(16 * 1024);
        }
        // The buffers count as used memory (the memory limit's accounting).
        let held = buf.capacity() + out.capacity();
        if held != accounted {
            mc.memory.buffers().fetch_add(held, Ordering::Relaxed);
            mc.memory.buffers().fetch_sub(accounted, Ordering::Relaxed);
            accounted = held;
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) => break Ok(()),
            Ok(n) => tally.add(Stat::bytes_read, n as u64),
            Err(e) => break Err(e),
        }
    };
    mc.memory.buffers().fetch_sub(accounted, Ordering::Relaxed);
    tally.flush(&mc.counters);
    result
}
