//! `wormhole-c`: the Wormhole authors' own C implementation (Wu et al., EuroSys 2019;
//! <https://github.com/wuxb45/wormhole>), loaded at run time as an opt-in peer.
//!
//! # Usage
//!
//! ```text
//! git clone https://github.com/wuxb45/wormhole /some/where/wormhole    # outside this repo
//! apt-get install clang libjemalloc-dev
//! scripts/build-wormhole-c.sh /some/where/wormhole /some/where/whc-build
//! export ORRERY_WORMHOLE_C=/some/where/whc-build/libwh.so
//! cargo run --release -p orrery-bench -- run --index wormhole,wormhole-c \
//!     --dataset rand-8 --keys 10M --workload load,c --threads 1,2 --ops 2M
//! GLIBC_TUNABLES=... ORRERY_WORMHOLE_C=... cargo test -p orrery-bench wormhole_c
//! ```
//!
//! Without the variable the name `wormhole-c` is left out of "every index" listings and
//! runs, and asking for it by name is an error saying what to set.
//!
//! # Loading
//!
//! Nothing of the C project is part of this repository. `scripts/build-wormhole-c.sh SRC OUT`
//! builds `libwh.so` from a checkout (clang `-O3 -march=native`, linked against jemalloc),
//! and the environment variable [`ENV`] (`ORRERY_WORMHOLE_C`) names it. The library is
//! opened by the C peers' shared loader ([`super::clib`]) once per process with `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)` (libloading's
//! `os::unix::Library::open`, which takes the flags as they are) and never closed (the
//! handle is leaked): `RTLD_DEEPBIND` makes the C code's own `malloc`/`free`/`posix_memalign` resolve to
//! the jemalloc it is linked against, while the Rust harness keeps its allocator. The build
//! script compiles jemalloc's `malloc_conf = "thp:always,metadata_thp:always"` into the
//! library, so jemalloc asks for transparent huge pages (`MADV_HUGEPAGE`) on its memory;
//! `MALLOC_CONF` in the environment overrides it. What jemalloc serves is the items (every
//! key-value pair is one `malloc`ed `struct kv`), the leaves' anchors and the MetaTrieHT's
//! prefix keys. The C code maps its leaves, trie nodes and hash tables itself
//! (`pages_alloc_best`: `MAP_HUGETLB` first, plain `mmap` when the hugetlbfs pool is empty),
//! so on a machine without reserved huge pages (`vm.nr_hugepages = 0`) and THP in `madvise`
//! mode those stay on 4 KiB pages — the authors' code behaves so, not the adapter.
//! Unset, or a library that does not open or lacks a symbol: [`available`] returns a message
//! naming the variable and the registry refuses the index name with it (no panic).
//!
//! Debian's `libjemalloc.so.2` uses the initial-exec TLS model (`STATIC_TLS`, a 2.6 KiB
//! block), and glibc leaves only 512 bytes of static TLS for libraries opened after
//! start-up, so `dlopen` fails with "cannot allocate memory in static TLS block" unless the
//! process starts with `GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384` ([`TLS_TUNABLE`](super::clib::TLS_TUNABLE);
//! the error message says so). `orrery-bench` adds it itself when `ORRERY_WORMHOLE_C` is
//! set (its start-up re-execution, `machine::malloc`); test binaries do not re-execute, so
//! `cargo test` needs it exported (the command above). That tunable only reserves per-thread TLS room; it changes
//! nothing for the Rust indexes, which keep glibc's allocator (unlike `LD_PRELOAD`ing
//! jemalloc, which would swap the allocator under every index in the process).
//!
//! Only the functions called are declared, with their C signatures (`wh.h`, `kv.h`, and
//! jemalloc's `mallctl`); the `struct kv` header (`u32 klen, u32 vlen, u64 hash`, packed,
//! then key and value bytes) and `struct kref` (`u32 len, u32 hash32, const u8 *ptr`,
//! packed) are mirrored as `#[repr(C, packed)]` structs.
//!
//! # Thread safety: which API and why
//!
//! The C Wormhole protects readers of its MetaTrieHT with QSBR (`lib.c`'s `qsbr`): every
//! thread must hold a registered `struct wormref`, and a writer that splits or merges a leaf
//! swaps the hash table and then waits in `qsbr_wait` until every registered, *unparked*
//! ref has announced the new table. An idle thread whose ref is unparked would stall that
//! writer forever, and the harness's threads come and go (one-thread phases run on the
//! calling thread, multi-thread phases on fresh workers). So the adapter uses the library's
//! "safe" API: `whsafe_inpr`, `whsafe_merge`, `whsafe_del` and the `whsafe_iter_*` calls
//! resume the ref on entry and park it on exit, exactly like our per-operation epoch pin
//! (`orrery_core::sync::pin`): a thread is visible to writers only during an operation.
//! Each thread gets its ref lazily on its first operation on an index (`whsafe_ref`,
//! registered and parked), kept in a thread-local table keyed by a per-index id; it is
//! unregistered when the thread exits or when the index is dropped, whichever comes
//! first. The cost per operation is a resume and a park: two relaxed stores of the ref's
//! slot pointer plus compiler fences on x86 — cheaper than our fenced pin (a store and a
//! full fence) and about the asymmetric one's price. The QSBR registry holds 32 shards of
//! 23 refs, so more than a few hundred threads alive at once on one index can fail to
//! register; that panics with a message saying so (the harness uses a handful).
//!
//! # Operations
//!
//! - `get_with`: `whsafe_inpr`, the in-place read: the callback sees the item under the
//!   leaf's read lock and hands its value slice to `f` without copying the item.
//! - `insert`: `whsafe_merge` with a callback that records whether an old item existed and
//!   returns the new item (built on the stack; the default `kvmap_mm` duplicates it with
//!   `malloc` as `wormhole_set` would). One traversal, like an upsert, but it tells "new".
//! - `remove`: `whsafe_del`. `scan`: `wormhole_iter_create`, `whsafe_iter_seek`, then
//!   `wormhole_iter_inp` (zero-copy, leaf read-locked) and `wormhole_iter_skip`.
//! - `last`: the C code has no reverse iterator, so this scans everything (O(n)); the
//!   harness uses it in checks only.
//! - `len`: the C code keeps no count; each thread's ref slot counts its net inserts (plain
//!   stores, no shared cache line), `len` sums them.
//! - Keys of up to 65,535 bytes (the C code stores anchor and prefix lengths in 16 bits);
//!   longer keys get `KeyTooLong`.
//! - `memory_usage`: `key_value_bytes` is jemalloc's `stats.allocated` (items plus anchors
//!   and prefix keys of every live C Wormhole in the process — only the C code uses that
//!   jemalloc); `structure_bytes` counts the leaves and trie nodes in use, from the slab
//!   object counts `wormhole_fprint` prints, times their sizes (2112, 32 and 64 bytes). The
//!   two hash tables' bucket arrays are not reported (the API does not expose them); RSS,
//!   which the bench also reads, covers everything. `wormhole_fprint` walks the slabs'
//!   free lists without synchronisation, so call `memory_usage` while no writer runs (the
//!   harness calls it after a load).

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void};
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::clib::Opened;
use orrery::api::{MAX_VALUE_LEN, ScanVisitor};
use orrery::hash::crc32c_extend;
use orrery::{Error, KvIndex, MemoryUsage, OrderedKvIndex, Result};

