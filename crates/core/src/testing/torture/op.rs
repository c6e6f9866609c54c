//! The operations of a torture stream, and how they are printed.
//!
//! An [`Op`] is self-contained: everything it does and checks follows from its fields and
//! the model state before it, so any subsequence of a recorded stream can be replayed on a
//! fresh structure and model (what the minimizer does). Values are [`Val`]s, a length and a
//! tag from which the bytes are made, so that a 1 MiB value costs eight bytes in a recorded
//! stream and prints exactly in a reproduction. Keys are stored as bytes and printed
//! exactly ([`exact`]): long runs of one byte (the keys at `MAX_KEY_LEN`) are compressed to
//! `[0xNN; n]`, so every printed reproduction can be typed back in.

use std::fmt;
use std::ops::Bound;

/// A value: `len` bytes made from `tag` (see [`Val::bytes`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Val {
    /// Length in bytes (may exceed `MAX_VALUE_LEN` in the over-long operations).
    pub len: u32,
    /// What makes values of one stream distinct.
    pub tag: u32,
}

impl Val {
    /// The bytes: the tag's four little-endian bytes, then the byte `tag % 251` repeated,
    /// all cut to `len`.
    pub fn bytes(self) -> Vec<u8> {
        let len = self.len as usize;
        let mut v = Vec::with_capacity(len);
        v.extend(self.tag.to_le_bytes().iter().take(len));
        v.resize(len, (self.tag % 251) as u8);
        v
    }
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "val({}, #{})", self.len, self.tag)
    }
}

/// What a `compute` closure returns for the current value `old`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeAction {
    /// `Some(v)`: store `v`.
    Set(Val),
    /// `None`: remove the key (or leave it absent).
    Remove,
    /// `Some(old ++ v)` (`v` when absent).
    Append(Val),
    /// `old.map(to_vec)`: store what is there (absent stays absent).
    Keep,
    /// `Some` of a value one byte over `MAX_VALUE_LEN`: rejected, the key unchanged.
    OverLong,
}

/// What an `update` closure returns for the current value `old`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateAction {
    /// Replace by `v`.
    Set(Val),
    /// Replace by `old ++ v`.
    Append(Val),
    /// A value one byte over `MAX_VALUE_LEN`: rejected, the key unchanged.
    OverLong,
}

/// Which operation an [`Op::OverLong`] tries with a key over `MAX_KEY_LEN` (made from the
/// op's key by padding it with `0x00`) or a value over `MAX_VALUE_LEN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverLongVia {
    /// `insert` of an over-long key: `KeyTooLong`.
    InsertKey,
    /// `insert` of an over-long value: `ValueTooLong`, the key unchanged.
    InsertValue,
    /// `compute` of an over-long key: `KeyTooLong`, the closure not called.
    ComputeKey,
    /// `update` of an over-long key: `KeyTooLong`, the closure not called.
    UpdateKey,
    /// `update_in_place` of an over-long key: `KeyTooLong`, the closure not called.
    UpdateInPlaceKey,
    /// `get`, `contains_key`, `get_many` and `remove` of an over-long key: absent.
    ReadKey,
}

/// One step of an [`Op::Iter`] walk over a concrete iterator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `next()`: the next pair from the front.
    Next,
    /// `next_back()`: the next pair from the back.
    NextBack,
    /// `seek(bound)`: reposition the front.
    Seek(Bound<Vec<u8>>),
    /// `seek_back(bound)`: reposition the back.
    SeekBack(Bound<Vec<u8>>),
}

/// One operation of a torture stream. Scan limits are the number of pairs after which the
/// visitor breaks (`u32::MAX`: never).
#[derive(Clone, PartialEq, Eq)]
pub enum Op {
    /// `insert(key, value)`: new or not.
    Insert {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Val,
    },
    /// `remove(key)`: present or not.
    Remove {
        /// The key.
        key: Vec<u8>,
    },
    /// `get`, `get_with` and `contains_key` of `key`.
    Get {
        /// The key.
        key: Vec<u8>,
    },
    /// `get_many(keys)`: one answer per key, in order.
    GetMany {
        /// The keys (duplicates and misses included).
        keys: Vec<Vec<u8>>,
    },
    /// `compute(key, f)`: `f` called once with the current value.
    Compute {
        /// The key.
        key: Vec<u8>,
        /// What `f` returns.
        action: ComputeAction,
    },
    /// `update(key, f)`: `f` called once with the current value when present, never when
    /// absent.
    Update {
        /// The key.
        key: Vec<u8>,
        /// What `f` returns.
        action: UpdateAction,
    },
    /// `update_in_place(key, f)` with `f` xoring every byte with `xor`.
    UpdateInPlace {
        /// The key.
        key: Vec<u8>,
        /// The byte every value byte is xored with.
        xor: u8,
    },
    /// An operation beyond a limit: rejected or absent, nothing changed.
    OverLong {
        /// The key (padded past `MAX_KEY_LEN` for the key variants).
        key: Vec<u8>,
        /// Which operation.
        via: OverLongVia,
    },
    /// `len()` and `is_empty()`.
    Len,
    /// `scan(start)` stopping after `limit` pairs.
    Scan {
        /// The start bound.
        start: Bound<Vec<u8>>,
        /// Pairs before stopping.
        limit: u32,
    },
    /// `scan_rev(end)` stopping after `limit` pairs.
    ScanRev {
        /// The end bound.
        end: Bound<Vec<u8>>,
        /// Pairs before stopping.
        limit: u32,
    },
    /// `scan_range(start, end)` stopping after `limit` pairs.
    ScanRange {
        /// The start bound.
        start: Bound<Vec<u8>>,
        /// The end bound.
        end: Bound<Vec<u8>>,
        /// Pairs before stopping.
        limit: u32,
    },
    /// `scan_prefix(prefix)` stopping after `limit` pairs.
    ScanPrefix {
        /// The prefix.
        prefix: Vec<u8>,
        /// Pairs before stopping.
        limit: u32,
    },
    /// `first()` and `last()`.
    FirstLast,
    /// `remove_range(start, end)`: how many were removed, and they are gone.
    RemoveRange {
        /// The start bound.
        start: Bound<Vec<u8>>,
        /// The end bound.
        end: Bound<Vec<u8>>,
    },
    /// A concrete iterator over `[lo, hi]` driven through `steps`.
    Iter {
        /// The range's start.
        lo: Bound<Vec<u8>>,
        /// The range's end.
        hi: Bound<Vec<u8>>,
        /// What is done with it, in order.
        steps: Vec<Step>,
    },
    /// Every view compared in full with the model (and the structure's invariant walk):
    /// what the runner does periodically, recorded so that a replay repeats it.
    Verify,
}

