//! Large lists against redis-server: lists of several hundred elements (several of this
//! server's packed nodes, and of Redis's quicklist nodes) under a random stream of every
//! list command, with elements from a small alphabet (so that `LINSERT`, `LREM` and `LPOS`
//! find their pivots) and now and then one larger than a node; every reply compared, and
//! the whole of both lists after each command. Run with Redis's default list node size and
//! with `list-max-listpack-size 4` (small compact lists, so both forms are crossed).

use super::{Both, Rng};

/// One list command over keys `a` and `b`.
fn command(rng: &mut Rng) -> Vec<String> {
    let key = rng.pick(&["a", "b"]).to_string();
    let elem = |rng: &mut Rng| {
        if rng.below(200) == 0 {
            format!("{}{}", "L".repeat(9000), rng.below(3))
        } else {
            format!("v{}", rng.below(10))
        }
    };
    let index = |rng: &mut Rng| (rng.below(900) as i64 - 450).to_string();
    let s = |x: &str| x.to_string();
    let mut args = match rng.below(13) {
        0 | 1 => {
            let n = if rng.below(4) == 0 {
                100
            } else {
                1 + rng.below(3)
            };
            let mut a = vec![s(rng.pick(&["LPUSH", "RPUSH"])), key];
            a.extend((0..n).map(|_| elem(rng)));
            a
        }
        2 => vec![
            s(rng.pick(&["LPOP", "RPOP"])),
            key,
            (1 + rng.below(4)).to_string(),
        ],
        3 => vec![s("LSET"), key, index(rng), elem(rng)],
        4 => vec![
            s("LINSERT"),
            key,
            s(rng.pick(&["BEFORE", "AFTER"])),
            elem(rng),
            elem(rng),
        ],
        5 => vec![
            s("LREM"),
            key,
            (rng.below(5) as i64 - 2).to_string(),
            elem(rng),
        ],
        6 => vec![s("LTRIM"), key, index(rng), index(rng)],
        7 => vec![s("LINDEX"), key, index(rng)],
        8 => vec![s("LRANGE"), key, index(rng), index(rng)],
        9 => vec![
            s("LMOVE"),
            key,
            s(rng.pick(&["a", "b"])),
            s(rng.pick(&["LEFT", "RIGHT"])),
            s(rng.pick(&["LEFT", "RIGHT"])),
        ],
        10 => vec![
            s("LPOS"),
            key,
            elem(rng),
            s("RANK"),
            s(rng.pick(&["1", "2", "-1", "-3"])),
            s("COUNT"),
            s(rng.pick(&["0", "1", "5"])),
        ],
        11 => vec![s("LLEN"), key],
        _ => vec![s("RPOPLPUSH"), key, s(rng.pick(&["a", "b"]))],
    };
    args.shrink_to_fit();
    args
}

fn stream(both: &mut Both, seed: u64, n: usize) {
    let mut rng = Rng::new(seed);
    for i in 0..n {
        let cmd = command(&mut rng);
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let short: Vec<&str> = args.iter().map(|a| &a[..a.len().min(12)]).collect();
        let (a, b) = (both.ours.cmd_value(&args), both.theirs.cmd_value(&args));
        assert_eq!(a, b, "seed {seed:#x}, command #{i}: {short:?}");
        for key in ["a", "b"] {
            let all = ["LRANGE", key, "0", "-1"];
            let (a, b) = (both.ours.cmd_value(&all), both.theirs.cmd_value(&all));
            assert!(a == b, "seed {seed:#x}, {key} after #{i}: {short:?}");
        }
    }
}

#[test]
fn large_lists_match_redis_server() {
    let Some(mut both) = Both::start() else {
        return;
    };
    stream(&mut both, 0x1157_0000_0001, 1500);
    for c in [&mut both.ours, &mut both.theirs] {
        c.cmd(&["FLUSHALL"]);
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "4"]),
            "+OK"
        );
    }
    stream(&mut both, 0x1157_0000_0002, 1500);
}
