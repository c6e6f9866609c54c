//! Incremental shrinking: the mirror of the expansion (`expand.rs`; paper §3 "Hash table
//! expansion", which only grows), so that a table emptied by removals gives its bucket array
//! back (issue 38, "Memory comes back").
//!
//! # When
//!
//! A table of N buckets shrinks when it holds fewer than 2/5 of its growth threshold
//! (`Table::shrink_at`: `N * load_percent / 250` items, 0.4 items per bucket by default), and
//! never below the configured initial size (`Config::initial_buckets`, which `with_capacity`
//! sets). After halving, the table holds under 4/5 of its new growth threshold: it grows
//! again only after the item count rose by a quarter; after a doubling it holds half of its
//! new threshold, so it shrinks again only after the count fell by a fifth. Churn around one
//! size therefore cannot make it thrash (`churn_at_a_boundary_does_not_thrash` below). Why
//! 2/5 and not less: a table filled from scratch with n items has between n and 2n buckets;
//! after removing 90% of 4M keys, 400K items are 0.38 per bucket of a 1M-bucket table, which
//! a quarter-full rule kept (32 MiB of buckets against 16 MiB for the fresh index; issue 38's
//! bound is 1.5 times the fresh index). The check runs after a remove, at the same
//! striped-counter interval as the insert's growth check.
//!
//! # How (same three phases, same token, same MOVED redirection)
//!
//! 1. **Initialization.** The remover that sees the count below the threshold takes `t`'s
//!    resize token and publishes a successor of N/2 zeroed buckets (`Inner::start_resize`,
//!    shared with the expansion). A table has at most one successor, and only a table
//!    without one starts a resize (under the token), so a shrink and an expansion of the same
//!    table never overlap: while one is in progress, the other's trigger finishes it first
//!    (an insert that finds the shrink's successor over its growth threshold finishes the
//!    shrink, then the next insert expands the smaller table).
//! 2. **Merge, successor bucket by successor bucket.** Progress *r* counts successor buckets:
//!    successor bucket `l` is built from old buckets `l` and `l + N/2` (the keys whose hash
//!    is `l` modulo N/2). A run locks, per batch, old buckets `l` then `l + N/2` for every `l`
//!    of the batch (index order; writers hold at most one bucket lock and wait for nothing
//!    while holding it, so no deadlock), then merges each pair: if both old inline areas hold
//!    a pair, a node is allocated for the second one *first* (on failure both buckets are
//!    unlocked unchanged, the run ends there and a later write retries: nothing was
//!    published); then both old words get MOVED (locks kept), the successor's area receives
//!    the first inline pair (or, if neither bucket has one, the first chain pair that fits,
//!    as in the expansion), the second inline pair's node heads the new chain, and every node
//!    of both old chains is re-linked onto it (moved, not copied; tags kept, LAST on the
//!    first one linked), except a node the node pool grants a block in a lower chunk: its
//!    copy is linked instead and the node is left in its old chain and retired
//!    (`compact.rs`, so that the nodes surviving a mass removal are compacted as the table
//!    shrinks). The successor's word is stored, both old areas cleared, both old
//!    words stored as MOVED | unlocked | empty. *r* is published after each run.
//! 3. **Termination.** The last run swings the current table to the successor and retires
//!    the old table through the epoch collector, exactly as the expansion does.
//!
//! # Why readers and writers stay correct
//!
//! The table choice is the expansion's, made exact for both directions by one test
//! (`Table::is_migrated`): old bucket `idx` is migrated when `idx & (N/2 - 1) < r`, so a key
//! in old bucket `l + N/2` goes straight to successor bucket `l` once `l < r`. Otherwise the
//! old bucket is read and its MOVED bit redirects: both old buckets of a merge are MOVED
//! from before the first re-link store until after the successor's word is complete, and
//! locked throughout, so a reader that sees MOVED while locked waits for that merge, and a
//! writer that locks a MOVED bucket goes to the successor. The linearizability argument of
//! the crate docs carries over unchanged: (i) no key of either old bucket changes during
//! the merge (both locks held); (ii) a reader that walks a stale old chain may stray into the
//! merged chain, which holds only nodes of those same keys (and the demoted inline pair,
//! written completely before it is linked, with the key's current value), so a hit is a
//! current value and a miss is re-validated by the bucket word (MOVED, set before any
//! re-link) and retried in the successor; (iii) an inline pair is read before the word: the
//! old area is cleared only after MOVED was set, so a reader that finds it empty then sees
//! MOVED. A merged chain is the two chains plus at most one node; at under 0.4 items per
//! bucket the expected merged chain is short (under 0.8 items per successor bucket). A node
//! replaced by its copy in a lower chunk is one more "promoted" node for this argument: left
//! untouched in its old chain (a reader standing on it walks on), its copy complete before
//! the merged chain is published, its pair unchanged (both locks held).
//!
//! # Who merges
//!
//! As for the expansion: cooperative writers (here removes: every remove of a thread merges
//! one run), or the paper's expand-thread in `Expansion::Dedicated` mode.
//! A shrink of N buckets must finish before the count falls below the successor's own
//! threshold, only N/5 removes later (versus N inserts for an expansion), so removes help
//! more often than inserts: every remove, a run of 64 successor buckets, finishes the N/2
//! merges within N/128 removes (a removal that stops soon after a shrink started, as in
//! issue 38's test, which removes only 5% of N after the last one starts, should not leave
//! both bucket arrays behind). A remove that finds the count below the successor's
//! threshold finishes the shrink itself, unpinned between runs, as an insert finishes an
//! expansion whose successor is full; the next remove then starts the next halving. Removes
//! also help an expansion left in progress by the last inserts, and finish it when the
//! count falls below the (smaller) current table's shrink threshold: a table cannot start a
//! shrink while it has a successor, so otherwise a fill followed by removes only could keep
//! both arrays forever (the linearizability drive showed it).

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use orrery_core::Error;
use orrery_core::prefetch;
use orrery_core::sync::Guard;

