//! The command table and dispatch: name → arity, flags, key positions and handler.
//!
//! One file per command family (`connection`, `strings`, `keys`, `expiry`, `server`). A
//! handler gets the whole argument vector (name first) after [`dispatch`] has checked the
//! name, the arity and authentication, in that order and with Redis's error replies.
//! Handlers parse their options before touching the store, so a syntax error never leaves
//! a partial write.

mod connection;
mod expiry;
mod keys;
mod server;
mod strings;
mod zsets;

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::resp::Reply;
use crate::state::{Client, Shared};
use crate::store::Call;

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

impl Ctx<'_> {
    /// When the command runs, Unix milliseconds.
    pub(crate) fn now(&self) -> u64 {
        self.call.now()
    }
}

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
const NA: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];

macro_rules! specs {
    ($($name:literal, $arity:expr, $flags:expr, $first:expr, $last:expr, $step:expr, $h:path;)*) => {
        &[$(Spec { name: $name, arity: $arity, flags: $flags, first_key: $first, last_key: $last, step: $step, handler: $h }),*]
    };
}

/// Every command the server knows.
pub(crate) static TABLE: &[Spec] = specs! {
    "ping", -1, C, 0, 0, 0, connection::ping;
    "echo", 2, C, 0, 0, 0, connection::echo;
    "hello", -1, NA, 0, 0, 0, connection::hello;
    "auth", -2, NA, 0, 0, 0, connection::auth;
    "select", 2, C, 0, 0, 0, connection::select;
    "client", -2, &["noscript", "loading", "stale"], 0, 0, 0, connection::client;
    "quit", -1, NA, 0, 0, 0, connection::quit;
    "reset", 1, NA, 0, 0, 0, connection::reset;
    "get", 2, R, 1, 1, 1, strings::get;
    "set", -3, &["write", "denyoom"], 1, 1, 1, strings::set;
    "setnx", 3, W, 1, 1, 1, strings::setnx;
    "getset", 3, W, 1, 1, 1, strings::getset;
    "getdel", 2, &["write", "fast"], 1, 1, 1, strings::getdel;
    "mget", -2, R, 1, -1, 1, strings::mget;
    "mset", -3, &["write", "denyoom"], 1, -1, 2, strings::mset;
    "msetnx", -3, &["write", "denyoom"], 1, -1, 2, strings::msetnx;
    "append", 3, W, 1, 1, 1, strings::append;
    "strlen", 2, R, 1, 1, 1, strings::strlen;
    "incr", 2, W, 1, 1, 1, strings::incr;
    "decr", 2, W, 1, 1, 1, strings::decr;
    "incrby", 3, W, 1, 1, 1, strings::incrby;
    "decrby", 3, W, 1, 1, 1, strings::decrby;
    "incrbyfloat", 3, W, 1, 1, 1, strings::incrbyfloat;
    "del", -2, WS, 1, -1, 1, keys::del;
    "unlink", -2, &["write", "fast"], 1, -1, 1, keys::del;
    "exists", -2, R, 1, -1, 1, keys::exists;
    "type", 2, R, 1, 1, 1, keys::type_;
    "rename", 3, WS, 1, 2, 1, keys::rename;
    "keys", 2, RS, 0, 0, 0, keys::keys;
    "scan", -2, RS, 0, 0, 0, keys::scan;
    "dbsize", 1, R, 0, 0, 0, keys::dbsize;
    "flushdb", -1, WS, 0, 0, 0, keys::flush;
    "flushall", -1, WS, 0, 0, 0, keys::flush;
    "expire", -3, &["write", "fast"], 1, 1, 1, expiry::expire;
    "pexpire", -3, &["write", "fast"], 1, 1, 1, expiry::expire;
    "expireat", -3, &["write", "fast"], 1, 1, 1, expiry::expire;
    "pexpireat", -3, &["write", "fast"], 1, 1, 1, expiry::expire;
    "ttl", 2, R, 1, 1, 1, expiry::ttl;
    "pttl", 2, R, 1, 1, 1, expiry::ttl;
    "persist", 2, &["write", "fast"], 1, 1, 1, expiry::persist;
    "command", -1, &["loading", "stale"], 0, 0, 0, server::command;
    "info", -1, &["loading", "stale"], 0, 0, 0, server::info;
    "config", -2, &["admin", "noscript", "loading", "stale"], 0, 0, 0, server::config;
    "shutdown", -1, &["admin", "noscript", "loading", "stale"], 0, 0, 0, server::shutdown;
    "time", 1, &["loading", "stale", "fast"], 0, 0, 0, server::time;
    "save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], 0, 0, 0, server::save;
    "bgrewriteaof", 1, &["admin", "noscript", "no_async_loading"], 0, 0, 0, server::bgrewriteaof;
    "zadd", -4, &["write", "denyoom", "fast"], 1, 1, 1, zsets::zadd;
    "zincrby", 4, &["write", "denyoom", "fast"], 1, 1, 1, zsets::zincrby;
    "zrem", -3, &["write", "fast"], 1, 1, 1, zsets::zrem;
    "zscore", 3, R, 1, 1, 1, zsets::zscore;
    "zmscore", -3, R, 1, 1, 1, zsets::zmscore;
    "zcard", 2, R, 1, 1, 1, zsets::zcard;
    "zcount", 4, R, 1, 1, 1, zsets::zcount;
    "zlexcount", 4, R, 1, 1, 1, zsets::zlexcount;
    "zrank", 3, R, 1, 1, 1, zsets::zrank;
    "zrevrank", 3, R, 1, 1, 1, zsets::zrank;
    "zrange", -4, RS, 1, 1, 1, zsets::zrange;
    "zrangebyscore", -4, RS, 1, 1, 1, zsets::zrange_by;
    "zrevrangebyscore", -4, RS, 1, 1, 1, zsets::zrange_by;
    "zrangebylex", -4, RS, 1, 1, 1, zsets::zrange_by;
    "zrevrangebylex", -4, RS, 1, 1, 1, zsets::zrange_by;
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

/// Runs one request (non-empty `args`), checking name, arity and authentication first.
pub(crate) fn dispatch(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let Some(spec) = lookup(&args[0]) else {
        let mut msg = format!(
            "ERR unknown command '{}', with args beginning with: ",
            String::from_utf8_lossy(&args[0])
        );
        for a in args[1..].iter() {
            msg.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
        }
        return Reply::err(msg);
    };
    let n = args.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || (spec.arity < 0 && n < -spec.arity) {
        return arity_error(spec.name);
    }
    if !ctx.client.authenticated && !spec.flags.contains(&"no_auth") {
        return Reply::err("NOAUTH Authentication required.");
    }
    ctx.client.info.set_last_command(number(spec));
    (spec.handler)(ctx, args)
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
