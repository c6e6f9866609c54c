//! Writing containers: a container on a writer's path is decoded into a small tree
//! ([`Cont`]), changed, and encoded again into an exact-fit block.
//!
//! # Why decode and re-encode
//!
//! The paper inserts by shifting the byte array in place (Fig 8). A write here decodes the
//! one container where the key's path ends — lazily: embedded containers off the key's
//! path, values and suffixes stay as byte ranges of a copy of the old payload and are
//! copied back verbatim — applies the change to the tree, and encodes it. Both cost
//! O(container size) per write; decoding keeps the delta encoding of the following
//! sibling, the sizes of every enclosing embedded container, ejection and path-compression
//! splits correct by construction. This is a deviation of method for correctness within
//! the time this version had; it is not measured against in-place shifting
//! (`docs/hyperion.md`, "Not built").
//!
//! # Ejection (§3.1, Fig 8)
//!
//! An embedded container that no longer fits in 255 bytes is ejected when its parent is
//! encoded: it gets its own block and the S-Node's child becomes a Hyperion Pointer. The
//! embedded container on an insert's path is also ejected once the top-level container
//! exceeds the ejection threshold ([`crate::Config::eject_threshold`], the paper's 8 KiB /
//! 16 KiB).
//!
//! # Failure
//!
//! Every block an operation allocates is recorded in a [`Txn`]; blocks it makes
//! unreachable are freed only at commit. All allocations happen before the first byte of
//! an existing block is written, so an allocation failure frees the new blocks and leaves
//! the trie unchanged.

use std::ops::Range;

use orrery_core::api::Result;

use crate::mm::{Hp, MemoryManager, capacity_for};
use crate::node::{
    C_EMB, C_HP, C_NONE, C_PC, ChildRef, EMBED_MAX, HEADER, INLINE_MAX, PC_MAX, Suffix, T_EMPTY,
    T_INNER, T_VALUE, TAG_OUT, ValRef, parse, parse_val, write_header,
};

/// Chain levels per block when a long shared prefix is built (bounds the nesting of
/// embedded containers, hence the recursion of decoding and encoding).
const CHAIN_LEVELS: usize = 24;

/// Blocks allocated and made unreachable by one operation.
#[derive(Default)]
pub(crate) struct Txn {
    new: Vec<Hp>,
    old: Vec<Hp>,
}

impl Txn {
    pub(crate) fn alloc(&mut self, mm: &mut MemoryManager, size: usize) -> Result<Hp> {
        let hp = mm.alloc(size)?;
        self.new.push(hp);
        Ok(hp)
    }

    /// Frees `hp` at commit.
    pub(crate) fn retire(&mut self, hp: Hp) {
        self.old.push(hp);
    }

    /// Undoes the allocations.
    pub(crate) fn abort(self, mm: &mut MemoryManager) {
        for hp in self.new {
            mm.free(hp);
        }
    }

    /// Frees the retired blocks.
    pub(crate) fn commit(self, mm: &mut MemoryManager) {
        for hp in self.old {
            mm.free(hp);
        }
    }
}

/// A value in the decoded tree.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// Encoded bytes `[tag …]` in the old payload (never the empty value).
    Raw(Range<usize>),
    Empty,
    /// Encoded bytes `[tag …]`, new.
    New(Vec<u8>),
}

/// A decoded payload: T-Nodes in key order.
#[derive(Default, Debug)]
pub(crate) struct Cont {
    pub(crate) t: Vec<TNode>,
}

#[derive(Debug)]
pub(crate) struct TNode {
    key: u8,
    val: Option<Val>,
    s: Vec<SNode>,
}

#[derive(Debug)]
pub(crate) struct SNode {
    key: u8,
    val: Option<Val>,
    child: Child,
}

#[derive(Debug)]
enum Child {
    None,
    Hp(Hp),
    /// Not decoded: the payload range in the old buffer.
    EmbRaw(Range<usize>),
    Emb(Box<Cont>),
    Pc(Sfx, Val),
}

#[derive(Debug)]
enum Sfx {
    Raw(Range<usize>),
    Short(Vec<u8>),
    Long(Hp),
}

fn val_from(buf: &[u8], v: ValRef, at: usize) -> Val {
    match v {
        ValRef::Empty => Val::Empty,
        _ => Val::Raw(at..parse_val(buf, at).1),
    }
}

