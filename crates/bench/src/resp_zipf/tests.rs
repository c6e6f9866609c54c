//! Tests of the RESP load generator: reply parsing, key names, the sampler's law, and a
//! whole run against a small in-test server.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Mutex;

use super::proto::{Reply, encode_get, encode_set, parse_reply};
use super::*;

#[test]
fn replies_parse_whole_and_wait_for_the_rest() {
    let cases: [(&[u8], Reply); 6] = [
        (b"+OK\r\n", Reply::Simple),
        (
            b"-OOM command not allowed\r\n",
            Reply::Error("OOM command not allowed".into()),
        ),
        (b":42\r\n", Reply::Int(42)),
        (b"$3\r\nabc\r\n", Reply::Bulk(3)),
        (b"$-1\r\n", Reply::Nil),
        (b"_\r\n", Reply::Nil),
    ];
    for (bytes, want) in cases {
        assert_eq!(
            parse_reply(bytes),
            Ok(Some((want, bytes.len()))),
            "{bytes:?}"
        );
        // Every strict prefix is incomplete, never an error or a wrong reply.
        for cut in 0..bytes.len() {
            assert_eq!(
                parse_reply(&bytes[..cut]),
                Ok(None),
                "{bytes:?} cut at {cut}"
            );
        }
    }
    // Two replies back to back: the first one's length.
    assert_eq!(
        parse_reply(b"$0\r\n\r\n+OK\r\n"),
        Ok(Some((Reply::Bulk(0), 6)))
    );
    // A bulk string may hold CRLF.
    assert_eq!(
        parse_reply(b"$4\r\na\r\nb\r\n"),
        Ok(Some((Reply::Bulk(4), 10)))
    );
    for bad in [
        &b"*1\r\n"[..],
        b"$x\r\n",
        b"$-2\r\n",
        b"$1\r\nab\r\n",
        b":1.5\r\n",
    ] {
        assert!(parse_reply(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn requests_encode_as_bulk_arrays() {
    let mut out = Vec::new();
    encode_get(&mut out, b"k");
    encode_set(&mut out, b"key", b"vv");
    assert_eq!(
        out,
        b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$2\r\nvv\r\n"
    );
}

#[test]
fn key_names_are_distinct_and_fixed_length() {
    let mut seen = std::collections::HashSet::new();
    for r in 0..100_000u64 {
        let k = key_name(r);
        assert!(k.starts_with(b"key:"));
        assert!(k[4..].iter().all(|b| b.is_ascii_hexdigit()));
        assert!(seen.insert(k), "rank {r} repeats a key");
    }
}

/// The share of draws that fall on the top ranks follows `ζ(m, θ) / ζ(n, θ)`.
#[test]
fn sampler_follows_the_zipf_law() {
    let (n, theta) = (10_000u64, 0.99);
    let s = Sampler::new(n, theta).unwrap();
    let mut rng = Rng::new(7);
    let draws = 300_000u64;
    let mut counts = vec![0u64; n as usize];
    for _ in 0..draws {
        let r = s.rank(&mut rng);
        assert!(r < n);
        counts[r as usize] += 1;
    }
    let zn = orrery::testing::zipf::zeta(n, theta);
    let expect0 = draws as f64 / zn;
    let got0 = counts[0] as f64;
    assert!(
        (got0 - expect0).abs() < 0.05 * expect0,
        "rank 0: {got0} draws, expected {expect0}"
    );
    for m in [10u64, 100, 1000] {
        let share = counts[..m as usize].iter().sum::<u64>() as f64 / draws as f64;
        let expect = orrery::testing::zipf::zeta(m, theta) / zn;
        assert!(
            (share - expect).abs() < 0.03,
            "top {m}: share {share}, expected {expect}"
        );
    }
    assert!(Sampler::new(n, 1.0).is_err());
    assert!(Sampler::new(0, 0.5).is_err());
}

/// The next command (an array of bulk strings) at the start of `buf`, and its length.
fn parse_command(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    let line = |at: usize| -> Option<(usize, usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    };
    let (argc, mut at) = line(0)?;
    let mut args = Vec::new();
    for _ in 0..argc {
        let (len, start) = line(at)?;
        let arg = buf.get(start..start + len)?;
        args.push(arg.to_vec());
        at = start + len + 2;
        if buf.len() < at {
            return None;
        }
    }
    Some((args, at))
}

/// A GET/SET server on a loopback port holding every key, serving `conns` connections;
/// `run` is called with its address, then the server's keys are returned.
fn with_server(conns: usize, run: impl FnOnce(String)) -> HashMap<Vec<u8>, Vec<u8>> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let map = Mutex::new(HashMap::<Vec<u8>, Vec<u8>>::new());
    std::thread::scope(|scope| {
        let map = &map;
        scope.spawn(move || {
            for _ in 0..conns {
                let (mut s, _) = listener.accept().unwrap();
                scope.spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let n = s.read(&mut chunk).unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let mut out = Vec::new();
                        while let Some((args, used)) = parse_command(&buf) {
                            buf.drain(..used);
                            let mut m = map.lock().unwrap();
                            match args[0].as_slice() {
                                b"GET" => match m.get(&args[1]) {
                                    Some(v) => {
                                        out.extend_from_slice(
                                            format!("${}\r\n", v.len()).as_bytes(),
                                        );
                                        out.extend_from_slice(v);
                                        out.extend_from_slice(b"\r\n");
                                    }
                                    None => out.extend_from_slice(b"$-1\r\n"),
                                },
                                b"SET" => {
                                    m.insert(args[1].clone(), args[2].clone());
                                    out.extend_from_slice(b"+OK\r\n");
                                }
                                _ => out.extend_from_slice(b"-ERR unknown\r\n"),
                            }
                        }
                        if s.write_all(&out).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        run(addr);
    });
    map.into_inner().unwrap()
}

fn args(addr: String) -> RespZipfArgs {
    RespZipfArgs {
        addr,
        keys: 200,
        theta: 0.99,
        value: 10,
        requests: 4096,
        warmup: 0.5,
        conns: 4,
        pipeline: 8,
        threads: 2,
        seed: 3,
        fill: false,
        json: None,
    }
}

#[test]
fn cache_aside_run_counts_hits_misses_and_sets() {
    let mut result = None;
    let keys = with_server(4, |addr| result = Some(run(&args(addr)).unwrap()));
    let r = result.unwrap();
    let (gets, hits, misses, sets) = (
        r["gets"].as_u64().unwrap(),
        r["hits"].as_u64().unwrap(),
        r["misses"].as_u64().unwrap(),
        r["sets"].as_u64().unwrap(),
    );
    // 4096 requests in batches of 4 × 8: 128 batches per connection, 64 of them warm-up.
    assert_eq!(r["requests"], 4096);
    assert_eq!(gets, 2048);
    assert_eq!(hits + misses, gets);
    assert_eq!(r["errors"], 0);
    // A server that keeps everything misses each key at most once per connection
    // (a miss's SET goes with that connection's next batch), so at most 4 × 200 times.
    assert!(misses <= 800, "{misses} misses");
    assert!(hits > 1024, "{hits} hits");
    // Every key the server holds came from a miss's SET, with the run's value.
    assert!(keys.len() <= 200);
    assert!(
        keys.iter()
            .all(|(k, v)| k.len() == KEY_LEN && v == &vec![b'v'; 10])
    );
    assert!(sets > 0 && sets <= misses + 4 * 8);
    assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn fill_sets_every_key_once() {
    let keys = with_server(4, |addr| {
        let a = RespZipfArgs {
            fill: true,
            ..args(addr)
        };
        let r = run(&a).unwrap();
        assert_eq!(r["mode"], "fill");
        assert_eq!(r["errors"], 0);
    });
    assert_eq!(keys.len(), 200);
    for r in 0..200 {
        assert!(keys.contains_key(&key_name(r)[..]), "rank {r} missing");
    }
}

#[test]
fn bad_settings_are_errors() {
    let a = RespZipfArgs {
        theta: 1.5,
        ..args("127.0.0.1:1".into())
    };
    assert!(run(&a).unwrap_err().contains("theta"));
    let a = RespZipfArgs {
        conns: 0,
        ..args("127.0.0.1:1".into())
    };
    assert!(run(&a).is_err());
}
