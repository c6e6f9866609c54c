//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, with Redis 7.0's
//! semantics.
//!
//! - After `MULTI` a connection's requests are checked (name, arity, authentication, the
//!   `no_multi` flag) and queued, each answered `+QUEUED`; a rejected one is answered
//!   with its error and marks the transaction, whose `EXEC` then answers `EXECABORT`.
//!   `EXEC`, `DISCARD`, `MULTI`, `WATCH`, `QUIT` and `RESET` run at once, as in Redis
//!   (`MULTI` and `WATCH` inside `MULTI` are errors that leave the transaction as it is).
//!   At the memory limit (used memory over `maxmemory` once the policy evicted what it
//!   may: always under `noeviction`) every other request is refused with the `OOM` error
//!   and marks the transaction, and an `EXEC` whose queue holds a `denyoom` command is
//!   answered `EXECABORT … because of: OOM …` and discarded (Redis 7.0's
//!   `processCommand`).
//! - `EXEC` takes the store's gate exclusively (`crate::store`'s watch module): no other
//!   client's command, no blocked client being served, no active expiry runs between its
//!   commands. It aborts with a null reply when a watched key changed since `WATCH` (the
//!   store flags the watchers on every change, expiry and eviction included) or is due to
//!   expire; else it runs the queued commands, each with its own reply (a runtime error
//!   is one of them), blocking commands without blocking, and only then serves the clients
//!   blocked on keys the transaction made ready.
//! - The transaction's effect records go to the append-only file as one frame (Redis
//!   wraps them in `MULTI`/`EXEC`): replay applies it whole, and a frame torn by a crash
//!   is cut off whole (`crate::aof`), so a crash never replays half a transaction.
//! - Watched keys are `(database, key)`: the connection's selected database when it
//!   watched (`SWAPDB` touches the watchers of both databases' keys, as Redis).

use super::{Command, Ctx, Spec, blocking, check, run};
use crate::resp::Reply;

/// The database of the connection's keys (`SELECT`).
fn db(ctx: &Ctx<'_>) -> usize {
    ctx.client.db
}

/// Runs a request of a connection inside `MULTI`: queues it, or runs the commands that
/// are not queued.
pub(super) fn queue(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let spec: &Spec = match check(ctx, args) {
        Ok(spec) => spec,
        Err(reply) => {
            ctx.client.multi.aborted = true;
            return reply;
        }
    };
    match spec.name {
        "exec" => exec(ctx),
        "discard" | "multi" | "watch" | "quit" | "reset" => {
            let shared = ctx.shared;
            let _gate = shared.dbs.shared().gate_shared();
            run(ctx, args)
        }
        _ if spec.flags.contains(&"no_multi") => {
            ctx.client.multi.aborted = true;
            Reply::err("ERR Command not allowed inside a transaction")
        }
        _ if super::maxmemory::over_limit(ctx) => {
            ctx.client.multi.aborted = true;
            Reply::err(super::maxmemory::OOM)
        }
        _ => {
            ctx.client.multi.push(args);
            Reply::Simple("QUEUED")
        }
    }
}

/// `EXEC` inside `MULTI` (see the [module docs](self)).
fn exec(ctx: &mut Ctx<'_>) -> Reply {
    let aborted = ctx.client.multi.aborted;
    let queued = ctx.client.multi.take();
    if aborted {
        ctx.client.multi.unwatch_all();
        return Reply::err("EXECABORT Transaction discarded because of previous errors.");
    }
    // A transaction that would add data is refused whole at the memory limit (Redis).
    let adds = queued
        .iter()
        .any(|args| super::lookup(&args[0]).is_some_and(|s| s.flags.contains(&"denyoom")));
    if adds && super::maxmemory::over_limit(ctx) {
        ctx.client.multi.unwatch_all();
        return Reply::err(format!(
            "EXECABORT Transaction discarded because of: {}",
            super::maxmemory::OOM
        ));
    }
    let store = ctx.store();
    let _gate = store.gate_exclusive();
    let now = ctx.now();
    let dbs = &ctx.shared.dbs;
    let dirty = ctx.client.multi.dirty()
        || ctx
            .client
            .multi
            .watched()
            .iter()
            .any(|(db, key)| dbs.get(*db).is_expired(key, now));
    // Unwatched before the commands run: the transaction's own writes do not matter.
    ctx.client.multi.unwatch_all();
    if dirty {
        return Reply::NilArray;
    }
    ctx.client.multi.in_exec = true;
    ctx.call.begin_batch();
    let replies = queued.iter().map(|args| run(ctx, args)).collect();
    store.end_batch(ctx.call);
    ctx.client.multi.in_exec = false;
    if ctx.call.has_ready() {
        blocking::serve_ready(ctx);
    }
    Reply::Array(replies)
}

/// `MULTI`.
pub(crate) struct Multi;

impl Command<'_> for Multi {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Multi)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        if ctx.client.multi.queuing() {
            return Reply::err("ERR MULTI calls can not be nested");
        }
        ctx.client.multi.begin();
        Reply::OK
    }
}

/// `EXEC` outside `MULTI` (inside, the dispatcher runs it: [`queue`]).
pub(crate) struct Exec;

impl Command<'_> for Exec {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Exec)
    }

    fn apply(self, _ctx: &mut Ctx<'_>) -> Reply {
        Reply::err("ERR EXEC without MULTI")
    }
}

/// `DISCARD`: leaves `MULTI`, dropping the queue and the watched keys.
pub(crate) struct Discard;

impl Command<'_> for Discard {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Discard)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        if !ctx.client.multi.queuing() {
            return Reply::err("ERR DISCARD without MULTI");
        }
        ctx.client.multi.take();
        ctx.client.multi.unwatch_all();
        Reply::OK
    }
}

/// `WATCH key [key …]`.
pub(crate) struct Watch<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> Command<'a> for Watch<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Watch { keys: &args[1..] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        if ctx.client.multi.queuing() {
            return Reply::err("ERR WATCH inside MULTI is not allowed");
        }
        let db = db(ctx);
        let store = ctx.store().clone();
        for key in self.keys {
            // A key already expired is removed first (its removal is no change to the
            // watcher, as in Redis, where a watched expired key's deletion does not
            // abort); from now on any change, expiry included, sets the flag.
            store.read(key, ctx.call, |_, _, _| ());
            ctx.client.multi.watch(&store, db, key);
        }
        Reply::OK
    }
}

/// `UNWATCH`.
pub(crate) struct Unwatch;

impl Command<'_> for Unwatch {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Unwatch)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.client.multi.unwatch_all();
        Reply::OK
    }
}
