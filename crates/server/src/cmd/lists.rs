//! List commands: `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`, `LPOP`, `RPOP` (with a count),
//! `LLEN`, `LRANGE`, `LINDEX`, `LSET`, `LINSERT`, `LREM`, `LTRIM`, `LPOS`, `LMOVE`,
//! `RPOPLPUSH`. The blocking forms are in `blocking`.
//!
//! Every command runs under the stripes of its keys on [`List`] views (`crate::coll`),
//! which log each position they change. Indexes follow Redis: negative ones count from
//! the tail, ranges are clamped to the list.

use std::ops::ControlFlow;

use super::{Command, Ctx, not_integer, syntax_error};
use crate::coll::{self, End, List, check_values};
use crate::num::parse_i64;
use crate::resp::{Reply, put_bulk};
use crate::store::Txn;

fn err(e: coll::Error) -> Reply {
    Reply::err(e.message())
}

/// Runs `f` on the list at `key` under its stripe, or replies `missing`.
fn read(
    ctx: &Ctx<'_>,
    key: &[u8],
    missing: Reply,
    f: impl FnOnce(&Txn<'_>, &List<'_>) -> Reply,
) -> Reply {
    ctx.store()
        .write(&[key], ctx.call, |t| match List::open(t, key) {
            Err(e) => err(e),
            Ok(None) => missing,
            Ok(Some(l)) => f(t, &l),
        })
}

/// Runs `f` on the existing list at `key` and writes it back, or replies `missing`.
fn change(
    ctx: &Ctx<'_>,
    key: &[u8],
    missing: Reply,
    f: impl FnOnce(&Txn<'_>, &mut List<'_>) -> coll::Result<Reply>,
) -> Reply {
    ctx.store().write(&[key], ctx.call, |t| {
        let mut l = match List::open(t, key) {
            Ok(Some(l)) => l,
            Ok(None) => return missing,
            Err(e) => return err(e),
        };
        let r = f(t, &mut l);
        match (r, l.finish(t)) {
            (Err(e), _) | (Ok(_), Err(e)) => err(e),
            (Ok(r), Ok(())) => r,
        }
    })
}

/// Redis's `LEFT`/`RIGHT`.
pub(super) fn parse_end(a: &[u8]) -> Result<End, Reply> {
    if a.eq_ignore_ascii_case(b"left") {
        Ok(End::Left)
    } else if a.eq_ignore_ascii_case(b"right") {
        Ok(End::Right)
    } else {
        Err(syntax_error())
    }
}

/// `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX` `key element …`.
pub(super) struct Push<'a> {
    key: &'a [u8],
    elements: &'a [Vec<u8>],
    end: End,
    only_existing: bool,
}

impl<'a> Command<'a> for Push<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = args[0].to_ascii_lowercase();
        check_values(args[2..].iter().map(Vec::as_slice)).map_err(err)?;
        Ok(Push {
            key: &args[1],
            elements: &args[2..],
            end: if name[0] == b'l' {
                End::Left
            } else {
                End::Right
            },
            only_existing: name.ends_with(b"x"),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let key = self.key;
        ctx.store().write(&[key], ctx.call, |t| {
            let opened = match List::open(t, key) {
                Ok(Some(l)) => Ok(l),
                Ok(None) if self.only_existing => return Reply::Int(0),
                Ok(None) => List::create(t, key),
                Err(e) => Err(e),
            };
            let mut l = match opened {
                Ok(l) => l,
                Err(e) => return err(e),
            };
            let mut res = Ok(());
            for e in self.elements {
                if let Err(x) = l.push(t, self.end, e) {
                    res = Err(x);
                    break;
                }
            }
            let n = l.len();
            match (res, l.finish(t)) {
                (Err(e), _) | (Ok(()), Err(e)) => err(e),
                (Ok(()), Ok(())) => Reply::Int(n as i64),
            }
        })
    }
}

/// `LPOP key [count]`, `RPOP key [count]`.
pub(super) struct Pop<'a> {
    key: &'a [u8],
    end: End,
    count: Option<usize>,
}

impl<'a> Command<'a> for Pop<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let count = match args.get(2) {
            None => None,
            Some(c) => match parse_i64(c) {
                Some(n) if n >= 0 => Some(n as usize),
                _ => return Err(Reply::err("ERR value is out of range, must be positive")),
            },
        };
        if args.len() > 3 {
            return Err(crate::cmd::arity_error(
                &String::from_utf8_lossy(&args[0]).to_ascii_lowercase(),
            ));
        }
        Ok(Pop {
            key: &args[1],
            end: if args[0][0].eq_ignore_ascii_case(&b'l') {
                End::Left
            } else {
                End::Right
            },
            count,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let (end, count) = (self.end, self.count);
        let missing = if count.is_some() {
            Reply::NilArray
        } else {
            Reply::Nil
        };
        change(ctx, self.key, missing, |t, l| {
            Ok(match count {
                None => l.pop(t, end).map_or(Reply::Nil, Reply::Bulk),
                Some(n) => {
                    let mut out = Vec::new();
                    for _ in 0..n {
                        match l.pop(t, end) {
                            Some(e) => out.push(Reply::Bulk(e)),
                            None => break,
                        }
                    }
                    Reply::Array(out)
                }
            })
        })
    }
}

