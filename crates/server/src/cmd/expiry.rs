//! Expiry commands: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with `NX`/`XX`/`GT`/`LT`),
//! `TTL`, `PTTL`, `PERSIST`. A deadline already past deletes the key, as in Redis.

use super::Ctx;
use super::strings::deadline;
use crate::resp::Reply;

pub(super) fn expire(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let (unit, absolute) = match name.as_str() {
        "expire" => (1000, false),
        "pexpire" => (1, false),
        "expireat" => (1000, true),
        _ => (1, true),
    };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        match &opt.to_ascii_uppercase()[..] {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                return Reply::err(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                ));
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::err("ERR GT and LT options at the same time are not compatible");
    }
    let when = match deadline(&args[2], unit, absolute, ctx.now(), &name, true) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let key = &args[1][..];
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let Some(mut e) = t.load(key) else {
            return Reply::Int(0);
        };
        let refused = match e.deadline {
            None => xx || gt,
            Some(cur) => nx || (gt && when <= cur as i64) || (lt && when >= cur as i64),
        };
        if refused {
            return Reply::Int(0);
        }
        if when <= t.now() as i64 {
            t.delete(key);
            return Reply::Int(1);
        }
        e.deadline = Some(when as u64);
        match t.store(key, &e) {
            Ok(()) => Reply::Int(1),
            Err(err) => Reply::err(err.message()),
        }
    })
}

pub(super) fn ttl(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let millis = args[0].eq_ignore_ascii_case(b"pttl");
    let now = ctx.now();
    match ctx.shared.store.read(&args[1], ctx.call, |_, d, _| d) {
        None => Reply::Int(-2),
        Some(None) => Reply::Int(-1),
        Some(Some(d)) => {
            let left = d.saturating_sub(now) as i64;
            Reply::Int(if millis { left } else { (left + 500) / 1000 })
        }
    }
}

pub(super) fn persist(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let key = &args[1][..];
    ctx.shared
        .store
        .write(&[key], ctx.call, |t| match t.load(key) {
            Some(mut e) if e.deadline.is_some() => {
                e.deadline = None;
                match t.store(key, &e) {
                    Ok(()) => Reply::Int(1),
                    Err(err) => Reply::err(err.message()),
                }
            }
            _ => Reply::Int(0),
        })
}
