//! Server commands: `COMMAND` (`COUNT`, `INFO`, `DOCS`, `LIST`), `INFO`, `CONFIG GET/SET`,
//! `SAVE`, `BGREWRITEAOF`, `SHUTDOWN`, `TIME`.
//!
//! There is no RDB snapshot: `SAVE` rewrites the append-only file on the calling
//! connection (the server keeps serving the others) and `BGREWRITEAOF` on a thread of its
//! own; with `--appendonly no` both answer an error.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::{Command, Ctx, Spec, TABLE, arity_error, lookup, syntax_error};
use crate::config::Refused;
use crate::resp::Reply;

fn describe(spec: &Spec) -> Reply {
    Reply::Array(vec![
        Reply::bulk(spec.name),
        Reply::Int(i64::from(spec.arity)),
        Reply::Array(spec.flags.iter().map(|f| Reply::Simple(f)).collect()),
        Reply::Int(i64::from(spec.first_key)),
        Reply::Int(i64::from(spec.last_key)),
        Reply::Int(i64::from(spec.step)),
        Reply::Array(vec![]),
        Reply::Array(vec![]),
        Reply::Array(vec![]),
        Reply::Array(vec![]),
    ])
}

/// `COMMAND`, `COMMAND COUNT`, `COMMAND LIST`, `COMMAND INFO name …`, `COMMAND DOCS …`.
pub(super) enum CommandInfo<'a> {
    All,
    Count,
    List,
    Info(&'a [Vec<u8>]),
    Docs,
}

impl<'a> Command<'a> for CommandInfo<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let Some(sub) = args.get(1) else {
            return Ok(CommandInfo::All);
        };
        match &sub.to_ascii_uppercase()[..] {
            b"COUNT" if args.len() == 2 => Ok(CommandInfo::Count),
            b"COUNT" => Err(arity_error("command|count")),
            b"LIST" => Ok(CommandInfo::List),
            b"INFO" => Ok(CommandInfo::Info(&args[2..])),
            b"DOCS" => Ok(CommandInfo::Docs),
            _ => Err(Reply::err(format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                String::from_utf8_lossy(sub)
            ))),
        }
    }

    fn apply(self, _ctx: &mut Ctx<'_>) -> Reply {
        match self {
            CommandInfo::All => Reply::Array(TABLE.iter().map(describe).collect()),
            CommandInfo::Count => Reply::Int(TABLE.len() as i64),
            CommandInfo::List => Reply::Array(TABLE.iter().map(|s| Reply::bulk(s.name)).collect()),
            CommandInfo::Info(names) => Reply::Array(
                names
                    .iter()
                    .map(|n| lookup(n).map_or(Reply::Nil, describe))
                    .collect(),
            ),
            // Documentation is optional for clients (`redis-cli` falls back to its own
            // hints): an empty map says "no docs" without an error.
            CommandInfo::Docs => Reply::Map(vec![]),
        }
    }
}

/// `INFO [section …]`.
pub(super) struct Info {
    /// The sections asked for, lower case (none: all).
    wanted: Vec<String>,
}

impl Command<'_> for Info {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Info {
            wanted: args[1..]
                .iter()
                .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
                .collect(),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        info(ctx, &self.wanted)
    }
}

