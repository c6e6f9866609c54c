//! `orrery-bench resp-zipf`: a cache-aside load with Zipf-distributed keys against a
//! Redis-protocol server, counting its hit ratio and throughput (issue 34's eviction bar).
//!
//! No packaged Redis load generator draws Zipf keys (`redis-benchmark`'s `__rand_int__` is
//! uniform), so this is the generator; `scripts/bench-server-eviction.sh` drives it against
//! `redis-server` and `orrery-server` under the same `maxmemory`.
//!
//! # The load
//!
//! Every request is a `GET` of a key drawn from a Zipf law over `--keys` ranks (Gray et
//! al.'s generator, [`orrery::testing::zipf::Zipf`], rank 0 the most popular); a miss (nil)
//! is followed by a `SET` of that key to a `--value`-byte value, as an application in front
//! of a database does. Rank `r` is the 20-byte key `key:` ++ 16 hex digits of a bijective
//! 64-bit mix of `r` ([`key_name`]), so the hot keys are spread over the key space and no
//! two ranks share a key.
//!
//! # Connections, pipelining, determinism
//!
//! `--conns` connections over `--threads` threads (each thread owns every `threads`-th
//! connection). Each connection gets an equal share of the `--requests` in batches of
//! `--pipeline` `GET`s, preceded by the `SET`s of the previous batch's misses; a thread
//! writes one batch to each of its connections, then reads their replies in turn. Each
//! connection draws its keys from its own stream (`--seed`, the connection's number), so
//! the same settings send the same keys on each connection to any server: two servers see
//! the same trace, only the interleaving of connections may differ.
//!
//! # What is counted
//!
//! The first `--warmup` share of each connection's batches fills the cache and is not
//! counted. Counted are the `GET`s of the later batches (hits, misses), the `SET`s sent
//! with them, and the time from the first counted batch's send to the last reply: ops/s is
//! (`GET`s + `SET`s) / that time. Error replies (say `-OOM` under `noeviction`) are
//! counted, and the first one is reported. One JSON object per run goes to stdout (and is
//! appended to `--json`).
//!
//! `--fill` instead sets every key once (rank order, split over the connections), for
//! measuring how much memory the whole data set takes in a server without a limit.

mod proto;

#[cfg(test)]
mod tests;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use orrery::testing::zipf::Zipf;

use crate::rng::{Rng, mix64};
use crate::settings::parse_count;
use proto::{Reply, encode_get, encode_set, parse_reply};

fn count(s: &str) -> Result<u64, String> {
    parse_count(s)
}

/// `orrery-bench resp-zipf`'s options.
#[derive(Args, Debug, Clone)]
pub(crate) struct RespZipfArgs {
    /// The server's address.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub(crate) addr: String,
    /// Distinct keys (ranks of the Zipf law).
    #[arg(long, value_parser = count, default_value = "10M")]
    pub(crate) keys: u64,
    /// The Zipf constant θ, strictly between 0 and 1.
    #[arg(long, default_value_t = 0.99)]
    pub(crate) theta: f64,
    /// Value size in bytes of the misses' `SET`s.
    #[arg(long, default_value_t = 100)]
    pub(crate) value: usize,
    /// `GET` requests in all, warm-up included.
    #[arg(long, value_parser = count, default_value = "10M")]
    pub(crate) requests: u64,
    /// Share of each connection's requests that warms the cache and is not counted.
    #[arg(long, default_value_t = 0.33)]
    pub(crate) warmup: f64,
    /// Connections.
    #[arg(long, default_value_t = 50)]
    pub(crate) conns: usize,
    /// `GET`s per batch on a connection (the pipeline depth).
    #[arg(long, default_value_t = 16)]
    pub(crate) pipeline: usize,
    /// Threads driving the connections.
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: usize,
    /// Seed of the connections' key streams.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Set every key once instead (see the module docs).
    #[arg(long)]
    pub(crate) fill: bool,
    /// Also append the JSON result to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
}

/// Length of every key: `key:` and 16 hex digits.
pub(crate) const KEY_LEN: usize = 20;

/// The key of rank `rank` (see the module docs): distinct ranks, distinct keys.
pub(crate) fn key_name(rank: u64) -> [u8; KEY_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut k = *b"key:0000000000000000";
    let h = mix64(rank);
    for (i, b) in k[4..].iter_mut().enumerate() {
        *b = HEX[((h >> (60 - 4 * i)) & 0xf) as usize];
    }
    k
}

/// The key sampler: Zipf ranks from a connection's random stream.
pub(crate) struct Sampler {
    zipf: Zipf,
}

impl Sampler {
    /// A sampler over `keys` ranks with constant `theta` in (0, 1).
    pub(crate) fn new(keys: u64, theta: f64) -> Result<Sampler, String> {
        if !(theta > 0.0 && theta < 1.0) {
            return Err(format!(
                "--theta must be strictly between 0 and 1, got {theta}"
            ));
        }
        if keys == 0 {
            return Err("--keys must be at least 1".into());
        }
        Ok(Sampler {
            zipf: Zipf::new(keys, theta),
        })
    }

