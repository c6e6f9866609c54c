//! Expiry: lazy and active, and the `TTL` family.

use crate::common::{Server, eventually};

#[test]
fn expiry_lazy_active_and_ttl_commands() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["SET", "k", "v"], "+OK"),
        (&["TTL", "k"], ":-1"),
        (&["TTL", "nope"], ":-2"),
        (&["EXPIRE", "nope", "10"], ":0"),
        (&["EXPIRE", "k", "100"], ":1"),
        (&["TTL", "k"], "~100"),
        (&["EXPIRE", "k", "50", "GT"], ":0"),
        (&["EXPIRE", "k", "50", "LT"], ":1"),
        (&["EXPIRE", "k", "500", "NX"], ":0"),
        (
            &["EXPIRE", "k", "5", "NX", "XX"],
            "-ERR NX and XX, GT or LT options at the same time are not compatible",
        ),
        (
            &["EXPIRE", "k", "5", "GT", "LT"],
            "-ERR GT and LT options at the same time are not compatible",
        ),
        (&["EXPIRE", "k", "5", "FOO"], "-ERR Unsupported option FOO"),
        (
            &["EXPIRE", "k", "x"],
            "-ERR value is not an integer or out of range",
        ),
        (
            &["EXPIRE", "k", "9223372036854775807"],
            "-ERR invalid expire time in 'expire' command",
        ),
        (&["APPEND", "k", "w"], ":2"),
        (&["TTL", "k"], "~50"),
        (&["SET", "k", "v", "KEEPTTL"], "+OK"),
        (&["TTL", "k"], "~50"),
        (&["PERSIST", "k"], ":1"),
        (&["PERSIST", "k"], ":0"),
        (&["TTL", "k"], ":-1"),
        (&["PEXPIRE", "k", "100000"], ":1"),
        (&["SET", "k", "v"], "+OK"),
        (&["TTL", "k"], ":-1"),
        (&["EXPIREAT", "k", "1"], ":1"),
        (&["EXISTS", "k"], ":0"),
        (&["SET", "k", "v", "PXAT", "99999999999999"], "+OK"),
        (&["PEXPIREAT", "k", "99999999999998"], ":1"),
        (&["SET", "k", "v", "EX", "1000"], "+OK"),
    ];
    for (args, want) in cases {
        let got = r.cmd(args);
        if let Some(n) = want.strip_prefix('~') {
            // A TTL in seconds: at most what was set, and less by no more than the time
            // the test may take between commands on a loaded machine (generous: 40 s).
            let n: i64 = n.parse().unwrap();
            let ttl: i64 = got[1..].parse().unwrap_or(-3);
            assert!(
                (n - 40..=n).contains(&ttl),
                "{args:?}: {got} (want about {n})"
            );
        } else {
            assert_eq!(got, *want, "{args:?}");
        }
    }
    let pttl: i64 = r.cmd(&["PTTL", "k"])[1..].parse().unwrap();
    assert!((960_000..=1_000_000).contains(&pttl), "{pttl}");
    // Lazy expiry: a short deadline, then the key reads as absent.
    assert_eq!(r.cmd(&["SET", "short", "v", "PX", "30"]), "+OK");
    eventually(|| r.cmd(&["GET", "short"]) == "$nil", "lazy expiry");
    // Active expiry: keys never touched again disappear from DBSIZE.
    assert_eq!(r.cmd(&["FLUSHDB"]), "+OK");
    for i in 0..500 {
        assert_eq!(r.cmd(&["SET", &format!("t{i}"), "v", "PX", "50"]), "+OK");
    }
    assert_eq!(r.cmd(&["SET", "keep", "v"]), "+OK");
    eventually(|| r.cmd(&["DBSIZE"]) == ":1", "active expiry");
    let info = r.cmd(&["INFO", "stats"]);
    assert!(info.contains("expired_keys:5"), "{info}");
}