/// The environment variable naming the built `libwh.so`.
pub(crate) const ENV: &str = "ORRERY_WORMHOLE_C";

/// Longest key the C code handles (anchor and prefix lengths are 16-bit).
const MAX_KEY: usize = u16::MAX as usize;

/// The C code's key-hash seed (`KV_CRC32C_SEED` in `kv.h`).
const CRC_SEED: u32 = 0xDEAD_BEEF;

/// Items up to this size are built on the stack before the C code copies them.
const STACK_ITEM: usize = 256;

/// `struct kv`'s header: key length, value length, hash; key and value bytes follow.
#[repr(C, packed)]
#[derive(Clone, Copy)]
struct KvHeader {
    klen: u32,
    vlen: u32,
    hash: u64,
}

/// `struct kref`: a key by reference, with its 32-bit hash.
#[repr(C, packed)]
struct Kref {
    len: u32,
    hash32: u32,
    ptr: *const u8,
}

/// Opaque `struct wormhole`.
#[repr(C)]
struct WhMap {
    _opaque: [u8; 0],
}

/// Opaque `struct wormref`.
#[repr(C)]
struct WhRef {
    _opaque: [u8; 0],
}

/// Opaque `struct wormhole_iter`.
#[repr(C)]
struct WhIter {
    _opaque: [u8; 0],
}

/// `kv_inp_func`.
type InpFn = unsafe extern "C" fn(*mut KvHeader, *mut c_void);
/// `kv_merge_func`.
type MergeFn = unsafe extern "C" fn(*mut KvHeader, *mut c_void) -> *mut KvHeader;

