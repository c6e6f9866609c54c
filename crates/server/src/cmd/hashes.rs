//! Hash commands: `HSET`, `HMSET`, `HSETNX`, `HGET`, `HMGET`, `HGETALL`, `HDEL`,
//! `HEXISTS`, `HLEN`, `HKEYS`, `HVALS`, `HSTRLEN`, `HINCRBY`, `HINCRBYFLOAT`,
//! `HRANDFIELD`, `HSCAN`.
//!
//! Every command runs under its key's stripe on a [`Hash`](struct@crate::coll::Hash) view (`crate::coll`), which
//! logs each field it changes; writes call `finish` even after an error, so that what was
//! applied and what was logged agree.

use std::ops::ControlFlow;

use super::cursor::ScanArgs;
use super::{Command, Ctx, arity_error, not_integer, syntax_error};
use crate::coll::{self, Hash, check_lengths, check_values};
use crate::num::{format_f64, parse_f64, parse_i64};
use crate::resp::Reply;
use crate::store::Txn;

fn err(e: coll::Error) -> Reply {
    Reply::err(e.message())
}

/// Runs `f` on the hash at `key` under its stripe, or replies `missing`.
fn read(
    ctx: &Ctx<'_>,
    key: &[u8],
    missing: Reply,
    f: impl FnOnce(&Txn<'_>, &Hash<'_>) -> Reply,
) -> Reply {
    ctx.store()
        .write(&[key], ctx.call, |t| match Hash::open(t, key) {
            Err(e) => err(e),
            Ok(None) => missing,
            Ok(Some(h)) => f(t, &h),
        })
}

/// Runs `f` on the hash at `key` (a new one when absent) and writes it back.
fn write(
    ctx: &Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&Txn<'_>, &mut Hash<'_>) -> coll::Result<Reply>,
) -> Reply {
    ctx.store().write(&[key], ctx.call, |t| {
        let mut h = match Hash::open_or_create(t, key) {
            Ok(h) => h,
            Err(e) => return err(e),
        };
        let r = f(t, &mut h);
        match (r, h.finish(t)) {
            (Err(e), _) | (Ok(_), Err(e)) => err(e),
            (Ok(r), Ok(())) => r,
        }
    })
}

/// `HSET key field value …` and `HMSET` (which replies `OK`).
pub(super) struct HSet<'a> {
    key: &'a [u8],
    pairs: &'a [Vec<u8>],
    ok: bool,
}

impl<'a> Command<'a> for HSet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let ok = args[0].eq_ignore_ascii_case(b"hmset");
        if !args.len().is_multiple_of(2) {
            return Err(arity_error(if ok { "hmset" } else { "hset" }));
        }
        check_lengths(args[2..].iter().step_by(2).map(Vec::as_slice)).map_err(err)?;
        check_values(args[3..].iter().step_by(2).map(Vec::as_slice)).map_err(err)?;
        Ok(HSet {
            key: &args[1],
            pairs: &args[2..],
            ok,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        write(ctx, self.key, |t, h| {
            let mut added = 0;
            for p in self.pairs.chunks(2) {
                if h.set(t, &p[0], &p[1])? {
                    added += 1;
                }
            }
            Ok(if self.ok {
                Reply::OK
            } else {
                Reply::Int(added)
            })
        })
    }
}

/// `HSETNX key field value`.
pub(super) struct HSetNx<'a> {
    key: &'a [u8],
    field: &'a [u8],
    value: &'a [u8],
}

impl<'a> Command<'a> for HSetNx<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        check_lengths([&args[2][..]]).map_err(err)?;
        check_values([&args[3][..]]).map_err(err)?;
        Ok(HSetNx {
            key: &args[1],
            field: &args[2],
            value: &args[3],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        write(ctx, self.key, |t, h| {
            if h.get(t, self.field).is_some() {
                return Ok(Reply::Int(0));
            }
            h.set(t, self.field, self.value)?;
            Ok(Reply::Int(1))
        })
    }
}

/// `HGET key field`, `HEXISTS key field`, `HSTRLEN key field`.
pub(super) struct HGet<'a> {
    key: &'a [u8],
    field: &'a [u8],
    what: FieldQuery,
}

#[derive(Clone, Copy)]
enum FieldQuery {
    Value,
    Exists,
    Len,
}

