//! The command table and dispatch: name → arity, flags, key positions and command type.
//!
//! One file per command family (`connection`, `strings`, `keys`, `expiry`, `server`,
//! `hashes`, `sets`, `lists`, `blocking`, `zsets`, `zranges`, `zalgebra`, `object`,
//! `databases`,
//! `transactions`, `pubsub`; the
//! collection scans' cursors in `cursor`), each with one type per command. [`dispatch`] checks the name, the arity and
//! authentication, in that order and with Redis's error replies; then the command's
//! [`Command::parse`] turns the argument vector (name first) into its typed form, with
//! Redis's reply for any syntax error, and only then [`Command::apply`] runs it against
//! the store. So a syntax error is a parse error: it never reaches the store and never
//! leaves a partial write, and `apply` sees only valid input.
//!
//! After a command, [`dispatch`] serves the clients blocked on keys the command made
//! ready (`blocking::serve_ready`): a separate step, so that a transaction can run it once
//! after `EXEC` instead.
//!
//! Every command runs holding the store's gate shared; `EXEC` holds it exclusively for
//! its queued commands (`transactions`). Inside `MULTI`, [`dispatch`] hands requests to
//! `transactions`, which queues them.

mod blocking;
mod connection;
mod cursor;
mod databases;
mod expiry;
mod hashes;
mod keys;
mod lists;
mod maxmemory;
mod object;
mod pubsub;
mod server;
mod sets;
mod strings;
mod transactions;
mod zalgebra;
mod zranges;
mod zsets;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use crate::resp::Reply;
use crate::state::{Client, Shared};
use crate::store::{Call, Store};

/// What a handler sees: the server's shared state, the calling client, and the store call
/// it makes (the time it runs at; the append-only-file position its writes reach, which
/// the connection waits for before it sends the reply).
pub(crate) struct Ctx<'a> {
    /// State shared by every connection.
    pub(crate) shared: &'a Shared,
    /// The calling connection's state.
    pub(crate) client: &'a mut Client,
    /// The command's dealings with the store.
    pub(crate) call: &'a Call,
}

impl<'a> Ctx<'a> {
    /// When the command runs, Unix milliseconds.
    pub(crate) fn now(&self) -> u64 {
        self.call.now()
    }

    /// The keyspace of the client's selected database.
    pub(crate) fn store(&self) -> &'a Arc<Store> {
        self.shared.dbs.get(self.client.db)
    }
}

/// A command in its typed form, parsed from its arguments before it touches the store.
pub(crate) trait Command<'a>: Sized {
    /// Parses the arguments (the name first; the arity is already checked): `Err` is
    /// Redis's reply for what is wrong with them.
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply>;

    /// Runs the command.
    fn apply(self, ctx: &mut Ctx<'_>) -> Reply;
}

/// A table entry's entry point: parse, then apply.
type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> Reply;

/// One command's entry in the table (the fields `COMMAND` reports).
pub(crate) struct Spec {
    /// Lower-case name.
    pub(crate) name: &'static str,
    /// Redis's arity: `n` exactly n arguments (name included), `-n` at least n.
    pub(crate) arity: i32,
    /// Redis's command flags, as `COMMAND` lists them.
    pub(crate) flags: &'static [&'static str],
    /// Position of the first key argument (0: none).
    pub(crate) first_key: i32,
    /// Position of the last key argument (-1: the last argument).
    pub(crate) last_key: i32,
    /// Step between key arguments.
    pub(crate) step: i32,
    handler: Handler,
}

const W: &[&str] = &["write", "denyoom", "fast"];
const R: &[&str] = &["readonly", "fast"];
const RS: &[&str] = &["readonly"];
const WS: &[&str] = &["write"];
const C: &[&str] = &["fast", "loading", "stale"];
const WD: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "fast"];
const B: &[&str] = &["write", "noscript", "blocking"];
const TX: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];
const NA: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];
const PS: &[&str] = &["pubsub", "noscript", "loading", "stale"];

