//! [`Register`]: the spec of one key of a key-value store, for the library and for the
//! server.
//!
//! The state is the key's value (`None`: absent). The operations cover both callers:
//!
//! | input | output | library call | Redis command |
//! |---|---|---|---|
//! | [`RegOp::Get`] | [`Out::Value`] | `get`, `get_with`, one key of `get_many` | `GET` |
//! | [`RegOp::Contains`] | [`Out::Present`] | `contains_key` | `EXISTS` (one key) |
//! | [`RegOp::Insert`] | [`Out::Present`] (was present, i.e. `!new`) | `insert` | — |
//! | [`RegOp::Set`] | [`Out::Ok`] | — | `SET` |
//! | [`RegOp::Remove`] | [`Out::Present`] (was present) | `remove` | `DEL` / `UNLINK` of one key (`1` = present) |
//! | [`RegOp::Compute`] | [`Out::Old`] (what the closure saw) | `compute` | — |
//! | [`RegOp::Update`] | [`Out::Old`] (`None`: absent, closure not called) | `update`, `update_in_place` | — |
//! | [`RegOp::Append`] | [`Out::Len`] (the new length) | — | `APPEND` |
//! | [`RegOp::Incr`] | [`Out::Int`] (the new value) or [`Out::Error`] | — | `INCR`, `INCRBY`, `DECR`, `DECRBY` |
//!
//! `Incr` follows Redis: an absent key counts as 0; the value must be the decimal form of
//! an `i64` exactly as `i64::to_string` writes it (no sign `+`, no leading zeros or
//! spaces), else the output is `Error` and nothing changes; an overflow is `Error` too.
//!
//! For the scan checks, [`Register::effect`] says what a recorded operation may have done to
//! the key's presence and value.

use std::fmt;

use super::spec::Spec;
use crate::testing::{show, show_opt};

/// What a `compute` closure returns for the current value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum ComputeOp {
    /// Store this value.
    Set(Vec<u8>),
    /// Remove the key (or leave it absent).
    Remove,
    /// Store the current value (empty when absent) followed by these bytes.
    Append(Vec<u8>),
    /// Store what is there (absent stays absent).
    Keep,
}

/// What an `update` closure does to a present key's value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum UpdateOp {
    /// Replace it by this value.
    Set(Vec<u8>),
    /// Append these bytes.
    Append(Vec<u8>),
    /// Overwrite its first bytes with these (as many as fit: the length is kept), as
    /// `update_in_place` does.
    Overwrite(Vec<u8>),
}

/// An operation on one key (see the module docs' table).
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum RegOp {
    /// Read the value.
    Get,
    /// Read whether the key is present.
    Contains,
    /// Upsert, reporting whether the key was present.
    Insert(Vec<u8>),
    /// Upsert, reporting nothing.
    Set(Vec<u8>),
    /// Remove, reporting whether the key was present.
    Remove,
    /// Read-modify-write of `compute`.
    Compute(ComputeOp),
    /// Read-modify-write of a present key (`update`, `update_in_place`).
    Update(UpdateOp),
    /// Append to the value (absent: empty), reporting the new length.
    Append(Vec<u8>),
    /// Add to the integer value (absent: 0), reporting the new value.
    Incr(i64),
}

/// What an operation on one key returned.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Out {
    /// The value read (`None`: absent).
    Value(Option<Vec<u8>>),
    /// Whether the key was (or is) present.
    Present(bool),
    /// The value a closure was shown (`None`: absent).
    Old(Option<Vec<u8>>),
    /// A length.
    Len(usize),
    /// An integer.
    Int(i64),
    /// An error reply (the key unchanged).
    Error,
    /// A plain acknowledgement.
    Ok,
}

/// The key-value register: the state is the key's value, `None` when absent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Register;

/// What a completed operation certainly did to its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Done {
    /// It removed the key.
    Removed,
    /// It stored a value (`None`: which one is not known from the record, e.g. Redis
    /// `APPEND`).
    Wrote(Option<Vec<u8>>),
}

/// What a recorded operation may have done to its key, for the scan checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Effect {
    /// It may have made a present key absent (a removal).
    pub may_remove: bool,
    /// It may have made the key present or changed its value (a write).
    pub may_write: bool,
    /// What it certainly did, when it completed with a known output.
    pub done: Option<Done>,
}

