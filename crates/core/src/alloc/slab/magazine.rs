//! The two ways a slab pool hands free slots around without a lock: a [`Magazine`] (a
//! list of free slots linked through their first word) and a [`Run`] (a range of never
//! used slots, bump-allocated).

use std::ptr::{self, NonNull};

/// A singly linked list of free slots, linked through their first word.
#[derive(Clone, Copy)]
pub(in crate::alloc) struct Magazine {
    pub(in crate::alloc) head: *mut u8,
    pub(in crate::alloc) count: usize,
}

impl Magazine {
    pub(in crate::alloc) const EMPTY: Magazine = Magazine {
        head: ptr::null_mut(),
        count: 0,
    };

    /// Takes the first slot.
    ///
    /// # Safety
    ///
    /// 1. `self.count > 0`.
    /// 2. The magazine's slots are free slots of a pool that is still alive, linked by
    ///    [`push`](Self::push), and nobody else uses them.
    #[inline]
    pub(in crate::alloc) unsafe fn pop(&mut self) -> NonNull<u8> {
        debug_assert!(self.count > 0);
        let slot = self.head;
        // SAFETY: by (1) `slot` is the first of the free slots of (2): inside a live chunk,
        // aligned to at least 8 bytes and at least 8 bytes long, its first word holding the
        // link `push` wrote. Nobody else accesses a free slot in a magazine we own.
        self.head = unsafe { slot.cast::<*mut u8>().read() };
        self.count -= 1;
        // SAFETY: slots are addresses inside chunks, never null.
        unsafe { NonNull::new_unchecked(slot) }
    }

    /// Adds `slot` as the first slot.
    ///
    /// # Safety
    ///
    /// `slot` is a slot of the same live pool as the magazine's other slots, no longer used
    /// by anyone (it becomes the magazine's).
    #[inline]
    pub(in crate::alloc) unsafe fn push(&mut self, slot: NonNull<u8>) {
        // SAFETY: by the contract the slot is ours; it is inside a live chunk, aligned to at
        // least 8 bytes and at least 8 bytes long, so its first word can hold the link.
        unsafe { slot.as_ptr().cast::<*mut u8>().write(self.head) };
        self.head = slot.as_ptr();
        self.count += 1;
    }
}

/// A range of never-used slots: `left` slots starting at `next`.
#[derive(Clone, Copy)]
pub(in crate::alloc) struct Run {
    pub(in crate::alloc) next: *mut u8,
    pub(in crate::alloc) left: usize,
}

impl Run {
    pub(in crate::alloc) const EMPTY: Run = Run {
        next: ptr::null_mut(),
        left: 0,
    };

    /// The next never-used slot, if any. Touches no memory.
    #[inline]
    pub(in crate::alloc) fn take(&mut self, slot: usize) -> Option<NonNull<u8>> {
        if self.left == 0 {
            return None;
        }
        let p = self.next;
        self.next = p.wrapping_add(slot);
        self.left -= 1;
        NonNull::new(p)
    }
}
