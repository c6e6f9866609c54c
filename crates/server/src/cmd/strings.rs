//! String commands: `GET`, `SET` and its options, `SETNX`, `SETEX`, `PSETEX`, `GETSET`,
//! `GETDEL`, `GETEX`, `MGET`, `MSET`, `MSETNX`, `APPEND`, `STRLEN`, `GETRANGE`/`SUBSTR`,
//! `SETRANGE` and the counters (`INCR` … `INCRBYFLOAT`).
//!
//! `SETRANGE` and `APPEND` check the length they would produce before building it: past
//! Redis's `proto-max-bulk-len` (512 MB by default) with Redis's error, so a huge offset
//! never allocates. A string longer than the index's values (1 MiB) is stored out of line
//! by the store (`crate::store`, `large`); commands see its bytes like any other.
//!
//! Read-only commands read without locking; every write is one
//! [`Store::write`](crate::store::Store::write) closure, so its read-modify-write is
//! atomic per key.

use std::sync::atomic::Ordering;

use super::{Command, Ctx, not_integer, syntax_error, wrong_type};
use crate::num::{format_f64, parse_f64, parse_i64};
use crate::resp::Reply;
use crate::store::{Entry, Kind, MAX_KEY, WriteError};

/// Redis's reply to `APPEND` or `SETRANGE` past `proto-max-bulk-len`.
const TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

fn write_err(e: WriteError) -> Reply {
    Reply::err(e.message())
}

/// `GET key`.
pub(super) struct Get<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for Get<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Get { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.store()
            .read(self.key, ctx.call, |kind, _, payload| match kind {
                Kind::String => Reply::bulk(payload),
                _ => wrong_type(),
            })
            .unwrap_or(Reply::Nil)
    }
}

/// `STRLEN key`.
pub(super) struct StrLen<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for StrLen<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(StrLen { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.store()
            .read(self.key, ctx.call, |kind, _, payload| match kind {
                Kind::String => Reply::Int(payload.len() as i64),
                _ => wrong_type(),
            })
            .unwrap_or(Reply::Int(0))
    }
}

/// `MGET key …`.
pub(super) struct MGet<'a> {
    keys: Vec<&'a [u8]>,
}

impl<'a> Command<'a> for MGet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(MGet {
            keys: args[1..].iter().map(Vec::as_slice).collect(),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let mut out = vec![Reply::Nil; self.keys.len()];
        ctx.store().read_many(&self.keys, ctx.call, &mut |i, v| {
            if let Some((Kind::String, payload)) = v {
                out[i] = Reply::bulk(payload);
            }
        });
        Reply::Array(out)
    }
}

/// An expiry time as a command gave it, checked: milliseconds, relative to the time the
/// command runs unless absolute.
#[derive(Clone, Copy)]
pub(super) struct ExpireTime {
    ms: i64,
    absolute: bool,
    /// The command's name, for the error reply.
    cmd: &'static str,
}

impl ExpireTime {
    /// Parses an expiry argument in units of `unit_ms`; `Err` is the reply (`cmd` names
    /// the command in the message; a time ≤ 0 is refused unless `allow_nonpositive`).
    pub(super) fn parse(
        arg: &[u8],
        unit_ms: i64,
        absolute: bool,
        cmd: &'static str,
        allow_nonpositive: bool,
    ) -> Result<ExpireTime, Reply> {
        let v = parse_i64(arg).ok_or_else(not_integer)?;
        let t = ExpireTime {
            ms: 0,
            absolute,
            cmd,
        };
        if v <= 0 && !allow_nonpositive {
            return Err(t.invalid());
        }
        let ms = v.checked_mul(unit_ms).ok_or_else(|| t.invalid())?;
        Ok(ExpireTime { ms, ..t })
    }

    fn invalid(self) -> Reply {
        Reply::err(format!("ERR invalid expire time in '{}' command", self.cmd))
    }

    /// The deadline in Unix milliseconds for a command running at `now`; `Err` when it
    /// overflows (Redis's reply).
    pub(super) fn deadline(self, now: u64) -> Result<i64, Reply> {
        if self.absolute {
            Ok(self.ms)
        } else {
            self.ms
                .checked_add(now as i64)
                .ok_or_else(|| self.invalid())
        }
    }
}

/// What a `SET` does to the key's deadline.
enum Ttl {
    /// None (the default).
    Clear,
    /// Keep the old one (`KEEPTTL`).
    Keep,
    /// This one (`EX`, `PX`, `EXAT`, `PXAT`).
    At(ExpireTime),
}

/// `SET`'s condition on the key's existence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    Always,
    /// `NX`: only when absent.
    Absent,
    /// `XX`: only when present.
    Present,
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
pub(super) struct Set<'a> {
    key: &'a [u8],
    value: &'a [u8],
    cond: Cond,
    get: bool,
    ttl: Ttl,
}

