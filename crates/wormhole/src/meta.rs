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

use std::collections::BTreeMap;
use std::ptr::NonNull;

use orrery_core::Error;
use orrery_core::alloc::{Zeroable, ZeroedArray};

use crate::deps::hash::{crc32c, crc32c_extend, tag16};
use crate::items::{ItemArray, MIN_CAP};
use crate::leaf::LeafPtr;
use crate::plan::Plan;

const ADDR_MASK: u64 = (1 << 48) - 1;
const OVF_MASK: u64 = 0x3F;
const ITEM_ADDR_MASK: u64 = ADDR_MASK & !OVF_MASK;
/// Bit 47 of the address field marks a *leaf entry* (user-space addresses are below 2^47).
const LEAF_BIT: u64 = 1 << 47;

/// An item (one line; see the module docs).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) struct Item {
    hash: u32,
    len: u32,
    leftmost: *mut crate::leaf::Leaf,
    rightmost: *mut crate::leaf::Leaf,
    bitmap: [u64; 4],
    anchor: u8,
    key: [u8; INLINE],
}

/// Prefix bytes kept in an item: prefixes up to this long are compared in the item.
pub(crate) const INLINE: usize = 7;
/// Bytes of an item block.
const ITEM_SIZE: usize = 64;
const _: () = assert!(size_of::<Item>() == ITEM_SIZE);

// SAFETY: an all-zero item is a valid value: integers, null leaf pointers, an empty bitmap.
unsafe impl Zeroable for Item {}

/// The bytes of a merged-away leaf's anchor, for the replay of its removal on the shadow
/// table (see the module docs): items whose leftmost leaf is `leaf` are compared with
/// `anchor`, never through the (possibly freed) leaf.
#[derive(Clone, Copy)]
struct Victim<'a> {
    leaf: *mut crate::leaf::Leaf,
    anchor: &'a [u8],
}

/// A pointer to an item owned by one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ItemPtr(NonNull<Item>);

impl Item {
    /// A new item for `key` (CRC32C `hash`), leaf references unset.
    fn new(key: &[u8], hash: u32) -> Item {
        let mut it = Item {
            hash,
            len: key.len() as u32,
            leftmost: std::ptr::null_mut(),
            rightmost: std::ptr::null_mut(),
            bitmap: [0; 4],
            anchor: 0,
            key: [0; INLINE],
        };
        let n = key.len().min(INLINE);
        it.key[..n].copy_from_slice(&key[..n]);
        it
    }
}

impl ItemPtr {
    #[inline]
    fn addr(self) -> u64 {
        self.0.as_ptr().expose_provenance() as u64
    }

    #[inline]
    fn from_entry(e: u64) -> ItemPtr {
        let p = std::ptr::with_exposed_provenance_mut::<Item>((e & ITEM_ADDR_MASK) as usize);
        // SAFETY: non-empty entries hold the exposed address of a live item of the table.
        ItemPtr(unsafe { NonNull::new_unchecked(p) })
    }

    /// The item. Items live as long as the table that owns them.
    #[inline]
    pub(crate) fn get<'a>(self) -> &'a Item {
        // SAFETY: items are live while their table is reachable, and tables are only read
        // by threads that keep them alive (epoch guard or writer mutex, see `smo`); a
        // table being read is never written.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    fn get_mut<'a>(self) -> &'a mut Item {
        // SAFETY: called only by the writer on the unpublished table it owns exclusively.
        unsafe { &mut *self.0.as_ptr() }
    }

    /// Prefetches the item's line.
    #[inline]
    pub(crate) fn prefetch(self) {
        crate::prefetch(self.0.as_ptr().cast::<u8>());
    }
}

/// What a slot entry references: an item, or (a *leaf entry*) the leaf whose anchor is
/// the entry's prefix, when that anchor has no byte children (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ref {
    /// An item of the table.
    Item(ItemPtr),
    /// The leaf of a childless anchor.
    Leaf(LeafPtr),
}

