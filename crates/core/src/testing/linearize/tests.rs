//! The checker accepts tricky linearizable histories, rejects non-linearizable ones with
//! small windows, says "unknown" when out of budget, and catches broken indexes driven by
//! the threaded driver; the reference passes.

use super::*;
use crate::reference::LockedBTreeMap;
use crate::testing::broken::{Broken, Fault};
use crate::testing::torture::Target;
use crate::testing::wait::DEADLINE;

fn e(process: usize, input: RegOp, output: Out, call: u64, ret: u64) -> Entry<RegOp, Out> {
    Entry {
        process,
        key: b"k".to_vec(),
        input,
        output: Some(output),
        call,
        ret: Some(ret),
    }
}

fn pending(process: usize, input: RegOp, call: u64) -> Entry<RegOp, Out> {
    Entry {
        process,
        key: b"k".to_vec(),
        input,
        output: None,
        call,
        ret: None,
    }
}

fn v(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn val(s: &str) -> Out {
    Out::Value(Some(v(s)))
}

fn report(entries: Vec<Entry<RegOp, Out>>) -> Report<Register> {
    check(
        &Register,
        &History::new(entries).unwrap(),
        Budget::default(),
    )
}

#[test]
fn tricky_linearizable_histories_pass() {
    let histories = [
        // Two concurrent inserts; a read inside them fixes b first, so a's insert must
        // report the key present, and a later read sees a.
        vec![
            e(0, RegOp::Insert(v("a")), Out::Present(true), 0, 100),
            e(1, RegOp::Insert(v("b")), Out::Present(false), 0, 100),
            e(2, RegOp::Get, val("b"), 10, 90),
            e(3, RegOp::Get, val("a"), 110, 120),
        ],
        // A read sees a write before the write returns; a later read too.
        vec![
            e(0, RegOp::Set(v("x")), Out::Ok, 0, 100),
            e(1, RegOp::Get, val("x"), 10, 20),
            e(1, RegOp::Get, val("x"), 30, 40),
        ],
        // A removal without a response took effect (the later read shows it) …
        vec![
            e(0, RegOp::Set(v("x")), Out::Ok, 0, 10),
            pending(1, RegOp::Remove, 20),
            e(0, RegOp::Get, Out::Value(None), 30, 40),
        ],
        // … or it did not.
        vec![
            e(0, RegOp::Set(v("x")), Out::Ok, 0, 10),
            pending(1, RegOp::Remove, 20),
            e(0, RegOp::Get, val("x"), 30, 40),
            e(0, RegOp::Get, val("x"), 50, 60),
        ],
        // Overlapping appends, each seeing the other's effect in one order.
        vec![
            e(0, RegOp::Set(v("x")), Out::Ok, 0, 5),
            e(
                1,
                RegOp::Compute(ComputeOp::Append(v("a"))),
                Out::Old(Some(v("x"))),
                10,
                50,
            ),
            e(
                2,
                RegOp::Compute(ComputeOp::Append(v("b"))),
                Out::Old(Some(v("xa"))),
                20,
                40,
            ),
            e(0, RegOp::Get, val("xab"), 60, 70),
            e(
                0,
                RegOp::Update(UpdateOp::Overwrite(v("Q"))),
                Out::Old(Some(v("xab"))),
                80,
                90,
            ),
            e(0, RegOp::Get, val("Qab"), 95, 99),
        ],
        // Redis: INCR of an absent key, APPEND, and an error that changes nothing.
        vec![
            e(0, RegOp::Incr(2), Out::Int(2), 0, 10),
            e(1, RegOp::Incr(3), Out::Int(5), 5, 15),
            e(0, RegOp::Append(v("x")), Out::Len(2), 20, 30),
            e(1, RegOp::Incr(1), Out::Error, 40, 50),
            e(0, RegOp::Get, val("5x"), 60, 70),
            e(0, RegOp::Remove, Out::Present(true), 80, 90),
            e(1, RegOp::Incr(-1), Out::Int(-1), 100, 110),
        ],
    ];
    for (i, h) in histories.into_iter().enumerate() {
        let r = report(h);
        assert!(r.is_ok(), "history {i}:\n{r}");
    }
}

/// Each case: a non-linearizable history and the size of the window it must shrink to.
#[test]
fn non_linearizable_histories_fail_with_small_windows() {
    type Case = (&'static str, Vec<Entry<RegOp, Out>>, usize);
    let cases: Vec<Case> = vec![
        (
            "stale read",
            vec![
                e(0, RegOp::Set(v("old")), Out::Ok, 0, 10),
                e(0, RegOp::Set(v("new")), Out::Ok, 20, 30),
                e(1, RegOp::Get, val("old"), 40, 50),
            ],
            1,
        ),
        (
            "lost update (two appends saw the same value)",
            vec![
                e(0, RegOp::Set(v("x")), Out::Ok, 0, 5),
                e(
                    1,
                    RegOp::Compute(ComputeOp::Append(v("a"))),
                    Out::Old(Some(v("x"))),
                    10,
                    50,
                ),
                e(
                    2,
                    RegOp::Compute(ComputeOp::Append(v("b"))),
                    Out::Old(Some(v("x"))),
                    20,
                    40,
                ),
            ],
            2,
        ),
        (
            "new-old inversion (a later read misses what an earlier one saw)",
            vec![
                e(0, RegOp::Insert(v("a")), Out::Present(false), 0, 100),
                e(1, RegOp::Get, val("a"), 10, 20),
                e(2, RegOp::Get, Out::Value(None), 30, 40),
            ],
            3,
        ),
        (
            "INCR lost (both saw an absent key)",
            vec![
                e(0, RegOp::Incr(1), Out::Int(1), 0, 10),
                e(1, RegOp::Incr(1), Out::Int(1), 5, 15),
            ],
            2,
        ),
        (
            "acknowledged write lost after a removal that did not happen",
            vec![
                e(0, RegOp::Insert(v("a")), Out::Present(false), 0, 10),
                e(1, RegOp::Remove, Out::Present(false), 20, 30),
            ],
            1,
        ),
    ];
    for (name, h, want) in cases {
        let r = report(h);
        assert_eq!(r.violations.len(), 1, "{name}: {r}");
        let w = &r.violations[0];
        assert_eq!(w.window.len(), want, "{name}: {w}");
        let text = w.to_string();
        assert!(text.contains("NOT linearizable"), "{name}: {text}");
    }
}

/// A long linearizable history, then one stale read: the window is the few operations
/// around it, starting from the state before them.
#[test]
fn windows_stay_small_in_long_histories() {
    let mut h = Vec::new();
    let mut t = 0;
    for i in 0..500u32 {
        let p = (i % 3) as usize;
        h.push(e(
            p,
            RegOp::Set(i.to_be_bytes().to_vec()),
            Out::Ok,
            t,
            t + 8,
        ));
        h.push(e(
            (p + 1) % 3,
            RegOp::Get,
            Out::Value(Some(i.to_be_bytes().to_vec())),
            t + 9,
            t + 12,
        ));
        t += 20;
    }
    h.push(e(0, RegOp::Set(v("last")), Out::Ok, t, t + 5));
    h.push(e(
        1,
        RegOp::Get,
        Out::Value(Some(499u32.to_be_bytes().to_vec())),
        t + 10,
        t + 15,
    ));
    let r = report(h);
    let w = &r.violations[0];
    // From the state the last set left, the read alone fails.
    assert_eq!(w.window.len(), 1, "{w}");
    assert_eq!(w.from, [Some(v("last"))], "{w}");
}

#[test]
fn an_intractable_history_is_unknown_not_a_hang() {
    let mut h: Vec<_> = (0..40u8)
        .map(|i| e(i as usize, RegOp::Set(vec![i]), Out::Ok, 0, 100))
        .collect();
    h.push(e(99, RegOp::Get, Out::Value(Some(vec![200])), 0, 100));
    let r = check(
        &Register,
        &History::new(h).unwrap(),
        Budget {
            steps_per_key: 20_000,
        },
    );
    assert_eq!((r.unknown.len(), r.violations.len()), (1, 0), "{r}");
    assert!(!r.is_ok());
}

#[test]
fn histories_are_validated() {
    let bad = vec![e(0, RegOp::Get, Out::Value(None), 10, 5)];
    assert!(History::new(bad).unwrap_err().contains("before its call"));
}

fn small() -> Workload {
    Workload {
        workers: 3,
        ops: 1500,
        hot_keys: 4,
        fillers: 500,
        scanner: true,
        seed: 7,
    }
}

#[test]
fn the_reference_passes_rounds() {
    let ordered = Target::ordered(LockedBTreeMap::new()).with_rmw();
    let round = drive(&ordered, &small());
    let verdict = check_round(&round, Budget::default());
    assert!(verdict.is_ok(), "{verdict}");
    assert!(verdict.scans > 0);
    assert_eq!(verdict.report.processes, 3);
    let point = Target::point(LockedBTreeMap::new());
    let verdict = check_round(&drive(&point, &small()), Budget::default());
    assert!(verdict.is_ok(), "{verdict}");
    assert_eq!(verdict.scans, 0);
}

/// Rounds on the reference with `fault` until one shows a violation (or the deadline
/// passes: a fault that needs threads to overlap may take a few rounds on a busy
/// machine); returns the verdict that caught it.
fn caught(fault: Fault, scans_only: bool) -> Verdict {
    let start = std::time::Instant::now();
    let mut w = small();
    loop {
        let subject = Target::ordered(Broken::new(LockedBTreeMap::new(), fault)).with_rmw();
        let verdict = check_round(&drive(&subject, &w), Budget::default());
        let hit = if scans_only {
            !verdict.scan_violations.is_empty()
        } else {
            !verdict.report.violations.is_empty()
        };
        if hit {
            return verdict;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{fault:?} not caught within {DEADLINE:?}: {verdict}"
        );
        w.seed += 1;
    }
}

#[test]
fn broken_indexes_are_caught() {
    for fault in [
        Fault::StaleReadEveryNth(5),
        Fault::LoseEveryNthInsert(20),
        Fault::StaleThreadCacheEveryNth(3),
        Fault::RacyCompute,
        Fault::ComputeNoneKeepsKey,
    ] {
        // (Window sizes are not asserted here: an operation preempted for milliseconds
        // overlaps everything in that time, and the window must keep what it overlaps.)
        let v = caught(fault, false);
        let w = &v.report.violations[0];
        assert!(w.culprit < w.window.len(), "{fault:?}: {w}");
    }
    for fault in [Fault::DropEveryNthScanPair(2), Fault::SwapFirstTwoScanPairs] {
        caught(fault, true);
    }
}
