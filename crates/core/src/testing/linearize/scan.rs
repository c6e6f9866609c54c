//! Scans checked against the point history: what a scan concurrent with writers must
//! yield (the contract in [`crate::api`]).
//!
//! A scan is recorded with its invocation and response times `[t0, t1]`, its bounds, its
//! direction, whether it stopped itself after `limit` pairs, and the pairs it yielded. The
//! point history of each key says, conservatively, when the key was certainly present or
//! certainly absent throughout `[t0, t1]`:
//! - **certainly present throughout** when some write of the key returned before `t0` and
//!   every operation that may have removed the key and was invoked by `t1` returned before
//!   that write was invoked (so the removal is ordered before the write in any
//!   linearization);
//! - **certainly absent throughout** when nothing that may write the key was invoked by
//!   `t1`, or some completed removal returned before `t0` and every possible write invoked
//!   by `t1` returned before that removal was invoked.
//!
//! A scan is wrong when it yields keys out of order or outside its bounds; yields a key
//! certainly absent throughout; yields a value that no write invoked by `t1` stores, or one
//! whose every writer was certainly overwritten (or the key removed) before `t0`; or misses
//! a key certainly present throughout inside the part of the range it covered (up to its
//! last pair when it stopped itself). Everything else is allowed: keys written during the
//! scan may or may not appear. Only the [`Register`] spec's operations have these effects.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;

use super::history::History;
use super::register::{Done, Effect, Out, RegOp, Register};
use crate::api::within_end;
use crate::testing::show;

/// A recorded scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanRecord {
    /// Who ran it.
    pub process: usize,
    /// Invocation time (the history's clock).
    pub call: u64,
    /// Response time.
    pub ret: u64,
    /// Lower bound of the range.
    pub lo: Bound<Vec<u8>>,
    /// Upper bound of the range.
    pub hi: Bound<Vec<u8>>,
    /// Whether keys were visited in descending order (`scan_rev`, `last`).
    pub descending: bool,
    /// The visitor stopped the scan after this many pairs (`None`: it ran to the end).
    pub limit: Option<usize>,
    /// What it yielded, in order.
    pub pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A scan that broke the contract.
#[derive(Clone, Debug)]
pub struct ScanViolation {
    /// The scan.
    pub scan: ScanRecord,
    /// What it did wrong.
    pub message: String,
}

impl fmt::Display for ScanViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.scan;
        write!(
            f,
            "scan by process {} over ({}, {}) {}{}, [{} ns, {} ns], {} pairs: {}",
            s.process,
            show_bound(&s.lo),
            show_bound(&s.hi),
            if s.descending {
                "descending"
            } else {
                "ascending"
            },
            s.limit
                .map_or(String::new(), |l| format!(", stopped after {l}")),
            s.call,
            s.ret,
            s.pairs.len(),
            self.message
        )
    }
}

fn show_bound(b: &Bound<Vec<u8>>) -> String {
    crate::testing::show_bound(b.as_ref().map(Vec::as_slice))
}

/// One operation on a key, as the scan checks see it.
struct KeyOp {
    call: u64,
    /// `u64::MAX` without a response.
    ret: u64,
    effect: Effect,
    /// The value it stores if it takes effect, when known.
    value: Option<Vec<u8>>,
}

