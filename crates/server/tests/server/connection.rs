//! Connection commands, RESP3, authentication.

use crate::common::{self, Server};
use redis::Commands;

#[test]
fn connection_commands_and_resp3() {
    let server = Server::start(&[]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["PING"], "+PONG"),
        (&["PING", "hi"], "$hi"),
        (&["ECHO", "x y"], "$x y"),
        (&["SELECT", "0"], "+OK"),
        (&["SELECT", "16"], "-ERR DB index is out of range"),
        (
            &["AUTH", "pw"],
            "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ),
        (&["CLIENT", "GETNAME"], "$nil"),
        (&["CLIENT", "SETNAME", "tester"], "+OK"),
        (
            &["CLIENT", "SETNAME", "bad name"],
            "-ERR Client names cannot contain spaces, newlines or special characters.",
        ),
        (&["CLIENT", "GETNAME"], "$tester"),
        (
            &["CLIENT", "SETNAME"],
            "-ERR wrong number of arguments for 'client|setname' command",
        ),
        (
            &["CLIENT", "FOO"],
            "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.",
        ),
        (&["HELLO", "4"], "-NOPROTO unsupported protocol version"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
    let id = r.cmd(&["CLIENT", "ID"]);
    let list = r.cmd(&["CLIENT", "LIST"]);
    assert!(
        list.contains(&format!("id={} ", &id[1..])) && list.contains("name=tester"),
        "{list}"
    );
    assert!(r.cmd(&["CLIENT", "INFO"]).contains(" cmd=client|info "));
    let hello = r.cmd(&["HELLO", "3"]);
    assert!(
        hello.starts_with("%{$server: $redis, $version: $7.0.0, $proto: :3"),
        "{hello}"
    );
    assert_eq!(r.cmd(&["GET", "nothing"]), "_");
    assert!(r.cmd(&["CLIENT", "INFO"]).starts_with("=txt:id="));
    assert_eq!(r.cmd(&["RESET"]), "+RESET");
    assert_eq!(r.cmd(&["GET", "nothing"]), "$nil");
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), "$nil");
    assert!(r.cmd(&["HELLO"]).starts_with("[$server, $redis"));
    assert_eq!(r.cmd(&["QUIT"]), "+OK");
    assert!(r.closed());
    // The redis crate over RESP3.
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port)).unwrap();
    let mut c = client
        .get_connection_with_timeout(common::DEADLINE)
        .unwrap();
    let _: () = c.set("r3", "v").unwrap();
    assert_eq!(c.get::<_, String>("r3").unwrap(), "v");
    assert_eq!(c.get::<_, Option<String>>("none").unwrap(), None);
}

#[test]
fn authentication() {
    let server = Server::start(&["--requirepass", "s3cret"]);
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (&["GET", "k"], "-NOAUTH Authentication required."),
        (
            &["NOSUCH"],
            "-ERR unknown command 'NOSUCH', with args beginning with: ",
        ),
        (&["GET"], "-ERR wrong number of arguments for 'get' command"),
        (
            &["AUTH", "wrong"],
            "-WRONGPASS invalid username-password pair or user is disabled.",
        ),
        (
            &["AUTH", "bob", "s3cret"],
            "-WRONGPASS invalid username-password pair or user is disabled.",
        ),
        (&["AUTH", "s3cret"], "+OK"),
        (&["SET", "k", "v"], "+OK"),
        (&["RESET"], "+RESET"),
        (&["GET", "k"], "-NOAUTH Authentication required."),
        (&["AUTH", "default", "s3cret"], "+OK"),
        (&["GET", "k"], "$v"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd(args), *want, "{args:?}");
    }
    let mut h = server.raw();
    let hello = h.cmd(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "n"]);
    assert!(hello.starts_with("%{"), "{hello}");
    assert_eq!(h.cmd(&["CLIENT", "GETNAME"]), "$n");
    let url = format!("redis://:s3cret@127.0.0.1:{}/", server.port);
    let mut c = redis::Client::open(url)
        .unwrap()
        .get_connection_with_timeout(common::DEADLINE)
        .unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
}