/// The library's entry points (signatures from `wh.h`, `kv.h` and jemalloc).
struct Lib {
    create: unsafe extern "C" fn(*const c_void) -> *mut WhMap,
    destroy: unsafe extern "C" fn(*mut WhMap),
    safe_ref: unsafe extern "C" fn(*mut WhMap) -> *mut WhRef,
    unref: unsafe extern "C" fn(*mut WhRef) -> *mut WhMap,
    inpr: unsafe extern "C" fn(*mut WhRef, *const Kref, InpFn, *mut c_void) -> bool,
    merge: unsafe extern "C" fn(*mut WhRef, *const Kref, MergeFn, *mut c_void) -> bool,
    del: unsafe extern "C" fn(*mut WhRef, *const Kref) -> bool,
    iter_create: unsafe extern "C" fn(*mut WhRef) -> *mut WhIter,
    iter_seek: unsafe extern "C" fn(*mut WhIter, *const Kref),
    iter_inp: unsafe extern "C" fn(*mut WhIter, InpFn, *mut c_void) -> bool,
    iter_skip: unsafe extern "C" fn(*mut WhIter, u32),
    iter_destroy: unsafe extern "C" fn(*mut WhIter),
    fprint: unsafe extern "C" fn(*mut WhMap, *mut libc::FILE),
    kref_hash32: unsafe extern "C" fn(*mut Kref, *const u8, u32),
    mallctl: Option<
        unsafe extern "C" fn(*const c_char, *mut c_void, *mut usize, *mut c_void, usize) -> c_int,
    >,
}

// SAFETY: `Lib` holds plain function pointers into a library that is never unloaded.
unsafe impl Send for Lib {}
// SAFETY: as above; the functions are called per the C library's own thread-safety rules.
unsafe impl Sync for Lib {}

impl Lib {
    /// Opens the library named by [`ENV`].
    fn open() -> std::result::Result<Lib, String> {
        let h = Opened::from_env(
            ENV,
            &format!(
                "build the authors' C Wormhole with scripts/build-wormhole-c.sh and export \
                 {ENV}=/path/to/libwh.so"
            ),
        )?;
        Lib::from(&h)
    }

    /// The entry points of the opened library, checked against the adapter's key hash.
    fn from(h: &Opened) -> std::result::Result<Lib, String> {
        // SAFETY: the type is wormhole_create's C declaration (`Opened` is never unloaded).
        let create = unsafe { h.sym(c"wormhole_create") }?;
        // SAFETY: the type is wormhole_destroy's C declaration (`Opened` is never unloaded).
        let destroy = unsafe { h.sym(c"wormhole_destroy") }?;
        // SAFETY: the type is whsafe_ref's C declaration (`Opened` is never unloaded).
        let safe_ref = unsafe { h.sym(c"whsafe_ref") }?;
        // SAFETY: the type is wormhole_unref's C declaration (`Opened` is never unloaded).
        let unref = unsafe { h.sym(c"wormhole_unref") }?;
        // SAFETY: the type is whsafe_inpr's C declaration (`Opened` is never unloaded).
        let inpr = unsafe { h.sym(c"whsafe_inpr") }?;
        // SAFETY: the type is whsafe_merge's C declaration (`Opened` is never unloaded).
        let merge = unsafe { h.sym(c"whsafe_merge") }?;
        // SAFETY: the type is whsafe_del's C declaration (`Opened` is never unloaded).
        let del = unsafe { h.sym(c"whsafe_del") }?;
        // SAFETY: the type is wormhole_iter_create's C declaration (`Opened` is never unloaded).
        let iter_create = unsafe { h.sym(c"wormhole_iter_create") }?;
        // SAFETY: the type is whsafe_iter_seek's C declaration (`Opened` is never unloaded).
        let iter_seek = unsafe { h.sym(c"whsafe_iter_seek") }?;
        // SAFETY: the type is wormhole_iter_inp's C declaration (`Opened` is never unloaded).
        let iter_inp = unsafe { h.sym(c"wormhole_iter_inp") }?;
        // SAFETY: the type is wormhole_iter_skip's C declaration (`Opened` is never unloaded).
        let iter_skip = unsafe { h.sym(c"wormhole_iter_skip") }?;
        // SAFETY: the type is whsafe_iter_destroy's C declaration (`Opened` is never unloaded).
        let iter_destroy = unsafe { h.sym(c"whsafe_iter_destroy") }?;
        // SAFETY: the type is wormhole_fprint's C declaration (`Opened` is never unloaded).
        let fprint = unsafe { h.sym(c"wormhole_fprint") }?;
        // SAFETY: the type is kref_ref_hash32's C declaration (`Opened` is never unloaded).
        let kref_hash32 = unsafe { h.sym(c"kref_ref_hash32") }?;
        // SAFETY: the type is mallctl's C declaration (`Opened` is never unloaded).
        let mallctl = unsafe { h.sym(c"mallctl") }.ok();
        let lib = Lib {
            create,
            destroy,
            safe_ref,
            unref,
            inpr,
            merge,
            del,
            iter_create,
            iter_seek,
            iter_inp,
            iter_skip,
            iter_destroy,
            fprint,
            kref_hash32,
            mallctl,
        };
        // The adapter hashes keys itself (as kv_crc32c does); a library whose hash differs
        // would miss every lookup, so check on a few keys before accepting it.
        for key in [&b""[..], b"k", b"0123456789abc"] {
            let theirs = lib.c_hash32(key);
            if theirs != hash32(key) {
                return Err(h.named(format!(
                    "its key hash differs from kv_crc32c's (got {theirs:#x} for {key:?})"
                )));
            }
        }
        Ok(lib)
    }