    /// The next rank (0 is the most popular).
    pub(crate) fn rank(&self, rng: &mut Rng) -> u64 {
        self.zipf.sample(rng.f64())
    }
}

/// Counts of one thread (or, summed, of the run).
#[derive(Debug, Default, Clone)]
pub(crate) struct Counts {
    /// Counted `GET`s.
    pub(crate) gets: u64,
    /// Counted `GET`s that found their key.
    pub(crate) hits: u64,
    /// Counted `SET`s.
    pub(crate) sets: u64,
    /// Error replies (counted or not).
    pub(crate) errors: u64,
    /// The first error reply.
    pub(crate) first_error: Option<String>,
    /// When the first counted batch was sent.
    pub(crate) start: Option<Instant>,
    /// When the last reply was read.
    pub(crate) end: Option<Instant>,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.gets += o.gets;
        self.hits += o.hits;
        self.sets += o.sets;
        self.errors += o.errors;
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
        self.start = match (self.start, o.start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.end = self.end.max(o.end);
    }

    fn error(&mut self, msg: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(msg);
        }
    }
}

/// One connection and its part of the load.
struct Conn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    pos: usize,
    rng: Rng,
    /// Ranks whose `SET` goes with the next batch.
    misses: Vec<u64>,
    /// Ranks of the batch in flight.
    ranks: Vec<u64>,
    /// `SET`s of the batch in flight.
    sets: usize,
    batch: u64,
    batches: u64,
    warm_batches: u64,
    out: Vec<u8>,
}

