//! The MetaTrieHT (§2.3–2.4, §3.1, Fig 5–6): every prefix of every anchor as an item of a
//! hash table of 64-byte slots, searched by binary search on prefix length.
//!
//! # Items (byte level)
//!
//! One 64-byte line per item, in the table's item array (`items`: each table has its own,
//! and places an item at a position computed from its hash, or the next free one; slot
//! entries hold the item's address, so the position is only a prefetch hint):
//!
//! ```text
//! 0   u32      hash     CRC32C of the prefix
//! 4   u32      len      prefix length in bytes
//! 8   *Leaf    leftmost leaf below the item
//! 16  *Leaf    rightmost leaf below the item
//! 24  [u64;4]  bitmap   byte children present (bit b of word b/64)
//! 56  u8       anchor   1 if the prefix is itself an anchor (the "⊥" child, see `anchor`)
//! 57  [u8;7]   the first min(len, 7) prefix bytes, zero padded
//! ```
//!
//! An item with byte children is an internal item; with both byte children and `⊥` it
//! stands for the paper's pair `a` / `a⊥` (see `anchor`).
//!
//! # Prefix bytes past the seventh are not stored (deviation, measured)
//!
//! The prefix of an item is a prefix of the anchor of its leftmost leaf (the smallest
//! anchor extending the prefix), so a full comparison reads that anchor
//! (`ItemPtr::key_is`). A search matches its probes by 16-bit tag (§3.1) and checks the
//! item it ends on against its length and inline bytes, which is exact for prefixes of
//! at most 7 bytes; a longer one is verified once against the anchor of the target leaf
//! the search reaches through it (`search::Check`): every leaf below an item has an
//! anchor that extends the item's prefix, and a leaf reached through a wrong item has
//! not. Lookups and point writes make that comparison under the leaf's lock, where the
//! leaf's header is read anyway. Why: on `url` (10M keys, 313K items averaging about 40
//! prefix bytes) stored prefixes made items 128 bytes on average, 40 MB per table;
//! one line each halves that, which gave the `url` memory bar its margin, and an item is
//! now always one line to read (on `az` most matched prefixes are 12–14 bytes and
//! spilled into a second line). Measured figures: the crate docs and
//! `docs/results/wormhole.md`.
//!
//! # Leaf entries (deviation, measured)
//!
//! The paper's *leaf item* (a prefix whose only child is `⊥`: an anchor that is no proper
//! prefix of another anchor) has no item here. Its slot entry references the anchor's leaf
//! directly, with bit 47 of the address field set (a *leaf entry*; user-space addresses
//! are below 2^47 and leaves are 64-byte aligned like items). Everything a leaf item held
//! follows from the leaf: its prefix is the leaf's anchor (kept in the leaf's header line,
//! see `leaf`), and its leftmost and rightmost leaf are the leaf itself. The search's final
//! full comparison is then made against the anchor in the header line the lookup reads
//! next anyway (to take the leaf's lock), and a search that ends on a leaf entry has found
//! its target leaf without reading an item (`search`).
//!
//! Why: most anchors are childless (at 10M random 8-byte keys 66.6K of the 131K entries;
//! 93K of 180K on `az`), so leaf items were most of the items and the last item every
//! lookup read; at 64M keys the items alone outgrew the 32 MiB L3 and each lookup paid a
//! DRAM miss for its final item. The writer keeps the invariant "a prefix other than the
//! root is a leaf entry iff it is an anchor without byte children": `insert_anchor` turns
//! a leaf entry that gains a byte child into an item (in place, same slot position), and
//! `remove_anchor` turns an anchor item that loses its last byte child back into a leaf
//! entry. The root (empty prefix) is always an item. A leaf entry's hash is not stored; a
//! table growth recomputes it from the anchor.
//!
//! # Table (Fig 6)
//!
//! `2^k` slots of 64 bytes, each eight `u64` entries `tag16 << 48 | addr48` (0 = empty;
//! `addr48` is an item address, or a leaf address with bit 47 set). An entry lives in the
//! slot `hash & mask` or, when that slot is full, in the following slots (linear probing
//! by slot). The low 6 bits of an entry's address field are zero because items and leaves
//! are 64-byte aligned; slot entry 7 keeps in them the slot's *overflow count*: how many
//! entries whose home slot is at or before this one were placed after it.
//! A probe stops at the first slot with a zero count, so negative probes cost one line.
//! The table is kept at most half full (§3.1's "8 prefixes per cache line").
//! After a merge removes an anchor, the slots (and the item array) halve while under
//! 3/16 full, so a table emptied by removals gives its memory back.
//! Each table also keeps the *search plan* of Algorithm 1 (`plan::Plan`: where to split
//! each range of prefix lengths), rebuilt from the anchor-length histogram by the writer
//! in `insert_anchor`/`remove_anchor` when it went stale, and copied by `duplicate`. The slot array
//! is an `orrery_core::alloc::ZeroedArray`: huge-page memory from 2 MiB on (each lookup reads
//! two or more random slots; see the crate docs on memory placement), a plain heap block
//! below.
//!
//! # Concurrency
//!
//! A `MetaTable` is never written while readers can see it: `smo` keeps two tables, writes
//! only the one that is not published and whose readers have drained (RCU, §2.5), so every
//! method here is plain sequential code (`&self` for readers, `&mut self` for the writer).
//! A reader reads leaf anchors (the comparisons of leaf entries and long items) under its
//! epoch guard: leaves are freed through the epoch scheme after leaving the published
//! table, and anchors never change. The writer replays a merge on the shadow table
//! possibly after the merged-away leaf was freed: `remove_anchor` therefore finds that
//! leaf's entry by address, before any probe could compare against its anchor (it is the
//! only entry naming it), and compares items whose leftmost leaf is still the victim
//! against the victim's anchor bytes it was given (a [`Victim`]), never through the leaf.
//! No other leaf the shadow names can be freed: it lacks only the change being replayed.
//!
//! # Files
//!
//! `item` (items and the slot references `Ref`), `stats` (`MetaStats`), this file (slots and
//! the table: probes, inserts, removes, growth), `tests`.

