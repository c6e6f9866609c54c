//! Expiry commands: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with `NX`/`XX`/`GT`/`LT`),
//! `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`, `PERSIST`. A deadline already past deletes the key, as in Redis.

use super::strings::ExpireTime;
use super::{Command, Ctx};
use crate::resp::Reply;

/// `EXPIRE key seconds`, `PEXPIRE key ms`, `EXPIREAT key unix-s`, `PEXPIREAT key unix-ms`,
/// each with `NX`, `XX`, `GT` or `LT`.
pub(super) struct Expire<'a> {
    key: &'a [u8],
    time: ExpireTime,
    /// `NX`: only when the key has no deadline.
    nx: bool,
    /// `XX`: only when it has one.
    xx: bool,
    /// `GT`: only when the new deadline is later.
    gt: bool,
    /// `LT`: only when the new deadline is earlier.
    lt: bool,
}

impl<'a> Command<'a> for Expire<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = &args[0];
        let (cmd, unit, absolute) = if name.eq_ignore_ascii_case(b"expire") {
            ("expire", 1000, false)
        } else if name.eq_ignore_ascii_case(b"pexpire") {
            ("pexpire", 1, false)
        } else if name.eq_ignore_ascii_case(b"expireat") {
            ("expireat", 1000, true)
        } else {
            ("pexpireat", 1, true)
        };
        let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
        for opt in &args[3..] {
            match &opt.to_ascii_uppercase()[..] {
                b"NX" => nx = true,
                b"XX" => xx = true,
                b"GT" => gt = true,
                b"LT" => lt = true,
                _ => {
                    return Err(Reply::err(format!(
                        "ERR Unsupported option {}",
                        String::from_utf8_lossy(opt)
                    )));
                }
            }
        }
        if nx && (xx || gt || lt) {
            return Err(Reply::err(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if gt && lt {
            return Err(Reply::err(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(Expire {
            key: &args[1],
            time: ExpireTime::parse(&args[2], unit, absolute, cmd, true)?,
            nx,
            xx,
            gt,
            lt,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let when = match self.time.deadline(ctx.now()) {
            Ok(d) => d,
            Err(r) => return r,
        };
        let Expire {
            key,
            nx,
            xx,
            gt,
            lt,
            ..
        } = self;
        ctx.store().write(&[key], ctx.call, |t| {
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
}

/// `TTL key` (seconds, rounded) and `PTTL key` (milliseconds); `EXPIRETIME key` and
/// `PEXPIRETIME key`, the same for the absolute deadline (Unix time).
pub(super) struct Ttl<'a> {
    key: &'a [u8],
    millis: bool,
    absolute: bool,
}

impl<'a> Command<'a> for Ttl<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = &args[0];
        Ok(Ttl {
            key: &args[1],
            millis: name.eq_ignore_ascii_case(b"pttl") || name.eq_ignore_ascii_case(b"pexpiretime"),
            absolute: name.len() > 4,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let now = ctx.now();
        match ctx.store().read(self.key, ctx.call, |_, d, _| d) {
            None => Reply::Int(-2),
            Some(None) => Reply::Int(-1),
            Some(Some(d)) => {
                let left = if self.absolute {
                    d as i64
                } else {
                    d.saturating_sub(now) as i64
                };
                Reply::Int(if self.millis {
                    left
                } else {
                    (left + 500) / 1000
                })
            }
        }
    }
}

/// `PERSIST key`.
pub(super) struct Persist<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for Persist<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Persist { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| match t.load(key) {
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
}
