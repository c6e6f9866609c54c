//! Keyspace commands: `DEL`/`UNLINK`, `EXISTS`, `TYPE`, `RENAME`/`RENAMENX`, `COPY`,
//! `RANDOMKEY`, `KEYS`, `SCAN`, `DBSIZE`, `FLUSHDB`/`FLUSHALL`.
//!
//! `RENAME` moves a value whole, a large collection included (its elements are keyed by
//! its id, which moves with it); `COPY` duplicates it (`crate::coll::copy`: a large
//! collection element by element). Both log the value under its new key whole, so the
//! append-only file replays the same state.
//!
//! On an ordered backend `KEYS` and `SCAN` walk the index in key order. A `SCAN` cursor is
//! a number, as every client expects, that names the last key returned (kept in the
//! server's cursor table): the next call resumes strictly after that key, so a full
//! iteration returns keys in ascending order, never twice, and never misses a key present
//! throughout.
//!
//! On Mercury (unordered, and its iteration cannot resume from a position) `KEYS` walks the
//! table, and `SCAN 0` lists every key of the table in one walk, keeps the list under the
//! cursor, and each call returns the next `COUNT` keys of it that are still live. Redis's
//! guarantees hold: a key present from the first call to the last is returned, no key is
//! returned twice, and a key added meanwhile may be missed. The cost is a copy of every
//! key per `SCAN` in progress and a first call that walks the whole table; at most four
//! such scans are kept (an older cursor is then `invalid cursor`).

use std::ops::{Bound, ControlFlow};

use super::{Command, Ctx, not_integer, syntax_error};
use crate::glob;
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::{Store, Txn};

/// `DEL key …` and `UNLINK key …`.
pub(super) struct Del<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> Command<'a> for Del<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Del { keys: &args[1..] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let mut n = 0;
        for key in self.keys {
            if ctx
                .store()
                .write(&[key], ctx.call, |t| t.load(key).is_some() && t.delete(key))
            {
                n += 1;
            }
        }
        Reply::Int(n)
    }
}

/// `EXISTS key …`.
pub(super) struct Exists<'a> {
    keys: &'a [Vec<u8>],
}

impl<'a> Command<'a> for Exists<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Exists { keys: &args[1..] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let n = self
            .keys
            .iter()
            .filter(|k| ctx.store().read(k, ctx.call, |_, _, _| ()).is_some())
            .count();
        Reply::Int(n as i64)
    }
}

/// `TYPE key`.
pub(super) struct Type<'a> {
    key: &'a [u8],
}

impl<'a> Command<'a> for Type<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Type { key: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let name = ctx
            .store()
            .read(self.key, ctx.call, |kind, _, _| kind.name());
        Reply::Simple(name.unwrap_or("none"))
    }
}

/// `RENAME key newkey` and `RENAMENX key newkey` (`nx`: only when `newkey` is absent).
pub(super) struct Rename<'a> {
    src: &'a [u8],
    dst: &'a [u8],
    nx: bool,
}

impl<'a> Command<'a> for Rename<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Rename {
            src: &args[1],
            dst: &args[2],
            nx: args[0].eq_ignore_ascii_case(b"renamenx"),
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Rename { src, dst, nx } = self;
        let done = if nx { Reply::Int(1) } else { Reply::OK };
        ctx.store().write(&[src, dst], ctx.call, |t| {
            let Some(e) = t.load(src) else {
                return Reply::err("ERR no such key");
            };
            if nx && (src == dst || t.load(dst).is_some()) {
                return Reply::Int(0);
            }
            if src == dst {
                return done;
            }
            if let Err(err) = t.store_quiet(dst, &e) {
                return Reply::err(err.message());
            }
            t.detach(src);
            // The moved value is logged whole under its new key (a large collection's
            // elements are keyed by its id, which moves with it).
            crate::coll::log_state(t, ctx.store(), dst);
            done
        })
    }
}

/// `COPY source destination [DB index] [REPLACE]`.
pub(super) struct Copy<'a> {
    src: &'a [u8],
    dst: &'a [u8],
    /// The `DB` options as given, in order (each checked against `databases` when it
    /// runs; the last one counts).
    dbs: Vec<i64>,
    /// A syntax error after a `DB` option: Redis reports an out-of-range database
    /// first when it comes first.
    late: Option<Reply>,
    replace: bool,
}

