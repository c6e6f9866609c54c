//! Runs a parsed text-protocol request against the items and writes memcached's reply:
//! the classic commands here, the meta commands in `super::meta_cmd`, `stats` in
//! `super::stats`.

use super::counters::{Stat, Tally};
use super::meta_cmd;
use super::parse::Request;
use super::reply;
use super::state::Memcache;
use super::stats;
use super::store::{Delta, Now, Stored, Write};

/// The version `version` and `stats` report: the memcached release whose protocol and
/// replies this front end follows.
pub(crate) const MEMCACHED_VERSION: &str = "1.6.18";

/// What a request's context gives it.
pub(crate) struct Ctx<'a> {
    pub(crate) mc: &'a Memcache,
    pub(crate) tally: &'a mut Tally,
    /// The time the batch runs at.
    pub(crate) now: Now,
    /// The connection's reply buffer.
    pub(crate) out: &'a mut Vec<u8>,
}

/// What the connection does after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// Go on with the next request.
    Continue,
    /// Skip this many bytes of input (a refused data block), then go on.
    Swallow(usize),
    /// Send the replies so far and close.
    Close,
}

/// Runs `req`; see the module docs.
pub(crate) fn run(ctx: &mut Ctx<'_>, req: Request<'_>) -> After {
    let items = &ctx.mc.items;
    match req {
        Request::Get {
            cas,
            touch,
            keys,
            bad_key,
        } => {
            let mark = ctx.out.len();
            get(ctx, cas, touch, &keys);
            if bad_key {
                // memcached drops the replies it had queued and answers with the error.
                ctx.out.truncate(mark);
                reply::line(ctx.out, super::token::BAD_FORMAT);
            } else {
                ctx.out.extend_from_slice(b"END\r\n");
            }
        }
        Request::Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        } => {
            ctx.tally.bump(Stat::cmd_set);
            let w = Write {
                mode,
                flags,
                expiry: ctx.now.expiry(exptime),
                data,
                cas,
                set_stale: false,
                binary: false,
            };
            let text = match items.store(key, &w, ctx.now, ctx.tally) {
                Stored::Stored(_) => "STORED",
                Stored::NotStored => "NOT_STORED",
                Stored::Exists => "EXISTS",
                Stored::NotFound => "NOT_FOUND",
                Stored::NoMemory => {
                    if mode == super::store::Mode::Set {
                        items.drop_key(key);
                    }
                    "SERVER_ERROR out of memory storing object"
                }
            };
            if !noreply {
                reply::line(ctx.out, text);
            }
        }
        Request::TooLarge {
            key,
            drop_old,
            noreply,
            swallow,
        } => {
            ctx.tally.bump(Stat::store_too_large);
            if drop_old {
                items.drop_key(key);
            }
            if !noreply {
                reply::line(ctx.out, "SERVER_ERROR object too large for cache");
            }
            return After::Swallow(swallow);
        }
        Request::MetaTooLarge { key, swallow } => {
            ctx.tally.bump(Stat::store_too_large);
            items.drop_key(&key);
            reply::line(ctx.out, "SERVER_ERROR object too large for cache");
            return After::Swallow(swallow);
        }
        Request::Swallow { text, swallow } => {
            reply::line(ctx.out, text);
            return After::Swallow(swallow);
        }
        Request::Delete { key, noreply } => {
            let text = if items.delete(key, ctx.now, ctx.tally) {
                "DELETED"
            } else {
                "NOT_FOUND"
            };
            if !noreply {
                reply::line(ctx.out, text);
            }
        }
        Request::Delta {
            incr,
            key,
            by,
            noreply,
        } => {
            let r = items.delta(key, incr, by, 0, ctx.now, ctx.tally);
            if let Delta::NotFound = r {
                ctx.tally.bump(if incr {
                    Stat::incr_misses
                } else {
                    Stat::decr_misses
                });
            }
            if !noreply {
                match r {
                    Delta::Done(v, _) => {
                        reply::num(ctx.out, v);
                        ctx.out.extend_from_slice(b"\r\n");
                    }
                    Delta::NotFound => reply::line(ctx.out, "NOT_FOUND"),
                    Delta::NonNumeric => reply::line(
                        ctx.out,
                        "CLIENT_ERROR cannot increment or decrement non-numeric value",
                    ),
                    Delta::NoMemory => reply::line(ctx.out, "SERVER_ERROR out of memory"),
                    Delta::CasMismatch => {}
                }
            }
        }
        Request::Touch {
            key,
            exptime,
            noreply,
        } => {
            ctx.tally.bump(Stat::cmd_touch);
            let expiry = ctx.now.expiry(exptime);
            let hit = items.touch(key, expiry, ctx.now, ctx.tally).is_some();
            ctx.tally.bump(if hit {
                Stat::touch_hits
            } else {
                Stat::touch_misses
            });
            if !noreply {
                reply::line(ctx.out, if hit { "TOUCHED" } else { "NOT_FOUND" });
            }
        }
        Request::FlushAll { delay, noreply } => {
            ctx.tally.bump(Stat::cmd_flush);
            if delay > 0 {
                items.flush(Some(ctx.now.expiry(delay)));
            } else {
                items.flush(None);
            }
            if !noreply {
                reply::line(ctx.out, "OK");
            }
        }
        Request::Version => {
            ctx.out.extend_from_slice(b"VERSION ");
            reply::line(ctx.out, MEMCACHED_VERSION);
        }
        Request::Verbosity { level, noreply } => {
            // memcached caps the level at 2; it changes nothing else here.
            ctx.mc
                .verbosity
                .store(level.min(2), std::sync::atomic::Ordering::Relaxed);
            if !noreply {
                reply::line(ctx.out, "OK");
            }
        }
        Request::Quit | Request::Close => return After::Close,
        Request::Stats { args } => stats::run(ctx.mc, &args, ctx.now, ctx.out),
        Request::Meta(m) => meta_cmd::run(ctx, m),
        Request::Debug { key, binary } => meta_cmd::debug(ctx, &key, binary),
        Request::Reply { text, noreply } => {
            if !noreply {
                reply::line(ctx.out, text);
            }
        }
    }
    After::Continue
}

fn get(ctx: &mut Ctx<'_>, cas: bool, touch: Option<i64>, keys: &[&[u8]]) {
    let items = &ctx.mc.items;
    if let Some(exptime) = touch {
        let expiry = ctx.now.expiry(exptime);
        for key in keys {
            ctx.tally.bump(Stat::cmd_touch);
            match items.touch(key, expiry, ctx.now, ctx.tally) {
                Some(l) => {
                    ctx.tally.bump(Stat::touch_hits);
                    reply::value(
                        ctx.out,
                        key,
                        l.meta.flags,
                        &l.data,
                        cas.then_some(l.meta.cas),
                    );
                }
                None => ctx.tally.bump(Stat::touch_misses),
            }
        }
        return;
    }
    let out = &mut *ctx.out;
    let mut hits = 0;
    let mut tally = std::mem::take(ctx.tally);
    items.read_many(keys, ctx.now, true, &mut tally, &mut |i, v| {
        if let Some((m, data)) = v {
            hits += 1;
            reply::value(out, keys[i], m.flags, data, cas.then_some(m.cas));
        }
    });
    *ctx.tally = tally;
    ctx.tally.add(Stat::cmd_get, keys.len() as u64);
    ctx.tally.add(Stat::get_hits, hits);
    ctx.tally.add(Stat::get_misses, keys.len() as u64 - hits);
}
