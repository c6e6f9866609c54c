//! Loom models of the arena's version protocol, the reader's side against one writer
//! (opt-in): `RUSTFLAGS="--cfg loom" cargo test -p orrery-hyperion --release --lib seq::loom`.
//!
//! The versions are [`seq`](super)'s own code ([`Window`], [`begin`], [`SEQ`]) on loom's
//! atomics. The data a write changes — container bytes, which the real writer stores with
//! plain stores under the arena's lock and the reader loads with relaxed atomic loads
//! (`mm::RawBlock`) — are two relaxed atomic words here, written one after the other, and
//! the trie's root (`View::roots`, a `Release` store) a third; the reader loads them as
//! `Arena::try_get` and `Arena::optimistic` do and keeps what it read only if the version
//! validates.

use ::loom::sync::Arc;
use ::loom::sync::atomic::{AtomicU64, Ordering};
use ::loom::thread;

use super::{SEQ, Window, begin};

/// One arena with two tries: its version, trie `a`'s version, and trie `a`'s data.
struct Arena {
    seq: AtomicU64,
    tseq_a: AtomicU64,
    /// Two words a write of trie `a` changes together (a container's bytes).
    data: [AtomicU64; 2],
    /// Trie `a`'s root, published last (`Release`), as `ArenaInner::write` does.
    root: AtomicU64,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            seq: AtomicU64::new(0),
            tseq_a: AtomicU64::new(0),
            data: [AtomicU64::new(0), AtomicU64::new(0)],
            root: AtomicU64::new(0),
        }
    }

    /// A write of a key of trie `a` (`ArenaInner::write`, under the arena's write lock:
    /// one writer here): the window opened, the data changed, the root published, the
    /// window closed. `late`: the self-check's broken writer, which changes the first
    /// word before it opens the window.
    fn write(&self, v: u64, late: bool) {
        if late {
            self.data[0].store(v, Ordering::Relaxed);
        }
        let _w = Window::open(&self.seq, Some(&self.tseq_a));
        for d in &self.data {
            d.store(v, Ordering::Relaxed);
        }
        self.root.store(v, Ordering::Release);
    }

    /// One optimistic read of trie `a` validated against `seq` (trie `a`'s version for a
    /// key of trie `a`, `Arena::try_get` and `Arena::optimistic`; the arena's for the empty
    /// key): `None` when the version was odd too long or did not validate (the caller
    /// retries, or falls back to the lock).
    fn read(&self, seq: &AtomicU64) -> Option<[u64; 3]> {
        self.read_from(seq, begin(seq, 2, true)?)
    }

    /// The read after `begin` returned `v`.
    fn read_from(&self, seq: &AtomicU64, v: u64) -> Option<[u64; 3]> {
        let root = self.root.load(Ordering::Acquire);
        let got = [
            root,
            self.data[0].load(Ordering::Relaxed),
            self.data[1].load(Ordering::Relaxed),
        ];
        SEQ.validate(seq, v).then_some(got)
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = ::loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(f);
}

/// Whose version a reader validates.
#[derive(Clone, Copy, PartialEq)]
enum Validates {
    /// Trie `a`'s (a key of trie `a`).
    Trie,
    /// The arena's (the empty key).
    Arena,
    /// The self-check's broken reader: trie `a`'s, but read with a plain load instead of
    /// `begin` (an odd version is not waited out).
    TrieUnchecked,
}

/// A validated read holds the root and both words from one write (all three 0, 1 or 2);
/// one writer (two writes) and one reader, each on a thread of its own.
fn reads_are_whole(by: Validates, late: bool) {
    model(move || {
        let a = Arc::new(Arena::new());
        let (aw, ar) = (a.clone(), a.clone());
        let w = thread::spawn(move || {
            aw.write(1, late);
            aw.write(2, late);
        });
        let r = thread::spawn(move || {
            let seq = match by {
                Validates::Arena => &ar.seq,
                _ => &ar.tseq_a,
            };
            let got = if by == Validates::TrieUnchecked {
                ar.read_from(seq, seq.load(Ordering::Acquire))
            } else {
                ar.read(seq)
            };
            if let Some([root, x, y]) = got {
                assert!(root == x && x == y, "torn read {root} {x} {y}");
            }
        });
        w.join().unwrap();
        r.join().unwrap();
        let even = |w: &AtomicU64| SEQ.try_read(w).is_some();
        assert!(even(&a.seq) && even(&a.tseq_a), "a version left odd");
        assert_eq!(a.read(&a.tseq_a), Some([2, 2, 2]));
    });
}

#[test]
fn seq_trie_validated_reads_are_whole() {
    reads_are_whole(Validates::Trie, false);
}

#[test]
fn seq_arena_validated_reads_are_whole() {
    reads_are_whole(Validates::Arena, false);
}

/// The self-check: a writer that changes data before its window opens tears a reader's
/// validated copy in some interleaving.
#[test]
#[should_panic(expected = "torn read")]
fn seq_write_outside_the_window_tears() {
    reads_are_whole(Validates::Trie, true);
}

/// The self-check of the reader's side: a reader that takes the version without waiting
/// for it to be even (a plain load instead of `begin`) validates a torn copy in some
/// interleaving (the version stays odd, hence unchanged, over a write in progress).
#[test]
#[should_panic(expected = "torn read")]
fn seq_read_without_begin_tears() {
    reads_are_whole(Validates::TrieUnchecked, false);
}