impl<'a> Command<'a> for Copy<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut replace = false;
        let mut dbs = Vec::new();
        let mut late = None;
        let mut i = 3;
        while i < args.len() {
            let opt = args[i].to_ascii_uppercase();
            let error = match (&opt[..], args.get(i + 1)) {
                (b"REPLACE", _) => {
                    replace = true;
                    None
                }
                // Redis reads the index as a C `int`.
                (b"DB", Some(n)) => match parse_i64(n).filter(|&n| i32::try_from(n).is_ok()) {
                    Some(n) => {
                        dbs.push(n);
                        i += 1;
                        None
                    }
                    None => Some(not_integer()),
                },
                _ => Some(syntax_error()),
            };
            if let Some(e) = error {
                if dbs.is_empty() {
                    return Err(e);
                }
                late = Some(e);
                break;
            }
            i += 1;
        }
        Ok(Copy {
            src: &args[1],
            dst: &args[2],
            dbs,
            late,
            replace,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Copy {
            src,
            dst,
            dbs,
            late,
            replace,
        } = self;
        let from = ctx.client.db;
        let mut to = from;
        for n in dbs {
            match usize::try_from(n)
                .ok()
                .filter(|&n| n < ctx.shared.dbs.count())
            {
                Some(n) => to = n,
                None => return Reply::err("ERR DB index is out of range"),
            }
        }
        if let Some(e) = late {
            return e;
        }
        if from == to && src == dst {
            return Reply::err("ERR source and destination objects are the same");
        }
        let copy = |ts: &Txn<'_>, td: &Txn<'_>, store: &Store| {
            let Some(e) = ts.load(src) else {
                return Reply::Int(0);
            };
            if td.load(dst).is_some() {
                if !replace {
                    return Reply::Int(0);
                }
                td.delete(dst);
            }
            match crate::coll::copy(ts, td, store, src, &e, dst) {
                Ok(()) => Reply::Int(1),
                Err(err) => Reply::err(err.message()),
            }
        };
        if from == to {
            let store = ctx.store();
            store.write(&[src, dst], ctx.call, |t| copy(t, t, store))
        } else {
            let dbs = &ctx.shared.dbs;
            let store = dbs.get(to);
            dbs.write_pair((from, to), (src, dst), ctx.call, |ts, td| {
                copy(ts, td, store)
            })
        }
    }
}

/// `RANDOMKEY`.
pub(super) struct RandomKey;

impl Command<'_> for RandomKey {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(RandomKey)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let store = ctx.store();
        if !store.iterable() {
            return cannot_iterate(ctx, "RANDOMKEY");
        }
        let seed = crate::coll::random_u64();
        match store.random_key(seed, ctx.now()) {
            Some(k) => Reply::Bulk(k),
            None => Reply::Nil,
        }
    }
}

/// `DBSIZE`.
pub(super) struct DbSize;

impl Command<'_> for DbSize {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(DbSize)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        Reply::Int(ctx.store().kv().len() as i64)
    }
}

/// `FLUSHDB [ASYNC|SYNC]` and `FLUSHALL [ASYNC|SYNC]` (both run synchronously).
pub(super) struct Flush;

impl Command<'_> for Flush {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        match args.get(1).map(|a| a.to_ascii_uppercase()) {
            None => Ok(Flush),
            Some(m) if args.len() == 2 && (m == b"ASYNC" || m == b"SYNC") => Ok(Flush),
            Some(_) => Err(syntax_error()),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        if ctx.store().flush(ctx.call) {
            Reply::OK
        } else {
            cannot_iterate(ctx, "FLUSHDB")
        }
    }
}

fn cannot_iterate(ctx: &Ctx<'_>, cmd: &str) -> Reply {
    Reply::err(format!(
        "ERR {cmd} needs an index that can list its keys; '{}' cannot (start the server with --index wormhole)",
        ctx.shared.config.index
    ))
}

/// `KEYS pattern`.
pub(super) struct Keys<'a> {
    pattern: &'a [u8],
}

