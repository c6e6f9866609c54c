//! Checking a history key by key, and the minimal violating window of a key that fails.
//!
//! Linearizability is local (Herlihy and Wing): a history of operations on independent
//! keys is linearizable exactly when each key's sub-history is, so each key is searched on
//! its own ([`super::search`]).
//!
//! When a key fails, the report narrows it down to a window a person can read:
//! 1. the shortest failing prefix: the history cut just after the `i`-th response, for the
//!    smallest `i` that fails (found by bisection: a prefix of a linearizable history is
//!    linearizable, operations still open at the cut becoming operations without a
//!    response);
//! 2. from its last quiescent point before the operation whose response failed it (a moment
//!    when no operation is open): every operation before that point precedes every
//!    operation after it in any linearization, so the prefix fails exactly when the
//!    operations after the point fail from *every* state the operations before it can end
//!    in; those end states are enumerated, and the window is what follows the point;
//! 3. reads dropped one by one while the window still fails from every such state
//!    (dropping an operation that changes nothing cannot turn a linearizable window into
//!    a failing one, so what remains still proves the violation).
//!
//! The result names the states the window starts from and lists its operations with their
//! processes, times and outputs.

use std::collections::HashSet;
use std::fmt;

use super::history::{Entry, History};
use super::search::{Op, Outcome, search};
use super::spec::Spec;

/// Limits of a check.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Search steps per key (each search of a window counts separately).
    pub steps_per_key: u64,
}

impl Default for Budget {
    /// Ten million steps per key: seconds at most, far beyond what real histories of a few
    /// threads need.
    fn default() -> Self {
        Budget {
            steps_per_key: 10_000_000,
        }
    }
}

/// A key whose history is not linearizable, with a minimal window that shows it.
pub struct Violation<S: Spec> {
    /// The key.
    pub key: Vec<u8>,
    /// Operations on the key in the whole history.
    pub key_ops: usize,
    /// The window: operations (by invocation time) that cannot be linearized from any of
    /// [`Violation::from`]. Operations open at the end of the failing prefix appear
    /// without a response.
    pub window: Vec<Entry<S::Input, S::Output>>,
    /// The states the window may start from (what the operations before it can end in).
    pub from: Vec<S::State>,
    /// The window's operation whose response ends the shortest failing prefix: no
    /// linearization of what came before explains it.
    pub culprit: usize,
    /// For the reader: the last few operations before the window that may have changed
    /// the key (where the states of [`Violation::from`] come from). Not part of the
    /// proof.
    pub context: Vec<Entry<S::Input, S::Output>>,
}

/// What checking a history found.
pub struct Report<S: Spec> {
    /// Keys checked.
    pub keys: usize,
    /// Operations checked.
    pub ops: usize,
    /// Processes in the history.
    pub processes: usize,
    /// Keys whose history is linearizable.
    pub linearizable: usize,
    /// Keys whose history is not, each with its window.
    pub violations: Vec<Violation<S>>,
    /// Keys whose search ran out of budget.
    pub unknown: Vec<Vec<u8>>,
}

impl<S: Spec> Report<S> {
    /// Whether every key was shown linearizable.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty() && self.unknown.is_empty()
    }
}

fn ops_of<'a, S: Spec>(entries: &[&'a Entry<S::Input, S::Output>]) -> Vec<Op<'a, S>> {
    entries
        .iter()
        .map(|e| Op {
            input: &e.input,
            output: if e.completed() {
                e.output.as_ref()
            } else {
                None
            },
            call: e.call,
            ret: e.ret_or_max(),
        })
        .collect()
}

/// Whether `ops` fails from every state of `from` (`None`: a search ran out of budget).
fn fails_from_all<S: Spec>(
    spec: &S,
    ops: &[Op<'_, S>],
    from: &[S::State],
    budget: u64,
) -> Option<bool> {
    for s in from {
        let mut b = budget;
        match search(spec, ops, s, &mut b, None) {
            Outcome::NotLinearizable => {}
            Outcome::Linearizable => return Some(false),
            Outcome::Unknown => return None,
        }
    }
    Some(true)
}

/// The prefix of `ops` (sorted by call) cut just after time `t`: the operations invoked by
/// then, those still open losing their response.
fn prefix<'a, S: Spec>(ops: &[Op<'a, S>], t: u64) -> Vec<Op<'a, S>> {
    ops.iter()
        .filter(|o| o.call <= t)
        .map(|o| {
            if o.ret <= t {
                *o
            } else {
                Op {
                    output: None,
                    ret: u64::MAX,
                    ..*o
                }
            }
        })
        .collect()
}

