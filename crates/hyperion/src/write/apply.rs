//! Applying a splice in place: ejection of embedded containers that outgrow 255 bytes,
//! the tail shifted within the exact-fit block, the embedded size bytes, the header, the
//! container jump table's entries and the jump fields, and the move to a block of the new
//! exact fit (an extended block regrown behind its pointer, a chunk moved and its parent
//! relinked).

use orrery_core::api::Result;

use crate::arena::ArenaInner;
use crate::edit::{Ctx, Txn};
use crate::mm::{Hp, MemoryManager, capacity_for};
use crate::node::{C_EMB, C_HP, EMBED_MAX, set_used, used};

use super::cjt::{self, TMove};
use super::path::{CPath, Splice, fix_jumps, shift_jumps};

impl ArenaInner {
    /// Applies splice `sp` to level `n - 1` of container `path[ci]`: ejects embedded
    /// containers that outgrow 255 bytes (and, on an `insert` into a container over the
    /// ejection threshold, the outermost embedded container on the path), shifts the
    /// tail, updates the embedded size bytes and the header, and moves the container to
    /// a block of its new exact fit when needed. Fails (changing nothing) only when a
    /// block for an insert cannot be had.
    pub(crate) fn apply(
        &mut self,
        txn: &mut Txn,
        path: &[CPath],
        ci: usize,
        mut n: usize,
        mut sp: Splice,
        insert: bool,
    ) -> Result<()> {
        let hp = path[ci].hp;
        let levels = &path[ci].levels;
        let used0 = used(self.mm.get(hp));
        let mut force = insert && used0 > self.eject_threshold;
        loop {
            let delta = sp.bytes.len() as isize - (sp.b - sp.a) as isize;
            let mut ej = (1..n).rev().find(|&j| {
                (levels[j].end - levels[j].start) as isize + delta + 1 > EMBED_MAX as isize
            });
            if ej.is_none() && force && n > 1 && delta > 0 {
                ej = Some(1);
            }
            force = false;
            let Some(j) = ej else { break };
            let l = levels[j];
            let (flag_at, size_at) = l.emb.expect("an embedded level");
            let buf = self.mm.get(hp);
            let mut payload = Vec::with_capacity((l.end - l.start) + sp.bytes.len());
            payload.extend_from_slice(&buf[l.start..sp.a]);
            payload.extend_from_slice(&sp.bytes);
            payload.extend_from_slice(&buf[sp.b..l.end]);
            for inner in &levels[j + 1..n] {
                let (_, size_at) = inner.emb.expect("an embedded level");
                payload[size_at - l.start] = ((inner.end - inner.start) as isize + delta + 1) as u8;
            }
            debug_assert_eq!(buf[flag_at] & 3, C_EMB);
            let mut bytes = Vec::with_capacity(size_at - flag_at + 5);
            bytes.push((buf[flag_at] & !3) | C_HP);
            bytes.extend_from_slice(&buf[flag_at + 1..size_at]);
            let mut ctx = Ctx {
                old: &[],
                mm: &mut self.mm,
                txn,
            };
            let child = ctx.new_container(&payload)?;
            bytes.extend_from_slice(&child.to_bytes());
            sp = Splice {
                a: flag_at,
                b: l.end,
                bytes,
                t: levels[j - 1].t_at,
                tmove: TMove::Before,
            };
            n = j;
        }
        let delta = sp.bytes.len() as isize - (sp.b - sp.a) as isize;
        let new_used = (used0 as isize + delta) as usize;
        let cap = self.mm.capacity(hp);
        let ext = MemoryManager::is_extended(hp);
        let fits = if ext {
            crate::mm::extended_capacity(new_used) == cap
        } else {
            capacity_for(new_used) == cap
        };
        // Writes the container's new bytes into `dst` from its old bytes `src`.
        let write = |src: &[u8], dst: &mut [u8], same: bool| {
            if same {
                dst.copy_within(sp.b..used0, sp.a + sp.bytes.len());
            } else {
                dst[..sp.a].copy_from_slice(&src[..sp.a]);
                dst[sp.a + sp.bytes.len()..new_used].copy_from_slice(&src[sp.b..used0]);
            }
            dst[sp.a..sp.a + sp.bytes.len()].copy_from_slice(&sp.bytes);
            for l in &levels[1..n] {
                let (_, size_at) = l.emb.expect("an embedded level");
                dst[size_at] = ((l.end - l.start) as isize + delta + 1) as u8;
            }
            set_used(dst, new_used);
            let tmove = if n == 1 { sp.tmove } else { TMove::Before };
            cjt::shift(dst, sp.a, sp.b, delta, tmove);
            // The jump fields (successors, T-Node tables) of the T-Nodes whose groups the
            // splice changed.
            let top_t = if n == 1 { sp.t } else { levels[0].t_at };
            let until = if n == 1 {
                sp.a + sp.bytes.len()
            } else {
                top_t + 1
            };
            // A splice inside one T-Node's group (an S-Node inserted, replaced or removed,
            // or any splice inside an embedded container below one of its S-Nodes) moves
            // that T-Node's jump fields by `delta` (`shift_jumps`); anything else walks
            // the groups.
            #[cfg(debug_assertions)]
            let walked = {
                let mut w = dst[..new_used].to_vec();
                fix_jumps(&mut w, top_t, until, new_used);
                w
            };
            let shifted =
                top_t < sp.a && shift_jumps(dst, top_t, (sp.a, sp.b, sp.a + sp.bytes.len()), delta);
            if !shifted {
                fix_jumps(dst, top_t, until, new_used);
            }
            #[cfg(test)]
            super::path::SHIFTED.with(|c| c.set(c.get() + usize::from(shifted)));
            #[cfg(debug_assertions)]
            debug_assert!(
                dst[..new_used] == walked[..],
                "jump fields shifted ({shifted}) differ from a walk's"
            );
        };
        // A chunk in the sparse upper half of a bin moves even when it fits, so that the
        // bin can shrink (`mm`, "Giving memory back").
        if fits && (ext || !self.mm.should_move(hp)) {
            write(&[], self.mm.get_mut(hp), true);
            return Ok(());
        }
        // A shrinking container that cannot have its smaller block stays where it is.
        if ext {
            let r = self
                .mm
                .regrow(hp, new_used, |src, dst| write(src, dst, false));
            return match r {
                Err(_) if new_used <= cap => {
                    write(&[], self.mm.get_mut(hp), true);
                    Ok(())
                }
                r => r,
            };
        }
        let to = match txn.alloc(&mut self.mm, new_used) {
            Ok(to) => to,
            Err(_) if new_used <= cap => {
                write(&[], self.mm.get_mut(hp), true);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let old = self.mm.get(hp)[..used0].to_vec();
        write(&old, self.mm.get_mut(to), false);
        txn.retire(hp);
        self.relink(path, ci, to);
        Ok(())
    }

    /// Points the parent of `path[i]` (or the trie root) at `to`.
    pub(crate) fn relink(&mut self, path: &[CPath], i: usize, to: Hp) {
        if i == 0 {
            let r = self
                .roots
                .iter_mut()
                .find(|r| r.hp == Some(path[0].link))
                .expect("the path starts at a root");
            r.hp = Some(to);
            return;
        }
        let at = path[i].at.expect("a child container has a parent pointer");
        self.mm.get_mut(path[i - 1].hp)[at..at + Hp::BYTES].copy_from_slice(&to.to_bytes());
    }
}
