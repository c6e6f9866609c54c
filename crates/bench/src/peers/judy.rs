//! `judy`: Judy arrays (Baskins; HP, 2002) from the system's `libJudy`, loaded at run time —
//! the peer the Hyperion paper measures itself against (JudyL for integer keys, JudySL for
//! strings).
//!
//! # Usage
//!
//! `apt-get install libjudy-dev` (Debian; `.ci/run` installs it so the tests run), then
//! `--index judy`. The library is opened with `dlopen("libJudy.so.1")` (then
//! `libJudy.so`) once per process and never closed; when it is missing the name is left
//! out of "every index" listings and asking for it is an error saying what to install.
//!
//! # Layout
//!
//! One index holds two Judy arrays:
//! - **JudyL** for keys of exactly 8 bytes, as the big-endian integer they encode (Judy
//!   orders its `Word_t` indexes numerically, which is the keys' byte order);
//! - **JudySL** for every other key length. JudySL keys are NUL-terminated C strings, so a
//!   key of another length that contains 0x00 cannot be stored: `insert` returns an error
//!   (below), and the registry's capability flag `nul_only_in_8_byte_keys` makes the
//!   harness refuse datasets whose keys may hold 0x00 unless they are all 8 bytes long
//!   (`rand-int`, `seq-int`, `rand-8` go to JudyL; `ngram`, `url`, `az` to JudySL;
//!   `rand-16` is refused).
//!
//! Values are 8 bytes, stored in the array's value word itself as Judy is used (and as the
//! Hyperion paper measures it): the registry says `value_len: Some(8)`, and other lengths
//! get [`Error::ValueTooLong`] with `max: 8` (the API has no "wrong length" error; a value
//! shorter than 8 bytes gets it too).
//!
//! Ordered scans merge the two arrays' ascending streams (`JudyLFirst`/`JudyLNext` and
//! `JudySLFirst`/`JudySLNext`) by byte order.
//!
//! # Concurrency
//!
//! Judy arrays are not thread-safe. Both arrays sit behind one `std::sync::RwLock`: any
//! number of readers (lookups, scans) or a single writer. This is what "Judy with one writer
//! behind a lock" means in the comparison; its multi-thread figures measure that lock.
//!
//! # Memory
//!
//! `JudyLMemUsed` gives the JudyL array's bytes (keys and values live inside it), reported
//! as `structure_bytes`. JudySL has no such call (`JudySLMemUsed` does not exist), so the
//! JudySL half cannot be counted from outside: the registry reports memory for this peer
//! only on datasets of 8-byte keys (all in JudyL); on string datasets the table shows
//! "n/a" and the RSS column (which covers Judy's `malloc`) is the figure to read. Judy
//! allocates with the C `malloc`, not through the benchmark's counting allocator, so its
//! allocator-counted bytes/key are near zero and mean nothing.

use std::ffi::{CStr, c_int, c_void};
use std::ops::{Bound, ControlFlow};
use std::sync::{OnceLock, RwLock};

use libloading::os::unix::Library;

use super::clib;
use orrery::api::ScanVisitor;
use orrery::{Error, KvIndex, MemoryUsage, OrderedKvIndex, Result};

/// The value length Judy stores inline (one `Word_t`).
pub(crate) const VALUE_LEN: usize = 8;

/// `Word_t`.
type Word = usize;
/// `PPvoid_t`: a pointer to the value word (or `PPJERR`, or null).
type PPVoid = *mut *mut c_void;

/// `PPJERR`: the error return of calls returning `PPvoid_t`.
const PPJERR: PPVoid = !0usize as PPVoid;

/// The library's entry points (signatures from `Judy.h`; the error-detail argument is
/// always passed null).
struct Lib {
    l_get: unsafe extern "C" fn(*const c_void, Word, *mut c_void) -> PPVoid,
    l_ins: unsafe extern "C" fn(*mut *mut c_void, Word, *mut c_void) -> PPVoid,
    l_del: unsafe extern "C" fn(*mut *mut c_void, Word, *mut c_void) -> c_int,
    l_first: unsafe extern "C" fn(*const c_void, *mut Word, *mut c_void) -> PPVoid,
    l_next: unsafe extern "C" fn(*const c_void, *mut Word, *mut c_void) -> PPVoid,
    l_free: unsafe extern "C" fn(*mut *mut c_void, *mut c_void) -> Word,
    l_mem: unsafe extern "C" fn(*const c_void) -> Word,
    sl_get: unsafe extern "C" fn(*const c_void, *const u8, *mut c_void) -> PPVoid,
    sl_ins: unsafe extern "C" fn(*mut *mut c_void, *const u8, *mut c_void) -> PPVoid,
    sl_del: unsafe extern "C" fn(*mut *mut c_void, *const u8, *mut c_void) -> c_int,
    sl_first: unsafe extern "C" fn(*const c_void, *mut u8, *mut c_void) -> PPVoid,
    sl_next: unsafe extern "C" fn(*const c_void, *mut u8, *mut c_void) -> PPVoid,
    sl_free: unsafe extern "C" fn(*mut *mut c_void, *mut c_void) -> Word,
}

