//! [`HugeRegion`]: 2 MiB-aligned, zeroed, huge-page-advised anonymous memory, and
//! [`HugeArray`], a typed zero-initialized array on top of it.

use std::ops::{Deref, DerefMut, Range};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic;

use super::MemCounter;
use super::os;
use super::zeroed::ZeroedArray;
use crate::api::Error;

/// Size and alignment of an x86-64 huge page: 2 MiB.
pub const HUGE_PAGE_SIZE: usize = 2 * 1024 * 1024;

/// Size of a base page (x86-64, and the smallest on AArch64 Linux): 4 KiB. The granule of
/// [`HugeRegion::populate`] and of [`HugeArray::prefault`]'s touching fallback.
pub const PAGE_SIZE: usize = 4096;

/// A zeroed, 2 MiB-aligned region of anonymous memory, advised to use transparent huge
/// pages (see the [module docs](super#huge-pages)).
///
/// The length is rounded up to a multiple of 2 MiB ([`reserved_len`](Self::reserved_len));
/// [`len`](Self::len) is the length asked for. The memory is unmapped on `Drop`. The region
/// hands out a raw pointer: it is the owner of the bytes, and the code that writes through
/// [`as_ptr`](Self::as_ptr) is responsible for synchronizing its accesses.
#[derive(Debug)]
pub struct HugeRegion {
    /// Start of the mapping (2 MiB-aligned); a dangling aligned pointer when empty.
    ptr: NonNull<u8>,
    /// Length asked for.
    len: usize,
    /// Length mapped: `len` rounded up to a multiple of [`HUGE_PAGE_SIZE`].
    reserved: usize,
    /// Counter charged with `reserved` bytes while the region lives.
    counter: Option<Arc<MemCounter>>,
}

// SAFETY: a `HugeRegion` owns its mapping exclusively (like a `Box<[u8]>`); sending it to
// another thread moves that ownership, and `munmap` may be called from any thread.
unsafe impl Send for HugeRegion {}
// SAFETY: `&HugeRegion` only exposes the address and lengths; accesses through the raw
// pointer are the caller's to synchronize (every such access is itself an unsafe operation).
unsafe impl Sync for HugeRegion {}

impl HugeRegion {
    /// Maps `len` bytes (rounded up to 2 MiB), zeroed, 2 MiB-aligned, with
    /// `madvise(MADV_HUGEPAGE)`. A zero `len` maps nothing and succeeds.
    ///
    /// Fails with [`Error::OutOfMemory`] when the length overflows or the OS refuses the
    /// mapping.
    pub fn new(len: usize) -> Result<HugeRegion, Error> {
        let reserved = round_up_huge(len).ok_or(Error::OutOfMemory)?;
        let ptr = if reserved == 0 {
            os::dangling_huge_aligned()
        } else if super::fail_here() {
            return Err(Error::OutOfMemory);
        } else {
            os::map_huge(reserved)?
        };
        Ok(HugeRegion {
            ptr,
            len,
            reserved,
            counter: None,
        })
    }

    /// [`new`](Self::new), charging the reserved bytes to `counter` until the region is
    /// dropped.
    pub fn new_counted(len: usize, counter: Arc<MemCounter>) -> Result<HugeRegion, Error> {
        let mut region = Self::new(len)?;
        counter.add(region.reserved);
        region.counter = Some(counter);
        Ok(region)
    }

    /// Start of the region: 2 MiB-aligned, valid for reads and writes of
    /// [`len`](Self::len) bytes (up to [`reserved_len`](Self::reserved_len) in fact) while the
    /// region lives. Dangling (but aligned) when the length is 0.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The length asked for, in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the length asked for is 0.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes actually reserved: the length rounded up to a multiple of [`HUGE_PAGE_SIZE`].
    #[inline]
    pub fn reserved_len(&self) -> usize {
        self.reserved
    }

