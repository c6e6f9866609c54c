//! Command-line settings of `orrery-server`, parsed without a dependency (the flags are
//! Redis's names: `--port 6379` or `--port=6379`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::aof::{AofSettings, Fsync};
use crate::layout::{Param, ThresholdValues, Thresholds, threshold_param, threshold_parse};
use crate::memory::{Memory, Policy};

use crate::resp::Limits;

/// The server's settings; [`Config::default`] is Redis's defaults on our index.
#[derive(Clone, Debug)]
pub struct Config {
    /// TCP port (0: let the system choose; the chosen port is logged).
    pub port: u16,
    /// Address to listen on (an IP address; loopback unless a password is set).
    pub bind: String,
    /// Orrery structure holding the keys, by name (see `orrery::registry`).
    pub index: String,
    /// Password clients must `AUTH` with, if any.
    pub requirepass: Option<String>,
    /// Most clients connected at once.
    pub maxclients: usize,
    /// Number of logical databases (`SELECT 0` … `databases - 1`), 1 to 256.
    pub databases: usize,
    /// Most unparsed bytes one client may have buffered before it is disconnected.
    pub query_buffer_limit: usize,
    /// Most reply bytes one client may have pending (0: no limit, Redis's default for
    /// normal clients); a client over it is disconnected.
    pub output_buffer_limit: usize,
    /// Directory of the append-only file.
    pub dir: PathBuf,
    /// Whether writes are logged to the append-only file (and replayed at start).
    pub appendonly: bool,
    /// When the append-only file is synced.
    pub appendfsync: Fsync,
    /// Rewrite the append-only file automatically when it grew by this many percent since
    /// the last rewrite (or start), 0: never (Redis's `auto-aof-rewrite-percentage`).
    pub auto_aof_rewrite_percentage: u64,
    /// ... and is at least this many bytes (Redis's `auto-aof-rewrite-min-size`).
    pub auto_aof_rewrite_min_size: u64,
    /// Microseconds a rewrite sleeps after each key: a testing knob that makes rewrites
    /// long (as Redis's `rdb-key-save-delay`); 0 by default.
    pub aof_rewrite_key_delay: u64,
    /// Worker threads of the runtime (0: one per core the process may run on).
    pub threads: usize,
    /// The memcached protocol's port, if it is served (`--memcache-port`).
    pub memcache_port: Option<u16>,
    /// The Orrery structure holding the memcached items (default `mercury`).
    pub memcache_index: String,
    /// The memcached items' memory limit in MiB (memcached's `-m`; 0: none).
    pub memcache_memory_mb: usize,
    /// Largest memcached item in bytes (memcached's `-I`).
    pub memcache_max_item: usize,
    /// Whether the memcached items are evicted at the limit (`no`: memcached's `-M`).
    pub memcache_evict: bool,
    /// Most memcached connections (memcached's `-c`).
    pub memcache_max_conns: usize,
    /// Keys sampled per eviction.
    pub memcache_samples: usize,
    pub(crate) limits: Limits,
    /// The RESP keyspace's memory limit, bytes (Redis's `maxmemory`; 0: none).
    pub maxmemory: usize,
    /// What happens at the limit (`maxmemory-policy`, default `noeviction`).
    pub(crate) maxmemory_policy: Policy,
    /// Keys sampled per eviction (`maxmemory-samples`, default 5).
    pub maxmemory_samples: usize,
    /// `lfu-log-factor` (default 10) and `lfu-decay-time` in minutes (default 1).
    pub(crate) lfu: (u32, u32),
    /// The compact-encoding thresholds (`--hash-max-listpack-entries N` …).
    pub(crate) thresholds: ThresholdValues,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            bind: "127.0.0.1".into(),
            index: orrery::registry::DEFAULT.into(),
            requirepass: None,
            maxclients: 10_000,
            databases: 16,
            query_buffer_limit: 1024 * 1024 * 1024,
            output_buffer_limit: 0,
            dir: PathBuf::from("."),
            appendonly: false,
            appendfsync: Fsync::EverySec,
            auto_aof_rewrite_percentage: 100,
            auto_aof_rewrite_min_size: 64 * 1024 * 1024,
            aof_rewrite_key_delay: 0,
            threads: 0,
            memcache_port: None,
            memcache_index: "mercury".into(),
            memcache_memory_mb: 64,
            memcache_max_item: 1024 * 1024,
            memcache_evict: true,
            memcache_max_conns: 1024,
            memcache_samples: 5,
            limits: Limits::default(),
            maxmemory: 0,
            maxmemory_policy: Policy::NoEviction,
            maxmemory_samples: 5,
            lfu: (10, 1),
            thresholds: ThresholdValues::default(),
        }
    }
}

