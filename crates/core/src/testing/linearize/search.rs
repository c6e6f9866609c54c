//! The search for a linearization of one key's history: Wing and Gong's algorithm with
//! Lowe's memoization (G. Lowe, "Testing for linearizability", 2017; as in Porcupine and
//! Knossos).
//!
//! The history's invocations and responses are put in one list in time order (at equal
//! times invocations first, so operations whose times touch count as concurrent: the
//! checker never relies on an order the clock cannot show). The search walks the list: at
//! an invocation it tries to linearize that operation next — apply it to the current state
//! and compare the output — and, if the pair (set of linearized operations, new state) has
//! not been seen before, lifts the operation's invocation and response out of the list and
//! starts again from the head; at a response whose operation is not yet linearized it
//! backtracks (that operation had to take effect before its response). The memo of
//! (linearized set, state) pairs is what keeps the search near-linear on real histories:
//! two orders of the same operations that end in the same state are explored once. Sets
//! are named by 128-bit Zobrist hashes, so a memo entry is small however long the history.
//!
//! Operations without a response have their response at the end of time, so they may be
//! linearized anywhere after their invocation; the search succeeds once every *completed*
//! operation is linearized (the rest are linearized after everything, which is the same as
//! never). A step budget bounds the search: running out gives
//! [`Outcome::Unknown`] rather than a hang.

use std::collections::HashSet;

use super::spec::Spec;

/// One operation as the search sees it.
pub(crate) struct Op<'a, S: Spec> {
    pub(crate) input: &'a S::Input,
    /// `None`: no response (any output accepted, response at the end of time).
    pub(crate) output: Option<&'a S::Output>,
    pub(crate) call: u64,
    /// `u64::MAX` for an operation without a response.
    pub(crate) ret: u64,
}

// (Manual impls: a derive would require `S: Clone`.)
impl<S: Spec> Clone for Op<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Spec> Copy for Op<'_, S> {}

/// The result of a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A linearization exists.
    Linearizable,
    /// None exists.
    NotLinearizable,
    /// The budget ran out first.
    Unknown,
}

const END: usize = usize::MAX;

/// The doubly linked event list of Lowe's algorithm (a dancing-links list: a lifted node
/// keeps its own links, so lifts are undone in reverse order).
struct List {
    /// Node 0 is the head sentinel; node `1 + 2i` is op `i`'s invocation, `2 + 2i` its
    /// response.
    prev: Vec<usize>,
    next: Vec<usize>,
}