use crate::config::Expansion;
use crate::link::{BucketWord, Link};
use crate::node::{self, Node, NodeAlloc};
use crate::raw::{Inner, hashed};
use crate::table::{LOCK_BATCH, Table, check_interval};

impl Inner {
    /// Called after a remove (under the remove's guard); `local` is the calling stripe's item
    /// count. Starts a shrink when the table is sparse, helps one in progress, and returns
    /// whether the caller must finish the resize in progress (its successor is itself below
    /// its shrink threshold) with [`finish_expansion`](Inner::finish_expansion), *after*
    /// dropping its guard.
    #[inline]
    #[must_use]
    pub(crate) fn after_remove(self: &Arc<Self>, local: isize, guard: &Guard) -> bool {
        let t = self.current(guard);
        let check = local % check_interval(t.len()) == 0;
        let min = self.config.initial_buckets;
        match t.next() {
            None => {
                if check && t.len() > min && self.counters.sum(crate::raw::ITEMS) < t.shrink_at() {
                    self.start_resize(t, t.len() / 2, guard);
                }
            }
            Some(next) => {
                // Finish the resize in progress when the table is sparse for what follows
                // it: a shrink whose successor would itself shrink, or an expansion (left
                // in progress by the last inserts) of a table that would shrink; the next
                // remove then starts the (next) halving.
                let sparse_for = if next.len() < t.len() {
                    (next.len() > min).then_some(next)
                } else {
                    Some(t)
                };
                if check
                    && sparse_for
                        .is_some_and(|s| self.counters.sum(crate::raw::ITEMS) < s.shrink_at())
                {
                    return true;
                }
                if self.config.expansion == Expansion::Cooperative {
                    // Every remove helps (see "Who merges"). Never waits: a busy token means
                    // someone else is migrating.
                    let _ = self.help(t, next, guard);
                }
            }
        }
        false
    }
}

