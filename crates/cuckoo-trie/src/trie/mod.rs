//! The raw trie engine over the hashed representation: search (Algorithm 1 with `FINDCHILD`
//! of Algorithm 2), insert and remove (§4.5), successor and predecessor search and range
//! iteration (§4.4; the prefetching walk of `trie/scan.rs`), growth and shrink (§5
//! "Resizing").
//!
//! # Keys as symbol strings
//!
//! A key is read as its bits, most significant first, cut into `symbol_bits`-bit symbols
//! (the last zero-padded), each stored as `value + 1`, followed by the end symbol 0. The
//! map is injective (for `symbol_bits ≤ 8` the symbol count fixes the byte length) and
//! order-preserving (the end symbol sorts below every data symbol, and zero padding below
//! any real bits), so byte order of keys is symbol order, and no key's string is a prefix
//! of another's: keys that are prefixes of other keys, empty keys and `0x00` bytes need no
//! special case. The trie stores the shortest unique prefix of each key's string (§4).
//!
//! # Nodes
//!
//! The root (name ε, hash 0, colour 0: the first entry placed in any table) is a bitmap
//! node, possibly with no children. Other internal nodes are bitmap nodes (a child bitmap)
//! or jump nodes (§4.3: up to 8 symbols of a single-child chain and the colour of the
//! chain's end, found by `SEARCHBYCOLOR`), with at least two leaves below them; a leaf
//! references an immutable record (`record.rs`). A split of a leaf builds the chain over
//! the common prefix out of jump nodes; a key leaving a jump node in its middle splits it
//! into \[jump\] → bitmap → {new leaf, \[jump\] → old child}. The only child of a jump node
//! carries the *jump child* flag: its hash is not the peel of its parent's, so
//! `SEARCHBYPARENT` must never match it (else a node whose hash and parent colour happen
//! to fit would be taken for the child of an unrelated bitmap node). Removal collapses a
//! non-root node (bitmap or jump) whose only child is a leaf into that leaf (the "tail"
//! rule of §4.5), repeatedly up the path. Chains are not re-merged after removals (a
//! single-child bitmap node may remain): memory only.
//!
//! # The leaf list (§4.4, Fig 3c)
//!
//! Every leaf holds a *next-leaf locator* — the hash and colour of the leaf with the next
//! larger key (`has-next` clear on the last leaf) — so the leaves form a singly linked list
//! in key order. Invariant (checked by the unit test's full walk): at rest, following the
//! locators from the smallest leaf visits every leaf once, in key order, and no leaf is
//! dirty. Each update changes it within one commit of its lock set (`trie/update/`), in
//! the order of the paper (§4.5), which is also the order in which the intermediate states
//! would be correct tries if they were visible:
//!
//! - insert under an internal node or at a jump split: the new leaf is placed with its next
//!   locator set to its successor (the predecessor's next locator, read under the
//!   predecessor's lock), the trie link is set (bitmap bit or jump conversion), and the
//!   predecessor leaf's locator is pointed at it.
//! - insert by splitting leaf `A`: the two new leaves are placed (the higher one takes
//!   `A`'s next locator, the lower one points at the higher one), `A` is converted into an
//!   internal node, and `A`'s predecessor is pointed at the lower leaf.
//! - remove of leaf `A`: its parent's bit is cleared, `A`'s predecessor is pointed at
//!   `A`'s successor, `A` is cleared.
//! - tail collapse (node `X` whose only child is leaf `C`, and ancestors left with only
//!   `X`): the topmost such node becomes a leaf with `C`'s record and the right next
//!   locator, the list predecessor is pointed at it, and the nodes below it are cleared.
//! - growth: each copy unit (a subtree of the root) links its leaves as it places them in
//!   key order; the participant that finishes the growth links the units' lists together
//!   before the new table is published (`trie/grow/`).
//!
//! # Subtree-max locators (§4.4, Fig 3c, Fig 5)
//!
//! Every internal node (the root included) holds the locator of the largest leaf below
//! it. Invariant (checked by the unit test's full walk): at rest, every internal node's
//! locator names the leaf at the end of its rightmost edge, unless the node is marked
//! stale (its dirty flag: only copies made by growth, until the copy sets them). Updates keep the
//! locators in their commits (`trie/update/` has what changes and what is locked).
//! A predecessor search climbs the searched path to the first ancestor with a child on the
//! left and reads that child's locator (`max_leaf`: the child's entry, the leaf's bucket
//! pair, then the child's bucket validated), instead of one validated bucket pair per level
//! of the child's rightmost edge; a stale node is passed by one rightmost step. `last` is
//! the root's locator. Descending scans go on from a leaf by the same climb (the list is
//! singly linked, as the paper's); when the leaf was reached through a locator, the path
//! from the locator's node down to it is first filled by a prefetched walk of the leaf's
//! key (`complete_path`, Algorithm 1), whose bucket reads overlap.
//!
//! # Point lookups and lookup groups
//!
//! A point lookup (`find_leaf`) is Algorithm 1 with nothing allocated: a `Cursor` reads the
//! key's symbols from a bit buffer, hashes each prefix once, prefetches both buckets of
//! the prefixes `D` ahead of the walk and keeps the last 32 hashes and symbols for the walk.
//! The leaf's record is read right after the leaf (its address is unknown before): that
//! round trip is paid, as in the authors' code (`docs/cuckoo-trie.md`). `get_many` runs up
//! to 16 walks in rounds (`lookup_group`, beyond the paper): each step reads only what its
//! walk prefetched a round before — the *primary* bucket of the next prefix, the secondary
//! bucket a round later only if the node is not in the primary, the record once the leaf
//! is read — because with the other walks covering the wait, prefetches past the leaf or
//! of a secondary bucket that does not hold the node only take miss buffers from useful
//! reads (measured: `docs/results/cuckoo-trie.md`, "Read path"). Both validate every step
//! as `FINDCHILD` does.
//!
//! # Concurrency protocol (§5)
//!
//! - Writers lock only the buckets they change (§5 "Updates"; `trie/update/` has the
//!   table of what each update locks and why it suffices, `lockset.rs` the locking
//!   rules): read-only validated searches find every node the update writes, the buckets
//!   are locked by compare-and-swap on their version/lock words at the versions those
//!   searches saw (so a lock also verifies its node unchanged), the edits are made in
//!   private copies and stored at one commit. A writer never waits for a lock while it
//!   holds one (a failed CAS abandons the attempt, which starts again), so writers cannot
//!   deadlock, and writers to different parts of the trie run in parallel.
//! - Readers take no lock. They pin an epoch guard, load the current table, and walk it:
//!   every entry is read from a validated bucket snapshot, and after finding a child the
//!   parent's bucket version is checked unchanged (`FINDCHILD`); a change restarts the
//!   operation. A child the parent's bitmap announces but neither bucket shows is an entry
//!   in the middle of a relocation: restart. Finally the table pointer is checked
//!   unchanged (a reader of a replaced table restarts, so it never returns data older than
//!   a write that completed in the new table).
//! - Writers publish in an order that keeps every validated state a correct trie: an
//!   insert places the new leaf (and, on a split, the new chain and both leaves) before
//!   setting the parent's bitmap bit or converting the split leaf; a removal clears the
//!   parent's bit before clearing the leaf; a collapse turns the parent into the leaf
//!   before clearing the child.
//! - Records are immutable; a replaced or removed record is retired through the epoch
//!   collector, so a reader may read any record it reached under its guard.
//! - Growth (`trie/grow/`) freezes every bucket of the current table (a bit of the
//!   version word that makes every writer's lock fail; readers ignore it), copies it into
//!   a table of twice the buckets while readers keep using it, then publishes the new
//!   table and retires the old one through the epoch collector. The freezing and the copy
//!   are split into units (bucket chunks; subtrees of the root) claimed with one counter
//!   by every writer that meets the frozen table: writers help instead of waiting.
//!   A removal that leaves the trie's entries under a quarter of the slots shrinks the
//!   table by the same migration into a smaller one (`trie/grow/`, "Shrinking"); the
//!   entries are counted at each update's commit (`Counts`).
//!
//! - Scans (beyond §4.4; `trie/scan.rs`): one validated successor (predecessor) search
//!   finds the first leaf; then a depth-first walk of the trie in key order reads nodes
//!   whose names it learnt from their parents' bitmaps, many of them prefetched at once,
//!   each validated as `FINDCHILD` validates a child (its parent's bucket unchanged after
//!   the read); a failed validation, or a key not beyond the last one yielded,
//!   resynchronises by a new search past the last key yielded. So keys come strictly
//!   ordered, every key yielded was present when its leaf was read, and a key present
//!   throughout is not skipped. The paper's leaf-list walk (`Raw::scan_batch_list`: each
//!   step reads the leaf its locator names, then checks the current leaf's bucket
//!   unchanged and that the next leaf is a clean leaf above the last key) is kept as the
//!   reference the walk is measured against; the list itself is still kept by every
//!   writer (the unit test's full walk checks it).
//!
//! Linearization points: a lookup at the validated read of its leaf (or of the node whose
//! bitmap lacks the next symbol); an insert at the bitmap or leaf-conversion store; a
//! removal at the parent's bitmap store.
//!
//! # Not built yet
//!
//! Re-merging jump chains after removals.

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicUsize, Ordering};

