//! The generator of torture streams: seeded, phased, aimed at the hard cases.
//!
//! An episode's stream comes from one seed and the model state (never from the structure's
//! answers), so the same seed gives the same stream on every structure, and a recorded
//! stream replays exactly. Each episode picks a key profile — a primary distribution and a
//! secondary one mixed in at 10% — among the suite's [`KeyDist`]s (short random keys, keys
//! under ~200-byte shared prefixes, a tiny alphabet of `00 01 7F 80 FE FF` where keys are
//! prefixes of each other, big-endian integers), dense big-endian `u32`s over a range of
//! 2^8..2^20 (growth to ~10^5 keys) and prefix chains (a short stem then a run of `0x00`,
//! `0xFF` or `a` up to 64 bytes long). On top: the empty key, keys mutated to near misses
//! of present ones (a byte appended, the last one dropped or bumped), and rarely keys of
//! exactly `MAX_KEY_LEN` and one or two bytes shorter (prefixes of each other).
//!
//! The episode runs through phases — grow (mostly inserts), churn, shrink (mostly removals
//! of present keys) and drain (removals and wide `remove_range`s until nearly empty) — of
//! 2^8..2^16 operations each, so structures cross their growth and shrink thresholds both
//! ways, in bursts. Values are mostly short, sometimes up to 4 KiB or 64 KiB, and rarely
//! exactly `MAX_VALUE_LEN`.

use std::ops::Bound;

use rand::Rng;
use rand::rngs::SmallRng;

use super::op::{ComputeAction, Op, OverLongVia, Step, UpdateAction, Val};
use super::subject::Caps;
use crate::api::{MAX_KEY_LEN, MAX_VALUE_LEN, u32_key};
use crate::testing::common::Model;
use crate::testing::rng::{KeyDist, rng};

/// Where the keys of an episode come from.
#[derive(Clone, Copy, Debug)]
enum Keys {
    /// One of the suite's distributions.
    Dist(KeyDist),
    /// Big-endian `u32`s below `2^bits`.
    Dense(u32),
    /// A 0..3-byte stem then a run of one byte, up to 64 long.
    Chains,
}

/// The phase of an episode: which operations dominate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Grow,
    Churn,
    Shrink,
    Drain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Insert,
    Remove,
    Get,
    GetMany,
    Compute,
    Update,
    UpdateInPlace,
    OverLong,
    Len,
    Scan,
    ScanRev,
    ScanRange,
    ScanPrefix,
    FirstLast,
    RemoveRange,
    Iter,
}

/// Weights (per mille, roughly) of each kind in each phase: grow, churn, shrink, drain.
const WEIGHTS: [(Kind, [u32; 4]); 16] = [
    (Kind::Insert, [440, 220, 50, 20]),
    (Kind::Remove, [40, 200, 430, 400]),
    (Kind::Get, [150, 150, 150, 120]),
    (Kind::GetMany, [30, 30, 30, 20]),
    (Kind::Compute, [60, 60, 60, 40]),
    (Kind::Update, [40, 40, 40, 20]),
    (Kind::UpdateInPlace, [20, 20, 20, 10]),
    (Kind::OverLong, [4, 4, 4, 2]),
    (Kind::Len, [10, 10, 10, 10]),
    (Kind::Scan, [30, 30, 30, 30]),
    (Kind::ScanRev, [30, 30, 30, 30]),
    (Kind::ScanRange, [30, 30, 30, 30]),
    (Kind::ScanPrefix, [15, 15, 15, 15]),
    (Kind::FirstLast, [10, 10, 10, 10]),
    (Kind::RemoveRange, [2, 5, 15, 80]),
    (Kind::Iter, [30, 30, 30, 30]),
];

/// The operations of one episode, generated one at a time.
pub(crate) struct Stream {
    rng: SmallRng,
    caps: Caps,
    primary: Keys,
    secondary: Keys,
    phase: Phase,
    phase_left: u32,
    /// Cumulative weights of the current phase.
    table: Vec<(Kind, u32)>,
    tag: u32,
    len: u64,
}

