//! Loom models of the bucket's version/lock word and of the migration hand-off (opt-in):
//! `RUSTFLAGS="--cfg loom" cargo test -p orrery-cuckoo-trie --release --lib bucket::loom`.
//!
//! The buckets here are the index's own [`Bucket`] code (`bucket/lock.rs`), instantiated on
//! loom's atomics: its seqlock snapshot, lock, abandon, freeze and publication are the
//! real ones, explored over every interleaving loom allows (bounded preemptions). The
//! migration hand-off is a model of `trie/grow/mod.rs` over those buckets; each step names
//! the function it stands for.

use ::loom::sync::Arc;
use ::loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use ::loom::thread;

use super::{Bucket, Entry, Kind, Line};

type LBucket = Bucket<AtomicU64>;

fn bucket() -> LBucket {
    Bucket::from_fn(|_| AtomicU64::new(0))
}

/// Where a value sits in a leaf's record field: shifted so that entry 0's value lies in
/// word 1 and entry 3's in words 6–7, away from word 0 (which a reader loads first).
const SHIFT: u32 = 20;

/// A leaf entry carrying `v` (in its record field).
fn leaf(v: u64) -> Entry {
    Entry::new(Kind::Leaf, 1, 0).with_record((v << SHIFT) as usize * 8)
}

/// The value a snapshot's entry `i` carries (0: empty).
fn value(line: &Line, i: usize) -> u64 {
    let e = line.entry(i);
    if e.is_empty() {
        0
    } else {
        (e.record() as u64 / 8) >> SHIFT
    }
}

/// Runs `f` under loom with a preemption bound: the models' threads run loops (seqlock
/// retries, lock spins), and an unbounded search does not end in CI time; the protocols'
/// bugs show within two preemptions (the self-checks below fail within it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(2, f);
}

/// [`model`] with `preemptions` as the bound.
fn model_bounded(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = ::loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(f);
}

/// Runs `roles` each on a thread of its own and joins them. Every role gets a spawned
/// thread (the main thread only waits): loom's search explores fewer schedules for work
/// done on the thread that spawned the others (a self-check below missed its torn read
/// when the reader ran on the main thread).
fn run(roles: Vec<Box<dyn FnOnce() + Send>>) {
    let ts: Vec<_> = roles.into_iter().map(thread::spawn).collect();
    for t in ts {
        t.join().unwrap();
    }
}

/// A writer publishes entries 0 and 3 (words 1 and 6–7) together, twice; a reader's
/// validated snapshot (`Bucket::read`) always holds both from the same publication.
#[test]
fn bucket_snapshots_are_whole() {
    snapshots(false);
}

/// The self-check of the snapshot model: a reader that skips the validation of
/// `Bucket::read` (word 0 loaded, the other words loaded, nothing re-checked) does see a
/// torn line in some interleaving.
#[test]
#[should_panic(expected = "torn snapshot")]
fn bucket_snapshot_without_validation_tears() {
    snapshots(true);
}

fn snapshots(unvalidated: bool) {
    model(move || {
        let b = Arc::new(bucket());
        let (bw, br) = (b.clone(), b.clone());
        run(vec![
            Box::new(move || {
                for v in [1, 2] {
                    let mut g = bw.lock().expect("not frozen");
                    g.line.set_entry(0, leaf(v));
                    g.line.set_entry(3, leaf(v));
                }
            }),
            Box::new(move || {
                let line = if unvalidated {
                    br.read_unvalidated()
                } else {
                    br.read()
                };
                assert_eq!(value(&line, 0), value(&line, 3), "torn snapshot");
            }),
        ]);
        let line = b.read();
        assert_eq!((value(&line, 0), value(&line, 3)), (2, 2));
    });
}

/// Two writers each increment the value of entry 1 under the lock: no update is lost
/// (the lock's compare-and-swap and the publishing store order the critical sections).
#[test]
fn bucket_writers_exclude_each_other() {
    model(|| {
        let b = Arc::new(bucket());
        let roles: Vec<Box<dyn FnOnce() + Send>> = (0..2)
            .map(|_| {
                let b = b.clone();
                Box::new(move || {
                    let mut g = b.lock().expect("not frozen");
                    let v = value(&g.line, 1);
                    g.line.set_entry(1, leaf(v + 1));
                }) as Box<dyn FnOnce() + Send>
            })
            .collect();
        run(roles);
        assert_eq!(value(&b.read(), 1), 2);
    });
}

/// A writer that abandons its lock stores nothing and restores the version: no snapshot
/// shows the edit, and a version read before (or during: `version` waits out the lock)
/// validates again once the writer is gone (`unchanged`; while the bucket is locked it
/// does not, which only costs a reader a retry).
#[test]
fn bucket_abandon_leaves_no_trace() {
    model(|| {
        let b = Arc::new(bucket());
        let seen = Arc::new(AtomicU64::new(u64::MAX));
        let (bw, br, sr) = (b.clone(), b.clone(), seen.clone());
        run(vec![
            Box::new(move || {
                let mut g = bw.lock().expect("not frozen");
                g.line.set_entry(2, leaf(9));
                g.abandon();
            }),
            Box::new(move || {
                sr.store(br.version(), Ordering::Relaxed);
                assert_eq!(value(&br.read(), 2), 0, "an abandoned edit was seen");
            }),
        ]);
        assert!(
            b.unchanged(seen.load(Ordering::Relaxed)),
            "abandon changed the version"
        );
    });
}