mod item;
#[cfg(feature = "bench-internals")]
mod stats;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ptr::NonNull;

use orrery_core::Error;
use orrery_core::alloc::{Zeroable, ZeroedArray};

use crate::items::{ItemArray, MIN_CAP};
use crate::leaf::LeafPtr;
use crate::plan::Plan;
use orrery_core::hash::{crc32c, crc32c_extend, tag16};

#[allow(unused_imports)]
pub(crate) use self::item::*;
#[cfg(feature = "bench-internals")]
pub use self::stats::MetaStats;

/// One 64-byte slot of eight entries.
#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
pub(super) struct Slot([u64; 8]);

const _: () = assert!(size_of::<Slot>() == 64);

// SAFETY: a slot is eight `u64`s; all-zero bytes are eight empty entries.
unsafe impl Zeroable for Slot {}

/// The slot array: a plain heap block while small, huge-page memory from 2 MiB on (a
/// lookup reads several random slots; with 4 KiB pages each can cost a TLB miss).
pub(super) type Slots = ZeroedArray<Slot>;

/// `n` empty slots, or [`Error::OutOfMemory`].
pub(super) fn new_slots(n: usize) -> Result<Slots, Error> {
    Slots::new(n)
}

/// A MetaTrieHT.
pub(crate) struct MetaTable {
    pub(super) slots: Slots,
    pub(super) mask: usize,
    pub(super) items: usize,
    pub(super) root: ItemPtr,
    /// Incremented by one per published structural change (§2.5).
    pub(crate) version: u64,
    /// Longest anchor length (`L_anc` of Algorithm 1).
    pub(super) max_len: usize,
    /// The items, placed by hash (see `items`).
    pub(super) arr: ItemArray<Item>,
    /// Anchor length → number of anchors, to keep `max_len` exact on removals.
    pub(super) lens: BTreeMap<usize, usize>,
    /// Number of anchors.
    pub(super) anchors: usize,
    /// Where Algorithm 1 splits its ranges (`plan::Plan`), rebuilt from `lens`.
    pub(super) plan: Plan,
}

// SAFETY: a table is shared only as described in the module docs (never written while
// readable); its raw pointers are owned items and leaves kept alive by the index.
unsafe impl Send for MetaTable {}
// SAFETY: as above.
unsafe impl Sync for MetaTable {}