/// The value an operation stores if it takes effect, when the record shows it.
fn written(op: &RegOp, effect: &Effect) -> Option<Vec<u8>> {
    match &effect.done {
        Some(Done::Wrote(v)) => v.clone(),
        _ if effect.may_write => match op {
            RegOp::Insert(v) | RegOp::Set(v) => Some(v.clone()),
            RegOp::Compute(super::register::ComputeOp::Set(v)) => Some(v.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn within_start(k: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Included(s) => k >= s.as_slice(),
        Bound::Excluded(s) => k > s.as_slice(),
        Bound::Unbounded => true,
    }
}

/// Pairs `(t, running extreme of u)` sorted by `t`, for "the largest (or smallest) `u`
/// among the entries with `t` at most (or above) a bound" in a binary search.
struct Running(Vec<(u64, u64)>);

impl Running {
    /// The running maximum of `u` over entries sorted by `t`.
    fn max_by(mut v: Vec<(u64, u64)>) -> Running {
        v.sort_unstable();
        let mut m = 0;
        for e in &mut v {
            m = m.max(e.1);
            e.1 = m;
        }
        Running(v)
    }

    /// The running minimum of `u` from the end, over entries sorted by `t`.
    fn min_from_end(mut v: Vec<(u64, u64)>) -> Running {
        v.sort_unstable();
        let mut m = u64::MAX;
        for e in v.iter_mut().rev() {
            m = m.min(e.1);
            e.1 = m;
        }
        Running(v)
    }

    /// The maximum of `u` over entries with `t <= bound` (`None`: no such entry).
    fn max_upto(&self, bound: u64) -> Option<u64> {
        let n = self.0.partition_point(|e| e.0 <= bound);
        n.checked_sub(1).map(|i| self.0[i].1)
    }

    /// The maximum of `u` over entries with `t < bound`.
    fn max_below(&self, bound: u64) -> Option<u64> {
        let n = self.0.partition_point(|e| e.0 < bound);
        n.checked_sub(1).map(|i| self.0[i].1)
    }

    /// The minimum of `u` over entries with `t > bound`.
    fn min_above(&self, bound: u64) -> Option<u64> {
        let i = self.0.partition_point(|e| e.0 <= bound);
        self.0.get(i).map(|e| e.1)
    }
}

/// One key's operations, indexed for the scan checks' questions.
struct KeyIndex {
    ops: Vec<KeyOp>,
    /// Possible removals: (call, running max of ret).
    removers: Running,
    /// Possible writes: (call, running max of ret).
    writers: Running,
    /// Completed writes: (ret, running max of call).
    writes: Running,
    /// Completed removals: (ret, running max of call).
    removals: Running,
    /// Completed removals and completed writes of a known value: (call, min ret from the
    /// end) — what certainly replaced an earlier value.
    changers: Running,
    /// The earliest call of a possible write whose value is not known.
    unknown_writer: u64,
    /// The possible writes of each known value (indexes into `ops`).
    by_value: std::collections::HashMap<Vec<u8>, Vec<usize>>,
}

impl KeyIndex {
    fn new(ops: Vec<KeyOp>) -> KeyIndex {
        let pick = |f: &dyn Fn(&KeyOp) -> Option<(u64, u64)>| ops.iter().filter_map(f).collect();
        let removers = Running::max_by(pick(&|o| o.effect.may_remove.then_some((o.call, o.ret))));
        let writers = Running::max_by(pick(&|o| o.effect.may_write.then_some((o.call, o.ret))));
        let writes = Running::max_by(pick(&|o| {
            matches!(o.effect.done, Some(Done::Wrote(_))).then_some((o.ret, o.call))
        }));
        let removals = Running::max_by(pick(&|o| {
            (o.effect.done == Some(Done::Removed)).then_some((o.ret, o.call))
        }));
        let changers = Running::min_from_end(pick(&|o| match &o.effect.done {
            Some(Done::Removed) | Some(Done::Wrote(Some(_))) => Some((o.call, o.ret)),
            _ => None,
        }));
        let unknown_writer = ops
            .iter()
            .filter(|o| o.effect.may_write && o.value.is_none())
            .map(|o| o.call)
            .min()
            .unwrap_or(u64::MAX);
        let mut by_value: std::collections::HashMap<Vec<u8>, Vec<usize>> = Default::default();
        for (i, o) in ops.iter().enumerate() {
            if let (true, Some(v)) = (o.effect.may_write, &o.value) {
                by_value.entry(v.clone()).or_default().push(i);
            }
        }
        KeyIndex {
            by_value,
            ops,
            removers,
            writers,
            writes,
            removals,
            changers,
            unknown_writer,
        }
    }

    /// Some write returned before `t0`, invoked after every possible removal invoked by
    /// `t1` had returned.
    fn certainly_present(&self, t0: u64, t1: u64) -> bool {
        let latest_write_call = self.writes.max_below(t0);
        match (self.removers.max_upto(t1), latest_write_call) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(m), Some(c)) => c > m,
        }
    }

    /// Nothing possibly written by `t1`, or some removal returned before `t0`, invoked
    /// after every possible write invoked by `t1` had returned.
    fn certainly_absent(&self, t0: u64, t1: u64) -> bool {
        match (self.writers.max_upto(t1), self.removals.max_below(t0)) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(n), Some(c)) => c > n,
        }
    }

    /// Whether `v` may have been the key's value at some moment of `[t0, t1]`; `Err` says
    /// why not.
    fn value_possible(&self, v: &[u8], t0: u64, t1: u64) -> Result<(), String> {
        let all = self.by_value.get(v).map_or(&[][..], Vec::as_slice);
        let writers: Vec<&KeyOp> = all
            .iter()
            .map(|&i| &self.ops[i])
            .filter(|o| o.call <= t1)
            .collect();
        if writers.is_empty() {
            if self.unknown_writer <= t1 {
                return Ok(());
            }
            return Err(format!(
                "value {} was not written by any operation invoked before the scan returned",
                show(v)
            ));
        }
        let unique = all.len() == 1;
        let overwritten = |w: &KeyOp| {
            if unique {
                // Only `w` stores `v`: any certain change invoked after it returned counts.
                return self.changers.min_above(w.ret).is_some_and(|r| r < t0);
            }
            self.ops.iter().any(|x| {
                x.call > w.ret
                    && x.ret < t0
                    && match &x.effect.done {
                        Some(Done::Removed) => true,
                        Some(Done::Wrote(Some(y))) => y != v,
                        _ => false,
                    }
            })
        };
        if writers.iter().all(|w| overwritten(w)) {
            return Err(format!(
                "value {} was certainly overwritten or removed before the scan began",
                show(v)
            ));
        }
        Ok(())
    }
}