impl<'a> Command<'a> for HGet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = args[0].to_ascii_lowercase();
        let what = match &name[..] {
            b"hexists" => FieldQuery::Exists,
            b"hstrlen" => FieldQuery::Len,
            _ => FieldQuery::Value,
        };
        Ok(HGet {
            key: &args[1],
            field: &args[2],
            what,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let missing = match self.what {
            FieldQuery::Value => Reply::Nil,
            _ => Reply::Int(0),
        };
        read(ctx, self.key, missing.clone(), |t, h| {
            match (self.what, h.get(t, self.field)) {
                (_, None) => missing,
                (FieldQuery::Value, Some(v)) => Reply::Bulk(v),
                (FieldQuery::Exists, Some(_)) => Reply::Int(1),
                (FieldQuery::Len, Some(v)) => Reply::Int(v.len() as i64),
            }
        })
    }
}

/// `HMGET key field …`.
pub(super) struct HMGet<'a> {
    key: &'a [u8],
    fields: &'a [Vec<u8>],
}

impl<'a> Command<'a> for HMGet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(HMGet {
            key: &args[1],
            fields: &args[2..],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let missing = Reply::Array(vec![Reply::Nil; self.fields.len()]);
        read(ctx, self.key, missing, |t, h| {
            Reply::Array(
                self.fields
                    .iter()
                    .map(|f| h.get(t, f).map_or(Reply::Nil, Reply::Bulk))
                    .collect(),
            )
        })
    }
}

/// `HGETALL key`, `HKEYS key`, `HVALS key`, `HLEN key`.
pub(super) struct HGetAll<'a> {
    key: &'a [u8],
    what: Whole,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Whole {
    Pairs,
    Keys,
    Values,
    Len,
}

impl<'a> Command<'a> for HGetAll<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let what = match &args[0].to_ascii_lowercase()[..] {
            b"hkeys" => Whole::Keys,
            b"hvals" => Whole::Values,
            b"hlen" => Whole::Len,
            _ => Whole::Pairs,
        };
        Ok(HGetAll {
            key: &args[1],
            what,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let what = self.what;
        let missing = match what {
            Whole::Len => Reply::Int(0),
            Whole::Pairs => Reply::Map(vec![]),
            _ => Reply::Array(vec![]),
        };
        read(ctx, self.key, missing, |t, h| {
            if what == Whole::Len {
                return Reply::Int(h.len() as i64);
            }
            let mut pairs = Vec::new();
            let mut items = Vec::new();
            h.for_each(t, &mut |k, v| {
                match what {
                    Whole::Pairs => pairs.push((Reply::bulk(k), Reply::bulk(v))),
                    Whole::Keys => items.push(Reply::bulk(k)),
                    _ => items.push(Reply::bulk(v)),
                }
                ControlFlow::Continue(())
            });
            if what == Whole::Pairs {
                Reply::Map(pairs)
            } else {
                Reply::Array(items)
            }
        })
    }
}

/// `HDEL key field …`.
pub(super) struct HDel<'a> {
    key: &'a [u8],
    fields: &'a [Vec<u8>],
}

impl<'a> Command<'a> for HDel<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(HDel {
            key: &args[1],
            fields: &args[2..],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| {
            let mut h = match Hash::open(t, key) {
                Ok(Some(h)) => h,
                Ok(None) => return Reply::Int(0),
                Err(e) => return err(e),
            };
            let n = self.fields.iter().filter(|f| h.del(t, f)).count();
            match h.finish(t) {
                Ok(()) => Reply::Int(n as i64),
                Err(e) => err(e),
            }
        })
    }
}

/// `HINCRBY key field increment`.
pub(super) struct HIncrBy<'a> {
    key: &'a [u8],
    field: &'a [u8],
    by: i64,
}

impl<'a> Command<'a> for HIncrBy<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        check_lengths([&args[2][..]]).map_err(err)?;
        Ok(HIncrBy {
            key: &args[1],
            field: &args[2],
            by: parse_i64(&args[3]).ok_or_else(not_integer)?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        write(ctx, self.key, |t, h| {
            let cur = match h.get(t, self.field) {
                None => 0,
                Some(v) => match parse_i64(&v) {
                    Some(n) => n,
                    None => return Ok(Reply::err("ERR hash value is not an integer")),
                },
            };
            let Some(n) = cur.checked_add(self.by) else {
                return Ok(Reply::err("ERR increment or decrement would overflow"));
            };
            h.set(t, self.field, n.to_string().as_bytes())?;
            Ok(Reply::Int(n))
        })
    }
}

