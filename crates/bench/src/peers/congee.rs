//! `congee`: an adaptive radix tree with optimistic lock coupling (ART-OLC), for 8-byte
//! keys and 8-byte values only.
//!
//! Keys are the 8 bytes read big-endian as a `usize` (so byte order is numeric order and
//! congee's own big-endian layout keeps scans in key order); values are 8 bytes read
//! little-endian. The registry only routes 8-byte keys and values here; any other length is
//! rejected (`KeyTooLong`/`ValueTooLong` with `max: 8` — the API has no "wrong length"
//! error) or simply not found. Congee's range query excludes its end and works on a
//! caller-sized buffer, so a scan proceeds in chunks and looks the key `u64::MAX` up
//! separately. `len` counts by scanning.

use std::ops::{Bound, ControlFlow};

use congee::Congee;
use orrery::api::ScanVisitor;
use orrery::{Error, KvIndex, MemoryUsage, OrderedKvIndex, Result};

/// Keys fetched per range call of a scan.
const CHUNK: usize = 32;

/// congee's ART behind Orrery's API.
#[derive(Default)]
pub(crate) struct CongeeArt {
    tree: Congee<usize, usize>,
}

fn word(bytes: &[u8]) -> Option<[u8; 8]> {
    bytes.try_into().ok()
}

/// The smallest 8-byte key (as a number) inside the start bound, `None` when none is.
fn lower(start: Bound<&[u8]>) -> Option<usize> {
    let (b, inclusive) = match start {
        Bound::Unbounded => return Some(0),
        Bound::Included(b) => (b, true),
        Bound::Excluded(b) => (b, false),
    };
    if b.len() < 8 {
        // Every 8-byte key >= b starts with at least b padded with zeros, which is > b.
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        return Some(usize::from_be_bytes(w));
    }
    let first = usize::from_be_bytes(b[..8].try_into().ok()?);
    if b.len() == 8 && inclusive {
        Some(first)
    } else {
        // Excluded, or b longer than 8 bytes (its 8-byte prefix sorts before it).
        first.checked_add(1)
    }
}

impl KvIndex for CongeeArt {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        let Some(k) = word(key) else { return false };
        let guard = self.tree.pin();
        match self.tree.get(&usize::from_be_bytes(k), &guard) {
            Some(v) => {
                f(&v.to_le_bytes());
                true
            }
            None => false,
        }
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let Some(k) = word(key) else {
            return Err(Error::KeyTooLong {
                len: key.len(),
                max: 8,
            });
        };
        let Some(v) = word(value) else {
            return Err(Error::ValueTooLong {
                len: value.len(),
                max: 8,
            });
        };
        let guard = self.tree.pin();
        match self
            .tree
            .insert(usize::from_be_bytes(k), usize::from_le_bytes(v), &guard)
        {
            Ok(old) => Ok(old.is_none()),
            Err(_) => Err(Error::OutOfMemory),
        }
    }

    fn remove(&self, key: &[u8]) -> bool {
        let Some(k) = word(key) else { return false };
        let guard = self.tree.pin();
        self.tree.remove(&usize::from_be_bytes(k), &guard).is_some()
    }

    /// Counts by scanning: congee keeps no count, and a shared counter would add a
    /// contended atomic to every insert. O(n); the benchmark calls it outside timed phases.
    fn len(&self) -> usize {
        let mut n = 0;
        self.scan(Bound::Unbounded, &mut |_, _| {
            n += 1;
            ControlFlow::Continue(())
        });
        n
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

impl OrderedKvIndex for CongeeArt {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let Some(mut from) = lower(start) else { return };
        let guard = self.tree.pin();
        let mut buf = [(0usize, 0usize); CHUNK];
        loop {
            let n = self.tree.range(&from, &usize::MAX, &mut buf, &guard);
            for &(k, v) in &buf[..n] {
                if visitor(&k.to_be_bytes(), &v.to_le_bytes()).is_break() {
                    return;
                }
            }
            if n < CHUNK {
                break;
            }
            match buf[n - 1].0.checked_add(1) {
                Some(next) => from = next,
                None => return,
            }
        }
        if let Some(v) = self.tree.get(&usize::MAX, &guard) {
            let _: ControlFlow<()> = visitor(&usize::MAX.to_be_bytes(), &v.to_le_bytes());
        }
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let guard = self.tree.pin();
        if let Some(v) = self.tree.get(&usize::MAX, &guard) {
            return Some((usize::MAX.to_be_bytes().to_vec(), v.to_le_bytes().to_vec()));
        }
        // Widen a window below the top until it holds keys, then take its last one.
        let mut buf = [(0usize, 0usize); CHUNK];
        for shift in (0..=usize::BITS).step_by(4) {
            let from = usize::MAX
                .checked_shr(usize::BITS - shift)
                .map_or(0, |w| usize::MAX - w);
            let mut lo = from;
            let mut last = None;
            loop {
                let n = self.tree.range(&lo, &usize::MAX, &mut buf, &guard);
                if n > 0 {
                    last = Some(buf[n - 1]);
                }
                if n < CHUNK {
                    break;
                }
                lo = buf[n - 1].0 + 1;
            }
            if let Some((k, v)) = last {
                return Some((k.to_be_bytes().to_vec(), v.to_le_bytes().to_vec()));
            }
            if from == 0 {
                break;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn congee_matches_model() {
        let t = CongeeArt::default();
        crate::peers::tests::differential(&t, Some(&t), 8, 8);
        assert_eq!(
            t.insert(b"short", &[0; 8]),
            Err(Error::KeyTooLong { len: 5, max: 8 })
        );
        assert!(t.insert(&[0; 8], b"v").is_err());
    }

    #[test]
    fn lower_bounds() {
        assert_eq!(lower(Bound::Unbounded), Some(0));
        assert_eq!(lower(Bound::Included(&[0, 0, 0, 0, 0, 0, 0, 5])), Some(5));
        assert_eq!(lower(Bound::Excluded(&[0, 0, 0, 0, 0, 0, 0, 5])), Some(6));
        assert_eq!(
            lower(Bound::Included(&[0, 0, 0, 0, 0, 0, 0, 5, 0])),
            Some(6)
        );
        assert_eq!(lower(Bound::Included(&[1])), Some(1 << 56));
        assert_eq!(lower(Bound::Excluded(&[0xFF; 8])), None);
    }
}
