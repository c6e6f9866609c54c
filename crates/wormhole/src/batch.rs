//! `get_many`: lookups of a batch of keys run in lockstep so that their memory accesses
//! overlap (a prefetch pipeline across keys; not in the paper).
//!
//! Each stage issues prefetches for every key of the group, then the next stage consumes
//! them: (1) the rounds of Algorithm 1, each prefetching the slot of every key's next
//! probe; (2) the matched items; (3) the sibling step, then the target leaves' header
//! lines and the tag lines at each key's home slot; (4) per key, in order: lock the leaf
//! shared, validate its version and the pending anchor check (`search::Check`), search
//! the tag array, call back, unlock. A key whose leaf turned out stale, or whose check
//! failed, falls back to a single lookup. Only one leaf lock is held at a time.

use std::sync::atomic::Ordering;

use orrery_core::api::check_key;
use orrery_core::sync;

use crate::ablation::{SORT_BY_TAG, TAG_MATCHING, has};
use crate::leaf::{LeafAccess, leaf_tag};
use crate::raw::{Pos, RawWormhole};
use crate::search::{self, Lpm, Target};

/// Keys processed in lockstep.
const GROUP: usize = 16;

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// Looks up every key of `keys` and calls `f(i, value)` in order of `i` (`None` when
    /// absent), overlapping the memory accesses of up to 16 keys at a time.
    pub(crate) fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        if !has(OPTS, TAG_MATCHING) {
            for (i, k) in keys.iter().enumerate() {
                if self.get_with(k, |v| f(i, Some(v))).is_none() {
                    f(i, None);
                }
            }
            return;
        }
        let g = sync::pin();
        let inline = self.pool.prefetch_cells();
        for (c, group) in keys.chunks(GROUP).enumerate() {
            let base = c * GROUP;
            let t = self.table(&g);
            let v = t.version;
            let mut st: [Option<Lpm>; GROUP] = [None; GROUP];
            for (s, k) in st.iter_mut().zip(group) {
                if check_key(k).is_ok() {
                    *s = Some(Lpm::new(t, k, false));
                }
            }
            // (1) Algorithm 1 in lockstep.
            loop {
                let mut active = false;
                for (s, k) in st.iter_mut().zip(group) {
                    if let Some(s) = s.as_mut().filter(|s| !s.done()) {
                        s.prepare::<OPTS>(t, k, true);
                        active = true;
                    }
                }
                if !active {
                    break;
                }
                for (s, k) in st.iter_mut().zip(group) {
                    if let Some(s) = s.as_mut().filter(|s| !s.done()) {
                        s.apply(t, k);
                    }
                }
            }
            // (2) Matched items.
            for s in st.iter().flatten() {
                s.item().prefetch();
            }
            // (3) Sibling step, leaf headers and home tag lines (they do not depend on the
            // header, see `leaf`).
            let mut tg: [Option<Target>; GROUP] = [None; GROUP];
            for ((s, k), out) in st.iter().zip(group).zip(tg.iter_mut()) {
                if let Some(s) = s {
                    *out = search::finish::<OPTS>(t, k, &self.cfg, *s, true);
                    if let Some(x) = out {
                        x.leaf.prefetch();
                        if has(OPTS, SORT_BY_TAG) {
                            x.leaf
                                .prefetch_tags(leaf_tag(x.hash), self.cfg.leaf_capacity, inline);
                        }
                    }
                }
            }
            // (4) Lock, validate, search, call back — in key order.
            for (j, k) in group.iter().enumerate() {
                let i = base + j;
                if st[j].is_none() {
                    f(i, None);
                    continue;
                }
                if let Some(x) = tg[j] {
                    // SAFETY: reached through the published table under `g`.
                    let r = unsafe { x.leaf.read() };
                    if r.hdr().version.load(Ordering::Acquire) <= v
                        && x.check.is_none_or(|c| c.holds(r.hdr(), k))
                    {
                        match self.position(&r, k, x.hash) {
                            Pos::Found(p) => f(i, Some(r.value(p))),
                            Pos::Absent { .. } => f(i, None),
                        }
                        continue;
                    }
                }
                // Stale table (a concurrent split or merge) or a failed check: single
                // lookup.
                if self.get_with(k, |val| f(i, Some(val))).is_none() {
                    f(i, None);
                }
            }
        }
    }
}
