//! Encoding nodes: the S-Node or T-Node a write changes is decoded from a copy of its
//! bytes ([`decode_snode`], [`decode_tval`]), changed, and encoded again
//! ([`Ctx::encode_snode`], [`Ctx::encode_tnode`]); new subtrees (a key's first container,
//! the containers a path-compressed suffix turns into when a second key arrives) are built
//! as small trees ([`Cont`]) and encoded. `write.rs` splices the result into the
//! container; no write decodes or encodes a whole container.
//!
//! # Path-compressed splits
//!
//! When a second key arrives under a path-compressed node, the two keys' shared 2-byte
//! levels become a chain of embedded containers (built bottom-up, every
//! [`CHAIN_LEVELS`] levels in its own block so that nesting stays bounded), ending in a
//! container where they part. An embedded container that would not fit in 255 bytes is
//! given its own block as it is encoded.
//!
//! # Failure
//!
//! Every block an operation allocates is recorded in a [`Txn`]; blocks it makes
//! unreachable are freed only at commit. All allocations happen before the first byte of
//! an existing block is written, so an allocation failure frees the new blocks and leaves
//! the trie unchanged.

use std::ops::Range;

use orrery_core::api::Result;

use crate::mm::{Hp, MemoryManager};
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
    /// Chain slots filled by the operation (made void again on abort).
    new_slots: Vec<Hp>,
    /// Chains allocated by the operation.
    new_chains: Vec<Hp>,
    /// Chain slots to make void at commit.
    old_slots: Vec<Hp>,
    /// Chains to free at commit.
    old_chains: Vec<Hp>,
    /// Whether the operation replaced a value the key already had ([`Ctx::replace`] of a
    /// full slot): an insert learns from its own descent whether its key was present.
    pub(crate) replaced: bool,
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

    /// A new chained extended bin (all slots void).
    pub(crate) fn alloc_chain(&mut self, mm: &mut MemoryManager) -> Result<Hp> {
        let hp = mm.alloc_chain()?;
        self.new_chains.push(hp);
        Ok(hp)
    }

    /// Gives the void chain slot `slot` a block for `size` bytes.
    pub(crate) fn fill_slot(
        &mut self,
        mm: &mut MemoryManager,
        slot: Hp,
        size: usize,
    ) -> Result<()> {
        mm.fill_slot(slot, size)?;
        self.new_slots.push(slot);
        Ok(())
    }

    /// Makes chain slot `slot` void at commit.
    pub(crate) fn retire_slot(&mut self, slot: Hp) {
        self.old_slots.push(slot);
    }

    /// Frees the chain `base` at commit.
    pub(crate) fn retire_chain(&mut self, base: Hp) {
        self.old_chains.push(base);
    }

    /// Undoes the allocations.
    pub(crate) fn abort(self, mm: &mut MemoryManager) {
        for hp in self.new {
            mm.free(hp);
        }
        for hp in self.new_slots {
            mm.void_slot(hp);
        }
        for hp in self.new_chains {
            mm.free_chain(hp);
        }
    }

    /// Frees the retired blocks.
    pub(crate) fn commit(self, mm: &mut MemoryManager) {
        for hp in self.old {
            mm.free(hp);
        }
        for hp in self.old_slots {
            mm.void_slot(hp);
        }
        for hp in self.old_chains {
            mm.free_chain(hp);
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

/// An S-Node being edited.
#[derive(Debug)]
pub(crate) struct SNode {
    pub(crate) key: u8,
    pub(crate) val: Option<Val>,
    pub(crate) child: Child,
}

impl SNode {
    /// A new S-Node without value or child.
    pub(crate) fn empty(key: u8) -> SNode {
        SNode {
            key,
            val: None,
            child: Child::None,
        }
    }

    /// Whether it holds nothing (it is then removed).
    pub(crate) fn is_empty(&self) -> bool {
        self.val.is_none() && matches!(self.child, Child::None)
    }
}

/// The child of an S-Node being edited.
#[derive(Debug)]
pub(crate) enum Child {
    None,
    Hp(Hp),
    /// Not decoded: the payload range in the old buffer.
    EmbRaw(Range<usize>),
    Emb(Box<Cont>),
    Pc(Sfx, Val),
}

/// A path-compressed suffix being edited.
#[derive(Debug)]
pub(crate) enum Sfx {
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

/// Decodes the S-Node at `buf[0..]` (a copy of its bytes), whose previous sibling has key
/// `prev`. Values, suffixes and an embedded child stay byte ranges of `buf`.
pub(crate) fn decode_snode(buf: &[u8], prev: u8) -> SNode {
    let n = parse(buf, 0, prev);
    let vat = 1 + usize::from((buf[0] >> 2) & 7 == 0);
    let val = n.val.map(|v| val_from(buf, v, vat));
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
    SNode {
        key: n.key,
        val,
        child,
    }
}

/// The value of the T-Node at `buf[0..]` (a copy of its bytes): `None`, or a range of
/// `buf` (the flag and key byte and jump fields come first).
pub(crate) fn decode_tval(buf: &[u8]) -> Option<Val> {
    let n = parse(buf, 0, 0);
    let b = buf[0];
    let vat = 1
        + usize::from((b >> 2) & 7 == 0)
        + 2 * usize::from(b & 2 != 0)
        + 30 * usize::from(b & 1 != 0);
    n.val.map(|v| val_from(buf, v, vat))
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

    /// Encodes a fresh `c` as a payload into `out`. Embedded children that do not fit in
    /// 255 bytes are ejected into their own blocks.
    pub(crate) fn encode(&mut self, c: &Cont, out: &mut Vec<u8>) -> Result<()> {
        let mut prev_t = 0u8;
        for t in &c.t {
            self.encode_tnode(prev_t, t.key, 0, &[], &t.val, out);
            prev_t = t.key;
            let mut prev_s = 0u8;
            for s in &t.s {
                self.encode_snode(prev_s, s, out)?;
                prev_s = s.key;
            }
        }
        Ok(())
    }

    /// Appends a T-Node (its S-Nodes not included): flag with the type of `val`, the delta
    /// after sibling key `prev` and the jump bits `jbits` (`js`, `jt`), the key byte if not
    /// delta encoded, its jump fields `jumps` verbatim, and its value.
    pub(crate) fn encode_tnode(
        &self,
        prev: u8,
        key: u8,
        jbits: u8,
        jumps: &[u8],
        val: &Option<Val>,
        out: &mut Vec<u8>,
    ) {
        let (d, explicit) = delta(prev, key);
        out.push(node_type(val) << 6 | d << 2 | (jbits & 3));
        if explicit {
            out.push(key);
        }
        out.extend_from_slice(jumps);
        self.put_val(val, out);
    }

    /// Appends S-Node `s` (whose previous sibling has key `prev`; 0 for the first).
    pub(crate) fn encode_snode(&mut self, prev: u8, s: &SNode, out: &mut Vec<u8>) -> Result<()> {
        let (d, explicit) = delta(prev, s.key);
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
            Child::EmbRaw(r) => {
                out.push((r.len() + 1) as u8);
                out.extend_from_slice(&self.old[r.clone()]);
                C_EMB
            }
            Child::Emb(sub) => {
                let mut inner = Vec::new();
                self.encode(sub, &mut inner)?;
                if inner.len() < EMBED_MAX {
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
        Ok(())
    }

    pub(crate) fn put_val(&self, v: &Option<Val>, out: &mut Vec<u8>) {
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

    /// Sets the value of `key` (non-empty) in the fresh tree `c` to `val`.
    pub(crate) fn insert(&mut self, c: &mut Cont, key: &[u8], val: Val) -> Result<()> {
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
                t.s.insert(i, SNode::empty(key[1]));
                i
            }
        };
        self.set_in_snode(&mut t.s[si], &key[2..], val)
    }

    /// Sets the value of the key that continues with `rest` below S-Node `s` (`rest`
    /// empty: the S-Node's own value). The key's path must end at `s` or in its
    /// path-compressed child (an embedded child is entered by the caller instead).
    pub(crate) fn set_in_snode(&mut self, s: &mut SNode, rest: &[u8], val: Val) -> Result<()> {
        if rest.is_empty() {
            self.replace(&mut s.val, val);
            return Ok(());
        }
        match &mut s.child {
            Child::None => {
                s.child = Child::Pc(new_sfx(self.mm, self.txn, rest)?, val);
                Ok(())
            }
            Child::Hp(_) | Child::EmbRaw(_) => {
                unreachable!("a writer enters child containers before editing a node")
            }
            Child::Emb(c) => self.insert(c, rest, val),
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
                Ok(())
            }
        }
    }

    /// Removes the key that continues with `rest` below S-Node `s` (`rest` empty: its own
    /// value; else its path-compressed child, which must hold exactly `rest`), retiring its
    /// blocks. Returns whether it was there.
    pub(crate) fn clear_in_snode(&mut self, s: &mut SNode, rest: &[u8]) -> bool {
        if rest.is_empty() {
            return match s.val.take() {
                Some(v) => {
                    if let Some(hp) = val_block(self.old, &v) {
                        self.txn.retire(hp);
                    }
                    true
                }
                None => false,
            };
        }
        let Child::Pc(sfx, v) = &s.child else {
            return false;
        };
        if self.sfx_bytes(sfx) != rest {
            return false;
        }
        if let Some(hp) = val_block(self.old, v) {
            self.txn.retire(hp);
        }
        if let Sfx::Long(hp) = sfx {
            self.txn.retire(*hp);
        }
        s.child = Child::None;
        true
    }

    /// Sets a node's value slot, retiring the old value's block; records in the [`Txn`]
    /// whether the slot held a value.
    pub(crate) fn replace(&mut self, slot: &mut Option<Val>, val: Val) {
        self.txn.replaced |= slot.is_some();
        if let Some(old) = slot.as_ref().and_then(|v| val_block(self.old, v)) {
            self.txn.retire(old);
        }
        *slot = Some(val);
    }

    /// Retires the out-of-line block of a value slot.
    pub(crate) fn drop_val(&mut self, slot: &mut Option<Val>) {
        if let Some(old) = slot.take().and_then(|v| val_block(self.old, &v)) {
            self.txn.retire(old);
        }
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
                self.encode(c, &mut payload)?;
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
