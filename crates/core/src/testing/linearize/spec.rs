//! The sequential specification a history is checked against.
//!
//! A [`Spec`] is a deterministic state machine: from a state and an operation's input it
//! gives the next state and the output a correct object returns. A concurrent history is
//! linearizable when its operations can be put in one order, consistent with real time
//! (an operation that returned before another was called comes first), in which every
//! output is what the spec gives. [`Register`](super::Register) is the spec of one key of
//! a key-value store; any other object (a counter, a queue, a Redis list) is a new `Spec`.

use std::fmt::Debug;
use std::hash::Hash;

/// A deterministic sequential object: what each operation does and returns.
///
/// ```
/// use orrery_core::testing::linearize::Spec;
///
/// /// A counter with `add(n)` returning the new total.
/// struct Counter;
/// impl Spec for Counter {
///     type State = i64;
///     type Input = i64;
///     type Output = i64;
///     fn init(&self) -> i64 { 0 }
///     fn step(&self, s: &i64, n: &i64) -> (i64, i64) { (s + n, s + n) }
/// }
/// assert_eq!(Counter.step(&2, &3), (5, 5));
/// ```
pub trait Spec {
    /// The object's state (hashed for the search's memo: keep it small).
    type State: Clone + Eq + Hash + Debug;
    /// An operation with its arguments.
    type Input: Clone + Debug;
    /// What an operation returns.
    type Output: Clone + Eq + Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `input` applied to `state`, and the output it returns.
    fn step(&self, state: &Self::State, input: &Self::Input) -> (Self::State, Self::Output);

    /// Whether `input` never changes the state (a read). A violating window is shrunk by
    /// dropping reads, which is sound only for operations that change nothing.
    fn is_read_only(&self, input: &Self::Input) -> bool {
        let _ = input;
        false
    }

    /// A state as reports show it (its `Debug` form unless overridden).
    fn show_state(state: &Self::State) -> String {
        format!("{state:?}")
    }
}