fn info(ctx: &Ctx<'_>, wanted: &[String]) -> Reply {
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let sh = ctx.shared;
    let mut out = String::new();
    if want("server") {
        let uptime = ctx.now().saturating_sub(sh.started_ms) / 1000;
        let _ = write!(
            out,
            "# Server\r\nredis_version:{}\r\norrery_version:{}\r\norrery_index:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\n\r\n",
            crate::REDIS_VERSION,
            env!("CARGO_PKG_VERSION"),
            sh.config.index,
            std::env::consts::OS,
            usize::BITS,
            std::process::id(),
            sh.port,
            uptime / 86400,
        );
    }
    if want("clients") {
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n\r\n",
            sh.clients.len(),
            sh.live.maxclients.load(Ordering::Relaxed),
            sh.waiters.len()
        );
    }
    if want("memory") {
        let first = sh.dbs.shared();
        let m = sh
            .dbs
            .each()
            .fold(first.elements().memory_usage(), |m, (_, s)| {
                m + s.kv().memory_usage()
            })
            + first.positions().memory_usage();
        out.push_str("# Memory\r\n");
        super::maxmemory::info_memory(ctx, &mut out);
        let _ = write!(
            out,
            "index_bytes:{}\r\nindex_structure_bytes:{}\r\nindex_key_value_bytes:{}\r\n\r\n",
            m.total(),
            m.structure_bytes,
            m.key_value_bytes
        );
    }
    if want("persistence") {
        out.push_str("# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\n");
        match sh.aof.as_ref() {
            None => out.push_str("aof_enabled:0\r\naof_rewrite_in_progress:0\r\n\r\n"),
            Some(aof) => {
                let st = &aof.stats;
                let _ = write!(
                    out,
                    "aof_enabled:1\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:0\r\naof_last_bgrewrite_status:{}\r\naof_last_write_status:ok\r\naof_rewrites:{}\r\naof_auto_rewrites:{}\r\naof_current_size:{}\r\naof_base_size:{}\r\naof_fsync:{}\r\naof_loaded_writes:{}\r\naof_unsynced_bytes:{}\r\naof_max_unsynced_ms:{}\r\n\r\n",
                    u8::from(st.rewrite_in_progress.load(Ordering::Relaxed)),
                    if st.last_rewrite_ok.load(Ordering::Relaxed) {
                        "ok"
                    } else {
                        "err"
                    },
                    st.rewrites.load(Ordering::Relaxed),
                    st.auto_rewrites.load(Ordering::Relaxed),
                    st.current_size.load(Ordering::Relaxed),
                    st.base_size.load(Ordering::Relaxed),
                    aof.fsync().name(),
                    st.loaded_frames.load(Ordering::Relaxed),
                    st.unsynced_bytes.load(Ordering::Relaxed),
                    st.max_unsynced_us.load(Ordering::Relaxed) / 1000,
                );
            }
        }
    }
    if want("stats") {
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\n",
            sh.stats.connections.load(Ordering::Relaxed),
            sh.stats.commands.load(Ordering::Relaxed),
            sh.stats.rejected.load(Ordering::Relaxed),
            sh.dbs.expired_keys(),
        );
        super::maxmemory::info_stats(ctx, &mut out);
        let _ = write!(
            out,
            "pubsub_channels:{}\r\npubsub_patterns:{}\r\n",
            sh.pubsub.channels(None).len(),
            sh.pubsub.numpat()
        );
        out.push_str("\r\n");
    }
    if want("keyspace") {
        out.push_str("# Keyspace\r\n");
        // Only the databases holding keys, as Redis.
        for (db, s) in sh.dbs.each() {
            let keys = s.kv().len();
            if keys > 0 {
                let _ = write!(
                    out,
                    "db{db}:keys={keys},expires={},avg_ttl={}\r\n",
                    s.keys_with_deadline(),
                    s.average_ttl(ctx.now())
                );
            }
        }
        out.push_str("\r\n");
    }
    let mut text = out.trim_end().to_string();
    text.push_str("\r\n");
    Reply::Verbatim(text.into_bytes())
}

/// `CONFIG GET pattern …`, `CONFIG SET name value …`, `CONFIG RESETSTAT`.
pub(super) enum Config<'a> {
    Get(&'a [Vec<u8>]),
    Set(Vec<(String, String)>),
    ResetStat,
}

impl<'a> Command<'a> for Config<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        match &args[1].to_ascii_uppercase()[..] {
            b"GET" if args.len() >= 3 => Ok(Config::Get(&args[2..])),
            b"GET" => Err(arity_error("config|get")),
            b"SET" if args.len() >= 4 && args.len().is_multiple_of(2) => Ok(Config::Set(
                args[2..]
                    .chunks(2)
                    .map(|p| {
                        (
                            String::from_utf8_lossy(&p[0]).into_owned(),
                            String::from_utf8_lossy(&p[1]).into_owned(),
                        )
                    })
                    .collect(),
            )),
            b"SET" if args.len() >= 4 => Err(syntax_error()),
            b"SET" => Err(arity_error("config|set")),
            b"RESETSTAT" => Ok(Config::ResetStat),
            _ => Err(Reply::err(format!(
                "ERR unknown subcommand '{}'. Try CONFIG HELP.",
                String::from_utf8_lossy(&args[1])
            ))),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        match self {
            Config::Get(patterns) => config_get(ctx, patterns),
            Config::Set(pairs) => {
                let pairs: Vec<(&str, &str)> = pairs
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                match ctx.shared.live.set(&pairs) {
                    Ok(()) => Reply::OK,
                    Err((name, Refused::Unknown)) => Reply::err(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                    )),
                    Err((name, Refused::Bad(why))) => Reply::err(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                    )),
                }
            }
            Config::ResetStat => {
                // The counters Redis's `CONFIG RESETSTAT` zeroes that this server keeps.
                let sh = ctx.shared;
                sh.dbs.reset_stats();
                for c in [
                    &sh.stats.connections,
                    &sh.stats.commands,
                    &sh.stats.rejected,
                ] {
                    c.store(0, Ordering::Relaxed);
                }
                Reply::OK
            }
        }
    }
}