/// The `--help` text.
pub const USAGE: &str = "\
usage: orrery-server [--port N] [--bind ADDR] [--index NAME] [--requirepass PASS]
                     [--maxclients N] [--proto-max-bulk-len BYTES]
                     [--client-query-buffer-limit BYTES]
                     [--client-output-buffer-limit BYTES] [--dir DIR]
                     [--appendonly yes|no] [--appendfsync always|everysec|no]
                     [--auto-aof-rewrite-percentage N]
                     [--auto-aof-rewrite-min-size SIZE] [--aof-rewrite-key-delay MICROS]
                     [--threads N] [--memcache-port N] [--memcache-index NAME]
                     [--memcache-memory MB] [--memcache-max-item-size SIZE]
                     [--memcache-evict yes|no] [--memcache-max-conns N]
                     [--memcache-samples N] [--maxmemory SIZE]
                     [--maxmemory-policy POLICY] [--maxmemory-samples N]
                     [--lfu-log-factor N] [--lfu-decay-time MINUTES]

  --port N           TCP port (default 6379; 0 picks a free one and logs it)
  --bind ADDR        IP address to listen on (default 127.0.0.1); a non-loopback
                     address requires --requirepass
  --index NAME       Orrery structure: wormhole (default), mercury, slb:wormhole,
                     slb:mercury
  --requirepass PASS password for AUTH
  --maxclients N     most connected clients (default 10000)
  --databases N      logical databases, SELECT 0..N-1 (default 16, at most 256)
  --proto-max-bulk-len BYTES         longest bulk argument (default 512 MiB)
  --client-query-buffer-limit BYTES  most buffered request bytes (default 1 GiB)
  --client-output-buffer-limit BYTES most pending reply bytes per client; a client
                     over it is disconnected (default 0: no limit, as Redis)
  --dir DIR          directory of appendonly.aof (default: the working directory)
  --appendonly yes|no        log writes to DIR/appendonly.aof and replay it at
                             start (default no)
  --appendfsync always|everysec|no   sync the log before each reply to a write
                             (group commit), once a second (default), or never
  --auto-aof-rewrite-percentage N    rewrite the log in the background when it grew
                             N% since the last rewrite (default 100; 0: never)
  --auto-aof-rewrite-min-size SIZE   ... and is at least SIZE (default 64mb)
  --aof-rewrite-key-delay MICROS     testing: sleep after each key a rewrite writes
  --hash-max-listpack-entries N, --hash-max-listpack-value BYTES,
  --set-max-intset-entries N, --set-max-listpack-entries N,
  --set-max-listpack-value BYTES, --zset-max-listpack-entries N,
  --zset-max-listpack-value BYTES, --list-max-listpack-size N
                     when collections stay compact (Redis's settings and defaults)
  --threads N        worker threads (default 0: one per core the process may use)
  --maxmemory SIZE   memory limit of the keys (default 0: none)
  --maxmemory-policy P       noeviction (default), allkeys-lru, allkeys-lfu,
                     allkeys-random, volatile-lru, volatile-lfu, volatile-random,
                     volatile-ttl
  --maxmemory-samples N      keys sampled per eviction (default 5)
  --lfu-log-factor N, --lfu-decay-time MINUTES   the LFU counter (default 10, 1)

The memcached protocol (text and meta), on a second port of the same process:
  --memcache-port N          serve it on port N of --bind (default: off; 0 picks
                             a free port and logs it)
  --memcache-index NAME      structure of the items (default mercury; any ordered
                             one too: wormhole, cuckoo-trie, hyperion, slb:...)
  --memcache-memory MB       memory limit of the items, MiB (memcached -m;
                             default 64; 0: none)
  --memcache-max-item-size SIZE  largest item (memcached -I; default 1m = 1 MiB)
  --memcache-evict yes|no    evict least recently used items at the limit
                             (default yes; no: refuse writes, memcached -M)
  --memcache-max-conns N     most connections (memcached -c; default 1024)
  --memcache-samples N       keys sampled per eviction (default 5)

Sizes take Redis's units: 100, 64kb, 64mb, 1gb (1024-based), 1k, 1m, 1g (1000-based).
";

/// Parses a size as Redis's configuration does: a number of bytes, optionally followed by
/// `k`/`m`/`g` (powers of 1000) or `kb`/`mb`/`gb` (powers of 1024), any case.
pub(crate) fn parse_memory(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let mul: u64 = match &lower[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

/// One class's `client-output-buffer-limit`: hard limit, soft limit, soft seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferLimit {
    pub(crate) hard: u64,
    pub(crate) soft: u64,
    pub(crate) soft_seconds: u64,
}

/// Most databases (`--databases`): blocked keys carry the number in one byte
/// (`crate::store`'s `ready_key`).
pub(crate) const MAX_DATABASES: usize = 256;

/// The client classes of `client-output-buffer-limit`, in Redis's order.
const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// The settings `CONFIG SET` changes while the server runs (read by connections as they
/// need them; atomics, so the request path takes no lock for them).
pub(crate) struct Live {
    pub(crate) maxclients: AtomicUsize,
    pub(crate) query_buffer_limit: AtomicUsize,
    pub(crate) max_bulk_len: AtomicUsize,
    /// The `normal` class's hard limit (0: none), the one enforced.
    pub(crate) output_buffer_limit: AtomicUsize,
    /// Every class's limits, as `CONFIG GET` reports them.
    output_limits: Mutex<[BufferLimit; 3]>,
    requirepass: RwLock<Option<String>>,
    /// The append-only file's settings (shared with it when persistence is on).
    pub(crate) aof: Arc<AofSettings>,
    /// Whether the server listens on a loopback address (a password may then be cleared).
    loopback: bool,
    /// The compact-encoding thresholds (shared with the store).
    pub(crate) thresholds: Arc<Thresholds>,
    /// The memory limit (shared with the store).
    pub(crate) memory: Arc<Memory>,
    /// The settings accepted and reported without effect here (`crate::stored`).
    pub(crate) stored: crate::stored::Stored,
    /// `--appendonly` (fixed at start).
    appendonly: bool,
}

/// Parameters `CONFIG GET` reports that are fixed at start (Redis can change `port`,
/// `bind` at run time; this server cannot; `appendonly` is accepted at its value).
const IMMUTABLE: [&str; 4] = ["port", "bind", "databases", "appendfilename"];

/// Parameters Redis 7.0 refuses to change unless `enable-protected-configs` is set (its
/// default: not set), with this reply.
const PROTECTED: [&str; 2] = ["dir", "dbfilename"];

/// Why `CONFIG SET` refused a value (the text after Redis's `- `).
type SetError = String;

fn int_in(v: &str, lo: u64, hi: u64) -> Result<u64, SetError> {
    let n: i128 = v
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    if n < i128::from(lo) || n > i128::from(hi) {
        return Err(format!("argument must be between {lo} and {hi} inclusive"));
    }
    Ok(n as u64)
}

fn memory_in(v: &str, lo: u64, hi: u64) -> Result<u64, SetError> {
    let n = parse_memory(v).ok_or_else(|| "argument must be a memory value".to_string())?;
    if n < lo || n > hi {
        return Err(format!("argument must be between {lo} and {hi} inclusive"));
    }
    Ok(n)
}

/// One parsed `CONFIG SET` assignment, applied only once all of a command's parse.
enum Assign {
    MaxClients(usize),
    QueryBuffer(usize),
    MaxBulk(usize),
    Output(Vec<(usize, BufferLimit)>),
    RequirePass(Option<String>),
    Fsync(Fsync),
    AutoPercentage(u64),
    AutoMinSize(u64),
    KeyDelay(u64),
    Threshold(Param, i64),
    MaxMemory(usize),
    Policy(Policy),
    Samples(usize),
    LfuLogFactor(u32),
    LfuDecayTime(u32),
    /// A setting without effect (`crate::stored`), as `CONFIG GET` prints it.
    Stored(String, String),
}

/// What `CONFIG SET` answers for a parameter it cannot set.
pub(crate) enum Refused {
    /// Not a parameter this server knows (Redis's "Unknown option" reply).
    Unknown,
    /// Known, refused with this reason.
    Bad(SetError),
}

impl Live {
    /// The live settings starting from `c`; `aof` is the append-only file's, if open;
    /// `thresholds` the store's.
    pub(crate) fn new(
        c: &Config,
        aof: Option<Arc<AofSettings>>,
        thresholds: Arc<Thresholds>,
        memory: Arc<Memory>,
    ) -> Live {
        let normal = BufferLimit {
            hard: c.output_buffer_limit as u64,
            soft: c.output_buffer_limit as u64,
            soft_seconds: 0,
        };
        // Redis's defaults for the classes this server has no clients of.
        let slave = BufferLimit {
            hard: 256 << 20,
            soft: 64 << 20,
            soft_seconds: 60,
        };
        let pubsub = BufferLimit {
            hard: 32 << 20,
            soft: 8 << 20,
            soft_seconds: 60,
        };
        Live {
            maxclients: AtomicUsize::new(c.maxclients),
            query_buffer_limit: AtomicUsize::new(c.query_buffer_limit),
            max_bulk_len: AtomicUsize::new(c.limits.max_bulk_len),
            output_buffer_limit: AtomicUsize::new(c.output_buffer_limit),
            output_limits: Mutex::new([normal, slave, pubsub]),
            requirepass: RwLock::new(c.requirepass.clone()),
            aof: aof.unwrap_or_else(|| {
                Arc::new(AofSettings::new(
                    c.appendfsync,
                    c.auto_aof_rewrite_percentage,
                    c.auto_aof_rewrite_min_size,
                    c.aof_rewrite_key_delay,
                ))
            }),
            loopback: c.bind.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()),
            thresholds,
            memory,
            stored: crate::stored::Stored::default(),
            appendonly: c.appendonly,
        }
    }

    /// The password clients must give, if any.
    pub(crate) fn requirepass(&self) -> Option<String> {
        self.requirepass
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether a new connection must authenticate.
    pub(crate) fn needs_auth(&self) -> bool {
        self.requirepass
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// The parser's limits now.
    pub(crate) fn limits(&self, base: Limits) -> Limits {
        Limits {
            max_bulk_len: self.max_bulk_len.load(Ordering::Relaxed),
            ..base
        }
    }

    /// The `pubsub` class's `client-output-buffer-limit` (enforced on subscribers:
    /// `crate::pubsub`).
    pub(crate) fn pubsub_limit(&self) -> BufferLimit {
        self.output_limits.lock().unwrap_or_else(|p| p.into_inner())[2]
    }

    /// `client-output-buffer-limit` as Redis prints it.
    pub(crate) fn output_limits(&self) -> String {
        let l = self.output_limits.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = String::new();
        for (i, class) in CLASSES.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&format!(
                "{class} {} {} {}",
                l[i].hard, l[i].soft, l[i].soft_seconds
            ));
        }
        s
    }

    fn parse(&self, name: &str, v: &str) -> Result<Assign, Refused> {
        let bad = |e: SetError| Refused::Bad(e);
        let max = i64::MAX as u64;
        Ok(match name {
            "maxclients" => {
                Assign::MaxClients(int_in(v, 1, u64::from(u32::MAX)).map_err(bad)? as usize)
            }
            "client-query-buffer-limit" => {
                Assign::QueryBuffer(memory_in(v, 1 << 20, max).map_err(bad)? as usize)
            }
            "proto-max-bulk-len" => {
                Assign::MaxBulk(memory_in(v, 1 << 20, max).map_err(bad)? as usize)
            }
            "client-output-buffer-limit" => Assign::Output(parse_output_limits(v).map_err(bad)?),
            "requirepass" => {
                if v.is_empty() && !self.loopback {
                    return Err(bad(
                        "refusing to clear the password of a server listening on a                          non-loopback address"
                            .into(),
                    ));
                }
                Assign::RequirePass(Some(v.to_string()).filter(|p| !p.is_empty()))
            }
            "appendfsync" => Assign::Fsync(match v.to_ascii_lowercase().as_str() {
                "always" => Fsync::Always,
                "everysec" => Fsync::EverySec,
                "no" => Fsync::No,
                _ => {
                    return Err(bad(
                        "argument(s) must be one of the following: everysec, always, no".into(),
                    ));
                }
            }),
            "auto-aof-rewrite-percentage" => {
                Assign::AutoPercentage(int_in(v, 0, i32::MAX as u64).map_err(bad)?)
            }
            "auto-aof-rewrite-min-size" => Assign::AutoMinSize(memory_in(v, 0, max).map_err(bad)?),
            "aof-rewrite-key-delay" => Assign::KeyDelay(int_in(v, 0, 10_000_000).map_err(bad)?),
            "maxmemory" => Assign::MaxMemory(memory_in(v, 0, max).map_err(bad)? as usize),
            "maxmemory-policy" => Assign::Policy(Policy::parse(v).ok_or_else(|| {
                bad("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction".into())
            })?),
            "maxmemory-samples" => Assign::Samples(int_in(v, 1, 64).map_err(bad)? as usize),
            "lfu-log-factor" => Assign::LfuLogFactor(int_in(v, 0, i32::MAX as u64).map_err(bad)? as u32),
            "lfu-decay-time" => Assign::LfuDecayTime(int_in(v, 0, i32::MAX as u64).map_err(bad)? as u32),
            "appendonly" => {
                let on = match v.to_ascii_lowercase().as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(bad("argument must be 'yes' or 'no'".into())),
                };
                if on != self.appendonly {
                    return Err(bad(
                        "this server turns the append-only file on or off only at start (--appendonly)"
                            .into(),
                    ));
                }
                Assign::Stored(String::new(), String::new())
            }
            n if IMMUTABLE.contains(&n) => return Err(bad("can't set immutable config".into())),
            n if PROTECTED.contains(&n) => return Err(bad("can't set protected config".into())),
            n if crate::stored::known(n) => {
                Assign::Stored(n.to_string(), crate::stored::check(n, v).map_err(bad)?)
            }
            n if threshold_param(n).is_some() => {
                let p = threshold_param(n).expect("checked");
                Assign::Threshold(p, threshold_parse(p, v).map_err(bad)?)
            }
            _ => return Err(Refused::Unknown),
        })
    }

    /// `CONFIG SET name value …`: every pair is checked first, then all are applied (as
    /// Redis 7, a refused pair changes nothing). `Err` is (the parameter, why).
    pub(crate) fn set(&self, pairs: &[(&str, &str)]) -> Result<(), (String, Refused)> {
        // As Redis: names are checked first (unknown, immutable, duplicate), in order,
        // then values.
        let mut seen: Vec<String> = Vec::new();
        let mut parsed = Vec::new();
        for &(name, value) in pairs {
            let lower = name.to_ascii_lowercase();
            let res = self.parse(&lower, value);
            match &res {
                Err(Refused::Unknown) => return Err((name.to_string(), Refused::Unknown)),
                Err(Refused::Bad(_))
                    if IMMUTABLE.contains(&lower.as_str())
                        || PROTECTED.contains(&lower.as_str()) =>
                {
                    return Err((name.to_string(), res.err().expect("an error")));
                }
                _ => {}
            }
            if seen.contains(&lower) {
                return Err((name.to_string(), Refused::Bad("duplicate parameter".into())));
            }
            parsed.push((lower.clone(), res));
            seen.push(lower);
        }
        let mut todo = Vec::new();
        for (name, res) in parsed {
            todo.push(res.map_err(|e| (name, e))?);
        }
        for a in todo {
            match a {
                Assign::MaxClients(n) => self.maxclients.store(n, Ordering::Relaxed),
                Assign::QueryBuffer(n) => self.query_buffer_limit.store(n, Ordering::Relaxed),
                Assign::MaxBulk(n) => self.max_bulk_len.store(n, Ordering::Relaxed),
                Assign::Output(classes) => {
                    let mut l = self.output_limits.lock().unwrap_or_else(|p| p.into_inner());
                    for (i, limit) in classes {
                        l[i] = limit;
                    }
                    self.output_buffer_limit
                        .store(l[0].hard as usize, Ordering::Relaxed);
                }
                Assign::RequirePass(p) => {
                    *self.requirepass.write().unwrap_or_else(|p| p.into_inner()) = p
                }
                Assign::Fsync(f) => self.aof.set_fsync(f),
                Assign::AutoPercentage(n) => self.aof.auto_percentage.store(n, Ordering::Relaxed),
                Assign::AutoMinSize(n) => self.aof.auto_min_size.store(n, Ordering::Relaxed),
                Assign::KeyDelay(n) => self.aof.key_delay_us.store(n, Ordering::Relaxed),
                Assign::Threshold(p, n) => self.thresholds.set(p, n),
                Assign::MaxMemory(n) => self.memory.set_limit(n),
                Assign::Policy(p) => self.memory.set_policy(p),
                Assign::Samples(n) => self.memory.set_samples(n),
                Assign::LfuLogFactor(n) => self.memory.set_lfu_log_factor(n),
                Assign::LfuDecayTime(n) => self.memory.set_lfu_decay_time(n),
                Assign::Stored(name, value) => self.stored.set(&name, value),
            }
        }
        Ok(())
    }
}

