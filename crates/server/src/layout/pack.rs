//! The compact sequence of strings a small collection keeps inside its key's value (the
//! role of Redis's listpack, without its back-pointers: every walk here goes forward).
//!
//! ```text
//! pack  := count entry*          count: the number of entries, LEB128 varint
//! entry := len bytes             len: LEB128 varint (1 byte below 128), then the bytes
//! ```
//!
//! A hash stores `field value` pairs as consecutive entries, a set its members, a sorted
//! set `member score` pairs (the score as its 8-byte order-preserving key), a list its
//! elements. Changes rebuild the sequence (one copy, as a listpack insertion moves the
//! tail): the thresholds keep these sequences small. A malformed sequence (which only a
//! damaged value could hold) reads as ending where the damage starts, never panics.

/// Appends `n` as a LEB128 varint.
pub(super) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Bytes of `n` as a varint.
fn varint_len(mut n: u64) -> usize {
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

/// A borrowed sequence: its entry count and the bytes after the count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pack<'a> {
    count: usize,
    body: &'a [u8],
}

impl<'a> Pack<'a> {
    /// The sequence encoded in `bytes` (empty when `bytes` is empty or malformed).
    pub(crate) fn new(bytes: &'a [u8]) -> Pack<'a> {
        match get_varint(bytes) {
            Some((count, used)) => Pack {
                count: usize::try_from(count).unwrap_or(0),
                body: &bytes[used..],
            },
            None => Pack {
                count: 0,
                body: &[],
            },
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
        let body: usize = items
            .iter()
            .map(|i| varint_len(i.len() as u64) + i.len())
            .sum();
        out.reserve(varint_len(items.len() as u64) + body);
        put_varint(out, items.len() as u64);
        for i in items {
            put_varint(out, i.len() as u64);
            out.extend_from_slice(i);
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
        varint_len(items.len() as u64)
            + items
                .iter()
                .map(|i| varint_len(i.len() as u64) + i.len())
                .sum::<usize>()
    }
}

/// The entries of a [`Pack`], in order.
#[derive(Clone, Debug)]
pub(crate) struct PackIter<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for PackIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let (len, used) = get_varint(self.rest)?;
        let end = used.checked_add(usize::try_from(len).ok()?)?;
        let Some(item) = self.rest.get(used..end) else {
            self.left = 0;
            return None;
        };
        self.rest = &self.rest[end..];
        self.left -= 1;
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
        let items: Vec<&[u8]> = vec![b"", b"a", &long, b"\x00\xff"];
        let bytes = Pack::encode(&items);
        assert_eq!(bytes.len(), Pack::encoded_len(&items));
        let p = Pack::new(&bytes);
        assert_eq!(p.len(), 4);
        assert_eq!(p.to_vec(), items);
        let mut out = vec![9];
        Pack::encode_into(&mut out, &items);
        assert_eq!(&out[1..], &bytes[..]);
        for n in [0u64, 1, 127, 128, 300, u64::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, n);
            assert_eq!(v.len(), varint_len(n));
            assert_eq!(get_varint(&v), Some((n, v.len())));
        }
    }

    #[test]
    fn damage_reads_as_a_shorter_sequence() {
        let bytes = Pack::encode(&[b"abc", b"de"]);
        for cut in 0..bytes.len() {
            let p = Pack::new(&bytes[..cut]);
            assert!(p.iter().count() <= 2);
        }
        assert_eq!(Pack::new(&[0xFF; 11]).len(), 0);
        // A count larger than the entries present.
        let mut bad = bytes.clone();
        bad[0] = 9;
        assert_eq!(Pack::new(&bad).iter().count(), 2);
    }
}
