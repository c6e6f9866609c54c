//! Set commands: `SADD`, `SREM`, `SISMEMBER`, `SMISMEMBER`, `SMEMBERS`, `SCARD`, `SPOP`,
//! `SRANDMEMBER`, `SMOVE`, `SINTER`, `SUNION`, `SDIFF`, their `…STORE` forms,
//! `SINTERCARD`, `SSCAN`.
//!
//! Every command runs under the stripes of its keys on [`Set`] views (`crate::coll`),
//! which log each member they add or remove (`SPOP` is logged as the `SREM`s it made,
//! a `…STORE` as `DEL` and the `SADD`s of the result). Replies that are sets are RESP3
//! sets. The order of a set's members is its encoding's (ascending integers, insertion
//! order, hash order), which a client must not rely on.

use std::collections::HashSet;

use super::cursor::ScanArgs;
use super::hashes::rand_count;
use super::{Command, Ctx, syntax_error};
use crate::coll::{self, Set, check_lengths};
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::Txn;

fn err(e: coll::Error) -> Reply {
    Reply::err(e.message())
}

fn bulks(members: Vec<Vec<u8>>) -> Vec<Reply> {
    members.into_iter().map(Reply::Bulk).collect()
}

/// Runs `f` on the set at `key` under its stripe, or replies `missing`.
fn read(
    ctx: &Ctx<'_>,
    key: &[u8],
    missing: Reply,
    f: impl FnOnce(&Txn<'_>, &Set<'_>) -> Reply,
) -> Reply {
    ctx.store()
        .write(&[key], ctx.call, |t| match Set::open(t, key) {
            Err(e) => err(e),
            Ok(None) => missing,
            Ok(Some(s)) => f(t, &s),
        })
}

/// `SADD key member …` and `SREM key member …`.
pub(super) struct SAdd<'a> {
    key: &'a [u8],
    members: &'a [Vec<u8>],
    remove: bool,
}

impl<'a> Command<'a> for SAdd<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let remove = args[0].eq_ignore_ascii_case(b"srem");
        if !remove {
            check_lengths(args[2..].iter().map(Vec::as_slice)).map_err(err)?;
        }
        Ok(SAdd {
            key: &args[1],
            members: &args[2..],
            remove,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| {
            let opened = if self.remove {
                Set::open(t, key)
            } else {
                Set::open_or_create(t, key).map(Some)
            };
            let mut s = match opened {
                Ok(Some(s)) => s,
                Ok(None) => return Reply::Int(0),
                Err(e) => return err(e),
            };
            let mut n = 0;
            let mut res = Ok(());
            for m in self.members {
                if self.remove {
                    n += i64::from(s.remove(t, m));
                } else {
                    match s.add(t, m) {
                        Ok(added) => n += i64::from(added),
                        Err(e) => {
                            res = Err(e);
                            break;
                        }
                    }
                }
            }
            match (res, s.finish(t)) {
                (Err(e), _) | (Ok(()), Err(e)) => err(e),
                (Ok(()), Ok(())) => Reply::Int(n),
            }
        })
    }
}

/// `SISMEMBER key member`, `SMISMEMBER key member …`.
pub(super) struct SIsMember<'a> {
    key: &'a [u8],
    members: &'a [Vec<u8>],
    many: bool,
}

impl<'a> Command<'a> for SIsMember<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(SIsMember {
            key: &args[1],
            members: &args[2..],
            many: args[0].eq_ignore_ascii_case(b"smismember"),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let answer = |found: Vec<bool>| {
            if self.many {
                Reply::Array(
                    found
                        .into_iter()
                        .map(|b| Reply::Int(i64::from(b)))
                        .collect(),
                )
            } else {
                Reply::Int(i64::from(found[0]))
            }
        };
        let missing = answer(vec![false; self.members.len()]);
        read(ctx, self.key, missing, |t, s| {
            answer(self.members.iter().map(|m| s.contains(t, m)).collect())
        })
    }
}

/// `SMEMBERS key`, `SCARD key`.
pub(super) struct SMembers<'a> {
    key: &'a [u8],
    card: bool,
}

impl<'a> Command<'a> for SMembers<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(SMembers {
            key: &args[1],
            card: args[0].eq_ignore_ascii_case(b"scard"),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        if self.card {
            return read(ctx, self.key, Reply::Int(0), |_, s| {
                Reply::Int(s.len() as i64)
            });
        }
        read(ctx, self.key, Reply::Set(vec![]), |t, s| {
            Reply::Set(bulks(s.members(t)))
        })
    }
}