impl Stream {
    /// The stream of the episode seeded `seed`, for a subject that can do `caps`.
    pub(crate) fn new(seed: u64, caps: Caps) -> Stream {
        let mut r = rng(seed);
        let pick = |r: &mut SmallRng| match r.random_range(0..8) {
            0..=4 => Keys::Dist(KeyDist::ALL[r.random_range(0..KeyDist::ALL.len())]),
            5 | 6 => Keys::Dense(r.random_range(8..=20)),
            _ => Keys::Chains,
        };
        let primary = pick(&mut r);
        let secondary = pick(&mut r);
        let len = (1u64 << r.random_range(12..=17)) + r.random_range(0..4096);
        let mut s = Stream {
            rng: r,
            caps,
            primary,
            secondary,
            phase: Phase::Grow,
            phase_left: 0,
            table: Vec::new(),
            tag: 0,
            len,
        };
        s.enter(Phase::Grow);
        s
    }

    /// How many operations the episode runs.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// What the episode is made of, for reports.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} ops, keys {:?} mixed with {:?}",
            self.len, self.primary, self.secondary
        )
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.phase_left = 1 << self.rng.random_range(8..=16);
        let col = phase as usize;
        let mut total = 0;
        self.table.clear();
        for (kind, w) in WEIGHTS {
            if self.available(kind) {
                total += w[col];
                self.table.push((kind, total));
            }
        }
    }

    fn available(&self, kind: Kind) -> bool {
        match kind {
            Kind::Compute | Kind::Update | Kind::UpdateInPlace => self.caps.rmw,
            Kind::Scan | Kind::ScanRev | Kind::ScanRange | Kind::ScanPrefix | Kind::FirstLast => {
                self.caps.ordered
            }
            Kind::RemoveRange => self.caps.remove_range,
            Kind::Iter => self.caps.iter,
            _ => true,
        }
    }

    /// The next operation, given the model's state before it.
    pub(crate) fn next(&mut self, model: &Model) -> Op {
        if self.phase_left == 0 {
            let next = match self.rng.random_range(0..20) {
                0..=6 => Phase::Grow,
                7..=12 => Phase::Churn,
                13..=17 => Phase::Shrink,
                _ => Phase::Drain,
            };
            self.enter(next);
        }
        self.phase_left -= 1;
        let total = self.table.last().map_or(1, |&(_, t)| t);
        let x = self.rng.random_range(0..total);
        let kind = self
            .table
            .iter()
            .find(|&&(_, t)| x < t)
            .map_or(Kind::Get, |&(k, _)| k);
        self.op(kind, model)
    }

    fn op(&mut self, kind: Kind, model: &Model) -> Op {
        let removing = matches!(self.phase, Phase::Shrink | Phase::Drain);
        match kind {
            Kind::Insert => Op::Insert {
                key: self.key(model, 0.2),
                value: self.val(),
            },
            Kind::Remove => Op::Remove {
                key: self.key(model, if removing { 0.8 } else { 0.45 }),
            },
            Kind::Get => Op::Get {
                key: self.key(model, 0.6),
            },
            Kind::GetMany => {
                let n = self.rng.random_range(0..=32);
                let mut keys: Vec<Vec<u8>> = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = match self.rng.random_range(0..100) {
                        0..=9 if !keys.is_empty() => {
                            keys[self.rng.random_range(0..keys.len())].clone()
                        }
                        10 => over_long_key(&self.fresh_key()),
                        _ => self.key(model, 0.5),
                    };
                    keys.push(k);
                }
                Op::GetMany { keys }
            }
            Kind::Compute => {
                let action = match self.rng.random_range(0..100) {
                    0..=34 => ComputeAction::Set(self.val()),
                    35..=56 => ComputeAction::Remove,
                    57..=78 => ComputeAction::Append(self.short_val()),
                    79..=96 => ComputeAction::Keep,
                    _ => ComputeAction::OverLong,
                };
                Op::Compute {
                    key: self.key(model, 0.6),
                    action,
                }
            }
            Kind::Update => {
                let action = match self.rng.random_range(0..100) {
                    0..=59 => UpdateAction::Set(self.val()),
                    60..=95 => UpdateAction::Append(self.short_val()),
                    _ => UpdateAction::OverLong,
                };
                Op::Update {
                    key: self.key(model, 0.7),
                    action,
                }
            }
            Kind::UpdateInPlace => Op::UpdateInPlace {
                key: self.key(model, 0.7),
                xor: self.rng.random_range(1..=255),
            },
            Kind::OverLong => {
                let via = match self.rng.random_range(0..6) {
                    0 => OverLongVia::InsertKey,
                    1 => OverLongVia::InsertValue,
                    2 if self.caps.rmw => OverLongVia::ComputeKey,
                    3 if self.caps.rmw => OverLongVia::UpdateKey,
                    4 if self.caps.rmw => OverLongVia::UpdateInPlaceKey,
                    _ => OverLongVia::ReadKey,
                };
                Op::OverLong {
                    key: self.key(model, 0.5),
                    via,
                }
            }
            Kind::Len => Op::Len,
            Kind::Scan => Op::Scan {
                start: self.bound(model),
                limit: self.limit(model),
            },
            Kind::ScanRev => Op::ScanRev {
                end: self.bound(model),
                limit: self.limit(model),
            },
            Kind::ScanRange => Op::ScanRange {
                start: self.bound(model),
                end: self.bound(model),
                limit: self.limit(model),
            },
            Kind::ScanPrefix => {
                let k = self.key(model, 0.7);
                let cut = self.rng.random_range(0..=k.len());
                Op::ScanPrefix {
                    prefix: k[..cut].to_vec(),
                    limit: self.limit(model),
                }
            }
            Kind::FirstLast => Op::FirstLast,
            Kind::RemoveRange => self.remove_range(model),
            Kind::Iter => {
                let lo = self.bound(model);
                let hi = if self.rng.random_bool(0.3) {
                    Bound::Unbounded
                } else {
                    self.bound(model)
                };
                let n = self.rng.random_range(1..=24);
                let steps = (0..n)
                    .map(|_| match self.rng.random_range(0..20) {
                        0..=7 => Step::Next,
                        8..=15 => Step::NextBack,
                        16 | 17 => Step::Seek(self.bound(model)),
                        _ => Step::SeekBack(self.bound(model)),
                    })
                    .collect();
                Op::Iter { lo, hi, steps }
            }
        }
    }

    /// A removal of a range starting near a present key and spanning up to 16 present
    /// keys (up to 1024, or everything, while draining).
    fn remove_range(&mut self, model: &Model) -> Op {
        let start = self.bound(model);
        let span = if self.phase == Phase::Drain {
            self.rng.random_range(0..1024)
        } else {
            self.rng.random_range(0..16)
        };
        let end = if self.rng.random_range(0..100) == 0 {
            Bound::Unbounded
        } else {
            let from = start.as_ref().map(Vec::as_slice);
            match model.range::<[u8], _>((from, Bound::Unbounded)).nth(span) {
                Some((k, _)) if self.rng.random_bool(0.5) => Bound::Included(k.clone()),
                Some((k, _)) => Bound::Excluded(k.clone()),
                None => Bound::Unbounded,
            }
        };
        Op::RemoveRange { start, end }
    }

    /// A scan limit: mostly a few pairs, sometimes dozens, rarely everything (unless the
    /// model is small).
    fn limit(&mut self, model: &Model) -> u32 {
        match self.rng.random_range(0..1000) {
            0..=599 => self.rng.random_range(1..=8),
            600..=979 => self.rng.random_range(9..=64),
            980..=996 => self.rng.random_range(65..=512),
            x if model.len() < 512 || x == 999 => u32::MAX,
            _ => self.rng.random_range(65..=512),
        }
    }

    /// A bound at a present or fresh key, or unbounded.
    fn bound(&mut self, model: &Model) -> Bound<Vec<u8>> {
        match self.rng.random_range(0..20) {
            0 | 1 => Bound::Unbounded,
            2..=10 => Bound::Included(self.key(model, 0.5)),
            _ => Bound::Excluded(self.key(model, 0.5)),
        }
    }

    /// A present key with probability `hit` (when there is one), else a fresh one.
    fn key(&mut self, model: &Model, hit: f64) -> Vec<u8> {
        if !model.is_empty() && self.rng.random_bool(hit) {
            let probe = self.sample(self.primary);
            let found = model
                .range::<[u8], _>((Bound::Included(probe.as_slice()), Bound::Unbounded))
                .next()
                .or_else(|| model.iter().next_back());
            if let Some((k, _)) = found {
                return k.clone();
            }
        }
        self.fresh_key()
    }

    /// A key from the episode's profile, possibly the empty key, a near miss or (rarely)
    /// a key at the length limit.
    fn fresh_key(&mut self) -> Vec<u8> {
        match self.rng.random_range(0..40_000) {
            0 => return self.huge_key(),
            1..=200 => return Vec::new(),
            _ => {}
        }
        let keys = if self.rng.random_bool(0.9) {
            self.primary
        } else {
            self.secondary
        };
        let mut k = self.sample(keys);
        if self.rng.random_bool(0.15) {
            match self.rng.random_range(0..4) {
                0 => k.push(0x00),
                1 => k.push(0xFF),
                2 => {
                    k.pop();
                }
                _ => {
                    if let Some(b) = k.last_mut() {
                        *b = b.wrapping_add(1);
                    }
                }
            }
        }
        k
    }

    fn sample(&mut self, keys: Keys) -> Vec<u8> {
        match keys {
            Keys::Dist(d) => d.sample(&mut self.rng),
            Keys::Dense(bits) => u32_key(self.rng.random_range(0..1u32 << bits)).to_vec(),
            Keys::Chains => {
                let stem = self.rng.random_range(0..=3);
                let mut k: Vec<u8> = (0..stem)
                    .map(|_| [b'a', b'b', 0x00, 0xFF][self.rng.random_range(0..4)])
                    .collect();
                let fill = [0x00, 0xFF, b'a'][self.rng.random_range(0..3)];
                let run = self.rng.random_range(0..=64);
                k.resize(k.len() + run, fill);
                k
            }
        }
    }

    /// A key of `MAX_KEY_LEN`, or one or two bytes shorter: `h` or nothing, then a run of
    /// `0x00`, `0xFF` or `x` (so such keys are prefixes of each other).
    fn huge_key(&mut self) -> Vec<u8> {
        let mut k = if self.rng.random_bool(0.5) {
            b"h".to_vec()
        } else {
            Vec::new()
        };
        let fill = [0x00, 0xFF, b'x'][self.rng.random_range(0..3)];
        k.resize(MAX_KEY_LEN - self.rng.random_range(0..3), fill);
        k
    }

    fn next_tag(&mut self) -> u32 {
        self.tag = self.tag.wrapping_add(1);
        self.tag
    }

    /// A value: empty (5%), up to 16 bytes (75%), up to 256 (18%), up to 4 KiB (2%),
    /// rarely up to 64 KiB or exactly `MAX_VALUE_LEN` (2 in 100,000).
    fn val(&mut self) -> Val {
        let len = match self.rng.random_range(0..100_000u32) {
            0..=1 => MAX_VALUE_LEN as u32,
            2..=30 => self.rng.random_range(4097..=65_536),
            31..=5_000 => 0,
            5_001..=80_000 => self.rng.random_range(1..=16),
            80_001..=98_000 => self.rng.random_range(17..=256),
            _ => self.rng.random_range(257..=4096),
        };
        Val {
            len,
            tag: self.next_tag(),
        }
    }

    /// A value of 0..8 bytes, for appends.
    fn short_val(&mut self) -> Val {
        Val {
            len: self.rng.random_range(0..=8),
            tag: self.next_tag(),
        }
    }
}

