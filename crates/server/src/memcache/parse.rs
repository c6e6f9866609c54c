//! The memcached text protocol's framing and request parser: a line ending in `\n` (a
//! `\r` before it dropped), split on spaces into at most 24 tokens as memcached does, read
//! into a typed [`Request`] before anything touches the items; storage commands also take
//! their data block (`<bytes>` then `\r\n`). Meta commands (`mg`, `ms` …) are parsed by
//! `super::meta`.
//!
//! Numbers are read as memcached reads them, C library quirks included: `strtol` into a
//! `long` truncated to 32 bits (so `set k 0 0 4294967297` stores 1 byte), leading
//! whitespace and a sign accepted, trailing whitespace accepted, anything else refused.
//! Every malformed line gets memcached's exact reply.

use std::borrow::Cow;

use super::meta::{self, MetaRequest};
use super::store::Mode;
use super::token::{BAD_FORMAT, KEY_MAX, Limits, MAX_LINE, Tokens, strtol32, strtoul32, strtoull};

/// A parsed request, borrowing the connection's buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request<'a> {
    /// `set`/`add`/`replace`/`append`/`prepend`/`cas` with its data.
    Store {
        mode: Mode,
        key: &'a [u8],
        flags: u32,
        exptime: i64,
        data: &'a [u8],
        cas: u64,
        noreply: bool,
    },
    /// A storage command whose item would exceed `-I`: its data is skipped
    /// (`swallow` bytes, some possibly not received yet) and, for `set`, the old item is
    /// dropped.
    TooLarge {
        key: &'a [u8],
        drop_old: bool,
        noreply: bool,
        swallow: usize,
    },
    /// `get`/`gets`/`gat`/`gats`; `bad_key` when a key over 250 bytes ended the list.
    Get {
        cas: bool,
        touch: Option<i64>,
        keys: Vec<&'a [u8]>,
        bad_key: bool,
    },
    /// `delete key [0] [noreply]`.
    Delete { key: &'a [u8], noreply: bool },
    /// `incr`/`decr`.
    Delta {
        incr: bool,
        key: &'a [u8],
        by: u64,
        noreply: bool,
    },
    /// `touch key exptime`.
    Touch {
        key: &'a [u8],
        exptime: i64,
        noreply: bool,
    },
    /// `flush_all [delay]`.
    FlushAll { delay: i64, noreply: bool },
    /// `version`.
    Version,
    /// `verbosity n`.
    Verbosity { level: u32, noreply: bool },
    /// `quit`.
    Quit,
    /// `stats [group]`.
    Stats { args: Vec<&'a [u8]> },
    /// A meta command.
    Meta(MetaRequest<'a>),
    /// `ms` over `-I`: the stored item is dropped, the data skipped.
    MetaTooLarge { key: Cow<'a, [u8]>, swallow: usize },
    /// An error reply (never silenced), after which `swallow` bytes of data are skipped.
    Swallow { text: &'static str, swallow: usize },
    /// `me key [b]`.
    Debug { key: Cow<'a, [u8]>, binary: bool },
    /// A one-line reply (an error) that `noreply` silences.
    Reply { text: &'static str, noreply: bool },
    /// The connection closes without a reply (an HTTP request, an endless line).
    Close,
}

/// One step of framing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed<'a> {
    /// A request and the bytes it took.
    Request(Request<'a>, usize),
    /// More bytes are needed.
    Incomplete,
}

fn reply(text: &'static str, noreply: bool) -> Request<'static> {
    Request::Reply { text, noreply }
}

/// Frames and parses the next request at the start of `buf`.
pub(crate) fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<'a> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > MAX_LINE {
            let lead = buf.iter().take_while(|&&b| b == b' ').count();
            let rest = &buf[lead..];
            if lead > 100
                || !(rest.starts_with(b"get ") || rest.starts_with(b"gets "))
                || buf.len() > limits.max_get_line
            {
                return Parsed::Request(Request::Close, buf.len());
            }
        }
        return Parsed::Incomplete;
    };
    let mut line = &buf[..nl];
    if line.len() > 1 && line[line.len() - 1] == b'\r' {
        line = &line[..line.len() - 1];
    }
    // memcached reads the line as a C string.
    if let Some(z) = line.iter().position(|&b| b == 0) {
        line = &line[..z];
    }
    let used = nl + 1;
    let t = Tokens::split(line);
    if t.words.is_empty() || t.words[0].len() < 2 {
        return Parsed::Request(reply("ERROR", false), used);
    }
    let cmd = t.words[0];
    let n = t.n();
    let wrong = |ok: bool| (!ok).then(|| Parsed::Request(reply("ERROR", false), used));
    if cmd.len() == 2 && cmd[0] == b'm' {
        return match meta::parse(cmd[1], &t, &buf[used..], limits) {
            meta::Framed::Request(r, extra) => Parsed::Request(r, used + extra),
            meta::Framed::Incomplete => Parsed::Incomplete,
        };
    }
    let store_mode = match cmd {
        b"set" => Some(Mode::Set),
        b"add" => Some(Mode::Add),
        b"replace" => Some(Mode::Replace),
        b"append" => Some(Mode::Append),
        b"prepend" => Some(Mode::Prepend),
        b"cas" => Some(Mode::Cas),
        _ => None,
    };
    if let Some(mode) = store_mode {
        let cas = mode == Mode::Cas;
        if let Some(e) = wrong(if cas {
            n == 7 || n == 8
        } else {
            n == 6 || n == 7
        }) {
            return e;
        }
        return parse_store(mode, &t, &buf[used..], used, limits);
    }
    let r = match cmd {
        b"get" | b"gets" | b"gat" | b"gats" | b"bget" => {
            if let Some(e) = wrong(n >= 3) {
                return e;
            }
            let touch = cmd.starts_with(b"ga");
            parse_get(cmd == b"gets" || cmd == b"gats", touch, &t)
        }
        b"delete" => {
            if let Some(e) = wrong((3..=5).contains(&n)) {
                return e;
            }
            let mut noreply = false;
            if n > 3 {
                let hold_is_zero = t.words[2] == b"0";
                noreply = t.noreply();
                let valid =
                    (n == 4 && (hold_is_zero || noreply)) || (n == 5 && hold_is_zero && noreply);
                if !valid {
                    return Parsed::Request(
                        reply(
                            "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
                            noreply,
                        ),
                        used,
                    );
                }
            }
            if t.words[1].len() > KEY_MAX {
                reply(BAD_FORMAT, noreply)
            } else {
                Request::Delete {
                    key: t.words[1],
                    noreply,
                }
            }
        }
        b"incr" | b"decr" => {
            if let Some(e) = wrong(n == 4 || n == 5) {
                return e;
            }
            let noreply = t.noreply();
            if t.words[1].len() > KEY_MAX {
                reply(BAD_FORMAT, noreply)
            } else {
                match strtoull(t.words[2]) {
                    Some(by) => Request::Delta {
                        incr: cmd == b"incr",
                        key: t.words[1],
                        by,
                        noreply,
                    },
                    None => reply("CLIENT_ERROR invalid numeric delta argument", noreply),
                }
            }
        }
        b"touch" => {
            if let Some(e) = wrong(n == 4 || n == 5) {
                return e;
            }
            let noreply = t.noreply();
            if t.words[1].len() > KEY_MAX {
                reply(BAD_FORMAT, noreply)
            } else {
                match strtol32(t.words[2]) {
                    Some(e) => Request::Touch {
                        key: t.words[1],
                        exptime: i64::from(e),
                        noreply,
                    },
                    None => reply("CLIENT_ERROR invalid exptime argument", noreply),
                }
            }
        }
        b"flush_all" => {
            if let Some(e) = wrong((2..=4).contains(&n)) {
                return e;
            }
            let noreply = t.noreply();
            let mut delay = 0;
            if n != if noreply { 3 } else { 2 } {
                match strtol32(t.words[1]) {
                    Some(d) => delay = i64::from(d),
                    None => {
                        return Parsed::Request(
                            reply("CLIENT_ERROR invalid exptime argument", noreply),
                            used,
                        );
                    }
                }
            }
            Request::FlushAll { delay, noreply }
        }
        b"version" => Request::Version,
        b"quit" => Request::Quit,
        b"verbosity" => {
            if let Some(e) = wrong(n == 3 || n == 4) {
                return e;
            }
            let noreply = t.noreply();
            match strtoul32(t.words[1]) {
                Some(level) => Request::Verbosity { level, noreply },
                None => reply(BAD_FORMAT, noreply),
            }
        }
        b"stats" => Request::Stats {
            args: t.words[1..].to_vec(),
        },
        _ => {
            let last = t.words.last().copied().unwrap_or_default();
            if t.rest.is_none() && last.starts_with(b"HTTP/") {
                Request::Close
            } else {
                reply("ERROR", false)
            }
        }
    };
    Parsed::Request(r, used)
}

fn parse_get<'a>(cas: bool, touch: bool, t: &Tokens<'a>) -> Request<'a> {
    let mut words = &t.words[1..];
    let mut exptime = None;
    if touch {
        match strtol32(words[0]) {
            Some(e) => exptime = Some(i64::from(e)),
            None => return reply("CLIENT_ERROR invalid exptime argument", false),
        }
        words = &words[1..];
    }
    let mut all: Vec<&'a [u8]> = words.to_vec();
    let mut rest = t.rest;
    // A line of more than 23 tokens is split again, piece by piece, as memcached does.
    while let Some(r) = rest {
        let more = Tokens::split(r);
        all.extend(more.words);
        rest = more.rest;
    }
    let mut keys = Vec::with_capacity(all.len());
    let mut bad_key = false;
    for k in all {
        if k.len() > KEY_MAX {
            bad_key = true;
            break;
        }
        keys.push(k);
    }
    Request::Get {
        cas,
        touch: exptime,
        keys,
        bad_key,
    }
}

fn parse_store<'a>(
    mode: Mode,
    t: &Tokens<'a>,
    after: &'a [u8],
    used: usize,
    limits: &Limits,
) -> Parsed<'a> {
    let noreply = t.noreply();
    let bad = |used| Parsed::Request(reply(BAD_FORMAT, noreply), used);
    let key = t.words[1];
    if key.len() > KEY_MAX {
        return bad(used);
    }
    let (Some(flags), Some(exptime), Some(vlen)) = (
        strtoul32(t.words[2]),
        strtol32(t.words[3]),
        strtol32(t.words[4]),
    ) else {
        return bad(used);
    };
    let mut cas = 0;
    if mode == Mode::Cas {
        match strtoull(t.words[5]) {
            Some(c) => cas = c,
            None => return bad(used),
        }
    }
    if !(0..=i32::MAX - 2).contains(&vlen) {
        return bad(used);
    }
    let vlen = vlen as usize;
    let suffix = if flags != 0 { 4 } else { 0 };
    if key.len() + vlen + suffix + super::store::MEMCACHED_ITEM_OVERHEAD > limits.max_item {
        return Parsed::Request(
            Request::TooLarge {
                key,
                drop_old: mode == Mode::Set,
                noreply,
                swallow: vlen + 2,
            },
            used,
        );
    }
    if after.len() < vlen + 2 {
        return Parsed::Incomplete;
    }
    let used = used + vlen + 2;
    if &after[vlen..vlen + 2] != b"\r\n" {
        return Parsed::Request(reply("CLIENT_ERROR bad data chunk", noreply), used);
    }
    Parsed::Request(
        Request::Store {
            mode,
            key,
            flags,
            exptime: i64::from(exptime),
            data: &after[..vlen],
            cas,
            noreply,
        },
        used,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_item: 1 << 20,
        max_get_line: 1 << 20,
    };

    fn one(s: &[u8]) -> Request<'_> {
        match parse(s, &LIMITS) {
            Parsed::Request(r, _) => r,
            Parsed::Incomplete => panic!("incomplete: {:?}", String::from_utf8_lossy(s)),
        }
    }

    #[test]
    fn storage_framing() {
        assert_eq!(parse(b"set k 0 0 5\r\nhel", &LIMITS), Parsed::Incomplete);
        let r = one(b"set k 1 0 5\r\nhello\r\nget k\r\n");
        assert!(matches!(
            r,
            Request::Store {
                data: b"hello",
                flags: 1,
                ..
            }
        ));
        match parse(b"set k 1 0 5\r\nhello\r\nget k\r\n", &LIMITS) {
            Parsed::Request(_, used) => assert_eq!(used, 20),
            Parsed::Incomplete => panic!(),
        }
        assert_eq!(
            one(b"set k 0 0 2\r\nabcd\r\n"),
            Request::Reply {
                text: "CLIENT_ERROR bad data chunk",
                noreply: false
            }
        );
        assert_eq!(
            one(b"set k 0 0\r\n"),
            Request::Reply {
                text: "ERROR",
                noreply: false
            }
        );
        assert_eq!(
            one(b"set k x 0 1 noreply\r\n"),
            Request::Reply {
                text: BAD_FORMAT,
                noreply: true
            }
        );
        assert!(matches!(
            one(b"set k 0 0 2000000\r\n"),
            Request::TooLarge {
                swallow: 2_000_002,
                drop_old: true,
                ..
            }
        ));
        assert!(matches!(
            one(b"cas k 0 0 1 77\r\nx\r\n"),
            Request::Store { cas: 77, .. }
        ));
    }

    #[test]
    fn lines_and_limits() {
        assert_eq!(parse(b"get k", &LIMITS), Parsed::Incomplete);
        let long = vec![b'x'; MAX_LINE + 1];
        assert!(matches!(
            parse(&long, &LIMITS),
            Parsed::Request(Request::Close, _)
        ));
        let mut get = b"get ".to_vec();
        get.extend(std::iter::repeat_n(b'k', MAX_LINE));
        assert_eq!(parse(&get, &LIMITS), Parsed::Incomplete);
        assert!(matches!(one(b"GET / HTTP/1.1\r\n"), Request::Close));
        assert!(matches!(one(b"\r\n"), Request::Reply { text: "ERROR", .. }));
        assert!(matches!(
            one(b"x\r\n"),
            Request::Reply { text: "ERROR", .. }
        ));
        let key = vec![b'k'; 251];
        let mut line = b"get a ".to_vec();
        line.extend_from_slice(&key);
        line.extend_from_slice(b"\r\n");
        assert!(matches!(one(&line), Request::Get { bad_key: true, .. }));
    }

    #[test]
    fn many_keys_continue_past_the_token_limit() {
        let mut line = b"get".to_vec();
        for i in 0..100 {
            line.extend_from_slice(format!(" k{i}").as_bytes());
        }
        line.extend_from_slice(b"\r\n");
        let Request::Get { keys, .. } = one(&line) else {
            panic!()
        };
        assert_eq!(keys.len(), 100);
        assert_eq!(keys[99], b"k99");
    }
}
