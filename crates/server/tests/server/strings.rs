//! String commands: the `redis` crate's view and exact replies as Redis gives them.

use crate::common::Server;
use redis::Commands;

#[test]
fn strings_through_the_redis_crate() {
    let server = Server::start(&[]);
    let mut c = server.client();
    let _: () = c.set("k", "v").unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    assert_eq!(c.get::<_, Option<String>>("missing").unwrap(), None);
    let _: () = c.mset(&[("a", "1"), ("b", "2")]).unwrap();
    let got: Vec<Option<String>> = c.mget(&["a", "nope", "b"]).unwrap();
    assert_eq!(got, [Some("1".into()), None, Some("2".into())]);
    assert_eq!(c.incr::<_, _, i64>("a", 10).unwrap(), 11);
    assert_eq!(c.decr::<_, _, i64>("a", 2).unwrap(), 9);
    assert_eq!(c.append::<_, _, i64>("k", "xyz").unwrap(), 4);
    assert_eq!(c.strlen::<_, i64>("k").unwrap(), 4);
    let big = vec![7u8; 100_000];
    let _: () = c.set("big", &big[..]).unwrap();
    assert_eq!(c.get::<_, Vec<u8>>("big").unwrap(), big);
    let bin = b"\x00\xff\r\n".to_vec();
    let _: () = c.set(&bin[..], &bin[..]).unwrap();
    assert_eq!(c.get::<_, Vec<u8>>(&bin[..]).unwrap(), bin);
}

#[test]
fn string_commands_reply_exactly_as_redis() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["SET", "k", "v", "NX"], "+OK"),
        (&["SET", "k", "w", "NX"], "$nil"),
        (&["SET", "k", "w", "XX", "GET"], "$v"),
        (&["SET", "new", "x", "XX"], "$nil"),
        (&["SET", "k", "v", "NX", "XX"], "-ERR syntax error"),
        (&["SET", "k", "v", "EX"], "-ERR syntax error"),
        (
            &["SET", "k", "v", "EX", "0"],
            "-ERR invalid expire time in 'set' command",
        ),
        (
            &["SET", "k", "v", "EX", "x"],
            "-ERR value is not an integer or out of range",
        ),
        (
            &["SET", "k", "v", "EX", "10", "PX", "5"],
            "-ERR syntax error",
        ),
        (
            &["SET", "k", "v", "KEEPTTL", "EX", "5"],
            "-ERR syntax error",
        ),
        (
            &["SET", "k", "v", "EX", "9223372036854775807"],
            "-ERR invalid expire time in 'set' command",
        ),
        (&["SETNX", "k", "z"], ":0"),
        (&["SETNX", "k2", "z"], ":1"),
        (&["GETSET", "k2", "y"], "$z"),
        (&["GETSET", "k3", "y"], "$nil"),
        (&["GETDEL", "k3"], "$y"),
        (&["GETDEL", "k3"], "$nil"),
        (
            &["MSET", "a", "1", "b"],
            "-ERR wrong number of arguments for 'mset' command",
        ),
        (&["MSETNX", "a", "1", "k", "2"], ":0"),
        (&["EXISTS", "a"], ":0"),
        (&["MSETNX", "a", "1", "b", "2"], ":1"),
        (&["MGET", "a", "b", "c"], "[$1, $2, $nil]"),
        (
            &["INCR", "k"],
            "-ERR value is not an integer or out of range",
        ),
        (
            &["INCRBY", "a", "x"],
            "-ERR value is not an integer or out of range",
        ),
        (&["SET", "n", "9223372036854775806"], "+OK"),
        (&["INCR", "n"], ":9223372036854775807"),
        (&["INCR", "n"], "-ERR increment or decrement would overflow"),
        (
            &["DECRBY", "n", "-9223372036854775808"],
            "-ERR decrement would overflow",
        ),
        (&["INCR", "fresh"], ":1"),
        (&["DECR", "fresh2"], ":-1"),
        (&["SET", "f", "10.5"], "+OK"),
        (&["INCRBYFLOAT", "f", "0.1"], "$10.6"),
        (&["INCRBYFLOAT", "f", "-5.6"], "$5"),
        (
            &["INCRBYFLOAT", "f", "abc"],
            "-ERR value is not a valid float",
        ),
        (
            &["INCRBYFLOAT", "k", "1"],
            "-ERR value is not a valid float",
        ),
        (
            &["INCRBYFLOAT", "f", "inf"],
            "-ERR increment would produce NaN or Infinity",
        ),
        (&["APPEND", "ap", "ab"], ":2"),
        (&["APPEND", "ap", "cd"], ":4"),
        (&["STRLEN", "ap"], ":4"),
        (&["STRLEN", "nothing"], ":0"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
}