/// Decodes the payload `buf[range]` one level deep (embedded children stay raw).
pub(crate) fn decode(buf: &[u8], range: Range<usize>) -> Cont {
    let mut c = Cont::default();
    let mut pos = range.start;
    let (mut prev_t, mut prev_s) = (0u8, 0u8);
    while pos < range.end {
        let is_s = buf[pos] & 0x20 != 0;
        let n = parse(buf, pos, if is_s { prev_s } else { prev_t });
        // Offset of the node's value: after the flag, key byte and (T) jump fields.
        let b = buf[pos];
        let mut vat = pos + 1 + usize::from((b >> 2) & 7 == 0);
        if !is_s {
            vat += 2 * usize::from(b & 2 != 0) + 30 * usize::from(b & 1 != 0);
        }
        let val = n.val.map(|v| val_from(buf, v, vat));
        pos = n.next;
        if !is_s {
            prev_t = n.key;
            prev_s = 0;
            c.t.push(TNode {
                key: n.key,
                val,
                s: Vec::new(),
            });
            continue;
        }
        prev_s = n.key;
        let child = match n.child {
            ChildRef::None => Child::None,
            ChildRef::Hp(hp, _) => Child::Hp(hp),
            ChildRef::Emb(a, b) => Child::EmbRaw(a..b),
            ChildRef::Pc(sfx, v) => {
                let vat = pos_of_pc_val(n.next, v);
                let sfx = match sfx {
                    Suffix::Inline(a, b) => Sfx::Raw(a..b),
                    Suffix::Long(hp) => Sfx::Long(hp),
                };
                Child::Pc(sfx, pc_val(buf, v, vat))
            }
        };
        let t = c.t.last_mut().expect("an S-Node follows a T-Node");
        t.s.push(SNode {
            key: n.key,
            val,
            child,
        });
    }
    c
}

/// Offset of a path-compressed node's value, given the offset after the node.
fn pos_of_pc_val(next: usize, v: ValRef) -> usize {
    next - match v {
        ValRef::Empty => 1,
        ValRef::Inline(a, b) => 1 + (b - a),
        ValRef::Out(_) => 1 + Hp::BYTES,
    }
}

/// A path-compressed node's value (tag 0 is the empty value).
fn pc_val(buf: &[u8], v: ValRef, at: usize) -> Val {
    match v {
        ValRef::Empty => Val::Empty,
        _ => Val::Raw(at..parse_val(buf, at).1),
    }
}

/// Encodes a value `[tag …]`, out of line when longer than [`INLINE_MAX`].
pub(crate) fn new_val(mm: &mut MemoryManager, txn: &mut Txn, v: &[u8]) -> Result<Val> {
    if v.is_empty() {
        return Ok(Val::Empty);
    }
    if v.len() <= INLINE_MAX {
        let mut e = Vec::with_capacity(1 + v.len());
        e.push(v.len() as u8);
        e.extend_from_slice(v);
        return Ok(Val::New(e));
    }
    let hp = new_blob(mm, txn, v)?;
    let mut e = vec![TAG_OUT];
    e.extend_from_slice(&hp.to_bytes());
    Ok(Val::New(e))
}

fn new_blob(mm: &mut MemoryManager, txn: &mut Txn, v: &[u8]) -> Result<Hp> {
    let hp = txn.alloc(mm, 4 + v.len())?;
    let b = mm.get_mut(hp);
    b[..4].copy_from_slice(&(v.len() as u32).to_le_bytes());
    b[4..4 + v.len()].copy_from_slice(v);
    Ok(hp)
}

/// The out-of-line block a value holds, if any.
fn val_block(old: &[u8], v: &Val) -> Option<Hp> {
    let enc = match v {
        Val::Raw(r) => &old[r.clone()],
        Val::New(e) => &e[..],
        Val::Empty => return None,
    };
    (enc[0] == TAG_OUT).then(|| Hp::from_bytes(&enc[1..]))
}

fn new_sfx(mm: &mut MemoryManager, txn: &mut Txn, s: &[u8]) -> Result<Sfx> {
    debug_assert!(!s.is_empty());
    if s.len() <= PC_MAX {
        Ok(Sfx::Short(s.to_vec()))
    } else {
        Ok(Sfx::Long(new_blob(mm, txn, s)?))
    }
}