impl<'a> Command<'a> for Set<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (mut cond, mut get, mut keep) = (Cond::Always, false, false);
        let mut expiry: Option<(&[u8], i64, bool)> = None;
        let mut i = 3;
        while i < args.len() {
            let opt = args[i].to_ascii_uppercase();
            let next = args.get(i + 1);
            // As Redis: an option may repeat (the last value wins), but two different
            // expiry options, or one with KEEPTTL, conflict.
            let unit = if opt.starts_with(b"E") { 1000 } else { 1 };
            let absolute = opt.ends_with(b"AT");
            let same_expiry = expiry.is_none_or(|(_, u, a)| (u, a) == (unit, absolute));
            match (&opt[..], next) {
                (b"NX", _) if cond != Cond::Present => cond = Cond::Absent,
                (b"XX", _) if cond != Cond::Absent => cond = Cond::Present,
                (b"GET", _) => get = true,
                (b"KEEPTTL", _) if expiry.is_none() => keep = true,
                (b"EX" | b"PX" | b"EXAT" | b"PXAT", Some(v)) if !keep && same_expiry => {
                    expiry = Some((v, unit, absolute));
                    i += 1;
                }
                _ => return Err(syntax_error()),
            }
            i += 1;
        }
        let ttl = match expiry {
            Some((v, unit, absolute)) => {
                Ttl::At(ExpireTime::parse(v, unit, absolute, "set", false)?)
            }
            None if keep => Ttl::Keep,
            None => Ttl::Clear,
        };
        Ok(Set {
            key: &args[1],
            value: &args[2],
            cond,
            get,
            ttl,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let deadline = match self.ttl {
            Ttl::At(t) => match t.deadline(ctx.now()) {
                Ok(d) => Some(d as u64),
                Err(r) => return r,
            },
            _ => None,
        };
        let Set {
            key,
            value,
            cond,
            get,
            ttl,
        } = self;
        let keep = matches!(ttl, Ttl::Keep);
        if cond == Cond::Always && !get && !keep {
            // The plain SET needs nothing of the old value: one lookup less.
            return ctx.store().write(&[key], ctx.call, |t| {
                match t.store_string(key, deadline, value) {
                    Ok(()) => Reply::OK,
                    Err(e) => write_err(e),
                }
            });
        }
        ctx.store().write(&[key], ctx.call, |t| {
            let old = t.load(key);
            if get && old.as_ref().is_some_and(|e| e.kind != Kind::String) {
                return wrong_type();
            }
            let old_reply = || match &old {
                Some(e) => Reply::bulk(&e.payload),
                None => Reply::Nil,
            };
            if (cond == Cond::Absent && old.is_some()) || (cond == Cond::Present && old.is_none()) {
                return if get { old_reply() } else { Reply::Nil };
            }
            let deadline = if keep {
                old.as_ref().and_then(|e| e.deadline)
            } else {
                deadline
            };
            let entry = Entry {
                deadline,
                ..Entry::string(value.to_vec())
            };
            match t.store(key, &entry) {
                Ok(()) if get => old_reply(),
                Ok(()) => Reply::OK,
                Err(e) => write_err(e),
            }
        })
    }
}

/// `SETNX key value`.
pub(super) struct SetNx<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Command<'a> for SetNx<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(SetNx {
            key: &args[1],
            value: &args[2],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| {
            if t.load(key).is_some() {
                return Reply::Int(0);
            }
            match t.store(key, &Entry::string(self.value.to_vec())) {
                Ok(()) => Reply::Int(1),
                Err(e) => write_err(e),
            }
        })
    }
}

/// `GETSET key value`.
pub(super) struct GetSet<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Command<'a> for GetSet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(GetSet {
            key: &args[1],
            value: &args[2],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| {
            let old = t.load(key);
            match &old {
                Some(e) if e.kind != Kind::String => return wrong_type(),
                _ => {}
            }
            if let Err(e) = t.store(key, &Entry::string(self.value.to_vec())) {
                return write_err(e);
            }
            old.map_or(Reply::Nil, |e| Reply::Bulk(e.payload))
        })
    }
}

/// `GETDEL key`.
pub(super) struct GetDel<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for GetDel<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(GetDel { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| match t.load(key) {
            None => Reply::Nil,
            Some(e) if e.kind != Kind::String => wrong_type(),
            Some(e) => {
                t.delete(key);
                Reply::Bulk(e.payload)
            }
        })
    }
}

/// `MSET key value …` and `MSETNX key value …` (`nx`).
pub(super) struct MSet<'a> {
    pairs: Vec<(&'a [u8], &'a [u8])>,
    nx: bool,
}

