//! The access field of a key: when it was last used and how often, in 32 bits, for the
//! eviction policies to rank keys by (Redis keeps the same two facts in the 24-bit `lru`
//! field of its objects).
//!
//! ```text
//! bits  0..24 : the last access, Unix seconds modulo 2^24 (194 days): LRU's idle time
//! bits 24..32 : the LFU counter: a logarithmic count of accesses, decayed with time
//! ```
//!
//! The counter is Redis's: it starts at [`INIT`] (so a new key is not evicted before it had
//! a chance to be read again), grows on an access with probability
//! `1 / ((counter - INIT) * lfu-log-factor + 1)` (so 255 stands for about a million
//! accesses at the default factor 10), and loses one for every `lfu-decay-time` minutes
//! the key went unused. Both facts are kept whatever the policy, so `OBJECT FREQ` and
//! `OBJECT IDLETIME` have values after a policy change at run time.

/// The counter of a new key (Redis's `LFU_INIT_VAL`).
pub(crate) const INIT: u8 = 5;

const SECS_MASK: u32 = (1 << 24) - 1;

/// The access field of a key created at `now_s` (Unix seconds).
pub(crate) fn new(now_s: u64) -> u32 {
    (u32::from(INIT) << 24) | (now_s as u32 & SECS_MASK)
}

/// Seconds since the last access recorded in `access`, at `now_s`.
pub(crate) fn idle_secs(access: u32, now_s: u64) -> u64 {
    u64::from((now_s as u32).wrapping_sub(access) & SECS_MASK)
}

/// The counter of `access` decayed to `now_s`: one less per `decay_minutes` unused
/// (`decay_minutes` 0: never decays).
pub(crate) fn counter(access: u32, now_s: u64, decay_minutes: u32) -> u8 {
    let c = (access >> 24) as u8;
    if decay_minutes == 0 {
        return c;
    }
    let periods = idle_secs(access, now_s) / 60 / u64::from(decay_minutes);
    c.saturating_sub(periods.min(255) as u8)
}

/// The access field after an access at `now_s`: the counter decayed, then perhaps
/// incremented (`random` uniform in `0..2^32`), and the time set to `now_s`.
pub(crate) fn touch(
    access: u32,
    now_s: u64,
    log_factor: u32,
    decay_minutes: u32,
    random: u32,
) -> u32 {
    let mut c = counter(access, now_s, decay_minutes);
    if c < 255 {
        let base = f64::from(c.saturating_sub(INIT));
        let p = 1.0 / (base * f64::from(log_factor) + 1.0);
        if f64::from(random) / 4_294_967_296.0 < p {
            c += 1;
        }
    }
    (u32::from(c) << 24) | (now_s as u32 & SECS_MASK)
}

/// A cheap per-thread random number for [`touch`] (xorshift; not for anything else).
pub(crate) fn random() -> u32 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            0x2545_f491_4f6c_dd1d ^ (std::ptr::from_ref(&0u8) as u64).rotate_left(17)
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 32) as u32
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_grows_logarithmically_and_decays() {
        let mut a = new(1000);
        assert_eq!(counter(a, 1000, 1), INIT);
        for _ in 0..100_000 {
            a = touch(a, 1000, 10, 1, random());
        }
        let c = counter(a, 1000, 1);
        // 100k accesses at factor 10: Redis's table says about 143..200.
        assert!((100..=230).contains(&c), "{c}");
        // Ten minutes unused, decay 1 per minute.
        assert_eq!(counter(a, 1600, 1), c - 10);
        assert_eq!(counter(a, 1600, 0), c);
        assert_eq!(idle_secs(a, 1600), 600);
        // The time wraps modulo 2^24 seconds.
        assert_eq!(
            idle_secs(new(u64::from(SECS_MASK)), u64::from(SECS_MASK) + 5),
            5
        );
        // A saturated counter stays.
        assert_eq!(counter(touch(255 << 24, 0, 10, 1, 0), 0, 1), 255);
    }
}