/// `LLEN key`.
pub(super) struct LLen<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for LLen<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(LLen { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        read(ctx, self.key, Reply::Int(0), |_, l| {
            Reply::Int(l.len() as i64)
        })
    }
}

/// Redis's clamping of `start stop` to a list (or a sorted set's ranks) of `len`: the
/// index range, or `None`.
pub(super) fn clamp(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 { stop + len } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

/// `LRANGE key start stop`.
pub(super) struct LRange<'a> {
    key: &'a [u8],
    start: i64,
    stop: i64,
}

impl<'a> Command<'a> for LRange<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        match (parse_i64(&args[2]), parse_i64(&args[3])) {
            (Some(start), Some(stop)) => Ok(LRange {
                key: &args[1],
                start,
                stop,
            }),
            _ => Err(not_integer()),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        read(ctx, self.key, Reply::Array(vec![]), |t, l| {
            match clamp(self.start, self.stop, l.len()) {
                None => Reply::Array(vec![]),
                Some((a, b)) => {
                    // The elements' encodings straight into one buffer: no allocation
                    // per element.
                    let mut bytes = Vec::with_capacity((b - a + 1).min(4096) * 16);
                    let mut count = 0;
                    l.range_with(t, a, b, &mut |e| {
                        count += 1;
                        put_bulk(&mut bytes, e);
                    });
                    Reply::Bulks { count, bytes }
                }
            }
        })
    }
}

/// `LINDEX key index` (as in Redis, the key is looked at before the index).
pub(super) struct LIndex<'a> {
    key: &'a [u8],
    index: Option<i64>,
}

impl<'a> Command<'a> for LIndex<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(LIndex {
            key: &args[1],
            index: parse_i64(&args[2]),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        read(ctx, self.key, Reply::Nil, |t, l| {
            let Some(index) = self.index else {
                return not_integer();
            };
            let i = if index < 0 {
                index + l.len() as i64
            } else {
                index
            };
            if i < 0 {
                return Reply::Nil;
            }
            l.get(t, i as usize).map_or(Reply::Nil, Reply::Bulk)
        })
    }
}

/// `LSET key index element` (as in Redis, the key is looked at before the index).
pub(super) struct LSet<'a> {
    key: &'a [u8],
    index: Option<i64>,
    element: &'a [u8],
}

impl<'a> Command<'a> for LSet<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        check_values([&args[3][..]]).map_err(err)?;
        Ok(LSet {
            key: &args[1],
            index: parse_i64(&args[2]),
            element: &args[3],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        change(ctx, self.key, Reply::err("ERR no such key"), |t, l| {
            let Some(index) = self.index else {
                return Ok(not_integer());
            };
            let i = if index < 0 {
                index + l.len() as i64
            } else {
                index
            };
            if i < 0 || i >= l.len() as i64 {
                return Ok(Reply::err("ERR index out of range"));
            }
            l.set(t, i as usize, self.element)?;
            Ok(Reply::OK)
        })
    }
}

/// `LINSERT key BEFORE|AFTER pivot element`.
pub(super) struct LInsert<'a> {
    key: &'a [u8],
    after: bool,
    pivot: &'a [u8],
    element: &'a [u8],
}

impl<'a> Command<'a> for LInsert<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let after = if args[2].eq_ignore_ascii_case(b"after") {
            true
        } else if args[2].eq_ignore_ascii_case(b"before") {
            false
        } else {
            return Err(syntax_error());
        };
        check_values([&args[4][..]]).map_err(err)?;
        Ok(LInsert {
            key: &args[1],
            after,
            pivot: &args[3],
            element: &args[4],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        change(ctx, self.key, Reply::Int(0), |t, l| {
            Ok(if l.insert(t, self.pivot, self.after, self.element)? {
                Reply::Int(l.len() as i64)
            } else {
                Reply::Int(-1)
            })
        })
    }
}

/// `LREM key count element`.
pub(super) struct LRem<'a> {
    key: &'a [u8],
    count: i64,
    element: &'a [u8],
}

impl<'a> Command<'a> for LRem<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(LRem {
            key: &args[1],
            count: parse_i64(&args[2]).ok_or_else(not_integer)?,
            element: &args[3],
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        change(ctx, self.key, Reply::Int(0), |t, l| {
            Ok(Reply::Int(l.remove(t, self.count, self.element)? as i64))
        })
    }
}