impl fmt::Debug for ComputeOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComputeOp::Set(v) => write!(f, "set {}", show(v)),
            ComputeOp::Remove => f.write_str("remove"),
            ComputeOp::Append(v) => write!(f, "append {}", show(v)),
            ComputeOp::Keep => f.write_str("keep"),
        }
    }
}

impl fmt::Debug for UpdateOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateOp::Set(v) => write!(f, "set {}", show(v)),
            UpdateOp::Append(v) => write!(f, "append {}", show(v)),
            UpdateOp::Overwrite(v) => write!(f, "overwrite with {}", show(v)),
        }
    }
}

impl fmt::Debug for RegOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegOp::Get => f.write_str("get"),
            RegOp::Contains => f.write_str("contains"),
            RegOp::Insert(v) => write!(f, "insert {}", show(v)),
            RegOp::Set(v) => write!(f, "set {}", show(v)),
            RegOp::Remove => f.write_str("remove"),
            RegOp::Compute(c) => write!(f, "compute({c:?})"),
            RegOp::Update(u) => write!(f, "update({u:?})"),
            RegOp::Append(v) => write!(f, "append {}", show(v)),
            RegOp::Incr(n) => write!(f, "incr by {n}"),
        }
    }
}

impl fmt::Debug for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Out::Value(v) => write!(f, "value {}", show_opt(v.as_deref())),
            Out::Present(p) => write!(f, "present: {p}"),
            Out::Old(v) => write!(f, "saw {}", show_opt(v.as_deref())),
            Out::Len(n) => write!(f, "length {n}"),
            Out::Int(n) => write!(f, "{n}"),
            Out::Error => f.write_str("error"),
            Out::Ok => f.write_str("OK"),
        }
    }
}