macro_rules! specs {
    ($($name:literal, $arity:expr, $flags:expr, $first:expr, $last:expr, $step:expr, $($t:ident)::+;)*) => {
        &[$(Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $first,
            last_key: $last,
            step: $step,
            handler: {
                fn handler(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
                    match $($t)::+::parse(args) {
                        Ok(command) => command.apply(ctx),
                        Err(reply) => reply,
                    }
                }
                handler
            },
        }),*]
    };
}

/// Every command the server knows.
pub(crate) static TABLE: &[Spec] = specs! {
    "ping", -1, C, 0, 0, 0, connection::Ping;
    "echo", 2, C, 0, 0, 0, connection::Echo;
    "hello", -1, NA, 0, 0, 0, connection::Hello;
    "auth", -2, NA, 0, 0, 0, connection::Auth;
    "select", 2, C, 0, 0, 0, databases::Select;
    "client", -2, &["noscript", "loading", "stale"], 0, 0, 0, connection::Client;
    "quit", -1, NA, 0, 0, 0, connection::Quit;
    "reset", 1, NA, 0, 0, 0, connection::Reset;
    "get", 2, R, 1, 1, 1, strings::Get;
    "set", -3, &["write", "denyoom"], 1, 1, 1, strings::Set;
    "setnx", 3, W, 1, 1, 1, strings::SetNx;
    "getset", 3, W, 1, 1, 1, strings::GetSet;
    "getdel", 2, &["write", "fast"], 1, 1, 1, strings::GetDel;
    "mget", -2, R, 1, -1, 1, strings::MGet;
    "mset", -3, &["write", "denyoom"], 1, -1, 2, strings::MSet;
    "msetnx", -3, &["write", "denyoom"], 1, -1, 2, strings::MSet;
    "append", 3, W, 1, 1, 1, strings::Append;
    "strlen", 2, R, 1, 1, 1, strings::StrLen;
    "incr", 2, W, 1, 1, 1, strings::IncrBy;
    "decr", 2, W, 1, 1, 1, strings::IncrBy;
    "incrby", 3, W, 1, 1, 1, strings::IncrBy;
    "decrby", 3, W, 1, 1, 1, strings::IncrBy;
    "incrbyfloat", 3, W, 1, 1, 1, strings::IncrByFloat;
    "del", -2, WS, 1, -1, 1, keys::Del;
    "unlink", -2, &["write", "fast"], 1, -1, 1, keys::Del;
    "exists", -2, R, 1, -1, 1, keys::Exists;
    "type", 2, R, 1, 1, 1, keys::Type;
    "rename", 3, WS, 1, 2, 1, keys::Rename;
    "keys", 2, RS, 0, 0, 0, keys::Keys;
    "scan", -2, RS, 0, 0, 0, keys::Scan;
    "dbsize", 1, R, 0, 0, 0, keys::DbSize;
    "flushdb", -1, WS, 0, 0, 0, keys::Flush;
    "flushall", -1, WS, 0, 0, 0, databases::FlushAll;
    "move", 3, WF, 1, 1, 1, databases::Move;
    "swapdb", 3, WF, 0, 0, 0, databases::SwapDb;
    "expire", -3, &["write", "fast"], 1, 1, 1, expiry::Expire;
    "pexpire", -3, &["write", "fast"], 1, 1, 1, expiry::Expire;
    "expireat", -3, &["write", "fast"], 1, 1, 1, expiry::Expire;
    "pexpireat", -3, &["write", "fast"], 1, 1, 1, expiry::Expire;
    "ttl", 2, R, 1, 1, 1, expiry::Ttl;
    "pttl", 2, R, 1, 1, 1, expiry::Ttl;
    "persist", 2, &["write", "fast"], 1, 1, 1, expiry::Persist;
    "getex", -2, WF, 1, 1, 1, strings::GetEx;
    "getrange", 4, RS, 1, 1, 1, strings::GetRange;
    "substr", 4, RS, 1, 1, 1, strings::GetRange;
    "setrange", 4, WD, 1, 1, 1, strings::SetRange;
    "setex", 4, WD, 1, 1, 1, strings::SetEx;
    "psetex", 4, WD, 1, 1, 1, strings::SetEx;
    "renamenx", 3, WF, 1, 2, 1, keys::Rename;
    "copy", -3, WD, 1, 2, 1, keys::Copy;
    "randomkey", 1, RS, 0, 0, 0, keys::RandomKey;
    "expiretime", 2, R, 1, 1, 1, expiry::Ttl;
    "pexpiretime", 2, R, 1, 1, 1, expiry::Ttl;
    "command", -1, &["loading", "stale"], 0, 0, 0, server::CommandInfo;
    "info", -1, &["loading", "stale"], 0, 0, 0, server::Info;
    "config", -2, &["admin", "noscript", "loading", "stale"], 0, 0, 0, server::Config;
    "shutdown", -1, &["admin", "noscript", "loading", "stale"], 0, 0, 0, server::Shutdown;
    "time", 1, &["loading", "stale", "fast"], 0, 0, 0, server::Time;
    "save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], 0, 0, 0, server::Save;
    "bgrewriteaof", 1, &["admin", "noscript", "no_async_loading"], 0, 0, 0, server::BgRewriteAof;
    "zadd", -4, &["write", "denyoom", "fast"], 1, 1, 1, zsets::ZAdd;
    "zincrby", 4, &["write", "denyoom", "fast"], 1, 1, 1, zsets::ZIncrBy;
    "zrem", -3, WF, 1, 1, 1, zsets::ZRem;
    "zscore", 3, R, 1, 1, 1, zsets::ZScore;
    "zmscore", -3, R, 1, 1, 1, zsets::ZMScore;
    "zcard", 2, R, 1, 1, 1, zsets::ZCard;
    "zcount", 4, R, 1, 1, 1, zsets::ZCount;
    "zlexcount", 4, R, 1, 1, 1, zsets::ZLexCount;
    "zrank", 3, R, 1, 1, 1, zsets::ZRank;
    "zrevrank", 3, R, 1, 1, 1, zsets::ZRank;
    "zpopmin", -2, WF, 1, 1, 1, zsets::ZPop;
    "zpopmax", -2, WF, 1, 1, 1, zsets::ZPop;
    "zrandmember", -2, RS, 1, 1, 1, zsets::ZRandMember;
    "zscan", -3, RS, 1, 1, 1, zsets::ZScan;
    "zrange", -4, RS, 1, 1, 1, zranges::ZRange;
    "zrevrange", -4, RS, 1, 1, 1, zranges::ZRange;
    "zrangebyscore", -4, RS, 1, 1, 1, zranges::ZRange;
    "zrevrangebyscore", -4, RS, 1, 1, 1, zranges::ZRange;
    "zrangebylex", -4, RS, 1, 1, 1, zranges::ZRange;
    "zrevrangebylex", -4, RS, 1, 1, 1, zranges::ZRange;
    "zrangestore", -5, WD, 1, 2, 1, zranges::ZRangeStore;
    "zremrangebyrank", 4, WS, 1, 1, 1, zranges::ZRemRange;
    "zremrangebyscore", 4, WS, 1, 1, 1, zranges::ZRemRange;
    "zremrangebylex", 4, WS, 1, 1, 1, zranges::ZRemRange;
    "zunionstore", -4, WD, 1, 1, 1, zalgebra::ZAlgebra;
    "zinterstore", -4, WD, 1, 1, 1, zalgebra::ZAlgebra;
    "zdiffstore", -4, WD, 1, 1, 1, zalgebra::ZAlgebra;
    "zunion", -3, RS, 0, 0, 0, zalgebra::ZAlgebra;
    "zinter", -3, RS, 0, 0, 0, zalgebra::ZAlgebra;
    "zdiff", -3, RS, 0, 0, 0, zalgebra::ZAlgebra;
    "bzpopmin", -3, B, 1, -2, 1, blocking::Block;
    "bzpopmax", -3, B, 1, -2, 1, blocking::Block;
    "hset", -4, &["write", "denyoom", "fast"], 1, 1, 1, hashes::HSet;
    "hmset", -4, &["write", "denyoom", "fast"], 1, 1, 1, hashes::HSet;
    "hsetnx", 4, &["write", "denyoom", "fast"], 1, 1, 1, hashes::HSetNx;
    "hget", 3, R, 1, 1, 1, hashes::HGet;
    "hexists", 3, R, 1, 1, 1, hashes::HGet;
    "hstrlen", 3, R, 1, 1, 1, hashes::HGet;
    "hmget", -3, R, 1, 1, 1, hashes::HMGet;
    "hgetall", 2, RS, 1, 1, 1, hashes::HGetAll;
    "hkeys", 2, RS, 1, 1, 1, hashes::HGetAll;
    "hvals", 2, RS, 1, 1, 1, hashes::HGetAll;
    "hlen", 2, R, 1, 1, 1, hashes::HGetAll;
    "hdel", -3, WF, 1, 1, 1, hashes::HDel;
    "hincrby", 4, &["write", "denyoom", "fast"], 1, 1, 1, hashes::HIncrBy;
    "hincrbyfloat", 4, &["write", "denyoom", "fast"], 1, 1, 1, hashes::HIncrByFloat;
    "hrandfield", -2, RS, 1, 1, 1, hashes::HRandField;
    "hscan", -3, RS, 1, 1, 1, hashes::HScan;
    "sadd", -3, &["write", "denyoom", "fast"], 1, 1, 1, sets::SAdd;
    "srem", -3, WF, 1, 1, 1, sets::SAdd;
    "sismember", 3, R, 1, 1, 1, sets::SIsMember;
    "smismember", -3, R, 1, 1, 1, sets::SIsMember;
    "smembers", 2, RS, 1, 1, 1, sets::SMembers;
    "scard", 2, R, 1, 1, 1, sets::SMembers;
    "spop", -2, WF, 1, 1, 1, sets::SPop;
    "srandmember", -2, RS, 1, 1, 1, sets::SRandMember;
    "smove", 4, WF, 1, 2, 1, sets::SMove;
    "sinter", -2, RS, 1, -1, 1, sets::SAlgebra;
    "sunion", -2, RS, 1, -1, 1, sets::SAlgebra;
    "sdiff", -2, RS, 1, -1, 1, sets::SAlgebra;
    "sinterstore", -3, WD, 1, -1, 1, sets::SAlgebra;
    "sunionstore", -3, WD, 1, -1, 1, sets::SAlgebra;
    "sdiffstore", -3, WD, 1, -1, 1, sets::SAlgebra;
    "sintercard", -3, RS, 0, 0, 0, sets::SInterCard;
    "sscan", -3, RS, 1, 1, 1, sets::SScan;
    "lpush", -3, &["write", "denyoom", "fast"], 1, 1, 1, lists::Push;
    "rpush", -3, &["write", "denyoom", "fast"], 1, 1, 1, lists::Push;
    "lpushx", -3, &["write", "denyoom", "fast"], 1, 1, 1, lists::Push;
    "rpushx", -3, &["write", "denyoom", "fast"], 1, 1, 1, lists::Push;
    "lpop", -2, WF, 1, 1, 1, lists::Pop;
    "rpop", -2, WF, 1, 1, 1, lists::Pop;
    "llen", 2, R, 1, 1, 1, lists::LLen;
    "lrange", 4, RS, 1, 1, 1, lists::LRange;
    "lindex", 3, RS, 1, 1, 1, lists::LIndex;
    "lset", 4, WD, 1, 1, 1, lists::LSet;
    "linsert", 5, WD, 1, 1, 1, lists::LInsert;
    "lrem", 4, WS, 1, 1, 1, lists::LRem;
    "ltrim", 4, WS, 1, 1, 1, lists::LTrim;
    "lpos", -3, RS, 1, 1, 1, lists::LPos;
    "lmove", 5, WD, 1, 2, 1, lists::LMove;
    "rpoplpush", 3, WD, 1, 2, 1, lists::LMove;
    "blpop", -3, B, 1, -2, 1, blocking::Block;
    "brpop", -3, B, 1, -2, 1, blocking::Block;
    "blmove", 6, &["write", "denyoom", "noscript", "blocking"], 1, 2, 1, blocking::Block;
    "brpoplpush", 4, &["write", "denyoom", "noscript", "blocking"], 1, 2, 1, blocking::Block;
    "object", -2, RS, 2, 2, 1, object::Object;
    "memory", -2, RS, 0, 0, 0, object::MemoryUsage;
    "multi", 1, TX, 0, 0, 0, transactions::Multi;
    "exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], 0, 0, 0, transactions::Exec;
    "discard", 1, TX, 0, 0, 0, transactions::Discard;
    "watch", -2, TX, 1, -1, 1, transactions::Watch;
    "unwatch", 1, TX, 0, 0, 0, transactions::Unwatch;
    "subscribe", -2, PS, 0, 0, 0, pubsub::Subscribe;
    "psubscribe", -2, PS, 0, 0, 0, pubsub::Subscribe;
    "unsubscribe", -1, PS, 0, 0, 0, pubsub::Unsubscribe;
    "punsubscribe", -1, PS, 0, 0, 0, pubsub::Unsubscribe;
    "publish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], 0, 0, 0, pubsub::Publish;
    "pubsub", -2, &["pubsub", "loading", "stale"], 0, 0, 0, pubsub::PubSub;
};