impl<'a> Command<'a> for MSet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let nx = args[0].eq_ignore_ascii_case(b"msetnx");
        if args.len().is_multiple_of(2) {
            return Err(super::arity_error(if nx { "msetnx" } else { "mset" }));
        }
        let pairs: Vec<(&[u8], &[u8])> = args[1..]
            .chunks(2)
            .map(|p| (&p[0][..], &p[1][..]))
            .collect();
        // Every pair is checked against the limits first, so that a multi-key write is
        // all or nothing.
        for (k, _) in &pairs {
            if k.len() > MAX_KEY {
                return Err(write_err(WriteError::KeyTooLong));
            }
        }
        Ok(MSet { pairs, nx })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let MSet { pairs, nx } = self;
        let keys: Vec<&[u8]> = pairs.iter().map(|p| p.0).collect();
        ctx.store().write(&keys, ctx.call, |t| {
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
}

/// `APPEND key value`.
pub(super) struct Append<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Command<'a> for Append<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Append {
            key: &args[1],
            value: &args[2],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        let max_bulk = ctx.shared.live.max_bulk_len.load(Ordering::Relaxed);
        ctx.store().write(&[key], ctx.call, |t| {
            let mut e = match t.load(key) {
                Some(e) if e.kind != Kind::String => return wrong_type(),
                Some(e) => e,
                None => Entry::string(Vec::new()),
            };
            if e.payload.len() + self.value.len() > max_bulk {
                return Reply::err(TOO_LONG);
            }
            e.payload.extend_from_slice(self.value);
            match t.store(key, &e) {
                Ok(()) => Reply::Int(e.payload.len() as i64),
                Err(err) => write_err(err),
            }
        })
    }
}

/// `INCR`, `DECR`, `INCRBY`, `DECRBY`: the key's integer plus `delta`.
pub(super) struct IncrBy<'a> {
    key: &'a [u8],
    delta: i64,
}

impl<'a> Command<'a> for IncrBy<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = &args[0];
        let delta = if name.eq_ignore_ascii_case(b"incr") {
            1
        } else if name.eq_ignore_ascii_case(b"decr") {
            -1
        } else if name.eq_ignore_ascii_case(b"incrby") {
            parse_i64(&args[2]).ok_or_else(not_integer)?
        } else {
            match parse_i64(&args[2]) {
                Some(i64::MIN) => return Err(Reply::err("ERR decrement would overflow")),
                Some(d) => -d,
                None => return Err(not_integer()),
            }
        };
        Ok(IncrBy {
            key: &args[1],
            delta,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let IncrBy { key, delta } = self;
        ctx.store().write(&[key], ctx.call, |t| {
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
}

fn not_float() -> Reply {
    Reply::err("ERR value is not a valid float")
}

/// `INCRBYFLOAT key delta`.
pub(super) struct IncrByFloat<'a> {
    key: &'a [u8],
    delta: f64,
}

impl<'a> Command<'a> for IncrByFloat<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(IncrByFloat {
            key: &args[1],
            delta: parse_f64(&args[2]).ok_or_else(not_float)?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let IncrByFloat { key, delta } = self;
        ctx.store().write(&[key], ctx.call, |t| {
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
}

/// `SETEX key seconds value` and `PSETEX key milliseconds value`.
pub(super) struct SetEx<'a> {
    key: &'a [u8],
    time: ExpireTime,
    value: &'a [u8],
}

impl<'a> Command<'a> for SetEx<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (cmd, unit) = if args[0].eq_ignore_ascii_case(b"setex") {
            ("setex", 1000)
        } else {
            ("psetex", 1)
        };
        Ok(SetEx {
            key: &args[1],
            time: ExpireTime::parse(&args[2], unit, false, cmd, false)?,
            value: &args[3],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let deadline = match self.time.deadline(ctx.now()) {
            Ok(d) => d as u64,
            Err(r) => return r,
        };
        let SetEx { key, value, .. } = self;
        ctx.store().write(&[key], ctx.call, |t| {
            match t.store_string(key, Some(deadline), value) {
                Ok(()) => Reply::OK,
                Err(e) => write_err(e),
            }
        })
    }
}

/// What `GETEX` does to the key's deadline.
enum GetExTtl<'a> {
    /// Nothing (no option).
    Keep,
    /// Removes it (`PERSIST`).
    Persist,
    /// Sets it (`EX`, `PX`, `EXAT`, `PXAT`): the argument, its unit in milliseconds,
    /// whether it is absolute. Checked only once the key is found a string, as Redis does.
    At(&'a [u8], i64, bool),
}

/// `GETEX key [EX s|PX ms|EXAT unix-s|PXAT unix-ms|PERSIST]`.
pub(super) struct GetEx<'a> {
    key: &'a [u8],
    ttl: GetExTtl<'a>,
}

impl<'a> Command<'a> for GetEx<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut ttl = GetExTtl::Keep;
        let mut i = 2;
        while i < args.len() {
            let opt = args[i].to_ascii_uppercase();
            let unit = if opt.starts_with(b"E") { 1000 } else { 1 };
            let absolute = opt.ends_with(b"AT");
            // As Redis: an option may repeat (the last value wins); two different ones
            // conflict.
            match (&opt[..], args.get(i + 1), &ttl) {
                (b"PERSIST", _, GetExTtl::Keep | GetExTtl::Persist) => ttl = GetExTtl::Persist,
                (b"EX" | b"PX" | b"EXAT" | b"PXAT", Some(v), t)
                    if match t {
                        GetExTtl::Keep => true,
                        GetExTtl::Persist => false,
                        GetExTtl::At(_, u, a) => (*u, *a) == (unit, absolute),
                    } =>
                {
                    ttl = GetExTtl::At(v, unit, absolute);
                    i += 1;
                }
                _ => return Err(syntax_error()),
            }
            i += 1;
        }
        Ok(GetEx { key: &args[1], ttl })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let GetEx { key, ttl } = self;
        ctx.store().write(&[key], ctx.call, |t| {
            let mut e = match t.load(key) {
                None => return Reply::Nil,
                Some(e) if e.kind != Kind::String => return wrong_type(),
                Some(e) => e,
            };
            let deadline = match ttl {
                GetExTtl::Keep => return Reply::Bulk(e.payload),
                GetExTtl::Persist if e.deadline.is_none() => return Reply::Bulk(e.payload),
                GetExTtl::Persist => None,
                GetExTtl::At(v, unit, absolute) => {
                    match ExpireTime::parse(v, unit, absolute, "getex", false)
                        .and_then(|time| time.deadline(t.now()))
                    {
                        Ok(d) => Some(d),
                        Err(r) => return r,
                    }
                }
            };
            if deadline.is_some_and(|d| d <= t.now() as i64) {
                t.delete(key);
                return Reply::Bulk(e.payload);
            }
            e.deadline = deadline.map(|d| d as u64);
            match t.store(key, &e) {
                Ok(()) => Reply::Bulk(e.payload),
                Err(err) => write_err(err),
            }
        })
    }
}

/// `GETRANGE key start end` and `SUBSTR key start end`.
pub(super) struct GetRange<'a> {
    key: &'a [u8],
    start: i64,
    end: i64,
}

