//! Delta debugging: the smallest sequence that still fails.
//!
//! [`ddmin`] is Zeller and Hildebrandt's minimization by complements: split the sequence
//! into `n` chunks, keep the first complement (the sequence without one chunk) that still
//! fails and go on with `n - 1` chunks, or double `n` when none does, until the chunks are
//! single items and removing any one of them makes the failure go away (the result is
//! 1-minimal). Each test replays a candidate from scratch, so the failure predicate must be
//! deterministic for the result to mean anything; a [`Budget`] bounds the number of tests
//! and the time, returning the smallest failing sequence found so far when it runs out.

use std::time::{Duration, Instant};

/// Limits of a minimization.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Most candidate sequences tested.
    pub tests: usize,
    /// Most time spent.
    pub time: Duration,
}

impl Default for Budget {
    /// 20,000 tests or two minutes.
    fn default() -> Self {
        Budget {
            tests: 20_000,
            time: Duration::from_secs(120),
        }
    }
}

/// What a minimization did.
#[derive(Clone, Debug)]
pub struct Shrunk<T> {
    /// The smallest failing sequence found.
    pub items: Vec<T>,
    /// Candidates tested.
    pub tests: usize,
    /// Whether the result is 1-minimal (false when the budget ran out first).
    pub minimal: bool,
}

/// The smallest subsequence of `items` for which `fails` holds, by delta debugging
/// (`items` itself must fail). Order is kept.
///
/// ```
/// use orrery_core::testing::torture::{Budget, ddmin};
/// // Fails when it holds both a 3 and a 7.
/// let items: Vec<u32> = (0..100).collect();
/// let shrunk = ddmin(&items, &mut |s: &[u32]| s.contains(&3) && s.contains(&7), Budget::default());
/// assert_eq!(shrunk.items, [3, 7]);
/// assert!(shrunk.minimal);
/// ```
pub fn ddmin<T: Clone>(
    items: &[T],
    fails: &mut dyn FnMut(&[T]) -> bool,
    budget: Budget,
) -> Shrunk<T> {
    let start = Instant::now();
    let mut cur = items.to_vec();
    let mut tests = 0;
    let mut n = 2usize;
    let out_of_budget = |tests: usize| tests >= budget.tests || start.elapsed() >= budget.time;
    while cur.len() >= 2 {
        if out_of_budget(tests) {
            return Shrunk {
                items: cur,
                tests,
                minimal: false,
            };
        }
        let n_eff = n.min(cur.len());
        let chunk = cur.len().div_ceil(n_eff);
        let mut reduced = false;
        let mut i = 0;
        while i * chunk < cur.len() {
            let (a, b) = (i * chunk, ((i + 1) * chunk).min(cur.len()));
            let candidate: Vec<T> = cur[..a].iter().chain(&cur[b..]).cloned().collect();
            tests += 1;
            if fails(&candidate) {
                cur = candidate;
                n = n_eff.saturating_sub(1).max(2);
                reduced = true;
                break;
            }
            if out_of_budget(tests) {
                return Shrunk {
                    items: cur,
                    tests,
                    minimal: false,
                };
            }
            i += 1;
        }
        if !reduced {
            if n_eff >= cur.len() {
                break;
            }
            n = (n_eff * 2).min(cur.len());
        }
    }
    // A single item: it might not be needed at all.
    if cur.len() == 1 && !out_of_budget(tests) {
        tests += 1;
        if fails(&[]) {
            cur.clear();
        }
    }
    Shrunk {
        items: cur,
        tests,
        minimal: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_needed_items() {
        let items: Vec<u32> = (0..1000).collect();
        let s = ddmin(
            &items,
            &mut |c: &[u32]| c.contains(&10) && c.contains(&500) && c.contains(&999),
            Budget::default(),
        );
        assert_eq!(s.items, [10, 500, 999]);
        assert!(s.minimal);
    }

    #[test]
    fn keeps_order_dependent_failures() {
        // Fails when some 5 comes after some 2.
        let items = vec![5, 1, 2, 3, 5, 2];
        let fails = |c: &[u32]| {
            c.iter()
                .position(|&x| x == 2)
                .is_some_and(|i| c[i..].contains(&5))
        };
        let s = ddmin(&items, &mut |c| fails(c), Budget::default());
        assert_eq!(s.items, [2, 5]);
    }

    #[test]
    fn stops_at_the_budget() {
        let items: Vec<u32> = (0..1000).collect();
        let s = ddmin(
            &items,
            &mut |c: &[u32]| c.len() > 10,
            Budget {
                tests: 3,
                time: Duration::from_secs(60),
            },
        );
        assert!(!s.minimal);
        assert_eq!(s.tests, 3);
        assert!(s.items.len() > 10);
    }
}