/// Checks each scan against the history of point operations (see the module docs).
pub fn check_scans(history: &History<RegOp, Out>, scans: &[ScanRecord]) -> Vec<ScanViolation> {
    let mut ops: BTreeMap<&[u8], Vec<KeyOp>> = BTreeMap::new();
    for e in history.entries() {
        let output = if e.completed() {
            e.output.as_ref()
        } else {
            None
        };
        let effect = Register.effect(&e.input, output);
        let value = written(&e.input, &effect);
        ops.entry(&e.key).or_default().push(KeyOp {
            call: e.call,
            ret: e.ret_or_max(),
            effect,
            value,
        });
    }
    let keys: BTreeMap<&[u8], KeyIndex> = ops
        .into_iter()
        .map(|(k, o)| (k, KeyIndex::new(o)))
        .collect();
    let mut out = Vec::new();
    for s in scans {
        if let Err(message) = check_scan(&keys, s) {
            out.push(ScanViolation {
                scan: s.clone(),
                message,
            });
        }
    }
    out
}

fn check_scan(keys: &BTreeMap<&[u8], KeyIndex>, s: &ScanRecord) -> Result<(), String> {
    let (t0, t1) = (s.call, s.ret);
    for (i, w) in s.pairs.windows(2).enumerate() {
        let ordered = if s.descending {
            w[0].0 > w[1].0
        } else {
            w[0].0 < w[1].0
        };
        if !ordered {
            return Err(format!(
                "pairs #{i} and #{} out of order: {} then {}",
                i + 1,
                show(&w[0].0),
                show(&w[1].0)
            ));
        }
    }
    if let Some(l) = s.limit
        && s.pairs.len() > l
    {
        return Err(format!(
            "yielded {} pairs past its limit {l}",
            s.pairs.len()
        ));
    }
    for (k, v) in &s.pairs {
        if !within_start(k, &s.lo) || !within_end(k, s.hi.as_ref().map(Vec::as_slice)) {
            return Err(format!("yielded {} outside its bounds", show(k)));
        }
        let Some(key) = keys.get(k.as_slice()) else {
            return Err(format!("yielded {}, which was never written", show(k)));
        };
        if key.certainly_absent(t0, t1) {
            return Err(format!(
                "yielded {}, which was absent throughout the scan",
                show(k)
            ));
        }
        key.value_possible(v, t0, t1)
            .map_err(|m| format!("yielded key {}: {m}", show(k)))?;
    }
    // The part of the range the scan covered.
    let stopped = s.limit.is_some_and(|l| s.pairs.len() >= l);
    let (lo, hi) = match (stopped, s.pairs.last()) {
        (true, Some((last, _))) if s.descending => (Bound::Included(last.clone()), s.hi.clone()),
        (true, Some((last, _))) => (s.lo.clone(), Bound::Included(last.clone())),
        // Stopped before any pair: it covered nothing.
        (true, None) => return Ok(()),
        _ => (s.lo.clone(), s.hi.clone()),
    };
    let yielded: std::collections::HashSet<&[u8]> =
        s.pairs.iter().map(|(k, _)| k.as_slice()).collect();
    let start: Bound<&[u8]> = lo.as_ref().map(Vec::as_slice);
    let in_range = keys
        .range::<[u8], _>((start, Bound::Unbounded))
        .take_while(|(k, _)| within_end(k, lo_hi(&hi)));
    for (k, key) in in_range {
        if key.certainly_present(t0, t1) && !yielded.contains(k) {
            return Err(format!(
                "missed {}, which was present throughout the scan",
                show(k)
            ));
        }
    }
    Ok(())
}