    /// Pre-faults the pages holding bytes `range` of the region (clamped to
    /// [`len`](Self::len), widened to [`PAGE_SIZE`] boundaries) with
    /// `madvise(MADV_POPULATE_WRITE)`: each page becomes resident and writable as if it had
    /// been written, and no byte changes. With huge pages advised, the kernel faults 2 MiB
    /// pages. Concurrent accesses to the range by other threads are unaffected (they may
    /// fault the same pages themselves; the kernel serializes that).
    ///
    /// The point is to pay the first-touch cost of fresh memory (the kernel clearing the
    /// page, and in a VM the host backing it) on a thread chosen by the caller, ahead of the
    /// code that will write the range.
    ///
    /// Returns `Ok(true)` when the range is populated (or empty), `Ok(false)` when the OS
    /// offers no way to do it (Linux before 5.14, other systems, Miri: see
    /// [`HugeArray::prefault`] for the touching fallback), and [`Error::OutOfMemory`] when the
    /// kernel ran out of memory.
    pub fn populate(&self, range: Range<usize>) -> Result<bool, Error> {
        let end = range.end.min(self.len);
        if range.start >= end {
            return Ok(true);
        }
        let start = range.start & !(PAGE_SIZE - 1);
        // The reservation is a multiple of 2 MiB, so the page-rounded end stays inside it.
        let end = end.next_multiple_of(PAGE_SIZE).min(self.reserved);
        // `start < end <= reserved`: the range is inside our live mapping.
        os::populate_write(self.ptr.as_ptr().wrapping_add(start), end - start)
    }

    /// Pre-faults the whole region (up to [`reserved_len`](Self::reserved_len)): with
    /// [`populate`](Self::populate) where the OS offers it, otherwise (Linux before 5.14,
    /// other systems, Miri) by rewriting one byte of every [`PAGE_SIZE`] page with its own
    /// value. No byte changes either way. The exclusive borrow is what makes the fallback
    /// sound: nobody else can access the bytes meanwhile (e.g. a slab chunk populated
    /// before any pool hands out its slots, `alloc::populate`).
    ///
    /// Fails with [`Error::OutOfMemory`] when the kernel ran out of memory populating.
    pub fn prefault(&mut self) -> Result<(), Error> {
        let len = self.reserved;
        if len == 0 {
            return Ok(());
        }
        // `populate` clamps to `len`; the whole reservation is ours, so widen `len` for it.
        let asked = std::mem::replace(&mut self.len, len);
        let populated = self.populate(0..len);
        self.len = asked;
        if populated? {
            return Ok(());
        }
        for off in (0..len).step_by(PAGE_SIZE) {
            let p = self.ptr.as_ptr().wrapping_add(off);
            // SAFETY: `off < reserved`: inside our live mapping (initialized, zeroed at
            // mapping); `&mut self` excludes every other access to the region's bytes.
            let v = unsafe { p.read_volatile() };
            // SAFETY: as above; writing the byte's own value changes nothing but the page's
            // residency. Volatile, so that the write is not elided.
            unsafe { p.write_volatile(v) };
        }
        Ok(())
    }
}

impl HugeRegion {
    /// Asks the kernel to stop backing the region with transparent huge pages
    /// (`madvise(MADV_NOHUGEPAGE)`; see the [module docs](super#huge-pages)): for a region
    /// whose pages are being given back ([`discard`](Self::discard)), since `khugepaged`
    /// would otherwise collapse what remains into huge pages again, making the pages given
    /// back resident (zeroed) without anyone touching them. Contents are unchanged; where
    /// the advice is not available nothing happens.
    pub fn no_huge_pages(&self) {
        if self.reserved != 0 {
            os::no_huge(self.ptr.as_ptr(), self.reserved);
        }
    }

    /// Gives the [`PAGE_SIZE`] pages of bytes `range` (which must start and end on page
    /// boundaries, inside [`reserved_len`](Self::reserved_len)) back to the OS with
    /// `madvise(MADV_DONTNEED)`: they leave the resident set, the region stays mapped, and
    /// a later access finds them zeroed (paid with a page fault). A huge page given back
    /// only in part is split into 4 KiB pages. Returns whether the OS took them; where it
    /// cannot (Miri, systems without `madvise`) the bytes are zeroed instead and `false`
    /// is returned.
    ///
    /// # Safety
    ///
    /// Nobody accesses the bytes of `range` during the call, and nobody relies on their
    /// contents afterwards (they read as zero).
    ///
    /// # Panics
    ///
    /// If the range is not page-aligned or not inside the reservation.
    pub unsafe fn discard(&self, range: Range<usize>) -> bool {
        assert!(
            range.start.is_multiple_of(PAGE_SIZE)
                && range.end.is_multiple_of(PAGE_SIZE)
                && range.start <= range.end
                && range.end <= self.reserved,
            "discard of {range:?}: not whole pages inside a {}-byte region",
            self.reserved
        );
        if range.is_empty() {
            return true;
        }
        // SAFETY: page-aligned, inside our live mapping (checked above); nobody accesses the
        // bytes meanwhile or needs them afterwards (contract).
        unsafe { os::discard(self.ptr.as_ptr().wrapping_add(range.start), range.len()) }
    }
}

