//! A large list node's run of elements: a headerless sequence of entries that can be
//! walked from either end (the role of a listpack inside Redis's quicklist).
//!
//! ```text
//! run    := entry*
//! entry  := varint(len) bytes rvarint(len)
//! ```
//!
//! `varint` is the LEB128 varint of `crate::layout::pack`; `rvarint` is the same bytes in
//! reverse order, so that read from the entry's last byte backward it is again a LEB128
//! varint (low group first, the continuation bit on every byte but the last read). A
//! forward walk reads the prefix and skips `len` bytes and the suffix; a backward walk
//! reads the suffix, whose length gives the entry's start with no walk from the front.
//! So the tail of a node (`RPOP`, `LINDEX -1`, `LRANGE -k -1`) costs the same as its head.
//!
//! An element below 128 bytes takes two bytes besides itself (as in a listpack: an
//! encoding byte and a back-length byte). The run has no header: the node table beside
//! it (`crate::store::Node`) keeps the element count and byte length, so two runs
//! concatenated are a run, and a push at either end is one copy.
//!
//! A damaged run (which only a damaged value could hold) never panics a walk: an entry
//! whose prefix and suffix disagree, or that would reach past the run, ends it. A walk
//! that starts at an intact end reads intact entries up to the damage.

use super::pack::varint_len;

/// Appends `n` as a LEB128 varint, reversed when `rev`.
fn put_varint(out: &mut Vec<u8>, n: u64, rev: bool) {
    let mut buf = [0u8; 10];
    let mut used = 0;
    let mut n = n;
    loop {
        let low = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            buf[used] = low;
            used += 1;
            break;
        }
        buf[used] = low | 0x80;
        used += 1;
    }
    let b = &mut buf[..used];
    if rev {
        b.reverse();
    }
    out.extend_from_slice(b);
}

/// Reads a varint from the front of `b` (`rev` false) or backward from its end (`rev`
/// true): (value, bytes used); `None` when cut short or longer than 10 bytes.
fn get_varint(b: &[u8], rev: bool) -> Option<(u64, usize)> {
    let mut n = 0u64;
    for i in 0..b.len().min(10) {
        let byte = if rev { b[b.len() - 1 - i] } else { b[i] };
        n |= u64::from(byte & 0x7F).checked_shl(7 * i as u32)?;
        if byte & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

/// Appends one entry for `item` (see the [module docs](self)).
pub(crate) fn put_entry(out: &mut Vec<u8>, item: &[u8]) {
    let n = item.len() as u64;
    out.reserve(entry_len(item));
    put_varint(out, n, false);
    out.extend_from_slice(item);
    put_varint(out, n, true);
}

/// Bytes [`put_entry`] takes for `item`.
pub(crate) fn entry_len(item: &[u8]) -> usize {
    2 * varint_len(item.len() as u64) + item.len()
}

/// The entries of a run: an iterator from the front and, with
/// [`DoubleEndedIterator`], from the back.
pub(crate) fn entries(run: &[u8]) -> Entries<'_> {
    Entries { rest: run }
}

/// The entries of a run not yet walked from either end.
#[derive(Clone, Debug)]
pub(crate) struct Entries<'a> {
    rest: &'a [u8],
}

impl<'a> Entries<'a> {
    /// The bytes of the entries not yet walked (a run itself): after walking `k` entries
    /// from the back, the run less its last `k` entries.
    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let step = || {
            let (len, used) = get_varint(self.rest, false)?;
            let len = usize::try_from(len).ok()?;
            let end = used.checked_add(len)?;
            let item = self.rest.get(used..end)?;
            let back = self.rest.get(end..end.checked_add(used)?)?;
            (get_varint(back, true) == Some((len as u64, used))).then_some((item, end + used))
        };
        match step() {
            Some((item, used)) => {
                self.rest = &self.rest[used..];
                Some(item)
            }
            None => {
                self.rest = &[];
                None
            }
        }
    }
}

impl<'a> DoubleEndedIterator for Entries<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        let step = || {
            let (len, used) = get_varint(self.rest, true)?;
            let len = usize::try_from(len).ok()?;
            let item_end = self.rest.len() - used;
            let start = item_end.checked_sub(len)?.checked_sub(used)?;
            let front = &self.rest[start..start + used];
            (get_varint(front, false) == Some((len as u64, used)))
                .then(|| (&self.rest[start + used..item_end], start))
        };
        match step() {
            Some((item, start)) => {
                self.rest = &self.rest[..start];
                Some(item)
            }
            None => {
                self.rest = &[];
                None
            }
        }
    }
}

