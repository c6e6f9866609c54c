//! Loading the chain at start-up: every file's frames applied to the store in order.
//!
//! At start the files' frames are read in order and applied. The end of the live (last)
//! file may hold a frame torn by a crash: fewer than 12 header bytes, a payload shorter than its length, a
//! last frame whose payload does not match its checksum, or a tail of zero bytes (blocks
//! the file system allocated but never wrote). Such a tail is cut off (the file is
//! truncated to the last whole frame) and a log line says how many bytes went, as Redis
//! does with `aof-load-truncated yes`. Anything else — a wrong magic, a header or payload
//! checksum mismatch before the last frame, a record that does not parse or is unknown, a
//! torn end in a file that is not the last (each was synced whole before the next was
//! started), a missing increment, increments without a base — refuses to start, naming
//! the file and the offset.
//!

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::chain::{
    Bad, FILE_NAME, MAGIC, TEMP_PREFIX, base_record, file_len, frame_at, io_err, list_incr,
    record_limits, sync_dir,
};
use crate::clock::now_ms;
use crate::coll::{self, Hash, List, Set, ZSet};
use crate::resp;
use crate::store::{Call, Databases, Kind, Store, decode};

/// What loading found.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Loaded {
    /// Frames applied.
    pub(crate) frames: u64,
    /// Bytes cut off a torn tail (0: none).
    pub(crate) truncated: u64,
}

/// The files loading found, in replay order.
pub(super) struct Chain {
    pub(super) frames: u64,
    /// (increment number, 0 for the base; bytes after loading) of each file.
    pub(super) files: Vec<(u64, u64)>,
}