use orrery_core::api::Error;
use orrery_core::sync::{CachePadded, Guard};

use crate::bucket::{Entry, Kind, Locator};
use crate::config::Config;
use crate::record::Records;
use crate::table::{Found, Full, Table};

mod grow;
mod invariants;
#[cfg(feature = "bench-internals")]
mod leaf_list;
mod locate;
mod lookup;
mod scan;
#[cfg(test)]
mod tests;
mod update;
pub use grow::GrowthStats;
pub(crate) use lookup::GROUP;
pub(crate) use update::Mode;

/// The most buckets a table may have (locator hashes are 40 bits).
const MAX_BUCKETS: usize = 1 << 36;

/// A key as a symbol string (module docs).
#[derive(Clone, Copy)]
pub(crate) struct Symbols<'k> {
    key: &'k [u8],
    bits: u32,
    data: usize,
}

impl<'k> Symbols<'k> {
    /// The symbol string of `key` with `bits`-bit symbols.
    #[inline]
    pub(crate) fn new(key: &'k [u8], bits: u32) -> Symbols<'k> {
        Symbols {
            key,
            bits,
            data: (key.len() * 8).div_ceil(bits as usize),
        }
    }

    /// Number of symbols (data symbols and the end symbol).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.data + 1
    }

    /// Symbol `i` (`i < len()`).
    #[inline]
    pub(crate) fn at(&self, i: usize) -> u8 {
        if i >= self.data {
            return 0;
        }
        let bit = i * self.bits as usize;
        let byte = bit / 8;
        let hi = u16::from(self.key[byte]) << 8;
        let lo = self.key.get(byte + 1).map_or(0, |&b| u16::from(b));
        let w = hi | lo;
        let shift = 16 - (bit % 8) as u32 - self.bits;
        (((w >> shift) & ((1 << self.bits) - 1)) + 1) as u8
    }
}

