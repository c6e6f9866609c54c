//! Settings `CONFIG SET` accepts, checks and `CONFIG GET` reports as Redis 7.0 does, but
//! which change nothing in this server (`docs/server.md`, "Settings without effect"):
//! clients and test harnesses set them at start (`CONFIG SET save ""`,
//! `notify-keyspace-events`, `lazyfree-*` …) and must not fail on them.
//!
//! Each has Redis's type, range, default (`redis-server` started without a configuration
//! file, and `save ""` since there are no snapshots here), error texts and the form
//! `CONFIG GET` prints it in (`save`'s numbers and `notify-keyspace-events`'s flags
//! normalised as Redis prints them). Checked against `redis-server` 7.0 by the
//! differential test (`tests/differential/main.rs`, `config_command`).

use std::collections::HashMap;
use std::sync::Mutex;

/// How a setting's value is checked and printed.
#[derive(Clone, Copy)]
enum Type {
    /// `yes` or `no`.
    Bool,
    /// An integer in `lo ..= hi`.
    Int(i64, i64),
    /// `hz`: an integer in `0 ..= i32::MAX`, kept between 1 and 500 (as Redis).
    Hz,
    /// One of these words.
    Enum(&'static [&'static str]),
    /// `save`: pairs of seconds (at least 1) and changes (at least 0).
    Save,
    /// `notify-keyspace-events`: Redis's event class characters.
    Events,
    /// `latency-tracking-info-percentiles`: numbers between 0 and 100.
    Percentiles,
}

/// The settings, with Redis 7.0's types and defaults.
const SETTINGS: &[(&str, Type, &str)] = &[
    ("save", Type::Save, ""),
    ("notify-keyspace-events", Type::Events, ""),
    ("lazyfree-lazy-eviction", Type::Bool, "no"),
    ("lazyfree-lazy-expire", Type::Bool, "no"),
    ("lazyfree-lazy-server-del", Type::Bool, "no"),
    ("lazyfree-lazy-user-del", Type::Bool, "no"),
    ("lazyfree-lazy-user-flush", Type::Bool, "no"),
    ("replica-lazy-flush", Type::Bool, "no"),
    ("timeout", Type::Int(0, i32::MAX as i64), "0"),
    ("tcp-keepalive", Type::Int(0, i32::MAX as i64), "300"),
    (
        "loglevel",
        Type::Enum(&["debug", "verbose", "notice", "warning"]),
        "notice",
    ),
    ("slowlog-log-slower-than", Type::Int(-1, i64::MAX), "10000"),
    ("slowlog-max-len", Type::Int(0, i64::MAX), "128"),
    ("latency-monitor-threshold", Type::Int(0, i64::MAX), "0"),
    ("latency-tracking", Type::Bool, "yes"),
    (
        "latency-tracking-info-percentiles",
        Type::Percentiles,
        "50 99 99.9",
    ),
    ("hz", Type::Hz, "10"),
    ("dynamic-hz", Type::Bool, "yes"),
    ("activerehashing", Type::Bool, "yes"),
    ("stop-writes-on-bgsave-error", Type::Bool, "yes"),
    ("rdbcompression", Type::Bool, "yes"),
    ("rdbchecksum", Type::Bool, "yes"),
    ("aof-use-rdb-preamble", Type::Bool, "yes"),
    ("no-appendfsync-on-rewrite", Type::Bool, "no"),
    ("aof-load-truncated", Type::Bool, "yes"),
    ("aof-timestamp-enabled", Type::Bool, "no"),
    ("maxmemory-eviction-tenacity", Type::Int(0, 100), "10"),
];

/// Whether `name` (lower case) is one of these settings.
pub(crate) fn known(name: &str) -> bool {
    SETTINGS.iter().any(|s| s.0 == name)
}

/// `notify-keyspace-events`' classes in the order Redis prints them, and `A`'s set.
const EVENT_CLASSES: &str = "g$lshzxetdn";
const ALL_EVENTS: &str = "g$lshzxetd";

/// Checks `value` for setting `name` (known); `Ok` is the value as `CONFIG GET` prints
/// it, `Err` Redis's reason.
pub(crate) fn check(name: &str, value: &str) -> Result<String, String> {
    let (_, ty, _) = SETTINGS
        .iter()
        .find(|s| s.0 == name)
        .ok_or_else(|| "unknown setting".to_string())?;
    let int = |lo: i64, hi: i64| -> Result<i64, String> {
        let n: i128 = value
            .parse()
            .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
        if n < i128::from(lo) || n > i128::from(hi) {
            return Err(format!("argument must be between {lo} and {hi} inclusive"));
        }
        Ok(n as i64)
    };
    match *ty {
        Type::Bool => match value.to_ascii_lowercase().as_str() {
            v @ ("yes" | "no") => Ok(v.to_string()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Type::Int(lo, hi) => int(lo, hi).map(|n| n.to_string()),
        Type::Hz => int(0, i32::MAX as i64).map(|n| n.clamp(1, 500).to_string()),
        Type::Enum(words) => {
            let lower = value.to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    words.join(", ")
                ))
            }
        }
        Type::Save => check_save(value),
        Type::Events => check_events(value),
        Type::Percentiles => check_percentiles(value),
    }
}