    /// The C code's own 32-bit key hash (`kref_ref_hash32`).
    fn c_hash32(&self, key: &[u8]) -> u32 {
        let mut k = Kref {
            len: 0,
            hash32: 0,
            ptr: std::ptr::null(),
        };
        // SAFETY: `k` is writable and `key` readable for its length (at most the API's key
        // limit, far below `u32::MAX`).
        unsafe { (self.kref_hash32)(&mut k, key.as_ptr(), key.len() as u32) };
        k.hash32
    }

    /// jemalloc's `stats.allocated`, refreshed; `None` without jemalloc statistics.
    fn jemalloc_allocated(&self) -> Option<usize> {
        let mallctl = self.mallctl?;
        let mut epoch: u64 = 1;
        // SAFETY: "epoch" takes a u64 to write; no old value is read.
        let r = unsafe {
            mallctl(
                c"epoch".as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&raw mut epoch).cast(),
                size_of::<u64>(),
            )
        };
        if r != 0 {
            return None;
        }
        let mut v: usize = 0;
        let mut len = size_of::<usize>();
        // SAFETY: "stats.allocated" is a size_t read into `v`, whose size `len` gives.
        let r = unsafe {
            mallctl(
                c"stats.allocated".as_ptr(),
                (&raw mut v).cast(),
                &raw mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        (r == 0).then_some(v)
    }
}

/// The process-wide library, opened on first use.
fn lib() -> std::result::Result<&'static Lib, String> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(Lib::open).as_ref().map_err(Clone::clone)
}

/// Whether the peer can run: `Err` says why not (naming [`ENV`]).
pub(crate) fn available() -> std::result::Result<(), String> {
    lib().map(|_| ())
}

/// The C code's 32-bit key hash: CRC32C with seed `0xDEADBEEF`, no inversions
/// (`kv_crc32c`). `crc32c_extend` inverts before and after, hence the complements.
#[inline]
fn hash32(key: &[u8]) -> u32 {
    !crc32c_extend(!CRC_SEED, key)
}

/// A `struct kref` for `key` (which outlives every use of the result).
#[inline]
fn kref(key: &[u8]) -> Kref {
    Kref {
        // Callers bound keys to MAX_KEY (65,535) bytes, or pass a slice the C code only
        // compares against (scans), where a u32 suffices for any real key.
        len: key.len() as u32,
        hash32: hash32(key),
        ptr: key.as_ptr(),
    }
}

/// Key and value of an item.
///
/// # Safety
///
/// `kv` points to a live `struct kv` that stays unchanged for `'a` (the caller holds its
/// leaf's lock for that long).
unsafe fn item<'a>(kv: *const KvHeader) -> (&'a [u8], &'a [u8]) {
    // SAFETY: `kv` is a live item header (caller); packed, so read unaligned.
    let h = unsafe { kv.read_unaligned() };
    let base = kv.cast::<u8>();
    // SAFETY: the key's `klen` bytes follow the 16-byte header inside the item.
    let k = unsafe {
        std::slice::from_raw_parts(base.wrapping_add(size_of::<KvHeader>()), h.klen as usize)
    };
    // SAFETY: the value's `vlen` bytes follow the key inside the item.
    let v = unsafe {
        std::slice::from_raw_parts(
            base.wrapping_add(size_of::<KvHeader>() + h.klen as usize),
            h.vlen as usize,
        )
    };
    (k, v)
}

/// One thread's registered ref on one index, and its net insert count.
struct Slot {
    wref: *mut WhRef,
    /// Inserts minus removals by the owning thread (written only by it).
    count: AtomicIsize,
}

/// The index proper, shared with the threads' ref tables (weakly).
struct Shared {
    lib: &'static Lib,
    map: *mut WhMap,
    id: u64,
    /// Every thread's slot (boxed: stable addresses held by the threads).
    slots: Mutex<Vec<*mut Slot>>,
    /// Counts of slots already released.
    retired: AtomicIsize,
}

// SAFETY: the C map is thread-safe through per-thread refs, which this type hands out one
// per thread; the raw slot pointers are only dereferenced under the rules in `slot()`.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// Unregisters `slot` if it is still registered (a thread exits).
    fn release(&self, slot: *mut Slot) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = slots.iter().position(|&s| s == slot) {
            slots.swap_remove(i);
            // SAFETY: the slot was registered, so it is a live Box the index owns; removed
            // from the list under the lock, nobody else frees it.
            let slot = unsafe { Box::from_raw(slot) };
            self.retired
                .fetch_add(slot.count.load(Ordering::Relaxed), Ordering::Relaxed);
            // SAFETY: the ref is registered and parked (the exiting thread runs no
            // operation), so unregistering it is allowed.
            unsafe { (self.lib.unref)(slot.wref) };
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let slots = std::mem::take(self.slots.get_mut().unwrap_or_else(|e| e.into_inner()));
        for s in slots {
            // SAFETY: each listed slot is a live Box owned by the index.
            let slot = unsafe { Box::from_raw(s) };
            // SAFETY: no operation runs (the index is being dropped), so every ref is
            // parked and may be unregistered from any thread.
            unsafe { (self.lib.unref)(slot.wref) };
        }
        // SAFETY: all refs are unregistered and no thread can reach the map any more.
        unsafe { (self.lib.destroy)(self.map) };
    }
}

