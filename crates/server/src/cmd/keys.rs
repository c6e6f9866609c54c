//! Keyspace commands: `DEL`/`UNLINK`, `EXISTS`, `TYPE`, `RENAME`, `KEYS`, `SCAN`,
//! `DBSIZE`, `FLUSHDB`/`FLUSHALL`.
//!
//! `KEYS` and `SCAN` walk the backend in key order, so they need an ordered index; on an
//! unordered one they answer a clear error. A `SCAN` cursor is a number, as every client
//! expects, that names the last key returned (kept in the server's cursor table): the next
//! call resumes strictly after that key, so a full iteration returns keys in ascending
//! order, never twice, and never misses a key present throughout.

use std::ops::{Bound, ControlFlow};

use super::{Ctx, not_integer, parse_i64, syntax_error};
use crate::glob;
use crate::resp::Reply;
use crate::store::Store;

pub(super) fn del(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let mut n = 0;
    for key in &args[1..] {
        if ctx
            .shared
            .store
            .write(&[key], ctx.now, |t| t.load(key).is_some() && t.delete(key))
        {
            n += 1;
        }
    }
    Reply::Int(n)
}

pub(super) fn exists(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let n = args[1..]
        .iter()
        .filter(|k| ctx.shared.store.read(k, ctx.now, |_, _, _| ()).is_some())
        .count();
    Reply::Int(n as i64)
}

pub(super) fn type_(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let name = ctx
        .shared
        .store
        .read(&args[1], ctx.now, |kind, _, _| kind.name());
    Reply::Simple(name.unwrap_or("none"))
}

pub(super) fn rename(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let (src, dst) = (&args[1][..], &args[2][..]);
    ctx.shared.store.write(&[src, dst], ctx.now, |t| {
        let Some(e) = t.load(src) else {
            return Reply::err("ERR no such key");
        };
        if src == dst {
            return Reply::OK;
        }
        if let Err(err) = t.store(dst, &e) {
            return Reply::err(err.message());
        }
        t.detach(src);
        Reply::OK
    })
}

pub(super) fn dbsize(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Reply {
    Reply::Int(ctx.shared.store.kv().len() as i64)
}

pub(super) fn flush(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    match args.get(1).map(|a| a.to_ascii_uppercase()) {
        None => {}
        Some(m) if args.len() == 2 && (m == b"ASYNC" || m == b"SYNC") => {}
        Some(_) => return syntax_error(),
    }
    if ctx.shared.store.flush(ctx.now) {
        Reply::OK
    } else {
        needs_order(ctx, "FLUSHDB")
    }
}

fn needs_order(ctx: &Ctx<'_>, cmd: &str) -> Reply {
    Reply::err(format!(
        "ERR {cmd} needs an ordered index; this server runs the unordered index '{}' (start it with --index wormhole)",
        ctx.shared.config.index
    ))
}

pub(super) fn keys(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let Some(ordered) = ctx.shared.store.ordered() else {
        return needs_order(ctx, "KEYS");
    };
    let pattern = &args[1];
    let prefix = glob::literal_prefix(pattern);
    let mut out = Vec::new();
    let now = ctx.now;
    ordered.scan_prefix(&prefix, &mut |k, v| {
        if Store::live(v, now).is_some() && glob::matches(pattern, k) {
            out.push(Reply::bulk(k));
        }
        ControlFlow::Continue(())
    });
    Reply::Array(out)
}

pub(super) fn scan(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let Some(ordered) = ctx.shared.store.ordered() else {
        return needs_order(ctx, "SCAN");
    };
    let Some(cursor) = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        return Reply::err("ERR invalid cursor");
    };
    let (mut pattern, mut count, mut kind) = (None, 10usize, None);
    let mut i = 2;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        let Some(v) = args.get(i + 1) else {
            return syntax_error();
        };
        match &opt[..] {
            b"MATCH" => pattern = Some(v.clone()),
            b"COUNT" => match parse_i64(v) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return syntax_error(),
                None => return not_integer(),
            },
            b"TYPE" => kind = Some(v.to_ascii_lowercase()),
            _ => return syntax_error(),
        }
        i += 2;
    }
    let start = if cursor == 0 {
        None
    } else {
        match ctx.shared.cursors.get(cursor) {
            Some(k) => Some(k),
            None => return Reply::err("ERR invalid cursor"),
        }
    };
    let bound = start.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let (mut visited, mut last, mut out) = (0usize, None, Vec::new());
    let now = ctx.now;
    ordered.scan(bound, &mut |k, v| {
        visited += 1;
        if let Some(live) = Store::live(v, now) {
            let type_ok = kind.as_deref().is_none_or(|t| t == live.name().as_bytes());
            let match_ok = pattern.as_deref().is_none_or(|p| glob::matches(p, k));
            if type_ok && match_ok {
                out.push(Reply::bulk(k));
            }
        }
        if visited >= count {
            last = Some(k.to_vec());
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let next = match last {
        Some(k) => ctx.shared.cursors.put(k),
        None => 0,
    };
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(out)])
}