fn check_save(value: &str) -> Result<String, String> {
    let bad = || "Invalid save parameters".to_string();
    if value.is_empty() {
        return Ok(String::new());
    }
    let words: Vec<&str> = value.split(' ').collect();
    if words.len() % 2 == 1 {
        return Err(bad());
    }
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let n: i64 = w.parse().map_err(|_| bad())?;
        if (i % 2 == 0 && n < 1) || n < 0 {
            return Err(bad());
        }
        out.push(n.to_string());
    }
    Ok(out.join(" "))
}

fn check_events(value: &str) -> Result<String, String> {
    let mut classes = String::new();
    let (mut keyspace, mut keyevent, mut miss) = (false, false, false);
    for c in value.chars() {
        match c {
            'A' => classes.push_str(ALL_EVENTS),
            'K' => keyspace = true,
            'E' => keyevent = true,
            'm' => miss = true,
            c if EVENT_CLASSES.contains(c) => classes.push(c),
            _ => {
                return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into());
            }
        }
    }
    let mut out = String::new();
    if ALL_EVENTS.chars().all(|c| classes.contains(c)) {
        // Redis prints `A` alone for the full set (a set `n` is then not shown).
        out.push('A');
    } else {
        out.extend(EVENT_CLASSES.chars().filter(|&c| classes.contains(c)));
    }
    for (on, c) in [(keyspace, 'K'), (keyevent, 'E'), (miss, 'm')] {
        if on {
            out.push(c);
        }
    }
    Ok(out)
}

fn check_percentiles(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let mut out = Vec::new();
    for w in value.split(' ') {
        let p: f64 = w
            .parse()
            .map_err(|_| "Invalid latency-tracking-info-percentiles parameters".to_string())?;
        if !(0.0..=100.0).contains(&p) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        out.push(p.to_string());
    }
    Ok(out.join(" "))
}

/// The settings' current values (what `CONFIG SET` stored, else the defaults).
#[derive(Default)]
pub(crate) struct Stored {
    values: Mutex<HashMap<&'static str, String>>,
}

impl Stored {
    /// Stores `value` (as [`check`] returned it) for setting `name` (known).
    pub(crate) fn set(&self, name: &str, value: String) {
        if let Some(&(n, _, _)) = SETTINGS.iter().find(|s| s.0 == name) {
            self.values
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(n, value);
        }
    }

    /// Every setting with its value, for `CONFIG GET`.
    pub(crate) fn report(&self) -> Vec<(&'static str, String)> {
        let values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        SETTINGS
            .iter()
            .map(|&(n, _, default)| {
                (
                    n,
                    values
                        .get(n)
                        .cloned()
                        .unwrap_or_else(|| default.to_string()),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_and_printed_as_redis_does() {
        for (name, value, want) in [
            ("save", "0100 1 60 0", Ok("100 1 60 0")),
            ("save", "", Ok("")),
            ("save", "100", Err("Invalid save parameters")),
            ("save", "0 1", Err("Invalid save parameters")),
            ("save", "100  1", Err("Invalid save parameters")),
            ("notify-keyspace-events", "KEA", Ok("AKE")),
            ("notify-keyspace-events", "Exg", Ok("gxE")),
            ("notify-keyspace-events", "mEKn", Ok("nKEm")),
            ("notify-keyspace-events", "AKEmn", Ok("AKEm")),
            ("notify-keyspace-events", "ndt$g", Ok("g$tdn")),
            (
                "notify-keyspace-events",
                "Q",
                Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'."),
            ),
            ("hz", "0", Ok("1")),
            ("hz", "1000", Ok("500")),
            ("loglevel", "WARNING", Ok("warning")),
            ("rdbcompression", "YES", Ok("yes")),
            (
                "timeout",
                "-1",
                Err("argument must be between 0 and 2147483647 inclusive"),
            ),
            (
                "timeout",
                "1.5",
                Err("argument couldn't be parsed into an integer"),
            ),
            (
                "latency-tracking-info-percentiles",
                "99.90 50.0 0",
                Ok("99.9 50 0"),
            ),
        ] {
            assert_eq!(
                check(name, value),
                want.map(String::from).map_err(String::from),
                "{name} {value:?}"
            );
        }
    }
}
