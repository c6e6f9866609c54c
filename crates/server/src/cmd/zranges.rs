//! Sorted-set range commands: `ZRANGE` (`BYSCORE`/`BYLEX`/`REV`/`LIMIT`/`WITHSCORES`),
//! `ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`,
//! `ZRANGESTORE`, and the removals `ZREMRANGEBYRANK`, `ZREMRANGEBYSCORE`,
//! `ZREMRANGEBYLEX` (logged as the `ZREM`s they make).

use super::lists::clamp;
use super::zsets::{LexRange, change, err, lex_range, pairs_reply, read, score_range};
use super::{Command, Ctx, not_integer, syntax_error};
use crate::coll::{Limit, ScoreBound, ZSet};
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::Txn;

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

/// The selection, direction and `LIMIT offset count` of a range, as given.
struct Range {
    selection: Selection,
    rev: bool,
    limit: Option<(i64, i64)>,
}

impl Range {
    /// The members selected in `z`.
    fn select(&self, t: &Txn<'_>, z: &ZSet<'_>) -> Vec<(Vec<u8>, f64)> {
        // A negative offset selects nothing (after the key's type is checked, as in Redis).
        let limit = match self.limit {
            None => Limit::ALL,
            Some((o, _)) if o < 0 => return Vec::new(),
            Some((o, c)) => Limit {
                offset: o as usize,
                count: (c >= 0).then_some(c as usize),
            },
        };
        match &self.selection {
            Selection::Rank(start, stop) => match clamp(*start, *stop, z.len()) {
                Some((a, b)) => z.by_rank(t, a, b, self.rev),
                None => Vec::new(),
            },
            Selection::Score(lo, hi) => z.by_score(t, *lo, *hi, self.rev, limit),
            Selection::Lex(None) => Vec::new(),
            Selection::Lex(Some((lo, hi))) => z.by_lex(t, lo, hi, self.rev, limit),
        }
    }
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

/// Parses `min max [options]` from `args[at..]` for the command `name` (lower case);
/// returns the range and whether `WITHSCORES` was given.
fn parse_range(name: &[u8], args: &[Vec<u8>], at: usize) -> Result<(Range, bool), Reply> {
    let (mut by, mut limit, mut withscores) = (By::Rank, None, false);
    let mut rev;
    let mut i = at + 2;
    let store = name == b"zrangestore";
    if name == b"zrange" || store || name == b"zrevrange" {
        let auto = name != b"zrevrange";
        rev = !auto;
        while i < args.len() {
            match &args[i].to_ascii_uppercase()[..] {
                b"BYSCORE" if auto => by = By::Score,
                b"BYLEX" if auto => by = By::Lex,
                b"REV" if auto => rev = true,
                b"WITHSCORES" if !store => withscores = true,
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
    let (from, to) = (&args[at][..], &args[at + 1][..]);
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
    Ok((
        Range {
            selection,
            rev,
            limit,
        },
        withscores,
    ))
}

/// Every range command: `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
/// [WITHSCORES]`, `ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`,
/// `ZREVRANGEBYLEX`.
pub(super) struct ZRange<'a> {
    key: &'a [u8],
    range: Range,
    withscores: bool,
}

impl<'a> Command<'a> for ZRange<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (range, withscores) = parse_range(&args[0].to_ascii_lowercase(), args, 2)?;
        Ok(ZRange {
            key: &args[1],
            range,
            withscores,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let proto = ctx.client.proto;
        let ZRange {
            key,
            range,
            withscores,
        } = self;
        read(ctx, key, Reply::Array(vec![]), |t, z| {
            pairs_reply(range.select(t, z), withscores, proto)
        })
    }
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`.
pub(super) struct ZRangeStore<'a> {
    dst: &'a [u8],
    src: &'a [u8],
    range: Range,
}

impl<'a> Command<'a> for ZRangeStore<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (range, _) = parse_range(b"zrangestore", args, 3)?;
        Ok(ZRangeStore {
            dst: &args[1],
            src: &args[2],
            range,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let ZRangeStore { dst, src, range } = self;
        ctx.store().write(&[dst, src], ctx.call, |t| {
            let items = match ZSet::open(t, src) {
                Err(e) => return err(e),
                Ok(None) => Vec::new(),
                Ok(Some(z)) => range.select(t, &z),
            };
            store_result(t, dst, &items, false)
        })
    }
}

/// Replaces `dst` by a sorted set of `items` (deleting it when there are none); the
/// reply is the new set's size. Its form follows Redis's: `ZRANGESTORE` starts compact
/// when the count allows and converts as members need; an algebra result (`whole`) is
/// compact only if it fits whole (Redis builds a skiplist and converts it after), which
/// decides whether a `-0` score survives.
pub(super) fn store_result(
    t: &Txn<'_>,
    dst: &[u8],
    items: &[(Vec<u8>, f64)],
    whole: bool,
) -> Reply {
    t.delete(dst);
    let mut z = match ZSet::create(t, dst) {
        Ok(z) => z,
        Err(e) => return err(e),
    };
    let th = t.thresholds();
    let fits = items.len() as i64 <= th.zset_entries
        && (!whole || items.iter().all(|(m, _)| m.len() as i64 <= th.zset_value));
    if !fits
        && !items.is_empty()
        && let Err(e) = z.make_large(t)
    {
        return err(e);
    }
    let mut failed = None;
    for (m, s) in items {
        let old = z.score(t, m);
        if let Err(e) = z.insert(t, m, *s, old) {
            failed = Some(err(e));
            break;
        }
    }
    let n = z.len();
    match (failed, z.finish(t)) {
        (Some(r), _) => r,
        (None, Err(e)) => err(e),
        (None, Ok(())) => Reply::Int(n as i64),
    }
}

/// `ZREMRANGEBYRANK key start stop`, `ZREMRANGEBYSCORE key min max`, `ZREMRANGEBYLEX key
/// min max`.
pub(super) struct ZRemRange<'a> {
    key: &'a [u8],
    range: Range,
}

impl<'a> Command<'a> for ZRemRange<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = args[0].to_ascii_lowercase();
        let selection = if name.ends_with(b"rank") {
            match (parse_i64(&args[2]), parse_i64(&args[3])) {
                (Some(a), Some(b)) => Selection::Rank(a, b),
                _ => return Err(not_integer()),
            }
        } else if name.ends_with(b"score") {
            let (a, b) = score_range(&args[2], &args[3])?;
            Selection::Score(a, b)
        } else {
            Selection::Lex(lex_range(&args[2], &args[3])?)
        };
        Ok(ZRemRange {
            key: &args[1],
            range: Range {
                selection,
                rev: false,
                limit: None,
            },
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let range = self.range;
        change(ctx, self.key, Reply::Int(0), |t, z| {
            let items = range.select(t, z);
            Reply::Int(z.remove_all(t, &items) as i64)
        })
    }
}