/// `HINCRBYFLOAT key field increment` (logged as the resulting `HSET`).
pub(super) struct HIncrByFloat<'a> {
    key: &'a [u8],
    field: &'a [u8],
    by: f64,
}

impl<'a> Command<'a> for HIncrByFloat<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        check_lengths([&args[2][..]]).map_err(err)?;
        Ok(HIncrByFloat {
            key: &args[1],
            field: &args[2],
            by: parse_f64(&args[3]).ok_or_else(|| Reply::err("ERR value is not a valid float"))?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        write(ctx, self.key, |t, h| {
            let cur = match h.get(t, self.field) {
                None => 0.0,
                Some(v) => match parse_f64(&v) {
                    Some(n) => n,
                    None => return Ok(Reply::err("ERR hash value is not a float")),
                },
            };
            let n = cur + self.by;
            if !n.is_finite() {
                return Ok(Reply::err("ERR increment would produce NaN or Infinity"));
            }
            let text = format_f64(n);
            h.set(t, self.field, text.as_bytes())?;
            Ok(Reply::Bulk(text.into_bytes()))
        })
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`.
pub(super) struct HRandField<'a> {
    key: &'a [u8],
    count: Option<i64>,
    withvalues: bool,
}

impl<'a> Command<'a> for HRandField<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (count, withvalues) = parse_rand_count(args, b"WITHVALUES")?;
        Ok(HRandField {
            key: &args[1],
            count,
            withvalues,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let proto = ctx.client.proto;
        let Some(count) = self.count else {
            return read(ctx, self.key, Reply::Nil, |t, h| {
                h.random_distinct(t, 1)
                    .pop()
                    .map_or(Reply::Nil, |(k, _)| Reply::Bulk(k))
            });
        };
        let withvalues = self.withvalues;
        read(ctx, self.key, Reply::Array(vec![]), |t, h| {
            let pairs = if count >= 0 {
                h.random_distinct(t, count as usize)
            } else {
                h.random_repeated(t, count.unsigned_abs() as usize)
            };
            let mut out = Vec::new();
            for (k, v) in pairs {
                match (withvalues, proto >= 3) {
                    (false, _) => out.push(Reply::Bulk(k)),
                    (true, false) => {
                        out.push(Reply::Bulk(k));
                        out.push(Reply::Bulk(v));
                    }
                    (true, true) => out.push(Reply::Array(vec![Reply::Bulk(k), Reply::Bulk(v)])),
                }
            }
            Reply::Array(out)
        })
    }
}

/// Parses the `count [WITH…]` of `HRANDFIELD` and `ZRANDMEMBER` with Redis's errors, in
/// Redis's order (the count first).
pub(super) fn parse_rand_count(
    args: &[Vec<u8>],
    with: &[u8],
) -> Result<(Option<i64>, bool), Reply> {
    let Some(c) = args.get(2) else {
        return Ok((None, false));
    };
    let count = rand_count(c)?;
    let withv = match args.get(3) {
        None => false,
        Some(w) if args.len() == 4 && w.eq_ignore_ascii_case(with) => true,
        Some(_) => return Err(syntax_error()),
    };
    if withv && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(Reply::err("ERR value is out of range"));
    }
    Ok((Some(count), withv))
}

/// A random-pick count: any integer but `i64::MIN`.
pub(super) fn rand_count(c: &[u8]) -> Result<i64, Reply> {
    match parse_i64(c) {
        None => Err(not_integer()),
        Some(i64::MIN) => Err(Reply::err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        Some(n) => Ok(n),
    }
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`.
pub(super) struct HScan<'a>(ScanArgs<'a>);

impl<'a> Command<'a> for HScan<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        ScanArgs::parse(args).map(HScan)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let s = self.0;
        let after = match s.resume(ctx) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let empty = Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![])]);
        let page = ctx
            .store()
            .write(&[s.key], ctx.call, |t| match Hash::open(t, s.key) {
                Err(e) => Err(err(e)),
                Ok(None) => Ok(None),
                Ok(Some(h)) => Ok(Some(h.page(t, after.as_deref(), s.count))),
            });
        match page {
            Err(r) => r,
            Ok(None) => empty,
            Ok(Some(page)) => {
                let mut items = Vec::new();
                for (k, v) in page.items {
                    if s.matches(&k) {
                        items.push(Reply::Bulk(k));
                        items.push(Reply::Bulk(v.unwrap_or_default()));
                    }
                }
                ScanArgs::reply(ctx, page.next, items)
            }
        }
    }
}