impl Ref {
    #[inline]
    fn from_entry(e: u64) -> Ref {
        if e & LEAF_BIT != 0 {
            let p = std::ptr::with_exposed_provenance_mut::<crate::leaf::Leaf>(
                (e & ITEM_ADDR_MASK & !LEAF_BIT) as usize,
            );
            Ref::Leaf(LeafPtr::from_raw(p).expect("leaf entries hold a leaf address"))
        } else {
            Ref::Item(ItemPtr::from_entry(e))
        }
    }

    /// The entry's address field (without the overflow count).
    #[inline]
    fn bits(self) -> u64 {
        match self {
            Ref::Item(it) => it.addr(),
            Ref::Leaf(l) => leaf_bits(l),
        }
    }

    /// The full comparison of the entry's prefix with `p` (§3.1's final check; reads a
    /// leaf's anchor for a leaf entry and for an item longer than [`INLINE`] bytes).
    ///
    /// # Safety
    /// The leaves the table names are live (the reader's epoch guard: leaves are freed
    /// through the epoch scheme after leaving the published table; for the writer every
    /// leaf the caught-up shadow names is linked, see `smo`), except `victim`'s, which is
    /// only compared by address.
    #[inline]
    unsafe fn key_is(self, p: &[u8], victim: Option<Victim<'_>>) -> bool {
        match self {
            // SAFETY: per the contract.
            Ref::Item(it) => unsafe { it.get().key_is(p, victim) },
            Ref::Leaf(l) if victim.is_some_and(|v| v.leaf == l.as_raw()) => false,
            // SAFETY: per the contract; anchors are immutable.
            Ref::Leaf(l) => unsafe { l.hdr() }.anchor_is(p),
        }
    }

    /// Prefetches the line the search reads next: the item, or the leaf's header (the
    /// anchor, and the lock word the lookup takes next).
    #[inline]
    pub(crate) fn prefetch(self) {
        match self {
            Ref::Item(it) => it.prefetch(),
            Ref::Leaf(l) => l.prefetch(),
        }
    }
}

/// The address field of a leaf entry for `l`.
#[inline]
fn leaf_bits(l: LeafPtr) -> u64 {
    let a = l.as_raw().expose_provenance() as u64;
    assert!(
        a & !(ITEM_ADDR_MASK & !LEAF_BIT) == 0,
        "leaf address beyond 47 bits or not 64-byte aligned"
    );
    a | LEAF_BIT
}

impl Item {
    /// CRC32C of the prefix.
    #[inline]
    pub(crate) fn hash(&self) -> u32 {
        self.hash
    }

    /// Prefix length.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the inline bytes agree with `key[..len]` followed by `ext` (the byte of a
    /// child probe), for an item of `len` (+1) bytes: with the length, an exact comparison
    /// for prefixes of at most [`INLINE`] bytes.
    #[inline]
    pub(crate) fn inline_is(&self, key: &[u8], ext: Option<u8>) -> bool {
        let n = self.len as usize;
        match ext {
            None => {
                let m = n.min(INLINE);
                self.key[..m] == key[..m]
            }
            Some(b) => {
                let p = n - 1;
                if p < INLINE {
                    self.key[..p] == key[..p] && self.key[p] == b
                } else {
                    self.key == key[..INLINE]
                }
            }
        }
    }