impl List {
    fn new<S: Spec>(ops: &[Op<'_, S>]) -> List {
        let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(2 * ops.len());
        for (i, op) in ops.iter().enumerate() {
            events.push((op.call, 0, 1 + 2 * i));
            events.push((op.ret, 1, 2 + 2 * i));
        }
        // Time order; at equal times invocations before responses.
        events.sort_unstable();
        let n = 1 + 2 * ops.len();
        let mut prev = vec![0; n];
        let mut next = vec![END; n];
        let mut last = 0;
        for &(_, _, node) in &events {
            next[last] = node;
            prev[node] = last;
            last = node;
        }
        next[last] = END;
        List { prev, next }
    }

    fn unlink(&mut self, n: usize) {
        let (p, x) = (self.prev[n], self.next[n]);
        self.next[p] = x;
        if x != END {
            self.prev[x] = p;
        }
    }

    fn relink(&mut self, n: usize) {
        let (p, x) = (self.prev[n], self.next[n]);
        self.next[p] = n;
        if x != END {
            self.prev[x] = n;
        }
    }

    /// Removes op `i`'s invocation and response.
    fn lift(&mut self, i: usize) {
        self.unlink(1 + 2 * i);
        self.unlink(2 + 2 * i);
    }

    /// Undoes [`List::lift`] of op `i` (the last lift not undone).
    fn unlift(&mut self, i: usize) {
        self.relink(2 + 2 * i);
        self.relink(1 + 2 * i);
    }
}

/// The memo's name for a set of linearized operations: the XOR of a random 128-bit word per
/// operation (Zobrist hashing), updated in O(1) as operations are lifted and restored. Two
/// different sets share a name with probability 2^-128 per pair, so the memo stays 24
/// bytes plus a state per entry however long the history is.
fn zobrist(i: usize) -> u128 {
    let hi = crate::testing::rng::derive(0x6c69_6e65_6172_697a, i as u64);
    let lo = crate::testing::rng::derive(0x7a6f_6272_6973_7421, i as u64);
    (u128::from(hi) << 64) | u128::from(lo)
}

/// Searches for a linearization of `ops` from `init`, spending at most `*budget` steps
/// (decremented). With `ends`, every linearization of all operations is explored and its
/// final state collected (for histories without pending operations).
pub(crate) fn search<S: Spec>(
    spec: &S,
    ops: &[Op<'_, S>],
    init: &S::State,
    budget: &mut u64,
    mut ends: Option<&mut HashSet<S::State>>,
) -> Outcome {
    let completed_total = ops.iter().filter(|o| o.output.is_some()).count();
    if completed_total == 0 && ends.is_none() {
        return Outcome::Linearizable;
    }
    let mut list = List::new(ops);
    let keys: Vec<u128> = (0..ops.len()).map(zobrist).collect();
    let mut linearized = 0u128;
    let mut memo: HashSet<(u128, S::State)> = HashSet::new();
    let mut stack: Vec<(usize, S::State)> = Vec::new();
    let mut state = init.clone();
    let mut completed = 0usize;
    let mut entry = list.next[0];
    let mut found = false;
    loop {
        if *budget == 0 {
            return Outcome::Unknown;
        }
        *budget -= 1;
        let done = match &ends {
            None => completed == completed_total,
            Some(_) => entry == END && list.next[0] == END,
        };
        if done {
            match ends.as_deref_mut() {
                None => return Outcome::Linearizable,
                Some(set) => {
                    set.insert(state.clone());
                    found = true;
                }
            }
        } else if entry != END && entry % 2 == 1 {
            // An invocation: try to linearize its operation next.
            let i = (entry - 1) / 2;
            let (next_state, out) = spec.step(&state, ops[i].input);
            if ops[i].output.is_none_or(|o| *o == out) {
                linearized ^= keys[i];
                if memo.insert((linearized, next_state.clone())) {
                    stack.push((i, std::mem::replace(&mut state, next_state)));
                    completed += usize::from(ops[i].output.is_some());
                    list.lift(i);
                    entry = list.next[0];
                    continue;
                }
                linearized ^= keys[i];
            }
            entry = list.next[entry];
            continue;
        }
        // A response whose operation is not linearized (or a collected end): backtrack.
        let Some((i, prev)) = stack.pop() else {
            return if found {
                Outcome::Linearizable
            } else {
                Outcome::NotLinearizable
            };
        };
        state = prev;
        linearized ^= keys[i];
        completed -= usize::from(ops[i].output.is_some());
        list.unlift(i);
        entry = list.next[1 + 2 * i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::linearize::register::{Out, RegOp, Register};

    fn op(input: &RegOp, output: Option<&Out>, call: u64, ret: u64) -> Op<'static, Register> {
        // Leak small test values: the search borrows inputs and outputs.
        let input: &'static RegOp = Box::leak(Box::new(input.clone()));
        let output: Option<&'static Out> = output.map(|o| &*Box::leak(Box::new(o.clone())));
        Op {
            input,
            output,
            call,
            ret,
        }
    }

    fn outcome(ops: &[Op<'_, Register>]) -> Outcome {
        search(&Register, ops, &None, &mut 1_000_000, None)
    }

    #[test]
    fn concurrent_writes_in_either_order() {
        let a = RegOp::Insert(b"a".to_vec());
        let b = RegOp::Insert(b"b".to_vec());
        let ops = [
            op(&a, Some(&Out::Present(true)), 0, 10),
            op(&b, Some(&Out::Present(false)), 0, 10),
            op(&RegOp::Get, Some(&Out::Value(Some(b"b".to_vec()))), 1, 9),
            op(&RegOp::Get, Some(&Out::Value(Some(b"a".to_vec()))), 11, 12),
        ];
        assert_eq!(outcome(&ops), Outcome::Linearizable);
    }

    #[test]
    fn a_read_after_a_write_sees_it() {
        let ops = [
            op(
                &RegOp::Insert(b"a".to_vec()),
                Some(&Out::Present(false)),
                0,
                1,
            ),
            op(&RegOp::Get, Some(&Out::Value(None)), 2, 3),
        ];
        assert_eq!(outcome(&ops), Outcome::NotLinearizable);
    }

    #[test]
    fn touching_times_count_as_concurrent() {
        let ops = [
            op(
                &RegOp::Insert(b"a".to_vec()),
                Some(&Out::Present(false)),
                0,
                5,
            ),
            op(&RegOp::Get, Some(&Out::Value(None)), 5, 6),
        ];
        assert_eq!(outcome(&ops), Outcome::Linearizable);
    }

    #[test]
    fn end_states_of_every_order() {
        let ops = [
            op(&RegOp::Set(b"a".to_vec()), Some(&Out::Ok), 0, 10),
            op(&RegOp::Set(b"b".to_vec()), Some(&Out::Ok), 0, 10),
            op(&RegOp::Set(b"c".to_vec()), Some(&Out::Ok), 11, 12),
            op(&RegOp::Set(b"d".to_vec()), Some(&Out::Ok), 11, 13),
        ];
        let mut ends = HashSet::new();
        let o = search(&Register, &ops, &None, &mut 1_000_000, Some(&mut ends));
        assert_eq!(o, Outcome::Linearizable);
        let want: HashSet<_> = [Some(b"c".to_vec()), Some(b"d".to_vec())].into();
        assert_eq!(ends, want);
    }

    #[test]
    fn the_budget_bounds_the_search() {
        let ops: Vec<_> = (0..40u8)
            .map(|i| op(&RegOp::Set(vec![i]), Some(&Out::Ok), 0, 100))
            .chain([op(&RegOp::Get, Some(&Out::Value(Some(vec![200]))), 0, 100)])
            .collect();
        assert_eq!(
            search(&Register, &ops, &None, &mut 10_000, None),
            Outcome::Unknown
        );
    }
}
