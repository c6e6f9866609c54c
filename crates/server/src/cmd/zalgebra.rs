//! Sorted-set algebra: `ZUNIONSTORE`, `ZINTERSTORE`, `ZDIFFSTORE` and their reply forms
//! `ZUNION`, `ZINTER`, `ZDIFF` (`WEIGHTS`, `AGGREGATE SUM|MIN|MAX`, `WITHSCORES`).
//!
//! As in Redis, a source may be a plain set (its members score 1), a missing key is an
//! empty set, a score times its weight that is not a number is 0, and so is a sum of
//! `inf` and `-inf`. The result is in the set's order (score, then member); a `…STORE`
//! replaces its destination (deleting it when the result is empty), logged as `DEL` and
//! the result's `ZADD`s.

use std::collections::HashMap;

use super::zranges::store_result;
use super::zsets::{err, pairs_reply};
use super::{Command, Ctx, not_integer, syntax_error};
use crate::coll::{self, Scored, Set, ZSet};
use crate::layout::score_key;
use crate::num::{parse_f64, parse_i64};
use crate::resp::Reply;
use crate::store::{Kind, Txn};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let s = a + b;
                if s.is_nan() { 0.0 } else { s }
            }
            // As C's `b < a ? b : a`: a NaN `b` keeps `a`.
            Aggregate::Min => {
                if b < a {
                    b
                } else {
                    a
                }
            }
            Aggregate::Max => {
                if b > a {
                    b
                } else {
                    a
                }
            }
        }
    }
}

/// `ZUNION`/`ZINTER`/`ZDIFF` `numkeys key … [WEIGHTS w …] [AGGREGATE …] [WITHSCORES]` and
/// the `…STORE destination numkeys key …` forms.
pub(super) struct ZAlgebra<'a> {
    op: Op,
    dst: Option<&'a [u8]>,
    keys: Vec<&'a [u8]>,
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    /// An error in the options, which Redis reports only after checking the sources'
    /// types.
    bad_options: Option<Reply>,
}

impl<'a> Command<'a> for ZAlgebra<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        let op = match &name[..5] {
            "zunio" => Op::Union,
            "zinte" => Op::Inter,
            _ => Op::Diff,
        };
        let store = name.ends_with("store");
        let at = if store { 2 } else { 1 };
        let n = match parse_i64(&args[at]) {
            None => return Err(not_integer()),
            Some(n) if n < 1 => {
                return Err(Reply::err(format!(
                    "ERR at least 1 input key is needed for '{name}' command"
                )));
            }
            Some(n) => n as usize,
        };
        if n > args.len() - at - 1 {
            return Err(syntax_error());
        }
        let mut z = ZAlgebra {
            op,
            dst: store.then(|| &args[1][..]),
            keys: args[at + 1..at + 1 + n].iter().map(Vec::as_slice).collect(),
            weights: vec![1.0; n],
            aggregate: Aggregate::Sum,
            withscores: false,
            bad_options: None,
        };
        if let Err(r) = z.parse_options(args, at + 1 + n, store) {
            z.bad_options = Some(r);
        }
        Ok(z)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let proto = ctx.client.proto;
        let mut locked = self.keys.clone();
        locked.extend(self.dst);
        ctx.store().write(&locked, ctx.call, |t| {
            let items = match self.combine(t) {
                Ok(_) if self.bad_options.is_some() => {
                    return self.bad_options.clone().unwrap_or(Reply::Nil);
                }
                Ok(items) => items,
                Err(e) => return err(e),
            };
            match self.dst {
                Some(dst) => store_result(t, dst, &items, true),
                None => pairs_reply(items, self.withscores, proto),
            }
        })
    }
}

