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

use super::{Command, Ctx, not_integer, syntax_error, wrong_type};
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

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member …`.
pub(super) struct ZAdd<'a> {
    key: &'a [u8],
    /// Only add new members.
    nx: bool,
    /// Only update existing members.
    xx: bool,
    /// Only update to a greater score.
    gt: bool,
    /// Only update to a lower score.
    lt: bool,
    /// Reply with the number of members added or changed (not only added).
    ch: bool,
    /// Add to the score (one pair only) and reply with the new score.
    incr: bool,
    pairs: Vec<(f64, &'a [u8])>,
}

impl<'a> Command<'a> for ZAdd<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut z = ZAdd {
            key: &args[1],
            nx: false,
            xx: false,
            gt: false,
            lt: false,
            ch: false,
            incr: false,
            pairs: Vec::new(),
        };
        let mut i = 2;
        while i < args.len() {
            match &args[i].to_ascii_uppercase()[..] {
                b"NX" => z.nx = true,
                b"XX" => z.xx = true,
                b"GT" => z.gt = true,
                b"LT" => z.lt = true,
                b"CH" => z.ch = true,
                b"INCR" => z.incr = true,
                _ => break,
            }
            i += 1;
        }
        z.parse_pairs(&args[i..])?;
        Ok(z)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let ZAdd {
            key,
            nx,
            xx,
            gt,
            lt,
            ch,
            incr,
            pairs,
        } = self;
        ctx.shared.store.write(&[key], ctx.call, |t| {
            let set = match lookup(t, key) {
                Err(r) => return r,
                Ok(Some(z)) => z,
                Ok(None) if xx => return if incr { Reply::Nil } else { Reply::Int(0) },
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
}

impl<'a> ZAdd<'a> {
    /// Checks the options together and parses the score-member pairs `rest`.
    fn parse_pairs(&mut self, rest: &'a [Vec<u8>]) -> Result<(), Reply> {
        if rest.is_empty() || !rest.len().is_multiple_of(2) {
            return Err(syntax_error());
        }
        if self.nx && self.xx {
            return Err(Reply::err(
                "ERR XX and NX options at the same time are not compatible",
            ));
        }
        if [self.gt, self.lt, self.nx].iter().filter(|&&f| f).count() > 1 {
            return Err(Reply::err(
                "ERR GT, LT, and/or NX options at the same time are not compatible",
            ));
        }
        if self.incr && rest.len() > 2 {
            return Err(Reply::err(
                "ERR INCR option supports a single increment-element pair",
            ));
        }
        self.pairs.reserve(rest.len() / 2);
        for p in rest.chunks(2) {
            let Some(score) = parse_f64(&p[0]) else {
                return Err(not_float());
            };
            if p[1].len() > MAX_MEMBER {
                return Err(Reply::err(format!(
                    "ERR member too long (limit {MAX_MEMBER} bytes)"
                )));
            }
            self.pairs.push((score, &p[1][..]));
        }
        Ok(())
    }
}

/// Removes `key` when its set has no member left (Redis never keeps an empty set).
fn drop_if_empty(t: &Txn<'_>, key: &[u8], set: &ZSet) {
    if set.len() == 0 {
        t.delete(key);
    }
}

/// `ZINCRBY key increment member`: `ZADD key INCR increment member`.
pub(super) struct ZIncrBy<'a>(ZAdd<'a>);

impl<'a> Command<'a> for ZIncrBy<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut z = ZAdd {
            key: &args[1],
            nx: false,
            xx: false,
            gt: false,
            lt: false,
            ch: false,
            incr: true,
            pairs: Vec::new(),
        };
        z.parse_pairs(&args[2..4])?;
        Ok(ZIncrBy(z))
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        self.0.apply(ctx)
    }
}

/// `ZREM key member …`.
pub(super) struct ZRem<'a> {
    key: &'a [u8],
    members: &'a [Vec<u8>],
}

impl<'a> Command<'a> for ZRem<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(ZRem {
            key: &args[1],
            members: &args[2..],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let ZRem { key, members } = self;
        ctx.shared
            .store
            .write(&[key], ctx.call, |t| match lookup(t, key) {
                Err(r) => r,
                Ok(None) => Reply::Int(0),
                Ok(Some(z)) => {
                    let n = members.iter().filter(|m| t.zset_remove(key, &z, m)).count();
                    drop_if_empty(t, key, &z);
                    Reply::Int(n as i64)
                }
            })
    }
}

/// `ZSCORE key member`.
pub(super) struct ZScore<'a> {
    key: &'a [u8],
    member: &'a [u8],
}

impl<'a> Command<'a> for ZScore<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(ZScore {
            key: &args[1],
            member: &args[2],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        read(ctx, self.key, Reply::Nil, |z| {
            z.score(self.member).map_or(Reply::Nil, Reply::Double)
        })
    }
}

/// `ZMSCORE key member …`.
pub(super) struct ZMScore<'a> {
    key: &'a [u8],
    members: &'a [Vec<u8>],
}

impl<'a> Command<'a> for ZMScore<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(ZMScore {
            key: &args[1],
            members: &args[2..],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let members = self.members;
        let missing = Reply::Array(vec![Reply::Nil; members.len()]);
        read(ctx, self.key, missing, |z| {
            Reply::Array(
                members
                    .iter()
                    .map(|m| z.score(m).map_or(Reply::Nil, Reply::Double))
                    .collect(),
            )
        })
    }
}

/// `ZCARD key`.
pub(super) struct ZCard<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for ZCard<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(ZCard { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        read(ctx, self.key, Reply::Int(0), |z| Reply::Int(z.len() as i64))
    }
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

/// `ZCOUNT key min max`.
pub(super) struct ZCount<'a> {
    key: &'a [u8],
    lo: ScoreBound,
    hi: ScoreBound,
}

impl<'a> Command<'a> for ZCount<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (lo, hi) = score_range(&args[2], &args[3])?;
        Ok(ZCount {
            key: &args[1],
            lo,
            hi,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let ZCount { key, lo, hi } = self;
        read(ctx, key, Reply::Int(0), |z| {
            Reply::Int(z.count_by_score(lo, hi) as i64)
        })
    }
}

/// `ZLEXCOUNT key min max`.
pub(super) struct ZLexCount<'a> {
    key: &'a [u8],
    range: LexRange,
}

impl<'a> Command<'a> for ZLexCount<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(ZLexCount {
            key: &args[1],
            range: lex_range(&args[2], &args[3])?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let ZLexCount { key, range } = self;
        read(ctx, key, Reply::Int(0), |z| {
            Reply::Int(range.map_or(0, |(lo, hi)| z.count_by_lex(lo, hi)) as i64)
        })
    }
}

/// `ZRANK key member` and `ZREVRANK key member` (`rev`).
pub(super) struct ZRank<'a> {
    key: &'a [u8],
    member: &'a [u8],
    rev: bool,
}

impl<'a> Command<'a> for ZRank<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(ZRank {
            key: &args[1],
            member: &args[2],
            rev: args[0].eq_ignore_ascii_case(b"zrevrank"),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        read(ctx, self.key, Reply::Nil, |z| {
            z.rank(self.member, self.rev)
                .map_or(Reply::Nil, |r| Reply::Int(r as i64))
        })
    }
}

/// How a range command selects members.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// A range as a range command selects it, parsed.
enum Selection {
    /// By rank: start and stop (negative: from the end).
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexRange),
}

/// Every range command: `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
/// [WITHSCORES]`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`.
pub(super) struct ZRange<'a> {
    key: &'a [u8],
    selection: Selection,
    rev: bool,
    /// `LIMIT offset count`, as given.
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