/// [`clib::sym`], its error naming libJudy.
///
/// # Safety
///
/// As [`clib::sym`]'s.
unsafe fn sym<T: Copy>(lib: &Library, name: &CStr) -> std::result::Result<T, String> {
    // SAFETY: the caller's guarantee.
    unsafe { clib::sym(lib, name) }.map_err(|e| format!("libJudy: {e}"))
}

impl Lib {
    fn open() -> std::result::Result<Lib, String> {
        let mut why = Vec::new();
        for name in ["libJudy.so.1", "libJudy.so"] {
            // SAFETY: loading libJudy runs no constructors of note; it is never unloaded.
            match unsafe { Library::open(Some(name), libc::RTLD_NOW | libc::RTLD_LOCAL) } {
                Ok(l) => return Lib::from(Box::leak(Box::new(l))),
                Err(e) => why.push(e.to_string()),
            }
        }
        Err(format!(
            "libJudy not found ({}): install it with `apt-get install libjudy-dev`",
            why.join("; ")
        ))
    }

    fn from(h: &'static Library) -> std::result::Result<Lib, String> {
        // SAFETY (every `sym` below): `h` is never unloaded and each type is the symbol's
        // declaration in Judy.h.
        Ok(Lib {
            // SAFETY: see above.
            l_get: unsafe { sym(h, c"JudyLGet") }?,
            // SAFETY: see above.
            l_ins: unsafe { sym(h, c"JudyLIns") }?,
            // SAFETY: see above.
            l_del: unsafe { sym(h, c"JudyLDel") }?,
            // SAFETY: see above.
            l_first: unsafe { sym(h, c"JudyLFirst") }?,
            // SAFETY: see above.
            l_next: unsafe { sym(h, c"JudyLNext") }?,
            // SAFETY: see above.
            l_free: unsafe { sym(h, c"JudyLFreeArray") }?,
            // SAFETY: see above.
            l_mem: unsafe { sym(h, c"JudyLMemUsed") }?,
            // SAFETY: see above.
            sl_get: unsafe { sym(h, c"JudySLGet") }?,
            // SAFETY: see above.
            sl_ins: unsafe { sym(h, c"JudySLIns") }?,
            // SAFETY: see above.
            sl_del: unsafe { sym(h, c"JudySLDel") }?,
            // SAFETY: see above.
            sl_first: unsafe { sym(h, c"JudySLFirst") }?,
            // SAFETY: see above.
            sl_next: unsafe { sym(h, c"JudySLNext") }?,
            // SAFETY: see above.
            sl_free: unsafe { sym(h, c"JudySLFreeArray") }?,
        })
    }
}

/// The process-wide library, opened on first use.
fn lib() -> std::result::Result<&'static Lib, String> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(Lib::open).as_ref().map_err(Clone::clone)
}

/// Whether the peer can run: `Err` says what to install.
pub(crate) fn available() -> std::result::Result<(), String> {
    lib().map(|_| ())
}

/// The two arrays (root pointers, null when empty) and what scans need.
struct Arrays {
    l: *mut c_void,
    sl: *mut c_void,
    /// Keys in each array.
    l_len: usize,
    sl_len: usize,
    /// Longest JudySL key ever inserted (sizes the scan buffer).
    sl_max: usize,
}

/// Judy arrays behind Orrery's API (see the module docs).
pub(crate) struct Judy {
    lib: &'static Lib,
    arrays: RwLock<Arrays>,
}

// SAFETY: the arrays are only touched under the lock (readers shared, the writer
// exclusive), which is Judy's own thread-safety rule.
unsafe impl Send for Judy {}
// SAFETY: as above.
unsafe impl Sync for Judy {}