/// `key` padded with `0x00` to one byte over `MAX_KEY_LEN`.
pub(crate) fn over_long_key(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.resize(MAX_KEY_LEN + 1, 0x00);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Caps = Caps {
        rmw: true,
        ordered: true,
        iter: true,
        remove_range: true,
    };

    #[test]
    fn streams_are_deterministic() {
        let model = Model::new();
        let a: Vec<Op> = {
            let mut s = Stream::new(5, ALL);
            (0..500).map(|_| s.next(&model)).collect()
        };
        let mut s = Stream::new(5, ALL);
        let b: Vec<Op> = (0..500).map(|_| s.next(&model)).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn point_only_streams_have_no_scans() {
        let caps = Caps {
            rmw: false,
            ordered: false,
            iter: false,
            remove_range: false,
        };
        let mut s = Stream::new(9, caps);
        let model = Model::new();
        for _ in 0..5000 {
            let op = s.next(&model);
            assert!(
                matches!(
                    op,
                    Op::Insert { .. }
                        | Op::Remove { .. }
                        | Op::Get { .. }
                        | Op::GetMany { .. }
                        | Op::Len
                        | Op::OverLong {
                            via: OverLongVia::InsertKey
                                | OverLongVia::InsertValue
                                | OverLongVia::ReadKey,
                            ..
                        }
                ),
                "{op:?}"
            );
        }
    }
}