/// One thread's entry for one index.
struct TlsEntry {
    id: u64,
    shared: Weak<Shared>,
    slot: *mut Slot,
}

/// A thread's refs; dropping it (thread exit) unregisters the ones still live.
struct TlsRefs(Vec<TlsEntry>);

impl Drop for TlsRefs {
    fn drop(&mut self) {
        for e in self.0.drain(..) {
            if let Some(shared) = e.shared.upgrade() {
                shared.release(e.slot);
            }
        }
    }
}

thread_local! {
    static REFS: RefCell<TlsRefs> = const { RefCell::new(TlsRefs(Vec::new())) };
    /// The last (index id, slot) used by this thread: the fast path.
    static LAST: Cell<(u64, *mut Slot)> = const { Cell::new((0, std::ptr::null_mut())) };
}

/// Ids of indexes (never reused, so a stale cache entry never matches).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The authors' C Wormhole behind Orrery's API.
pub(crate) struct WormholeC {
    shared: Arc<Shared>,
}

impl WormholeC {
    /// A new, empty C Wormhole; `Err` when the library is unavailable or creation fails.
    pub(crate) fn new() -> std::result::Result<WormholeC, String> {
        let lib = lib()?;
        // SAFETY: NULL selects the default kvmap_mm (copy items in with malloc, free them).
        let map = unsafe { (lib.create)(std::ptr::null()) };
        if map.is_null() {
            return Err("wormhole_create failed (out of memory?)".into());
        }
        Ok(WormholeC {
            shared: Arc::new(Shared {
                lib,
                map,
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                slots: Mutex::new(Vec::new()),
                retired: AtomicIsize::new(0),
            }),
        })
    }

    /// This thread's slot (its registered, parked ref), registering one on first use.
    ///
    /// The returned reference stays valid while `self` lives: slots are freed only when the
    /// owning thread exits (it is running this call, so it has not) or the index drops.
    #[inline]
    fn slot(&self) -> &Slot {
        let sh = &self.shared;
        let (id, p) = LAST.with(Cell::get);
        if id == sh.id {
            // SAFETY: this thread's slot of this live index (see the doc above).
            return unsafe { &*p };
        }
        self.slot_slow()
    }

    #[cold]
    fn slot_slow(&self) -> &Slot {
        let sh = &self.shared;
        let p = REFS.with(|r| {
            let mut r = r.borrow_mut();
            if let Some(e) = r.0.iter().find(|e| e.id == sh.id) {
                return e.slot;
            }
            r.0.retain(|e| e.shared.strong_count() > 0);
            // SAFETY: the map is live; the new ref comes back registered and parked.
            let wref = unsafe { (sh.lib.safe_ref)(sh.map) };
            assert!(
                !wref.is_null(),
                "the C Wormhole's QSBR registry is full (too many threads on one index)"
            );
            let slot = Box::into_raw(Box::new(Slot {
                wref,
                count: AtomicIsize::new(0),
            }));
            sh.slots
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(slot);
            r.0.push(TlsEntry {
                id: sh.id,
                shared: Arc::downgrade(sh),
                slot,
            });
            slot
        });
        LAST.with(|l| l.set((sh.id, p)));
        // SAFETY: just registered or found for this thread and this live index.
        unsafe { &*p }
    }

    /// Adds `d` to this thread's count.
    #[inline]
    fn count(slot: &Slot, d: isize) {
        // Only the owning thread writes its count: a load and a store suffice.
        slot.count
            .store(slot.count.load(Ordering::Relaxed) + d, Ordering::Relaxed);
    }

