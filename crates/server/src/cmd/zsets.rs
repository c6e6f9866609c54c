//! Sorted-set commands: `ZADD` (`NX`/`XX`/`GT`/`LT`/`CH`/`INCR`), `ZINCRBY`, `ZREM`,
//! `ZSCORE`, `ZMSCORE`, `ZCARD`, `ZCOUNT`, `ZLEXCOUNT`, `ZRANK`, `ZREVRANK`, `ZRANGE`
//! (`BYSCORE`/`BYLEX`/`REV`/`LIMIT`/`WITHSCORES`), `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`,
//! `ZRANGEBYLEX`, `ZREVRANGEBYLEX`.
//!
//! Every command runs under its key's stripe ([`Store::write`](crate::store::Store::write)),
//! readers included, so a reader never sees a member between its two indexes. Options and
//! ranges are parsed first, with Redis's errors, before the key is looked at.

use std::ops::Bound;
use std::sync::Arc;

use super::{Ctx, not_integer, syntax_error, wrong_type};
use crate::num::{parse_f64, parse_i64};
use crate::resp::Reply;
use crate::store::{Kind, Txn};
use crate::zset::{Limit, MAX_MEMBER, ScoreBound, ZSet, score_key};

fn not_float() -> Reply {
    Reply::err("ERR value is not a valid float")
}

/// The live sorted set at `key`: `Ok(None)` when absent, `Err(WRONGTYPE)` for another type.
fn lookup(t: &Txn<'_>, key: &[u8]) -> Result<Option<Arc<ZSet>>, Reply> {
    match t.load(key) {
        None => Ok(None),
        Some(e) if e.kind != Kind::ZSet => Err(wrong_type()),
        Some(e) => Ok(t.zset(&e)),
    }
}

/// Runs `f` on the set at `key`, or replies `missing` when there is none.
fn read(ctx: &Ctx<'_>, key: &[u8], missing: Reply, f: impl FnOnce(&ZSet) -> Reply) -> Reply {
    ctx.shared
        .store
        .write(&[key], ctx.call, |t| match lookup(t, key) {
            Err(r) => r,
            Ok(None) => missing,
            Ok(Some(z)) => f(&z),
        })
}