impl MetaTable {
    /// A table holding only the root item (empty prefix, anchor of `first`).
    ///
    /// Fails with [`Error::OutOfMemory`] when its arrays cannot be allocated.
    pub(crate) fn new(first: LeafPtr) -> Result<MetaTable, Error> {
        let mut arr = ItemArray::new(MIN_CAP).ok_or(Error::OutOfMemory)?;
        let h = crc32c(&[]);
        let mut r = Item::new(&[], h);
        r.anchor = 1;
        r.leftmost = first.as_raw();
        r.rightmost = first.as_raw();
        let root = ItemPtr(arr.insert(r, h));
        let mut t = MetaTable {
            slots: new_slots(8)?,
            mask: 7,
            items: 0,
            root,
            version: 0,
            max_len: 0,
            arr,
            lens: BTreeMap::from([(0, 1)]),
            anchors: 1,
            plan: Plan::build(&BTreeMap::from([(0, 1)]), 0),
        };
        t.put(Ref::Item(root), root.get().hash);
        Ok(t)
    }

    /// The root item (empty prefix).
    #[inline]
    pub(crate) fn root(&self) -> ItemPtr {
        self.root
    }

    /// Longest anchor length.
    #[inline]
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    /// The search plan (where Algorithm 1 splits its ranges).
    #[inline]
    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Rebuilds the search plan when the anchors changed enough (`Plan::stale`).
    fn replan(&mut self) {
        if self.plan.stale(self.anchors, self.max_len) {
            self.plan = Plan::build(&self.lens, self.max_len);
        }
    }