static BY_NAME: LazyLock<HashMap<&'static str, &'static Spec>> =
    LazyLock::new(|| TABLE.iter().map(|s| (s.name, s)).collect());

/// Looks a command up by name, ignoring ASCII case (lower-cased on the stack: no
/// allocation on the request path).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    for (l, &c) in lower.iter_mut().zip(name) {
        *l = c.to_ascii_lowercase();
    }
    BY_NAME.get(std::str::from_utf8(lower).ok()?).copied()
}

/// Redis's reply to a wrong argument count for `name` (lower case; `client|setname` for a
/// subcommand).
pub(crate) fn arity_error(name: &str) -> Reply {
    Reply::err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// Runs one request (non-empty `args`), checking name, arity and authentication first;
/// inside `MULTI`, queues it (`transactions`).
pub(crate) fn dispatch(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    if ctx.client.multi.queuing() {
        return transactions::queue(ctx, args);
    }
    let shared = ctx.shared;
    if args[0].eq_ignore_ascii_case(b"swapdb") {
        // No command may see the two databases half swapped (`databases`).
        let _gate = shared.dbs.shared().gate_exclusive();
        return run(ctx, args);
    }
    let _gate = shared.dbs.shared().gate_shared();
    run(ctx, args)
}

/// The table entry of a request, or Redis's reply for an unknown name, a wrong argument
/// count or a missing authentication.
fn check(ctx: &Ctx<'_>, args: &[Vec<u8>]) -> Result<&'static Spec, Reply> {
    let Some(spec) = lookup(&args[0]) else {
        let mut msg = format!(
            "ERR unknown command '{}', with args beginning with: ",
            String::from_utf8_lossy(&args[0])
        );
        for a in args[1..].iter() {
            msg.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
        }
        return Err(Reply::err(msg));
    };
    let n = args.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || (spec.arity < 0 && n < -spec.arity) {
        return Err(arity_error(spec.name));
    }
    if !ctx.client.authenticated && !spec.flags.contains(&"no_auth") {
        return Err(Reply::err("NOAUTH Authentication required."));
    }
    if ctx.client.proto == 2 && ctx.client.subs.count() > 0 && !SUBSCRIBED_MODE.contains(&spec.name)
    {
        return Err(subscribed_mode_error(spec, args));
    }
    Ok(spec)
}

/// Runs one request: checks it, parses and applies it, passes the read barrier, serves
/// the blocked clients it made ready (after a whole transaction instead, inside `EXEC`).
/// The caller holds the store's gate.
fn run(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let spec = match check(ctx, args) {
        Ok(spec) => spec,
        Err(reply) => return reply,
    };
    ctx.client.info.set_last_command(number(spec));
    if let Err(oom) = maxmemory::admit(ctx, spec, args) {
        return oom;
    }
    let reply = (spec.handler)(ctx, args);
    if ctx.shared.aof.is_some() && spec.flags.iter().any(|&f| f == "readonly" || f == "write") {
        // Its reply may show other clients' writes: it goes out once they are durable
        // (the store's module docs, "Durable reads").
        // The `*STORE` algebra reads keys its table entry does not list (Redis's
        // `movablekeys`): it passes every stripe, as keyless commands do.
        let listed = !matches!(spec.name, "zunionstore" | "zinterstore" | "zdiffstore");
        if spec.first_key > 0 && listed {
            ctx.store()
                .read_barrier(Some(&mut key_args(spec, args)), ctx.call);
        } else {
            ctx.store().read_barrier(None, ctx.call);
        }
    }
    if ctx.call.has_ready() && !ctx.client.multi.in_exec {
        blocking::serve_ready(ctx);
    }
    reply
}

/// The commands a RESP2 connection with subscriptions may run (Redis 7's list).
const SUBSCRIBED_MODE: [&str; 7] = [
    "subscribe",
    "psubscribe",
    "unsubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
];

/// Redis's reply to any other command in subscribed mode; it names the command as Redis's
/// `fullname` does (`config|get` for a subcommand).
fn subscribed_mode_error(spec: &Spec, args: &[Vec<u8>]) -> Reply {
    let mut name = spec.name.to_string();
    let containers = ["client", "config", "command", "object", "memory", "pubsub"];
    if containers.contains(&spec.name)
        && let Some(sub) = args.get(1)
    {
        name.push('|');
        name.push_str(&String::from_utf8_lossy(sub).to_ascii_lowercase());
    }
    Reply::err(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

/// The key arguments of a request, by its table entry's key positions.
fn key_args<'a>(spec: &Spec, args: &'a [Vec<u8>]) -> impl Iterator<Item = &'a [u8]> {
    let n = args.len() as i32;
    let last = if spec.last_key < 0 {
        n + spec.last_key
    } else {
        spec.last_key.min(n - 1)
    };
    (spec.first_key..=last)
        .step_by(spec.step.max(1) as usize)
        .map(|i| args[i as usize].as_slice())
}

/// Subcommand names `CLIENT LIST` may show as a client's last command.
const SUBCOMMANDS: [&str; 5] = [
    "client|setname",
    "client|getname",
    "client|id",
    "client|info",
    "client|list",
];

/// The number of `spec` (an entry of [`TABLE`]) as a client's last command: its index.
fn number(spec: &'static Spec) -> usize {
    (std::ptr::from_ref(spec) as usize - TABLE.as_ptr() as usize) / std::mem::size_of::<Spec>()
}

/// The number of subcommand `name` (one of [`SUBCOMMANDS`]) as a client's last command:
/// past the table's indexes.
pub(crate) fn subcommand_number(name: &'static str) -> usize {
    TABLE.len() + SUBCOMMANDS.iter().position(|&s| s == name).unwrap_or(4)
}

/// The name of last-command number `at` (`NULL`: none yet), as `CLIENT LIST` shows it.
pub(crate) fn command_name(at: usize) -> &'static str {
    TABLE.get(at).map(|s| s.name).unwrap_or_else(|| {
        at.checked_sub(TABLE.len())
            .and_then(|i| SUBCOMMANDS.get(i))
            .copied()
            .unwrap_or("NULL")
    })
}

/// Redis's reply for a value that is not an integer.
pub(crate) fn not_integer() -> Reply {
    Reply::err("ERR value is not an integer or out of range")
}

/// Redis's `WRONGTYPE` reply.
pub(crate) fn wrong_type() -> Reply {
    Reply::err("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// Redis's generic syntax error.
pub(crate) fn syntax_error() -> Reply {
    Reply::err("ERR syntax error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        for s in TABLE {
            assert_eq!(s.name, s.name.to_ascii_lowercase());
            assert!(s.arity != 0);
            assert!(lookup(s.name.to_ascii_uppercase().as_bytes()).is_some());
        }
        assert_eq!(BY_NAME.len(), TABLE.len(), "duplicate names");
    }
}
