//! The records that rebuild a key's value from nothing (`crate::aof` lists the records):
//! what the append-only file's rewrite writes for each key, and what `RENAME` logs for the
//! value it moves.
//!
//! A large collection is read in chunks from the element index, without its key's stripe
//! when the rewrite walks (the scan is safe under concurrent writers). The rewrite's
//! argument holds for every record emitted here because each is an assignment: a
//! field's value, a member's presence or score, an element at a list position; and a
//! list's elements and span are copied together under its node table's lock (a large
//! list's nodes change under that lock, `super::qlist`) and emitted as they were at that
//! moment: positions that moved since then are fixed by the increment replayed after the
//! rewritten base.

use std::io;
use std::ops::{Bound, ControlFlow};

use super::qlist::QList;
use crate::layout::{IntSet, Pack, entries, id_prefix, zset_member_prefix};
use crate::store::{Enc, Kind, Store, Txn, header, large_id};

/// Emits the records that rebuild the value `raw` stored under `key` (none for a value
/// that does not decode), stopping at the first error of `emit`.
pub(crate) fn dump(
    store: &Store,
    key: &[u8],
    raw: &[u8],
    emit: &mut dyn FnMut(&[&[u8]]) -> io::Result<()>,
) -> io::Result<()> {
    let Some(h) = header(raw) else {
        return Ok(());
    };
    if h.kind == Kind::String {
        // A large string's bytes gone meanwhile: its key changed, and the record of that
        // change follows.
        return match store.inline_string(raw) {
            Some(inline) => emit(&[b"SET", key, &inline]),
            None => Ok(()),
        };
    }
    let payload = &raw[h.at..];
    match h.enc {
        Enc::Large => {
            if let Some(id) = large_id(h.enc, payload) {
                dump_large(store, key, h.kind, id, emit)?;
            }
        }
        Enc::IntSet => {
            for v in IntSet::new(payload).iter() {
                emit(&[b"SADD", key, v.to_string().as_bytes()])?;
            }
        }
        Enc::Compact => dump_compact(key, h.kind, payload, emit)?,
    }
    if let Some(d) = h.deadline {
        emit(&[b"PEXPIREAT", key, d.to_string().as_bytes()])?;
    }
    Ok(())
}

fn dump_compact(
    key: &[u8],
    kind: Kind,
    payload: &[u8],
    emit: &mut dyn FnMut(&[&[u8]]) -> io::Result<()>,
) -> io::Result<()> {
    match kind {
        Kind::Hash => {
            let mut it = Pack::new(payload).iter();
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                emit(&[b"HSET", key, f, v])?;
            }
        }
        Kind::Set => {
            for m in Pack::new(payload).iter() {
                emit(&[b"SADD", key, m])?;
            }
        }
        Kind::ZSet => {
            let mut it = Pack::new(payload).iter();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                emit(&[b"ZADD", key, m, s])?;
            }
        }
        Kind::List => {
            let (head, pack) = match payload.split_first_chunk::<8>() {
                Some((h, rest)) => (u64::from_be_bytes(*h), rest),
                None => return Ok(()),
            };
            let pack = Pack::new(pack);
            for (i, e) in pack.iter().enumerate() {
                emit(&[b"LPUT", key, &head.wrapping_add(i as u64).to_be_bytes(), e])?;
            }
            let len = pack.len() as u64;
            emit(&[b"LSPAN", key, &head.to_be_bytes(), &len.to_be_bytes()])?;
        }
        Kind::String => {}
    }
    Ok(())
}

fn dump_large(
    store: &Store,
    key: &[u8],
    kind: Kind,
    id: u64,
    emit: &mut dyn FnMut(&[&[u8]]) -> io::Result<()>,
) -> io::Result<()> {
    let Some(meta) = store.large(id) else {
        return Ok(());
    };
    if kind == Kind::List {
        // The list's span and nodes copied together (see the module docs).
        let (head, len, runs) = QList::new(store.positions(), id, &meta).snapshot();
        let mut pos = head;
        for run in &runs {
            for v in entries(run) {
                emit(&[b"LPUT", key, &pos.to_be_bytes(), v])?;
                pos = pos.wrapping_add(1);
            }
        }
        return emit(&[b"LSPAN", key, &head.to_be_bytes(), &len.to_be_bytes()]);
    }
    let prefix: Vec<u8> = match kind {
        Kind::ZSet => zset_member_prefix(id).to_vec(),
        _ => id_prefix(id).to_vec(),
    };
    let mut err = Ok(());
    super::scan_chunks(store.elements(), &prefix, Bound::Unbounded, &mut |k, v| {
        let r = match kind {
            Kind::Hash => emit(&[b"HSET", key, &k[12..], v]),
            Kind::Set => emit(&[b"SADD", key, &k[12..]]),
            Kind::ZSet => emit(&[b"ZADD", key, &k[13..], v]),
            Kind::List | Kind::String => Ok(()),
        };
        match r {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                err = Err(e);
                ControlFlow::Break(())
            }
        }
    });
    err
}

/// Logs the value now stored under `key` whole (after a `DEL key` record): what `RENAME`
/// logs for the value it moved.
pub(crate) fn log_state(t: &Txn<'_>, store: &Store, key: &[u8]) {
    if !t.logging() {
        return;
    }
    let Some(raw) = store.kv().get(key) else {
        return;
    };
    t.record(&[b"DEL", key]);
    let _ = dump(store, key, &raw, &mut |parts| {
        t.record(parts);
        Ok(())
    });
}
