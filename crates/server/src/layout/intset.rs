//! Sorted fixed-width integers: the compact form of a set whose members are all integers
//! (Redis's intset; `set-max-intset-entries`).
//!
//! ```text
//! intset := width value*     width: 2, 4 or 8 (bytes per value, the narrowest that
//!                            holds every member); values: ascending, little-endian
//! ```
//!
//! `SMEMBERS` of such a set lists the members in ascending numeric order, as Redis does.

/// A borrowed integer set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IntSet<'a> {
    width: usize,
    body: &'a [u8],
}

fn width_of(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl<'a> IntSet<'a> {
    /// The set encoded in `bytes` (empty when malformed).
    pub(crate) fn new(bytes: &'a [u8]) -> IntSet<'a> {
        match bytes.split_first() {
            Some((&w, body)) if matches!(w, 2 | 4 | 8) => IntSet {
                width: usize::from(w),
                body: &body[..body.len() - body.len() % usize::from(w)],
            },
            _ => IntSet {
                width: 8,
                body: &[],
            },
        }
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.body.len() / self.width
    }

    /// The member at position `i` (ascending order).
    pub(crate) fn get(&self, i: usize) -> i64 {
        let b = &self.body[i * self.width..(i + 1) * self.width];
        match self.width {
            2 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            4 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
        }
    }

    /// Where `v` is, or where it would go.
    pub(crate) fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Whether `v` is a member.
    pub(crate) fn contains(&self, v: i64) -> bool {
        self.search(v).is_ok()
    }

    /// The members, ascending.
    pub(crate) fn iter(self) -> impl Iterator<Item = i64> + 'a {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Encodes ascending, distinct `values` in the narrowest width.
    pub(crate) fn encode(values: &[i64]) -> Vec<u8> {
        let width = values.iter().map(|&v| width_of(v)).max().unwrap_or(2);
        let mut out = Vec::with_capacity(1 + width * values.len());
        out.push(width as u8);
        for &v in values {
            match width {
                2 => out.extend_from_slice(&(v as i16).to_le_bytes()),
                4 => out.extend_from_slice(&(v as i32).to_le_bytes()),
                _ => out.extend_from_slice(&v.to_le_bytes()),
            }
        }
        out
    }

    /// The encoding of this set with `v` added; `None` when it is a member already.
    pub(crate) fn with(&self, v: i64) -> Option<Vec<u8>> {
        let at = self.search(v).err()?;
        let mut all: Vec<i64> = self.iter().collect();
        all.insert(at, v);
        Some(IntSet::encode(&all))
    }

    /// The encoding of this set without `v`; `None` when it is not a member.
    pub(crate) fn without(&self, v: i64) -> Option<Vec<u8>> {
        let at = self.search(v).ok()?;
        let mut all: Vec<i64> = self.iter().collect();
        all.remove(at);
        Some(IntSet::encode(&all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_order_and_membership() {
        let mut bytes = IntSet::encode(&[]);
        for v in [5, -3, 70_000, 5, i64::MIN, i64::MAX, 0] {
            if let Some(b) = IntSet::new(&bytes).with(v) {
                bytes = b;
            }
        }
        let s = IntSet::new(&bytes);
        assert_eq!(bytes[0], 8);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [i64::MIN, -3, 0, 5, 70_000, i64::MAX]
        );
        assert!(s.contains(70_000) && !s.contains(6));
        let small = IntSet::encode(&[-1, 2]);
        assert_eq!(small.len(), 5);
        let b = IntSet::new(&bytes).without(i64::MIN).unwrap();
        assert!(IntSet::new(&b).without(i64::MIN).is_none());
        assert_eq!(IntSet::new(&b).len(), 5);
        assert_eq!(IntSet::new(&[3, 1]).len(), 0);
    }
}