/// The run of `count` entries from entry `i` on (`run` holding `count` entries), found
/// by a walk from the nearer end: entry `i` of a node costs `min(i, count - i)` steps.
pub(crate) fn from_entry(run: &[u8], count: usize, i: usize) -> &[u8] {
    let mut it = entries(run);
    if i <= count / 2 {
        for _ in 0..i {
            if it.next().is_none() {
                return &[];
            }
        }
        it.remaining()
    } else {
        for _ in i..count {
            if it.next_back().is_none() {
                return &[];
            }
        }
        run.get(it.remaining().len()..).unwrap_or_default()
    }
}

/// Entry `i` of a run of `count` entries, found from the nearer end.
pub(crate) fn nth_entry(run: &[u8], count: usize, i: usize) -> Option<&[u8]> {
    if i <= count / 2 {
        entries(run).nth(i)
    } else {
        entries(run).nth_back(count.checked_sub(i + 1)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(items: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for i in items {
            put_entry(&mut v, i);
        }
        v
    }

    #[test]
    fn both_directions_walk_every_size() {
        // Lengths at the varint edges (1, 2 and 3 bytes) and an empty element.
        let sizes = [0usize, 1, 3, 127, 128, 129, 300, 16_383, 16_384, 70_000];
        let items: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let run = run_of(&refs);
        assert_eq!(run.len(), refs.iter().map(|i| entry_len(i)).sum::<usize>());
        assert_eq!(entries(&run).collect::<Vec<_>>(), refs);
        let back: Vec<&[u8]> = entries(&run).rev().collect();
        assert_eq!(back, refs.iter().rev().copied().collect::<Vec<_>>());
        for (i, want) in refs.iter().enumerate() {
            assert_eq!(nth_entry(&run, refs.len(), i), Some(*want), "{i}");
            let tail: Vec<&[u8]> = entries(from_entry(&run, refs.len(), i)).collect();
            assert_eq!(tail, refs[i..], "{i}");
        }
        assert_eq!(nth_entry(&run, refs.len(), refs.len()), None);
        assert!(from_entry(&run, refs.len(), refs.len()).is_empty());
        // Walks from both ends meet without overlapping.
        let mut it = entries(&run);
        let mut seen = Vec::new();
        while let Some(a) = it.next() {
            seen.push(a);
            if let Some(b) = it.next_back() {
                seen.push(b);
            }
        }
        assert_eq!(seen.len(), refs.len());
        assert_eq!(entry_len(b""), 2);
        assert_eq!(entry_len(&[0; 127]), 129);
        assert_eq!(entry_len(&[0; 128]), 132);
    }

    #[test]
    fn popping_the_tail_leaves_a_run() {
        let items: Vec<Vec<u8>> = (0..128u32)
            .map(|i| i.to_be_bytes().repeat(i as usize % 9))
            .collect();
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        let mut run = run_of(&refs);
        for k in (0..refs.len()).rev() {
            let mut it = entries(&run);
            assert_eq!(it.next_back(), Some(refs[k]));
            let left = it.remaining().len();
            run.truncate(left);
            assert_eq!(entries(&run).count(), k);
        }
        assert!(run.is_empty());
    }

    #[test]
    fn runs_concatenate() {
        let a = run_of(&[b"x", b"yy"]);
        let b = run_of(&[&[5u8; 200][..], b""]);
        let ab = [a, b].concat();
        let want: Vec<&[u8]> = vec![b"x", b"yy", &[5u8; 200], b""];
        assert_eq!(entries(&ab).collect::<Vec<_>>(), want);
        assert_eq!(entries(&ab).rev().count(), 4);
    }

    #[test]
    fn damage_reads_as_a_shorter_run() {
        let refs: Vec<&[u8]> = vec![b"abc", &[1u8; 200], b"", b"de"];
        let run = run_of(&refs);
        for cut in 0..run.len() {
            // From the intact end: a prefix (or suffix) of the entries, shorter.
            let f: Vec<&[u8]> = entries(&run[..cut]).collect();
            assert!(f.len() < refs.len() && refs.starts_with(&f), "{cut}");
            let mut b: Vec<&[u8]> = entries(&run[cut + 1..]).rev().collect();
            b.reverse();
            assert!(b.len() < refs.len() && refs.ends_with(&b), "{cut}");
            // From the damaged end: whatever the bytes decode to, within the run.
            assert!(entries(&run[..cut]).rev().count() <= cut);
            assert!(entries(&run[cut..]).count() <= run.len() - cut);
        }
        for at in 0..run.len() {
            let mut bad = run.clone();
            bad[at] ^= 0x80;
            assert!(entries(&bad).count() <= bad.len() / 2);
            assert!(entries(&bad).rev().count() <= bad.len() / 2);
        }
        assert_eq!(entries(&[0xFF; 11]).count(), 0);
        assert_eq!(entries(&[0xFF; 11]).rev().count(), 0);
        assert_eq!(nth_entry(&[0x05, 1], 3, 2), None);
    }
}