/// `SPOP key [count]`.
pub(super) struct SPop<'a> {
    key: &'a [u8],
    count: Option<u64>,
}

impl<'a> Command<'a> for SPop<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let count = match args.get(2) {
            None => None,
            Some(c) => match parse_i64(c) {
                Some(n) if n >= 0 => Some(n as u64),
                _ => return Err(Reply::err("ERR value is out of range, must be positive")),
            },
        };
        if args.len() > 3 {
            return Err(syntax_error());
        }
        Ok(SPop {
            key: &args[1],
            count,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let (key, count) = (self.key, self.count);
        let missing = if count.is_some() {
            Reply::Set(vec![])
        } else {
            Reply::Nil
        };
        ctx.store().write(&[key], ctx.call, |t| {
            let mut s = match Set::open(t, key) {
                Ok(Some(s)) => s,
                Ok(None) => return missing,
                Err(e) => return err(e),
            };
            let n = count.unwrap_or(1).min(s.len() as u64) as usize;
            let picked = s.pop(t, n);
            if let Err(e) = s.finish(t) {
                return err(e);
            }
            match count {
                None => picked.into_iter().next().map_or(Reply::Nil, Reply::Bulk),
                Some(_) => Reply::Set(bulks(picked)),
            }
        })
    }
}

/// `SRANDMEMBER key [count]`.
pub(super) struct SRandMember<'a> {
    key: &'a [u8],
    count: Option<i64>,
}

impl<'a> Command<'a> for SRandMember<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let count = match args.get(2) {
            None => None,
            Some(c) => Some(rand_count(c)?),
        };
        if args.len() > 3 {
            return Err(syntax_error());
        }
        Ok(SRandMember {
            key: &args[1],
            count,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Some(count) = self.count else {
            return read(ctx, self.key, Reply::Nil, |t, s| {
                s.random_distinct(t, 1)
                    .pop()
                    .map_or(Reply::Nil, Reply::Bulk)
            });
        };
        read(ctx, self.key, Reply::Array(vec![]), |t, s| {
            let picked = if count >= 0 {
                s.random_distinct(t, count as usize)
            } else {
                s.random_repeated(t, count.unsigned_abs() as usize)
            };
            Reply::Array(bulks(picked))
        })
    }
}

/// `SMOVE source destination member`.
pub(super) struct SMove<'a> {
    src: &'a [u8],
    dst: &'a [u8],
    member: &'a [u8],
}

impl<'a> Command<'a> for SMove<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        check_lengths([&args[3][..]]).map_err(err)?;
        Ok(SMove {
            src: &args[1],
            dst: &args[2],
            member: &args[3],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let SMove { src, dst, member } = self;
        ctx.store().write(&[src, dst], ctx.call, |t| {
            let mut from = match Set::open(t, src) {
                Ok(Some(s)) => s,
                Ok(None) => return Reply::Int(0),
                Err(e) => return err(e),
            };
            if src == dst {
                return Reply::Int(i64::from(from.contains(t, member)));
            }
            let mut to = match Set::open_or_create(t, dst) {
                Ok(s) => s,
                Err(e) => return err(e),
            };
            if !from.remove(t, member) {
                return Reply::Int(0);
            }
            let added = to.add(t, member);
            let done = from.finish(t).and(to.finish(t));
            match (added, done) {
                (Err(e), _) | (Ok(_), Err(e)) => err(e),
                (Ok(_), Ok(())) => Reply::Int(1),
            }
        })
    }
}

/// Which algebra: `SINTER`, `SUNION`, `SDIFF`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The members of the sets at `keys` combined by `op` (`limit`: stop an intersection
/// after that many, 0: none); `Err(WRONGTYPE)` when a key holds another type.
fn combine(t: &Txn<'_>, keys: &[&[u8]], op: Op, limit: usize) -> coll::Result<Vec<Vec<u8>>> {
    let mut sets = Vec::with_capacity(keys.len());
    for k in keys {
        sets.push(Set::open(t, k)?);
    }
    Ok(match op {
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                return Ok(Vec::new());
            }
            let mut sets: Vec<Set<'_>> = sets.into_iter().flatten().collect();
            sets.sort_by_key(Set::len);
            let mut out = Vec::new();
            for m in sets[0].members(t) {
                if sets[1..].iter().all(|s| s.contains(t, &m)) {
                    out.push(m);
                    if limit > 0 && out.len() >= limit {
                        break;
                    }
                }
            }
            out
        }
        Op::Union => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for s in sets.iter().flatten() {
                for m in s.members(t) {
                    if seen.insert(m.clone()) {
                        out.push(m);
                    }
                }
            }
            out
        }
        Op::Diff => {
            let Some(Some(first)) = sets.first() else {
                return Ok(Vec::new());
            };
            let others: Vec<&Set<'_>> = sets[1..].iter().flatten().collect();
            first
                .members(t)
                .into_iter()
                .filter(|m| !others.iter().any(|s| s.contains(t, m)))
                .collect()
        }
    })
}