impl ZAlgebra<'_> {
    /// Parses `[WEIGHTS …] [AGGREGATE …] [WITHSCORES]` from `args[i..]`.
    fn parse_options(&mut self, args: &[Vec<u8>], mut i: usize, store: bool) -> Result<(), Reply> {
        let n = self.keys.len();
        while i < args.len() {
            let rest = args.len() - i - 1;
            match &args[i].to_ascii_uppercase()[..] {
                b"WEIGHTS" if self.op != Op::Diff && rest >= n => {
                    for (j, w) in args[i + 1..i + 1 + n].iter().enumerate() {
                        self.weights[j] = parse_f64(w)
                            .ok_or_else(|| Reply::err("ERR weight value is not a float"))?;
                    }
                    i += n;
                }
                b"AGGREGATE" if self.op != Op::Diff && rest >= 1 => {
                    self.aggregate = match &args[i + 1].to_ascii_uppercase()[..] {
                        b"SUM" => Aggregate::Sum,
                        b"MIN" => Aggregate::Min,
                        b"MAX" => Aggregate::Max,
                        _ => return Err(syntax_error()),
                    };
                    i += 1;
                }
                b"WITHSCORES" if !store => self.withscores = true,
                _ => return Err(syntax_error()),
            }
            i += 1;
        }
        Ok(())
    }

    /// The members of source `key` with their scores (a plain set's score 1), `None` when
    /// absent.
    fn source(t: &Txn<'_>, key: &[u8]) -> coll::Result<Option<Scored>> {
        match t.load(key).map(|e| e.kind) {
            None => Ok(None),
            Some(Kind::ZSet) => Ok(ZSet::open(t, key)?.map(|z| z.members(t))),
            Some(Kind::Set) => Ok(
                Set::open(t, key)?.map(|s| s.members(t).into_iter().map(|m| (m, 1.0)).collect())
            ),
            Some(_) => Err(coll::Error::WrongType),
        }
    }

    fn combine(&self, t: &Txn<'_>) -> coll::Result<Vec<(Vec<u8>, f64)>> {
        let mut sources = Vec::with_capacity(self.keys.len());
        for k in &self.keys {
            sources.push(Self::source(t, k)?);
        }
        let weigh = |s: f64, w: f64| {
            let v = s * w;
            if v.is_nan() { 0.0 } else { v }
        };
        let mut out: Vec<(Vec<u8>, f64)> = match self.op {
            Op::Diff => {
                let Some(Some(first)) = sources.first() else {
                    return Ok(Vec::new());
                };
                let others: Vec<HashMap<&[u8], f64>> = sources[1..]
                    .iter()
                    .flatten()
                    .map(|s| s.iter().map(|(m, v)| (&m[..], *v)).collect())
                    .collect();
                first
                    .iter()
                    .filter(|(m, _)| !others.iter().any(|o| o.contains_key(&m[..])))
                    .cloned()
                    .collect()
            }
            Op::Inter => {
                if sources.iter().any(Option::is_none) {
                    return Ok(Vec::new());
                }
                // As Redis: the smallest source first (its weighted scores are zeroed when
                // not a number; the others' are not, before aggregating).
                let mut order: Vec<usize> = (0..sources.len()).collect();
                order.sort_by_key(|&j| sources[j].as_ref().map_or(0, Vec::len));
                let maps: Vec<HashMap<&[u8], f64>> = sources
                    .iter()
                    .flatten()
                    .map(|s| s.iter().map(|(m, v)| (&m[..], *v)).collect())
                    .collect();
                let first = order[0];
                let mut out = Vec::new();
                for (m, s) in sources[first].iter().flatten() {
                    let mut acc = weigh(*s, self.weights[first]);
                    let mut all = true;
                    for &j in &order[1..] {
                        match maps[j].get(&m[..]) {
                            Some(v) => acc = self.aggregate.apply(acc, v * self.weights[j]),
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    if all {
                        out.push((m.clone(), acc));
                    }
                }
                out
            }
            Op::Union => {
                // As Redis: the sources from the smallest (the order decides between `0`
                // and `-0` under MIN and MAX, and the rounding of sums).
                let mut order: Vec<usize> = (0..sources.len()).collect();
                order.sort_by_key(|&j| sources[j].as_ref().map_or(0, Vec::len));
                let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
                for j in order {
                    let s = &sources[j];
                    for (m, v) in s.iter().flatten() {
                        let w = weigh(*v, self.weights[j]);
                        acc.entry(m.clone())
                            .and_modify(|a| *a = self.aggregate.apply(*a, w))
                            .or_insert(w);
                    }
                }
                acc.into_iter().collect()
            }
        };
        out.sort_by(|a, b| (score_key(a.1), &a.0).cmp(&(score_key(b.1), &b.0)));
        Ok(out)
    }
}