impl Drop for HugeRegion {
    fn drop(&mut self) {
        if self.reserved != 0 {
            // SAFETY: `ptr` and `reserved` describe the live mapping made by `os::map_huge` in
            // `new`, unmapped only here, once.
            unsafe { os::unmap_huge(self.ptr, self.reserved) };
        }
        if let Some(counter) = &self.counter {
            counter.sub(self.reserved);
        }
    }
}

/// `len` rounded up to a multiple of [`HUGE_PAGE_SIZE`], or `None` on overflow (or beyond
/// `isize::MAX`, which no allocation may exceed).
fn round_up_huge(len: usize) -> Option<usize> {
    let r = len.checked_add(HUGE_PAGE_SIZE - 1)? & !(HUGE_PAGE_SIZE - 1);
    // The over-mapping in `os::map_huge` adds one more huge page.
    (r <= isize::MAX as usize - HUGE_PAGE_SIZE).then_some(r)
}

/// Types for which the all-zero bit pattern is a valid value.
///
/// # Safety
///
/// Implement it only for a type `T` such that a value whose bytes are all zero is a valid,
/// safe-to-use `T` (integers, floats, `bool`, atomics, null raw pointers, arrays of such).
/// [`HugeArray`] creates its elements from zeroed memory without running any constructor.
pub unsafe trait Zeroable: Sized {}

macro_rules! zeroable {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: all-zero bytes are the value 0 / 0.0 / false of this primitive type, or
            // an atomic holding that value (atomics have the layout of their primitive).
            unsafe impl Zeroable for $t {}
        )*
    };
}

zeroable!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    bool,
    atomic::AtomicU8,
    atomic::AtomicU16,
    atomic::AtomicU32,
    atomic::AtomicU64,
    atomic::AtomicUsize,
    atomic::AtomicI8,
    atomic::AtomicI16,
    atomic::AtomicI32,
    atomic::AtomicI64,
    atomic::AtomicIsize,
    atomic::AtomicBool,
);

// SAFETY: an `AtomicPtr` of all-zero bytes holds the null pointer, a valid value.
unsafe impl<T> Zeroable for atomic::AtomicPtr<T> {}
// SAFETY: all-zero bytes are the null pointer, a valid raw pointer value.
unsafe impl<T> Zeroable for *mut T {}
// SAFETY: all-zero bytes are the null pointer, a valid raw pointer value.
unsafe impl<T> Zeroable for *const T {}
// SAFETY: an array of zeroed elements is zeroed, and each element is valid when zeroed.
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// A fixed-length, zero-initialized array of `T` in a [`HugeRegion`]: the backing store of
/// large hash tables (bucket arrays of atomics).
///
/// Dereferences to `[T]`. The elements start as all-zero bytes, which [`Zeroable`]
/// guarantees is a valid `T`; they are dropped in place when the array is dropped. It is a
/// [`ZeroedArray`] that is always in a huge-page region, whatever its size, and can charge a
/// [`MemCounter`] and pre-fault its pages.
pub struct HugeArray<T: Zeroable> {
    inner: ZeroedArray<T>,
}

impl<T: Zeroable> HugeArray<T> {
    /// An array of `len` zeroed elements. Fails with [`Error::OutOfMemory`] when the size
    /// overflows or the OS refuses the mapping.
    pub fn new(len: usize) -> Result<Self, Error> {
        Self::with_region(len, HugeRegion::new)
    }

    /// [`new`](Self::new), charging the reserved bytes to `counter` until the array is
    /// dropped.
    pub fn new_counted(len: usize, counter: Arc<MemCounter>) -> Result<Self, Error> {
        Self::with_region(len, |bytes| HugeRegion::new_counted(bytes, counter))
    }

