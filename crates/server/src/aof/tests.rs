//! Tests of the append-only file: replay of every record, torn tails and corruption,
//! a crash at every step of a rewrite, hostile files.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng;

use super::chain::{FILE_NAME, MAGIC, TEMP_PREFIX, encode_frame, incr_name};
use super::replay::{Loaded, load, load_chain};
use super::{Aof, AofSettings, Fsync};
use crate::resp::encode_request;
use crate::store::{Call, Databases, Entry, Store};

/// A file of `MAGIC` and three frames (SET a, SET b + ZADD z, DEL a); the offsets at
/// which each frame starts.
fn sample() -> (Vec<u8>, Vec<usize>) {
    let mut data = MAGIC.to_vec();
    let mut starts = Vec::new();
    let raw = |v: &[u8]| {
        let mut r = vec![0u8];
        r.extend_from_slice(v);
        r
    };
    let frames: Vec<Vec<u8>> = vec![
        {
            let mut r = Vec::new();
            encode_request(&mut r, &[b"SET", b"a", &raw(b"1")]);
            r
        },
        {
            let mut r = Vec::new();
            encode_request(&mut r, &[b"SET", b"b", &raw(b"2")]);
            encode_request(
                &mut r,
                &[b"ZADD", b"z", b"m", &2.5f64.to_bits().to_be_bytes()],
            );
            r
        },
        {
            let mut r = Vec::new();
            encode_request(&mut r, &[b"DEL", b"a"]);
            r
        },
    ];
    for f in frames {
        starts.push(data.len());
        encode_frame(&mut data, &f);
    }
    (data, starts)
}

/// A log file in its own temporary directory, removed with it when dropped.
struct TempLog(PathBuf);

