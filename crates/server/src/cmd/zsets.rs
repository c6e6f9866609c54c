//! Sorted-set commands on members: `ZADD` (`NX`/`XX`/`GT`/`LT`/`CH`/`INCR`), `ZINCRBY`,
//! `ZREM`, `ZSCORE`, `ZMSCORE`, `ZCARD`, `ZCOUNT`, `ZLEXCOUNT`, `ZRANK`, `ZREVRANK`,
//! `ZPOPMIN`, `ZPOPMAX`, `ZRANDMEMBER`, `ZSCAN`. Ranges are in `zranges`, the algebra
//! (`ZUNIONSTORE` …) in `zalgebra`.
//!
//! Every command runs under its key's stripe on a [`ZSet`] view (`crate::coll`), readers
//! included. Options and ranges are parsed first, with Redis's errors, before the key is
//! looked at.

use std::ops::Bound;

use super::cursor::ScanArgs;
use super::hashes::parse_rand_count;
use super::{Command, Ctx, syntax_error};
use crate::coll::{self, ScoreBound, ZSet, check_lengths};
use crate::layout::score_key;
use crate::num::{parse_f64, parse_i64};
use crate::resp::Reply;
use crate::store::Txn;

pub(super) fn err(e: coll::Error) -> Reply {
    Reply::err(e.message())
}

pub(super) fn not_float() -> Reply {
    Reply::err("ERR value is not a valid float")
}

/// Runs `f` on the set at `key` under its stripe, or replies `missing`.
pub(super) fn read(
    ctx: &Ctx<'_>,
    key: &[u8],
    missing: Reply,
    f: impl FnOnce(&Txn<'_>, &ZSet<'_>) -> Reply,
) -> Reply {
    ctx.store()
        .write(&[key], ctx.call, |t| match ZSet::open(t, key) {
            Err(e) => err(e),
            Ok(None) => missing,
            Ok(Some(z)) => f(t, &z),
        })
}

/// Runs `f` on the existing set at `key` and writes it back, or replies `missing`.
pub(super) fn change(
    ctx: &Ctx<'_>,
    key: &[u8],
    missing: Reply,
    f: impl FnOnce(&Txn<'_>, &mut ZSet<'_>) -> Reply,
) -> Reply {
    ctx.store().write(&[key], ctx.call, |t| {
        let mut z = match ZSet::open(t, key) {
            Ok(Some(z)) => z,
            Ok(None) => return missing,
            Err(e) => return err(e),
        };
        let r = f(t, &mut z);
        match z.finish(t) {
            Ok(()) => r,
            Err(e) => err(e),
        }
    })
}

