//! Episodes, campaigns, replays and the divergence report.
//!
//! A campaign of `ops` operations from one seed is a series of episodes; episode `e` runs
//! on a fresh subject and an empty model with the stream seeded `derive(seed, e)`, and is
//! recorded (its operations only: a few MiB at most), so that a divergence can be replayed
//! and minimized without keeping the whole campaign. A full comparison ([`Op::Verify`]) is
//! recorded and run every `max(2^14, 16 × keys)` operations and at the end of every
//! episode, which bounds its cost to a fraction of the run however large the model grows.
//!
//! On a divergence (a wrong answer, a failed full comparison or invariant walk, or a panic
//! of the structure), [`run`] stops, replays the episode's operations up to the diverging
//! one on a fresh subject to confirm it, shrinks them with [`ddmin`] (each candidate
//! replayed on a fresh subject and model, ending with a full comparison), and returns a
//! [`Divergence`] whose `Display` is the report: the seed, the episode, the first message
//! and the minimized operations with the message they end in.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::apply::apply;
use super::op::Op;
use super::shrink::{Budget, ddmin};
use super::stream::Stream;
use super::subject::{Caps, Subject};
use crate::testing::common::Model;
use crate::testing::rng::derive;

/// Makes a fresh subject (for every episode and every replay).
pub type Make<'a> = dyn Fn() -> Box<dyn Subject + 'a> + 'a;

/// How a campaign runs.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The campaign's seed: episode `e` is seeded `derive(seed, e)`.
    pub seed: u64,
    /// Operations to run (the last episode is cut to fit).
    pub ops: u64,
    /// Limits of the minimization of a divergence.
    pub budget: Budget,
}

/// What a campaign did.
#[derive(Debug)]
pub struct Report {
    /// Operations run (not counting the full comparisons).
    pub ops: u64,
    /// Full comparisons run ([`Op::Verify`]).
    pub verifies: u64,
    /// Episodes started.
    pub episodes: u64,
    /// The first divergence, which ended the campaign.
    pub divergence: Option<Box<Divergence>>,
}

/// A divergence of the subject from the model, replayed and minimized.
#[derive(Debug)]
pub struct Divergence {
    /// The campaign's seed.
    pub seed: u64,
    /// The episode it happened in.
    pub episode: u64,
    /// What the episode's stream was made of.
    pub stream: String,
    /// Position of the diverging operation in the episode.
    pub at: usize,
    /// The diverging operation.
    pub op: Op,
    /// What diverged.
    pub message: String,
    /// Whether replaying the episode's operations on a fresh subject diverged again.
    pub reproduced: bool,
    /// The minimized operations (when reproduced), and the message their replay ends in.
    pub minimized: Option<(Vec<Op>, String)>,
    /// Whether the minimization finished (the sequence is 1-minimal), and its tests.
    pub minimal: bool,
    /// Candidate replays the minimization ran.
    pub tests: usize,
    /// The last operations before the divergence (when it did not reproduce).
    pub tail: Vec<Op>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "DIVERGENCE: seed {:#x}, episode {} ({}), op #{}: {:?}",
            self.seed, self.episode, self.stream, self.at, self.op
        )?;
        writeln!(f, "  {}", self.message)?;
        match &self.minimized {
            Some((ops, message)) => {
                writeln!(
                    f,
                    "minimized reproduction ({} ops, {}; {} replays; on a fresh structure and \
                     model, then a full comparison):",
                    ops.len(),
                    if self.minimal {
                        "1-minimal"
                    } else {
                        "budget exhausted, not minimal"
                    },
                    self.tests
                )?;
                for (i, op) in ops.iter().enumerate() {
                    writeln!(f, "  {i:>4}: {op:?}")?;
                }
                writeln!(f, "  -> {message}")?;
                writeln!(
                    f,
                    "(val(len, #tag): the tag's 4 little-endian bytes, then byte tag % 251 \
                     repeated, cut to len)"
                )
            }
            None => {
                writeln!(
                    f,
                    "the episode's {} operations did NOT diverge when replayed on a fresh \
                     structure (timing or nondeterminism); the last {} before it:",
                    self.at + 1,
                    self.tail.len()
                )?;
                for op in &self.tail {
                    writeln!(f, "  {op:?}")?;
                }
                Ok(())
            }
        }
    }
}

/// A panic payload as text.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

/// Applies one op, turning a panic of the structure into a divergence.
fn guarded(s: &dyn Subject, model: &mut Model, op: &Op) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(|| apply(s, model, op))) {
        Ok(r) => r,
        Err(p) => Err(format!("the structure panicked: {}", panic_text(&*p))),
    }
}

