//! The RCU'd pair of MetaTrieHTs (§2.5): the published table that readers search, and the
//! shadow table that the writer mutex owns, with the change the shadow still lacks.
//!
//! Readers load the published pointer under an epoch guard and never lock anything here.
//! A split or merge (`smo`) takes the writer mutex through [`Tables::lock_writer`], which
//! first catches the shadow up (waits for the grace period of its readers, then replays
//! the pending change, or copies the published table when the caller is pinned itself),
//! applies its own change to the shadow, and [`Tables::publish`]es it with one pointer
//! swap; the old published table becomes the shadow. The full protocol, with the lock
//! order, is in the `smo` module docs.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};

use orrery_core::Error;
use orrery_core::sync::epoch::{self, GracePeriod};
use orrery_core::sync::{self, Guard};

use crate::leaf::LeafPtr;
use crate::meta::MetaTable;

/// A structural change, kept to replay on the shadow table once its readers drained.
pub(crate) enum Change {
    Insert {
        anchor: Box<[u8]>,
        leaf: LeafPtr,
        prev: LeafPtr,
        next: Option<LeafPtr>,
    },
    Remove {
        anchor: Box<[u8]>,
        leaf: LeafPtr,
        prev: LeafPtr,
        next: Option<LeafPtr>,
    },
    /// The leaf `old` (anchor `anchor`) moved to the block `new` (`smo`, "Moving leaves").
    Replace {
        anchor: Box<[u8]>,
        old: LeafPtr,
        new: LeafPtr,
    },
}

impl Change {
    /// Applies the change to `t`: all of it, or (on [`Error::OutOfMemory`], when an
    /// insertion cannot make room) nothing.
    fn apply(&self, t: &mut MetaTable) -> Result<(), Error> {
        match self {
            Change::Insert {
                anchor,
                leaf,
                prev,
                next,
            } => {
                t.reserve(anchor.len() + 1)?;
                t.insert_anchor(anchor, *leaf, *prev, *next);
            }
            Change::Remove {
                anchor,
                leaf,
                prev,
                next,
            } => t.remove_anchor(anchor, *leaf, *prev, *next),
            Change::Replace { anchor, old, new } => t.replace_leaf(anchor, *old, *new),
        }
        Ok(())
    }
}

/// State owned by the MetaTrieHT writer mutex.
pub(crate) struct Writer {
    /// The unpublished table (`T2`), owned (from `Box::into_raw`).
    shadow: *mut MetaTable,
    /// The change the shadow still lacks.
    pending: Option<Change>,
    /// Started when the shadow was unpublished: over once no reader can still see it.
    grace: GracePeriod,
}

// SAFETY: the shadow table is owned by the writer state, which the mutex serializes.
unsafe impl Send for Writer {}

impl Writer {
    /// The shadow table, writable: only called once `grace` was observed over (or before
    /// the first publish), when no reader can see it.
    pub(crate) fn shadow_mut(&mut self) -> &mut MetaTable {
        // SAFETY: owned pointer; exclusive through `&mut self` (mutex) and unreadable by
        // readers per the protocol in the `smo` module docs.
        unsafe { &mut *self.shadow }
    }

    /// The shadow table (validation only).
    pub(crate) fn shadow_ref(&self) -> &MetaTable {
        // SAFETY: owned pointer, read-only use.
        unsafe { &*self.shadow }
    }
}

/// The published MetaTrieHT and the writer mutex guarding the shadow.
pub(crate) struct Tables {
    /// The published MetaTrieHT (from `Box::into_raw`).
    current: AtomicPtr<MetaTable>,
    /// The MetaTrieHT writer mutex and the shadow table.
    writer: Mutex<Writer>,
}

impl Tables {
    /// Two tables: `published` is searched by readers, `shadow` is the writer's.
    pub(crate) fn new(published: Box<MetaTable>, shadow: Box<MetaTable>) -> Tables {
        Tables {
            current: AtomicPtr::new(Box::into_raw(published)),
            writer: Mutex::new(Writer {
                shadow: Box::into_raw(shadow),
                pending: None,
                grace: GracePeriod::new(),
            }),
        }
    }

