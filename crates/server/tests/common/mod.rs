//! Test harness: starts the real `orrery-server` binary on a free loopback port (port 0,
//! read back from its ready line) and talks to it with the `redis` crate or a raw socket.
//! Every wait is bounded by a time deadline; the server is killed when the guard drops.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long any single wait in these tests may take.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A running server, killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub lines: mpsc::Receiver<String>,
    /// The lines the server printed before its ready line.
    pub early: Vec<String>,
}

impl Server {
    /// Starts the binary with `args` (plus `--port 0`) and waits for its ready line.
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_orrery-server"))
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start orrery-server");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            port: 0,
            lines: rx,
            early: Vec::new(),
        };
        let start = Instant::now();
        loop {
            let left = DEADLINE
                .checked_sub(start.elapsed())
                .expect("server never got ready");
            let line = server
                .lines
                .recv_timeout(left)
                .expect("server never got ready");
            if let Some(addr) = line.split("connections on ").nth(1) {
                server.port = addr.rsplit(':').next().unwrap().trim().parse().unwrap();
                return server;
            }
            server.early.push(line);
        }
    }

    /// A `redis` crate connection (RESP2).
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection_with_timeout(DEADLINE)
            .unwrap()
    }

    /// A raw socket speaking RESP.
    pub fn raw(&self) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        Raw {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    /// Waits for the process to exit (bounded), returning whether it exited successfully.
    pub fn wait_exit(&mut self) -> bool {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            assert!(start.elapsed() < DEADLINE, "server did not exit");
            std::thread::yield_now();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw RESP connection; replies are rendered as compact strings:
/// `+OK`, `-ERR …`, `:1`, `$text`, `$nil`, `_`, `[a, b]`, `%{k: v}`, `=txt`, `>[a, b]` (push).
pub struct Raw {
    pub r: BufReader<TcpStream>,
    pub w: TcpStream,
}

impl Raw {
    /// Sends one command as a multibulk request and reads its reply.
    pub fn cmd(&mut self, args: &[&str]) -> String {
        self.send(&encode(args));
        self.reply()
    }

    /// Sends raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).unwrap();
    }

    /// Reads one reply.
    pub fn reply(&mut self) -> String {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        assert!(line.ends_with("\r\n"), "truncated reply {line:?}");
        let line = &line[..line.len() - 2];
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" | "-" | ":" | "," => line.to_string(),
            "_" => "_".into(),
            "$" | "=" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return "$nil".into();
                }
                let mut b = vec![0; n as usize + 2];
                self.r.read_exact(&mut b).unwrap();
                format!("{kind}{}", String::from_utf8_lossy(&b[..n as usize]))
            }
            "*" | "~" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return "*nil".into();
                }
                let items: Vec<String> = (0..n).map(|_| self.reply()).collect();
                format!("[{}]", items.join(", "))
            }
            ">" => {
                let n: usize = rest.parse().unwrap();
                let items: Vec<String> = (0..n).map(|_| self.reply()).collect();
                format!(">[{}]", items.join(", "))
            }
            "%" => {
                let n: usize = rest.parse().unwrap();
                let items: Vec<String> = (0..n)
                    .map(|_| format!("{}: {}", self.reply(), self.reply()))
                    .collect();
                format!("%{{{}}}", items.join(", "))
            }
            other => panic!("unexpected reply type {other:?} in {line:?}"),
        }
    }

    /// Whether the server closed the connection (reads until EOF, bounded by the deadline).
    pub fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        match self.r.read_to_end(&mut rest) {
            Ok(_) => true,
            // Closing with unread request bytes resets the connection.
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

/// Encodes a command as a RESP multibulk request.
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Polls `f` until it is true, failing after [`DEADLINE`].
pub fn eventually(mut f: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
    }
}

/// Waits until `n` clients are blocked in blocking commands (`INFO clients`).
pub fn blocked(admin: &mut Raw, n: usize) {
    eventually(
        || {
            admin
                .cmd(&["INFO", "clients"])
                .contains(&format!("blocked_clients:{n}\r\n"))
        },
        &format!("{n} blocked clients"),
    );
}

/// A reply as a tree (for comparisons that normalise order or contents).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// `+…`
    Simple(String),
    /// `-…`
    Error(String),
    /// `:…`
    Int(i64),
    /// `$…` (and `=` verbatim text)
    Bulk(Vec<u8>),
    /// `,…` (RESP3 double, as text)
    Double(String),
    /// `$-1`, `*-1`, `_`
    Nil,
    /// `*…`
    Array(Vec<Value>),
    /// `~…` (RESP3 set)
    Set(Vec<Value>),
    /// `%…` (RESP3 map)
    Map(Vec<(Value, Value)>),
}

impl Raw {
    /// Sends one command and reads its reply as a [`Value`].
    pub fn cmd_value(&mut self, args: &[&str]) -> Value {
        self.send(&encode(args));
        self.value()
    }

    /// Reads one reply as a [`Value`].
    pub fn value(&mut self) -> Value {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        assert!(line.ends_with("\r\n"), "truncated reply {line:?}");
        let line = &line[..line.len() - 2];
        let (kind, rest) = line.split_at(1);
        let n = || rest.parse::<i64>().unwrap();
        match kind {
            "+" => Value::Simple(rest.into()),
            "-" => Value::Error(rest.into()),
            ":" => Value::Int(n()),
            "," => Value::Double(rest.into()),
            "_" => Value::Nil,
            "$" | "=" => {
                if n() < 0 {
                    return Value::Nil;
                }
                let mut b = vec![0; n() as usize + 2];
                self.r.read_exact(&mut b).unwrap();
                b.truncate(n() as usize);
                Value::Bulk(b)
            }
            "*" | "~" => {
                if n() < 0 {
                    return Value::Nil;
                }
                let items = (0..n()).map(|_| self.value()).collect();
                if kind == "*" {
                    Value::Array(items)
                } else {
                    Value::Set(items)
                }
            }
            "%" => Value::Map((0..n()).map(|_| (self.value(), self.value())).collect()),
            other => panic!("unexpected reply type {other:?} in {line:?}"),
        }
    }
}

impl Raw {
    /// A raw connection to a server on `port`.
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        Raw {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    /// Reads one reply, `None` when the connection closed (or reset) first.
    pub fn try_reply(&mut self) -> Option<String> {
        let buf = self.r.fill_buf().ok()?;
        if buf.is_empty() {
            return None;
        }
        Some(self.reply())
    }
}
