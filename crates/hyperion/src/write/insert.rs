//! Insert (upsert) of one key: the splice planned at the key's place — a new T-Node, a
//! new or re-encoded S-Node, a value replaced, a path-compressed suffix split — then
//! applied, and the jump tables and split the write made due.

use orrery_core::api::Result;

use crate::arena::ArenaInner;
use crate::edit::{Ctx, SNode, Txn, decode_snode, decode_tval};
use crate::mm::MemoryManager;

use crate::node::cjt::next_entry_key;

use super::cjt::{REBUILD_HOPS, TMove};
use super::path::{
    CPath, SLoc, Splice, count_s_nodes, count_t_nodes, descend, hdr_len, is_s, key_at, locate,
    rehdr,
};
use super::tjt::BUILD_HOPS;

impl ArenaInner {
    /// Inserts or replaces `key` (the trie key below root `b`, non-empty) → `v`; returns
    /// whether `key` was present (a value replaced), as the insert's own descent found it.
    pub(crate) fn store_in(&mut self, b: usize, key: &[u8], v: &[u8]) -> Result<bool> {
        let mut txn = Txn::default();
        let mut tables = Vec::new();
        let r = self.store_txn(b, key, v, &mut txn, &mut tables);
        match r {
            Ok(path) => {
                let present = txn.replaced;
                txn.commit(&mut self.mm);
                if let Some(path) = path {
                    self.maybe_split(&path, path.len() - 1);
                }
                for off in tables {
                    self.build_tjt(b, key, off);
                }
                Ok(present)
            }
            Err(e) => {
                txn.abort(&mut self.mm);
                Err(e)
            }
        }
    }