fn parse_i64(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    let n: i64 = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

fn overwrite(old: &[u8], with: &[u8]) -> Vec<u8> {
    let mut v = old.to_vec();
    let n = v.len().min(with.len());
    v[..n].copy_from_slice(&with[..n]);
    v
}

impl Spec for Register {
    type State = Option<Vec<u8>>;
    type Input = RegOp;
    type Output = Out;

    fn init(&self) -> Self::State {
        None
    }

    fn step(&self, s: &Self::State, op: &RegOp) -> (Self::State, Out) {
        match op {
            RegOp::Get => (s.clone(), Out::Value(s.clone())),
            RegOp::Contains => (s.clone(), Out::Present(s.is_some())),
            RegOp::Insert(v) => (Some(v.clone()), Out::Present(s.is_some())),
            RegOp::Set(v) => (Some(v.clone()), Out::Ok),
            RegOp::Remove => (None, Out::Present(s.is_some())),
            RegOp::Compute(c) => {
                let new = match c {
                    ComputeOp::Set(v) => Some(v.clone()),
                    ComputeOp::Remove => None,
                    ComputeOp::Append(x) => Some([s.as_deref().unwrap_or_default(), x].concat()),
                    ComputeOp::Keep => s.clone(),
                };
                (new, Out::Old(s.clone()))
            }
            RegOp::Update(u) => {
                let new = s.as_ref().map(|old| match u {
                    UpdateOp::Set(v) => v.clone(),
                    UpdateOp::Append(x) => [old.as_slice(), x].concat(),
                    UpdateOp::Overwrite(x) => overwrite(old, x),
                });
                (new, Out::Old(s.clone()))
            }
            RegOp::Append(x) => {
                let new = [s.as_deref().unwrap_or_default(), x].concat();
                let len = new.len();
                (Some(new), Out::Len(len))
            }
            RegOp::Incr(by) => {
                let cur = match s {
                    None => Some(0),
                    Some(v) => parse_i64(v),
                };
                match cur.and_then(|c| c.checked_add(*by)) {
                    Some(n) => (Some(n.to_string().into_bytes()), Out::Int(n)),
                    None => (s.clone(), Out::Error),
                }
            }
        }
    }

    fn is_read_only(&self, op: &RegOp) -> bool {
        matches!(op, RegOp::Get | RegOp::Contains)
    }

    fn show_state(state: &Self::State) -> String {
        match state {
            Some(v) => show(v),
            None => "absent".to_string(),
        }
    }
}

impl Register {
    /// What an operation recorded with `output` (`None`: no response) may have done to its
    /// key.
    pub fn effect(&self, op: &RegOp, output: Option<&Out>) -> Effect {
        let none = Effect {
            may_remove: false,
            may_write: false,
            done: None,
        };
        let write = |value: Option<Vec<u8>>| Effect {
            may_remove: false,
            may_write: true,
            done: output.map(|_| Done::Wrote(value)),
        };
        let removal = Effect {
            may_remove: true,
            may_write: false,
            done: output.map(|_| Done::Removed),
        };
        match (op, output) {
            (RegOp::Get | RegOp::Contains, _) => none,
            (RegOp::Insert(v) | RegOp::Set(v), _) => write(Some(v.clone())),
            (RegOp::Remove, Some(Out::Present(false))) => none,
            (RegOp::Remove, _) => removal,
            (RegOp::Compute(c), out) => {
                let old = match out {
                    Some(Out::Old(o)) => Some(o.clone()),
                    _ => None,
                };
                match (c, old) {
                    (ComputeOp::Keep, _) => none,
                    (ComputeOp::Set(v), _) => write(Some(v.clone())),
                    (ComputeOp::Remove, Some(None)) => none,
                    (ComputeOp::Remove, _) => removal,
                    (ComputeOp::Append(x), Some(old)) => {
                        write(Some([old.as_deref().unwrap_or_default(), x].concat()))
                    }
                    (ComputeOp::Append(_), None) => write(None),
                }
            }
            (RegOp::Update(u), out) => match out {
                Some(Out::Old(None)) => none,
                Some(Out::Old(Some(old))) => write(Some(match u {
                    UpdateOp::Set(v) => v.clone(),
                    UpdateOp::Append(x) => [old.as_slice(), x].concat(),
                    UpdateOp::Overwrite(x) => overwrite(old, x),
                })),
                _ => write(None),
            },
            (RegOp::Append(_), _) => write(None),
            (RegOp::Incr(_), Some(Out::Error)) => none,
            (RegOp::Incr(_), Some(Out::Int(n))) => write(Some(n.to_string().into_bytes())),
            (RegOp::Incr(_), _) => write(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_string_semantics() {
        let r = Register;
        let (s, o) = r.step(&None, &RegOp::Incr(5));
        assert_eq!((s.as_deref(), o), (Some(&b"5"[..]), Out::Int(5)));
        let (s, o) = r.step(&s, &RegOp::Append(b"0".to_vec()));
        assert_eq!((s.as_deref(), o), (Some(&b"50"[..]), Out::Len(2)));
        assert_eq!(r.step(&s, &RegOp::Incr(-51)).1, Out::Int(-1));
        let bad = Some(b"05".to_vec());
        assert_eq!(r.step(&bad, &RegOp::Incr(1)), (bad.clone(), Out::Error));
        let max = Some(i64::MAX.to_string().into_bytes());
        assert_eq!(r.step(&max, &RegOp::Incr(1)).1, Out::Error);
        assert_eq!(r.step(&None, &RegOp::Set(b"x".to_vec())).1, Out::Ok);
    }

    #[test]
    fn library_semantics() {
        let r = Register;
        let v = Some(b"abc".to_vec());
        assert_eq!(
            r.step(&v, &RegOp::Update(UpdateOp::Overwrite(b"XYZW".to_vec()))),
            (Some(b"XYZ".to_vec()), Out::Old(v.clone()))
        );
        assert_eq!(
            r.step(&None, &RegOp::Update(UpdateOp::Set(b"q".to_vec()))),
            (None, Out::Old(None))
        );
        assert_eq!(
            r.step(&None, &RegOp::Compute(ComputeOp::Append(b"q".to_vec()))),
            (Some(b"q".to_vec()), Out::Old(None))
        );
        assert_eq!(r.step(&v, &RegOp::Remove), (None, Out::Present(true)));
        assert_eq!(
            r.step(&v, &RegOp::Insert(b"n".to_vec())),
            (Some(b"n".to_vec()), Out::Present(true))
        );
    }
}
