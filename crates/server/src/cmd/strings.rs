//! String commands: `GET`, `SET` and its options, `SETNX`, `GETSET`, `GETDEL`, `MGET`,
//! `MSET`, `MSETNX`, `APPEND`, `STRLEN` and the counters (`INCR` … `INCRBYFLOAT`).
//!
//! Read-only commands read without locking; every write is one [`Store::write`]
//! (crate::store::Store::write) closure, so its read-modify-write is atomic per key.

use super::{Ctx, not_integer, syntax_error, wrong_type};
use crate::num::{format_f64, parse_f64, parse_i64};
use crate::resp::Reply;
use crate::store::{Entry, Kind};

fn write_err(e: crate::store::WriteError) -> Reply {
    Reply::err(e.message())
}

pub(super) fn get(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    ctx.shared
        .store
        .read(&args[1], ctx.call, |kind, _, payload| match kind {
            Kind::String => Reply::bulk(payload),
            _ => wrong_type(),
        })
        .unwrap_or(Reply::Nil)
}

pub(super) fn strlen(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    ctx.shared
        .store
        .read(&args[1], ctx.call, |kind, _, payload| match kind {
            Kind::String => Reply::Int(payload.len() as i64),
            _ => wrong_type(),
        })
        .unwrap_or(Reply::Int(0))
}

pub(super) fn mget(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let keys: Vec<&[u8]> = args[1..].iter().map(Vec::as_slice).collect();
    let mut out = vec![Reply::Nil; keys.len()];
    ctx.shared.store.read_many(&keys, ctx.call, &mut |i, v| {
        if let Some((Kind::String, payload)) = v {
            out[i] = Reply::bulk(payload);
        }
    });
    Reply::Array(out)
}

/// When a `SET` expires: none, keep the old deadline, or at this Unix millisecond.
enum Ttl {
    Clear,
    Keep,
    At(u64),
}

/// Converts an expiry argument to a deadline: `unit_ms` per unit, relative to `now` unless
/// `absolute`. `Err` is the reply (`cmd` names the command in the message).
pub(super) fn deadline(
    arg: &[u8],
    unit_ms: i64,
    absolute: bool,
    now: u64,
    cmd: &str,
    allow_nonpositive: bool,
) -> Result<i64, Reply> {
    let v = parse_i64(arg).ok_or_else(not_integer)?;
    let invalid = || Reply::err(format!("ERR invalid expire time in '{cmd}' command"));
    if v <= 0 && !allow_nonpositive {
        return Err(invalid());
    }
    let ms = v.checked_mul(unit_ms).ok_or_else(invalid)?;
    if absolute {
        Ok(ms)
    } else {
        ms.checked_add(now as i64).ok_or_else(invalid)
    }
}

pub(super) fn set(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let (mut nx, mut xx, mut get, mut ttl) = (false, false, false, Ttl::Clear);
    let mut expiry: Option<(&[u8], i64, bool)> = None;
    let mut i = 3;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        let next = args.get(i + 1);
        // As Redis: an option may repeat (the last value wins), but two different expiry
        // options, or one with KEEPTTL, conflict.
        let unit = if opt.starts_with(b"E") { 1000 } else { 1 };
        let absolute = opt.ends_with(b"AT");
        let same_expiry = expiry.is_none_or(|(_, u, a)| (u, a) == (unit, absolute));
        match (&opt[..], next) {
            (b"NX", _) if !xx => nx = true,
            (b"XX", _) if !nx => xx = true,
            (b"GET", _) => get = true,
            (b"KEEPTTL", _) if expiry.is_none() => ttl = Ttl::Keep,
            (b"EX" | b"PX" | b"EXAT" | b"PXAT", Some(v))
                if matches!(ttl, Ttl::Clear) && same_expiry =>
            {
                expiry = Some((v, unit, absolute));
                i += 1;
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    if let Some((v, unit, absolute)) = expiry {
        match deadline(v, unit, absolute, ctx.now(), "set", false) {
            Ok(d) => ttl = Ttl::At(d as u64),
            Err(r) => return r,
        }
    }
    let (key, value) = (&args[1][..], &args[2]);
    if !(nx || xx || get || matches!(ttl, Ttl::Keep)) {
        // The plain SET needs nothing of the old value: one lookup less.
        let deadline = match ttl {
            Ttl::At(d) => Some(d),
            _ => None,
        };
        return ctx.shared.store.write(&[key], ctx.call, |t| {
            match t.store_string(key, deadline, value) {
                Ok(()) => Reply::OK,
                Err(e) => write_err(e),
            }
        });
    }
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let old = t.load(key);
        if get && old.as_ref().is_some_and(|e| e.kind != Kind::String) {
            return wrong_type();
        }
        let old_reply = || match &old {
            Some(e) => Reply::bulk(&e.payload),
            None => Reply::Nil,
        };
        if (nx && old.is_some()) || (xx && old.is_none()) {
            return if get { old_reply() } else { Reply::Nil };
        }
        let deadline = match ttl {
            Ttl::Clear => None,
            Ttl::Keep => old.as_ref().and_then(|e| e.deadline),
            Ttl::At(d) => Some(d),
        };
        let entry = Entry {
            kind: Kind::String,
            deadline,
            payload: value.clone(),
        };
        match t.store(key, &entry) {
            Ok(()) if get => old_reply(),
            Ok(()) => Reply::OK,
            Err(e) => write_err(e),
        }
    })
}