/// Replays the chain in `dir` (base, then its increments) into `store`; creates the
/// base when there is none; removes stale files (increments older than the base,
/// temporary files of an interrupted rewrite).
pub(super) fn load_chain(dir: &Path, store: &Databases) -> Result<Chain, String> {
    let base = dir.join(FILE_NAME);
    let incr = list_incr(dir)?;
    if !base.exists() {
        if let Some((_, p)) = incr.first() {
            return Err(format!(
                "found the append-only increment file {} but no base file {}; refusing to \
                 start (restore the base file, or move the increments away to start empty)",
                p.display(),
                base.display()
            ));
        }
        let mut f = File::create(&base).map_err(|e| io_err("cannot create", &base, e))?;
        f.write_all(MAGIC)
            .and_then(|()| f.sync_all())
            .map_err(|e| io_err("cannot write", &base, e))?;
        sync_dir(dir)?;
    }
    let mut chain = Chain {
        frames: 0,
        files: Vec::new(),
    };
    let live: Vec<&(u64, PathBuf)> = {
        // Which increments follow the base is known only once its first frame is read;
        // the base is the last file when none does.
        let data = std::fs::read(&base).map_err(|e| io_err("cannot read", &base, e))?;
        let from = base_record(&data).unwrap_or(1);
        let live: Vec<_> = incr.iter().filter(|(s, _)| *s >= from).collect();
        for (i, (s, p)) in live.iter().enumerate() {
            if *s != from + i as u64 {
                return Err(format!(
                    "the append-only increment file {} follows a missing one (number {}); \
                     refusing to start",
                    p.display(),
                    from + i as u64
                ));
            }
        }
        let loaded = load(&base, store, live.is_empty())?;
        chain.frames += loaded.frames;
        chain.files.push((0, file_len(&base)?));
        live
    };
    for (i, (seq, path)) in live.iter().enumerate() {
        let loaded = load(path, store, i + 1 == live.len())?;
        chain.frames += loaded.frames;
        chain.files.push((*seq, file_len(path)?));
    }
    // Stale files: increments the base already contains, an interrupted rewrite's output.
    for (seq, path) in &incr {
        if chain.files.iter().all(|(s, _)| s != seq) {
            let _ = std::fs::remove_file(path);
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(TEMP_PREFIX))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(chain)
}

/// Replays the file at `path` into `store`. A torn tail is truncated when the file is
/// the `last` of the chain (the live one), and refused otherwise (an older file was
/// synced whole before the next one was started).
pub(super) fn load(path: &Path, store: &Databases, last: bool) -> Result<Loaded, String> {
    let data = std::fs::read(path).map_err(|e| io_err("cannot read", path, e))?;
    let refuse = |at: usize, why: &str| {
        format!(
            "the append-only file {} is corrupt at byte {at}: {why}; refusing to start \
             (move the file away to start empty, or repair it)",
            path.display()
        )
    };
    let now = now_ms();
    let mut at;
    if data.len() < MAGIC.len() && MAGIC.starts_with(&data) {
        // Torn while it was being created.
        at = 0;
    } else if !data.starts_with(MAGIC) {
        return Err(refuse(
            0,
            "it does not start with the orrery append-only file magic",
        ));
    } else {
        at = MAGIC.len();
    }
    let mut frames = 0;
    let mut torn = false;
    if at == MAGIC.len()
        && base_record(&data).is_some()
        && let Ok((_, next)) = frame_at(&data, at)
    {
        // The `BASE` record is read by the chain's loader.
        at = next;
    }
    while at < data.len() && at >= MAGIC.len() {
        match frame_at(&data, at) {
            Ok((payload, next)) => {
                apply_frame(store, payload, now).map_err(|why| refuse(at, &why))?;
                frames += 1;
                at = next;
            }
            Err(Bad::Torn) => {
                torn = true;
                break;
            }
            Err(Bad::Corrupt(why)) => return Err(refuse(at, &why)),
        }
    }
    let truncated = (data.len() - at) as u64;
    if (torn || at < MAGIC.len()) && !last {
        return Err(refuse(
            at,
            "a torn write at the end of a file that is not the last of the chain",
        ));
    }
    if torn || at < MAGIC.len() {
        println!(
            "!!! Warning: the append-only file {} ends with a torn write: {truncated} bytes \
             after byte {at} do not form a whole record; truncating the file there \
             (the writes before it are kept; like Redis's aof-load-truncated) !!!",
            path.display()
        );
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| io_err("cannot open", path, e))?;
        let mut f = f;
        let res = if at < MAGIC.len() {
            f.set_len(0).and_then(|()| f.write_all(MAGIC))
        } else {
            f.set_len(at as u64)
        };
        res.and_then(|()| f.sync_all())
            .map_err(|e| io_err("cannot truncate", path, e))?;
    }
    Ok(Loaded { frames, truncated })
}

/// Applies the records of one frame. A frame starts in database 0; `SELECT n` makes the
/// records after it apply to database `n`, `SWAPDB a b` exchanges two databases.
pub(super) fn apply_frame(dbs: &Databases, mut payload: &[u8], now: u64) -> Result<(), String> {
    let limits = record_limits();
    let mut db = 0;
    let number = |a: &[u8]| -> Result<usize, String> {
        std::str::from_utf8(a)
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&n| n < dbs.count())
            .ok_or_else(|| {
                format!(
                    "database {:?} is out of range (the server has {}: --databases)",
                    String::from_utf8_lossy(a),
                    dbs.count()
                )
            })
    };
    while !payload.is_empty() {
        let (args, used) = match resp::parse(payload, &limits) {
            Ok(Some(x)) => x,
            _ => return Err("a record does not parse".into()),
        };
        payload = &payload[used..];
        match (&args[0][..], args.len()) {
            (b"SELECT", 2) => db = number(&args[1])?,
            (b"SWAPDB", 3) => dbs.swap(number(&args[1])?, number(&args[2])?),
            _ => apply(dbs.get(db), &args, now)?,
        }
    }
    Ok(())
}