    /// The anchor of the leftmost leaf, whose first `len` bytes are the prefix.
    ///
    /// # Safety
    /// The leftmost leaf is live, or is `victim`'s (see [`Ref::key_is`]).
    #[inline]
    unsafe fn full<'a>(&self, victim: Option<Victim<'a>>) -> &'a [u8] {
        if let Some(v) = victim
            && v.leaf == self.leftmost
        {
            return v.anchor;
        }
        // SAFETY: live per the contract; anchors are immutable.
        unsafe { self.leftmost().hdr() }.anchor()
    }

    /// The full comparison of the prefix with `p`.
    ///
    /// # Safety
    /// As for [`Item::full`].
    #[inline]
    unsafe fn key_is(&self, p: &[u8], victim: Option<Victim<'_>>) -> bool {
        if self.len as usize != p.len() || !self.inline_is(p, None) {
            return false;
        }
        // SAFETY: per the contract.
        p.len() <= INLINE || unsafe { self.full(victim) }.starts_with(p)
    }

    /// Whether the prefix is `key[..plen]·b`, given that `key[..plen]` is a prefix in
    /// the table (its child probe).
    ///
    /// # Safety
    /// As for [`Item::full`].
    #[inline]
    unsafe fn is_child(&self, key: &[u8], plen: usize, b: u8) -> bool {
        if self.len as usize != plen + 1 || !self.inline_is(key, Some(b)) {
            return false;
        }
        plen < INLINE || {
            // SAFETY: per the contract.
            let a = unsafe { self.full(None) };
            a.len() > plen && a[..plen] == key[..plen] && a[plen] == b
        }
    }

    /// The prefix bytes (checks; reads the leftmost leaf's anchor).
    ///
    /// # Safety
    /// As for [`Item::full`].
    unsafe fn prefix<'a>(&self) -> &'a [u8] {
        // SAFETY: per the contract.
        let a = unsafe { self.full(None) };
        &a[..self.len as usize]
    }

    /// Whether the prefix is an anchor (has the `⊥` child).
    #[inline]
    pub(crate) fn is_anchor(&self) -> bool {
        self.anchor != 0
    }

    /// Leftmost leaf below the item.
    #[inline]
    pub(crate) fn leftmost(&self) -> LeafPtr {
        LeafPtr::from_raw(self.leftmost).expect("items always have leaves below")
    }

    /// Rightmost leaf below the item.
    #[inline]
    pub(crate) fn rightmost(&self) -> LeafPtr {
        LeafPtr::from_raw(self.rightmost).expect("items always have leaves below")
    }

    #[cfg(test)]
    fn has_child(&self, b: u8) -> bool {
        self.bitmap[(b >> 6) as usize] & (1 << (b & 63)) != 0
    }

    #[inline]
    fn has_children(&self) -> bool {
        self.bitmap.iter().any(|&w| w != 0)
    }

    /// The largest byte child `< c`, if any.
    #[inline]
    pub(crate) fn child_below(&self, c: u8) -> Option<u8> {
        let mut w = (c >> 6) as usize;
        let mut bits = self.bitmap[w] & ((1u64 << (c & 63)) - 1);
        loop {
            if bits != 0 {
                return Some((w * 64 + 63 - bits.leading_zeros() as usize) as u8);
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            bits = self.bitmap[w];
        }
    }

    /// Whether some byte child is `> c`.
    #[inline]
    pub(crate) fn has_child_above(&self, c: u8) -> bool {
        let w = (c >> 6) as usize;
        let above = if c & 63 == 63 {
            0
        } else {
            !((2u64 << (c & 63)) - 1)
        };
        self.bitmap[w] & above != 0 || self.bitmap[w + 1..].iter().any(|&x| x != 0)
    }
}

/// Entry counts of one MetaTrieHT by kind (diagnostics). Items: index 0 = leaf-only items
/// (an anchor without byte children: only the root can be one), 1 = internal items (byte
/// children, not an anchor), 2 = both; and leaf entries (childless anchors other than the
/// root, which reference their leaf and have no item).
#[derive(Clone, Debug, Default)]
pub struct MetaStats {
    /// Items by kind.
    pub items: [usize; 3],
    /// Bytes of the items by kind (64 each).
    pub item_bytes: [usize; 3],
    /// Items at their home position of the item array (the position a search prefetches).
    pub items_at_home: usize,
    /// Positions of the item array.
    pub item_cap: usize,
    /// Total prefix length of the leaf-only items.
    pub leaf_only_len_sum: usize,
    /// Leaf entries.
    pub leaf_entries: usize,
    /// Total anchor length of the leaf entries.
    pub leaf_entry_len_sum: usize,
    /// Slots in the table.
    pub slots: usize,
    /// Bytes of the slot array.
    pub slot_bytes: usize,
}

