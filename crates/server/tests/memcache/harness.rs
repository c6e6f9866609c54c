//! Harness of the memcached-protocol tests: starts `orrery-server` with its memcached
//! listener (port 0, read back from its log) and, for the differential tests, a real
//! `memcached` on a free loopback port; both are killed when their guards drop. A
//! connection sends a request followed by `mn` (the meta no-op) and reads until `MN`, so
//! that every request — `noreply` ones and errors included — has a well-delimited reply.

#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::common::{DEADLINE, Server};

/// A running `memcached`, killed on drop.
pub struct Memcached(Child);

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Held while a test runs a `memcached`: a free port is found by binding port 0 and
/// releasing it, so two tests starting one at once could pick the same port.
pub static ONE_MEMCACHED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts `memcached` with `args` (plus a free port on 127.0.0.1, UDP off); `None`, with
/// a message, when it is not installed.
pub fn start_memcached(args: &[&str]) -> Option<(Memcached, u16)> {
    if Command::new("memcached")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("SKIPPED: memcached is not installed (Debian package memcached)");
        return None;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = Command::new("memcached");
    cmd.args(["-p", &port.to_string(), "-l", "127.0.0.1", "-U", "0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // memcached refuses to run as root without -u.
    if std::env::var("USER").as_deref() == Ok("root") || unsafe_is_root() {
        cmd.args(["-u", "root"]);
    }
    let guard = Memcached(cmd.spawn().expect("start memcached"));
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < DEADLINE, "memcached did not start");
    }
    Some((guard, port))
}

fn unsafe_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Starts `orrery-server` serving the memcached protocol with `args`; the server and the
/// memcached port.
pub fn start_ours(args: &[&str]) -> (Server, u16) {
    let mut all = vec!["--memcache-port", "0"];
    all.extend_from_slice(args);
    let server = Server::start(&all);
    let port = server
        .early
        .iter()
        .find_map(|l| l.split("memcached protocol").nth(1))
        .and_then(|rest| rest.rsplit(':').next())
        .and_then(|p| p.trim().parse().ok())
        .expect("the memcached port in the server's log");
    (server, port)
}

/// One connection.
pub struct Conn {
    s: TcpStream,
}

/// A request's reply: the bytes before the closing `MN`, or everything until the server
/// closed the connection.
#[derive(Debug, PartialEq, Eq, Clone)]
pub enum Reply {
    Text(String),
    Closed(String),
}

impl Conn {
    pub fn connect(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        s.set_nodelay(true).unwrap();
        Conn { s }
    }

    /// Sends bytes without waiting.
    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// Sends `req` and `mn\r\n`; the reply before `MN\r\n`.
    pub fn request(&mut self, req: &[u8]) -> Reply {
        let mut bytes = req.to_vec();
        bytes.extend_from_slice(b"mn\r\n");
        if self.s.write_all(&bytes).is_err() {
            return Reply::Closed(String::new());
        }
        self.read_to_mn().unwrap_or_else(|got| {
            panic!(
                "no complete reply to {:?} within the deadline (port {}); got {got:?}",
                String::from_utf8_lossy(req),
                self.s.peer_addr().map(|a| a.port()).unwrap_or(0)
            )
        })
    }

    /// Reads until a reply ends in `MN\r\n` (or the connection closes).
    pub fn read_to_mn(&mut self) -> Result<Reply, String> {
        let mut got = Vec::new();
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if got.ends_with(b"MN\r\n")
                && (got.len() == 4 || got[got.len() - 6..].starts_with(b"\r\n"))
            {
                got.truncate(got.len() - 4);
                return Ok(Reply::Text(String::from_utf8_lossy(&got).into_owned()));
            }
            match self.s.read(&mut chunk) {
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Err(String::from_utf8_lossy(&got).into_owned());
                }
                Ok(0) | Err(_) => {
                    return Ok(Reply::Closed(String::from_utf8_lossy(&got).into_owned()));
                }
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Reads whatever arrives until the server closes the connection.
    pub fn read_to_close(&mut self) -> String {
        let mut got = Vec::new();
        let _ = self.s.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    }

    /// One request with a plain-text answer (panics if the connection closed).
    pub fn text(&mut self, req: &str) -> String {
        match self.request(req.as_bytes()) {
            Reply::Text(t) => t,
            Reply::Closed(t) => panic!("connection closed after {req:?}: {t:?}"),
        }
    }
}
