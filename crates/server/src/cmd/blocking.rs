//! Blocking pops: `BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BZPOPMIN`, `BZPOPMAX`, and the
//! step that serves blocked clients after a command ([`serve_ready`], Redis's
//! `handleClientsBlockedOnKeys`).
//!
//! A blocking command first looks at its keys in order, under their stripes: the first
//! that holds data is popped at once (a key of another type is `WRONGTYPE`). When none
//! does, it registers a waiter (`crate::waiters` has the protocol), sets the client's
//! pending [`Blocked`] and sends nothing; the connection then waits for the reply, the
//! timeout (`0`: none) or its own close (`crate::server`).
//!
//! A write that creates a list or sorted set under a waited-on key notes the key in its
//! call; [`crate::cmd::dispatch`] calls [`serve_ready`] after the command, which serves
//! the key's waiters in the order they blocked, for as long as the key holds data:
//! each pop is logged (its own frame) and its reply delivered with the log position it
//! must wait for. An element `BLMOVE` pushes onto its destination may wake that key's
//! waiters in turn. Serving is a separate step so that a transaction can run it once, at
//! `EXEC`, and so that a push inside `MULTI` wakes nobody before then.
//!
//! Redis serves the waiters before any other client's command runs; here, another
//! connection's non-blocking pop can run between the push and the serving and take the
//! element first (the waiter then stays blocked). Waiters among themselves are served in
//! arrival order.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::lists::{move_element, parse_end};
use super::{Command, Ctx};
use crate::coll::{self, End, List, ZSet};
use crate::num::parse_f64;
use crate::resp::Reply;
use crate::store::{Call, Kind, Txn, ready_key};
use crate::waiters::{Blocked, Waiter, Want};

/// Parses a blocking timeout (seconds, fractions allowed) into milliseconds, with
/// Redis 7.0's errors (an overflowing value is "negative" there too).
fn parse_timeout(a: &[u8]) -> Result<u64, Reply> {
    let secs =
        parse_f64(a).ok_or_else(|| Reply::err("ERR timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    if !(0.0..9.2e18).contains(&ms) {
        return Err(Reply::err("ERR timeout is negative"));
    }
    Ok(ms as u64)
}

/// The reply to `want` served from `key` now, `Ok(None)` when the key holds nothing.
fn pop_now(t: &Txn<'_>, key: &[u8], want: &Want) -> coll::Result<Option<Reply>> {
    match want {
        Want::Pop { left } => {
            let Some(mut l) = List::open(t, key)? else {
                return Ok(None);
            };
            let end = if *left { End::Left } else { End::Right };
            let v = l.pop(t, end);
            l.finish(t)?;
            Ok(v.map(|v| Reply::Array(vec![Reply::bulk(key), Reply::Bulk(v)])))
        }
        Want::Move {
            dst,
            from_left,
            to_left,
        } => {
            let end = |left: bool| if left { End::Left } else { End::Right };
            Ok(move_element(t, key, dst, end(*from_left), end(*to_left))?.map(Reply::Bulk))
        }
        Want::ZPop { max } => {
            let Some(mut z) = ZSet::open(t, key)? else {
                return Ok(None);
            };
            let popped = z.pop(t, *max, 1);
            z.finish(t)?;
            Ok(popped.into_iter().next().map(|(m, s)| {
                Reply::Array(vec![Reply::bulk(key), Reply::Bulk(m), Reply::Double(s)])
            }))
        }
    }
}

/// A blocking command: its keys, what it wants, its timeout (ms, 0: none).
pub(super) struct Block<'a> {
    keys: Vec<&'a [u8]>,
    want: Want,
    timeout: u64,
}

