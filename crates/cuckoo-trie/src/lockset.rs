//! The buckets one update locks (§5 "Updates"): a writer locates every node it will write
//! with read-only (validated) searches, then locks their buckets with a compare-and-swap
//! on each bucket's version/lock word *at the version its search saw*, so that taking the
//! lock also verifies that the node is unchanged since it was read.
//!
//! Rules that make this deadlock-free and invisible to readers:
//!
//! - **No waiting while holding.** Every lock of a set is taken by a non-waiting
//!   compare-and-swap ([`LockSet::lock_node`], [`LockSet::lock_any`]); a failure (the bucket
//!   changed, another writer holds it, or it is frozen by a growth) fails the attempt:
//!   the set is abandoned and the update starts again from its searches. So no writer
//!   ever waits for a lock while holding one, and two writers cannot wait for each other.
//! - **Edits are private until the end.** Edits go to the private copies of the locked
//!   lines; nothing is stored until [`LockSet::commit`], which stores and unlocks every
//!   bucket. Readers never read a locked bucket (their snapshot waits for the lock), and a
//!   reader that read one of the buckets before it was locked and another after the commit
//!   fails its validation of the first one (the lock CAS changed its word before any edit
//!   became visible). A set dropped without a commit unlocks without storing anything.
//! - **Own buckets are read from the private copies** ([`LockSet::line`]): reading them from
//!   the table would wait for the writer itself.
//! - New entries are placed only in buckets of the set ([`LockSet::place`]): the colour and
//!   slot are chosen from the locked lines of both buckets of the entry's hash, so no
//!   concurrent placement can pick the same colour. Relocation (cuckoo paths) is not done
//!   inside a set: it is a separate step before the set is built
//!   ([`crate::table::Table::make_room_claimed`]).

use crate::bucket::{BucketGuard, Entry, Line, SLOTS};
use crate::hash::PrefixHash;
use crate::table::{Found, Slot, Table};

/// Why an update attempt failed before it changed anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fail {
    /// A concurrent writer changed (or holds, or froze) a bucket the attempt needs:
    /// start again from the searches.
    Restart,
    /// A placement found no free slot in a locked pair of buckets (a concurrent writer
    /// took the slot that was made): start again; repeated, the table grows.
    NoRoom,
    /// Phase 1 moved entries to make room: search again (the room stays unless another
    /// writer takes it); repeated, the table grows.
    Relocated,
    /// No free colour or no cuckoo path: the table must grow.
    Full,
}

/// Buckets locked by one update attempt, with their private edited lines.
pub(crate) struct LockSet<'t> {
    t: &'t Table,
    held: Vec<(usize, BucketGuard<'t>)>,
    /// Entries placed minus entries cleared by the edits (the trie's entry count changes
    /// by this at the commit: `Raw::entries`, the shrink trigger).
    delta: isize,
}

impl<'t> LockSet<'t> {
    /// An empty set over table `t`.
    pub(crate) fn new(t: &'t Table) -> LockSet<'t> {
        LockSet {
            t,
            held: Vec::with_capacity(8),
            delta: 0,
        }
    }

    /// The table.
    #[inline]
    pub(crate) fn table(&self) -> &'t Table {
        self.t
    }

    fn held(&self, b: usize) -> Option<usize> {
        self.held.iter().position(|(i, _)| *i == b)
    }

    /// Locks bucket `b` if its word 0 is still `seen`; if the set holds it already, checks
    /// that it was locked at `seen`.
    pub(crate) fn lock_at(&mut self, b: usize, seen: u64) -> Result<(), Fail> {
        if let Some(i) = self.held(b) {
            return if self.held[i].1.seen() == seen {
                Ok(())
            } else {
                Err(Fail::Restart)
            };
        }
        let g = self.t.bucket(b).try_lock_at(seen).ok_or(Fail::Restart)?;
        self.held.push((b, g));
        Ok(())
    }

