//! The logical databases: `SELECT`, `MOVE`, `SWAPDB`, `FLUSHALL` (`FLUSHDB` and `DBSIZE`
//! are `keys`'s: they act on the selected database). The databases themselves are the
//! store's (`crate::store`'s `dbs` module: one keyspace per database, built on first use).
//!
//! `SWAPDB` runs with the gate held exclusively (the dispatcher takes it for it, as for
//! `EXEC`), so no command sees the two databases half swapped; like Redis it then marks
//! the watchers of every watched key of either database that exists in either as dirty,
//! and serves the clients blocked on keys of either database that now hold data
//! (Redis's `scanDatabaseForReadyKeys`).

use super::{Command, Ctx, not_integer};
use crate::num::parse_i64;
use crate::resp::Reply;
use crate::store::Kind;

/// Redis's reply to a database number past the last database.
fn out_of_range() -> Reply {
    Reply::err("ERR DB index is out of range")
}

/// A database number as Redis reads it (a C `int`); `None`: not an integer.
fn parse_db(a: &[u8]) -> Option<i64> {
    parse_i64(a).filter(|&n| i32::try_from(n).is_ok())
}

/// `db` if it names one of the `count` databases.
fn in_range(db: i64, count: usize) -> Option<usize> {
    usize::try_from(db).ok().filter(|&d| d < count)
}

/// `SELECT index`.
pub(super) struct Select(i64);

impl Command<'_> for Select {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        parse_db(&args[1]).map(Select).ok_or_else(not_integer)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Some(db) = in_range(self.0, ctx.shared.dbs.count()) else {
            return out_of_range();
        };
        ctx.client.db = db;
        ctx.client
            .info
            .db
            .store(db, std::sync::atomic::Ordering::Relaxed);
        Reply::OK
    }
}

/// `MOVE key db`: the key goes to database `db` unless it is there already.
pub(super) struct Move<'a> {
    key: &'a [u8],
    db: i64,
}

impl<'a> Command<'a> for Move<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Move {
            key: &args[1],
            db: parse_db(&args[2]).ok_or_else(not_integer)?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let dbs = &ctx.shared.dbs;
        let Some(dst) = in_range(self.db, dbs.count()) else {
            return out_of_range();
        };
        let src = ctx.client.db;
        if src == dst {
            return Reply::err("ERR source and destination objects are the same");
        }
        let key = self.key;
        let dst_store = dbs.get(dst);
        dbs.write_pair((src, dst), (key, key), ctx.call, |ts, td| {
            let Some(e) = ts.load(key) else {
                return Reply::Int(0);
            };
            if td.load(key).is_some() {
                return Reply::Int(0);
            }
            // The same stored value, deadline and large collection included (the
            // collections' elements are shared by every database): only the key moves.
            if let Err(err) = td.store_quiet(key, &e) {
                return Reply::err(err.message());
            }
            crate::coll::log_state(td, dst_store, key);
            ts.detach(key);
            Reply::Int(1)
        })
    }
}

/// `SWAPDB index1 index2` (see the module docs).
pub(super) struct SwapDb(i64, i64);

impl Command<'_> for SwapDb {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        let a = parse_db(&args[1]).ok_or_else(|| Reply::err("ERR invalid first DB index"))?;
        let b = parse_db(&args[2]).ok_or_else(|| Reply::err("ERR invalid second DB index"))?;
        Ok(SwapDb(a, b))
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let dbs = &ctx.shared.dbs;
        let (Some(a), Some(b)) = (in_range(self.0, dbs.count()), in_range(self.1, dbs.count()))
        else {
            return out_of_range();
        };
        if a == b {
            return Reply::OK;
        }
        // The caller holds the gate exclusively (`crate::cmd::dispatch`).
        dbs.swap(a, b);
        let mut record = Vec::new();
        crate::resp::encode_request(
            &mut record,
            &[
                b"SWAPDB",
                a.to_string().as_bytes(),
                b.to_string().as_bytes(),
            ],
        );
        dbs.log(ctx.call, &record);
        let (sa, sb) = (dbs.get(a), dbs.get(b));
        let exists = |k: &[u8]| sa.kv().contains_key(k) || sb.kv().contains_key(k);
        sa.touch_swapped(a, b, &exists);
        // Blocked clients of either database whose key now holds what they wait for.
        for noted in ctx.shared.waiters.keys() {
            let Some((&db, key)) = noted.split_first() else {
                continue;
            };
            let db = usize::from(db);
            if (db == a || db == b)
                && let Some(kind) = dbs
                    .get(db)
                    .kv()
                    .get(key)
                    .and_then(|v| crate::store::header(&v).map(|h| h.kind))
                && matches!(kind, Kind::List | Kind::ZSet)
            {
                ctx.call.signal_ready(db, key);
            }
        }
        Reply::OK
    }
}

/// `FLUSHALL [ASYNC|SYNC]`: every database emptied (synchronously, as `FLUSHDB`).
pub(super) struct FlushAll;

impl Command<'_> for FlushAll {
    fn parse(args: &[Vec<u8>]) -> Result<Self, Reply> {
        match args.get(1).map(|a| a.to_ascii_uppercase()) {
            None => Ok(FlushAll),
            Some(m) if args.len() == 2 && (m == b"ASYNC" || m == b"SYNC") => Ok(FlushAll),
            Some(_) => Err(super::syntax_error()),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        for (_, s) in ctx.shared.dbs.each() {
            if !s.flush(ctx.call) {
                return Reply::err(format!(
                    "ERR FLUSHALL needs an index that can list its keys; '{}' cannot (start the server with --index wormhole)",
                    ctx.shared.config.index
                ));
            }
        }
        Reply::OK
    }
}
