//! When a collection is kept compact: Redis's encoding thresholds, under Redis's names (and
//! its older `ziplist` aliases), with the defaults `redis-server` 7.0 has without a
//! configuration file. Atomics, read on every collection write; `CONFIG SET` and the
//! command line (`--hash-max-listpack-entries 128`) change them.
//!
//! | setting | default | a collection stays compact while |
//! |---|---|---|
//! | `hash-max-listpack-entries` | 512 | the hash has at most this many fields |
//! | `hash-max-listpack-value` | 64 | every field and value has at most this many bytes |
//! | `set-max-intset-entries` | 512 | the set's members are all integers, at most this many |
//! | `set-max-listpack-entries` | 128 | (otherwise) the set has at most this many members (Redis 7.2) |
//! | `set-max-listpack-value` | 64 | every member has at most this many bytes (Redis 7.2) |
//! | `zset-max-listpack-entries` | 128 | the sorted set has at most this many members |
//! | `zset-max-listpack-value` | 64 | every member has at most this many bytes |
//! | `list-max-listpack-size` | -2 | the list has at most N elements (N > 0), or its elements take at most 4 KiB (-1), 8 KiB (-2), 16, 32, 64 KiB (-3 … -5) |
//!
//! As in Redis 7.0, a collection that outgrew its compact form stays large when it
//! shrinks again.

use std::sync::atomic::{AtomicI64, Ordering};

/// One setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Param {
    HashEntries,
    HashValue,
    SetIntsetEntries,
    SetEntries,
    SetValue,
    ZsetEntries,
    ZsetValue,
    ListSize,
}

/// Every setting: (name, alias, parameter, how its value is written).
const PARAMS: [(&str, Option<&str>, Param, Unit); 8] = [
    (
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        Param::HashEntries,
        Unit::Count,
    ),
    (
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        Param::HashValue,
        Unit::Bytes,
    ),
    (
        "set-max-intset-entries",
        None,
        Param::SetIntsetEntries,
        Unit::Count,
    ),
    (
        "set-max-listpack-entries",
        None,
        Param::SetEntries,
        Unit::Count,
    ),
    ("set-max-listpack-value", None, Param::SetValue, Unit::Bytes),
    (
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        Param::ZsetEntries,
        Unit::Count,
    ),
    (
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        Param::ZsetValue,
        Unit::Bytes,
    ),
    (
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        Param::ListSize,
        Unit::Signed,
    ),
];

#[derive(Clone, Copy)]
enum Unit {
    /// 0 ..= i64::MAX, an integer.
    Count,
    /// 0 ..= i64::MAX, a memory value (`64`, `1kb`, `1m`).
    Bytes,
    /// An `i32`.
    Signed,
}

/// The settings' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThresholdValues {
    /// `hash-max-listpack-entries`.
    pub(crate) hash_entries: i64,
    /// `hash-max-listpack-value`.
    pub(crate) hash_value: i64,
    /// `set-max-intset-entries`.
    pub(crate) set_intset_entries: i64,
    /// `set-max-listpack-entries`.
    pub(crate) set_entries: i64,
    /// `set-max-listpack-value`.
    pub(crate) set_value: i64,
    /// `zset-max-listpack-entries`.
    pub(crate) zset_entries: i64,
    /// `zset-max-listpack-value`.
    pub(crate) zset_value: i64,
    /// `list-max-listpack-size`.
    pub(crate) list_size: i64,
}

impl Default for ThresholdValues {
    fn default() -> Self {
        ThresholdValues {
            hash_entries: 512,
            hash_value: 64,
            set_intset_entries: 512,
            set_entries: 128,
            set_value: 64,
            zset_entries: 128,
            zset_value: 64,
            list_size: -2,
        }
    }
}

impl ThresholdValues {
    fn slot(&mut self, p: Param) -> &mut i64 {
        match p {
            Param::HashEntries => &mut self.hash_entries,
            Param::HashValue => &mut self.hash_value,
            Param::SetIntsetEntries => &mut self.set_intset_entries,
            Param::SetEntries => &mut self.set_entries,
            Param::SetValue => &mut self.set_value,
            Param::ZsetEntries => &mut self.zset_entries,
            Param::ZsetValue => &mut self.zset_value,
            Param::ListSize => &mut self.list_size,
        }
    }

    /// Sets the parameter named `name` (or its alias) from `value`, as the command line
    /// does; `None` when no such parameter exists, `Some(Err(why))` for a bad value.
    pub(crate) fn set_named(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let p = param(name)?;
        Some(parse(p, value).map(|v| *self.slot(p) = v))
    }

    /// Whether a list of `count` elements taking `bytes` fits the compact form.
    pub(crate) fn list_fits(&self, count: usize, bytes: usize) -> bool {
        match self.list_size {
            n if n > 0 => count as u64 <= n as u64,
            n => bytes <= 4096 << ((-n).clamp(1, 5) - 1),
        }
    }
}

