//! Dataset statistics for `orrery-bench datasets`: key count, average length, and the
//! average common prefix with the sorted predecessor (a proxy for how much a trie or a
//! prefix-compressed structure can share).

use super::KeySet;

/// Summary figures of a key set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    /// Number of keys.
    pub(crate) keys: usize,
    /// Average key length in bytes.
    pub(crate) avg_len: f64,
    /// Average length in bytes of the common prefix of each key with its predecessor in
    /// sorted order.
    pub(crate) avg_lcp: f64,
}

/// Computes [`Stats`] of `set` (sorts an index array: O(n log n) key comparisons).
pub(crate) fn stats(set: &KeySet) -> Stats {
    let n = set.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| set.get(a as usize).cmp(set.get(b as usize)));
    let lcp_sum: usize = order
        .windows(2)
        .map(|w| {
            let (a, b) = (set.get(w[0] as usize), set.get(w[1] as usize));
            a.iter().zip(b).take_while(|(x, y)| x == y).count()
        })
        .sum();
    Stats {
        keys: n,
        avg_len: if n == 0 {
            0.0
        } else {
            set.total_bytes() as f64 / n as f64
        },
        avg_lcp: if n < 2 {
            0.0
        } else {
            lcp_sum as f64 / (n - 1) as f64
        },
    }
}
