//! The compact sequence of strings a small collection keeps inside its key's value (the
//! role of Redis's listpack, without its back-pointers: every walk here goes forward).
//!
//! ```text
//! pack    := header entries
//! header  := varint(count << 1 | u)       count: the number of entries (LEB128 varint)
//! u = 0:  entries := (varint(len) bytes)*  each entry length-prefixed (1 byte below 128)
//! u = 1:  varint(w0) varint(w1) bytes*    even entries are w0 bytes, odd ones w1: no
//!                                          length per entry
//! ```
//!
//! The second form is chosen whenever the even and the odd entries each have one length
//! (two entries or more): fixed-width members (ids, hashes, UUIDs), or a hash whose
//! fields and values each have one length, or a sorted set's `member score` pairs with
//! fixed-width members, save a byte or more per entry.
//!
//! A hash stores `field value` pairs as consecutive entries, a set its members, a sorted
//! set `member score` pairs (the score's 8 bytes), a list its elements. Changes rebuild
//! the sequence (one copy, as a listpack insertion moves the tail): the thresholds keep
//! these sequences small. A malformed sequence (which only a damaged value could hold)
//! reads as ending where the damage starts, never panics.

/// Appends `n` as a LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Bytes of `n` as a varint.
pub(super) fn varint_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Reads a varint: (value, bytes used); `None` when cut short or longer than 10 bytes.
fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut n = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7F).checked_shl(7 * i as u32)?;
        if byte & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

/// The two widths of `items` when every even entry has one length and every odd one
/// another (and there are two entries or more).
fn widths(items: &[&[u8]]) -> Option<(usize, usize)> {
    let (w0, w1) = (items.first()?.len(), items.get(1)?.len());
    items
        .iter()
        .enumerate()
        .all(|(i, x)| x.len() == if i.is_multiple_of(2) { w0 } else { w1 })
        .then_some((w0, w1))
}

/// A borrowed sequence: its entry count, its entries' widths when uniform, and the bytes
/// after the header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pack<'a> {
    count: usize,
    widths: Option<(usize, usize)>,
    body: &'a [u8],
}

impl<'a> Pack<'a> {
    /// The sequence encoded in `bytes` (empty when `bytes` is empty or malformed).
    pub(crate) fn new(bytes: &'a [u8]) -> Pack<'a> {
        let empty = Pack {
            count: 0,
            widths: None,
            body: &[],
        };
        let Some((head, mut used)) = get_varint(bytes) else {
            return empty;
        };
        let count = usize::try_from(head >> 1).unwrap_or(0);
        let widths = if head & 1 == 1 {
            let mut w = [0usize; 2];
            for x in &mut w {
                let Some((n, u)) = get_varint(&bytes[used..]) else {
                    return empty;
                };
                *x = usize::try_from(n).unwrap_or(usize::MAX);
                used += u;
            }
            Some((w[0], w[1]))
        } else {
            None
        };
        Pack {
            count,
            widths,
            body: &bytes[used..],
        }
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The entries, first to last.
    pub(crate) fn iter(&self) -> PackIter<'a> {
        PackIter {
            rest: self.body,
            left: self.count,
            widths: self.widths,
            at: 0,
        }
    }

    /// The entries as slices into the sequence.
    pub(crate) fn to_vec(self) -> Vec<&'a [u8]> {
        let mut v = Vec::with_capacity(self.count);
        v.extend(self.iter());
        v
    }

    /// Encodes `items` as a sequence, appended to `out`.
    pub(crate) fn encode_into(out: &mut Vec<u8>, items: &[&[u8]]) {
        let n = items.len() as u64;
        match widths(items) {
            Some((w0, w1)) => {
                let body: usize = items.iter().map(|i| i.len()).sum();
                out.reserve(varint_len(n << 1 | 1) + 20 + body);
                put_varint(out, n << 1 | 1);
                put_varint(out, w0 as u64);
                put_varint(out, w1 as u64);
                for i in items {
                    out.extend_from_slice(i);
                }
            }
            None => {
                let body: usize = items
                    .iter()
                    .map(|i| varint_len(i.len() as u64) + i.len())
                    .sum();
                out.reserve(varint_len(n << 1) + body);
                put_varint(out, n << 1);
                for i in items {
                    put_varint(out, i.len() as u64);
                    out.extend_from_slice(i);
                }
            }
        }
    }