impl std::fmt::Display for MetaStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n: usize = self.items.iter().sum::<usize>() + self.leaf_entries;
        write!(
            f,
            "leaf entries {} (avg len {:.1}); items {} (leaf-only {} / {} B, avg len {:.1}; internal {} / {} B; both {} / {} B); \
             item array {} positions, {} items at home; slots {} ({} B, {:.0}% of entries used); hot bytes {}",
            self.leaf_entries,
            self.leaf_entry_len_sum as f64 / self.leaf_entries.max(1) as f64,
            n - self.leaf_entries,
            self.items[0],
            self.item_bytes[0],
            self.leaf_only_len_sum as f64 / self.items[0].max(1) as f64,
            self.items[1],
            self.item_bytes[1],
            self.items[2],
            self.item_bytes[2],
            self.item_cap,
            self.items_at_home,
            self.slots,
            self.slot_bytes,
            100.0 * n as f64 / (self.slots * 8).max(1) as f64,
            self.slot_bytes + self.item_cap * ITEM_SIZE,
        )
    }
}

/// One 64-byte slot of eight entries.
#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
struct Slot([u64; 8]);

const _: () = assert!(size_of::<Slot>() == 64);

// SAFETY: a slot is eight `u64`s; all-zero bytes are eight empty entries.
unsafe impl Zeroable for Slot {}

/// The slot array: a plain heap block while small, huge-page memory from 2 MiB on (a
/// lookup reads several random slots; with 4 KiB pages each can cost a TLB miss).
type Slots = ZeroedArray<Slot>;

/// `n` empty slots, or [`Error::OutOfMemory`].
fn new_slots(n: usize) -> Result<Slots, Error> {
    Slots::new(n)
}

/// A MetaTrieHT.
pub(crate) struct MetaTable {
    slots: Slots,
    mask: usize,
    items: usize,
    root: ItemPtr,
    /// Incremented by one per published structural change (§2.5).
    pub(crate) version: u64,
    /// Longest anchor length (`L_anc` of Algorithm 1).
    max_len: usize,
    /// The items, placed by hash (see `items`).
    arr: ItemArray<Item>,
    /// Anchor length → number of anchors, to keep `max_len` exact on removals.
    lens: BTreeMap<usize, usize>,
    /// Number of anchors.
    anchors: usize,
    /// Where Algorithm 1 splits its ranges (`plan::Plan`), rebuilt from `lens`.
    plan: Plan,
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
        crate::prefetch(self.arr.home(hash));
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
        crate::prefetch::<Slot>(&self.slots[self.slot_of(hash)]);
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
        self.replan();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::leaf::leaf_pool;
    use crate::search::{locate, locate_exact, locate_in};
    use orrery_core::alloc::SlabPool;

    /// A LeafList of empty leaves and the two tables (`T1`, `T2`) a writer keeps, driven
    /// the way `smo` drives them.
    struct Harness {
        pool: SlabPool,
        leaves: Vec<(Vec<u8>, LeafPtr)>,
        t1: MetaTable,
        t2: MetaTable,
    }

    impl Harness {
        fn new() -> Harness {
            let pool = leaf_pool(8);
            let head = LeafPtr::alloc(&pool, 8, Box::new([]), 0).unwrap();
            Harness {
                t1: MetaTable::new(head).unwrap(),
                t2: MetaTable::new(head).unwrap(),
                leaves: vec![(Vec::new(), head)],
                pool,
            }
        }