    fn with_region(
        len: usize,
        map: impl FnOnce(usize) -> Result<HugeRegion, Error>,
    ) -> Result<Self, Error> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(Error::OutOfMemory)?;
        Ok(HugeArray {
            inner: ZeroedArray::in_region(map(bytes)?, len)?,
        })
    }

    /// Bytes reserved for the array (its size rounded up to 2 MiB).
    #[inline]
    pub fn reserved_bytes(&self) -> usize {
        self.inner.reserved_bytes()
    }

    /// Pre-faults the pages holding elements `range` (clamped to the length), so that the
    /// first writes to them do not pay the page faults: [`HugeRegion::populate`] where the
    /// OS offers it; otherwise `touch` is called on one element per [`PAGE_SIZE`] page of the
    /// range (the range's first element, then the first element starting in each later page), and
    /// must *write* it without changing its value (e.g. a compare-exchange of an atomic with
    /// the value just loaded: a plain load maps the shared zero page and allocates nothing).
    /// No byte changes either way, so other threads may use the elements meanwhile.
    ///
    /// Returns [`Error::OutOfMemory`] when the kernel ran out of memory populating the range
    /// (nothing is touched then).
    pub fn prefault(&self, range: Range<usize>, mut touch: impl FnMut(&T)) -> Result<(), Error> {
        let size = std::mem::size_of::<T>();
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        if start == end || size == 0 {
            return Ok(());
        }
        if self.inner.populate(start..end)? {
            return Ok(());
        }
        page_elements(start..end, size, |i| touch(&self[i]));
        Ok(())
    }
}

/// Calls `f` with one index per [`PAGE_SIZE`] page in which elements `range` of `size` bytes
/// (at offset `index * size`) start: `range.start`, then the first element starting in each
/// later page. (A touch writes an element's first bytes; the bytes of a page in which no
/// element starts are the tail of a larger element.)
fn page_elements(range: Range<usize>, size: usize, mut f: impl FnMut(usize)) {
    let mut i = range.start;
    while i < range.end {
        f(i);
        // The first element that starts in a page after the one holding element `i`.
        let next_page = (i * size / PAGE_SIZE + 1) * PAGE_SIZE;
        i = next_page.div_ceil(size).max(i + 1);
    }
}

impl<T: Zeroable> Deref for HugeArray<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        &self.inner
    }
}

impl<T: Zeroable> DerefMut for HugeArray<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.inner
    }
}