/// `(member, score)` pairs as a range reply: members alone, or with scores (flat in
/// RESP2, pairs in RESP3).
pub(super) fn pairs_reply(items: Vec<(Vec<u8>, f64)>, withscores: bool, proto: u8) -> Reply {
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
        ctx.store().write(&[key], ctx.call, |t| {
            let mut set = match ZSet::open(t, key) {
                Err(e) => return err(e),
                Ok(Some(z)) => z,
                Ok(None) if xx => return if incr { Reply::Nil } else { Reply::Int(0) },
                Ok(None) => match ZSet::create(t, key) {
                    Ok(z) => z,
                    Err(e) => return err(e),
                },
            };
            let (mut added, mut changed) = (0, 0);
            let mut incr_result = None;
            let mut failed = None;
            for (score, member) in pairs {
                let cur = set.score(t, member);
                let new = match cur {
                    Some(c) if incr => c + score,
                    _ => score,
                };
                if new.is_nan() {
                    failed = Some(Reply::err("ERR resulting score is not a number (NaN)"));
                    break;
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
                if let Err(e) = set.insert(t, member, new, cur) {
                    failed = Some(err(e));
                    break;
                }
                match cur {
                    None => added += 1,
                    Some(c) if c != new => changed += 1,
                    Some(_) => {}
                }
                incr_result = Some(new);
            }
            if let Err(e) = set.finish(t) {
                return err(e);
            }
            if let Some(f) = failed {
                return f;
            }
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
            check_lengths([&p[1][..]]).map_err(err)?;
            self.pairs.push((score, &p[1][..]));
        }
        Ok(())
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
        let members = self.members;
        change(ctx, self.key, Reply::Int(0), |t, z| {
            Reply::Int(members.iter().filter(|m| z.remove(t, m)).count() as i64)
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
        read(ctx, self.key, Reply::Nil, |t, z| {
            z.score(t, self.member).map_or(Reply::Nil, Reply::Double)
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
        read(ctx, self.key, missing, |t, z| {
            Reply::Array(
                members
                    .iter()
                    .map(|m| z.score(t, m).map_or(Reply::Nil, Reply::Double))
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
        read(ctx, self.key, Reply::Int(0), |_, z| {
            Reply::Int(z.len() as i64)
        })
    }
}

fn score_bound(a: &[u8]) -> Option<ScoreBound> {
    match a.strip_prefix(b"(") {
        Some(rest) => parse_f64(rest).map(Bound::Excluded),
        None => parse_f64(a).map(Bound::Included),
    }
}

/// A score range as Redis writes it (`1`, `(1`, `-inf`, `+inf`).
pub(super) fn score_range(min: &[u8], max: &[u8]) -> Result<(ScoreBound, ScoreBound), Reply> {
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

/// A lexicographic range; `None` when it is empty by construction (`+` as minimum).
pub(super) type LexRange = Option<(Bound<Vec<u8>>, Bound<Vec<u8>>)>;

/// Parses a lexicographic range with Redis's error.
pub(super) fn lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Reply> {
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
        read(ctx, key, Reply::Int(0), |t, z| {
            Reply::Int(z.count_by_score(t, lo, hi) as i64)
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
        read(ctx, key, Reply::Int(0), |t, z| {
            Reply::Int(range.map_or(0, |(lo, hi)| z.count_by_lex(t, &lo, &hi)) as i64)
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
        read(ctx, self.key, Reply::Nil, |t, z| {
            z.rank(t, self.member, self.rev)
                .map_or(Reply::Nil, |r| Reply::Int(r as i64))
        })
    }
}

/// `ZPOPMIN key [count]`, `ZPOPMAX key [count]`.
pub(super) struct ZPop<'a> {
    key: &'a [u8],
    max: bool,
    count: Option<usize>,
}

impl<'a> Command<'a> for ZPop<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        if args.len() > 3 {
            return Err(syntax_error());
        }
        let count = match args.get(2) {
            None => None,
            Some(c) => match parse_i64(c) {
                Some(n) if n >= 0 => Some(n as usize),
                _ => return Err(Reply::err("ERR value is out of range, must be positive")),
            },
        };
        Ok(ZPop {
            key: &args[1],
            max: args[0].eq_ignore_ascii_case(b"zpopmax"),
            count,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let (max, count) = (self.max, self.count);
        let proto = ctx.client.proto;
        change(ctx, self.key, Reply::Array(vec![]), |t, z| {
            let popped = z.pop(t, max, count.unwrap_or(1));
            match count {
                // Without a count, RESP3 too gets a flat member-score pair.
                None => pairs_reply(popped, true, 2),
                Some(_) => pairs_reply(popped, true, proto),
            }
        })
    }
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub(super) struct ZRandMember<'a> {
    key: &'a [u8],
    count: Option<i64>,
    withscores: bool,
}

impl<'a> Command<'a> for ZRandMember<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (count, withscores) = parse_rand_count(args, b"WITHSCORES")?;
        Ok(ZRandMember {
            key: &args[1],
            count,
            withscores,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let proto = ctx.client.proto;
        let Some(count) = self.count else {
            return read(ctx, self.key, Reply::Nil, |t, z| {
                z.random_distinct(t, 1)
                    .pop()
                    .map_or(Reply::Nil, |(m, _)| Reply::Bulk(m))
            });
        };
        let withscores = self.withscores;
        read(ctx, self.key, Reply::Array(vec![]), |t, z| {
            let items = if count >= 0 {
                z.random_distinct(t, count as usize)
            } else {
                z.random_repeated(t, count.unsigned_abs() as usize)
            };
            pairs_reply(items, withscores, proto)
        })
    }
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`.
pub(super) struct ZScan<'a>(ScanArgs<'a>);

impl<'a> Command<'a> for ZScan<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        ScanArgs::parse(args).map(ZScan)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let s = self.0;
        let after = match s.resume(ctx) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let page = ctx
            .store()
            .write(&[s.key], ctx.call, |t| match ZSet::open(t, s.key) {
                Err(e) => Err(err(e)),
                Ok(None) => Ok(None),
                Ok(Some(z)) => Ok(Some(z.page(t, after.as_deref(), s.count))),
            });
        match page {
            Err(r) => r,
            Ok(None) => Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![])]),
            Ok(Some((items, next))) => {
                let mut out = Vec::new();
                for (m, score) in items {
                    if s.matches(&m) {
                        out.push(Reply::Bulk(m));
                        out.push(Reply::bulk(crate::num::format_score(score)));
                    }
                }
                ScanArgs::reply(ctx, next, out)
            }
        }
    }
}