/// Parses `class hard soft seconds …` (Redis's `client-output-buffer-limit`).
fn parse_output_limits(v: &str) -> Result<Vec<(usize, BufferLimit)>, SetError> {
    let words: Vec<&str> = v.split_ascii_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut out = Vec::new();
    for w in words.chunks(4) {
        let class = match w[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
        };
        let (Some(hard), Some(soft), Ok(soft_seconds)) =
            (parse_memory(w[1]), parse_memory(w[2]), w[3].parse::<u64>())
        else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        };
        out.push((
            class,
            BufferLimit {
                hard,
                soft,
                soft_seconds,
            },
        ));
    }
    Ok(out)
}

impl Config {
    /// Parses command-line arguments (without the program name). `Err` is a message for
    /// the user; `Ok(None)` means `--help` was asked for.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Option<Config>, String> {
        let mut c = Config::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            if arg == "--help" || arg == "-h" {
                return Ok(None);
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            fn num<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, String> {
                v.parse()
                    .map_err(|_| format!("{flag}: '{v}' is not a valid number"))
            }
            fn mem(flag: &str, v: String) -> Result<usize, String> {
                parse_memory(&v)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| format!("{flag}: '{v}' is not a valid size"))
            }
            match flag.as_str() {
                "--port" => c.port = num(&flag, value()?)?,
                "--bind" => c.bind = value()?,
                "--index" => c.index = value()?,
                "--requirepass" => c.requirepass = Some(value()?).filter(|p| !p.is_empty()),
                "--maxclients" => c.maxclients = num(&flag, value()?)?,
                "--databases" => c.databases = num(&flag, value()?)?,
                "--proto-max-bulk-len" => c.limits.max_bulk_len = mem(&flag, value()?)?,
                "--client-query-buffer-limit" => c.query_buffer_limit = mem(&flag, value()?)?,
                "--client-output-buffer-limit" => c.output_buffer_limit = mem(&flag, value()?)?,
                "--auto-aof-rewrite-percentage" => {
                    c.auto_aof_rewrite_percentage = num(&flag, value()?)?
                }
                "--auto-aof-rewrite-min-size" => {
                    c.auto_aof_rewrite_min_size = mem(&flag, value()?)? as u64
                }
                "--aof-rewrite-key-delay" => c.aof_rewrite_key_delay = num(&flag, value()?)?,
                "--threads" => c.threads = num(&flag, value()?)?,
                "--memcache-port" => c.memcache_port = Some(num(&flag, value()?)?),
                "--memcache-index" => c.memcache_index = value()?,
                "--memcache-memory" => c.memcache_memory_mb = num(&flag, value()?)?,
                "--memcache-max-item-size" => {
                    // memcached's -I: 1m is a MiB.
                    let v = value()?.to_ascii_lowercase();
                    let v = match v.strip_suffix('m').or_else(|| v.strip_suffix('k')) {
                        Some(d) if v.ends_with('m') => format!("{d}mb"),
                        Some(d) => format!("{d}kb"),
                        None => v,
                    };
                    c.memcache_max_item = mem(&flag, v)?
                }
                "--memcache-evict" => {
                    c.memcache_evict = match value()?.to_ascii_lowercase().as_str() {
                        "yes" => true,
                        "no" => false,
                        v => return Err(format!("--memcache-evict: '{v}' is not yes or no")),
                    }
                }
                "--memcache-max-conns" => c.memcache_max_conns = num(&flag, value()?)?,
                "--memcache-samples" => c.memcache_samples = num(&flag, value()?)?,
                "--maxmemory" => c.maxmemory = mem(&flag, value()?)?,
                "--maxmemory-policy" => {
                    let v = value()?;
                    c.maxmemory_policy = Policy::parse(&v)
                        .ok_or_else(|| format!("--maxmemory-policy: '{v}' is not a policy"))?
                }
                "--maxmemory-samples" => c.maxmemory_samples = num(&flag, value()?)?,
                "--lfu-log-factor" => c.lfu.0 = num(&flag, value()?)?,
                "--lfu-decay-time" => c.lfu.1 = num(&flag, value()?)?,
                "--dir" => c.dir = PathBuf::from(value()?),
                f if f
                    .strip_prefix("--")
                    .is_some_and(|n| threshold_param(n).is_some()) =>
                {
                    let v = value()?;
                    if let Some(Err(why)) = c.thresholds.set_named(&f[2..], &v) {
                        return Err(format!("{flag}: '{v}': {why}"));
                    }
                }
                "--appendonly" => {
                    c.appendonly = match value()?.to_ascii_lowercase().as_str() {
                        "yes" => true,
                        "no" => false,
                        v => return Err(format!("--appendonly: '{v}' is not yes or no")),
                    }
                }
                "--appendfsync" => {
                    c.appendfsync = match value()?.to_ascii_lowercase().as_str() {
                        "always" => Fsync::Always,
                        "everysec" => Fsync::EverySec,
                        "no" => Fsync::No,
                        v => {
                            return Err(format!(
                                "--appendfsync: '{v}' is not always, everysec or no"
                            ));
                        }
                    }
                }
                _ => return Err(format!("unknown option '{arg}'\n\n{USAGE}")),
            }
        }
        c.validate()?;
        Ok(Some(c))
    }

    /// Checks the settings: a parseable bind address, no open non-loopback bind without a
    /// password, non-zero limits.
    pub fn validate(&self) -> Result<(), String> {
        let ip: IpAddr = self
            .bind
            .parse()
            .map_err(|_| format!("--bind: '{}' is not an IP address", self.bind))?;
        if !ip.is_loopback() && self.requirepass.is_none() {
            return Err(format!(
                "refusing to listen on non-loopback address {ip} without --requirepass"
            ));
        }
        if self.maxclients == 0 || self.limits.max_bulk_len == 0 || self.query_buffer_limit == 0 {
            return Err("--maxclients and the size limits must be at least 1".into());
        }
        if !(1..=MAX_DATABASES).contains(&self.databases) {
            return Err(format!(
                "--databases must be between 1 and {}",
                MAX_DATABASES
            ));
        }
        if !(1..=64).contains(&self.maxmemory_samples) {
            return Err("--maxmemory-samples must be between 1 and 64".into());
        }
        if self.memcache_max_conns == 0 || self.memcache_samples == 0 {
            return Err("--memcache-max-conns and --memcache-samples must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Config>, String> {
        Config::from_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_and_defaults() {
        let c = parse(&[]).unwrap().unwrap();
        assert_eq!(
            (c.port, c.bind.as_str(), c.index.as_str()),
            (6379, "127.0.0.1", "wormhole")
        );
        let c = parse(&["--port=0", "--index", "mercury", "--maxclients", "3"])
            .unwrap()
            .unwrap();
        assert_eq!((c.port, c.index.as_str(), c.maxclients), (0, "mercury", 3));
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--port", "x"]).is_err());
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--nope"]).is_err());
        let c = parse(&[
            "--appendonly",
            "yes",
            "--appendfsync=always",
            "--dir",
            "/tmp/x",
        ])
        .unwrap()
        .unwrap();
        assert!(c.appendonly);
        assert_eq!(c.appendfsync, Fsync::Always);
        assert_eq!(c.dir, PathBuf::from("/tmp/x"));
        assert!(parse(&["--appendonly", "maybe"]).is_err());
        let c = parse(&[
            "--auto-aof-rewrite-min-size",
            "1mb",
            "--auto-aof-rewrite-percentage=50",
            "--client-query-buffer-limit",
            "2k",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.auto_aof_rewrite_min_size, 1 << 20);
        assert_eq!(c.auto_aof_rewrite_percentage, 50);
        assert_eq!(c.query_buffer_limit, 2000);
        assert!(parse(&["--auto-aof-rewrite-min-size", "1tb"]).is_err());
        assert!(parse(&["--appendfsync", "sometimes"]).is_err());
        let c = parse(&[
            "--memcache-port=0",
            "--memcache-memory",
            "10",
            "--memcache-max-item-size",
            "2m",
            "--memcache-evict",
            "no",
            "--threads",
            "1",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.memcache_port, Some(0));
        assert_eq!((c.memcache_memory_mb, c.memcache_max_item), (10, 2 << 20));
        assert!(!c.memcache_evict);
        assert_eq!(c.threads, 1);
        assert_eq!(parse(&[]).unwrap().unwrap().memcache_port, None);
        assert!(parse(&["--memcache-evict", "maybe"]).is_err());
    }

    #[test]
    fn sizes_parse_like_redis() {
        for (s, v) in [
            ("0", Some(0)),
            ("100", Some(100)),
            ("64mb", Some(64 << 20)),
            ("64MB", Some(64 << 20)),
            ("1gb", Some(1 << 30)),
            ("1g", Some(1_000_000_000)),
            ("3k", Some(3000)),
            ("5b", Some(5)),
            ("", None),
            ("mb", None),
            ("-1", None),
            ("1.5mb", None),
            ("1 mb", None),
            ("1xb", None),
            ("99999999999999999999", None),
            ("99999999999gb", None),
        ] {
            assert_eq!(parse_memory(s), v, "{s:?}");
        }
    }

    #[test]
    fn open_binds_need_a_password() {
        assert!(
            parse(&["--bind", "0.0.0.0"])
                .unwrap_err()
                .contains("requirepass")
        );
        assert!(parse(&["--bind", "0.0.0.0", "--requirepass", "s"]).is_ok());
        assert!(parse(&["--bind", "::1"]).is_ok());
        assert!(parse(&["--bind", "localhost"]).is_err());
    }
}
