//! `stats` and its groups (`settings`, `items`, `slabs`, `sizes`, `conns`, `reset`,
//! `detail`), each field named as memcached names it. Fields that describe memcached's
//! slab allocator have one class here (the items live in an Orrery index, not in slabs).

use std::sync::atomic::Ordering;

use super::counters::Stat;
use super::exec::MEMCACHED_VERSION;
use super::reply::{self, stat};
use super::state::Memcache;
use super::store::Now;
use crate::memory::{Keyspace, Policy};

/// Runs `stats <args>`.
pub(crate) fn run(mc: &Memcache, args: &[&[u8]], now: Now, out: &mut Vec<u8>) {
    match args.first().copied() {
        None => general(mc, now, out),
        Some(b"reset") => {
            mc.counters.reset();
            reply::line(out, "RESET");
            return;
        }
        Some(b"detail") => {
            let text = match args.get(1).copied() {
                Some(b"on") | Some(b"off") => "OK",
                Some(b"dump") => "END",
                _ => "CLIENT_ERROR usage: stats detail on|off|dump",
            };
            reply::line(out, text);
            return;
        }
        Some(b"settings") => settings(mc, out),
        Some(b"items") => {
            let c = &mc.counters;
            stat(out, "items:1:number", mc.items.len());
            stat(out, "items:1:age", 0);
            stat(out, "items:1:evicted", mc.memory.evictions());
            stat(out, "items:1:outofmemory", c.get(Stat::store_no_memory));
        }
        Some(b"slabs") => {
            stat(out, "1:chunk_size", 0);
            stat(out, "1:used_chunks", mc.items.len());
            stat(out, "1:get_hits", mc.counters.get(Stat::get_hits));
            stat(out, "1:cmd_set", mc.counters.get(Stat::cmd_set));
            stat(out, "active_slabs", 1);
            stat(out, "total_malloced", mc.items.used_bytes());
        }
        Some(b"sizes") => stat(out, "sizes_status", "disabled"),
        Some(b"conns") => {}
        Some(_) => {
            reply::line(out, "ERROR");
            return;
        }
    }
    reply::line(out, "END");
}

fn general(mc: &Memcache, now: Now, out: &mut Vec<u8>) {
    let c = &mc.counters;
    stat(out, "pid", std::process::id());
    stat(
        out,
        "uptime",
        u64::from(now.secs).saturating_sub(mc.started),
    );
    stat(out, "time", now.secs);
    stat(out, "version", MEMCACHED_VERSION);
    stat(out, "pointer_size", usize::BITS);
    stat(out, "max_connections", mc.settings.max_conns);
    stat(
        out,
        "curr_connections",
        mc.curr_conns.load(Ordering::Relaxed),
    );
    stat(
        out,
        "total_connections",
        mc.total_conns.load(Ordering::Relaxed),
    );
    stat(
        out,
        "rejected_connections",
        mc.rejected_conns.load(Ordering::Relaxed),
    );
    for &s in Stat::ALL {
        if s != Stat::total_items {
            stat(out, s.name(), c.get(s));
        }
    }
    stat(out, "limit_maxbytes", mc.memory.limit());
    stat(out, "threads", tokio_threads());
    stat(out, "bytes", mc.items.bytes());
    stat(out, "curr_items", mc.items.len());
    stat(out, "total_items", c.get(Stat::total_items));
    stat(out, "evictions", mc.memory.evictions());
    stat(out, "used_memory", mc.memory.used(&mc.items));
    stat(out, "index_memory", mc.items.index_memory());
}

fn tokio_threads() -> usize {
    tokio::runtime::Handle::try_current()
        .map(|h| h.metrics().num_workers())
        .unwrap_or(1)
}

fn settings(mc: &Memcache, out: &mut Vec<u8>) {
    let s = &mc.settings;
    stat(out, "maxbytes", s.memory);
    stat(out, "maxconns", s.max_conns);
    stat(out, "tcpport", s.port);
    stat(out, "udpport", 0);
    stat(out, "inter", &s.bind);
    stat(out, "verbosity", mc.verbosity.load(Ordering::Relaxed));
    stat(
        out,
        "evictions",
        if mc.memory.policy() == Policy::NoEviction {
            "off"
        } else {
            "on"
        },
    );
    stat(out, "num_threads", tokio_threads());
    stat(out, "cas_enabled", "yes");
    stat(out, "binding_protocol", "ascii");
    stat(out, "item_size_max", s.max_item);
    stat(out, "lru_segmented", "no");
    stat(out, "maxmemory_samples", mc.memory.samples());
    stat(out, "index", &s.index);
}