/// The parameter named `name` or its alias (lower case).
pub(crate) fn param(name: &str) -> Option<Param> {
    PARAMS
        .iter()
        .find(|(n, a, _, _)| *n == name || *a == Some(name))
        .map(|p| p.2)
}

/// Parses a value of `p` with Redis's errors.
pub(crate) fn parse(p: Param, v: &str) -> Result<i64, String> {
    let unit = PARAMS
        .iter()
        .find(|x| x.2 == p)
        .map_or(Unit::Count, |x| x.3);
    let n: i64 = match unit {
        Unit::Bytes => memory(v).ok_or_else(|| "argument must be a memory value".to_string())?,
        _ => v
            .parse()
            .ok()
            .filter(|_| !v.starts_with('+'))
            .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?,
    };
    let (lo, hi) = match unit {
        Unit::Signed => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (0, i64::MAX),
    };
    if n < lo || n > hi {
        return Err(format!("argument must be between {lo} and {hi} inclusive"));
    }
    Ok(n)
}

/// A memory value as Redis's `memtoull`: digits with an optional unit (`k`, `kb`, `m`, `mb`,
/// `g`, `gb`, any case), within `i64`.
fn memory(v: &str) -> Option<i64> {
    let lower = v.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let mul: i64 = match &lower[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(mul)
}

/// The live settings (see the module docs).
#[derive(Debug)]
pub(crate) struct Thresholds {
    values: [AtomicI64; 8],
}

const ORDER: [Param; 8] = [
    Param::HashEntries,
    Param::HashValue,
    Param::SetIntsetEntries,
    Param::SetEntries,
    Param::SetValue,
    Param::ZsetEntries,
    Param::ZsetValue,
    Param::ListSize,
];

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::new(ThresholdValues::default())
    }
}

impl Thresholds {
    /// The settings `v`.
    pub(crate) fn new(mut v: ThresholdValues) -> Thresholds {
        Thresholds {
            values: ORDER.map(|p| AtomicI64::new(*v.slot(p))),
        }
    }

    /// The values now.
    pub(crate) fn get(&self) -> ThresholdValues {
        let mut v = ThresholdValues::default();
        for (i, p) in ORDER.iter().enumerate() {
            *v.slot(*p) = self.values[i].load(Ordering::Relaxed);
        }
        v
    }

    /// Sets one parameter (an already parsed value).
    pub(crate) fn set(&self, p: Param, value: i64) {
        if let Some(i) = ORDER.iter().position(|&q| q == p) {
            self.values[i].store(value, Ordering::Relaxed);
        }
    }

    /// Sets every parameter.
    pub(crate) fn set_all(&self, mut v: ThresholdValues) {
        for (i, p) in ORDER.iter().enumerate() {
            self.values[i].store(*v.slot(*p), Ordering::Relaxed);
        }
    }

    /// `(name, value)` of every parameter and alias, as `CONFIG GET` lists them.
    pub(crate) fn report(&self) -> Vec<(&'static str, String)> {
        let mut v = self.get();
        let mut out = Vec::new();
        for (name, alias, p, _) in PARAMS {
            let value = v.slot(p).to_string();
            out.push((name, value.clone()));
            if let Some(a) = alias {
                out.push((a, value));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_values_and_errors() {
        let t = Thresholds::default();
        assert_eq!(param("hash-max-ziplist-entries"), Some(Param::HashEntries));
        assert_eq!(parse(Param::HashValue, "1kb"), Ok(1024));
        assert!(parse(Param::HashEntries, "1kb").is_err());
        assert_eq!(
            parse(Param::HashEntries, "-1").unwrap_err(),
            "argument must be between 0 and 9223372036854775807 inclusive"
        );
        assert_eq!(
            parse(Param::ZsetValue, "-1").unwrap_err(),
            "argument must be a memory value"
        );
        assert_eq!(
            parse(Param::SetIntsetEntries, "99999999999999999999").unwrap_err(),
            "argument couldn't be parsed into an integer"
        );
        assert_eq!(parse(Param::ListSize, "-5"), Ok(-5));
        assert!(parse(Param::ListSize, "2147483648").is_err());
        t.set(Param::ZsetEntries, 3);
        assert_eq!(t.get().zset_entries, 3);
        assert_eq!(t.report().len(), 13);
        let mut v = ThresholdValues::default();
        assert!(v.list_fits(1000, 8192) && !v.list_fits(1, 8193));
        assert_eq!(v.set_named("list-max-ziplist-size", "3"), Some(Ok(())));
        assert!(v.list_fits(3, 1 << 20) && !v.list_fits(4, 0));
        assert_eq!(v.set_named("nope", "3"), None);
    }
}