    /// Bytes of leaves and trie nodes in use, from `wormhole_fprint`'s slab counts.
    fn slab_bytes(&self) -> Option<usize> {
        let sh = &self.shared;
        let mut buf: *mut c_char = std::ptr::null_mut();
        let mut size: usize = 0;
        // SAFETY: open_memstream allocates its buffer and reports it through the pointers.
        let f = unsafe { libc::open_memstream(&raw mut buf, &raw mut size) };
        if f.is_null() {
            return None;
        }
        // SAFETY: the map is live and `f` an open stream; fprint only reads slab counters.
        unsafe { (sh.lib.fprint)(sh.map, f) };
        // SAFETY: `f` is open; closing it finalises `buf`/`size`.
        unsafe { libc::fclose(f) };
        if buf.is_null() {
            return None;
        }
        // SAFETY: after fclose `buf` holds `size` bytes (NUL-terminated) from open_memstream.
        let text = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size) };
        let nums: Vec<usize> = String::from_utf8_lossy(text)
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse().ok())
            .collect();
        // SAFETY: `buf` came from open_memstream's malloc (glibc's, the same as ours).
        unsafe { libc::free(buf.cast()) };
        // "wormhole_fprint L-SLAB <leaves> M-SLAB [0] <m32>+<m64> [1] <m32>+<m64>"
        match nums[..] {
            [leaves, 0, a1, a2, 1, b1, b2] => Some(leaves * 2112 + (a1 + b1) * 32 + (a2 + b2) * 64),
            _ => None,
        }
    }
}

/// State of one `insert`'s merge callback.
struct MergeCtx {
    new: *mut KvHeader,
    existed: bool,
}

/// `kv_merge_func`: note whether an old item exists and return the new one.
unsafe extern "C" fn merge_cb(old: *mut KvHeader, ctx: *mut c_void) -> *mut KvHeader {
    // SAFETY: `ctx` is the `MergeCtx` `insert` passed, alive for the call.
    let ctx = unsafe { &mut *ctx.cast::<MergeCtx>() };
    ctx.existed = !old.is_null();
    ctx.new
}

/// `kv_inp_func` for `get_with`: hand the value to the caller's closure.
unsafe extern "C" fn get_cb(kv: *mut KvHeader, ctx: *mut c_void) {
    if kv.is_null() {
        return;
    }
    // SAFETY: `ctx` is the `&mut dyn FnMut` `get_with` passed, alive for the call.
    let f = unsafe { &mut *ctx.cast::<&mut dyn FnMut(&[u8])>() };
    // SAFETY: the C code calls back with a live item under its leaf's read lock.
    let (_, v) = unsafe { item(kv) };
    f(v);
}

/// State of a scan's iterator callback.
struct ScanCtx<'a, 'v> {
    visitor: &'a mut ScanVisitor<'v>,
    /// The excluded start key, skipped if met.
    skip: Option<&'a [u8]>,
    stop: bool,
}

/// `kv_inp_func` for scans: visit the current item.
unsafe extern "C" fn scan_cb(kv: *mut KvHeader, ctx: *mut c_void) {
    if kv.is_null() {
        return;
    }
    // SAFETY: `ctx` is the `ScanCtx` `scan` passed, alive for the call.
    let ctx = unsafe { &mut *ctx.cast::<ScanCtx<'_, '_>>() };
    // SAFETY: the iterator's current item, under its leaf's read lock.
    let (k, v) = unsafe { item(kv) };
    if ctx.skip.take().is_some_and(|s| s == k) {
        return;
    }
    if (ctx.visitor)(k, v).is_break() {
        ctx.stop = true;
    }
}

impl KvIndex for WormholeC {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        if key.len() > MAX_KEY {
            return false;
        }
        let slot = self.slot();
        let k = kref(key);
        let mut f = f;
        // SAFETY: the slot's ref belongs to this thread and is parked (whsafe_inpr resumes
        // and parks it); `k` points into `key`; the callback context outlives the call.
        unsafe { (self.shared.lib.inpr)(slot.wref, &k, get_cb, (&raw mut f).cast()) }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        if key.len() > MAX_KEY {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: MAX_KEY,
            });
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(Error::ValueTooLong {
                len: value.len(),
                max: MAX_VALUE_LEN,
            });
        }
        let slot = self.slot();
        let h = hash32(key);
        let header = KvHeader {
            klen: key.len() as u32,
            vlen: value.len() as u32,
            // kv_crc32c_extend: the complement in the high half.
            hash: (u64::from(!h) << 32) | u64::from(h),
        };
        let total = size_of::<KvHeader>() + key.len() + value.len();
        let mut stack = [0u8; STACK_ITEM];
        let mut heap = Vec::new();
        let buf: &mut [u8] = if total <= STACK_ITEM {
            &mut stack[..total]
        } else {
            heap.resize(total, 0);
            &mut heap
        };
        buf[size_of::<KvHeader>()..][..key.len()].copy_from_slice(key);
        buf[size_of::<KvHeader>() + key.len()..].copy_from_slice(value);
        let new = buf.as_mut_ptr().cast::<KvHeader>();
        // SAFETY: `buf` holds at least a header's bytes; packed, so written unaligned.
        unsafe { new.write_unaligned(header) };
        let k = Kref {
            len: header.klen,
            hash32: h,
            ptr: key.as_ptr(),
        };
        let mut ctx = MergeCtx {
            new,
            existed: false,
        };
        // SAFETY: this thread's parked ref; `k` and the item in `buf` outlive the call (the
        // C code copies the item with malloc before linking it); the context outlives it.
        let ok = unsafe { (self.shared.lib.merge)(slot.wref, &k, merge_cb, (&raw mut ctx).cast()) };
        if !ok {
            return Err(Error::OutOfMemory);
        }
        if !ctx.existed {
            Self::count(slot, 1);
        }
        Ok(!ctx.existed)
    }

    fn remove(&self, key: &[u8]) -> bool {
        if key.len() > MAX_KEY {
            return false;
        }
        let slot = self.slot();
        let k = kref(key);
        // SAFETY: this thread's parked ref; `k` points into `key`.
        let found = unsafe { (self.shared.lib.del)(slot.wref, &k) };
        if found {
            Self::count(slot, -1);
        }
        found
    }

    fn len(&self) -> usize {
        let sh = &self.shared;
        let slots = sh.slots.lock().unwrap_or_else(|e| e.into_inner());
        let live: isize = slots
            .iter()
            // SAFETY: listed slots are live while the lock is held.
            .map(|&s| unsafe { &*s }.count.load(Ordering::Relaxed))
            .sum();
        (live + sh.retired.load(Ordering::Relaxed)).max(0) as usize
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            structure_bytes: self.slab_bytes().unwrap_or(0),
            key_value_bytes: self.shared.lib.jemalloc_allocated().unwrap_or(0),
        }
    }
}

