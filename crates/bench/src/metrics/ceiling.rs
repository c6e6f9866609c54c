//! The memory ceiling a load runs under (`--max-rss`): the load stops cleanly before the
//! process's resident set would pass it, so the most keys a structure holds on a machine
//! is a measurement rather than an out-of-memory kill.
//!
//! Protocol: every [`CHECK_EVERY`] inserts, each loading thread reads the process's RSS
//! (`/proc/self/statm`: one small read, a few µs per several thousand inserts) and
//! predicts the next interval's growth as the growth it saw over its last interval (which
//! includes the other threads' growth: conservative). If RSS plus that growth would reach
//! the ceiling, it raises the shared stop flag and records the RSS; every thread checks
//! the flag after each batch and stops. The keys held are then what the threads inserted
//! (`index.len()`). A growth step larger than anything seen before (a table that doubles
//! at once) can still pass the ceiling: the margin below the machine's memory (2 GiB by
//! default) is for that.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::rss;

/// Inserts between two RSS checks of a loading thread.
pub(crate) const CHECK_EVERY: usize = 4096;

/// Memory left to the rest of the machine by the default ceiling.
const DEFAULT_MARGIN: u64 = 2 << 30;

/// The default ceiling: the machine's memory (`MemTotal`) less 2 GiB, or `None` where
/// `/proc/meminfo` is unreadable.
pub(crate) fn default_max_rss() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kib << 10).saturating_sub(DEFAULT_MARGIN))
}

/// One load's ceiling, shared by its threads.
#[derive(Debug)]
pub(crate) struct Ceiling {
    limit: u64,
    stop: AtomicBool,
    rss_at_stop: AtomicU64,
}

impl Ceiling {
    /// A ceiling of `limit` resident bytes.
    pub(crate) fn new(limit: u64) -> Ceiling {
        Ceiling {
            limit,
            stop: AtomicBool::new(false),
            rss_at_stop: AtomicU64::new(0),
        }
    }

    /// Whether some thread has stopped the load.
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Checks the RSS against the ceiling, given the RSS this thread saw at its last check
    /// (`last`, updated); returns whether the load must stop.
    pub(crate) fn check(&self, last: &mut u64) -> bool {
        let Some(now) = rss::resident_bytes() else {
            return self.stopped();
        };
        let step = now.saturating_sub(*last);
        *last = now;
        if now.saturating_add(step) >= self.limit && !self.stop.swap(true, Ordering::Relaxed) {
            self.rss_at_stop.store(now, Ordering::Relaxed);
        }
        self.stopped()
    }

    /// The RSS when the load stopped, if it did.
    pub(crate) fn stopped_at(&self) -> Option<u64> {
        self.stopped()
            .then(|| self.rss_at_stop.load(Ordering::Relaxed))
    }
}

/// Parses a size: bytes, or a number with `K`, `M`, `G`, `T` (binary units, `KiB`/`KB`
/// accepted), e.g. `512M`, `20GiB`, `1.5G`.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let x: f64 = num
        .parse()
        .map_err(|_| format!("bad size {s:?} (e.g. 512M, 20G, 1073741824)"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        u => return Err(format!("bad size unit {u:?} in {s:?} (K, M, G or T)")),
    };
    let v = x * mult as f64;
    if !(1.0..1.8e19).contains(&v) {
        return Err(format!("size {s:?} out of range"));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("20GiB"), Ok(20 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn the_default_leaves_two_gib() {
        if let Some(d) = default_max_rss() {
            assert!(d > 0);
        }
    }

    #[test]
    fn a_ceiling_below_the_rss_stops_and_records_it() {
        let c = Ceiling::new(1);
        let mut last = 0;
        assert!(c.check(&mut last));
        assert!(c.stopped_at().is_some_and(|r| r > 0));
        let c = Ceiling::new(u64::MAX);
        assert!(!c.check(&mut last) && c.stopped_at().is_none());
    }
}