    /// Anchor length → number of anchors (diagnostics).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn anchor_lens(&self) -> Vec<(usize, usize)> {
        self.lens.iter().map(|(&l, &n)| (l, n)).collect()
    }

    /// Bytes held by the table (slots and items).
    pub(crate) fn bytes(&self) -> usize {
        self.slots.reserved_bytes() + self.arr.bytes() + self.plan.bytes()
    }

    /// Prefetches the home position of the item whose prefix has CRC32C `hash` (where it
    /// most likely is, if it exists; see `items`).
    #[inline]
    pub(crate) fn prefetch_item(&self, hash: u32) {
        orrery_core::prefetch(self.arr.home(hash));
    }

    /// Makes room for `n` more items and `n` more slot entries, doubling the item array
    /// and the slot array until neither would be more than 3/4 full: the structural change
    /// that follows ([`MetaTable::insert_anchor`] of an anchor of `n - 1` bytes adds at
    /// most that many) then allocates nothing, so it cannot fail halfway. Fails with
    /// [`Error::OutOfMemory`]; the table is unchanged in content either way (growth only
    /// re-places entries).
    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), Error> {
        let mut slots = self.slots.len();
        while (self.items + n) * 4 > slots * 8 * 3 {
            slots *= 2;
        }
        if slots != self.slots.len() {
            self.grow_to(slots)?;
        }
        let mut cap = self.arr.cap();
        while (self.arr.len() + n) * 4 > cap * 3 {
            cap *= 2;
        }
        if cap != self.arr.cap() {
            self.resize_items(cap)?;
        }
        Ok(())
    }

    /// Stores a new item (prefix CRC32C `hash`) in room made by [`MetaTable::reserve`].
    fn alloc_item(&mut self, it: Item, hash: u32) -> ItemPtr {
        debug_assert!((self.arr.len() + 1) * 4 <= self.arr.cap() * 3, "reserved");
        ItemPtr(self.arr.insert(it, hash))
    }

    /// Frees an item removed from the slots. The array is halved (see
    /// [`MetaTable::shrink_items`]) only between structural changes, never here, so the
    /// caller's other item pointers stay valid.
    fn free_item(&mut self, it: ItemPtr) {
        self.arr.remove(it.0);
    }

    /// Halves the item array while fewer than 3/16 of it is used (not below `MIN_CAP`).
    /// Best effort: when the smaller array cannot be allocated the table keeps the larger
    /// one, which is as correct.
    fn shrink_items(&mut self) {
        let mut cap = self.arr.cap();
        while cap > MIN_CAP && self.arr.len() * 16 < cap * 3 {
            cap /= 2;
        }
        if cap != self.arr.cap() {
            let _ = self.resize_items(cap);
        }
    }

    /// Halves the slots while fewer than 3/16 of their entries are used (not below 8
    /// slots), so that a table emptied by removals gives its memory back; growth happens
    /// past 3/4, so a table whose use goes up and down by less than 4x never resizes.
    /// Best effort, like [`MetaTable::shrink_items`].
    fn shrink_slots(&mut self) {
        let mut n = self.slots.len();
        while n > 8 && self.items * 16 < n * 8 * 3 {
            n /= 2;
        }
        if n != self.slots.len() {
            let _ = self.grow_to(n);
        }
    }

    /// Moves every item to a fresh array of `cap` positions and rewrites the slot entries
    /// naming them (writer only: an unpublished table). On [`Error::OutOfMemory`] nothing
    /// changes.
    fn resize_items(&mut self, cap: usize) -> Result<(), Error> {
        let mut arr = ItemArray::new(cap).ok_or(Error::OutOfMemory)?;
        for slot in self.slots.iter_mut() {
            for e in slot.0.iter_mut() {
                if *e & ITEM_ADDR_MASK == 0 || *e & LEAF_BIT != 0 {
                    continue;
                }
                let old = ItemPtr::from_entry(*e);
                let it = *old.get();
                let new = ItemPtr(arr.insert(it, it.hash));
                if old == self.root {
                    self.root = new;
                }
                *e = (*e & !ITEM_ADDR_MASK) | new.addr();
            }
        }
        debug_assert_eq!(arr.len(), self.arr.len());
        self.arr = arr;
        Ok(())
    }

    #[inline]
    fn slot_of(&self, hash: u32) -> usize {
        hash as usize & self.mask
    }

    /// Prefetches the home slot of `hash`.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u32) {
        orrery_core::prefetch::<Slot>(&self.slots[self.slot_of(hash)]);
    }

    /// Optimistic probe (§3.1): the first item whose 16-bit tag matches, without comparing
    /// keys. May return a false positive, never a false negative.
    #[inline]
    pub(crate) fn probe_tag(&self, hash: u32) -> Option<Ref> {
        let tag = (tag16(hash) as u64) << 48;
        let mut s = self.slot_of(hash);
        loop {
            let slot = &self.slots[s].0;
            for &e in slot {
                if e & !ADDR_MASK == tag && e & ITEM_ADDR_MASK != 0 {
                    return Some(Ref::from_entry(e));
                }
            }
            if slot[7] & OVF_MASK == 0 {
                return None;
            }
            s = (s + 1) & self.mask;
        }
    }

    /// The first item with the tag of `hash` that satisfies `pred`.
    #[inline]
    fn find(&self, hash: u32, pred: impl Fn(Ref) -> bool) -> Option<Ref> {
        let tag = (tag16(hash) as u64) << 48;
        let mut s = self.slot_of(hash);
        loop {
            let slot = &self.slots[s].0;
            for &e in slot {
                if e & !ADDR_MASK == tag && e & ITEM_ADDR_MASK != 0 {
                    let it = Ref::from_entry(e);
                    if pred(it) {
                        return Some(it);
                    }
                }
            }
            if slot[7] & OVF_MASK == 0 {
                return None;
            }
            s = (s + 1) & self.mask;
        }
    }

    /// Exact probe: the entry whose prefix is `key` (with CRC32C `hash`). The caller keeps
    /// the table's leaves alive (epoch guard, or the writer mutex).
    #[inline]
    pub(crate) fn get(&self, key: &[u8], hash: u32) -> Option<Ref> {
        // SAFETY: the table's leaves are live for the caller (see above).
        self.find(hash, |r| unsafe { r.key_is(key, None) })
    }

    /// Exact probe for an item (not a leaf entry) whose prefix is `key`, comparing items
    /// whose leftmost leaf is `victim`'s with its anchor.
    fn get_item(&self, key: &[u8], hash: u32, victim: Option<Victim<'_>>) -> Option<ItemPtr> {
        // SAFETY: the writer's table names live leaves, except the victim's.
        match self.find(hash, |r| unsafe { r.key_is(key, victim) })? {
            Ref::Item(it) => Some(it),
            Ref::Leaf(_) => None,
        }
    }

    /// Exact probe for the child `key[..plen]·b` (with CRC32C `hash`) of the item
    /// `key[..plen]`, already verified. The caller keeps the table's leaves alive.
    #[inline]
    pub(crate) fn get_child(&self, key: &[u8], plen: usize, b: u8, hash: u32) -> Option<Ref> {
        self.find(hash, |r| match r {
            // SAFETY: the table's leaves are live for the caller.
            Ref::Item(it) => unsafe { it.get().is_child(key, plen, b) },
            // SAFETY: as above; anchors are immutable.
            Ref::Leaf(l) => unsafe { l.hdr() }.anchor_is_ext(&key[..plen], Some(b)),
        })
    }

    /// [`MetaTable::get_child`] for a search that defers its comparisons (`search::finish`):
    /// a candidate item is matched by length and inline bytes (exact up to [`INLINE`]
    /// bytes, unverified past that), a candidate leaf entry by tag only; the caller
    /// verifies an unverified child against its target leaf's anchor. May return an entry
    /// of another prefix with the same tag, never misses the child.
    #[inline]
    pub(crate) fn get_child_deferred(
        &self,
        key: &[u8],
        plen: usize,
        b: u8,
        hash: u32,
    ) -> Option<Ref> {
        self.find(hash, |r| match r {
            Ref::Leaf(_) => true,
            Ref::Item(it) => {
                let it = it.get();
                it.len as usize == plen + 1 && it.inline_is(key, Some(b))
            }
        })
    }

    /// Adds an entry for `r` (prefix CRC32C `hash`).
    /// Adds the entry of `r` in room made by [`MetaTable::reserve`] (a fresh table has
    /// room for its root).
    fn put(&mut self, r: Ref, hash: u32) {
        debug_assert!((self.items + 1) * 4 <= self.slots.len() * 8 * 3, "reserved");
        self.place(r.bits(), hash);
        self.items += 1;
    }

    /// The CRC32C of an entry's prefix (stored in items, recomputed for leaf entries).
    fn entry_hash(r: Ref) -> u32 {
        match r {
            Ref::Item(it) => it.get().hash,
            // SAFETY: the writer's table names live leaves (growth never runs during a
            // replayed removal).
            Ref::Leaf(l) => crc32c(unsafe { l.hdr() }.anchor()),
        }
    }

    fn place(&mut self, bits: u64, hash: u32) {
        let e = ((tag16(hash) as u64) << 48) | bits;
        debug_assert!(bits & !ITEM_ADDR_MASK == 0);
        let mut s = self.slot_of(hash);
        loop {
            let slot = &mut self.slots[s].0;
            if let Some(x) = slot.iter_mut().find(|x| **x & ITEM_ADDR_MASK == 0) {
                *x |= e;
                return;
            }
            if slot[7] & OVF_MASK != OVF_MASK {
                slot[7] += 1;
            }
            s = (s + 1) & self.mask;
        }
    }

    /// Re-places every entry into a fresh array of `n` slots; on [`Error::OutOfMemory`]
    /// nothing changes.
    fn grow_to(&mut self, n: usize) -> Result<(), Error> {
        let old = std::mem::replace(&mut self.slots, new_slots(n)?);
        self.mask = n - 1;
        for slot in old.iter() {
            for &e in &slot.0 {
                if e & ITEM_ADDR_MASK != 0 {
                    let r = Ref::from_entry(e);
                    self.place(r.bits(), Self::entry_hash(r));
                }
            }
        }
        Ok(())
    }

    /// The slot and index of the entry of `r` (whose prefix has CRC32C `hash`).
    fn position(&self, r: Ref, hash: u32) -> (usize, usize) {
        let bits = r.bits();
        let mut s = self.slot_of(hash);
        loop {
            if let Some(i) = self.slots[s]
                .0
                .iter()
                .position(|x| *x & ITEM_ADDR_MASK == bits)
            {
                return (s, i);
            }
            s = (s + 1) & self.mask;
        }
    }

    /// Replaces the entry of `old` by one for `new` with the same prefix (CRC32C `hash`),
    /// in place: the tag, the slot and the overflow counts stay valid.
    fn replace(&mut self, old: Ref, new: Ref, hash: u32) {
        let (s, i) = self.position(old, hash);
        let x = &mut self.slots[s].0[i];
        *x = (*x & !ITEM_ADDR_MASK) | new.bits();
    }

    /// Removes the entry of `r` (whose prefix has CRC32C `hash`).
    fn unput(&mut self, r: Ref, hash: u32) {
        let home = self.slot_of(hash);
        let mut s = home;
        let bits = r.bits();
        loop {
            if let Some(x) = self.slots[s]
                .0
                .iter_mut()
                .find(|x| **x & ITEM_ADDR_MASK == bits)
            {
                *x &= OVF_MASK;
                break;
            }
            s = (s + 1) & self.mask;
        }
        // Undo the overflow counts on the way from home to the item's slot.
        let mut t = home;
        while t != s {
            let c = &mut self.slots[t].0[7];
            if *c & OVF_MASK != OVF_MASK {
                *c -= 1;
            }
            t = (t + 1) & self.mask;
        }
        self.items -= 1;
    }

    /// The item for `key` (CRC32C `hash`), which is about to get a byte child: an existing
    /// item, a leaf entry turned into an item (`leftmost = rightmost =` its leaf, `⊥`
    /// child set), or a fresh item (`fresh`, leaf references unset).
    fn item_for_child(&mut self, key: &[u8], hash: u32) -> (ItemPtr, bool) {
        match self.get(key, hash) {
            Some(Ref::Item(it)) => (it, false),
            Some(Ref::Leaf(l)) => {
                let mut m = Item::new(key, hash);
                m.anchor = 1;
                m.leftmost = l.as_raw();
                m.rightmost = l.as_raw();
                let it = self.alloc_item(m, hash);
                self.replace(Ref::Leaf(l), Ref::Item(it), hash);
                (it, false)
            }
            None => {
                let it = self.alloc_item(Item::new(key, hash), hash);
                self.put(Ref::Item(it), hash);
                (it, true)
            }
        }
    }

    /// Adds the anchor of leaf `leaf`, just linked between `prev` and `next` in the
    /// LeafList, with all its prefixes (Algorithm 4 `split`, lines 12–24). Proper prefixes
    /// become (or stay) items; the anchor itself gets a leaf entry unless it is already
    /// an item (a prefix of other anchors).
    ///
    /// Allocates nothing: the caller has made room with [`MetaTable::reserve`]`(anchor.len()
    /// + 1)` (at most one item per proper prefix and one entry per prefix are added).
    pub(crate) fn insert_anchor(
        &mut self,
        anchor: &[u8],
        leaf: LeafPtr,
        prev: LeafPtr,
        next: Option<LeafPtr>,
    ) {
        let (l, p, n) = (
            leaf.as_raw(),
            prev.as_raw(),
            next.map_or(std::ptr::null_mut(), |x| x.as_raw()),
        );
        let mut h = crc32c(&[]);
        for plen in 0..=anchor.len() {
            if plen > 0 {
                h = crc32c_extend(h, &anchor[plen - 1..plen]);
            }
            let key = &anchor[..plen];
            let it = if plen < anchor.len() {
                let (it, fresh) = self.item_for_child(key, h);
                if fresh {
                    let item = it.get_mut();
                    item.leftmost = l;
                    item.rightmost = l;
                }
                it
            } else {
                match self.get(key, h) {
                    Some(Ref::Item(it)) => it,
                    Some(Ref::Leaf(_)) => panic!("anchors are distinct"),
                    None => {
                        self.put(Ref::Leaf(leaf), h);
                        break;
                    }
                }
            };
            let item = it.get_mut();
            // The leaves below an item are contiguous and `leaf` sits between `prev` and
            // `next`: it extends the range on one side or falls inside it.
            if item.leftmost == n {
                item.leftmost = l;
            }
            if item.rightmost == p {
                item.rightmost = l;
            }
            if plen < anchor.len() {
                let b = anchor[plen];
                item.bitmap[(b >> 6) as usize] |= 1 << (b & 63);
            } else {
                item.anchor = 1;
            }
        }
        *self.lens.entry(anchor.len()).or_default() += 1;
        self.max_len = self.max_len.max(anchor.len());
        self.anchors += 1;
        self.replan();
    }

    /// Removes the anchor of leaf `leaf`, which sat between `prev` and `next` and was
    /// merged into `prev` (Algorithm 4 `merge`, lines 27–34). An anchor item left without
    /// byte children becomes a leaf entry again.
    pub(crate) fn remove_anchor(
        &mut self,
        anchor: &[u8],
        leaf: LeafPtr,
        prev: LeafPtr,
        next: Option<LeafPtr>,
    ) {
        let (l, p, n) = (
            leaf.as_raw(),
            prev.as_raw(),
            next.map_or(std::ptr::null_mut(), |x| x.as_raw()),
        );
        let mut hashes = Vec::with_capacity(anchor.len() + 1);
        let mut h = crc32c(&[]);
        hashes.push(h);
        for i in 0..anchor.len() {
            h = crc32c_extend(h, &anchor[i..i + 1]);
            hashes.push(h);
        }
        let victim = Some(Victim { leaf: l, anchor });
        let mut child_gone = false;
        for plen in (0..=anchor.len()).rev() {
            let key = &anchor[..plen];
            let h = hashes[plen];
            let it = if plen == anchor.len() {
                // The victim's own entry, matched by address first: when this is the
                // replay of a merge on the shadow table the victim leaf may already be
                // freed, so its anchor must not be read (and this removes the only entry
                // that names it).
                let r = self
                    .find(h, |r| match r {
                        Ref::Leaf(x) => x == leaf,
                        // SAFETY: items whose leftmost leaf is the victim are compared with
                        // `anchor`; every other leaf the table names is linked.
                        Ref::Item(it) => unsafe { it.get().key_is(key, victim) },
                    })
                    .expect("the anchor is in the table");
                match r {
                    Ref::Leaf(_) => {
                        self.unput(r, h);
                        child_gone = true;
                        continue;
                    }
                    Ref::Item(it) => {
                        it.get_mut().anchor = 0;
                        it
                    }
                }
            } else {
                self.get_item(key, h, victim)
                    .expect("anchor prefixes are items")
            };
            let item = it.get_mut();
            if child_gone && plen < anchor.len() {
                let b = anchor[plen];
                item.bitmap[(b >> 6) as usize] &= !(1 << (b & 63));
            }
            if item.anchor == 0 && !item.has_children() {
                debug_assert!(plen > 0, "the root always keeps the first leaf");
                self.unput(Ref::Item(it), h);
                self.free_item(it);
                child_gone = true;
            } else {
                child_gone = false;
                if item.leftmost == l {
                    item.leftmost = n;
                }
                if item.rightmost == l {
                    item.rightmost = p;
                }
                if plen > 0 && item.anchor != 0 && !item.has_children() {
                    // Only the anchor's own leaf is left below: back to a leaf entry.
                    debug_assert_eq!(item.leftmost, item.rightmost);
                    let own = item.leftmost();
                    self.replace(Ref::Item(it), Ref::Leaf(own), h);
                    self.free_item(it);
                }
            }
        }
        let c = self
            .lens
            .get_mut(&anchor.len())
            .expect("anchor length counted");
        *c -= 1;
        if *c == 0 {
            self.lens.remove(&anchor.len());
            self.max_len = self.lens.keys().next_back().copied().unwrap_or(0);
        }
        self.anchors -= 1;
        self.shrink_items();
        self.shrink_slots();
        self.replan();
    }

    /// Makes every reference to leaf `old` (anchor `anchor`) name `new` instead: the leaf
    /// moved to another block (`smo`, "Moving leaves"). The anchor's entry (a leaf entry, or
    /// its item's) and the leftmost and rightmost leaves of the items of its proper
    /// prefixes (the only items that can name `old`: every leaf below an item extends its
    /// prefix). Nothing else changes: same anchors, same items, no allocation.
    ///
    /// As in [`MetaTable::remove_anchor`], `old` may already be freed when this replays on
    /// the shadow table: its entry is found by address, and items still naming it are
    /// compared with `anchor` (a [`Victim`]), never through the leaf.
    pub(crate) fn replace_leaf(&mut self, anchor: &[u8], old: LeafPtr, new: LeafPtr) {
        let (o, n) = (old.as_raw(), new.as_raw());
        let victim = Some(Victim { leaf: o, anchor });
        let mut h = crc32c(&[]);
        for plen in 0..=anchor.len() {
            if plen > 0 {
                h = crc32c_extend(h, &anchor[plen - 1..plen]);
            }
            let key = &anchor[..plen];
            let it = if plen == anchor.len() {
                let r = self
                    .find(h, |r| match r {
                        Ref::Leaf(x) => x == old,
                        // SAFETY: items naming `old` are compared with `anchor`; every
                        // other leaf the table names is linked.
                        Ref::Item(it) => unsafe { it.get().key_is(key, victim) },
                    })
                    .expect("the anchor is in the table");
                match r {
                    Ref::Leaf(_) => {
                        self.replace(r, Ref::Leaf(new), h);
                        break;
                    }
                    Ref::Item(it) => it,
                }
            } else {
                self.get_item(key, h, victim)
                    .expect("anchor prefixes are items")
            };
            let item = it.get_mut();
            if item.leftmost == o {
                item.leftmost = n;
            }
            if item.rightmost == o {
                item.rightmost = n;
            }
        }
    }

    /// A deep copy (same slots, same positions, fresh items): used when the writer cannot
    /// wait for the shadow table's readers to drain (see `smo`).
    ///
    /// Fails with [`Error::OutOfMemory`] when the copy's arrays cannot be allocated.
    pub(crate) fn duplicate(&self) -> Result<MetaTable, Error> {
        let mut slots = self.slots.try_clone()?;
        let arr = self.arr.duplicate().ok_or(Error::OutOfMemory)?;
        for slot in slots.iter_mut() {
            for e in slot.0.iter_mut() {
                if *e & ITEM_ADDR_MASK == 0 || *e & LEAF_BIT != 0 {
                    // Empty, or a leaf entry (copied as is).
                    continue;
                }
                let new = ItemPtr(self.arr.rebase(ItemPtr::from_entry(*e).0, &arr));
                *e = (*e & !ITEM_ADDR_MASK) | new.addr();
            }
        }
        Ok(MetaTable {
            slots,
            mask: self.mask,
            items: self.items,
            root: ItemPtr(self.arr.rebase(self.root.0, &arr)),
            version: self.version,
            max_len: self.max_len,
            arr,
            lens: self.lens.clone(),
            anchors: self.anchors,
            plan: self.plan.clone(),
        })
    }

    /// Counts the table's items by kind and their bytes (diagnostics, see [`MetaStats`]).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn stats(&self) -> MetaStats {
        let mut st = MetaStats {
            slots: self.slots.len(),
            slot_bytes: self.slots.reserved_bytes(),
            item_cap: self.arr.cap(),
            ..MetaStats::default()
        };
        for slot in self.slots.iter() {
            for &e in &slot.0 {
                if e & ITEM_ADDR_MASK == 0 {
                    continue;
                }
                let ip = match Ref::from_entry(e) {
                    Ref::Item(ip) => ip,
                    Ref::Leaf(l) => {
                        st.leaf_entries += 1;
                        // SAFETY: leaves named by the published table are linked while the
                        // caller holds the writer mutex.
                        st.leaf_entry_len_sum += unsafe { l.hdr() }.anchor().len();
                        continue;
                    }
                };
                let it = ip.get();
                let bytes = ITEM_SIZE;
                let k = match (it.is_anchor(), it.has_children()) {
                    (true, false) => 0,
                    (false, _) => 1,
                    (true, true) => 2,
                };
                st.items[k] += 1;
                st.item_bytes[k] += bytes;
                st.items_at_home += usize::from(self.arr.at_home(ip.0, it.hash));
                if k == 0 {
                    st.leaf_only_len_sum += it.len();
                }
            }
        }
        st
    }

    /// Checks the table against the LeafList (tests and debug builds): every anchor's
    /// prefixes are items with the right children, leftmost/rightmost, and no other items.
    pub(crate) fn check(&self, leaves: &[(Vec<u8>, LeafPtr)]) {
        use std::collections::BTreeMap as M;
        // Expected items.
        let mut exp: M<Vec<u8>, (LeafPtr, LeafPtr, [u64; 4], bool)> = M::new();
        for (a, leaf) in leaves {
            for plen in 0..=a.len() {
                let e = exp
                    .entry(a[..plen].to_vec())
                    .or_insert((*leaf, *leaf, [0; 4], false));
                e.1 = *leaf;
                if plen < a.len() {
                    let b = a[plen];
                    e.2[(b >> 6) as usize] |= 1 << (b & 63);
                } else {
                    e.3 = true;
                }
            }
        }
        assert_eq!(self.items, exp.len());
        let mut nitems = 0;
        for (k, (lm, rm, bm, anc)) in &exp {
            let r = self.get(k, crc32c(k)).expect("entry present");
            if !k.is_empty() && *anc && *bm == [0; 4] {
                assert_eq!(lm, rm);
                assert_eq!(r, Ref::Leaf(*lm), "childless anchor {k:?} is a leaf entry");
                continue;
            }
            let Ref::Item(ip) = r else {
                panic!("prefix {k:?} with children (or the root) is an item")
            };
            nitems += 1;
            let it = ip.get();
            // SAFETY: the caller's leaves are live.
            assert_eq!(unsafe { it.prefix() }, k.as_slice());
            assert_eq!(it.len(), k.len());
            assert_eq!(it.hash(), crc32c(k));
            assert_eq!(it.leftmost(), *lm, "leftmost of {k:?}");
            assert_eq!(it.rightmost(), *rm, "rightmost of {k:?}");
            assert_eq!(it.bitmap, *bm);
            assert_eq!(it.is_anchor(), *anc);
        }
        assert_eq!(self.arr.len(), nitems, "items in the array");
        let c = self.arr.cap();
        assert!(
            c == MIN_CAP || nitems * 16 >= c * 3,
            "item array of {c} for {nitems} items"
        );
        assert!(nitems * 4 <= c * 3, "item array of {c} for {nitems} items");
        let mut n = 0;
        for s in self.slots.iter() {
            n += s.0.iter().filter(|&&e| e & ITEM_ADDR_MASK != 0).count();
        }
        assert_eq!(n, self.items);
        let maxlen = leaves.iter().map(|(a, _)| a.len()).max().unwrap_or(0);
        assert_eq!(self.max_len, maxlen);
    }
}