fn lo_hi(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::linearize::history::Entry;

    fn e(
        process: usize,
        key: &[u8],
        input: RegOp,
        output: Out,
        call: u64,
        ret: u64,
    ) -> Entry<RegOp, Out> {
        Entry {
            process,
            key: key.to_vec(),
            input,
            output: Some(output),
            call,
            ret: Some(ret),
        }
    }

    fn scan(call: u64, ret: u64, pairs: &[(&[u8], &[u8])]) -> ScanRecord {
        ScanRecord {
            process: 9,
            call,
            ret,
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
            descending: false,
            limit: None,
            pairs: pairs
                .iter()
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect(),
        }
    }

    fn history() -> History<RegOp, Out> {
        History::new(vec![
            // a: present from 10 on.
            e(
                0,
                b"a",
                RegOp::Insert(b"1".to_vec()),
                Out::Present(false),
                0,
                10,
            ),
            // b: present from 10, removed during [50, 60].
            e(
                0,
                b"b",
                RegOp::Insert(b"2".to_vec()),
                Out::Present(false),
                0,
                10,
            ),
            e(1, b"b", RegOp::Remove, Out::Present(true), 50, 60),
            // c: inserted during [50, 60].
            e(
                1,
                b"c",
                RegOp::Insert(b"3".to_vec()),
                Out::Present(false),
                50,
                60,
            ),
            // d: removed before 20, so absent from then on.
            e(
                0,
                b"d",
                RegOp::Insert(b"4".to_vec()),
                Out::Present(false),
                0,
                5,
            ),
            e(0, b"d", RegOp::Remove, Out::Present(true), 10, 15),
            // a's value replaced at [30, 35].
            e(
                1,
                b"a",
                RegOp::Insert(b"5".to_vec()),
                Out::Present(true),
                30,
                35,
            ),
        ])
        .unwrap()
    }

    #[test]
    fn concurrent_changes_may_show_or_not() {
        let h = history();
        for pairs in [
            &[(&b"a"[..], &b"5"[..]), (b"b", b"2")][..],
            &[(b"a", b"5"), (b"c", b"3")],
            &[(b"a", b"5"), (b"b", b"2"), (b"c", b"3")],
            &[(b"a", b"5")],
        ] {
            let v = check_scans(&h, &[scan(40, 70, pairs)]);
            assert!(v.is_empty(), "{pairs:?}: {}", v[0]);
        }
        // Early stop: keys past the last yielded one need not appear.
        let mut s = scan(40, 70, &[(b"", b"")]);
        s.pairs.clear();
        s.limit = Some(0);
        assert!(check_scans(&h, &[s]).is_empty());
    }

    #[test]
    fn scans_that_break_the_contract() {
        let h = history();
        type Pairs<'a> = &'a [(&'a [u8], &'a [u8])];
        let cases: [(Pairs<'_>, &str); 5] = [
            (&[(b"b", b"2")], "missed b\"a\""),
            (&[(b"a", b"5"), (b"d", b"4")], "absent throughout"),
            (&[(b"a", b"1")], "overwritten"),
            (&[(b"a", b"9")], "not written"),
            (&[(b"b", b"2"), (b"a", b"5")], "out of order"),
        ];
        for (pairs, want) in cases {
            let v = check_scans(&h, &[scan(40, 70, pairs)]);
            assert_eq!(v.len(), 1, "{pairs:?} passed");
            assert!(v[0].message.contains(want), "{pairs:?}: {}", v[0]);
        }
        let mut desc = scan(40, 70, &[(b"a", b"5"), (b"b", b"2")]);
        desc.descending = true;
        assert!(check_scans(&h, &[desc])[0].message.contains("out of order"));
    }
}