    /// Encodes `items` as a sequence.
    pub(crate) fn encode(items: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        Pack::encode_into(&mut out, items);
        out
    }

    /// Bytes the encoding of `items` takes.
    #[cfg(test)]
    fn encoded_len(items: &[&[u8]]) -> usize {
        let n = items.len() as u64;
        match widths(items) {
            Some((w0, w1)) => {
                varint_len(n << 1 | 1)
                    + varint_len(w0 as u64)
                    + varint_len(w1 as u64)
                    + items.iter().map(|i| i.len()).sum::<usize>()
            }
            None => {
                varint_len(n << 1)
                    + items
                        .iter()
                        .map(|i| varint_len(i.len() as u64) + i.len())
                        .sum::<usize>()
            }
        }
    }
}

/// The entries of a [`Pack`], in order.
#[derive(Clone, Debug)]
pub(crate) struct PackIter<'a> {
    rest: &'a [u8],
    left: usize,
    widths: Option<(usize, usize)>,
    /// The index of the next entry.
    at: usize,
}

impl<'a> Iterator for PackIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 || self.rest.is_empty() && self.widths.is_none() {
            return None;
        }
        let (start, end) = match self.widths {
            Some((w0, w1)) => (0, if self.at.is_multiple_of(2) { w0 } else { w1 }),
            None => {
                let (len, used) = get_varint(self.rest)?;
                (used, used.checked_add(usize::try_from(len).ok()?)?)
            }
        };
        let Some(item) = self.rest.get(start..end) else {
            self.left = 0;
            return None;
        };
        self.rest = &self.rest[end..];
        self.left -= 1;
        self.at += 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_lengths() {
        let long = vec![7u8; 300];
        let fixed: Vec<&[u8]> = vec![b"f1", b"value", b"f2", b"vvvvv", b"f3"];
        for items in [
            vec![&b""[..], b"a", &long, b"\x00\xff"],
            fixed.clone(),
            vec![b"one"],
            vec![],
        ] {
            let bytes = Pack::encode(&items);
            assert_eq!(bytes.len(), Pack::encoded_len(&items));
            let p = Pack::new(&bytes);
            assert_eq!(p.len(), items.len());
            assert_eq!(p.to_vec(), items);
            let mut out = vec![9];
            Pack::encode_into(&mut out, &items);
            assert_eq!(&out[1..], &bytes[..]);
        }
        // Fixed widths: no length per entry.
        assert_eq!(Pack::encoded_len(&fixed), 3 + 2 + 5 + 2 + 5 + 2);
        for n in [0u64, 1, 127, 128, 300, u64::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, n);
            assert_eq!(v.len(), varint_len(n));
            assert_eq!(get_varint(&v), Some((n, v.len())));
        }
    }

    #[test]
    fn damage_reads_as_a_shorter_sequence() {
        for items in [vec![&b"abc"[..], b"de"], vec![b"ab", b"cd", b"ef"]] {
            let bytes = Pack::encode(&items);
            for cut in 0..bytes.len() {
                let p = Pack::new(&bytes[..cut]);
                assert!(p.iter().count() <= items.len());
            }
            // A count larger than the entries present.
            let mut bad = bytes.clone();
            bad[0] = 0x7E | (bad[0] & 1);
            assert_eq!(Pack::new(&bad).iter().count(), items.len());
        }
        assert_eq!(Pack::new(&[0xFF; 11]).len(), 0);
        // Widths larger than any body.
        assert_eq!(Pack::new(&[5, 0xFF, 0xFF, 0xFF, 0x7F, 1]).iter().count(), 0);
    }
}