/// Applies one record (see the module docs).
pub(super) fn apply(store: &Store, args: &[Vec<u8>], now: u64) -> Result<(), String> {
    let op = args.first().map(|a| &a[..]).unwrap_or_default();
    let key = args.get(1).map(|a| &a[..]).unwrap_or_default();
    let bad = || {
        format!(
            "unknown record {:?} with {} arguments",
            String::from_utf8_lossy(op),
            args.len()
        )
    };
    let u64_arg = |i: usize| -> Result<u64, String> {
        let b: [u8; 8] = args[i][..].try_into().map_err(|_| bad())?;
        Ok(u64::from_be_bytes(b))
    };
    let failed = |e: coll::Error| e.message();
    store.write(&[key], &Call::new(now), |t| match (op, args.len()) {
        (b"SET", 3) => {
            let entry = decode(&args[2])
                .filter(|e| e.kind == Kind::String)
                .ok_or_else(bad)?;
            t.store(key, &entry).map_err(|e| e.message())
        }
        (b"DEL", 2) => {
            t.delete(key);
            Ok(())
        }
        (b"ZADD", 4) => {
            let score = f64::from_bits(u64_arg(3)?);
            let mut z = match ZSet::open(t, key) {
                Ok(Some(z)) => z,
                _ => {
                    t.delete(key);
                    ZSet::create(t, key).map_err(failed)?
                }
            };
            let old = z.score(t, &args[2]);
            let r = z.insert(t, &args[2], score, old);
            z.finish(t).and(r).map_err(failed)
        }
        (b"ZREM", 3) => {
            if let Ok(Some(mut z)) = ZSet::open(t, key) {
                z.remove(t, &args[2]);
                z.finish(t).map_err(failed)?;
            }
            Ok(())
        }
        (b"HSET", 4) => {
            let mut h = match Hash::open(t, key) {
                Ok(Some(h)) => h,
                _ => {
                    t.delete(key);
                    Hash::open_or_create(t, key).map_err(failed)?
                }
            };
            let r = h.set(t, &args[2], &args[3]);
            h.finish(t).and(r.map(drop)).map_err(failed)
        }
        (b"HDEL", 3) => {
            if let Ok(Some(mut h)) = Hash::open(t, key) {
                h.del(t, &args[2]);
                h.finish(t).map_err(failed)?;
            }
            Ok(())
        }
        (b"SADD", 3) => {
            let mut s = match Set::open(t, key) {
                Ok(Some(s)) => s,
                _ => {
                    t.delete(key);
                    Set::create(t, key).map_err(failed)?
                }
            };
            let r = s.add(t, &args[2]);
            s.finish(t).and(r.map(drop)).map_err(failed)
        }
        (b"SREM", 3) => {
            if let Ok(Some(mut s)) = Set::open(t, key) {
                s.remove(t, &args[2]);
                s.finish(t).map_err(failed)?;
            }
            Ok(())
        }
        (b"LPUT", 4) => {
            let pos = u64_arg(2)?;
            let mut l = match List::open(t, key) {
                Ok(Some(l)) => l,
                _ => {
                    t.delete(key);
                    List::create(t, key).map_err(failed)?
                }
            };
            let r = l.replay_put(t, pos, &args[3]);
            l.finish(t).and(r).map_err(failed)
        }
        (b"LSPAN", 4) => {
            let (head, len) = (u64_arg(2)?, u64_arg(3)?);
            let mut l = match List::open(t, key) {
                Ok(Some(l)) => l,
                _ if len == 0 => return Ok(()),
                _ => {
                    t.delete(key);
                    List::create(t, key).map_err(failed)?
                }
            };
            let r = l.replay_span(t, head, len);
            l.finish(t).and(r).map_err(failed)
        }
        (b"PEXPIREAT", 3) | (b"PERSIST", 2) => {
            let deadline = match args.get(2) {
                Some(d) => Some(
                    std::str::from_utf8(d)
                        .ok()
                        .and_then(|d| d.parse::<u64>().ok())
                        .ok_or_else(bad)?,
                ),
                None => None,
            };
            if let Some(mut e) = t.load(key) {
                e.deadline = deadline;
                t.store(key, &e).map_err(|e| e.message())?;
            }
            Ok(())
        }
        _ => Err(bad()),
    })
}