/// Why a read-only walk must start again (a concurrent writer changed what it read).
#[derive(Debug)]
pub(crate) struct Restart;

/// One node on a searched path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    /// The node as found.
    pub(crate) found: Found,
    /// Its hash.
    pub(crate) hash: u64,
    /// The length of its name in symbols.
    pub(crate) depth: usize,
}

impl Step {
    /// The node's locator (§4.4).
    #[inline]
    pub(crate) fn locator(&self) -> Locator {
        Locator {
            hash: self.hash,
            color: self.found.entry.color(),
        }
    }
}

/// How a [`Raw::scan_batch`] ended.
pub(crate) enum ScanEnd<'g> {
    /// No key is left.
    Done,
    /// The visitor stopped.
    Stopped,
    /// `max` pairs were visited; the last key visited.
    More(&'g [u8]),
}

/// A key and its value, borrowed from a record under an epoch guard.
pub(crate) type Pair<'g> = (&'g [u8], &'g [u8]);

pub(crate) use orrery_core::api::Decision;

/// The decision function of [`Raw::upsert`].
pub(crate) type Make<'a> = dyn FnMut(Option<&[u8]>) -> Decision + 'a;

/// How a descent ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// At a leaf (the last step).
    Leaf,
    /// At an internal node (the last step) without a child for this symbol.
    Missing(u8),
    /// At a jump node (the last step) whose symbol at this offset differs from the key's.
    JumpMismatch(usize),
}

/// The counts every update changes (`Raw::counts`).
struct Counts {
    /// Keys.
    len: AtomicUsize,
    /// Entries of the trie (nodes, the root included), changed at each update's commit by
    /// what it placed and cleared (`LockSet::commit`); a migration copies them all, so it
    /// does not change it. The shrink trigger reads it (`trie/grow/`). Signed: a removal
    /// may count its commit before the insert of the nodes it clears counts its own, so
    /// the sum can dip below the truth (never below it by more than the updates in flight).
    entries: AtomicIsize,
}

