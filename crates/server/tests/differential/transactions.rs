//! Transactions against `redis-server`: random streams of `WATCH`, `MULTI`, queued
//! commands (the main stream's string, key, expiry and sorted-set commands, with a
//! rejected one now and then: an unknown name, a wrong argument count), `EXEC`,
//! `DISCARD`, `UNWATCH` and their misuses (`EXEC`/`DISCARD` without `MULTI`, nested
//! `MULTI`, `WATCH` inside `MULTI`) on one connection, while a second connection runs
//! commands between them on the same keys (so watched keys change, or do not); every
//! reply of both connections must be the same on both servers.

use super::{Both, Rng, command, raw};
use crate::common::Raw;

/// One step: a request on the first or the second connection.
fn step(rng: &mut Rng, in_multi: &mut bool) -> (bool, Vec<String>) {
    let keys = ["k0", "k1", "k2", "k3", "k4", "k5"];
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let first = match rng.below(20) {
        0..=2 => {
            let mut v = s(&["WATCH"]);
            for _ in 0..1 + rng.below(2) {
                v.push(rng.pick(&keys).into());
            }
            v
        }
        3 => s(&["UNWATCH"]),
        4 | 5 => s(&["MULTI"]),
        6 | 7 => s(&["EXEC"]),
        8 => s(&["DISCARD"]),
        9 => s(&[rng.pick(&["NOSUCH", "GET", "SET"])]),
        10..=14 => command(rng),
        _ => return (false, command(rng)),
    };
    match first[0].as_str() {
        "MULTI" => *in_multi = true,
        "EXEC" | "DISCARD" => *in_multi = false,
        _ => {}
    }
    (true, first)
}

#[test]
fn transactions_match_redis_server() {
    let Some(mut both) = Both::start() else {
        return;
    };
    let mut ours2: Raw = both._server.raw();
    let mut theirs2: Raw = raw(both.redis_port);
    // EXEC outcomes seen: aborted by a watched key, EXECABORT, run.
    let (mut nil, mut execabort, mut ran) = (0, 0, 0);
    for seed in [0x7a11_0001u64, 0x7a11_0002, 0x7a11_0003] {
        let mut rng = Rng::new(seed);
        let mut in_multi = false;
        for i in 0..4_000 {
            let (first, cmd) = step(&mut rng, &mut in_multi);
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let (a, b) = if first {
                (both.ours.cmd(&args), both.theirs.cmd(&args))
            } else {
                (ours2.cmd(&args), theirs2.cmd(&args))
            };
            assert_eq!(
                a,
                b,
                "seed {seed:#x}, step #{i} on connection {}: {args:?}",
                if first { 1 } else { 2 }
            );
            if args == ["EXEC"] {
                match a.as_str() {
                    "*nil" => nil += 1,
                    r if r.starts_with("-EXECABORT") => execabort += 1,
                    r if r.starts_with('[') => ran += 1,
                    _ => {}
                }
            }
        }
        if in_multi {
            assert_eq!(both.ours.cmd(&["DISCARD"]), both.theirs.cmd(&["DISCARD"]));
        }
        assert_eq!(both.ours.cmd(&["UNWATCH"]), both.theirs.cmd(&["UNWATCH"]));
        assert_eq!(both.ours.cmd(&["FLUSHALL"]), both.theirs.cmd(&["FLUSHALL"]));
    }
    assert!(
        nil > 20 && execabort > 20 && ran > 20,
        "{nil} {execabort} {ran}"
    );
    eprintln!("EXEC: {nil} aborted by WATCH, {execabort} EXECABORT, {ran} run");
}