/// Why a key cannot go into JudySL.
fn nul_error(key: &[u8]) -> Error {
    // The API has no "invalid key" error: a key JudySL cannot hold is reported as too long
    // for the limit it can hold (its bytes before the first 0x00).
    Error::KeyTooLong {
        len: key.len(),
        max: key.iter().position(|&b| b == 0).unwrap_or(key.len()),
    }
}

/// A NUL-terminated copy of `key` (which holds no 0x00).
fn c_string(key: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(key);
    buf.push(0);
}

impl Judy {
    /// An empty pair of arrays; `Err` when libJudy is missing.
    pub(crate) fn new() -> std::result::Result<Judy, String> {
        Ok(Judy {
            lib: lib()?,
            arrays: RwLock::new(Arrays {
                l: std::ptr::null_mut(),
                sl: std::ptr::null_mut(),
                l_len: 0,
                sl_len: 0,
                sl_max: 0,
            }),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Arrays> {
        self.arrays.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Arrays> {
        self.arrays.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of the JudyL array (`JudyLMemUsed`); the JudySL half has no such count.
    pub(crate) fn judyl_mem_used(&self) -> usize {
        let a = self.read();
        // SAFETY: a valid (possibly null) JudyL root, read under the lock.
        unsafe { (self.lib.l_mem)(a.l) }
    }
}

impl Drop for Judy {
    fn drop(&mut self) {
        let a = self.arrays.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: exclusive access; frees every node of both arrays (null roots are fine).
        unsafe { (self.lib.l_free)(&raw mut a.l, std::ptr::null_mut()) };
        // SAFETY: as above.
        unsafe { (self.lib.sl_free)(&raw mut a.sl, std::ptr::null_mut()) };
    }
}

/// The value word behind a non-null, non-error `PPvoid_t`.
///
/// # Safety
///
/// `p` points to a live value word of an array the caller holds the lock of.
unsafe fn word(p: PPVoid) -> [u8; VALUE_LEN] {
    // SAFETY: a live value slot (caller).
    (unsafe { *p } as usize).to_ne_bytes()
}

impl KvIndex for Judy {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        let a = self.read();
        let p = if let Ok(k) = <[u8; 8]>::try_from(key) {
            // SAFETY: the JudyL root under the read lock.
            unsafe { (self.lib.l_get)(a.l, u64::from_be_bytes(k) as Word, std::ptr::null_mut()) }
        } else {
            if key.contains(&0) {
                return false;
            }
            let mut buf = Vec::with_capacity(key.len() + 1);
            c_string(key, &mut buf);
            // SAFETY: the JudySL root under the read lock; `buf` is NUL-terminated.
            unsafe { (self.lib.sl_get)(a.sl, buf.as_ptr(), std::ptr::null_mut()) }
        };
        if p.is_null() || p == PPJERR {
            return false;
        }
        // SAFETY: a live slot of an array whose read lock is held.
        let v = unsafe { word(p) };
        f(&v);
        true
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let Ok(v) = <[u8; VALUE_LEN]>::try_from(value) else {
            return Err(Error::ValueTooLong {
                len: value.len(),
                max: VALUE_LEN,
            });
        };
        let v = usize::from_ne_bytes(v);
        let lib = self.lib;
        let mut a = self.write();
        // Judy's `Ins` returns the slot of a present key, or a new slot holding 0, so it
        // cannot tell a new key from a present one holding 0: a `Get` first says which
        // (updates then write the slot `Get` found; new keys pay a missing `Get` before
        // the `Ins`).
        let (found, new_slot) = if let Ok(k) = <[u8; 8]>::try_from(key) {
            let k = u64::from_be_bytes(k) as Word;
            // SAFETY: the JudyL root under the write lock.
            let found = unsafe { (lib.l_get)(a.l, k, std::ptr::null_mut()) };
            let new_slot = if found.is_null() {
                // SAFETY: the JudyL root under the write lock.
                let p = unsafe { (lib.l_ins)(&raw mut a.l, k, std::ptr::null_mut()) };
                a.l_len += usize::from(!p.is_null() && p != PPJERR);
                p
            } else {
                std::ptr::null_mut()
            };
            (found, new_slot)
        } else {
            if key.contains(&0) {
                return Err(nul_error(key));
            }
            if key.len() > orrery::api::MAX_KEY_LEN {
                return Err(Error::KeyTooLong {
                    len: key.len(),
                    max: orrery::api::MAX_KEY_LEN,
                });
            }
            let mut buf = Vec::with_capacity(key.len() + 1);
            c_string(key, &mut buf);
            // SAFETY: the JudySL root under the write lock; `buf` is NUL-terminated.
            let found = unsafe { (lib.sl_get)(a.sl, buf.as_ptr(), std::ptr::null_mut()) };
            let new_slot = if found.is_null() {
                // SAFETY: as above.
                let p = unsafe { (lib.sl_ins)(&raw mut a.sl, buf.as_ptr(), std::ptr::null_mut()) };
                if !p.is_null() && p != PPJERR {
                    a.sl_len += 1;
                    a.sl_max = a.sl_max.max(key.len());
                }
                p
            } else {
                std::ptr::null_mut()
            };
            (found, new_slot)
        };
        let (slot, new) = if found.is_null() {
            (new_slot, true)
        } else {
            (found, false)
        };
        if slot.is_null() || slot == PPJERR {
            return Err(Error::OutOfMemory);
        }
        // SAFETY: a live value slot of an array whose write lock is held.
        unsafe { *slot = v as *mut c_void };
        Ok(new)
    }

    fn remove(&self, key: &[u8]) -> bool {
        let mut a = self.write();
        if let Ok(k) = <[u8; 8]>::try_from(key) {
            // SAFETY: the JudyL root under the write lock.
            let r = unsafe {
                (self.lib.l_del)(
                    &raw mut a.l,
                    u64::from_be_bytes(k) as Word,
                    std::ptr::null_mut(),
                )
            };
            if r == 1 {
                a.l_len -= 1;
            }
            r == 1
        } else {
            if key.contains(&0) {
                return false;
            }
            let mut buf = Vec::with_capacity(key.len() + 1);
            c_string(key, &mut buf);
            // SAFETY: the JudySL root under the write lock; `buf` is NUL-terminated.
            let r = unsafe { (self.lib.sl_del)(&raw mut a.sl, buf.as_ptr(), std::ptr::null_mut()) };
            if r == 1 {
                a.sl_len -= 1;
            }
            r == 1
        }
    }

    fn len(&self) -> usize {
        let a = self.read();
        a.l_len + a.sl_len
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            structure_bytes: self.judyl_mem_used(),
            key_value_bytes: 0,
        }
    }
}

impl OrderedKvIndex for Judy {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let (from, skip): (&[u8], Option<&[u8]>) = match start {
            Bound::Unbounded => (&[], None),
            Bound::Included(k) => (k, None),
            Bound::Excluded(k) => (k, Some(k)),
        };
        let lib = self.lib;
        let a = self.read();
        // JudyL: the first index at or above `from` padded (or cut) to 8 bytes; keys below
        // `from` are filtered below (at most the one equal to a longer `from`'s prefix).
        let mut l_key = [0u8; 8];
        let n = from.len().min(8);
        l_key[..n].copy_from_slice(&from[..n]);
        let mut l_idx = u64::from_be_bytes(l_key) as Word;
        // SAFETY: the JudyL root under the read lock; `l_idx` is readable and writable.
        let mut l_slot = unsafe { (lib.l_first)(a.l, &raw mut l_idx, std::ptr::null_mut()) };
        // JudySL: from `from` cut at its first 0x00 (a lower bound of `from` among
        // NUL-free keys).
        let cut = from.iter().position(|&b| b == 0).unwrap_or(from.len());
        let mut sl_buf = vec![0u8; a.sl_max.max(cut) + 1];
        sl_buf[..cut].copy_from_slice(&from[..cut]);
        // SAFETY: the JudySL root under the read lock; `sl_buf` is NUL-terminated and as
        // long as the longest key plus its NUL, as JudySLFirst/Next require.
        let mut sl_slot =
            unsafe { (lib.sl_first)(a.sl, sl_buf.as_mut_ptr(), std::ptr::null_mut()) };
        let valid = |p: PPVoid| !p.is_null() && p != PPJERR;
        loop {
            let l_k = valid(l_slot).then(|| (l_idx as u64).to_be_bytes());
            let sl_len = sl_buf.iter().position(|&b| b == 0).unwrap_or(sl_buf.len());
            let sl_k = valid(sl_slot).then(|| &sl_buf[..sl_len]);
            let take_l = match (&l_k, sl_k) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(l), Some(s)) => &l[..] < s,
            };
            let (k, slot): (Vec<u8>, PPVoid) = if take_l {
                (l_k.expect("chosen").to_vec(), l_slot)
            } else {
                (sl_k.expect("chosen").to_vec(), sl_slot)
            };
            // SAFETY: a live slot under the read lock.
            let v = unsafe { word(slot) };
            let stop = k.as_slice() >= from
                && skip != Some(k.as_slice())
                && visitor(&k, &v) == ControlFlow::Break(());
            if stop {
                break;
            }
            if take_l {
                // SAFETY: the JudyL root under the read lock.
                l_slot = unsafe { (lib.l_next)(a.l, &raw mut l_idx, std::ptr::null_mut()) };
            } else {
                // SAFETY: the JudySL root under the read lock; the buffer holds the current
                // key and has room for the longest.
                sl_slot = unsafe { (lib.sl_next)(a.sl, sl_buf.as_mut_ptr(), std::ptr::null_mut()) };
            }
        }
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        // Checks only: a full scan.
        let mut last = None;
        self.scan(Bound::Unbounded, &mut |k, v| {
            last = Some((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        last
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::rng::Rng;

    fn judy_or_skip(test: &str) -> Option<Judy> {
        match Judy::new() {
            Ok(j) => Some(j),
            Err(e) => {
                eprintln!("skipping {test}: {e}");
                None
            }
        }
    }

    /// 8-byte keys (JudyL, 0x00 allowed) against a `BTreeMap`: inserts, overwrites,
    /// removals, lookups, scans from random bounds.
    #[test]
    fn judy_l_agrees_with_btreemap() {
        let Some(j) = judy_or_skip("judy_l_agrees_with_btreemap") else {
            return;
        };
        crate::peers::tests::differential_with(&j, Some(&j), 8, 8, &[0, 1, 0x7F, 0xFF], true);
        assert!(j.judyl_mem_used() > 0 || j.is_empty());
    }

    /// Keys of 1..=12 bytes without 0x00 (JudySL, and JudyL for the 8-byte ones), merged
    /// in scans, against a `BTreeMap`.
    #[test]
    fn judy_sl_agrees_with_btreemap() {
        let Some(j) = judy_or_skip("judy_sl_agrees_with_btreemap") else {
            return;
        };
        crate::peers::tests::differential_with(&j, Some(&j), 0, 8, &[1, 2, 0x7F, 0xFF], true);
        // Scans across both arrays from bounds with 0x00 in them.
        let j = Judy::new().unwrap();
        let mut model = BTreeMap::new();
        let mut rng = Rng::new(3);
        for i in 0..3000u64 {
            let len = [3usize, 8, 8, 12, 20][rng.below(5) as usize];
            let mut k = vec![0u8; len];
            for b in &mut k {
                *b = b'a' + rng.below(3) as u8;
            }
            if len == 8 && i % 2 == 0 {
                k[3] = 0;
            }
            let v = i.to_le_bytes();
            assert_eq!(j.insert(&k, &v), Ok(!model.contains_key(&k)));
            model.insert(k, v.to_vec());
        }
        for _ in 0..200 {
            let mut from = vec![b'a' + rng.below(3) as u8; rng.range_incl(0, 10) as usize];
            if !from.is_empty() && rng.below(2) == 0 {
                let at = rng.below(from.len() as u64) as usize;
                from[at] = 0;
            }
            let mut got = Vec::new();
            j.scan(Bound::Included(&from), &mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                if got.len() == 50 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            let want: Vec<_> = model
                .range::<[u8], _>((Bound::Included(&from[..]), Bound::Unbounded))
                .take(50)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "from {from:?}");
        }
    }

    #[test]
    fn judy_refuses_what_it_cannot_hold() {
        let Some(j) = judy_or_skip("judy_refuses_what_it_cannot_hold") else {
            return;
        };
        assert_eq!(
            j.insert(b"a\0b", b"12345678"),
            Err(Error::KeyTooLong { len: 3, max: 1 })
        );
        assert_eq!(
            j.insert(b"ab", b"1234"),
            Err(Error::ValueTooLong { len: 4, max: 8 })
        );
        assert_eq!(j.insert(b"\0\0\0\0\0\0\0\0", b"12345678"), Ok(true));
        assert_eq!(j.insert(b"", b"12345678"), Ok(true));
        assert_eq!(j.get(b""), Some(b"12345678".to_vec()));
        assert_eq!(j.len(), 2);
        assert!(!j.remove(b"a\0b"));
    }
}