/// `SINTER`, `SUNION`, `SDIFF` (`key …`) and their `…STORE destination key …` forms.
pub(super) struct SAlgebra<'a> {
    op: Op,
    dst: Option<&'a [u8]>,
    keys: Vec<&'a [u8]>,
}

impl<'a> Command<'a> for SAlgebra<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = args[0].to_ascii_lowercase();
        let op = match &name[1..5] {
            b"inte" => Op::Inter,
            b"unio" => Op::Union,
            _ => Op::Diff,
        };
        let store = name.ends_with(b"store");
        let first = if store { 2 } else { 1 };
        Ok(SAlgebra {
            op,
            dst: store.then(|| &args[1][..]),
            keys: args[first..].iter().map(Vec::as_slice).collect(),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let mut locked = self.keys.clone();
        locked.extend(self.dst);
        ctx.store().write(&locked, ctx.call, |t| {
            let members = match combine(t, &self.keys, self.op, 0) {
                Ok(m) => m,
                Err(e) => return err(e),
            };
            let Some(dst) = self.dst else {
                return Reply::Set(bulks(members));
            };
            t.delete(dst);
            let mut s = match Set::create(t, dst) {
                Ok(s) => s,
                Err(e) => return err(e),
            };
            let mut res = Ok(());
            for m in &members {
                if let Err(e) = s.add(t, m) {
                    res = Err(e);
                    break;
                }
            }
            let n = s.len();
            match (res, s.finish(t)) {
                (Err(e), _) | (Ok(()), Err(e)) => err(e),
                (Ok(()), Ok(())) => Reply::Int(n as i64),
            }
        })
    }
}

/// `SINTERCARD numkeys key … [LIMIT limit]`.
pub(super) struct SInterCard<'a> {
    keys: Vec<&'a [u8]>,
    limit: usize,
}

impl<'a> Command<'a> for SInterCard<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let n = match parse_i64(&args[1]) {
            Some(n) if n > 0 => n as usize,
            _ => return Err(Reply::err("ERR numkeys should be greater than 0")),
        };
        if n > args.len() - 2 {
            return Err(Reply::err(
                "ERR Number of keys can't be greater than number of args",
            ));
        }
        let mut limit = 0;
        let mut i = 2 + n;
        while i < args.len() {
            match (&args[i].to_ascii_uppercase()[..], args.get(i + 1)) {
                (b"LIMIT", Some(l)) => match parse_i64(l) {
                    Some(l) if l >= 0 => limit = l as usize,
                    Some(_) => return Err(Reply::err("ERR LIMIT can't be negative")),
                    None => return Err(Reply::err("ERR LIMIT can't be negative")),
                },
                _ => return Err(syntax_error()),
            }
            i += 2;
        }
        Ok(SInterCard {
            keys: args[2..2 + n].iter().map(Vec::as_slice).collect(),
            limit,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.store().write(&self.keys, ctx.call, |t| {
            match combine(t, &self.keys, Op::Inter, self.limit) {
                Ok(m) => Reply::Int(m.len() as i64),
                Err(e) => err(e),
            }
        })
    }
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`.
pub(super) struct SScan<'a>(ScanArgs<'a>);

impl<'a> Command<'a> for SScan<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        ScanArgs::parse(args).map(SScan)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let s = self.0;
        let after = match s.resume(ctx) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let page = ctx
            .store()
            .write(&[s.key], ctx.call, |t| match Set::open(t, s.key) {
                Err(e) => Err(err(e)),
                Ok(None) => Ok(None),
                Ok(Some(set)) => Ok(Some(set.page(t, after.as_deref(), s.count))),
            });
        match page {
            Err(r) => r,
            Ok(None) => Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![])]),
            Ok(Some(page)) => {
                let items = page
                    .items
                    .into_iter()
                    .filter(|(m, _)| s.matches(m))
                    .map(|(m, _)| Reply::Bulk(m))
                    .collect();
                ScanArgs::reply(ctx, page.next, items)
            }
        }
    }
}