impl<'a> Command<'a> for ZRange<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = args[0].to_ascii_lowercase();
        let (mut by, mut rev, mut limit, mut withscores) = (By::Rank, false, None, false);
        let mut i = 4;
        if name == b"zrange" {
            while i < args.len() {
                match &args[i].to_ascii_uppercase()[..] {
                    b"BYSCORE" => by = By::Score,
                    b"BYLEX" => by = By::Lex,
                    b"REV" => rev = true,
                    b"WITHSCORES" => withscores = true,
                    b"LIMIT" => {
                        limit = Some(parse_limit(args, i)?);
                        i += 2;
                    }
                    _ => return Err(syntax_error()),
                }
                i += 1;
            }
            if limit.is_some() && by == By::Rank {
                return Err(Reply::err(
                    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
                ));
            }
            if withscores && by == By::Lex {
                return Err(Reply::err(
                    "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
                ));
            }
        } else {
            let lex = name.ends_with(b"bylex");
            by = if lex { By::Lex } else { By::Score };
            rev = name.starts_with(b"zrev");
            while i < args.len() {
                match &args[i].to_ascii_uppercase()[..] {
                    b"WITHSCORES" if !lex => withscores = true,
                    b"LIMIT" => {
                        limit = Some(parse_limit(args, i)?);
                        i += 2;
                    }
                    _ => return Err(syntax_error()),
                }
                i += 1;
            }
        }
        let (from, to) = (&args[2][..], &args[3][..]);
        // With REV the command names the high end first.
        let (min, max) = if rev { (to, from) } else { (from, to) };
        let selection = match by {
            By::Rank => match (parse_i64(from), parse_i64(to)) {
                (Some(a), Some(b)) => Selection::Rank(a, b),
                _ => return Err(not_integer()),
            },
            By::Score => {
                let (a, b) = score_range(min, max)?;
                Selection::Score(a, b)
            }
            By::Lex => Selection::Lex(lex_range(min, max)?),
        };
        Ok(ZRange {
            key: &args[1],
            selection,
            rev,
            limit,
            withscores,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let ZRange {
            key,
            selection,
            rev,
            limit,
            withscores,
        } = self;
        // A negative offset selects nothing (after the key's type is checked, as in Redis).
        let negative_offset = limit.is_some_and(|(o, _)| o < 0);
        let limit = match limit {
            None => Limit::ALL,
            Some((o, _)) if o < 0 => Limit::ALL,
            Some((o, c)) => Limit {
                offset: o as usize,
                count: (c >= 0).then_some(c as usize),
            },
        };
        let proto = ctx.client.proto;
        read(ctx, key, Reply::Array(vec![]), |z| {
            if negative_offset {
                return Reply::Array(vec![]);
            }
            let items = match selection {
                Selection::Rank(start, stop) => {
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
                        z.range_by_rank(start as usize, stop as usize, rev)
                    }
                }
                Selection::Score(lo, hi) => z.range_by_score(lo, hi, rev, limit),
                Selection::Lex(None) => Vec::new(),
                Selection::Lex(Some((lo, hi))) => z.range_by_lex(lo, hi, rev, limit),
            };
            let mut out = Vec::with_capacity(items.len() * if withscores { 2 } else { 1 });
            for (m, s) in items {
                match (withscores, proto >= 3) {
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
}