        fn relink(&self) {
            for (i, (_, l)) in self.leaves.iter().enumerate() {
                let prev = i.checked_sub(1).map(|j| self.leaves[j].1);
                let next = self.leaves.get(i + 1).map(|x| x.1);
                // SAFETY: the harness owns its live leaves.
                let h = unsafe { l.hdr() };
                h.prev.store(
                    prev.map_or(std::ptr::null_mut(), |p| p.as_raw()),
                    std::sync::atomic::Ordering::Relaxed,
                );
                h.next.store(
                    next.map_or(std::ptr::null_mut(), |p| p.as_raw()),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
        }

        fn add(&mut self, anchor: &[u8]) -> LeafPtr {
            let leaf = LeafPtr::alloc(&self.pool, 8, anchor.into(), 0).unwrap();
            let i = self.leaves.partition_point(|(a, _)| a.as_slice() < anchor);
            let prev = self.leaves[i - 1].1;
            let next = self.leaves.get(i).map(|x| x.1);
            self.leaves.insert(i, (anchor.to_vec(), leaf));
            self.relink();
            self.t1.reserve(anchor.len() + 1).unwrap();
            self.t1.insert_anchor(anchor, leaf, prev, next);
            self.t2.reserve(anchor.len() + 1).unwrap();
            self.t2.insert_anchor(anchor, leaf, prev, next);
            leaf
        }

        /// Merges the leaf of `anchor` away. Like a replay on the shadow table, `T2` is
        /// updated only after the victim was freed and its block reused.
        fn remove(&mut self, anchor: &[u8]) {
            let i = self
                .leaves
                .iter()
                .position(|(a, _)| a.as_slice() == anchor)
                .unwrap();
            let (_, leaf) = self.leaves.remove(i);
            let prev = self.leaves[i - 1].1;
            let next = self.leaves.get(i).map(|x| x.1);
            self.relink();
            self.t1.remove_anchor(anchor, leaf, prev, next);
            // SAFETY: unlinked and gone from `T1`; `T2` only compares its address.
            unsafe { leaf.free(&self.pool) };
            let reuse = LeafPtr::alloc(&self.pool, 8, Box::new(*b"other anchor bytes"), 0).unwrap();
            self.t2.remove_anchor(anchor, leaf, prev, next);
            // SAFETY: never linked.
            unsafe { reuse.free(&self.pool) };
        }

        /// The target leaf of `key` by definition: the last leaf whose anchor is `<= key`.
        fn want(&self, key: &[u8]) -> LeafPtr {
            let i = self.leaves.partition_point(|(a, _)| a.as_slice() <= key);
            self.leaves[i - 1].1
        }

        /// Both tables against the LeafList, and the target leaf of `keys` against the
        /// definition (the last leaf whose anchor is `<= key`).
        fn verify(&self, keys: &[&[u8]]) {
            self.t1.check(&self.leaves);
            self.t2.check(&self.leaves);
            for cfg in [
                Config::default(),
                Config {
                    tag_matching: false,
                    inc_hashing: false,
                    ..Config::default()
                },
            ] {
                for k in keys {
                    let i = self.leaves.partition_point(|(a, _)| a.as_slice() <= *k);
                    let want = self.leaves[i - 1].1;
                    for t in [&self.t1, &self.t2] {
                        assert_eq!(locate(t, k, &cfg).unwrap().leaf, want, "key {k:?}");
                        let tg = locate_in(t, k, &cfg).unwrap();
                        let leaf = match tg.check {
                            // SAFETY: the harness's leaves live until it is dropped.
                            Some(c) if !c.holds(unsafe { tg.leaf.hdr() }, k) => {
                                locate_exact(t, k, &cfg).unwrap().leaf
                            }
                            _ => tg.leaf,
                        };
                        assert_eq!(leaf, want, "key {k:?}");
                    }
                }
            }
        }

        fn entry(&self, key: &[u8]) -> Option<Ref> {
            self.t1.get(key, crc32c(key))
        }
    }

    impl Drop for Harness {
        fn drop(&mut self) {
            for (_, l) in self.leaves.drain(..) {
                // SAFETY: owned by the harness, unused from now on.
                unsafe { l.free(&self.pool) };
            }
        }
    }

    /// An anchor that gains byte children turns from a leaf entry into an item, and back
    /// into a leaf entry when a merge removes them; trailing `0x00` children included.
    #[test]
    fn leaf_entries_gain_and_lose_children() {
        let mut h = Harness::new();
        let keys: &[&[u8]] = &[
            b"", b"\0", b"a", b"a\0", b"a\0\0", b"a\0\0\0", b"a\x01", b"ab", b"abc", b"b",
        ];
        let la = h.add(b"a");
        assert_eq!(h.entry(b"a"), Some(Ref::Leaf(la)));
        h.verify(keys);
        let la0 = h.add(b"a\0");
        assert!(matches!(h.entry(b"a"), Some(Ref::Item(_))));
        assert_eq!(h.entry(b"a\0"), Some(Ref::Leaf(la0)));
        h.verify(keys);
        let la00 = h.add(b"a\0\0");
        let lab = h.add(b"ab");
        assert!(matches!(h.entry(b"a\0"), Some(Ref::Item(_))));
        assert_eq!(h.entry(b"a\0\0"), Some(Ref::Leaf(la00)));
        assert_eq!(h.entry(b"ab"), Some(Ref::Leaf(lab)));
        h.verify(keys);
        h.remove(b"a\0\0");
        assert_eq!(h.entry(b"a\0"), Some(Ref::Leaf(la0)));
        h.verify(keys);
        h.remove(b"a\0");
        h.remove(b"ab");
        assert_eq!(h.entry(b"a"), Some(Ref::Leaf(la)));
        h.verify(keys);
        // An anchor that is only a prefix of others (an internal item) and then an
        // anchor itself, then loses its anchor flag again.
        let lx = h.add(b"xyz");
        assert!(matches!(h.entry(b"xy"), Some(Ref::Item(_))));
        h.add(b"xy");
        h.verify(&[b"x", b"xy", b"xy\0", b"xyz", b"xz"]);
        h.remove(b"xy");
        assert_eq!(h.entry(b"xyz"), Some(Ref::Leaf(lx)));
        h.verify(&[b"x", b"xy", b"xy\0", b"xyz", b"xz"]);
        h.remove(b"xyz");
        assert_eq!(h.entry(b"x"), None);
        h.verify(keys);
    }

    /// A probe whose tag matches a leaf entry of another prefix: the final comparison
    /// against the leaf's anchor catches it and the search restarts with exact probes.
    #[test]
    fn tag_false_positive_on_a_leaf_entry() {
        // `u\xAA=` and `xyq` share the tag (top 16 bits of the CRC32C) and the home slot in
        // an 8-slot table (low 3 bits).
        let (b, k): (&[u8], &[u8]) = (b"u\xaa=", b"xyq");
        assert_eq!(crc32c(b), 0xBCAA_7C96);
        assert_eq!(crc32c(k), 0xBCAA_C3BE);
        let mut h = Harness::new();
        let lx = h.add(b"xya");
        let lb = h.add(b);
        assert_eq!(h.t1.slots.len(), 8);
        assert_eq!(h.t1.probe_tag(crc32c(k)), Some(Ref::Leaf(lb)));
        h.verify(&[k, b"xy", b"xyr", b"u", b"u\xaa=\0"]);
        assert_eq!(locate(&h.t1, k, &Config::default()).unwrap().leaf, lx);
        // A lookup defers the comparison: it gets the wrong leaf with the check pending,
        // the check fails, and the exact restart finds the right leaf with nothing left
        // to check.
        let cfg = Config::default();
        let tg = locate_in(&h.t1, k, &cfg).unwrap();
        let c = crate::search::Check {
            plen: 3,
            byte: None,
            whole: true,
        };
        assert_eq!((tg.leaf, tg.check), (lb, Some(c)));
        // SAFETY: the harness's leaves live until it is dropped.
        assert!(!c.holds(unsafe { lb.hdr() }, k));
        let tg = locate_exact(&h.t1, k, &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (lx, None));
        // A true leaf-entry match defers too, and its check passes.
        let tg = locate_in(&h.t1, b, &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (lb, Some(c)));
        // SAFETY: as above.
        assert!(c.holds(unsafe { lb.hdr() }, b));
    }

    /// The sibling step's child probe with a deferred comparison: a leaf entry of another
    /// prefix with the child's tag comes first in the slot, the lookup gets it with a
    /// pending check that fails, and the exact restart finds the child's leaf.
    #[test]
    fn deferred_child_check() {
        let (b, k): (&[u8], &[u8]) = (b"u\xaa=", b"xyq");
        let mut h = Harness::new();
        let lb = h.add(b);
        let lq = h.add(k);
        let ls = h.add(b"xys");
        assert_eq!(h.t1.slots.len(), 8);
        assert_eq!(h.t1.probe_tag(crc32c(k)), Some(Ref::Leaf(lb)));
        h.verify(&[k, b"xy", b"xyr", b"xys", b"xyz", b"u", b"u\xaa=\0"]);
        let cfg = Config::default();
        // `xyr` falls between the children `q` and `s` of `xy`: its target is `xyq`'s leaf.
        let key = b"xyr!";
        assert_eq!(locate(&h.t1, key, &cfg).unwrap().leaf, lq);
        let tg = locate_in(&h.t1, key, &cfg).unwrap();
        let c = crate::search::Check {
            plen: 2,
            byte: Some(b'q'),
            whole: true,
        };
        assert_eq!((tg.leaf, tg.check), (lb, Some(c)));
        // SAFETY: the harness's leaves live until it is dropped.
        assert!(!c.holds(unsafe { lb.hdr() }, key));
        // SAFETY: as above.
        assert!(c.holds(unsafe { lq.hdr() }, key));
        let tg = locate_exact(&h.t1, key, &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (lq, None));
        // Above the last child: the rightmost leaf below `xy`, no child probe, no check.
        let tg = locate_in(&h.t1, b"xyz", &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (ls, None));
    }

    /// Two 12-byte prefixes with the same first 7 bytes and the same CRC32C (found by a
    /// birthday search), hence the same tag and home slot: a tag match on one's item is a
    /// false positive for the other that only the anchor comparison can tell.
    const P: &[u8] = b"collide\xcc\x1c\x5a\x20\x68";
    const Q: &[u8] = b"collide\x16\x8f\x93\x11\xd0";

    /// A search that ends on a long item matched by tag, length and inline bytes but of
    /// another prefix: exact probes tell them apart, a writer's search verifies at once,
    /// and a lookup gets the wrong leaf with a pending prefix check that fails, after which
    /// the exact search finds the right leaf.
    #[test]
    fn long_item_false_positive_is_caught() {
        assert_eq!(crc32c(P), crc32c(Q));
        assert_eq!(P[..INLINE], Q[..INLINE]);
        let mut h = Harness::new();
        // Eight 13-byte anchors below `P`: the search plan (rebuilt when the anchor count
        // moved by 5) then probes length 12 first.
        let mut lp = None;
        for b in *b"!#%&()*+" {
            lp = Some(h.add(&[P, &[b]].concat()));
        }
        let lp = lp.unwrap();
        let lc = h.add(b"collide");
        assert!(matches!(h.entry(P), Some(Ref::Item(_))));
        assert!(h.entry(Q).is_none());
        // `Q·~` sorts before `P·!`: its leaf is the one of `collide`. Through the false
        // match it would be the rightmost leaf below `P`.
        let key = [Q, b"~"].concat();
        let cfg = Config::default();
        assert_eq!(locate(&h.t1, &key, &cfg).unwrap().leaf, lc);
        assert_eq!(h.t1.plan().split(0, 14), 12);
        let tg = locate_in(&h.t1, &key, &cfg).unwrap();
        let c = crate::search::Check {
            plen: 12,
            byte: None,
            whole: false,
        };
        assert_eq!((tg.leaf, tg.check), (lp, Some(c)));
        // SAFETY: the harness's leaves live until it is dropped.
        assert!(!c.holds(unsafe { lp.hdr() }, &key));
        let tg = locate_exact(&h.t1, &key, &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (lc, None));
        h.verify(&[&key, P, Q, &[P, b"!"].concat(), b"collide", b"collidf"]);
    }

    /// The sibling step's child probe with a deferred comparison: a long item of another
    /// prefix matching the child by tag, length and inline bytes comes first, the lookup
    /// gets its leaf with a pending prefix check that fails, and the exact restart finds
    /// the child's leaf.
    #[test]
    fn long_child_false_positive_is_caught() {
        let x = &P[..11];
        let (a, c) = (P[11], P[11] + 8);
        let mut h = Harness::new();
        // `x` first, then `Q`, then `P`: `x` precedes `Q[..11]` (same tag: the collision
        // of `P` and `Q` makes their 11-byte prefixes agree in the top 24 hash bits), and
        // `Q` precedes `P` in their common home slot.
        let xc = [x, &[c]].concat();
        h.add(&xc);
        let lq = h.add(&[Q, b"0"].concat());
        h.add(&[Q, b"1"].concat());
        let lpa = h.add(&[P, b"0"].concat());
        let lp1 = h.add(&[P, b"1"].concat());
        let key = [x, &[a + 1], b"tail"].concat();
        let cfg = Config::default();
        assert_eq!(h.want(&key), lp1);
        assert_eq!(locate(&h.t1, &key, &cfg).unwrap().leaf, lp1);
        let tg = locate_in(&h.t1, &key, &cfg).unwrap();
        let chk = crate::search::Check {
            plen: 11,
            byte: Some(a),
            whole: false,
        };
        assert_eq!(tg.check, Some(chk));
        assert_eq!(tg.leaf, h.want(&[Q, b"1"].concat()));
        // SAFETY: the harness's leaves live until it is dropped.
        assert!(!chk.holds(unsafe { tg.leaf.hdr() }, &key));
        // SAFETY: as above.
        assert!(chk.holds(unsafe { lpa.hdr() }, &key));
        let tg = locate_exact(&h.t1, &key, &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (lp1, None));
        assert_ne!(lq, lp1);
        h.verify(&[&key, x, P, Q, &xc]);
    }

    /// A search that ends on a long item of another prefix (same tag, length and inline
    /// bytes) whose target is the leaf before the item's leftmost leaf: that leaf's anchor,
    /// read for its `prev` pointer, disproves the item at once, and the search restarts
    /// exactly (without the check it would return the leaf before `Q·0`).
    #[test]
    fn long_item_before_leftmost_is_checked() {
        let x = &P[..11];
        let mut h = Harness::new();
        // `Q[..11]` before `x` in their slot this time.
        h.add(&[Q, b"0"].concat());
        h.add(&[Q, b"1"].concat());
        h.add(&[P, b"0"].concat());
        let lp1 = h.add(&[P, b"1"].concat());
        h.add(&[x, &[P[11] + 8]].concat());
        let key = [x, &[P[11] + 1], b"tail"].concat();
        let cfg = Config::default();
        assert_eq!(h.want(&key), lp1);
        let tg = locate_in(&h.t1, &key, &cfg).unwrap();
        assert_eq!((tg.leaf, tg.check), (lp1, None));
        h.verify(&[&key, x, P, Q]);
    }

    /// Anchors longer than the leaf header's inline bytes (kept in a heap block).
    #[test]
    fn long_anchors() {
        let mut h = Harness::new();
        let long: Vec<u8> = (0..40u8).collect();
        let at_inline: Vec<u8> = (0..crate::leaf::ANCHOR_INLINE as u8).collect();
        let l1 = h.add(&long);
        let l2 = h.add(&at_inline);
        let l3 = h.add(&long[..crate::leaf::ANCHOR_INLINE + 1]);
        // SAFETY: owned by the harness.
        let h1 = unsafe { l1.hdr() };
        // SAFETY: as above.
        let h2 = unsafe { l2.hdr() };
        // SAFETY: as above.
        let h3 = unsafe { l3.hdr() };
        assert_eq!(h1.anchor(), long.as_slice());
        assert_eq!(h2.anchor(), at_inline.as_slice());
        assert!(!h3.anchor_is(&long[..crate::leaf::ANCHOR_INLINE]));
        assert_eq!(h.entry(&long), Some(Ref::Leaf(l1)));
        let mut other = long.clone();
        other[30] = 0xFF;
        h.verify(&[
            &long,
            &other,
            &at_inline,
            &long[..20],
            &long[..13],
            &long[..12],
        ]);
        h.remove(&long);
        assert_eq!(h.entry(&long[..13]), Some(Ref::Leaf(l3)));
        h.verify(&[&long, &other, &at_inline]);
    }

    #[test]
    fn child_bitmap_queries() {
        let mut it = Item {
            hash: 0,
            len: 0,
            leftmost: std::ptr::null_mut(),
            rightmost: std::ptr::null_mut(),
            bitmap: [0; 4],
            anchor: 0,
            key: [0; INLINE],
        };
        for b in [0u8, 63, 64, 200, 255] {
            it.bitmap[(b >> 6) as usize] |= 1 << (b & 63);
        }
        assert_eq!(it.child_below(0), None);
        assert_eq!(it.child_below(1), Some(0));
        assert_eq!(it.child_below(64), Some(63));
        assert_eq!(it.child_below(65), Some(64));
        assert_eq!(it.child_below(255), Some(200));
        assert!(it.has_child_above(0));
        assert!(it.has_child_above(200));
        assert!(!it.has_child_above(255));
        assert!(it.has_child_above(254));
        assert!(it.has_child(63) && !it.has_child(62));
    }
}
