//! RESP framing under every shape of arrival, with one worker thread and with two: a
//! command split into pieces that arrive one by one, thousands of commands in one write,
//! many connections each with one command in flight, a blocking command woken by another
//! connection, and `SAVE` (which moves the worker's other tasks aside while it rewrites).
//! A command whose bytes arrived but were never read would leave its client waiting, and
//! the read deadline fails the test.

use std::io::{Read, Write};

use crate::common::{Raw, Server, encode};

/// Runs `test` against a server with one worker thread, then two; `aof` turns the
/// append-only file on (in a fresh directory named after `name`).
fn each_runtime(name: &str, aof: bool, test: impl Fn(&Server, &str)) {
    for threads in ["1", "2"] {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("framing-{name}-{threads}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut args = vec!["--threads", threads, "--dir", dir.to_str().unwrap()];
        if aof {
            args.extend(["--appendonly", "yes"]);
        }
        let server = Server::start(&args);
        test(&server, &format!("--threads {threads}"));
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Reads exactly `want.len()` bytes and checks them.
fn expect(r: &mut Raw, want: &[u8], what: &str) {
    let mut got = vec![0u8; want.len()];
    r.r.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("{what}: {e} (a command left unread?)"));
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(want),
        "{what}"
    );
}

#[test]
fn split_and_pipelined_commands() {
    each_runtime("split", false, |server, who| {
        let mut r = server.raw();
        r.w.set_nodelay(true).unwrap();
        // Byte by byte: the reply after the last byte only.
        for b in encode(&["SET", "split", "hello"]) {
            r.w.write_all(&[b]).unwrap();
        }
        expect(&mut r, b"+OK\r\n", who);
        // Thousands of commands in one write, then the same cut into pieces of 1 to 13
        // bytes written one at a time (from a second thread, so that neither side waits
        // on a full socket buffer).
        let mut req = Vec::new();
        let mut rep = Vec::new();
        for i in 0..3000 {
            let v = format!("value{i}");
            req.extend_from_slice(&encode(&["SET", &format!("k{i}"), &v]));
            rep.extend_from_slice(b"+OK\r\n");
            req.extend_from_slice(&encode(&["GET", &format!("k{i}")]));
            rep.extend_from_slice(format!("${}\r\n{v}\r\n", v.len()).as_bytes());
        }
        for cut in [0usize, 13] {
            let mut w = r.w.try_clone().unwrap();
            let req = req.clone();
            let writer = std::thread::spawn(move || {
                if cut == 0 {
                    w.write_all(&req).unwrap();
                } else {
                    let mut at = 0;
                    let mut n = 1;
                    while at < req.len() {
                        let end = (at + n).min(req.len());
                        w.write_all(&req[at..end]).unwrap();
                        at = end;
                        n = n % cut + 1;
                    }
                }
            });
            expect(&mut r, &rep, who);
            writer.join().unwrap();
        }
    });
}

#[test]
fn many_connections_blocking_and_save() {
    each_runtime("save", true, |server, who| {
        let port = server.port;
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let who = who.to_string();
                std::thread::spawn(move || {
                    let mut r = Raw::connect(port);
                    for i in 0..300 {
                        let key = format!("c{c}k{i}");
                        let req = [encode(&["SET", &key, "ab"]), encode(&["GET", &key])].concat();
                        r.send(&req);
                        expect(&mut r, b"+OK\r\n$2\r\nab\r\n", &who);
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        // A blocked BLPOP is served by a push from another connection.
        let mut blocked = server.raw();
        blocked.send(&encode(&["BLPOP", "queue", "0"]));
        let mut admin = server.raw();
        crate::common::blocked(&mut admin, 1);
        assert_eq!(admin.cmd(&["RPUSH", "queue", "x"]), ":1", "{who}");
        assert_eq!(blocked.reply(), "[$queue, $x]", "{who}");
        // SAVE rewrites the append-only file, and the server goes on serving.
        assert_eq!(admin.cmd(&["SAVE"]), "+OK", "{who}");
        assert_eq!(admin.cmd(&["GET", "c3k7"]), "$ab", "{who}");
    });
}