impl<'a> Command<'a> for GetRange<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(GetRange {
            key: &args[1],
            start: parse_i64(&args[2]).ok_or_else(not_integer)?,
            end: parse_i64(&args[3]).ok_or_else(not_integer)?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let GetRange { key, start, end } = self;
        ctx.store()
            .read(key, ctx.call, |kind, _, payload| match kind {
                Kind::String => Reply::bulk(substring(payload, start, end)),
                _ => wrong_type(),
            })
            .unwrap_or(Reply::bulk(b""))
    }
}

/// The bytes of `s` from `start` to `end` inclusive, negative indexes counting from the
/// end, clamped to the string as Redis's `GETRANGE` clamps them.
fn substring(s: &[u8], start: i64, end: i64) -> &[u8] {
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return b"";
    }
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    if len == 0 || start > end {
        return b"";
    }
    &s[start as usize..=end as usize]
}

/// `SETRANGE key offset value`.
pub(super) struct SetRange<'a> {
    key: &'a [u8],
    offset: usize,
    value: &'a [u8],
}

impl<'a> Command<'a> for SetRange<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let offset = parse_i64(&args[2]).ok_or_else(not_integer)?;
        if offset < 0 {
            return Err(Reply::err("ERR offset is out of range"));
        }
        Ok(SetRange {
            key: &args[1],
            offset: usize::try_from(offset).map_err(|_| not_integer())?,
            value: &args[3],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let SetRange { key, offset, value } = self;
        let max_bulk = ctx.shared.live.max_bulk_len.load(Ordering::Relaxed);
        ctx.store().write(&[key], ctx.call, |t| {
            let old = t.load(key);
            if old.as_ref().is_some_and(|e| e.kind != Kind::String) {
                return wrong_type();
            }
            if value.is_empty() {
                // Nothing to write: the length as it is (no key is created).
                return Reply::Int(old.map_or(0, |e| e.payload.len() as i64));
            }
            let end = match offset.checked_add(value.len()) {
                Some(end) if end <= max_bulk => end,
                _ => {
                    return Reply::err(TOO_LONG);
                }
            };
            let mut e = old.unwrap_or_else(|| Entry::string(Vec::new()));
            if e.payload.len() < end {
                e.payload.resize(end, 0);
            }
            e.payload[offset..end].copy_from_slice(value);
            match t.store(key, &e) {
                Ok(()) => Reply::Int(e.payload.len() as i64),
                Err(err) => write_err(err),
            }
        })
    }
}
