//! The memory limit at the command layer: admission of the commands Redis marks
//! `denyoom` (evict first, or refuse with Redis's `OOM` error under `noeviction` or when
//! a volatile policy finds nothing to evict), and the `INFO memory` and `INFO stats`
//! fields of the limit. The limit itself is `crate::memory`; the keyspace's side of it
//! `crate::store` (`evict`).

use std::fmt::Write as _;

use super::{Ctx, Spec};
use crate::memory::{OutOfMemory, Refuse};
use crate::resp::Reply;

/// Redis's reply to a `denyoom` command refused at the limit.
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Makes room for the command `args` before it runs, if it is `denyoom` and a limit is
/// set; `Err` is the reply that refuses it. Called with no stripe held (an eviction takes
/// its victim's stripe).
pub(super) fn admit(ctx: &Ctx<'_>, spec: &Spec, args: &[Vec<u8>]) -> Result<(), Reply> {
    let store = ctx.store();
    let dbs = &*ctx.shared.dbs;
    if store.memory().limit() == 0 || !spec.flags.contains(&"denyoom") {
        return Ok(());
    }
    // About what the write adds: its arguments, a value header and an entry's structure
    // (an estimate under the real cost would let the keyspace creep over the limit
    // between two measurements).
    let needed = args[1..].iter().map(Vec::len).sum::<usize>()
        + crate::store::MAX_HEADER
        + crate::store::ITEM_STRUCTURE;
    match store.memory().admit(dbs, needed, Refuse::WhenOver) {
        Ok(()) => Ok(()),
        Err(OutOfMemory) => Err(Reply::err(OOM)),
    }
}

/// Whether memory is over the limit after the evictions the policy allows (Redis's
/// `performEvictions` failing): inside `MULTI` every command but `EXEC`, `DISCARD`,
/// `QUIT` and `RESET` is then refused at queue time (Redis 7.0 refuses them all, not
/// only `denyoom` ones: a queue may grow without bound), and `EXEC` of a transaction
/// holding a `denyoom` command is aborted (`transactions`).
pub(super) fn over_limit(ctx: &Ctx<'_>) -> bool {
    let m = ctx.store().memory();
    m.limit() > 0 && m.admit(&*ctx.shared.dbs, 0, Refuse::WhenOver).is_err()
}

/// The resident set size of this process, bytes (0 where `/proc` has none).
fn rss() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The limit's lines of `INFO memory`: `used_memory` (what the limit counts, the
/// connections' buffers included), `mem_clients_normal` (those buffers; `mem_clients_slaves`
/// is 0: no replicas), `maxmemory`,
/// `maxmemory_policy`, `mem_fragmentation_ratio` (resident set over `used_memory`).
pub(super) fn info_memory(ctx: &Ctx<'_>, out: &mut String) {
    let m = ctx.store().memory();
    // One reading of the buffers for both lines (`used_memory` is `Memory::used`).
    let clients = m.buffers().load(std::sync::atomic::Ordering::Relaxed);
    let used = (crate::memory::Keyspace::used_bytes(&*ctx.shared.dbs) + clients).max(1);
    let rss = rss();
    let _ = write!(
        out,
        "used_memory:{used}\r\nused_memory_rss:{rss}\r\nmem_clients_slaves:0\r\nmem_clients_normal:{clients}\r\nmaxmemory:{}\r\nmaxmemory_policy:{}\r\nmaxmemory_samples:{}\r\nmem_fragmentation_ratio:{:.2}\r\n",
        m.limit(),
        m.policy().name(),
        m.samples(),
        rss as f64 / used as f64,
    );
}

/// The limit's lines of `INFO stats`: `evicted_keys`, `keyspace_hits`, `keyspace_misses`.
pub(super) fn info_stats(ctx: &Ctx<'_>, out: &mut String) {
    let store = ctx.store();
    let (hits, misses) = ctx.shared.dbs.lookups();
    let _ = write!(
        out,
        "evicted_keys:{}\r\nkeyspace_hits:{hits}\r\nkeyspace_misses:{misses}\r\n",
        store.memory().evictions(),
    );
}

/// The limit's parameters for `CONFIG GET`.
pub(super) fn settings(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let m = ctx.store().memory();
    let (factor, decay) = m.lfu_params();
    vec![
        ("maxmemory", m.limit().to_string()),
        ("maxmemory-policy", m.policy().name().into()),
        ("maxmemory-samples", m.samples().to_string()),
        ("lfu-log-factor", factor.to_string()),
        ("lfu-decay-time", decay.to_string()),
    ]
}