/// Merges, for every successor bucket `l` of `range` (at most [`LOCK_BATCH`] of them), old
/// buckets `l` and `l + next.len()` of `t` into bucket `l` of `next`. The caller holds `t`'s
/// resize token. Nodes whose pairs moved into an inline area are pushed onto `promoted`, for
/// the caller to retire. Returns the end of the merged prefix of `range`: `range.end`, or
/// the first bucket whose merge found no memory for a node (that bucket and the rest of the
/// batch are unlocked unchanged).
pub(crate) fn merge_batch(
    alloc: &NodeAlloc,
    t: &Table,
    next: &Table,
    range: Range<usize>,
    promoted: &mut Vec<NonNull<Node>>,
) -> usize {
    let half = next.len();
    debug_assert_eq!(half * 2, t.len());
    debug_assert!(range.len() <= LOCK_BATCH && range.end <= half);
    let mut words = [(BucketWord::MOVED_EMPTY, BucketWord::MOVED_EMPTY); LOCK_BATCH];
    // Lock the whole batch first, as the expansion does (see `expand::migrate_batch`).
    for (w, l) in words.iter_mut().zip(range.clone()) {
        *w = (t.lock(l), t.lock(l + half));
        for head in [w.0.head(), w.1.head()] {
            if let Some(n) = head.node() {
                prefetch(n.as_ptr());
            }
        }
    }
    for (i, l) in range.clone().enumerate() {
        let (a, b) = words[i];
        if merge_bucket(alloc, t, next, l, a, b, promoted).is_err() {
            for (&(a, b), l) in words[i..].iter().zip(l..range.end) {
                t.store_unlock(l, a.without_lock());
                t.store_unlock(l + half, b.without_lock());
            }
            return l;
        }
    }
    range.end
}