impl<'a> Command<'a> for Keys<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Keys { pattern: &args[1] })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let pattern = self.pattern;
        let mut out = Vec::new();
        let now = ctx.now();
        let mut visit = |k: &[u8], v: &[u8]| {
            if Store::live(v, now).is_some() && glob::matches(pattern, k) {
                out.push(Reply::bulk(k));
            }
            ControlFlow::Continue(())
        };
        if let Some(ordered) = ctx.store().ordered() {
            ordered.scan_prefix(&glob::literal_prefix(pattern), &mut visit);
        } else if !ctx.store().walk(&mut visit) {
            return cannot_iterate(ctx, "KEYS");
        }
        Reply::Array(out)
    }
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(super) struct Scan<'a> {
    cursor: u64,
    pattern: Option<&'a [u8]>,
    count: usize,
    /// The type name asked for, lower case.
    kind: Option<Vec<u8>>,
}

impl<'a> Command<'a> for Scan<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let Some(cursor) = std::str::from_utf8(&args[1])
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        else {
            return Err(Reply::err("ERR invalid cursor"));
        };
        let mut scan = Scan {
            cursor,
            pattern: None,
            count: 10,
            kind: None,
        };
        let mut i = 2;
        while i < args.len() {
            let opt = args[i].to_ascii_uppercase();
            let Some(v) = args.get(i + 1) else {
                return Err(syntax_error());
            };
            match &opt[..] {
                b"MATCH" => scan.pattern = Some(v),
                b"COUNT" => match parse_i64(v) {
                    Some(n) if n >= 1 => scan.count = n as usize,
                    Some(_) => return Err(syntax_error()),
                    None => return Err(not_integer()),
                },
                b"TYPE" => scan.kind = Some(v.to_ascii_lowercase()),
                _ => return Err(syntax_error()),
            }
            i += 2;
        }
        Ok(scan)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Some(ordered) = ctx.store().ordered() else {
            return self.apply_unordered(ctx);
        };
        let Scan {
            cursor,
            pattern,
            count,
            kind,
        } = self;
        let start = if cursor == 0 {
            None
        } else {
            match ctx.shared.cursors.get(cursor) {
                Some(k) => Some(k),
                None => return Reply::err("ERR invalid cursor"),
            }
        };
        let bound = start.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let (mut visited, mut last, mut out) = (0usize, None, Vec::new());
        let now = ctx.now();
        ordered.scan(bound, &mut |k, v| {
            visited += 1;
            if let Some(live) = Store::live(v, now) {
                let type_ok = kind.as_deref().is_none_or(|t| t == live.name().as_bytes());
                let match_ok = pattern.is_none_or(|p| glob::matches(p, k));
                if type_ok && match_ok {
                    out.push(Reply::bulk(k));
                }
            }
            if visited >= count {
                last = Some(k.to_vec());
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let next = match last {
            Some(k) => ctx.shared.cursors.put(k),
            None => 0,
        };
        Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(out)])
    }
}

impl Scan<'_> {
    /// `SCAN` over an unordered backend (see the module docs).
    fn apply_unordered(self, ctx: &Ctx<'_>) -> Reply {
        let shared = ctx.shared;
        let (keys, at) = if self.cursor == 0 {
            let mut keys = Vec::new();
            if !ctx.store().walk(&mut |k, _| {
                keys.push(k.to_vec());
                ControlFlow::Continue(())
            }) {
                return cannot_iterate(ctx, "SCAN");
            }
            (std::sync::Arc::new(keys), 0)
        } else {
            match shared.listed.take(self.cursor) {
                Some(x) => x,
                None => return Reply::err("ERR invalid cursor"),
            }
        };
        let end = keys.len().min(at.saturating_add(self.count));
        let mut out = Vec::new();
        for k in &keys[at..end] {
            let Some(live) = ctx.store().read(k, ctx.call, |kind, _, _| kind) else {
                continue;
            };
            let type_ok = self
                .kind
                .as_deref()
                .is_none_or(|t| t == live.name().as_bytes());
            let match_ok = self.pattern.is_none_or(|p| glob::matches(p, k));
            if type_ok && match_ok {
                out.push(Reply::bulk(&k[..]));
            }
        }
        let next = if end < keys.len() {
            shared.listed.put(&shared.cursors, keys, end)
        } else {
            0
        };
        Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(out)])
    }
}