pub(super) fn zadd(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < args.len() {
        match &args[i].to_ascii_uppercase()[..] {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            b"CH" => ch = true,
            b"INCR" => incr = true,
            _ => break,
        }
        i += 1;
    }
    let rest = &args[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return syntax_error();
    }
    if nx && xx {
        return Reply::err("ERR XX and NX options at the same time are not compatible");
    }
    if [gt, lt, nx].iter().filter(|&&f| f).count() > 1 {
        return Reply::err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && rest.len() > 2 {
        return Reply::err("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        let Some(score) = parse_f64(&p[0]) else {
            return not_float();
        };
        if p[1].len() > MAX_MEMBER {
            return Reply::err(format!("ERR member too long (limit {MAX_MEMBER} bytes)"));
        }
        pairs.push((score, &p[1][..]));
    }
    let proto_nil = Reply::Nil;
    let key = &args[1][..];
    ctx.shared.store.write(&[key], ctx.call, |t| {
        let set = match lookup(t, key) {
            Err(r) => return r,
            Ok(Some(z)) => z,
            Ok(None) if xx => return if incr { proto_nil } else { Reply::Int(0) },
            Ok(None) => match t.create_zset(key) {
                Ok(z) => z,
                Err(e) => return Reply::err(e.message()),
            },
        };
        let (mut added, mut changed) = (0, 0);
        let mut incr_result = None;
        for (score, member) in pairs {
            let cur = set.score(member);
            let new = match cur {
                Some(c) if incr => c + score,
                _ => score,
            };
            if new.is_nan() {
                drop_if_empty(t, key, &set);
                return Reply::err("ERR resulting score is not a number (NaN)");
            }
            let skip = match cur {
                Some(c) => nx || (gt && new <= c) || (lt && new >= c),
                None => xx,
            };
            if skip {
                continue;
            }
            if cur.is_some_and(|c| score_key(c) == score_key(new)) {
                // Unchanged (as stored): nothing to write or log.
                incr_result = Some(new);
                continue;
            }
            if let Err(e) = t.zset_insert(key, &set, member, new, cur) {
                drop_if_empty(t, key, &set);
                return Reply::err(crate::store::WriteError::from(e).message());
            }
            match cur {
                None => added += 1,
                Some(c) if c != new => changed += 1,
                Some(_) => {}
            }
            incr_result = Some(new);
        }
        drop_if_empty(t, key, &set);
        if incr {
            incr_result.map_or(Reply::Nil, Reply::Double)
        } else {
            Reply::Int(if ch { added + changed } else { added })
        }
    })
}

/// Removes `key` when its set has no member left (Redis never keeps an empty set).
fn drop_if_empty(t: &Txn<'_>, key: &[u8], set: &ZSet) {
    if set.len() == 0 {
        t.delete(key);
    }
}

pub(super) fn zincrby(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let a = [
        b"ZADD".to_vec(),
        args[1].clone(),
        b"INCR".to_vec(),
        args[2].clone(),
        args[3].clone(),
    ];
    zadd(ctx, &a)
}

pub(super) fn zrem(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let key = &args[1][..];
    ctx.shared
        .store
        .write(&[key], ctx.call, |t| match lookup(t, key) {
            Err(r) => r,
            Ok(None) => Reply::Int(0),
            Ok(Some(z)) => {
                let n = args[2..]
                    .iter()
                    .filter(|m| t.zset_remove(key, &z, m))
                    .count();
                drop_if_empty(t, key, &z);
                Reply::Int(n as i64)
            }
        })
}

pub(super) fn zscore(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    read(ctx, &args[1], Reply::Nil, |z| {
        z.score(&args[2]).map_or(Reply::Nil, Reply::Double)
    })
}

pub(super) fn zmscore(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let members = &args[2..];
    let missing = Reply::Array(vec![Reply::Nil; members.len()]);
    read(ctx, &args[1], missing, |z| {
        Reply::Array(
            members
                .iter()
                .map(|m| z.score(m).map_or(Reply::Nil, Reply::Double))
                .collect(),
        )
    })
}

pub(super) fn zcard(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    read(ctx, &args[1], Reply::Int(0), |z| Reply::Int(z.len() as i64))
}

fn score_bound(a: &[u8]) -> Option<ScoreBound> {
    match a.strip_prefix(b"(") {
        Some(rest) => parse_f64(rest).map(Bound::Excluded),
        None => parse_f64(a).map(Bound::Included),
    }
}

fn score_range(min: &[u8], max: &[u8]) -> Result<(ScoreBound, ScoreBound), Reply> {
    match (score_bound(min), score_bound(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(Reply::err("ERR min or max is not a float")),
    }
}

/// One end of a lexicographic range as Redis writes it: `-`, `+`, `[x`, `(x`.
enum Lex {
    Min,
    Max,
    Bound(Bound<Vec<u8>>),
}

fn lex_bound(a: &[u8]) -> Option<Lex> {
    match a.split_first() {
        Some((b'-', [])) => Some(Lex::Min),
        Some((b'+', [])) => Some(Lex::Max),
        Some((b'[', rest)) => Some(Lex::Bound(Bound::Included(rest.to_vec()))),
        Some((b'(', rest)) => Some(Lex::Bound(Bound::Excluded(rest.to_vec()))),
        _ => None,
    }
}

/// A lexicographic range; `Ok(None)` when it is empty by construction (`+` as minimum).
type LexRange = Option<(Bound<Vec<u8>>, Bound<Vec<u8>>)>;

fn lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Reply> {
    let (Some(lo), Some(hi)) = (lex_bound(min), lex_bound(max)) else {
        return Err(Reply::err("ERR min or max not valid string range item"));
    };
    let lo = match lo {
        Lex::Min => Bound::Unbounded,
        Lex::Max => return Ok(None),
        Lex::Bound(b) => b,
    };
    let hi = match hi {
        Lex::Max => Bound::Unbounded,
        Lex::Min => return Ok(None),
        Lex::Bound(b) => b,
    };
    Ok(Some((lo, hi)))
}

pub(super) fn zcount(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let (lo, hi) = match score_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    read(ctx, &args[1], Reply::Int(0), |z| {
        Reply::Int(z.count_by_score(lo, hi) as i64)
    })
}

pub(super) fn zlexcount(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let range = match lex_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    read(ctx, &args[1], Reply::Int(0), |z| {
        Reply::Int(range.map_or(0, |(lo, hi)| z.count_by_lex(lo, hi)) as i64)
    })
}

pub(super) fn zrank(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let rev = args[0].eq_ignore_ascii_case(b"zrevrank");
    read(ctx, &args[1], Reply::Nil, |z| {
        z.rank(&args[2], rev)
            .map_or(Reply::Nil, |r| Reply::Int(r as i64))
    })
}

/// How a range command selects members.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// The parsed form of every range command.
struct RangeQuery<'a> {
    key: &'a [u8],
    /// The range's start and end as the command gave them (for `REV`, end first).
    from: &'a [u8],
    to: &'a [u8],
    by: By,
    rev: bool,
    limit: Option<(i64, i64)>,
    withscores: bool,
}

fn parse_limit(args: &[Vec<u8>], i: usize) -> Result<(i64, i64), Reply> {
    let (Some(o), Some(c)) = (args.get(i + 1), args.get(i + 2)) else {
        return Err(syntax_error());
    };
    match (parse_i64(o), parse_i64(c)) {
        (Some(o), Some(c)) => Ok((o, c)),
        _ => Err(not_integer()),
    }
}

pub(super) fn zrange(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let mut q = RangeQuery {
        key: &args[1],
        from: &args[2],
        to: &args[3],
        by: By::Rank,
        rev: false,
        limit: None,
        withscores: false,
    };
    let mut i = 4;
    while i < args.len() {
        match &args[i].to_ascii_uppercase()[..] {
            b"BYSCORE" => q.by = By::Score,
            b"BYLEX" => q.by = By::Lex,
            b"REV" => q.rev = true,
            b"WITHSCORES" => q.withscores = true,
            b"LIMIT" => {
                match parse_limit(args, i) {
                    Ok(l) => q.limit = Some(l),
                    Err(e) => return e,
                }
                i += 2;
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    if q.limit.is_some() && q.by == By::Rank {
        return Reply::err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if q.withscores && q.by == By::Lex {
        return Reply::err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    run_range(ctx, q)
}

/// `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`.
pub(super) fn zrange_by(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let name = args[0].to_ascii_lowercase();
    let lex = name.ends_with(b"bylex");
    let mut q = RangeQuery {
        key: &args[1],
        from: &args[2],
        to: &args[3],
        by: if lex { By::Lex } else { By::Score },
        rev: name.starts_with(b"zrev"),
        limit: None,
        withscores: false,
    };
    let mut i = 4;
    while i < args.len() {
        match &args[i].to_ascii_uppercase()[..] {
            b"WITHSCORES" if !lex => q.withscores = true,
            b"LIMIT" => {
                match parse_limit(args, i) {
                    Ok(l) => q.limit = Some(l),
                    Err(e) => return e,
                }
                i += 2;
            }
            _ => return syntax_error(),
        }
        i += 1;
    }
    run_range(ctx, q)
}

fn run_range(ctx: &mut Ctx<'_>, q: RangeQuery<'_>) -> Reply {
    // With REV the command names the high end first.
    let (min, max) = if q.rev {
        (q.to, q.from)
    } else {
        (q.from, q.to)
    };
    // A negative offset selects nothing (after the key's type is checked, as in Redis).
    let negative_offset = q.limit.is_some_and(|(o, _)| o < 0);
    let limit = match q.limit {
        None => Limit::ALL,
        Some((o, _)) if o < 0 => Limit::ALL,
        Some((o, c)) => Limit {
            offset: o as usize,
            count: (c >= 0).then_some(c as usize),
        },
    };
    enum Parsed {
        Rank(i64, i64),
        Score(ScoreBound, ScoreBound),
        Lex(LexRange),
    }
    let parsed = match q.by {
        By::Rank => match (parse_i64(q.from), parse_i64(q.to)) {
            (Some(a), Some(b)) => Parsed::Rank(a, b),
            _ => return not_integer(),
        },
        By::Score => match score_range(min, max) {
            Ok((a, b)) => Parsed::Score(a, b),
            Err(e) => return e,
        },
        By::Lex => match lex_range(min, max) {
            Ok(r) => Parsed::Lex(r),
            Err(e) => return e,
        },
    };
    let proto = ctx.client.proto;
    read(ctx, q.key, Reply::Array(vec![]), |z| {
        if negative_offset {
            return Reply::Array(vec![]);
        }
        let items = match parsed {
            Parsed::Rank(start, stop) => {
                let len = z.len() as i64;
                let start = if start < 0 {
                    (start + len).max(0)
                } else {
                    start
                };
                let stop = if stop < 0 {
                    stop + len
                } else {
                    stop.min(len - 1)
                };
                if start > stop || start >= len {
                    Vec::new()
                } else {
                    z.range_by_rank(start as usize, stop as usize, q.rev)
                }
            }
            Parsed::Score(lo, hi) => z.range_by_score(lo, hi, q.rev, limit),
            Parsed::Lex(None) => Vec::new(),
            Parsed::Lex(Some((lo, hi))) => z.range_by_lex(lo, hi, q.rev, limit),
        };
        let mut out = Vec::with_capacity(items.len() * if q.withscores { 2 } else { 1 });
        for (m, s) in items {
            match (q.withscores, proto >= 3) {
                (false, _) => out.push(Reply::Bulk(m)),
                (true, false) => {
                    out.push(Reply::Bulk(m));
                    out.push(Reply::Double(s));
                }
                (true, true) => out.push(Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)])),
            }
        }
        Reply::Array(out)
    })
}