    /// Locks the bucket of a node at the version it was found at: the lock verifies the
    /// node is unchanged.
    pub(crate) fn lock_node(&mut self, f: &Found) -> Result<(), Fail> {
        self.lock_at(f.slot.bucket, f.version)
    }

    /// Whether the bucket of node `f` is still at the version `f` was found at (for a
    /// bucket the set holds: whether it was locked at that version). Waits for nothing.
    pub(crate) fn unchanged(&self, f: &Found) -> bool {
        match self.held(f.slot.bucket) {
            Some(i) => self.held[i].1.seen() == f.version,
            None => self.t.bucket(f.slot.bucket).unchanged(f.version),
        }
    }

    /// Locks bucket `b` at whatever version it has (a bucket that receives a new entry).
    pub(crate) fn lock_any(&mut self, b: usize) -> Result<(), Fail> {
        if self.held(b).is_some() {
            return Ok(());
        }
        let g = self.t.bucket(b).try_lock().ok_or(Fail::Restart)?;
        self.held.push((b, g));
        Ok(())
    }

    /// The current line of bucket `b`: the private copy if held, else a snapshot.
    pub(crate) fn line(&self, b: usize) -> Line {
        match self.held(b) {
            Some(i) => self.held[i].1.line,
            None => self.t.bucket(b).read(),
        }
    }

    /// The entry at `slot` of a held bucket.
    pub(crate) fn entry(&self, slot: Slot) -> Entry {
        self.line(slot.bucket).entry(slot.index)
    }

    /// Rewrites the entry at `slot` (its bucket must be held) with `f(old)`.
    pub(crate) fn update(&mut self, slot: Slot, f: impl FnOnce(Entry) -> Entry) {
        let Some(i) = self.held(slot.bucket) else {
            unreachable!("an update edits a bucket it does not hold")
        };
        let line = &mut self.held[i].1.line;
        let e = line.entry(slot.index);
        line.set_entry(slot.index, f(e));
    }

    /// Clears the entry at `slot` (held).
    pub(crate) fn clear(&mut self, slot: Slot) {
        debug_assert!(!self.entry(slot).is_empty(), "clearing an empty slot");
        self.update(slot, |_| Entry(0));
        self.delta -= 1;
    }

    /// Places `proto` as a new node of hash `h`, locking both of its buckets: a colour no
    /// entry of `h` has and a free slot, both read from the locked lines (so exact).
    pub(crate) fn place(&mut self, h: u64, proto: Entry) -> Result<(Slot, Entry), Fail> {
        let (b1, b2) = self.t.hash().buckets_of(h);
        self.lock_any(b1)?;
        self.lock_any(b2)?;
        let tag = PrefixHash::tag(h);
        let mut used = 0u16;
        let mut free = None;
        for (b, primary) in [(b1, true), (b2, false)] {
            let line = self.line(b);
            for i in 0..SLOTS {
                let e = line.entry(i);
                if e.is_empty() {
                    free = free.or(Some((b, i, primary)));
                } else if e.tag() == tag && e.primary() == primary {
                    used |= 1 << e.color();
                }
            }
        }
        let color = (0..crate::bucket::COLORS)
            .find(|&c| used & (1 << c) == 0)
            .ok_or(Fail::Full)?;
        let (b, i, primary) = free.ok_or(Fail::NoRoom)?;
        let e = proto.placed(tag, primary).with_color(color);
        let slot = Slot {
            bucket: b,
            index: i,
        };
        self.update(slot, |_| e);
        self.delta += 1;
        Ok((slot, e))
    }

    /// Stores every edit and unlocks every bucket (each bucket's version advances);
    /// returns the entries placed minus the entries cleared.
    pub(crate) fn commit(mut self) -> isize {
        drop(std::mem::take(&mut self.held));
        self.delta
    }
}

impl Drop for LockSet<'_> {
    fn drop(&mut self) {
        // A set dropped without `commit` (an early return on failure) stores nothing.
        for (_, g) in self.held.drain(..) {
            g.abandon();
        }
    }
}