/// The raw engine: the current table, the records, the growth lock.
pub(crate) struct Raw {
    table: AtomicPtr<Table>,
    records: Arc<Records>,
    /// The running migration and growth counters (`trie/grow/`).
    growth: grow::Growth,
    /// A growth is freezing or copying the current table.
    resizing: AtomicBool,
    /// Keys and entries, changed by every update: one cache line of their own.
    counts: CachePadded<Counts>,
    pub(crate) config: Config,
}

// SAFETY: the table behind the pointer is shared through atomic words only (validated
// reads, bucket locks); records are immutable once published and freed through the epoch
// collector.
unsafe impl Send for Raw {}
// SAFETY: as above.
unsafe impl Sync for Raw {}

impl Raw {
    /// An empty trie (validated config).
    pub(crate) fn new(config: Config) -> Result<Raw, Error> {
        let t = Table::new(config.initial_buckets)?;
        let placed = t
            .place(0, root_entry())
            .map_err(|Full| Error::OutOfMemory)?;
        debug_assert_eq!(placed.1.color(), 0);
        Ok(Raw {
            table: AtomicPtr::new(Box::into_raw(Box::new(t))),
            records: Records::new(),
            growth: grow::Growth::default(),
            resizing: AtomicBool::new(false),
            counts: CachePadded::new(Counts {
                len: AtomicUsize::new(0),
                entries: AtomicIsize::new(1),
            }),
            config,
        })
    }