impl OrderedKvIndex for WormholeC {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let (from, skip): (&[u8], Option<&[u8]>) = match start {
            Bound::Unbounded => (&[], None),
            Bound::Included(k) => (k, None),
            Bound::Excluded(k) => (k, Some(k)),
        };
        let slot = self.slot();
        let lib = self.shared.lib;
        // SAFETY: this thread's parked ref; the iterator takes it over until destroyed.
        let it = unsafe { (lib.iter_create)(slot.wref) };
        if it.is_null() {
            return;
        }
        let k = kref(from);
        let mut ctx = ScanCtx {
            visitor,
            skip,
            stop: false,
        };
        // SAFETY: `it` is live; whsafe_iter_seek resumes the ref and positions the iterator
        // (holding its leaf's read lock); `k` points into `from`.
        unsafe { (lib.iter_seek)(it, &k) };
        loop {
            // SAFETY: `it` is live and seeked; the callback context outlives the call.
            let valid = unsafe { (lib.iter_inp)(it, scan_cb, (&raw mut ctx).cast()) };
            if !valid || ctx.stop {
                break;
            }
            // SAFETY: `it` is live and valid.
            unsafe { (lib.iter_skip)(it, 1) };
        }
        // SAFETY: `it` is live; whsafe_iter_destroy unlocks, parks the ref and frees it.
        unsafe { (lib.iter_destroy)(it) };
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        // No reverse iteration in the C API: walk everything (used by checks only).
        let mut last: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut n = 0usize;
        let mut tail: (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
        self.scan(Bound::Unbounded, &mut |k, v| {
            tail.0.clear();
            tail.0.extend_from_slice(k);
            tail.1.clear();
            tail.1.extend_from_slice(v);
            n += 1;
            ControlFlow::Continue(())
        });
        if n > 0 {
            last = Some(tail);
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C library for tests, or `None` (and a note) when `ORRERY_WORMHOLE_C` is unset.
    fn lib_or_skip() -> Option<&'static Lib> {
        if std::env::var_os(ENV).is_none() {
            eprintln!("{ENV} unset: skipping the C Wormhole test");
            return None;
        }
        Some(lib().expect("ORRERY_WORMHOLE_C is set, so the library must load"))
    }

    #[test]
    fn unset_or_bad_path_is_a_clear_error() {
        // Only meaningful when the variable is unset in this process (the default).
        if std::env::var_os(ENV).is_some() {
            return;
        }
        let e = available().unwrap_err();
        assert!(e.contains(ENV) && e.contains("build-wormhole-c.sh"), "{e}");
        let e = WormholeC::new().err().unwrap();
        assert!(e.contains(ENV), "{e}");
        let e = crate::registry::resolve("wormhole-c").err().unwrap();
        assert!(e.contains(ENV), "{e}");
        // Not listed (so "every index" runs skip it), yet resolvable by name once set up.
        assert!(
            !crate::registry::entries()
                .iter()
                .any(|e| e.name == "wormhole-c")
        );
    }

    #[test]
    fn unloadable_library_is_a_clear_error() {
        let e = Opened::from_path(ENV, "/nonexistent/libwh.so".as_ref())
            .and_then(|h| Lib::from(&h))
            .err()
            .unwrap();
        assert!(
            e.contains(ENV) && e.contains("/nonexistent/libwh.so"),
            "{e}"
        );
        // A real shared library without the Wormhole symbols.
        let e = Opened::from_path(ENV, "libm.so.6".as_ref())
            .and_then(|h| Lib::from(&h))
            .err()
            .unwrap();
        assert!(e.contains("wormhole_create"), "{e}");
    }

    #[test]
    fn hash_matches_the_c_code() {
        let Some(lib) = lib_or_skip() else { return };
        for key in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            b"12345678",
            b"0123456789abcdefXYZ",
        ] {
            assert_eq!(hash32(key), lib.c_hash32(key), "{key:?}");
        }
    }