/// Checks one key's entries (from the initial state); a violation's window when it fails.
fn check_key<S: Spec>(
    spec: &S,
    key: &[u8],
    mut entries: Vec<&Entry<S::Input, S::Output>>,
    budget: Budget,
) -> Result<Option<Violation<S>>, ()> {
    entries.sort_by_key(|e| (e.call, e.ret_or_max()));
    let ops = ops_of::<S>(&entries);
    let init = spec.init();
    let mut b = budget.steps_per_key;
    match search(spec, &ops, &init, &mut b, None) {
        Outcome::Linearizable => return Ok(None),
        Outcome::Unknown => return Err(()),
        Outcome::NotLinearizable => {}
    }
    let steps = budget.steps_per_key;
    // 1. The shortest failing prefix, by bisection over the response times.
    let mut rets: Vec<u64> = ops
        .iter()
        .map(|o| o.ret)
        .filter(|&r| r != u64::MAX)
        .collect();
    rets.sort_unstable();
    rets.dedup();
    let (mut lo, mut hi) = (0usize, rets.len());
    // Invariant: the prefix at rets[hi] (or the whole history when hi == len) fails.
    while lo < hi {
        let mid = (lo + hi) / 2;
        let p = prefix(&ops, rets[mid]);
        let mut b = steps;
        if search(spec, &p, &init, &mut b, None) == Outcome::NotLinearizable {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let (cut, failing) = match rets.get(hi) {
        Some(&t) => (t, prefix(&ops, t)),
        None => (u64::MAX, ops.clone()),
    };
    // The operation whose response ends the prefix.
    let last_call = failing
        .iter()
        .filter(|o| o.ret == cut)
        .map(|o| o.call)
        .min()
        .unwrap_or(u64::MAX);
    // 2. The last quiescent point before it, and the states before that point.
    let mut events: Vec<(u64, u8)> = failing
        .iter()
        .flat_map(|o| [(o.call, 0u8), (o.ret, 1u8)])
        .collect();
    events.sort_unstable();
    let mut open = 0usize;
    let mut quiet: Option<u64> = None;
    for &(t, kind) in &events {
        if kind == 0 {
            open += 1;
        } else {
            open -= 1;
            if open == 0 && t < last_call {
                quiet = Some(t);
            }
        }
    }
    let mut from = vec![init.clone()];
    let mut window: Vec<usize> = (0..failing.len()).collect();
    let mut context = Vec::new();
    if let Some(q) = quiet {
        let before: Vec<Op<'_, S>> = failing.iter().filter(|o| o.ret <= q).copied().collect();
        let mut ends = HashSet::new();
        let mut b = steps;
        if search(spec, &before, &init, &mut b, Some(&mut ends)) == Outcome::Linearizable {
            let after: Vec<usize> = (0..failing.len())
                .filter(|&i| failing[i].call > q)
                .collect();
            let starts: Vec<S::State> = ends.into_iter().collect();
            let sub: Vec<Op<'_, S>> = after.iter().map(|&i| failing[i]).collect();
            if fails_from_all(spec, &sub, &starts, steps) == Some(true) {
                from = starts;
                window = after;
                // The last three writes before the point, in call order.
                let mut writes: Vec<usize> = (0..failing.len())
                    .filter(|&i| failing[i].ret <= q && !spec.is_read_only(failing[i].input))
                    .collect();
                writes.sort_by_key(|&i| failing[i].ret);
                let skip = writes.len().saturating_sub(3);
                let mut last: Vec<usize> = writes[skip..].to_vec();
                last.sort_unstable();
                context = last.iter().map(|&i| entries[i].clone()).collect();
            }
        }
    }
    // 3. Drop reads that are not needed.
    let mut i = 0;
    while i < window.len() {
        if spec.is_read_only(failing[window[i]].input) {
            let mut w = window.clone();
            w.remove(i);
            let sub: Vec<Op<'_, S>> = w.iter().map(|&j| failing[j]).collect();
            if fails_from_all(spec, &sub, &from, steps) == Some(true) {
                window = w;
                continue;
            }
        }
        i += 1;
    }
    let culprit = window
        .iter()
        .position(|&j| failing[j].ret == cut)
        .unwrap_or(window.len().saturating_sub(1));
    let window = window
        .iter()
        .map(|&j| {
            // `failing` is in the order of `entries` (sorted by call), restricted to
            // invocations at or before the cut.
            let e = entries[j];
            let mut e = e.clone();
            if failing[j].output.is_none() {
                e.output = None;
                e.ret = None;
            }
            e
        })
        .collect();
    Ok(Some(Violation {
        key: key.to_vec(),
        key_ops: entries.len(),
        window,
        from,
        culprit,
        context,
    }))
}

/// Checks every key's history for linearizability against `spec`.
///
/// ```
/// use orrery_core::testing::linearize::{check, Budget, Entry, History, Out, RegOp, Register};
///
/// let e = |process, input, output, call, ret| Entry {
///     process, key: b"k".to_vec(), input, output: Some(output), call, ret: Some(ret),
/// };
/// // A write that completed, then a read that misses it: a stale read.
/// let h = History::new(vec![
///     e(0, RegOp::Set(b"new".to_vec()), Out::Ok, 0, 10),
///     e(1, RegOp::Get, Out::Value(None), 20, 30),
/// ]).unwrap();
/// let report = check(&Register, &h, Budget::default());
/// assert!(!report.is_ok());
/// let v = &report.violations[0];
/// assert_eq!(v.window[v.culprit].input, RegOp::Get); // the read no order explains
/// println!("{report}");
/// ```
pub fn check<S: Spec>(
    spec: &S,
    history: &History<S::Input, S::Output>,
    budget: Budget,
) -> Report<S> {
    let entries = history.entries();
    let mut report = Report {
        keys: 0,
        ops: entries.len(),
        processes: history.processes(),
        linearizable: 0,
        violations: Vec::new(),
        unknown: Vec::new(),
    };
    for (key, idx) in history.by_key() {
        report.keys += 1;
        let key_entries: Vec<&Entry<S::Input, S::Output>> =
            idx.iter().map(|&i| &entries[i]).collect();
        match check_key(spec, key, key_entries, budget) {
            Ok(None) => report.linearizable += 1,
            Ok(Some(v)) => report.violations.push(v),
            Err(()) => report.unknown.push(key.to_vec()),
        }
    }
    report
}

impl<S: Spec> fmt::Display for Violation<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "key {}: NOT linearizable ({} operations on the key). A minimal violating window, \
             {} operations, starting from {}:",
            crate::testing::show(&self.key),
            self.key_ops,
            self.window.len(),
            if self.from.len() == 1 {
                format!("the state {}", S::show_state(&self.from[0]))
            } else {
                let states: Vec<String> = self.from.iter().map(S::show_state).collect();
                format!("any of the states {}", states.join(", "))
            }
        )?;
        let t0 = self.window.iter().map(|e| e.call).min().unwrap_or(0);
        let at = |t: u64| (t as f64 - t0 as f64) / 1e3;
        if !self.context.is_empty() {
            writeln!(f, "  (before it, the last writes:)")?;
            for e in &self.context {
                let r = e.ret.unwrap_or(e.call);
                writeln!(
                    f,
                    "  (process {:>3} [{:>10.3} µs, {:>10.3} µs] {:?} -> {:?})",
                    e.process,
                    at(e.call),
                    at(r),
                    e.input,
                    e.output
                )?;
            }
        }
        for (i, e) in self.window.iter().enumerate() {
            let mark = if i == self.culprit {
                "   <- no order explains this response"
            } else {
                ""
            };
            let times = match e.ret {
                Some(r) => format!(
                    "[{:>10.3} µs, {:>10.3} µs]",
                    (e.call - t0) as f64 / 1e3,
                    (r - t0) as f64 / 1e3
                ),
                None => format!("[{:>10.3} µs,   no reply   ]", (e.call - t0) as f64 / 1e3),
            };
            match &e.output {
                Some(o) => writeln!(
                    f,
                    "  process {:>3} {times} {:?} -> {o:?}{mark}",
                    e.process, e.input
                )?,
                None => writeln!(
                    f,
                    "  process {:>3} {times} {:?} -> (no response)",
                    e.process, e.input
                )?,
            }
        }
        write!(
            f,
            "  no order of these operations that respects their times explains every output"
        )
    }
}

impl<S: Spec> fmt::Display for Report<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "linearizability: {} operations on {} keys from {} processes: {} keys linearizable, \
             {} violations, {} unknown (search budget exhausted)",
            self.ops,
            self.keys,
            self.processes,
            self.linearizable,
            self.violations.len(),
            self.unknown.len()
        )?;
        for v in &self.violations {
            writeln!(f, "{v}")?;
        }
        for k in &self.unknown {
            writeln!(
                f,
                "key {}: unknown (budget exhausted)",
                crate::testing::show(k)
            )?;
        }
        Ok(())
    }
}

impl<S: Spec> fmt::Debug for Report<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<S: Spec> fmt::Debug for Violation<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