/// `LTRIM key start stop`.
pub(super) struct LTrim<'a> {
    key: &'a [u8],
    start: i64,
    stop: i64,
}

impl<'a> Command<'a> for LTrim<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        match (parse_i64(&args[2]), parse_i64(&args[3])) {
            (Some(start), Some(stop)) => Ok(LTrim {
                key: &args[1],
                start,
                stop,
            }),
            _ => Err(not_integer()),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        change(ctx, self.key, Reply::OK, |t, l| {
            match clamp(self.start, self.stop, l.len()) {
                Some((a, b)) => l.trim(t, a, b)?,
                None => l.trim(t, 1, 0)?,
            }
            Ok(Reply::OK)
        })
    }
}

/// `LPOS key element [RANK rank] [COUNT count] [MAXLEN len]`.
pub(super) struct LPos<'a> {
    key: &'a [u8],
    element: &'a [u8],
    rank: i64,
    count: Option<usize>,
    maxlen: usize,
}

impl<'a> Command<'a> for LPos<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut p = LPos {
            key: &args[1],
            element: &args[2],
            rank: 1,
            count: None,
            maxlen: 0,
        };
        let mut i = 3;
        while i < args.len() {
            let Some(v) = args.get(i + 1) else {
                return Err(syntax_error());
            };
            let n = parse_i64(v);
            match &args[i].to_ascii_uppercase()[..] {
                b"RANK" => match n {
                    None => return Err(not_integer()),
                    Some(0) => {
                        return Err(Reply::err(
                            "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                        ));
                    }
                    Some(r) => p.rank = r,
                },
                b"COUNT" => match n {
                    None => return Err(not_integer()),
                    Some(c) if c < 0 => return Err(Reply::err("ERR COUNT can't be negative")),
                    Some(c) => p.count = Some(c as usize),
                },
                b"MAXLEN" => match n {
                    None => return Err(not_integer()),
                    Some(m) if m < 0 => return Err(Reply::err("ERR MAXLEN can't be negative")),
                    Some(m) => p.maxlen = m as usize,
                },
                _ => return Err(syntax_error()),
            }
            i += 2;
        }
        Ok(p)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let LPos {
            key,
            element,
            rank,
            count,
            maxlen,
        } = self;
        let missing = if count.is_some() {
            Reply::Array(vec![])
        } else {
            Reply::Nil
        };
        read(ctx, key, missing, |t, l| {
            let want = match count {
                Some(0) => usize::MAX,
                Some(c) => c,
                None => 1,
            };
            let mut skip = rank.unsigned_abs() - 1;
            let mut found = Vec::new();
            let mut seen = 0usize;
            l.for_each(t, rank < 0, &mut |i, v| {
                seen += 1;
                if v == element {
                    if skip > 0 {
                        skip -= 1;
                    } else {
                        found.push(Reply::Int(i as i64));
                        if found.len() >= want {
                            return ControlFlow::Break(());
                        }
                    }
                }
                if maxlen > 0 && seen >= maxlen {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            match count {
                Some(_) => Reply::Array(found),
                None => found.pop().unwrap_or(Reply::Nil),
            }
        })
    }
}

/// Moves the element at `from` of `src` to `to` of `dst` (one list when they are the same
/// key): the element, `None` when `src` is absent; `WRONGTYPE` when either holds another
/// type. Call with both stripes held.
pub(super) fn move_element(
    t: &Txn<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> coll::Result<Option<Vec<u8>>> {
    let Some(mut s) = List::open(t, src)? else {
        return Ok(None);
    };
    if src == dst {
        let v = s.pop(t, from);
        let r = match &v {
            Some(e) => s.push(t, to, e),
            None => Ok(()),
        };
        s.finish(t)?;
        return r.map(|()| v);
    }
    let mut d = match List::open(t, dst)? {
        Some(d) => d,
        None => List::create(t, dst)?,
    };
    let Some(v) = s.pop(t, from) else {
        return Ok(None);
    };
    let r = d.push(t, to, &v);
    s.finish(t)?;
    d.finish(t)?;
    r.map(|()| Some(v))
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`, `RPOPLPUSH source destination`.
pub(super) struct LMove<'a> {
    src: &'a [u8],
    dst: &'a [u8],
    from: End,
    to: End,
}

impl<'a> Command<'a> for LMove<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let (from, to) = if args.len() == 3 {
            (End::Right, End::Left)
        } else {
            (parse_end(&args[3])?, parse_end(&args[4])?)
        };
        Ok(LMove {
            src: &args[1],
            dst: &args[2],
            from,
            to,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let LMove { src, dst, from, to } = self;
        ctx.store().write(&[src, dst], ctx.call, |t| {
            match move_element(t, src, dst, from, to) {
                Ok(Some(v)) => Reply::Bulk(v),
                Ok(None) => Reply::Nil,
                Err(e) => err(e),
            }
        })
    }
}