/// The encoder's context: the old payload buffer, the manager and the transaction.
pub(crate) struct Ctx<'a> {
    pub(crate) old: &'a [u8],
    pub(crate) mm: &'a mut MemoryManager,
    pub(crate) txn: &'a mut Txn,
}

impl Ctx<'_> {
    fn sfx_bytes(&self, s: &Sfx) -> Vec<u8> {
        match s {
            Sfx::Raw(r) => self.old[r.clone()].to_vec(),
            Sfx::Short(v) => v.clone(),
            Sfx::Long(hp) => crate::node::blob(self.mm, *hp).to_vec(),
        }
    }

    /// Encodes `c` as a payload into `out`. Embedded children that do not fit in 255 bytes
    /// (or `eject`, the child on an insert's path in an over-threshold container) are
    /// ejected into their own blocks.
    pub(crate) fn encode(
        &mut self,
        c: &Cont,
        out: &mut Vec<u8>,
        eject: Option<(u8, u8)>,
    ) -> Result<()> {
        let mut prev_t = 0u8;
        for t in &c.t {
            let (d, explicit) = delta(prev_t, t.key);
            prev_t = t.key;
            let ty = node_type(&t.val);
            out.push(ty << 6 | d << 2);
            if explicit {
                out.push(t.key);
            }
            self.put_val(&t.val, out);
            let mut prev_s = 0u8;
            for s in &t.s {
                let (d, explicit) = delta(prev_s, s.key);
                prev_s = s.key;
                let flag_at = out.len();
                out.push(node_type(&s.val) << 6 | 0x20 | d << 2);
                if explicit {
                    out.push(s.key);
                }
                self.put_val(&s.val, out);
                let c = match &s.child {
                    Child::None => C_NONE,
                    Child::Hp(hp) => {
                        out.extend_from_slice(&hp.to_bytes());
                        C_HP
                    }
                    Child::EmbRaw(r) if eject != Some((t.key, s.key)) => {
                        out.push((r.len() + 1) as u8);
                        out.extend_from_slice(&self.old[r.clone()]);
                        C_EMB
                    }
                    Child::EmbRaw(r) => {
                        let payload = self.old[r.clone()].to_vec();
                        let hp = self.new_container(&payload)?;
                        out.extend_from_slice(&hp.to_bytes());
                        C_HP
                    }
                    Child::Emb(sub) => {
                        let mut inner = Vec::new();
                        self.encode(sub, &mut inner, None)?;
                        if inner.len() < EMBED_MAX && eject != Some((t.key, s.key)) {
                            out.push((inner.len() + 1) as u8);
                            out.extend_from_slice(&inner);
                            C_EMB
                        } else {
                            let hp = self.new_container(&inner)?;
                            out.extend_from_slice(&hp.to_bytes());
                            C_HP
                        }
                    }
                    Child::Pc(sfx, v) => {
                        match sfx {
                            Sfx::Raw(r) => {
                                out.push(r.len() as u8);
                                out.extend_from_slice(&self.old[r.clone()]);
                            }
                            Sfx::Short(b) => {
                                out.push(b.len() as u8);
                                out.extend_from_slice(b);
                            }
                            Sfx::Long(hp) => {
                                out.push(0x80);
                                out.extend_from_slice(&hp.to_bytes());
                            }
                        }
                        match v {
                            Val::Empty => out.push(0),
                            v => self.put_val(&Some(v.clone()), out),
                        }
                        C_PC
                    }
                };
                out[flag_at] |= c;
            }
        }
        Ok(())
    }

    fn put_val(&self, v: &Option<Val>, out: &mut Vec<u8>) {
        match v {
            Some(Val::Raw(r)) => out.extend_from_slice(&self.old[r.clone()]),
            Some(Val::New(e)) => out.extend_from_slice(e),
            Some(Val::Empty) | None => {}
        }
    }

    /// A new container block holding `payload`.
    pub(crate) fn new_container(&mut self, payload: &[u8]) -> Result<Hp> {
        let size = HEADER + payload.len();
        let hp = self.txn.alloc(self.mm, size)?;
        let b = self.mm.get_mut(hp);
        write_header(b, size);
        b[HEADER..size].copy_from_slice(payload);
        Ok(hp)
    }

    /// Decodes an embedded child in place so it can be changed.
    fn open<'c>(&self, child: &'c mut Child) -> &'c mut Cont {
        if let Child::EmbRaw(r) = child {
            *child = Child::Emb(Box::new(decode(self.old, r.clone())));
        }
        match child {
            Child::Emb(c) => c,
            _ => unreachable!("open is called on embedded children"),
        }
    }

    /// Sets the value of `key` (non-empty) in `c` to `val`. The key's path must end in
    /// `c` (it never continues into a child container). Returns the replaced value's
    /// out-of-line block through the transaction.
    pub(crate) fn insert(&mut self, mut c: &mut Cont, mut key: &[u8], val: Val) -> Result<()> {
        loop {
            let ti = match c.t.binary_search_by_key(&key[0], |t| t.key) {
                Ok(i) => i,
                Err(i) => {
                    c.t.insert(
                        i,
                        TNode {
                            key: key[0],
                            val: None,
                            s: Vec::new(),
                        },
                    );
                    i
                }
            };
            let t = &mut c.t[ti];
            if key.len() == 1 {
                self.replace(&mut t.val, val);
                return Ok(());
            }
            let si = match t.s.binary_search_by_key(&key[1], |s| s.key) {
                Ok(i) => i,
                Err(i) => {
                    t.s.insert(
                        i,
                        SNode {
                            key: key[1],
                            val: None,
                            child: Child::None,
                        },
                    );
                    i
                }
            };
            let s = &mut t.s[si];
            if key.len() == 2 {
                self.replace(&mut s.val, val);
                return Ok(());
            }
            let rest = &key[2..];
            match &mut s.child {
                Child::None => {
                    s.child = Child::Pc(new_sfx(self.mm, self.txn, rest)?, val);
                    return Ok(());
                }
                Child::Hp(_) => unreachable!("a writer's path ends in its last container"),
                Child::EmbRaw(_) | Child::Emb(_) => {
                    c = self.open(&mut s.child);
                    key = rest;
                }
                Child::Pc(sfx, v) => {
                    let old_sfx = self.sfx_bytes(sfx);
                    if old_sfx == rest {
                        let mut slot = Some(std::mem::replace(v, Val::Empty));
                        self.replace(&mut slot, val);
                        *v = slot.expect("just set");
                        return Ok(());
                    }
                    let old_val = std::mem::replace(v, Val::Empty);
                    if let Sfx::Long(hp) = sfx {
                        self.txn.retire(*hp);
                    }
                    s.child = self.pair(&old_sfx, old_val, rest, val)?;
                    return Ok(());
                }
            }
        }
    }

    /// Sets a node's value slot, retiring the old value's block.
    fn replace(&mut self, slot: &mut Option<Val>, val: Val) {
        if let Some(old) = slot.as_ref().and_then(|v| val_block(self.old, v)) {
            self.txn.retire(old);
        }
        *slot = Some(val);
    }

    /// The child holding two keys `a` ≠ `b` (both non-empty): a chain of containers for
    /// their shared 2-byte levels, built bottom-up without recursion, and a bottom
    /// container where they part. Every [`CHAIN_LEVELS`] levels the chain gets its own
    /// block, which bounds the nesting of embedded containers.
    fn pair(&mut self, a: &[u8], va: Val, b: &[u8], vb: Val) -> Result<Child> {
        let mut m = 0;
        while a.len() > 2 * m + 2
            && b.len() > 2 * m + 2
            && a[2 * m..2 * m + 2] == b[2 * m..2 * m + 2]
        {
            m += 1;
        }
        let mut bottom = Cont::default();
        self.insert(&mut bottom, &a[2 * m..], va)?;
        self.insert(&mut bottom, &b[2 * m..], vb)?;
        let mut child = Child::Emb(Box::new(bottom));
        for level in (0..m).rev() {
            if (m - level) % CHAIN_LEVELS == 0
                && let Child::Emb(c) = &child
            {
                let mut payload = Vec::new();
                self.encode(c, &mut payload, None)?;
                child = Child::Hp(self.new_container(&payload)?);
            }
            let c = Cont {
                t: vec![TNode {
                    key: a[2 * level],
                    val: None,
                    s: vec![SNode {
                        key: a[2 * level + 1],
                        val: None,
                        child,
                    }],
                }],
            };
            child = Child::Emb(Box::new(c));
        }
        Ok(child)
    }

    /// Removes `key` (non-empty) from `c`, pruning nodes and embedded containers left
    /// empty; retires its blocks. Returns whether it was present. The key's path must end
    /// in `c`, except that an emptied child container is reported by `emptied`: the
    /// caller removes the pointer at the key's first `2·depth` bytes.
    pub(crate) fn remove(&mut self, c: &mut Cont, key: &[u8]) -> bool {
        // Recursion depth is bounded by the nesting of embedded containers in one block.
        let Ok(ti) = c.t.binary_search_by_key(&key[0], |t| t.key) else {
            return false;
        };
        let t = &mut c.t[ti];
        let found = if key.len() == 1 {
            match t.val.take() {
                Some(v) => {
                    if let Some(hp) = val_block(self.old, &v) {
                        self.txn.retire(hp);
                    }
                    true
                }
                None => false,
            }
        } else {
            let Ok(si) = t.s.binary_search_by_key(&key[1], |s| s.key) else {
                return false;
            };
            let s = &mut t.s[si];
            let found = if key.len() == 2 {
                match s.val.take() {
                    Some(v) => {
                        if let Some(hp) = val_block(self.old, &v) {
                            self.txn.retire(hp);
                        }
                        true
                    }
                    None => false,
                }
            } else {
                match &mut s.child {
                    Child::None | Child::Hp(_) => false,
                    Child::EmbRaw(_) | Child::Emb(_) => {
                        let sub = self.open(&mut s.child);
                        let found = self.remove(sub, &key[2..]);
                        if sub.t.is_empty() {
                            s.child = Child::None;
                        }
                        found
                    }
                    Child::Pc(sfx, v) => {
                        if self.sfx_bytes(sfx) != key[2..] {
                            false
                        } else {
                            if let Some(hp) = val_block(self.old, v) {
                                self.txn.retire(hp);
                            }
                            if let Sfx::Long(hp) = sfx {
                                self.txn.retire(*hp);
                            }
                            s.child = Child::None;
                            true
                        }
                    }
                }
            };
            if s.val.is_none() && matches!(s.child, Child::None) {
                t.s.remove(si);
            }
            found
        };
        if t.val.is_none() && t.s.is_empty() {
            c.t.remove(ti);
        }
        found
    }

    /// Drops the child container pointer at `key` (the S-Node its first two bytes, through
    /// embedded containers for the rest) and prunes what is left empty.
    pub(crate) fn drop_child(&mut self, c: &mut Cont, key: &[u8]) {
        let Ok(ti) = c.t.binary_search_by_key(&key[0], |t| t.key) else {
            return;
        };
        let t = &mut c.t[ti];
        let Ok(si) = t.s.binary_search_by_key(&key[1], |s| s.key) else {
            return;
        };
        let s = &mut t.s[si];
        if key.len() == 2 {
            s.child = Child::None;
        } else if matches!(s.child, Child::EmbRaw(_) | Child::Emb(_)) {
            let sub = self.open(&mut s.child);
            self.drop_child(sub, &key[2..]);
            if sub.t.is_empty() {
                s.child = Child::None;
            }
        }
        if s.val.is_none() && matches!(s.child, Child::None) {
            t.s.remove(si);
        }
        if t.val.is_none() && t.s.is_empty() {
            c.t.remove(ti);
        }
    }
}

/// `(d, explicit)`: the delta field for `key` after sibling key `prev`.
fn delta(prev: u8, key: u8) -> (u8, bool) {
    match key.wrapping_sub(prev) {
        d @ 1..=7 if key > prev => (d, false),
        _ => (0, true),
    }
}

fn node_type(v: &Option<Val>) -> u8 {
    match v {
        None => T_INNER,
        Some(Val::Empty) => T_EMPTY,
        Some(_) => T_VALUE,
    }
}

/// Whether a block of capacity `cap` is the exact fit for `size` bytes.
pub(crate) fn exact_fit(cap: usize, size: usize) -> bool {
    capacity_for(size) == cap
}
