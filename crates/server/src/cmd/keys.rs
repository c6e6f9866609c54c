//! Keyspace commands: `DEL`/`UNLINK`, `EXISTS`, `TYPE`, `RENAME`, `KEYS`, `SCAN`,
//! `DBSIZE`, `FLUSHDB`/`FLUSHALL`.
//!
//! On an ordered backend `KEYS` and `SCAN` walk the index in key order. A `SCAN` cursor is
//! a number, as every client expects, that names the last key returned (kept in the
//! server's cursor table): the next call resumes strictly after that key, so a full
//! iteration returns keys in ascending order, never twice, and never misses a key present
//! throughout.
//!
//! On Mercury (unordered, and its iteration cannot resume from a position) `KEYS` walks the
//! table, and `SCAN 0` lists every key of the table in one walk, keeps the list under the
//! cursor, and each call returns the next `COUNT` keys of it that are still live. Redis's
//! guarantees hold: a key present from the first call to the last is returned, no key is
//! returned twice, and a key added meanwhile may be missed. The cost is a copy of every
//! key per `SCAN` in progress and a first call that walks the whole table; at most four
//! such scans are kept (an older cursor is then `invalid cursor`).

use std::ops::{Bound, ControlFlow};

use super::{Ctx, not_integer, syntax_error};
use crate::glob;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::Store;

pub(super) fn del(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let mut n = 0;
    for key in &args[1..] {
        if ctx
            .shared
            .store
            .write(&[key], ctx.call, |t| t.load(key).is_some() && t.delete(key))
        {
            n += 1;
        }
    }
    Reply::Int(n)
}

pub(super) fn exists(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let n = args[1..]
        .iter()
        .filter(|k| ctx.shared.store.read(k, ctx.call, |_, _, _| ()).is_some())
        .count();
    Reply::Int(n as i64)
}

pub(super) fn type_(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let name = ctx
        .shared
        .store
        .read(&args[1], ctx.call, |kind, _, _| kind.name());
    Reply::Simple(name.unwrap_or("none"))
}

pub(super) fn rename(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let (src, dst) = (&args[1][..], &args[2][..]);
    ctx.shared.store.write(&[src, dst], ctx.call, |t| {
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
    if ctx.shared.store.flush(ctx.call) {
        Reply::OK
    } else {
        cannot_iterate(ctx, "FLUSHDB")
    }
}

fn cannot_iterate(ctx: &Ctx<'_>, cmd: &str) -> Reply {
    Reply::err(format!(
        "ERR {cmd} needs an index that can list its keys; '{}' cannot (start the server with --index wormhole)",
        ctx.shared.config.index
    ))
}

pub(super) fn keys(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let pattern = &args[1];
    let mut out = Vec::new();
    let now = ctx.now();
    let mut visit = |k: &[u8], v: &[u8]| {
        if Store::live(v, now).is_some() && glob::matches(pattern, k) {
            out.push(Reply::bulk(k));
        }
        ControlFlow::Continue(())
    };
    if let Some(ordered) = ctx.shared.store.ordered() {
        ordered.scan_prefix(&glob::literal_prefix(pattern), &mut visit);
    } else if !ctx.shared.store.walk(&mut visit) {
        return cannot_iterate(ctx, "KEYS");
    }
    Reply::Array(out)
}

pub(super) fn scan(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
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
    let Some(ordered) = ctx.shared.store.ordered() else {
        return scan_unordered(ctx, cursor, count, pattern.as_deref(), kind.as_deref());
    };
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
    let now = ctx.now();
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

/// `SCAN` over an unordered backend (see the module docs).
fn scan_unordered(
    ctx: &Ctx<'_>,
    cursor: u64,
    count: usize,
    pattern: Option<&[u8]>,
    kind: Option<&[u8]>,
) -> Reply {
    let shared = ctx.shared;
    let (keys, at) = if cursor == 0 {
        let mut keys = Vec::new();
        if !shared.store.walk(&mut |k, _| {
            keys.push(k.to_vec());
            ControlFlow::Continue(())
        }) {
            return cannot_iterate(ctx, "SCAN");
        }
        (std::sync::Arc::new(keys), 0)
    } else {
        match shared.listed.take(cursor) {
            Some(x) => x,
            None => return Reply::err("ERR invalid cursor"),
        }
    };
    let end = keys.len().min(at.saturating_add(count));
    let mut out = Vec::new();
    for k in &keys[at..end] {
        let Some(live) = shared.store.read(k, ctx.call, |kind, _, _| kind) else {
            continue;
        };
        let type_ok = kind.is_none_or(|t| t == live.name().as_bytes());
        let match_ok = pattern.is_none_or(|p| glob::matches(p, k));
        if type_ok && match_ok {
            out.push(Reply::bulk(&k[..]));
        }
    }
    let next = if end < keys.len() {
        shared.listed.put(&shared.cursors, keys, end)
    } else {
        0
    };
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(out)])
}