/// Replays `ops` on a fresh subject and an empty model, each result checked, then a full
/// comparison; the position and message of the first divergence (`ops.len()` for the final
/// comparison).
pub fn replay(make: &Make<'_>, ops: &[Op]) -> Result<(), (usize, String)> {
    let subject = make();
    let mut model = Model::new();
    for (i, op) in ops.iter().enumerate() {
        guarded(&*subject, &mut model, op).map_err(|m| (i, m))?;
    }
    guarded(&*subject, &mut model, &Op::Verify).map_err(|m| (ops.len(), m))
}

/// Minimizes a diverging sequence: the smallest subsequence whose [`replay`] still
/// diverges, by [`ddmin`]; `None` when `ops` itself does not diverge on replay.
pub fn minimize(
    make: &Make<'_>,
    ops: &[Op],
    budget: Budget,
) -> Option<(super::shrink::Shrunk<Op>, String)> {
    replay(make, ops).err()?;
    let shrunk = ddmin(ops, &mut |c: &[Op]| replay(make, c).is_err(), budget);
    let message = match replay(make, &shrunk.items) {
        Err((i, m)) if i == shrunk.items.len() => format!("final full comparison: {m}"),
        Err((i, m)) => format!("op #{i}: {m}"),
        Ok(()) => "(the minimized sequence passed on its last replay: nondeterministic)".into(),
    };
    Some((shrunk, message))
}

/// Runs a campaign on subjects from `make`, calling `progress` with the number of
/// operations done since its last call every few thousand operations.
pub fn run(make: &Make<'_>, settings: &Settings, progress: &mut dyn FnMut(u64)) -> Report {
    let mut done = 0u64;
    let mut verifies = 0u64;
    let mut episode = 0u64;
    let mut reported = 0u64;
    // The episode's record, reused: a fresh one per episode (up to ~2^17 operations, a few
    // MiB) would be mapped and faulted in anew every time.
    let mut ops: Vec<Op> = Vec::new();
    while done < settings.ops {
        let subject = make();
        let caps = Caps::of(&*subject);
        let mut stream = Stream::new(derive(settings.seed, episode), caps);
        let len = stream.len().min(settings.ops - done) as usize;
        let mut model = Model::new();
        ops.clear();
        ops.reserve(len + len / 1024 + 8);
        let mut since_verify = 0u64;
        let mut count = 0usize;
        let mut failure = None;
        loop {
            let last = count >= len;
            let op = if last || since_verify >= (1 << 14).max(16 * model.len() as u64) {
                since_verify = 0;
                Op::Verify
            } else {
                count += 1;
                since_verify += 1;
                stream.next(&model)
            };
            ops.push(op);
            let op = ops.last().expect("just pushed");
            if let Err(m) = guarded(&*subject, &mut model, op) {
                failure = Some(m);
                break;
            }
            if last || since_verify == 0 {
                verifies += 1;
            } else {
                done += 1;
            }
            if done - reported >= 4096 {
                progress(done - reported);
                reported = done;
            }
            if last {
                break;
            }
        }
        drop(subject);
        if let Some(message) = failure {
            let at = ops.len() - 1;
            let d = diverged(make, settings, episode, stream.describe(), ops, at, message);
            progress(done - reported);
            return Report {
                ops: done,
                verifies,
                episodes: episode + 1,
                divergence: Some(Box::new(d)),
            };
        }
        episode += 1;
    }
    progress(done - reported);
    Report {
        ops: done,
        verifies,
        episodes: episode,
        divergence: None,
    }
}

fn diverged(
    make: &Make<'_>,
    settings: &Settings,
    episode: u64,
    stream: String,
    mut ops: Vec<Op>,
    at: usize,
    message: String,
) -> Divergence {
    ops.truncate(at + 1);
    let op = ops[at].clone();
    let mut d = Divergence {
        seed: settings.seed,
        episode,
        stream,
        at,
        op,
        message,
        reproduced: false,
        minimized: None,
        minimal: false,
        tests: 0,
        tail: Vec::new(),
    };
    match minimize(make, &ops, settings.budget) {
        Some((shrunk, msg)) => {
            d.reproduced = true;
            d.minimal = shrunk.minimal;
            d.tests = shrunk.tests;
            d.minimized = Some((shrunk.items, msg));
        }
        None => d.tail = ops[at.saturating_sub(40)..].to_vec(),
    }
    d
}