impl Conn {
    fn open(addr: &str, rng: Rng, batches: u64, warm_batches: u64) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        // A server that stops answering ends the run with an error, not a hang.
        let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
        Ok(Conn {
            stream,
            rbuf: Vec::with_capacity(1 << 16),
            pos: 0,
            rng,
            misses: Vec::new(),
            ranks: Vec::new(),
            sets: 0,
            batch: 0,
            batches,
            warm_batches,
            out: Vec::new(),
        })
    }

    fn counted(&self) -> bool {
        self.batch >= self.warm_batches
    }

    fn send(&mut self) -> Result<(), String> {
        self.stream
            .write_all(&self.out)
            .map_err(|e| format!("write: {e}"))
    }

    /// The next reply on this connection.
    fn reply(&mut self) -> Result<Reply, String> {
        loop {
            if let Some((r, n)) = parse_reply(&self.rbuf[self.pos..])? {
                self.pos += n;
                return Ok(r);
            }
            if self.pos == self.rbuf.len() {
                self.rbuf.clear();
                self.pos = 0;
            } else if self.pos > 1 << 15 {
                self.rbuf.drain(..self.pos);
                self.pos = 0;
            }
            let mut chunk = [0u8; 1 << 14];
            let n = self
                .stream
                .read(&mut chunk)
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            self.rbuf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Builds and sends the next batch of `c`: the previous misses' `SET`s, then `pipeline`
/// `GET`s.
fn send_batch(c: &mut Conn, a: &RespZipfArgs, s: &Sampler, value: &[u8], n: &mut Counts) {
    c.out.clear();
    for r in std::mem::take(&mut c.misses) {
        encode_set(&mut c.out, &key_name(r), value);
        c.sets += 1;
    }
    c.ranks.clear();
    for _ in 0..a.pipeline {
        let r = s.rank(&mut c.rng);
        c.ranks.push(r);
        encode_get(&mut c.out, &key_name(r));
    }
    if c.counted() {
        n.sets += c.sets as u64;
        if n.start.is_none() {
            n.start = Some(Instant::now());
        }
    }
}

/// Reads the replies of `c`'s batch in flight.
fn read_batch(c: &mut Conn, n: &mut Counts) -> Result<(), String> {
    for _ in 0..std::mem::take(&mut c.sets) {
        match c.reply()? {
            Reply::Error(e) => n.error(e),
            Reply::Simple => {}
            other => return Err(format!("unexpected reply {other:?} to SET")),
        }
    }
    let counted = c.counted();
    for i in 0..c.ranks.len() {
        let hit = match c.reply()? {
            Reply::Bulk(_) => true,
            Reply::Nil => false,
            Reply::Error(e) => {
                n.error(e);
                continue;
            }
            other => return Err(format!("unexpected reply {other:?} to GET")),
        };
        if !hit {
            c.misses.push(c.ranks[i]);
        }
        if counted {
            n.gets += 1;
            n.hits += u64::from(hit);
        }
    }
    c.batch += 1;
    Ok(())
}

/// Drives `conns` to the end of their shares; the thread's counts.
fn drive(conns: &mut [Conn], a: &RespZipfArgs, s: &Sampler) -> Result<Counts, String> {
    let value = vec![b'v'; a.value];
    let mut n = Counts::default();
    loop {
        let mut any = false;
        for c in conns.iter_mut().filter(|c| c.batch < c.batches) {
            send_batch(c, a, s, &value, &mut n);
            c.send()?;
            any = true;
        }
        if !any {
            break;
        }
        for c in conns.iter_mut().filter(|c| c.batch < c.batches) {
            read_batch(c, &mut n)?;
        }
    }
    n.end = Some(Instant::now());
    Ok(n)
}

/// Sets every rank of `ranks` on `c`, `pipeline` at a time.
fn fill(c: &mut Conn, ranks: impl Iterator<Item = u64>, a: &RespZipfArgs) -> Result<u64, String> {
    let value = vec![b'v'; a.value];
    let ranks: Vec<u64> = ranks.collect();
    let mut errors = 0;
    for chunk in ranks.chunks(a.pipeline.max(1)) {
        c.out.clear();
        for &r in chunk {
            encode_set(&mut c.out, &key_name(r), &value);
        }
        c.send()?;
        for _ in chunk {
            match c.reply()? {
                Reply::Simple => {}
                Reply::Error(_) => errors += 1,
                other => return Err(format!("unexpected reply {other:?} to SET")),
            }
        }
    }
    Ok(errors)
}

/// Runs the load `a` describes; the JSON result.
pub(crate) fn run(a: &RespZipfArgs) -> Result<serde_json::Value, String> {
    let sampler = Sampler::new(a.keys, a.theta)?;
    if a.conns == 0 || a.pipeline == 0 || a.threads == 0 {
        return Err("--conns, --pipeline and --threads must be at least 1".into());
    }
    if !(0.0..1.0).contains(&a.warmup) {
        return Err(format!("--warmup must be in [0, 1), got {}", a.warmup));
    }
    let per_batch = (a.conns * a.pipeline) as u64;
    let batches = a.requests.div_ceil(per_batch).max(1);
    let warm_batches = (batches as f64 * a.warmup) as u64;
    let mut conns = (0..a.conns)
        .map(|i| {
            Conn::open(
                &a.addr,
                Rng::fork(a.seed, "resp-zipf", i as u64),
                batches,
                warm_batches,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Thread t owns connections t, t + threads, …
    let mut groups: Vec<Vec<Conn>> = (0..a.threads).map(|_| Vec::new()).collect();
    for (i, c) in conns.drain(..).enumerate() {
        groups[i % a.threads].push(c);
    }
    let started = Instant::now();
    let results: Vec<Result<Counts, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = groups
            .iter_mut()
            .enumerate()
            .map(|(t, g)| {
                let sampler = &sampler;
                scope.spawn(move || {
                    if a.fill {
                        let mut errors = 0;
                        for (j, c) in g.iter_mut().enumerate() {
                            let first = (j * a.threads + t) as u64;
                            errors += fill(c, (first..a.keys).step_by(a.conns), a)?;
                        }
                        Ok(Counts {
                            errors,
                            ..Counts::default()
                        })
                    } else {
                        drive(g, a, sampler)
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a load thread panicked".into()))
            })
            .collect()
    });
    let mut n = Counts::default();
    for r in results {
        n.add(r?);
    }
    let mut out = serde_json::json!({
        "mode": if a.fill { "fill" } else { "load" },
        "addr": a.addr,
        "keys": a.keys,
        "value": a.value,
        "conns": a.conns,
        "pipeline": a.pipeline,
        "threads": a.threads,
        "errors": n.errors,
        "first_error": n.first_error,
    });
    if a.fill {
        out["secs"] = serde_json::json!(started.elapsed().as_secs_f64());
    } else {
        let secs = match (n.start, n.end) {
            (Some(s), Some(e)) => e.duration_since(s).as_secs_f64(),
            _ => 0.0,
        };
        let rate = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let extra = serde_json::json!({
            "theta": a.theta,
            "requests": batches * per_batch,
            "warmup": a.warmup,
            "seed": a.seed,
            "gets": n.gets,
            "hits": n.hits,
            "misses": n.gets - n.hits,
            "hit_ratio": if n.gets > 0 { n.hits as f64 / n.gets as f64 } else { 0.0 },
            "sets": n.sets,
            "secs": secs,
            "ops_per_sec": rate(n.gets + n.sets),
            "gets_per_sec": rate(n.gets),
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            out[k] = v.clone();
        }
    }
    Ok(out)
}

/// `orrery-bench resp-zipf`: runs the load and prints its JSON line.
pub(crate) fn main(a: RespZipfArgs) -> Result<(), String> {
    let out = run(&a)?;
    let line = out.to_string();
    println!("{line}");
    if let Some(p) = &a.json {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
