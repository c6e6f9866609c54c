//! `COPY`'s duplicate of a collection: a compact one is its key's value, copied whole; a
//! large one lives in the shared element index under its own id, so its copy is a new
//! collection, large from the start as Redis's copy keeps the encoding, filled element by
//! element through the views, which log one record per element, so the append-only file
//! replays the copy.

use super::{End, Hash, List, Result, Set, ZSet};
use crate::store::{Entry, Kind, Store, Txn};

/// Stores at `dst` (absent: the caller deleted it) a copy of `src`'s live value `e`,
/// deadline included, and logs it. `ts` reads `src`; `t` writes `dst` in the keyspace
/// `store` (the same `Txn` within a database; two for `COPY … DB`). On failure (out of
/// memory) `dst` is left absent.
pub(crate) fn copy(
    ts: &Txn<'_>,
    t: &Txn<'_>,
    store: &Store,
    src: &[u8],
    e: &Entry,
    dst: &[u8],
) -> Result<()> {
    if e.large_id().is_none() {
        t.store_quiet(dst, e)?;
        super::log_state(t, store, dst);
        return Ok(());
    }
    let r = copy_large(ts, t, src, e, dst);
    if r.is_err() {
        t.delete(dst);
    }
    r
}

fn copy_large(ts: &Txn<'_>, t: &Txn<'_>, src: &[u8], e: &Entry, dst: &[u8]) -> Result<()> {
    match e.kind {
        Kind::Hash => {
            let pairs = Hash::open(ts, src)?
                .map(|h| h.pairs(ts))
                .unwrap_or_default();
            let mut h = Hash::open_or_create(t, dst)?;
            h.make_large(t)?;
            for (f, v) in &pairs {
                if let Err(err) = h.set(t, f, v) {
                    h.finish(t)?;
                    return Err(err);
                }
            }
            h.finish(t)?;
        }
        Kind::Set => {
            let members = Set::open(ts, src)?
                .map(|s| s.members(ts))
                .unwrap_or_default();
            let mut s = Set::create(t, dst)?;
            s.make_large(t)?;
            for m in &members {
                if let Err(err) = s.add(t, m) {
                    s.finish(t)?;
                    return Err(err);
                }
            }
            s.finish(t)?;
        }
        Kind::ZSet => {
            let members = ZSet::open(ts, src)?
                .map(|z| z.members(ts))
                .unwrap_or_default();
            let mut z = ZSet::create(t, dst)?;
            z.make_large(t)?;
            for (m, score) in &members {
                if let Err(err) = z.insert(t, m, *score, None) {
                    z.finish(t)?;
                    return Err(err);
                }
            }
            z.finish(t)?;
        }
        Kind::List => {
            let elems = match List::open(ts, src)? {
                Some(l) if l.len() > 0 => l.range(ts, 0, l.len() - 1),
                _ => Vec::new(),
            };
            let mut l = List::create(t, dst)?;
            l.make_large(t)?;
            for v in &elems {
                if let Err(err) = l.push(t, End::Right, v) {
                    l.finish(t)?;
                    return Err(err);
                }
            }
            l.finish(t)?;
        }
        Kind::String => {}
    }
    if let Some(d) = e.deadline
        && let Some(mut copied) = t.load(dst)
    {
        copied.deadline = Some(d);
        t.store(dst, &copied)?;
    }
    Ok(())
}
