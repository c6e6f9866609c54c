//! Removal of one key: the splice that clears it, pruning the nodes, embedded
//! containers and containers it leaves empty (a split container's parts voided or the
//! chain freed). Never fails: a removal only shrinks.

use crate::arena::ArenaInner;
use crate::edit::{Ctx, Txn, decode_snode, decode_tval};
use crate::mm::{CHAIN_SLOTS, Hp};
use crate::node::{cjt, parse, tjt, used};

use super::cjt::TMove;
use super::path::{CPath, Level, Splice, descend, hdr_len, is_s, key_at, locate, rehdr};
use super::tjt::DROP_BELOW;

/// What happens to a container a removal empties.
enum Retire {
    /// Freed: its parent's pointer goes.
    Gone,
    /// A split container's part whose slot is made void.
    Voided,
    /// A split container's first part, kept empty.
    Keep,
}

/// What a removal clears at the node its key bytes name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clear {
    /// The key (its value, or its path-compressed suffix).
    Key,
    /// The S-Node's child (an emptied embedded or child container).
    Child,
}
impl ArenaInner {
    /// Removes `key` (the trie key below root `b`, non-empty; present). Never fails.
    pub(crate) fn delete_in(&mut self, b: usize, key: &[u8]) {
        let Some(root) = self.roots[b].hp else {
            return;
        };
        let path = descend(&self.mm, root, key);
        let mut txn = Txn::default();
        let mut ci = path.len() - 1;
        let mut n = path[ci].levels.len();
        let mut what = Clear::Key;
        // The key offset of a T-Node whose jump table the removal thins out (`tjt.rs`).
        let mut thin = None;
        loop {
            let l = path[ci].levels[n - 1];
            let sub = if what == Clear::Key {
                &key[l.off..]
            } else {
                &key[l.off..l.off + 2]
            };
            let mut thinned = false;
            let plan = self.plan_remove(&mut txn, path[ci].hp, l, sub, what, &mut thinned);
            if thinned {
                thin = Some(l.off);
            }
            let Some(sp) = plan else {
                break;
            };
            let emptied = l.end - l.start + sp.bytes.len() == sp.b - sp.a;
            if !emptied {
                // Cannot fail: a shrinking splice allocates only optionally.
                let _ = self.apply(&mut txn, &path, ci, n, sp, false);
                break;
            }
            what = Clear::Child;
            if n > 1 {
                n -= 1;
                continue;
            }
            // The container is empty: free it and clear its parent's pointer (a part of a
            // split container only when the whole chain is then empty).
            match self.retire_container(&mut txn, &path[ci]) {
                Retire::Gone => {}
                Retire::Voided => break,
                Retire::Keep => {
                    let _ = self.apply(&mut txn, &path, ci, n, sp, false);
                    break;
                }
            }
            if ci == 0 {
                self.roots[b].hp = None;
                break;
            }
            ci -= 1;
            n = path[ci].levels.len();
        }
        txn.commit(&mut self.mm);
        if let Some(off) = thin {
            self.drop_tjt(b, key, off);
        }
    }

    /// Retires the container of `c`, which a removal empties; returns whether its parent's
    /// pointer must go. A part of a split container: a part other than the first is freed
    /// and its slot made void (its key range falls to the part below); the first part
    /// stays (empty) while other parts exist; when none remains the whole chain goes.
    fn retire_container(&mut self, txn: &mut Txn, c: &CPath) -> Retire {
        if c.hp == c.link && !self.mm.is_chain(c.link) {
            txn.retire(c.hp);
            return Retire::Gone;
        }
        let (base, slot) = c.hp.chain_of();
        let others = (1..CHAIN_SLOTS).any(|i| i != slot && !self.mm.is_void(base.slot(i)));
        if others && slot == 0 {
            return Retire::Keep;
        }
        let first = self.mm.get(base);
        if others || (slot != 0 && used(first) > cjt::payload_start(first)) {
            txn.retire_slot(c.hp);
            return Retire::Voided;
        }
        txn.retire_chain(base);
        Retire::Gone
    }