    /// The published table, alive for the guard's lifetime.
    #[inline]
    pub(crate) fn published<'g>(&self, _guard: &'g Guard) -> &'g MetaTable {
        // SAFETY: the published pointer is always a live table; a table stops being
        // published only by a swap, after which the writer writes it only once every
        // guard pinned before the swap was dropped (`smo`), and tables are freed only when
        // the index is dropped or, copied, through the epoch scheme (`lock_writer`).
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// The published table, stable while the caller holds the writer mutex (`_w`).
    pub(crate) fn published_locked<'w>(&self, _w: &'w MutexGuard<'_, Writer>) -> &'w MetaTable {
        // SAFETY: under the writer mutex the published table is neither swapped nor freed.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// The writer mutex, caught up as far as memory allows (validation checks the shadow
    /// only when it is caught up).
    pub(crate) fn lock_writer_for_validation(&self) -> MutexGuard<'_, Writer> {
        self.lock_writer()
            .unwrap_or_else(|_| self.writer.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Takes the writer mutex (the caller is unpinned and holds no leaf lock) and catches
    /// up the shadow table.
    ///
    /// Fails with [`Error::OutOfMemory`] when catching up needs memory that cannot be had
    /// (the replayed insertion must make room, or the shadow must be copied): the mutex is
    /// released and the change stays pending, to be replayed by the next writer. The
    /// published table is complete either way, so readers are unaffected.
    pub(crate) fn lock_writer(&self) -> Result<MutexGuard<'_, Writer>, Error> {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(change) = w.pending.take() {
            if !w.grace.is_over() && epoch::is_pinned() {
                // The caller holds a guard of the shared epoch scheme (e.g. a wrapper that
                // pins around index calls): waiting for the shadow's readers could wait on
                // our own pin forever. Replace the shadow by a fresh copy of the published
                // table (which already has `change`) and retire the old one through the
                // epoch scheme instead.
                let fresh = match self.published_locked(&w).duplicate() {
                    Ok(t) => t,
                    Err(e) => {
                        w.pending = Some(change);
                        return Err(e);
                    }
                };
                let old = std::mem::replace(&mut w.shadow, Box::into_raw(Box::new(fresh)));
                let g = sync::pin();
                // SAFETY: `old` came from `Box::into_raw` and is unreachable: it is neither
                // published nor the shadow any more; readers that still see it were pinned
                // before this call. Dropping a table on another thread is sound (`Send`).
                unsafe { g.defer_destroy(old) };
                g.flush();
                w.grace = GracePeriod::new();
                drop(change);
            } else {
                // Usually over already (the readers of the previous table left while the
                // leaves were written since the last publish): a few loads, no barrier.
                w.grace.wait();
                let sh = w.shadow_mut();
                if let Err(e) = change.apply(sh) {
                    w.pending = Some(change);
                    return Err(e);
                }
            }
            let v = self.published_locked(&w).version;
            w.shadow_mut().version = v;
        }
        Ok(w)
    }

    /// Publishes the shadow table with version `v` and makes the old table the shadow;
    /// `change` is what the old table lacks. Returns the bytes of the new published table.
    pub(crate) fn publish(&self, w: &mut Writer, v: u64, change: Change) -> usize {
        w.shadow_mut().version = v;
        let new_bytes = w.shadow_mut().bytes();
        let old = self.current.swap(w.shadow, Ordering::AcqRel);
        // The old table becomes the shadow: readers may still read it; the writer only
        // writes it again once the grace period started here is over (the next writer
        // checks it). The caller's own guard is one of the critical sections it waits for:
        // it ends when the split or merge returns.
        w.shadow = old;
        w.pending = Some(change);
        w.grace.start();
        new_bytes
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        let w = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: no reader exists (`&mut self`); the shadow came from `Box::into_raw`.
        drop(unsafe { Box::from_raw(w.shadow) });
        // SAFETY: the published table came from `Box::into_raw` and has no readers.
        drop(unsafe { Box::from_raw(*self.current.get_mut()) });
    }
}