impl<T: Zeroable + std::fmt::Debug> std::fmt::Debug for HugeArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HugeArray")
            .field("len", &self.len())
            .field("reserved_bytes", &self.reserved_bytes())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[test]
    fn alloc_region_sizes_and_alignment() {
        for len in [
            0,
            1,
            4096,
            HUGE_PAGE_SIZE - 1,
            HUGE_PAGE_SIZE,
            HUGE_PAGE_SIZE + 1,
        ] {
            let r = HugeRegion::new(len).unwrap();
            assert_eq!(r.len(), len);
            assert_eq!(r.is_empty(), len == 0);
            assert_eq!(r.as_ptr() as usize % HUGE_PAGE_SIZE, 0, "len {len}");
            assert_eq!(r.reserved_len() % HUGE_PAGE_SIZE, 0);
            assert!(r.reserved_len() >= len && r.reserved_len() < len + HUGE_PAGE_SIZE);
        }
    }

    /// [`HugeRegion::no_huge_pages`] changes the mapping's advice from huge pages (`hg`
    /// in `/proc/self/smaps`' `VmFlags`) to none (`nh`), and keeps the contents.
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn alloc_region_no_huge_pages_advice() {
        let flags = |addr: usize| {
            let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
            let head = format!("{addr:x}-");
            let at = smaps.lines().position(|l| l.starts_with(&head))?;
            smaps.lines().skip(at + 1).find_map(|l| {
                l.strip_prefix("VmFlags:")
                    .map(|f| f.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            })
        };
        let r = HugeRegion::new(HUGE_PAGE_SIZE).unwrap();
        let byte = r.as_ptr().wrapping_add(5000);
        // SAFETY: a byte of our own live region, nobody else accesses it.
        unsafe { byte.write(7) };
        let addr = r.as_ptr() as usize;
        let Some(before) = flags(addr) else {
            eprintln!("no smaps: skipped");
            return;
        };
        r.no_huge_pages();
        let after = flags(addr).expect("the mapping is still there");
        assert!(after.iter().any(|f| f == "nh"), "{before:?} -> {after:?}");
        assert!(!after.iter().any(|f| f == "hg"), "{after:?}");
        // SAFETY: as above.
        assert_eq!(unsafe { byte.read() }, 7);
    }

    #[test]
    fn alloc_region_zeroed_and_writable() {
        let len = 3 * HUGE_PAGE_SIZE + 100;
        let r = HugeRegion::new(len).unwrap();
        // Probe a few places (all of it would be slow under Miri).
        for off in [0, 1, 4095, HUGE_PAGE_SIZE, 2 * HUGE_PAGE_SIZE + 7, len - 1] {
            // SAFETY: `off < len`, inside the live region; no other reference exists.
            let p = unsafe { r.as_ptr().add(off) };
            // SAFETY: `p` is inside the region, which is initialized (zeroed) memory.
            assert_eq!(unsafe { p.read() }, 0, "offset {off}");
            // SAFETY: as above; the region is writable and nobody else accesses it.
            unsafe { p.write(0xA5) };
            // SAFETY: as above.
            assert_eq!(unsafe { p.read() }, 0xA5);
        }
    }

    #[test]
    fn alloc_region_errors() {
        assert_eq!(HugeRegion::new(usize::MAX).unwrap_err(), Error::OutOfMemory);
        assert_eq!(
            HugeRegion::new(isize::MAX as usize).unwrap_err(),
            Error::OutOfMemory
        );
        assert_eq!(
            HugeArray::<u64>::new(usize::MAX / 4).unwrap_err(),
            Error::OutOfMemory
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "asks the OS for 64 TiB; Miri has no mmap")]
    fn alloc_region_os_refusal_is_an_error() {
        // Far beyond any machine's address space limit for one private mapping, but not an
        // arithmetic overflow: the OS must refuse and we must report it, not abort.
        let huge = 1usize << 46;
        match HugeRegion::new(huge) {
            Err(e) => assert_eq!(e, Error::OutOfMemory),
            // Overcommit may accept it; then it is a valid, untouched mapping.
            Ok(r) => assert_eq!(r.reserved_len(), huge),
        }
    }

    #[test]
    fn alloc_region_populate_keeps_contents() {
        let len = 2 * HUGE_PAGE_SIZE + 5000;
        let r = HugeRegion::new(len).unwrap();
        let p = r.as_ptr().wrapping_add(4100);
        // SAFETY: offset 4100 < len, inside the live region; nobody else accesses it.
        unsafe { p.write(0x5A) };
        let done = r.populate(4000..len + HUGE_PAGE_SIZE).unwrap();
        // Linux 5.14+ populates (this project's machine runs a newer kernel); Miri cannot.
        assert_eq!(done, cfg!(all(target_os = "linux", not(miri))));
        for off in [0, 4095, 4100, HUGE_PAGE_SIZE, len - 1] {
            let p = r.as_ptr().wrapping_add(off);
            // SAFETY: `off < len`, inside the live region (initialized, zeroed memory).
            let v = unsafe { p.read() };
            assert_eq!(v, if off == 4100 { 0x5A } else { 0 }, "offset {off}");
        }
        // Empty and out-of-range requests populate nothing and succeed.
        assert!(r.populate(10..10).unwrap());
        assert!(r.populate(len..len + 10).unwrap());
        assert!(HugeRegion::new(0).unwrap().populate(0..100).unwrap());
    }

    #[test]
    fn alloc_page_elements_visit_every_page_once() {
        for (range, size) in [
            (0..1000, 32),
            (5..1000, 32),
            (0..700, 24),
            (3..50, 8192),
            (0..9000, 1),
            (100..101, 4096),
            (7..7, 32),
        ] {
            let mut seen = Vec::new();
            page_elements(range.clone(), size, |i| seen.push(i));
            // Expected: the first element of the range, then the first element starting in
            // each later page.
            let mut want = Vec::new();
            let mut last_page = None;
            for i in range.clone() {
                let page = i * size / PAGE_SIZE;
                if last_page.is_none_or(|p| p < page) {
                    want.push(i);
                    last_page = Some(page);
                }
            }
            assert_eq!(seen, want, "{range:?} of {size} B");
        }
    }

    #[test]
    fn alloc_huge_array_prefault() {
        let n = if cfg!(miri) { 1000 } else { 1 << 18 };
        let a = HugeArray::<AtomicU64>::new(n).unwrap();
        a[10].store(3, Ordering::Relaxed);
        let mut touched = Vec::new();
        a.prefault(8..n + 50, |x| {
            touched.push(std::ptr::from_ref(x).addr());
            let v = x.load(Ordering::Relaxed);
            let _ = x.compare_exchange(v, v, Ordering::Relaxed, Ordering::Relaxed);
        })
        .unwrap();
        if cfg!(all(target_os = "linux", not(miri))) {
            assert!(touched.is_empty(), "the kernel populated the range");
        } else {
            // One touch per 4 KiB page: element 8 first, then every 512th element.
            let base = a.as_ptr().addr();
            let idx: Vec<usize> = touched.iter().map(|p| (p - base) / 8).collect();
            let want: Vec<usize> = std::iter::once(8).chain((512..n).step_by(512)).collect();
            assert_eq!(idx, want);
        }
        assert_eq!(a[10].load(Ordering::Relaxed), 3);
        assert!(
            a.iter()
                .enumerate()
                .all(|(i, x)| i == 10 || x.load(Ordering::Relaxed) == 0)
        );
        a.prefault(5..5, |_| panic!("nothing to touch")).unwrap();
    }

    #[test]
    fn alloc_region_counted() {
        let counter = Arc::new(MemCounter::new());
        let r = HugeRegion::new_counted(10, counter.clone()).unwrap();
        assert_eq!(counter.get(), HUGE_PAGE_SIZE);
        let a = HugeArray::<u32>::new_counted(HUGE_PAGE_SIZE / 4 + 1, counter.clone()).unwrap();
        assert_eq!(a.reserved_bytes(), 2 * HUGE_PAGE_SIZE);
        assert_eq!(counter.get(), 3 * HUGE_PAGE_SIZE);
        drop(r);
        assert_eq!(counter.get(), 2 * HUGE_PAGE_SIZE);
        drop(a);
        assert_eq!(counter.get(), 0);
        let empty = HugeRegion::new_counted(0, counter.clone()).unwrap();
        assert_eq!(counter.get(), 0);
        drop(empty);
    }

    #[test]
    fn alloc_huge_array_zeroed_atomics() {
        let n = if cfg!(miri) { 1000 } else { 1 << 20 };
        let a = HugeArray::<AtomicU64>::new(n).unwrap();
        assert_eq!(a.len(), n);
        assert!(a.iter().step_by(97).all(|x| x.load(Ordering::Relaxed) == 0));
        a[n - 1].store(7, Ordering::Relaxed);
        a[0].fetch_add(3, Ordering::Relaxed);
        assert_eq!(a[n - 1].load(Ordering::Relaxed), 7);
        assert_eq!(a[0].load(Ordering::Relaxed), 3);
        // Shared between threads through `&`.
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for i in 0..100 {
                        a[i].fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(a[0].load(Ordering::Relaxed), 5);
        assert_eq!(a[99].load(Ordering::Relaxed), 2);
    }

    #[test]
    fn alloc_huge_array_mut_and_shapes() {
        let mut a = HugeArray::<[u16; 3]>::new(1000).unwrap();
        assert!(a.iter().all(|x| *x == [0; 3]));
        a[999] = [1, 2, 3];
        a.iter_mut().take(10).for_each(|x| x[1] = 9);
        assert_eq!(a[999], [1, 2, 3]);
        assert_eq!(a[5], [0, 9, 0]);
        let empty = HugeArray::<u64>::new(0).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.reserved_bytes(), 0);
        let zst = HugeArray::<[u64; 0]>::new(usize::MAX).unwrap();
        assert_eq!(zst.len(), usize::MAX);
        assert_eq!(zst.reserved_bytes(), 0);
        let b = HugeArray::<bool>::new(5).unwrap();
        assert!(b.iter().all(|x| !x));
        assert!(format!("{b:?}").contains("len: 5"));
    }

    #[test]
    fn alloc_region_send_between_threads() {
        let r = HugeRegion::new(100).unwrap();
        // SAFETY: inside the region, nobody else accesses it.
        unsafe { r.as_ptr().wrapping_add(50).write(42) };
        let r = std::thread::spawn(move || {
            // SAFETY: the region moved to this thread; inside the region.
            let v = unsafe { r.as_ptr().wrapping_add(50).read() };
            assert_eq!(v, 42);
            r
        })
        .join()
        .unwrap();
        drop(r);
    }
}
