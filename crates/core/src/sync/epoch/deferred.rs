//! Type-erased deferred functions ([`Deferred`]) and fixed-capacity bags of them ([`Bag`]).
//!
//! A [`Deferred`] is a function pointer plus three words of inline storage: closures that fit
//! (a `Box::from_raw` of one pointer, a slab `free` of pointer + pool) are stored without an
//! allocation; larger ones are boxed.

use std::mem::{MaybeUninit, align_of, size_of};

/// Inline storage of a [`Deferred`]: three machine words.
type Data = [usize; 3];

/// A `FnOnce()` waiting to run, type-erased.
///
/// Dropping a `Deferred` without [`call`](Deferred::call) leaks the closure (it never runs
/// twice and never runs implicitly): [`Bag`] is what guarantees it runs exactly once.
pub(super) struct Deferred {
    /// Runs (and consumes) the closure stored in `data`.
    call: unsafe fn(*mut Data),
    data: MaybeUninit<Data>,
}

// SAFETY: a `Deferred` is built only by `Guard::defer` (closure `Send + 'static`),
// `Guard::defer_destroy` and `Guard::defer_unchecked`, whose `# Safety` contracts make the
// caller promise that running the closure on another thread is sound.
unsafe impl Send for Deferred {}

/// Runs an `F` stored inline.
///
/// # Safety
/// `data` holds an `F` written by [`Deferred::new`] that has not been read since.
unsafe fn call_inline<F: FnOnce()>(data: *mut Data) {
    // SAFETY: per the contract `data` holds a valid `F`, moved out exactly once here.
    let f: F = unsafe { data.cast::<F>().read() };
    f();
}

/// Runs an `F` stored in a box whose pointer is stored inline.
///
/// # Safety
/// `data` holds a `*mut F` from `Box::into_raw`, written by [`Deferred::new`] and not read
/// since.
unsafe fn call_boxed<F: FnOnce()>(data: *mut Data) {
    // SAFETY: per the contract `data` holds the box pointer, read exactly once here.
    let raw: *mut F = unsafe { data.cast::<*mut F>().read() };
    // SAFETY: `raw` came from `Box::into_raw` and is reclaimed once, here.
    let f: Box<F> = unsafe { Box::from_raw(raw) };
    f();
}

impl Deferred {
    /// Stores `f` (inline if it fits, else boxed).
    pub(super) fn new<F: FnOnce()>(f: F) -> Deferred {
        let mut data = MaybeUninit::<Data>::uninit();
        if size_of::<F>() <= size_of::<Data>() && align_of::<F>() <= align_of::<Data>() {
            // SAFETY: `F` fits in `Data` in size and alignment (checked just above) and
            // `data` is a fresh, exclusively owned buffer.
            unsafe { data.as_mut_ptr().cast::<F>().write(f) };
            Deferred {
                call: call_inline::<F>,
                data,
            }
        } else {
            let raw = Box::into_raw(Box::new(f));
            // SAFETY: a pointer fits in `Data` and `data` is fresh and exclusively owned.
            unsafe { data.as_mut_ptr().cast::<*mut F>().write(raw) };
            Deferred {
                call: call_boxed::<F>,
                data,
            }
        }
    }

    /// Runs the closure.
    pub(super) fn call(mut self) {
        let call = self.call;
        // SAFETY: `call` was paired with what `new` wrote into `data`; `self` is consumed,
        // so the closure is read at most once.
        unsafe { call(self.data.as_mut_ptr()) }
    }
}

/// How many deferred functions a bag holds. Small under Miri so that tests exercise sealing,
/// the global queue and collection with few objects.
pub(super) const BAG_CAPACITY: usize = if cfg!(miri) { 4 } else { 64 };

/// A fixed-capacity bag of deferred functions. Dropping the bag runs every function it
/// still holds, exactly once.
pub(super) struct Bag {
    len: usize,
    items: [MaybeUninit<Deferred>; BAG_CAPACITY],
}

impl Bag {
    /// An empty bag.
    pub(super) fn new() -> Bag {
        Bag {
            len: 0,
            items: [const { MaybeUninit::uninit() }; BAG_CAPACITY],
        }
    }

    /// Whether the bag holds nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bag is full.
    pub(super) fn is_full(&self) -> bool {
        self.len == BAG_CAPACITY
    }

    /// How many functions the bag holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds `d`, or gives it back when the bag is full.
    pub(super) fn try_push(&mut self, d: Deferred) -> Result<(), Deferred> {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                slot.write(d);
                self.len += 1;
                Ok(())
            }
            None => Err(d),
        }
    }

    /// Runs and removes every function, last pushed first. If one panics, the ones not yet
    /// run are dropped without running (leaked), never run twice.
    pub(super) fn run_all(&mut self) {
        while self.len > 0 {
            self.len -= 1;
            // SAFETY: slots `..len` (before the decrement) are initialized; the slot at the
            // new `len` is now outside that range, so it is read exactly once.
            let d = unsafe { self.items[self.len].assume_init_read() };
            d.call();
        }
    }
}

impl Drop for Bag {
    fn drop(&mut self) {
        self.run_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn inline_and_boxed_closures_run_once() {
        let hits = Rc::new(Cell::new(0u32));
        let mut bag = Bag::new();
        let h = hits.clone();
        // Small closure: inline.
        assert!(
            bag.try_push(Deferred::new(move || h.set(h.get() + 1)))
                .is_ok()
        );
        // Large closure: boxed.
        let big = [7u64; 16];
        let h = hits.clone();
        assert!(
            bag.try_push(Deferred::new(
                move || h.set(h.get() + big.iter().sum::<u64>() as u32)
            ))
            .is_ok()
        );
        // Over-aligned closure: boxed.
        #[repr(align(64))]
        struct Aligned(u8);
        let a = Aligned(3);
        let h = hits.clone();
        assert!(
            bag.try_push(Deferred::new(move || h.set(h.get() + u32::from(a.0))))
                .is_ok()
        );
        assert_eq!(bag.len(), 3);
        assert_eq!(hits.get(), 0);
        bag.run_all();
        assert_eq!(hits.get(), 1 + 112 + 3);
        assert!(bag.is_empty());
        bag.run_all();
        assert_eq!(hits.get(), 116);
    }

    #[test]
    fn full_bag_rejects_and_drop_runs_rest() {
        let hits = Rc::new(Cell::new(0usize));
        {
            let mut bag = Bag::new();
            for _ in 0..BAG_CAPACITY {
                let h = hits.clone();
                assert!(
                    bag.try_push(Deferred::new(move || h.set(h.get() + 1)))
                        .is_ok()
                );
            }
            assert!(bag.is_full());
            let h = hits.clone();
            let rejected = bag.try_push(Deferred::new(move || h.set(h.get() + 1000)));
            let Err(d) = rejected else {
                panic!("full bag must reject")
            };
            d.call();
        }
        assert_eq!(hits.get(), BAG_CAPACITY + 1000);
    }
}