    /// The current table.
    #[inline]
    fn table<'g>(&self, _guard: &'g Guard) -> &'g Table {
        // SAFETY: the pointer always refers to a live table; a replaced table is retired
        // through the epoch collector, so it outlives every guard pinned before that.
        unsafe { &*self.table.load(Ordering::Acquire) }
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.counts.len.load(Ordering::Relaxed)
    }

    /// Entries of the trie (nodes, the root included).
    pub(crate) fn entries(&self) -> usize {
        self.counts.entries.load(Ordering::Relaxed).max(0) as usize
    }

    /// Adds an update's `delta` (entries placed minus cleared) to the entry count; returns
    /// the new count.
    fn add_entries(&self, delta: isize) -> usize {
        (self.counts.entries.fetch_add(delta, Ordering::Relaxed) + delta).max(0) as usize
    }

    /// Slots (entry places) of the current table.
    pub(crate) fn slots(&self) -> usize {
        let g = orrery_core::sync::pin();
        self.table(&g).bytes() / size_of::<crate::bucket::Bucket>() * crate::bucket::SLOTS
    }

    /// `(table bytes, record bytes)`.
    pub(crate) fn bytes(&self) -> (usize, usize) {
        let g = orrery_core::sync::pin();
        (self.table(&g).bytes(), self.records.bytes())
    }

    /// The root node.
    fn root(t: &Table) -> Result<Step, Restart> {
        let found = t.find(Locator { hash: 0, color: 0 }).ok_or(Restart)?;
        Ok(Step {
            found,
            hash: 0,
            depth: 0,
        })
    }

    /// The child of `node` by symbol `c` (which its bitmap has), validated: `FINDCHILD`.
    fn child(t: &Table, node: &Step, c: u8) -> Result<Step, Restart> {
        Self::child_at(t, node, c, t.hash().child(node.hash, c))
    }

    /// [`Raw::child`] given the child's hash `h` (computed by a prefetch cursor).
    #[inline]
    fn child_at(t: &Table, node: &Step, c: u8, h: u64) -> Result<Step, Restart> {
        let found = t.search_by_parent(h, c, node.found.entry.color());
        if !t
            .bucket(node.found.slot.bucket)
            .unchanged(node.found.version)
        {
            return Err(Restart);
        }
        // Absent while the parent still announces it: a relocation in flight.
        let found = found.ok_or(Restart)?;
        Ok(Step {
            found,
            hash: h,
            depth: node.depth + 1,
        })
    }

    /// The hash of the child of jump node `node` (its name extended by all its symbols).
    fn jump_child_hash(t: &Table, node: &Step) -> u64 {
        let e = node.found.entry;
        (0..e.jump_len()).fold(node.hash, |h, k| t.hash().child(h, e.jump_symbol(k)))
    }

    /// The only child of jump node `node`, found by its colour (§4.3 `SEARCHBYCOLOR`),
    /// validated like [`Raw::child`].
    fn jump_child(t: &Table, node: &Step) -> Result<Step, Restart> {
        Self::jump_child_at(t, node, Self::jump_child_hash(t, node))
    }

    /// [`Raw::jump_child`] given the child's hash `h` (computed by a prefetch cursor).
    #[inline]
    fn jump_child_at(t: &Table, node: &Step, h: u64) -> Result<Step, Restart> {
        let e = node.found.entry;
        let len = e.jump_len();
        let found = t.search_by_color(h, e.jump_symbol(len - 1), e.child_color());
        if !t
            .bucket(node.found.slot.bucket)
            .unchanged(node.found.version)
        {
            return Err(Restart);
        }
        let found = found.ok_or(Restart)?;
        Ok(Step {
            found,
            hash: h,
            depth: node.depth + len,
        })
    }

    /// Walks `key`'s symbols from the root (Algorithm 1, prefetching the buckets of the
    /// next `D` prefixes, also across jump nodes, §4.7); pushes every node onto `path`
    /// (cleared first).
    fn descend(&self, t: &Table, key: &Symbols<'_>, path: &mut Vec<Step>) -> Result<End, Restart> {
        path.clear();
        let root = Self::root(t)?;
        self.walk_from(t, key, path, root)
    }

    /// [`Raw::descend`] from `node` (validated, on `key`'s way, not yet on `path`): pushes
    /// `node` and every node below it on `key`'s way onto `path`.
    fn walk_from(
        &self,
        t: &Table,
        key: &Symbols<'_>,
        path: &mut Vec<Step>,
        mut node: Step,
    ) -> Result<End, Restart> {
        // The prefetch cursor runs `D` prefixes ahead of the walk.
        let mut ahead = node.hash;
        let mut ahead_i = node.depth;
        let mut advance = |upto: usize| {
            while ahead_i < upto.min(key.len()) {
                ahead = t.hash().child(ahead, key.at(ahead_i));
                ahead_i += 1;
                t.prefetch(ahead);
            }
        };
        let d = self.config.prefetch_depth;
        advance(node.depth + d);
        loop {
            path.push(node);
            let e = node.found.entry;
            let i = node.depth;
            match e.kind() {
                Kind::Leaf => return Ok(End::Leaf),
                Kind::Bitmap if i < key.len() => {
                    advance(i + 1 + d);
                    let c = key.at(i);
                    if e.bitmap() & (1 << c) == 0 {
                        return Ok(End::Missing(c));
                    }
                    node = Self::child(t, &node, c)?;
                }
                Kind::Jump if e.jump_len() > 0 => {
                    let len = e.jump_len();
                    advance(i + len + d);
                    // Jump symbols are never the end symbol, so a key ending inside the
                    // jump mismatches there.
                    let n = len.min(key.len().saturating_sub(i));
                    if let Some(k) = (0..n).find(|&k| key.at(i + k) != e.jump_symbol(k)) {
                        return Ok(End::JumpMismatch(k));
                    }
                    if n < len {
                        return Err(Restart);
                    }
                    node = Self::jump_child(t, &node)?;
                }
                // A torn walk (an entry reused under us); cannot happen on a validated
                // path, but never trust it.
                _ => return Err(Restart),
            }
        }
    }

    /// Whether `t` is still the current table.
    #[inline]
    fn still_current(&self, t: &Table) -> bool {
        std::ptr::eq(self.table.load(Ordering::Acquire), t)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let t = *self.table.get_mut();
        // SAFETY: `&mut self`: no reader or writer remains; the table is the current one,
        // owned by `self`.
        let t = unsafe { Box::from_raw(t) };
        t.for_each(|_, e| {
            if e.kind() == Kind::Leaf {
                // SAFETY: every live record is referenced by exactly one leaf of the current
                // table, and no thread can read it any more.
                unsafe { self.records.free(rec_ptr(e.record())) };
            }
        });
    }
}

/// The root's entry as placed in an empty table: a bitmap node of last symbol 0 and parent
/// colour 0, flagged *jump child* so that `SEARCHBYPARENT` never matches it. Without the
/// flag, the end-symbol child of a node whose hash peels from 0 (`h(x·0) = 0`) and whose
/// colour is 0 would be ambiguous with the root (same hash 0, last symbol 0, parent colour
/// 0): the search could return the root as that child (seen in growth tests as the root
/// reached twice). The root itself is only ever found by its locator (colour 0).
pub(crate) fn root_entry() -> Entry {
    Entry::new(Kind::Bitmap, 0, 0).with_jump_child(true)
}

/// A record address from a leaf.
#[inline]
fn rec_ptr(addr: usize) -> NonNull<u8> {
    NonNull::new(addr as *mut u8).unwrap_or(NonNull::dangling())
}