    /// The insert, recorded in `txn`; returns the path it took (`None` for a new root).
    /// Adds to `tables` the key offsets of the T-Nodes (of containers' own payloads) due
    /// for a T-Node jump table.
    fn store_txn(
        &mut self,
        b: usize,
        key: &[u8],
        v: &[u8],
        txn: &mut Txn,
        tables: &mut Vec<usize>,
    ) -> Result<Option<Vec<CPath>>> {
        let Some(root) = self.roots[b].hp else {
            let mut ctx = Ctx {
                old: &[],
                mm: &mut self.mm,
                txn,
            };
            let val = crate::edit::new_val(ctx.mm, ctx.txn, v)?;
            let mut c = crate::edit::Cont::default();
            ctx.insert(&mut c, key, val)?;
            let mut payload = Vec::new();
            ctx.encode(&c, &mut payload)?;
            let hp = ctx.new_container(&payload)?;
            self.roots[b].hp = Some(hp);
            return Ok(None);
        };
        let path = descend(&self.mm, root, key);
        let ci = path.len() - 1;
        let l = *path[ci].levels.last().expect("a level");
        let sub = &key[l.off..];
        let buf = self.mm.get(path[ci].hp);
        let loc = locate(buf, &l, sub[0], sub.get(1).copied());
        let n = path[ci].levels.len();
        // T-Node jump tables (§3.3) for the T-Nodes of the containers' own payloads whose
        // S-Nodes this writer scanned at length — or, where it adds an S-Node to a T-Node
        // without a table, whose group this makes long: a writer inserting in front of
        // what it would pass (descending keys) passes nothing, and its T-Node would never
        // get a table that every later search needs. Counting the group's S-Nodes after
        // the new one stops at the threshold, so a writer never counts more than
        // `BUILD_HOPS` S-Nodes in all.
        let group_s = match (&loc.t_end, &loc.s) {
            (Some(_), Some(s)) if n == 1 && s.se.is_none() && buf[loc.ts] & 1 == 0 => {
                let limit = BUILD_HOPS.saturating_sub(loc.s_hops + 1);
                loc.s_hops + 1 + count_s_nodes(buf, s.ss, l.end, limit)
            }
            _ => loc.s_hops,
        };
        // Likewise the container jump table (§3.3) of an extended container that gets a
        // new T-Node: rebuilt when the T-Nodes from the table's entry below the new one to
        // its next entry (or the end) reach `REBUILD_HOPS` — the T-Nodes a search passes.
        let cjt_due = n == 1
            && loc.t_end.is_none()
            && MemoryManager::is_extended(path[ci].hp)
            && loc.hops
                + 1
                + count_t_nodes(
                    buf,
                    loc.ts,
                    l.end,
                    loc.prev_t,
                    next_entry_key(buf, sub[0]),
                    REBUILD_HOPS.saturating_sub(loc.hops + 1),
                )
                >= REBUILD_HOPS;
        for (i, c) in path.iter().enumerate() {
            let hops = if i == ci && n == 1 {
                group_s
            } else {
                c.levels[0].s_hops
            };
            if hops >= BUILD_HOPS {
                tables.push(c.levels[0].off);
            }
        }
        // Jump successors (§3.3) are kept on the T-Nodes of a container's own payload
        // (embedded containers are at most 255 bytes): a T-Node gets one when its second
        // S-Node arrives (the paper's default threshold, 2).
        let add_js = n == 1
            && matches!((&loc.t_end, &loc.s), (Some(te), Some(SLoc { se: None, .. }))
                if buf[loc.ts] & 2 == 0 && *te < l.end && is_s(buf[*te]));
        // Copy what the plan reads of the block, so the block is not borrowed while the
        // context allocates.
        let (a, b_end, scratch, next) = match (&loc.t_end, &loc.s) {
            (Some(te), _) if sub.len() == 1 => (loc.ts, *te, buf[loc.ts..*te].to_vec(), None),
            (Some(_), Some(s)) => match s.se {
                Some(se) => (s.ss, se, buf[s.ss..se].to_vec(), None),
                None if add_js => {
                    // The T-Node gets its second S-Node: re-encode it with a jump
                    // successor (set after the splice), its S-Nodes before `ss` follow.
                    let next = (s.ss < l.end && is_s(buf[s.ss])).then(|| {
                        let k = key_at(buf, s.ss, s.prev_s);
                        let mut h = Vec::new();
                        let n = rehdr(buf, s.ss, k, sub[1], &mut h);
                        (n, h)
                    });
                    (loc.ts, s.ss, buf[loc.ts..s.ss].to_vec(), next)
                }
                None => {
                    let next = (s.ss < l.end && is_s(buf[s.ss])).then(|| {
                        let k = key_at(buf, s.ss, s.prev_s);
                        let mut h = Vec::new();
                        let n = rehdr(buf, s.ss, k, sub[1], &mut h);
                        (n, h)
                    });
                    (s.ss, s.ss, Vec::new(), next)
                }
            },
            _ => {
                let next = (loc.ts < l.end).then(|| {
                    let k = key_at(buf, loc.ts, loc.prev_t);
                    let mut h = Vec::new();
                    let n = rehdr(buf, loc.ts, k, sub[0], &mut h);
                    (n, h)
                });
                (loc.ts, loc.ts, Vec::new(), next)
            }
        };
        let mut ctx = Ctx {
            old: &scratch,
            mm: &mut self.mm,
            txn,
        };
        let val = crate::edit::new_val(ctx.mm, ctx.txn, v)?;
        let mut bytes = Vec::with_capacity(scratch.len() + 16);
        let mut b_end = b_end;
        match (&loc.t_end, &loc.s) {
            (Some(_), _) if sub.len() == 1 => {
                // The T-Node exists: re-encode it with the new value.
                let f = scratch[0];
                let h = hdr_len(f);
                let jl = 2 * usize::from(f & 2 != 0) + 30 * usize::from(f & 1 != 0);
                let mut slot = decode_tval(&scratch);
                ctx.replace(&mut slot, val);
                ctx.encode_tnode(
                    loc.prev_t,
                    sub[0],
                    f & 3,
                    &scratch[h..h + jl],
                    &slot,
                    &mut bytes,
                );
            }
            (Some(_), Some(s)) => {
                if add_js {
                    let f = scratch[0];
                    let h = hdr_len(f);
                    bytes.extend_from_slice(&scratch[..h]);
                    bytes[0] |= 2;
                    bytes.extend_from_slice(&[0, 0]);
                    bytes.extend_from_slice(&scratch[h..]);
                    debug_assert_eq!(bytes.len(), scratch.len() + 2);
                }
                let mut sn = match s.se {
                    Some(_) => decode_snode(&scratch, s.prev_s),
                    None => SNode::empty(sub[1]),
                };
                ctx.set_in_snode(&mut sn, &sub[2..], val)?;
                ctx.encode_snode(s.prev_s, &sn, &mut bytes)?;
                if let Some((n, h)) = &next {
                    bytes.extend_from_slice(h);
                    b_end += n;
                }
            }
            _ => {
                // A new T-Node (and S-Node) before the T-Node at the insertion point.
                if sub.len() == 1 {
                    ctx.encode_tnode(loc.prev_t, sub[0], 0, &[], &Some(val), &mut bytes);
                } else {
                    ctx.encode_tnode(loc.prev_t, sub[0], 0, &[], &None, &mut bytes);
                    let mut sn = SNode::empty(sub[1]);
                    ctx.set_in_snode(&mut sn, &sub[2..], val)?;
                    ctx.encode_snode(0, &sn, &mut bytes)?;
                }
                if let Some((n, h)) = &next {
                    bytes.extend_from_slice(h);
                    b_end += n;
                }
            }
        }
        let t = loc.ts;
        let tmove = match (&loc.t_end, &loc.s) {
            (Some(_), _) if sub.len() == 1 => TMove::Keep,
            (Some(_), Some(_)) if add_js => TMove::Keep,
            (Some(_), Some(_)) => TMove::Before,
            _ => match &next {
                Some((_, h)) => TMove::Insert(bytes.len() - h.len()),
                None => TMove::Before,
            },
        };
        self.apply(
            txn,
            &path,
            ci,
            n,
            Splice {
                a,
                b: b_end,
                bytes,
                t,
                tmove,
            },
            true,
        )?;
        if loc.hops >= REBUILD_HOPS || cjt_due {
            self.rebuild_cjt(path[ci].hp);
        }
        Ok(Some(path))
    }
}
