//! The eviction pool: the most idle candidates sampled so far, kept across evictions (as
//! Redis's `EVPOOL_SIZE` pool), so that each eviction chooses among more keys than one
//! sample holds.

/// Candidates the pool keeps.
pub(super) const POOL_SIZE: usize = 16;

/// A sampled key.
pub(super) struct Candidate {
    pub(super) key: Vec<u8>,
    pub(super) idle: u64,
    pub(super) clock: u32,
}

/// Candidates in ascending order of idle time (the best, most idle, last).
#[derive(Default)]
pub(super) struct Pool {
    entries: Vec<Candidate>,
}

impl Pool {
    /// Offers a sampled key: kept if the pool has room or it is more idle than the least
    /// idle entry (which then leaves). A key already in the pool is refreshed.
    pub(super) fn offer(&mut self, key: &[u8], idle: u64, clock: u32) {
        if let Some(i) = self.entries.iter().position(|c| c.key == key) {
            self.entries.remove(i);
        }
        if self.entries.len() >= POOL_SIZE {
            if self.entries[0].idle >= idle {
                return;
            }
            self.entries.remove(0);
        }
        let at = self.entries.partition_point(|c| c.idle <= idle);
        self.entries.insert(
            at,
            Candidate {
                key: key.to_vec(),
                idle,
                clock,
            },
        );
    }

    /// Forgets every candidate (their ranks were by another policy).
    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }

    /// Removes and returns the most idle candidate.
    pub(super) fn take_best(&mut self) -> Option<Candidate> {
        self.entries.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_idle() {
        let mut p = Pool::default();
        for i in 0..100u64 {
            p.offer(format!("k{i}").as_bytes(), (i * 37) % 100, i as u32);
        }
        p.offer(b"k99", 1000, 7);
        let best = p.take_best().unwrap();
        assert_eq!(
            (best.key.as_slice(), best.idle, best.clock),
            (&b"k99"[..], 1000, 7)
        );
        let mut last = u64::MAX;
        let mut n = 0;
        while let Some(c) = p.take_best() {
            assert!(c.idle <= last);
            last = c.idle;
            n += 1;
        }
        assert_eq!(n, POOL_SIZE - 1);
        assert!(last >= 100 - POOL_SIZE as u64);
    }
}