/// The old and the new table of a migration (one bucket each), the current-table pointer
/// (`Raw::table`: 0 old, 1 new) and the migration's state (`Migration::state`).
struct Tables {
    buckets: [LBucket; 2],
    current: AtomicUsize,
    state: AtomicU8,
    /// Set (Release) by the writer once its insert returned.
    inserted: AtomicBool,
    /// The broken migration of the self-check: copy without freezing first.
    skip_freeze: bool,
}

const RUNNING: u8 = 0;
const DONE: u8 = 1;

impl Tables {
    /// A writer's insert (`trie/update`, `LockSet` over `Bucket::lock`): lock the bucket
    /// of the current table; a frozen bucket refuses the lock, and the writer then helps
    /// and waits for the migration (`Raw::help_growth` → `participate`: `state` loaded
    /// Acquire until DONE) and retries on the table current then.
    fn insert(&self, v: u64) {
        loop {
            let t = self.current.load(Ordering::Acquire);
            if let Some(mut g) = self.buckets[t].lock() {
                g.line.set_entry(0, leaf(v));
                break;
            }
            while self.state.load(Ordering::Acquire) != DONE {
                thread::yield_now();
            }
        }
        self.inserted.store(true, Ordering::Release);
    }

    /// The migration (`Raw::participate`, one freeze chunk and one copy unit, then
    /// `Raw::finish`): freeze the old bucket (`Table::freeze_range` → `Bucket::freeze`,
    /// which waits for a writer holding it), copy its snapshot into the new table under
    /// the new bucket's lock (`copy_unit` → `Table::place`), publish the new table
    /// (`Raw::table.swap`, AcqRel) and mark the migration done (`state`, Release).
    fn migrate(&self) {
        if !self.skip_freeze {
            self.buckets[0].freeze();
        }
        let old = self.buckets[0].read();
        {
            let mut g = self.buckets[1].lock().expect("the new table is not frozen");
            g.line.set_entry(0, old.entry(0));
        }
        self.current.swap(1, Ordering::AcqRel);
        self.state.store(DONE, Ordering::Release);
    }

    /// A lookup (`Raw::lookup`): snapshot the bucket of the current table, and restart if
    /// the table was replaced by the end (`Raw::still_current`).
    fn lookup(&self) -> u64 {
        loop {
            let t = self.current.load(Ordering::Acquire);
            let line = self.buckets[t].read();
            if self.current.load(Ordering::Acquire) == t {
                return value(&line, 0);
            }
        }
    }
}

/// A writer inserts while a migration freezes, copies and publishes the table: the insert
/// lands in the new table (made before the freeze and copied, or retried there after the
/// publication), never lost in the old one.
#[test]
fn migration_hands_writes_over() {
    migration(false, NO_READER);
}

/// The self-check of the hand-off model: a migration that copies the old bucket without
/// freezing it first loses an insert made between the copy and the publication.
#[test]
#[should_panic(expected = "the insert was lost")]
fn migration_without_freeze_loses_writes() {
    migration(true, NO_READER);
}

/// With a reader too: a lookup that starts after the insert returned finds it, in
/// whichever table is current (one preemption: three threads of seqlock loops take
/// minutes at two).
#[test]
fn migration_lookups_see_finished_inserts() {
    migration(false, READER);
}

/// The self-check of the reader's side: a lookup that keeps a table it loaded before the
/// insert returned and does not check it is still current (`Raw::still_current`) misses
/// an insert retried in the new table.
#[test]
#[should_panic(expected = "missed it")]
fn migration_lookup_without_table_check_misses() {
    migration(false, STALE_READER);
}

/// [`migration`]'s reader: none, the real lookup, or the self-check's stale one.
const NO_READER: u8 = 0;
const READER: u8 = 1;
const STALE_READER: u8 = 2;

fn migration(skip_freeze: bool, reader: u8) {
    let check = move || {
        let tables = Arc::new(Tables {
            buckets: [bucket(), bucket()],
            current: AtomicUsize::new(0),
            state: AtomicU8::new(RUNNING),
            inserted: AtomicBool::new(false),
            skip_freeze,
        });
        let (tw, tm, tr) = (tables.clone(), tables.clone(), tables.clone());
        let mut roles: Vec<Box<dyn FnOnce() + Send>> = vec![
            Box::new(move || tw.insert(7)),
            Box::new(move || tm.migrate()),
        ];
        if reader != NO_READER {
            roles.push(Box::new(move || {
                let early = tr.current.load(Ordering::Acquire);
                let after = tr.inserted.load(Ordering::Acquire);
                let found = if reader == STALE_READER {
                    value(&tr.buckets[early].read(), 0)
                } else {
                    tr.lookup()
                };
                if after {
                    assert_eq!(found, 7, "a lookup after the insert missed it");
                } else {
                    assert!(found == 0 || found == 7);
                }
            }));
        }
        run(roles);
        assert_eq!(tables.current.load(Ordering::Relaxed), 1);
        assert_eq!(
            value(&tables.buckets[1].read(), 0),
            7,
            "the insert was lost"
        );
    };
    model_bounded(if reader == NO_READER { 2 } else { 1 }, check);
}

impl LBucket {
    /// `Bucket::read` without its validation (the self-check's broken reader).
    fn read_unvalidated(&self) -> Line {
        let mut line = Line::default();
        line.words[0] = super::lock::VERSION.read_begin(self.word(0));
        for i in 1..8 {
            line.words[i] = self.word(i).load(Ordering::Relaxed);
        }
        line
    }
}
