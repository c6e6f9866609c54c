//! Framing under every shape of arrival, with one worker thread and with two: requests
//! split into pieces that arrive one by one, many requests in one write, a pipelined
//! stream cut at every size, values larger than the read buffer, and many connections each
//! with one request in flight. Each guards the connection loop's readiness handling: a
//! request whose bytes arrived but were never read would leave its client waiting, and
//! the client's read timeout fails the test.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::start_ours;

/// A raw connection whose reads time out (a request left unread fails the test).
fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads exactly `want.len()` bytes and checks them.
fn expect(s: &mut TcpStream, want: &[u8], what: &str) {
    let mut got = vec![0u8; want.len()];
    s.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("{what}: {e} (a request left unread?)"));
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(want),
        "{what}"
    );
}

/// Sends `bytes` in pieces of the given sizes (cycled), each its own write.
fn send_in_pieces(s: &mut TcpStream, bytes: &[u8], sizes: &[usize]) {
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + n).min(bytes.len());
        s.write_all(&bytes[at..end]).unwrap();
        at = end;
    }
}

/// A pipelined stream of `n` requests (sets, gets, a multi-get, deletes, no-ops) and the
/// replies it must get.
fn stream(n: usize, value: usize) -> (Vec<u8>, Vec<u8>) {
    let mut req = Vec::new();
    let mut rep = Vec::new();
    for i in 0..n {
        let v: String =
            std::iter::repeat_n((b'a' + (i % 26) as u8) as char, value + i % 7).collect();
        req.extend_from_slice(format!("set k{i} {i} 0 {}\r\n{v}\r\n", v.len()).as_bytes());
        rep.extend_from_slice(b"STORED\r\n");
        req.extend_from_slice(format!("get k{i}\r\n").as_bytes());
        rep.extend_from_slice(format!("VALUE k{i} {i} {}\r\n{v}\r\nEND\r\n", v.len()).as_bytes());
        if i % 5 == 0 {
            req.extend_from_slice(format!("get k{i} nokey k{i}\r\n").as_bytes());
            let one = format!("VALUE k{i} {i} {}\r\n{v}\r\n", v.len());
            rep.extend_from_slice(format!("{one}{one}END\r\n").as_bytes());
            req.extend_from_slice(format!("delete k{i}\r\nmn\r\n").as_bytes());
            rep.extend_from_slice(b"DELETED\r\nMN\r\n");
        }
    }
    (req, rep)
}

fn each_runtime(test: impl Fn(u16, &str)) {
    for threads in ["1", "2"] {
        let (_server, port) = start_ours(&["--threads", threads]);
        test(port, &format!("--threads {threads}"));
    }
}

#[test]
fn split_requests_are_served_once_complete() {
    each_runtime(|port, who| {
        let mut s = connect(port);
        // A request byte by byte, the reply after its last byte only.
        send_in_pieces(&mut s, b"set split 7 0 5\r\nhello\r\n", &[1]);
        expect(&mut s, b"STORED\r\n", who);
        send_in_pieces(&mut s, b"get split\r\n", &[1]);
        expect(&mut s, b"VALUE split 7 5\r\nhello\r\nEND\r\n", who);
        // A pipelined stream cut at many sizes, the cuts falling inside lines and data.
        for sizes in [&[1, 2, 3][..], &[7, 13], &[100, 1, 999], &[4096, 5]] {
            let (req, rep) = stream(60, 10);
            let mut w = s.try_clone().unwrap();
            let sizes = sizes.to_vec();
            let writer = std::thread::spawn(move || send_in_pieces(&mut w, &req, &sizes));
            expect(&mut s, &rep, who);
            writer.join().unwrap();
        }
    });
}

#[test]
fn pipelined_requests_and_values_larger_than_the_buffer() {
    each_runtime(|port, who| {
        let mut s = connect(port);
        // Thousands of requests in one write: reads fill the buffer to the brim.
        let (req, rep) = stream(3000, 20);
        let mut w = s.try_clone().unwrap();
        let writer = std::thread::spawn(move || w.write_all(&req).unwrap());
        expect(&mut s, &rep, who);
        writer.join().unwrap();
        // Values of 100 KB and 900 KB: many reads of a full buffer for one request.
        for len in [100_000usize, 900_000] {
            let v = "z".repeat(len);
            let req = format!("set big 0 0 {len}\r\n{v}\r\nget big\r\n");
            let mut w = s.try_clone().unwrap();
            let writer = std::thread::spawn(move || w.write_all(req.as_bytes()).unwrap());
            expect(
                &mut s,
                format!("STORED\r\nVALUE big 0 {len}\r\n{v}\r\nEND\r\n").as_bytes(),
                who,
            );
            writer.join().unwrap();
        }
    });
}

#[test]
fn many_connections_one_request_in_flight_each() {
    each_runtime(|port, who| {
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let who = who.to_string();
                std::thread::spawn(move || {
                    let mut s = connect(port);
                    for i in 0..400 {
                        let req = format!("set c{c}k{i} 0 0 2\r\nab\r\nget c{c}k{i}\r\n");
                        // Alternately whole and split in two (the second half later).
                        if i % 2 == 0 {
                            s.write_all(req.as_bytes()).unwrap();
                        } else {
                            send_in_pieces(&mut s, req.as_bytes(), &[req.len() / 2]);
                        }
                        let want = format!("STORED\r\nVALUE c{c}k{i} 0 2\r\nab\r\nEND\r\n");
                        expect(&mut s, want.as_bytes(), &who);
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
    });
}