pub(super) fn setnx(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let key = &args[1][..];
    ctx.shared.store.write(&[key], ctx.call, |t| {
        if t.load(key).is_some() {
            return Reply::Int(0);
        }
        match t.store(key, &Entry::string(args[2].clone())) {
            Ok(()) => Reply::Int(1),
            Err(e) => write_err(e),
        }
    })
}

pub(super) fn getset(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let key = &args[1][..];
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let old = t.load(key);
        match &old {
            Some(e) if e.kind != Kind::String => return wrong_type(),
            _ => {}
        }
        if let Err(e) = t.store(key, &Entry::string(args[2].clone())) {
            return write_err(e);
        }
        old.map_or(Reply::Nil, |e| Reply::Bulk(e.payload))
    })
}

pub(super) fn getdel(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let key = &args[1][..];
    ctx.shared
        .store
        .write(&[key], ctx.call, |t| match t.load(key) {
            None => Reply::Nil,
            Some(e) if e.kind != Kind::String => wrong_type(),
            Some(e) => {
                t.delete(key);
                Reply::Bulk(e.payload)
            }
        })
}

fn pairs(args: &[Vec<u8>]) -> Option<Vec<(&[u8], &[u8])>> {
    if args.len().is_multiple_of(2) {
        return None;
    }
    Some(
        args[1..]
            .chunks(2)
            .map(|p| (&p[0][..], &p[1][..]))
            .collect(),
    )
}

/// Checks every pair against the limits first, so that a multi-key write is all or nothing.
fn check_pairs(pairs: &[(&[u8], &[u8])]) -> Result<(), Reply> {
    for (k, v) in pairs {
        if k.len() > crate::store::MAX_KEY {
            return Err(write_err(crate::store::WriteError::KeyTooLong));
        }
        if v.len() + 9 > orrery::api::MAX_VALUE_LEN {
            return Err(write_err(crate::store::WriteError::ValueTooLong));
        }
    }
    Ok(())
}

fn mset_generic(ctx: &mut Ctx<'_>, args: &[Vec<u8>], nx: bool) -> Reply {
    let name = if nx { "msetnx" } else { "mset" };
    let Some(pairs) = pairs(args) else {
        return super::arity_error(name);
    };
    if let Err(r) = check_pairs(&pairs) {
        return r;
    }
    let keys: Vec<&[u8]> = pairs.iter().map(|p| p.0).collect();
    ctx.shared.store.write(&keys, ctx.call, |t| {
        if nx && keys.iter().any(|k| t.load(k).is_some()) {
            return Reply::Int(0);
        }
        for (k, v) in &pairs {
            if let Err(e) = t.store(k, &Entry::string(v.to_vec())) {
                return write_err(e);
            }
        }
        if nx { Reply::Int(1) } else { Reply::OK }
    })
}

pub(super) fn mset(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    mset_generic(ctx, args, false)
}

pub(super) fn msetnx(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    mset_generic(ctx, args, true)
}

pub(super) fn append(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let key = &args[1][..];
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let mut e = match t.load(key) {
            Some(e) if e.kind != Kind::String => return wrong_type(),
            Some(e) => e,
            None => Entry::string(Vec::new()),
        };
        e.payload.extend_from_slice(&args[2]);
        match t.store(key, &e) {
            Ok(()) => Reply::Int(e.payload.len() as i64),
            Err(err) => write_err(err),
        }
    })
}

fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Reply {
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let mut e = match t.load(key) {
            Some(e) if e.kind != Kind::String => return wrong_type(),
            Some(e) => e,
            None => Entry::string(b"0".to_vec()),
        };
        let Some(old) = parse_i64(&e.payload) else {
            return not_integer();
        };
        let Some(new) = old.checked_add(delta) else {
            return Reply::err("ERR increment or decrement would overflow");
        };
        e.payload = new.to_string().into_bytes();
        match t.store(key, &e) {
            Ok(()) => Reply::Int(new),
            Err(err) => write_err(err),
        }
    })
}

pub(super) fn incr(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    incr_by(ctx, &args[1], 1)
}

pub(super) fn decr(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    incr_by(ctx, &args[1], -1)
}

pub(super) fn incrby(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    match parse_i64(&args[2]) {
        Some(d) => incr_by(ctx, &args[1], d),
        None => not_integer(),
    }
}

pub(super) fn decrby(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    match parse_i64(&args[2]) {
        Some(i64::MIN) => Reply::err("ERR decrement would overflow"),
        Some(d) => incr_by(ctx, &args[1], -d),
        None => not_integer(),
    }
}

pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let not_float = || Reply::err("ERR value is not a valid float");
    let Some(delta) = parse_f64(&args[2]) else {
        return not_float();
    };
    let key = &args[1][..];
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let mut e = match t.load(key) {
            Some(e) if e.kind != Kind::String => return wrong_type(),
            Some(e) => e,
            None => Entry::string(b"0".to_vec()),
        };
        let Some(old) = parse_f64(&e.payload) else {
            return not_float();
        };
        let new = old + delta;
        if !new.is_finite() {
            return Reply::err("ERR increment would produce NaN or Infinity");
        }
        e.payload = format_f64(new).into_bytes();
        match t.store(key, &e) {
            Ok(()) => Reply::Bulk(e.payload),
            Err(err) => write_err(err),
        }
    })
}
