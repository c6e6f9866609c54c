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
use crate::server::{Client, Shared};

/// What a handler sees: the server's shared state, the calling client, the time.
pub(crate) struct Ctx<'a> {
    /// State shared by every connection.
    pub(crate) shared: &'a Shared,
    /// The calling connection's state.
    pub(crate) client: &'a mut Client,
    /// When the command runs, Unix milliseconds.
    pub(crate) now: u64,
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
    ctx.client.info.set_last_command(spec);
    (spec.handler)(ctx, args)
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

/// Parses an integer exactly as Redis's `string2ll`: optional `-`, no `+`, no spaces, no
/// leading zeros, within `i64`.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        let d = i64::from(d - b'0');
        n = n.checked_mul(10)?;
        n = if neg {
            n.checked_sub(d)?
        } else {
            n.checked_add(d)?
        };
    }
    Some(n)
}

/// Parses a float as Redis does for `INCRBYFLOAT` (no spaces, no NaN).
pub(crate) fn parse_f64(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty()
        || s.starts_with(|c: char| c.is_ascii_whitespace())
        || s.ends_with(|c: char| c.is_ascii_whitespace())
    {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// Formats a score as Redis 7.0 replies it: an integer when the value is one (within
/// ±2^52), else C's `%.17g`; `inf`, `-inf`.
pub(crate) fn format_score(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if v > -4_503_599_627_370_495.0 && v < 4_503_599_627_370_496.0 && v == v.trunc() {
        return format!("{}", v as i64);
    }
    // %.17g: 17 significant digits, scientific when the exponent is < -4 or >= 17,
    // trailing zeros removed.
    let sci = format!("{v:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("`e` formatting has an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{v:.*}", (16 - exp) as usize))
    }
}

/// Formats a float as Redis's human-readable form (`INCRBYFLOAT`): no exponent, no
/// trailing zeros.
pub(crate) fn format_f64(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_like_redis() {
        for (s, v) in [("0", Some(0)), ("-1", Some(-1)), ("123", Some(123))] {
            assert_eq!(parse_i64(s.as_bytes()), v, "{s}");
        }
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for s in [
            "",
            "+1",
            " 1",
            "1 ",
            "01",
            "-0",
            "-",
            "9223372036854775808",
            "1.0",
            "abc",
        ] {
            assert_eq!(parse_i64(s.as_bytes()), None, "{s:?}");
        }
    }

    #[test]
    fn floats_parse_and_print_like_redis() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(format_f64(10.5 + 0.1), "10.6");
        assert_eq!(format_f64(3.0), "3");
        assert_eq!(format_f64(-0.0), "0");
        assert_eq!(format_f64(5e20), "500000000000000000000");
        for (v, s) in [
            (0.1, "0.10000000000000001"),
            (2.0, "2"),
            (1e300, "1.0000000000000001e+300"),
            (-1.5, "-1.5"),
            (1e-5, "1.0000000000000001e-05"),
            (123456.789, "123456.789"),
            (f64::NEG_INFINITY, "-inf"),
            (4503599627370496.0, "4503599627370496"),
        ] {
            assert_eq!(format_score(v), s, "{v}");
        }
    }

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