impl std::ops::Deref for TempLog {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempLog {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempLog {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn file(name: &str, bytes: &[u8]) -> TempLog {
    let dir = std::env::temp_dir().join(format!("orrery-aof-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(FILE_NAME);
    std::fs::write(&path, bytes).unwrap();
    TempLog(path)
}

fn store() -> Databases {
    Databases::new(Store::open("wormhole").unwrap(), 16)
}

#[test]
fn replays_every_record() {
    let (data, _) = sample();
    let path = file("replay", &data);
    let s = store();
    let loaded = load(&path, &s, true).unwrap();
    assert_eq!(
        loaded,
        Loaded {
            frames: 3,
            truncated: 0
        }
    );
    assert!(s.get(0).kv().get(b"a").is_none());
    assert_eq!(
        s.get(0).read(b"b", &Call::new(0), |_, _, v| v.to_vec()),
        Some(b"2".to_vec())
    );
    let score = s.get(0).write(&[b"z"], &Call::new(0), |t| {
        crate::coll::ZSet::open(t, b"z")
            .unwrap()
            .and_then(|z| z.score(t, b"m"))
    });
    assert_eq!(score, Some(2.5));
}

#[test]
fn every_cut_inside_the_last_frame_is_a_torn_tail() {
    let (data, starts) = sample();
    let last = *starts.last().unwrap();
    for cut in last + 1..data.len() {
        let path = file("cut", &data[..cut]);
        let s = store();
        let loaded = load(&path, &s, true).unwrap();
        assert_eq!(
            loaded,
            Loaded {
                frames: 2,
                truncated: (cut - last) as u64
            },
            "{cut}"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            last as u64,
            "{cut}"
        );
        assert!(s.get(0).kv().get(b"a").is_some(), "the DEL was torn off");
    }
}

#[test]
fn a_flipped_byte_before_the_last_frame_refuses_to_load() {
    let (data, starts) = sample();
    let last = *starts.last().unwrap();
    for at in 0..last {
        for bit in [0x01, 0x80] {
            let mut bad = data.clone();
            bad[at] ^= bit;
            let path = file("flip", &bad);
            let err = load(&path, &store(), true).unwrap_err();
            assert!(err.contains("corrupt at byte"), "{at}: {err}");
            assert_eq!(std::fs::read(&path).unwrap(), bad, "left untouched");
        }
    }
    // In the last frame: its length is checked (corrupt), its payload is torn.
    for at in last..data.len() {
        let mut bad = data.clone();
        bad[at] ^= 0x01;
        let res = load(&file("flip-last", &bad), &store(), true);
        if at < last + 8 {
            assert!(res.is_err(), "{at}");
        } else {
            assert_eq!(res.unwrap().frames, 2, "{at}");
        }
    }
}

/// Every key with its stored bytes.
fn dump(s: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    s.walk(&mut |k, v| {
        // The access field is when the value was last used, not what it holds.
        let mut v = v.to_vec();
        crate::store::set_access(&mut v, 0);
        out.push((k.to_vec(), v));
        ControlFlow::Continue(())
    });
    out
}

/// A copy of the files of `dir` in a new directory (the disk as a crash leaves it).
fn crash_copy(dir: &Path, name: &str) -> TempLog {
    let copy = file(name, b"");
    let to = copy.parent().unwrap().to_path_buf();
    std::fs::remove_file(&*copy).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    copy
}

/// A crash at each step of a rewrite leaves files that load to the state of the
/// last write made before it, and a restarted server rewrites again correctly.
#[test]
fn a_crash_at_every_step_of_a_rewrite_loses_nothing() {
    let home = file("steps", b"");
    let dir = home.parent().unwrap().to_path_buf();
    std::fs::remove_file(&*home).unwrap();
    let settings = Arc::new(AofSettings::new(Fsync::Always, 0, 0, 0));
    let mut dbs = store();
    let aof = Aof::open(&dir, settings, &dbs).unwrap();
    dbs.set_journal(aof.clone());
    let s = dbs.get(0).clone();
    let set = |s: &Store, k: &str, v: &str| {
        s.write(&[k.as_bytes()], &Call::new(0), |t| {
            t.store(k.as_bytes(), &Entry::string(v.as_bytes().to_vec()))
                .unwrap()
        })
    };
    let del =
        |s: &Store, k: &str| s.write(&[k.as_bytes()], &Call::new(0), |t| t.delete(k.as_bytes()));
    // The disk state at a crash now must load to `dump(&s)`.
    let check = |s: &Store, step: &str| {
        aof.flush_once().unwrap();
        let copy = crash_copy(&dir, step);
        let loaded = store();
        load_chain(copy.parent().unwrap(), &loaded).unwrap();
        assert_eq!(dump(loaded.get(0)), dump(s), "crash after: {step}");
    };
    for i in 0..50 {
        set(&s, &format!("k{}", i % 10), &i.to_string());
    }
    check(&s, "writes");
    for round in 1..=2u64 {
        let seq = aof.start_increment().unwrap();
        assert_eq!(seq, round);
        check(&s, "a new increment file is live");
        set(&s, "k1", "during");
        del(&s, "k2");
        set(&s, &format!("new{round}"), "x");
        check(&s, "writes to the increment");
        let tmp = dir.join(format!("{TEMP_PREFIX}test.aof"));
        let size = aof.write_snapshot(&dbs, &tmp, seq).unwrap();
        set(&s, "k3", "after the walk");
        check(&s, "the new base written, not renamed");
        // The rename done, the older increment not yet deleted.
        std::fs::copy(&tmp, dir.join("saved-base")).unwrap();
        let stale = (round > 1).then(|| std::fs::read(dir.join(incr_name(round - 1))).unwrap());
        aof.commit(&tmp, seq, size).unwrap();
        let after_commit = crash_copy(&dir, "after-commit");
        if let Some(stale) = &stale {
            std::fs::write(
                after_commit.parent().unwrap().join(incr_name(round - 1)),
                stale,
            )
            .unwrap();
            let loaded = store();
            load_chain(after_commit.parent().unwrap(), &loaded).unwrap();
            aof.flush_once().unwrap();
            assert_eq!(
                dump(loaded.get(0)),
                dump(&s),
                "crash before the stale increment went"
            );
            assert!(
                !after_commit
                    .parent()
                    .unwrap()
                    .join(incr_name(round - 1))
                    .exists(),
                "the stale increment is removed at load"
            );
        }
        std::fs::remove_file(dir.join("saved-base")).unwrap();
        set(&s, "k4", "after the commit");
        check(&s, "the commit");
    }
    assert!(!dir.join(incr_name(1)).exists());
    aof.close();
}

/// Regression guard for the loader on hostile files: random edits never panic; each
/// load either refuses or replays whole frames.
#[test]
fn random_damage_never_panics() {
    let (data, _) = sample();
    let mut rng = orrery_core::testing::rng::rng(0x9E37_79B9_7F4A_7C15);
    for i in 0..300 {
        let mut bad = data.clone();
        for _ in 0..rng.random_range(1..=4) {
            let at = rng.random_range(0..bad.len());
            match rng.random_range(0..3) {
                0 => bad[at] = rng.random(),
                1 => bad.truncate(at.max(1)),
                _ => bad.insert(at, rng.random()),
            }
        }
        if let Ok(l) = load(&file("random", &bad), &store(), true) {
            assert!(l.frames <= 3, "{i}");
        }
    }
}