/// `CONFIG GET`: every setting whose name matches one of `patterns`, once.
fn config_get(ctx: &Ctx<'_>, patterns: &[Vec<u8>]) -> Reply {
    let c = &ctx.shared.config;
    let live = &ctx.shared.live;
    let aof = &live.aof;
    let mut settings = vec![
        ("port", ctx.shared.port.to_string()),
        ("bind", c.bind.clone()),
        (
            "maxclients",
            live.maxclients.load(Ordering::Relaxed).to_string(),
        ),
        ("requirepass", live.requirepass().unwrap_or_default()),
        ("databases", ctx.shared.dbs.count().to_string()),
        ("appendonly", if c.appendonly { "yes" } else { "no" }.into()),
        ("appendfsync", aof.fsync().name().into()),
        ("appendfilename", crate::aof::FILE_NAME.into()),
        (
            "auto-aof-rewrite-percentage",
            aof.auto_percentage.load(Ordering::Relaxed).to_string(),
        ),
        (
            "auto-aof-rewrite-min-size",
            aof.auto_min_size.load(Ordering::Relaxed).to_string(),
        ),
        (
            "aof-rewrite-key-delay",
            aof.key_delay_us.load(Ordering::Relaxed).to_string(),
        ),
        ("dir", c.dir.display().to_string()),
        ("dbfilename", "dump.rdb".into()),
        (
            "proto-max-bulk-len",
            live.max_bulk_len.load(Ordering::Relaxed).to_string(),
        ),
        (
            "client-query-buffer-limit",
            live.query_buffer_limit.load(Ordering::Relaxed).to_string(),
        ),
        ("client-output-buffer-limit", live.output_limits()),
    ];
    settings.extend(live.thresholds.report());
    settings.extend(super::maxmemory::settings(ctx));
    settings.extend(live.stored.report());
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for p in patterns {
        let lower = p.to_ascii_lowercase();
        if !lower.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
            // A plain name is answered under the name as given (as Redis does).
            if let Some((name, value)) = settings.iter().find(|s| s.0.as_bytes() == lower)
                && !seen.contains(name)
            {
                seen.push(*name);
                out.push((Reply::bulk(p), Reply::bulk(value)));
            }
            continue;
        }
        for (name, value) in &settings {
            if !seen.contains(name) && crate::glob::matches(&lower, name.as_bytes()) {
                seen.push(*name);
                out.push((Reply::bulk(name), Reply::bulk(value)));
            }
        }
    }
    Reply::Map(out)
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]` (there is no snapshot to save: the options are
/// accepted and ignored).
pub(super) struct Shutdown;

impl Command<'_> for Shutdown {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        for a in &args[1..] {
            match &a.to_ascii_uppercase()[..] {
                b"NOSAVE" | b"SAVE" | b"NOW" | b"FORCE" => {}
                _ => return Err(syntax_error()),
            }
        }
        Ok(Shutdown)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.shared.shutdown.notify_one();
        ctx.client.close_after_reply = true;
        Reply::Silence
    }
}

fn persistence_off() -> Reply {
    Reply::err("ERR persistence is off: start the server with --appendonly yes")
}

/// `SAVE`: rewrites the append-only file on this connection.
pub(super) struct Save;

impl Command<'_> for Save {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Save)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let store = &*ctx.shared.dbs;
        let Some(aof) = &ctx.shared.aof else {
            return persistence_off();
        };
        let res = if tokio::runtime::Handle::try_current().is_ok() {
            // The rewrite blocks this connection only: the runtime moves the worker's
            // other tasks to another thread meanwhile.
            tokio::task::block_in_place(|| aof.rewrite(store))
        } else {
            aof.rewrite(store)
        };
        match res {
            Ok(()) => Reply::OK,
            Err(e) => Reply::err(format!("ERR {e}")),
        }
    }
}

/// `BGREWRITEAOF`: rewrites the append-only file on a thread of its own.
pub(super) struct BgRewriteAof;

impl Command<'_> for BgRewriteAof {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(BgRewriteAof)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Some(aof) = &ctx.shared.aof else {
            return persistence_off();
        };
        if aof.rewrite_in_background(ctx.shared.dbs.clone(), false) {
            Reply::Simple("Background append only file rewriting started")
        } else {
            Reply::err("ERR Background append only file rewriting already in progress")
        }
    }
}

/// `TIME`.
pub(super) struct Time;

impl Command<'_> for Time {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Time)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(ctx.now() * 1000, |d| d.as_micros() as u64);
        Reply::Array(vec![
            Reply::bulk((micros / 1_000_000).to_string()),
            Reply::bulk((micros % 1_000_000).to_string()),
        ])
    }
}
