//! [`lists`]: list command sequences checked against a model (a `VecDeque` per key) after
//! every command, reply by reply and whole list by whole list, then the records they
//! logged replayed into an empty keyspace and compared with the keyspace they came from.
//!
//! The lists are large (`list-max-listpack-size 4`) and grow past several nodes (bulk
//! pushes of 100), with now and then an element larger than a node, so that pushes and
//! pops cross node ends, `LINSERT` fills and splits nodes, `LREM` empties them, `LSET`
//! and `LTRIM` cut at their edges (`crate::coll`'s list nodes).

use std::collections::VecDeque;
use std::sync::Arc;

use super::collections::{Bytes, Frames, assert_replays, run};
use crate::config::Config;
use crate::resp::Reply;
use crate::state::Shared;
use crate::store::Store;

const KEYS: [&str; 2] = ["a", "b"];

impl Bytes<'_> {
    /// An element: one of ten short ones, or (rarely) one larger than a node.
    fn elem(&mut self) -> String {
        let b = self.next();
        if b == 255 {
            format!("{}{}", "L".repeat(9000), b % 3)
        } else {
            format!("v{}", b % 10)
        }
    }

    /// An index around a list of `len`: in range, negative or out of range.
    fn index(&mut self, len: usize) -> i64 {
        let b = i64::from(self.next());
        let len = len as i64;
        match b % 4 {
            0 => -1 - (b * (len + 1) / 256),
            1 => len + b % 3 - 1,
            _ => b * (len + 1) / 256,
        }
    }
}

/// Redis's range of `start..=stop` (negative from the end) in a list of `len`.
fn span(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then_some((start as usize, stop as usize))
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

fn bulks<'a>(items: impl IntoIterator<Item = &'a String>) -> Reply {
    Reply::Array(items.into_iter().map(|s| bulk(s)).collect())
}

/// One command drawn from the input, applied to the model: its arguments and the reply
/// the model expects (`None`: not compared, only its effect is).
fn step(b: &mut Bytes<'_>, model: &mut [VecDeque<String>; 2]) -> (Vec<String>, Option<Reply>) {
    let op = b.next() % 12;
    let k = usize::from(b.next() % 2);
    let key = KEYS[k].to_string();
    let len = model[k].len();
    let s = |x: &str| x.to_string();
    match op {
        0 | 1 => {
            let n = match b.next() % 4 {
                0 => 100,
                x => usize::from(x),
            };
            let mut args = vec![s(if op == 0 { "LPUSH" } else { "RPUSH" }), key];
            for _ in 0..n {
                let e = b.elem();
                if op == 0 {
                    model[k].push_front(e.clone());
                } else {
                    model[k].push_back(e.clone());
                }
                args.push(e);
            }
            (args, Some(Reply::Int(model[k].len() as i64)))
        }
        2 | 3 => {
            let n = usize::from(b.next() % 4) + 1;
            let mut out = Vec::new();
            for _ in 0..n {
                let e = if op == 2 {
                    model[k].pop_front()
                } else {
                    model[k].pop_back()
                };
                out.extend(e);
            }
            let name = if op == 2 { "LPOP" } else { "RPOP" };
            let want = (len > 0).then(|| bulks(&out));
            (vec![s(name), key, n.to_string()], want)
        }
        4 => {
            let i = b.index(len);
            let e = b.elem();
            let want = match span(len, i, i) {
                Some((at, _)) => {
                    model[k][at] = e.clone();
                    Some(Reply::Simple("OK"))
                }
                None => None,
            };
            (vec![s("LSET"), key, i.to_string(), e], want)
        }
        5 => {
            let after = b.next() % 2 == 1;
            let pivot = b.elem();
            let e = b.elem();
            let want = if len == 0 {
                0
            } else {
                match model[k].iter().position(|x| *x == pivot) {
                    Some(p) => {
                        model[k].insert(p + usize::from(after), e.clone());
                        model[k].len() as i64
                    }
                    None => -1,
                }
            };
            let side = s(if after { "AFTER" } else { "BEFORE" });
            (
                vec![s("LINSERT"), key, side, pivot, e],
                Some(Reply::Int(want)),
            )
        }
        6 => {
            let count = i64::from(b.next() % 5) - 2;
            let e = b.elem();
            let limit = if count == 0 {
                usize::MAX
            } else {
                count.unsigned_abs() as usize
            };
            let l = &mut model[k];
            let mut idx: Vec<usize> = (0..l.len()).filter(|&i| l[i] == e).collect();
            if count < 0 {
                idx.reverse();
            }
            idx.truncate(limit);
            idx.sort_unstable();
            for &i in idx.iter().rev() {
                l.remove(i);
            }
            let want = Some(Reply::Int(idx.len() as i64));
            (vec![s("LREM"), key, count.to_string(), e], want)
        }
        7 => {
            let (start, stop) = (b.index(len), b.index(len));
            match span(len, start, stop) {
                Some((a, z)) => {
                    model[k].truncate(z + 1);
                    model[k].drain(..a);
                }
                None => model[k].clear(),
            }
            let args = vec![s("LTRIM"), key, start.to_string(), stop.to_string()];
            (args, Some(Reply::Simple("OK")))
        }
        8 => {
            let i = b.index(len);
            let want = match span(len, i, i) {
                Some((at, _)) => bulk(&model[k][at]),
                None => Reply::Nil,
            };
            (vec![s("LINDEX"), key, i.to_string()], Some(want))
        }
        9 => {
            let (start, stop) = (b.index(len), b.index(len));
            let want = match span(len, start, stop) {
                Some((a, z)) => bulks(model[k].range(a..=z)),
                None => Reply::Array(Vec::new()),
            };
            let args = vec![s("LRANGE"), key, start.to_string(), stop.to_string()];
            (args, Some(want))
        }
        10 => {
            let (from, to) = (b.next().is_multiple_of(2), b.next().is_multiple_of(2));
            let e = if from {
                model[k].pop_front()
            } else {
                model[k].pop_back()
            };
            if let Some(e) = &e {
                if to {
                    model[1 - k].push_front(e.clone());
                } else {
                    model[1 - k].push_back(e.clone());
                }
            }
            let end = |left: bool| s(if left { "LEFT" } else { "RIGHT" });
            let args = vec![s("LMOVE"), key, s(KEYS[1 - k]), end(from), end(to)];
            (args, Some(e.map_or(Reply::Nil, |e| bulk(&e))))
        }
        _ => {
            let e = b.elem();
            let want = model[k]
                .iter()
                .position(|x| *x == e)
                .map_or(Reply::Nil, |i| Reply::Int(i as i64));
            (vec![s("LPOS"), key, e], Some(want))
        }
    }
}