    /// The splice that clears `what` at `sub` in level `l` of container `hp`, pruning the
    /// nodes left empty; `None` when there is nothing to clear. Sets `thin` when the
    /// key's T-Node has a jump table and fewer than [`DROP_BELOW`] other S-Nodes that are
    /// not placeholders.
    fn plan_remove(
        &mut self,
        txn: &mut Txn,
        hp: Hp,
        l: Level,
        sub: &[u8],
        what: Clear,
        thin: &mut bool,
    ) -> Option<Splice> {
        let buf = self.mm.get(hp);
        let loc = locate(buf, &l, sub[0], sub.get(1).copied());
        let t_end = loc.t_end?;
        let mut bytes = Vec::new();
        // Deleting the whole T-Node `[ts, end)`: the next T-Node's header is re-encoded.
        let drop_t = |end: usize, bytes: &mut Vec<u8>| {
            let mut b = end;
            let mut next = None;
            if end < l.end {
                let k = key_at(buf, end, key_at(buf, loc.ts, loc.prev_t));
                b += rehdr(buf, end, k, loc.prev_t, bytes);
                next = Some(k);
            }
            Splice {
                a: loc.ts,
                b,
                bytes: std::mem::take(bytes),
                t: loc.ts,
                tmove: TMove::Delete(next),
            }
        };
        let scratch_t = buf[loc.ts..t_end].to_vec();
        let has_s = t_end < l.end && is_s(buf[t_end]);
        // A T-Node with a jump table (`tjt.rs`): the end of its group, and whether it has
        // how many S-Nodes other than the one at `except` are not placeholders.
        let table = buf[loc.ts] & 1 != 0;
        let group = |except: usize| {
            let (mut p, mut real) = (t_end, 0);
            while p < l.end && is_s(buf[p]) {
                real += usize::from(p != except && !tjt::is_placeholder(buf[p]));
                p = parse(buf, p, 0).next;
            }
            (p, real)
        };
        if sub.len() == 1 {
            let mut slot = decode_tval(&scratch_t);
            slot.as_ref()?;
            let (g_end, real) = if table {
                let (g_end, real) = group(usize::MAX);
                (g_end, real > 0)
            } else {
                (t_end, has_s)
            };
            if !real {
                let sp = drop_t(g_end, &mut bytes);
                let mut ctx = Ctx {
                    old: &scratch_t,
                    mm: &mut self.mm,
                    txn,
                };
                ctx.drop_val(&mut slot);
                return Some(sp);
            }
            let f = scratch_t[0];
            let h = hdr_len(f);
            let jl = 2 * usize::from(f & 2 != 0) + 30 * usize::from(f & 1 != 0);
            let (a, b) = (loc.ts, t_end);
            let mut ctx = Ctx {
                old: &scratch_t,
                mm: &mut self.mm,
                txn,
            };
            ctx.drop_val(&mut slot);
            ctx.encode_tnode(
                loc.prev_t,
                sub[0],
                f & 3,
                &scratch_t[h..h + jl],
                &None,
                &mut bytes,
            );
            return Some(Splice {
                a,
                b,
                bytes,
                t: loc.ts,
                tmove: TMove::Keep,
            });
        }
        let s = loc.s?;
        let se = s.se?;
        let scratch = buf[s.ss..se].to_vec();
        let (g_end, only) = if table {
            let (g_end, real) = group(s.ss);
            *thin = real < DROP_BELOW;
            (g_end, real == 0)
        } else {
            (se, s.ss == t_end && !(se < l.end && is_s(buf[se])))
        };
        let t_has_val = decode_tval(&scratch_t).is_some();
        let next_s = (se < l.end && is_s(buf[se])).then(|| {
            let k = key_at(buf, se, sub[1]);
            let mut h = Vec::new();
            let n = rehdr(buf, se, k, s.prev_s, &mut h);
            (n, h)
        });
        let drop_whole_t = only && !t_has_val;
        let t_sp = drop_whole_t.then(|| drop_t(g_end, &mut bytes));
        let mut ctx = Ctx {
            old: &scratch,
            mm: &mut self.mm,
            txn,
        };
        let mut sn = decode_snode(&scratch, s.prev_s);
        match what {
            Clear::Key => {
                if !ctx.clear_in_snode(&mut sn, &sub[2..]) {
                    return None;
                }
            }
            Clear::Child => sn.child = crate::edit::Child::None,
        }
        // An emptied destination of the T-Node's jump table stays as a placeholder.
        let placeholder = t_sp.is_none() && table && tjt::is_destination(sn.key);
        if !sn.is_empty() || placeholder {
            let mut bytes = Vec::new();
            // Re-encoding a node without adding anything allocates nothing.
            ctx.encode_snode(s.prev_s, &sn, &mut bytes).ok()?;
            return Some(Splice {
                a: s.ss,
                b: se,
                bytes,
                t: loc.ts,
                tmove: TMove::Before,
            });
        }
        if let Some(sp) = t_sp {
            return Some(sp);
        }
        let (mut b, mut bytes) = (se, Vec::new());
        if let Some((n, h)) = next_s {
            b += n;
            bytes = h;
        }
        Some(Splice {
            a: s.ss,
            b,
            bytes,
            t: loc.ts,
            tmove: TMove::Before,
        })
    }
}