    #[test]
    fn matches_model_one_thread() {
        if lib_or_skip().is_none() {
            return;
        }
        let w = WormholeC::new().unwrap();
        crate::peers::tests::differential(&w, Some(&w), 0, 9);
        let w = WormholeC::new().unwrap();
        crate::peers::tests::differential(&w, Some(&w), 8, 8);
        assert_eq!(
            w.insert(&vec![1; MAX_KEY + 1], b"v"),
            Err(Error::KeyTooLong {
                len: MAX_KEY + 1,
                max: MAX_KEY
            })
        );
        // Large items take the heap path.
        assert_eq!(w.insert(b"big", &[7; 1000]), Ok(true));
        assert_eq!(w.get(b"big"), Some(vec![7; 1000]));
        assert_eq!(w.insert(b"big", &[8; 300]), Ok(false));
        assert_eq!(w.get(b"big"), Some(vec![8; 300]));
    }

    /// Two threads on disjoint key sets, each checked against its own model, then the
    /// union checked by scans; threads come and go across rounds (refs released at exit).
    #[test]
    fn matches_model_two_threads() {
        use std::collections::BTreeMap;
        if lib_or_skip().is_none() {
            return;
        }
        let w = WormholeC::new().unwrap();
        let mut model = BTreeMap::<Vec<u8>, Vec<u8>>::new();
        for round in 0..3u64 {
            let parts: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..2u64)
                    .map(|t| {
                        let w = &w;
                        let mut mine: BTreeMap<Vec<u8>, Vec<u8>> = model
                            .iter()
                            .filter(|(k, _)| u64::from(k[0] & 1) == t)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        s.spawn(move || {
                            let mut rng = crate::rng::Rng::new(100 + 10 * round + t);
                            for step in 0..3000u32 {
                                let mut k = rng.below(4000).to_be_bytes().to_vec();
                                // Thread t owns keys whose first byte has parity t.
                                k[0] = (k[0] & !1) | t as u8;
                                match rng.below(10) {
                                    0..=4 => {
                                        let v = step.to_le_bytes().to_vec();
                                        let new = w.insert(&k, &v).unwrap();
                                        assert_eq!(new, mine.insert(k.clone(), v).is_none());
                                    }
                                    5..=6 => assert_eq!(w.remove(&k), mine.remove(&k).is_some()),
                                    _ => assert_eq!(w.get(&k), mine.get(&k).cloned()),
                                }
                                if step % 200 == 0 {
                                    // A short scan from this thread's own keys.
                                    let mut n = 0;
                                    w.scan(Bound::Included(&k), &mut |a, _| {
                                        assert!(a >= &k[..]);
                                        n += 1;
                                        if n == 20 {
                                            ControlFlow::Break(())
                                        } else {
                                            ControlFlow::Continue(())
                                        }
                                    });
                                }
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            model = parts.into_iter().flatten().collect();
            assert_eq!(w.len(), model.len(), "round {round}");
            let mut got = Vec::new();
            w.scan(Bound::Unbounded, &mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                ControlFlow::Continue(())
            });
            let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got, want, "round {round}");
        }
        // The worker threads exited: only this thread's ref (from the scans) remains.
        assert_eq!(w.shared.slots.lock().unwrap().len(), 1);
    }

    /// jemalloc really backs the C code's items with transparent huge pages.
    #[test]
    fn items_land_on_huge_pages() {
        if lib_or_skip().is_none() {
            return;
        }
        let anon_huge = || -> usize {
            let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
            s.lines()
                .find_map(|l| l.strip_prefix("AnonHugePages:"))
                .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        let before = anon_huge();
        let w = WormholeC::new().unwrap();
        let n = if cfg!(debug_assertions) {
            300_000u64
        } else {
            1_000_000
        };
        for i in 0..n {
            w.insert(&i.to_be_bytes(), &[1; 100]).unwrap();
        }
        let after = anon_huge();
        let mem = w.memory_usage();
        eprintln!("AnonHugePages {before} kB -> {after} kB; {mem:?}");
        assert!(mem.key_value_bytes as u64 >= n * 124, "{mem:?}");
        assert!(mem.structure_bytes > 0, "{mem:?}");
        // The items alone are ~n * 128 bytes; most of them must sit on huge pages.
        assert!(
            (after.saturating_sub(before) as u64) * 1024 >= n * 64,
            "AnonHugePages grew only from {before} kB to {after} kB"
        );
    }
}