impl<'a> Command<'a> for Block<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let name = args[0].to_ascii_lowercase();
        let n = args.len();
        let (keys, want): (Vec<&[u8]>, Want) = match &name[..] {
            b"blmove" => (
                vec![&args[1][..]],
                Want::Move {
                    dst: args[2].clone(),
                    from_left: parse_end(&args[3])? == End::Left,
                    to_left: parse_end(&args[4])? == End::Left,
                },
            ),
            b"brpoplpush" => (
                vec![&args[1][..]],
                Want::Move {
                    dst: args[2].clone(),
                    from_left: false,
                    to_left: true,
                },
            ),
            _ => {
                let keys = args[1..n - 1].iter().map(Vec::as_slice).collect();
                let want = match &name[..] {
                    b"blpop" => Want::Pop { left: true },
                    b"brpop" => Want::Pop { left: false },
                    b"bzpopmin" => Want::ZPop { max: false },
                    _ => Want::ZPop { max: true },
                };
                (keys, want)
            }
        };
        Ok(Block {
            keys,
            want,
            timeout: parse_timeout(&args[n - 1])?,
        })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        let Block {
            keys,
            want,
            timeout,
        } = self;
        let mut locked = keys.clone();
        if let Want::Move { dst, .. } = &want {
            locked.push(dst);
        }
        let shared = ctx.shared;
        // Inside a transaction a blocking command does not block: it answers as if its
        // timeout had passed (Redis).
        let in_exec = ctx.client.multi.in_exec;
        let db = ctx.client.db;
        let outcome = ctx.store().write(&locked, ctx.call, |t| {
            for k in &keys {
                match pop_now(t, k, &want) {
                    Ok(Some(r)) => return Ok(r),
                    Ok(None) => {}
                    Err(e) => return Ok(Reply::err(e.message())),
                }
            }
            if in_exec {
                return Ok(match want {
                    Want::Move { .. } => Reply::Nil,
                    _ => Reply::NilArray,
                });
            }
            // Waiters are registered under `(database, key)`: a push in another database
            // wakes nobody here.
            let owned = keys.iter().map(|k| ready_key(db, k)).collect();
            Err(shared.waiters.add(owned, want.clone()))
        });
        match outcome {
            Ok(reply) => reply,
            Err(waiter) => {
                let timeout_reply = match want {
                    Want::Move { .. } => Reply::Nil,
                    _ => Reply::NilArray,
                };
                ctx.client.blocked = Some(Blocked {
                    waiter,
                    deadline: (timeout > 0)
                        .then(|| Instant::now() + Duration::from_millis(timeout)),
                    timeout_reply,
                });
                Reply::Silence
            }
        }
    }
}

/// What serving one waiter found.
enum Served {
    /// The key holds nothing (more) for it: stop serving this key.
    Empty,
    /// The waiter left (timed out or closed) meanwhile: try the next one.
    Gone,
    /// Its reply.
    Reply(Reply),
}

/// Serves waiter `w` from `key` (of the database `t` writes).
fn serve_one(ctx: &Ctx<'_>, t: &Txn<'_>, key: &[u8], w: &std::sync::Arc<Waiter>) -> Served {
    let has = match w.want {
        Want::ZPop { .. } => matches!(ZSet::open(t, key), Ok(Some(z)) if z.len() > 0),
        _ => matches!(List::open(t, key), Ok(Some(l)) if l.len() > 0),
    };
    if !has {
        return Served::Empty;
    }
    if !ctx.shared.waiters.claim(w) {
        return Served::Gone;
    }
    match pop_now(t, key, &w.want) {
        Ok(Some(r)) => Served::Reply(r),
        Ok(None) => Served::Reply(w_timeout(&w.want)),
        Err(e) => Served::Reply(Reply::err(e.message())),
    }
}

fn w_timeout(want: &Want) -> Reply {
    match want {
        Want::Move { .. } => Reply::Nil,
        _ => Reply::NilArray,
    }
}

/// Serves the clients blocked on the keys the command (or transaction) made ready, in
/// the order they blocked (see the module docs).
pub(crate) fn serve_ready(ctx: &Ctx<'_>) {
    let shared = ctx.shared;
    let mut queue: VecDeque<Vec<u8>> = ctx.call.take_ready().into();
    while let Some(noted) = queue.pop_front() {
        // `(database, key)`, as `ready_key` names it.
        let Some((&db, key)) = noted.split_first() else {
            continue;
        };
        let key = key.to_vec();
        let store = shared.dbs.get(usize::from(db));
        loop {
            let kind = store.read(&key, ctx.call, |k, _, _| k);
            let zset = match kind {
                Some(Kind::List) => false,
                Some(Kind::ZSet) => true,
                _ => break,
            };
            let Some(w) = shared.waiters.first(&noted, zset) else {
                break;
            };
            let call = Call::new(ctx.now());
            let mut locked: Vec<&[u8]> = vec![&key];
            if let Want::Move { dst, .. } = &w.want {
                locked.push(dst);
            }
            let served = store.write(&locked, &call, |t| serve_one(ctx, t, &key, &w));
            queue.extend(call.take_ready());
            match served {
                Served::Empty => break,
                Served::Gone => {}
                Served::Reply(r) => shared.waiters.deliver(&w, r, call.logged()),
            }
        }
    }
}