/// Merges old buckets `l` (word `a`) and `l + next.len()` (word `b`) of `t`, both locked by
/// the caller and not MOVED, into bucket `l` of `next`, and releases both locks. On
/// [`Error::OutOfMemory`] (no node for the second inline pair) nothing was changed and both
/// locks are still held.
fn merge_bucket(
    alloc: &NodeAlloc,
    t: &Table,
    next: &Table,
    l: usize,
    a: BucketWord,
    b: BucketWord,
    promoted_out: &mut Vec<NonNull<Node>>,
) -> Result<(), Error> {
    let half = next.len();
    debug_assert!(a.is_locked() && b.is_locked());
    debug_assert!(!a.is_moved() && !b.is_moved(), "bucket {l} merged twice");
    let old_areas = [&t.cell(l).inline, &t.cell(l + half).inline];
    let pairs = [old_areas[0].locked_entry(), old_areas[1].locked_entry()];
    // One inline area for up to two pairs: the second becomes a node, allocated before any
    // change so that a failure leaves both buckets as they were. Its `next` is null: it is
    // the first node linked below, so it ends the new chain.
    let mut head = Link::default();
    let mut demoted = None;
    if let [Some(_), Some(e)] = &pairs {
        let x = alloc.alloc_low(e.key(), e.value(), Link::default())?;
        demoted = Some(Link::new(x, hashed(e.key()).tag, true));
    }
    // MOVED first (locks still held): a reader whose walk sees any re-linked `next` word
    // below will then see MOVED when it re-checks its bucket, and retries in `next`.
    t.store_locked(l, a.with_moved());
    t.store_locked(l + half, b.with_moved());
    // Nobody reaches successor bucket `l` before this merge ends: its area starts empty.
    let area = &next.cell(l).inline;
    debug_assert!(area.locked_is_empty());
    let mut free = true;
    if let Some(e) = pairs[0].as_ref().or(pairs[1].as_ref()) {
        area.init(e.key(), e.value());
        free = false;
    }
    if let Some(d) = demoted {
        head = d;
    }
    let mut promoted = None;
    for word in [a, b] {
        let mut link = word.head();
        while let Some(x) = link.node() {
            // SAFETY: `x` is in a chain whose lock we hold, so it is live, and only we write
            // its `next` word.
            let hdr = unsafe { node::header(x) };
            let after = Link::from_word(hdr.next.load(Ordering::Relaxed));
            // SAFETY: as above.
            let meta = unsafe { node::node_meta(x, Ordering::Relaxed) };
            if free && !meta.is_long() && next.fits_inline(meta.klen(), meta.vlen()) {
                // The pair moves into the empty area; the node is left untouched (a reader
                // standing on it still walks on) and retired by the caller.
                // SAFETY: as above; the key is immutable and, under the lock, the value is
                // stable.
                let key = unsafe { node::key(x, meta) };
                // SAFETY: as above.
                unsafe { node::with_value(x, |v| area.init(key, v)) };
                free = false;
                promoted = Some(x);
            } else if let Some(copy) = {
                // SAFETY: `x` is in a chain whose lock we hold (live, value stable).
                unsafe { alloc.copy_lower(x, head) }
            } {
                // The node moves to a lower chunk (`compact.rs`): its copy is linked
                // instead, and the node, left untouched like a promoted one, is retired by
                // the caller.
                head = Link::new(copy, link.tag(), head.is_null());
                promoted_out.push(x);
            } else {
                hdr.next.store(head.word(), Ordering::Release);
                head = Link::new(x, link.tag(), head.is_null());
            }
            link = after;
        }
    }
    // The new bucket is reached only through MOVED-and-unlocked or `migrated > l`, both
    // published after this store.
    next.bucket(l).store(head.word(), Ordering::Release);
    // A reader that finds an old area empty from now on then loads its word and sees MOVED.
    old_areas[0].clear();
    old_areas[1].clear();
    t.store_unlock(l, BucketWord::MOVED_EMPTY);
    t.store_unlock(l + half, BucketWord::MOVED_EMPTY);
    promoted_out.extend(promoted);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::ops::ControlFlow;

    use orrery_core::sync::pin;

    use crate::expand::Step;
    use crate::raw::hashed;
    use crate::read::lookup_at;
    use crate::table::Table;
    use crate::{Config, Expansion, Mercury};

    fn key(i: u64) -> [u8; 8] {
        i.to_be_bytes()
    }

    /// Every key of `keys` is there with its value (`i * 3`, little-endian), through `get`,
    /// `len`, `for_each` and `iter`.
    fn holds_exactly(m: &Mercury, keys: &[u64]) {
        assert_eq!(m.len(), keys.len());
        for &i in keys {
            assert_eq!(
                m.get(&key(i)),
                Some((i * 3).to_le_bytes().to_vec()),
                "key {i}"
            );
        }
        let want: HashSet<[u8; 8]> = keys.iter().map(|&i| key(i)).collect();
        let mut seen = HashSet::new();
        m.for_each(|k, v| {
            let i = u64::from_be_bytes(k.try_into().unwrap());
            assert_eq!(v, (i * 3).to_le_bytes());
            assert!(seen.insert(key(i)), "visited twice");
            ControlFlow::Continue(())
        });
        assert_eq!(seen, want);
        let it: Vec<Vec<u8>> = m.iter().map(|e| e.key().to_vec()).collect();
        assert_eq!(it.len(), keys.len());
        assert_eq!(
            it.iter()
                .map(|k| k[..].try_into().unwrap())
                .collect::<HashSet<[u8; 8]>>(),
            want
        );
    }

    /// Fill, remove nearly everything: the table halves down to its initial size (and no
    /// further), keeping the survivors; then it grows again, and shrinks again.
    #[test]
    fn shrinks_to_the_minimum_and_grows_again() {
        let n = if cfg!(miri) { 300 } else { 20_000 };
        for expansion in [Expansion::Cooperative, Expansion::Dedicated] {
            let m = Mercury::with_config(Config {
                initial_buckets: 4,
                migrate_run: 3,
                expansion,
                ..Config::default()
            })
            .unwrap();
            for round in 0..2 {
                for i in 0..n {
                    m.insert(&key(i), &(i * 3).to_le_bytes()).unwrap();
                }
                m.finish_expansion();
                let full = m.stats().buckets;
                assert!(full >= n as usize / 2, "{full} buckets for {n} items");
                let kept: Vec<u64> = (0..n).filter(|i| i % 1000 == 7).collect();
                for i in 0..n {
                    if i % 1000 != 7 {
                        assert!(m.remove(&key(i)));
                    }
                }
                m.finish_expansion();
                let small = m.stats();
                assert_eq!(small.next_buckets, None, "{expansion:?} round {round}");
                // 20 items: 0.4 items per bucket at most 50 buckets; a halving
                // stops only above that (or at the minimum).
                assert!(
                    small.buckets <= 128 && small.buckets >= 4,
                    "{expansion:?} round {round}: {small:?} after shrinking from {full}"
                );
                holds_exactly(&m, &kept);
                for &i in &kept {
                    assert!(m.remove(&key(i)));
                }
                m.finish_expansion();
                assert!(m.is_empty());
                // Removing one more key than there are per stripe check: down to 4 buckets.
                for i in 0..64 {
                    m.insert(&key(i), b"v").unwrap();
                    assert!(m.remove(&key(i)));
                }
                m.finish_expansion();
                assert_eq!(m.stats().buckets, 4, "{expansion:?} round {round}");
            }
        }
    }

    /// Churn at one size does not resize: after a halving the table is at 4/5 of its growth
    /// threshold, after a doubling at half of it (over the shrink threshold, 2/5), and
    /// inserting and removing one key around there never crosses a threshold.
    #[test]
    fn churn_at_a_boundary_does_not_thrash() {
        let m = Mercury::with_config(Config {
            initial_buckets: 64,
            migrate_run: 8,
            ..Config::default()
        })
        .unwrap();
        for i in 0..4096 {
            m.insert(&key(i), &(i * 3).to_le_bytes()).unwrap();
        }
        m.finish_expansion();
        assert_eq!(m.stats().buckets, 4096);
        // Remove down to just under 2/5 of 4096 buckets' threshold: one halving.
        let mut live = 4096;
        while m.stats().next_buckets.is_none() && m.stats().buckets == 4096 {
            live -= 1;
            assert!(m.remove(&key(live)));
        }
        m.finish_expansion();
        let size = |m: &Mercury| (m.stats().buckets, m.stats().next_buckets);
        // Insert and remove one key above the `live` held, 10,000 times: the table must
        // stay at `buckets` with no resize started, and hold exactly keys 0..live.
        let churn = |m: &Mercury, live: u64, buckets: usize| {
            for _ in 0..10_000 {
                m.insert(&key(live), &(live * 3).to_le_bytes()).unwrap();
                assert!(m.remove(&key(live)));
                assert_eq!(size(m), (buckets, None));
            }
            holds_exactly(m, &(0..live).collect::<Vec<_>>());
        };
        assert_eq!(size(&m), (2048, None));
        churn(&m, live, 2048);
        // The other boundary: grow back to 4096 buckets, then churn just above the growth
        // threshold (half of the new one, over its shrink threshold of 2/5).
        while size(&m) == (2048, None) {
            m.insert(&key(live), &(live * 3).to_le_bytes()).unwrap();
            live += 1;
        }
        m.finish_expansion();
        assert_eq!(size(&m), (4096, None));
        churn(&m, live, 4096);
    }

    /// The merge itself, made deterministic: two buckets, both with an inline pair and a
    /// chain, merged into one (the second inline pair becomes a node). A reader holding a
    /// stale word of the second old bucket finds every key (it sees MOVED and retries).
    #[test]
    fn merge_of_two_full_buckets() {
        let m = Mercury::with_config(Config {
            initial_buckets: 1,
            load_percent: 1_000_000,
            ..Config::default()
        })
        .unwrap();
        let inner = &m.inner;
        {
            // Grow to two buckets first.
            let guard = pin();
            let t = inner.current(&guard);
            t.set_next(Table::new(2, 1_000_000).unwrap());
            while inner.help(t, t.next().unwrap(), &guard) != Step::Done {}
        }
        // Short pairs (inline when first in their bucket) and long ones (always nodes).
        let keys: Vec<Vec<u8>> = (0..16u8)
            .map(|i| if i % 3 == 0 { vec![i; 40] } else { vec![i, i] })
            .collect();
        for k in &keys {
            m.insert(k, k).unwrap();
        }
        let guard = pin();
        let t = inner.current(&guard);
        assert_eq!(t.len(), 2);
        assert!(t.cell(0).inline.locked_entry().is_some());
        assert!(t.cell(1).inline.locked_entry().is_some());
        let stale = t.load(1);
        let stale_keys: Vec<&Vec<u8>> = keys
            .iter()
            .filter(|k| t.index(hashed(k).hash) == 1)
            .collect();
        assert!(stale.head().node().is_some() && !stale_keys.is_empty());
        t.set_next(Table::new(1, 1_000_000).unwrap());
        assert_eq!(inner.help(t, t.next().unwrap(), &guard), Step::Done);
        assert!(t.load(0).is_moved() && t.load(1).is_moved());
        let next = inner.current(&guard);
        assert_eq!(next.len(), 1);
        for k in &keys {
            assert_eq!(m.get(k).as_ref(), Some(k));
        }
        for k in stale_keys {
            if t.cell(1).inline.find(k).is_none() {
                let found = lookup_at(t, 1, stale, hashed(k), k, <[u8]>::to_vec, &guard);
                assert_eq!(found.as_ref(), Some(k));
            }
        }
        drop(guard);
        let stats = m.chain_stats();
        assert_eq!((stats.buckets, stats.items, stats.inline_items), (1, 16, 1));
        let mut seen = 0;
        m.for_each(|k, v| {
            assert_eq!(k, v);
            seen += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(seen, 16);
        for k in &keys {
            assert!(m.remove(k));
        }
        assert!(m.is_empty());
    }

    /// An iteration that spans shrinks (and a shrink in progress) still yields every key
    /// exactly once: buckets of a smaller table hold several classes of the walk's
    /// numbering, and only the class being walked is kept.
    #[test]
    fn iteration_across_shrinks() {
        let n = if cfg!(miri) { 600 } else { 8192 };
        let m = Mercury::with_config(Config {
            initial_buckets: 1,
            migrate_run: 5,
            ..Config::default()
        })
        .unwrap();
        for i in 0..n {
            m.insert(&key(i), &(i * 3).to_le_bytes()).unwrap();
        }
        m.finish_expansion();
        let shrink = |m: &Mercury, finish: bool| {
            let guard = pin();
            let t = m.inner.current(&guard);
            t.set_next(Table::new(t.len() / 2, 100).unwrap());
            assert_eq!(m.inner.help(t, t.next().unwrap(), &guard), Step::Migrated);
            drop(guard);
            if finish {
                m.finish_expansion();
            }
        };
        let mut it = m.iter();
        let mut seen = HashSet::new();
        let mut take = |it: &mut crate::Iter<'_>, k: usize| {
            for e in it.by_ref().take(k) {
                assert!(seen.insert(e.key().to_vec()), "yielded twice");
            }
        };
        take(&mut it, 300);
        shrink(&m, true);
        take(&mut it, 700);
        shrink(&m, false);
        take(&mut it, 1000);
        m.finish_expansion();
        shrink(&m, true);
        take(&mut it, usize::MAX);
        assert_eq!(seen.len(), n as usize);
        holds_exactly(&m, &(0..n).collect::<Vec<_>>());

        // Shrunk, then growing back to the walk's size: a bucket of the smaller table moves
        // into two buckets of a table as large as the walk's numbering, of which only one is
        // in the class being walked.
        m.finish_expansion();
        let len = m.stats().buckets;
        let mut it = m.iter();
        let mut seen = HashSet::new();
        let mut take = |it: &mut crate::Iter<'_>, k: usize| {
            for e in it.by_ref().take(k) {
                assert!(seen.insert(e.key().to_vec()), "yielded twice");
            }
        };
        take(&mut it, 500);
        shrink(&m, true);
        take(&mut it, 500);
        {
            let guard = pin();
            let t = m.inner.current(&guard);
            assert_eq!(t.len() * 2, len);
            t.set_next(Table::new(len, 100).unwrap());
            assert_eq!(m.inner.help(t, t.next().unwrap(), &guard), Step::Migrated);
        }
        take(&mut it, usize::MAX);
        assert_eq!(seen.len(), n as usize);
    }
}