/// A reply's RESP2 bytes (`LRANGE` answers with pre-encoded [`Reply::Bulks`]).
fn encoded(r: &Reply) -> Vec<u8> {
    let mut out = Vec::new();
    r.encode(2, &mut out);
    out
}

/// Runs the list sequence drawn from `data` and checks it (see the module docs); panics
/// on a broken check.
pub fn lists(data: &[u8]) {
    let mut b = Bytes(data);
    let mut config = Config::default();
    let _ = config.thresholds.set_named("list-max-listpack-size", "4");
    let thresholds = config.thresholds;
    let frames = Arc::new(Frames::default());
    let mut store = Store::open("wormhole").expect("the default index builds");
    store.set_journal(frames.clone());
    let shared = Shared::new(config, crate::store::Databases::new(store, 1), None, 0);
    let mut client = crate::state::Client::new(shared.clients.detached(), true);
    let mut model = [VecDeque::new(), VecDeque::new()];
    while !b.0.is_empty() {
        let (args, want) = step(&mut b, &mut model);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = run(&shared, &mut client, &argv);
        let short: Vec<&str> = argv.iter().map(|a| &a[..a.len().min(12)]).collect();
        if let Some(want) = want {
            let (got, want) = (encoded(&got), encoded(&want));
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{short:?}"
            );
        }
        for (k, key) in KEYS.iter().enumerate() {
            let all = run(&shared, &mut client, &["LRANGE", key, "0", "-1"]);
            assert!(
                encoded(&all) == encoded(&bulks(&model[k])),
                "{key} after {short:?}"
            );
            let n = run(&shared, &mut client, &["LLEN", key]);
            assert_eq!(n, Reply::Int(model[k].len() as i64), "after {short:?}");
        }
    }
    assert_replays(&frames, thresholds, shared.dbs.get(0));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node edges on purpose: a full node, inserts at its ends and middle, `LSET` and
    /// `LREM` at its edges, an emptied node, `LTRIM` across nodes; then random sequences.
    #[test]
    fn list_sequences_match_the_model_and_replay_exactly() {
        use rand::Rng;
        // RPUSH 100 distinct-ish elements twice (v0..v9 repeating), then edits.
        let mut scripted = Vec::new();
        for _ in 0..3 {
            scripted.extend([1, 0, 0]);
            scripted.extend((0..100).map(|i| i as u8));
        }
        for x in 0..10u8 {
            scripted.extend([5, 0, x % 2, x, 7]); // LINSERT around v<x>
            scripted.extend([4, 0, 3, 7 + x * 25]); // LSET at an in-range index
            scripted.extend([6, 0, 2, x]); // LREM 0 v<x>
            scripted.extend([7, 0, 2 + x, 250 - x]); // LTRIM
        }
        lists(&scripted);
        let mut rng = orrery_core::testing::rng::rng(0x9115_7000_0de5);
        for _ in 0..60 {
            let data: Vec<u8> = (0..rng.random_range(200..1500))
                .map(|_| rng.random::<u8>())
                .collect();
            lists(&data);
        }
    }
}