/// A byte string printed exactly and legibly: escaped literal segments, runs of 12 or
/// more equal bytes as `[0xNN; n]`, joined with `++`; the empty string as `b""`.
pub fn exact(bytes: &[u8]) -> String {
    const RUN: usize = 12;
    let mut parts: Vec<String> = Vec::new();
    let mut lit_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let run = bytes[i..].iter().take_while(|&&b| b == bytes[i]).count();
        if run >= RUN {
            if lit_start < i {
                parts.push(format!("b\"{}\"", bytes[lit_start..i].escape_ascii()));
            }
            parts.push(format!("[{:#04x}; {run}]", bytes[i]));
            i += run;
            lit_start = i;
        } else {
            i += run;
        }
    }
    if lit_start < bytes.len() || parts.is_empty() {
        parts.push(format!("b\"{}\"", bytes[lit_start..].escape_ascii()));
    }
    parts.join(" ++ ")
}

/// A bound printed with [`exact`].
pub fn exact_bound(b: &Bound<Vec<u8>>) -> String {
    match b {
        Bound::Included(k) => format!("Included({})", exact(k)),
        Bound::Excluded(k) => format!("Excluded({})", exact(k)),
        Bound::Unbounded => "Unbounded".to_string(),
    }
}

fn limit(l: u32) -> String {
    if l == u32::MAX {
        "to the end".to_string()
    } else {
        format!("stop after {l}")
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Insert { key, value } => write!(f, "insert({}, {value:?})", exact(key)),
            Op::Remove { key } => write!(f, "remove({})", exact(key)),
            Op::Get { key } => write!(f, "get({})", exact(key)),
            Op::GetMany { keys } => {
                let keys: Vec<String> = keys.iter().map(|k| exact(k)).collect();
                write!(f, "get_many([{}])", keys.join(", "))
            }
            Op::Compute { key, action } => write!(f, "compute({}, {action:?})", exact(key)),
            Op::Update { key, action } => write!(f, "update({}, {action:?})", exact(key)),
            Op::UpdateInPlace { key, xor } => {
                write!(f, "update_in_place({}, xor {xor:#04x})", exact(key))
            }
            Op::OverLong { key, via } => write!(f, "over_long({}, {via:?})", exact(key)),
            Op::Len => f.write_str("len()"),
            Op::Scan { start, limit: l } => {
                write!(f, "scan({}, {})", exact_bound(start), limit(*l))
            }
            Op::ScanRev { end, limit: l } => {
                write!(f, "scan_rev({}, {})", exact_bound(end), limit(*l))
            }
            Op::ScanRange {
                start,
                end,
                limit: l,
            } => write!(
                f,
                "scan_range({}, {}, {})",
                exact_bound(start),
                exact_bound(end),
                limit(*l)
            ),
            Op::ScanPrefix { prefix, limit: l } => {
                write!(f, "scan_prefix({}, {})", exact(prefix), limit(*l))
            }
            Op::FirstLast => f.write_str("first(), last()"),
            Op::RemoveRange { start, end } => write!(
                f,
                "remove_range({}, {})",
                exact_bound(start),
                exact_bound(end)
            ),
            Op::Iter { lo, hi, steps } => {
                write!(f, "range({}, {}): ", exact_bound(lo), exact_bound(hi))?;
                let steps: Vec<String> = steps
                    .iter()
                    .map(|s| match s {
                        Step::Next => "next".to_string(),
                        Step::NextBack => "next_back".to_string(),
                        Step::Seek(b) => format!("seek({})", exact_bound(b)),
                        Step::SeekBack(b) => format!("seek_back({})", exact_bound(b)),
                    })
                    .collect();
                write!(f, "[{}]", steps.join(", "))
            }
            Op::Verify => f.write_str("verify everything"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_printing_compresses_runs_only() {
        assert_eq!(exact(b""), "b\"\"");
        assert_eq!(exact(b"ab\x00"), "b\"ab\\x00\"");
        let mut k = b"k".to_vec();
        k.extend([0u8; 20]);
        k.push(b'z');
        assert_eq!(exact(&k), "b\"k\" ++ [0x00; 20] ++ b\"z\"");
        assert_eq!(exact(&[0xFF; 65536]), "[0xff; 65536]");
    }

    #[test]
    fn values_are_made_from_their_tag() {
        assert_eq!(Val { len: 0, tag: 7 }.bytes(), b"");
        assert_eq!(
            Val {
                len: 2,
                tag: 0x0102
            }
            .bytes(),
            [2, 1]
        );
        let v = Val { len: 6, tag: 300 }.bytes();
        assert_eq!(v, [44, 1, 0, 0, 49, 49]);
    }
}
