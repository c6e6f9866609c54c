//! RESP framing: the request parser (multibulk and inline) and the reply encoder (RESP2 and
//! RESP3).
//!
//! The parser is our own, small and incremental: [`parse`] looks at the bytes a connection
//! has buffered and returns one complete command (its arguments and how many bytes it used),
//! `Ok(None)` when more bytes are needed, or a [`ProtocolError`] whose text is Redis's own
//! reply for that fault (the connection is then closed, as Redis does). Every length is
//! checked against [`Limits`] before anything is allocated from it, so a hostile length can
//! neither exhaust memory nor panic. The request syntax is tiny (two forms, four field
//! kinds), which is why a framing crate would not buy much here: the replies are where the
//! RESP2/RESP3 differences live, and [`Reply::encode`] handles both.

/// Bounds on what one request may claim, Redis's settings of the same names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Longest bulk string argument (`proto-max-bulk-len`).
    pub(crate) max_bulk_len: usize,
    /// Most arguments in one multibulk request (Redis: 1024 * 1024).
    pub(crate) max_multibulk_len: usize,
    /// Longest inline request or length line before its newline (Redis: 64 KiB).
    pub(crate) max_inline_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: 1024 * 1024,
            max_inline_len: 64 * 1024,
        }
    }
}

/// A malformed request; its text is the error Redis replies before closing the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtocolError(pub(crate) String);

/// One parsed request: its arguments (empty for a blank inline line, which is skipped) and
/// the number of buffered bytes it used.
pub(crate) type Parsed = (Vec<Vec<u8>>, usize);

/// Parses one request from the front of `buf`; see the [module docs](self).
pub(crate) fn parse(buf: &[u8], limits: &Limits) -> Result<Option<Parsed>, ProtocolError> {
    let mut args = Args::default();
    Ok(parse_into(buf, limits, &mut args)?.map(|n| (args.into_vec(), n)))
}

/// A connection's argument vectors, reused from one request to the next so that parsing
/// a request allocates nothing once the connection has seen requests of its shape.
#[derive(Default)]
pub(crate) struct Args {
    bufs: Vec<Vec<u8>>,
    len: usize,
}

/// An argument buffer grown past this is freed after use rather than kept.
const KEEP_ARG: usize = 64 * 1024;

impl Args {
    /// The arguments of the last request parsed.
    pub(crate) fn as_slice(&self) -> &[Vec<u8>] {
        &self.bufs[..self.len]
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    fn push(&mut self, arg: &[u8]) {
        if let Some(b) = self.bufs.get_mut(self.len) {
            if b.capacity() > KEEP_ARG {
                *b = arg.to_vec();
            } else {
                b.clear();
                b.extend_from_slice(arg);
            }
        } else {
            self.bufs.push(arg.to_vec());
        }
        self.len += 1;
    }

    fn into_vec(mut self) -> Vec<Vec<u8>> {
        self.bufs.truncate(self.len);
        self.bufs
    }
}

/// [`parse`] into reused buffers: `Ok(Some(used))` with the arguments in `args`.
pub(crate) fn parse_into(
    buf: &[u8],
    limits: &Limits,
    args: &mut Args,
) -> Result<Option<usize>, ProtocolError> {
    args.clear();
    match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_multibulk(buf, limits, args),
        Some(_) => Ok(parse_inline(buf, limits)?.map(|(v, n)| {
            for a in &v {
                args.push(a);
            }
            n
        })),
    }
}

/// Finds the `\r\n` ending the line that starts at `from`; `Ok(None)` if not buffered yet.
fn line_end(
    buf: &[u8],
    from: usize,
    limits: &Limits,
    what: &str,
) -> Result<Option<usize>, ProtocolError> {
    match buf[from..].iter().position(|&b| b == b'\r') {
        Some(i) if from + i + 1 < buf.len() => Ok(Some(from + i)),
        Some(i) if i > limits.max_inline_len => Err(too_big(what)),
        Some(_) => Ok(None),
        None if buf.len() - from > limits.max_inline_len => Err(too_big(what)),
        None => Ok(None),
    }
}

fn too_big(what: &str) -> ProtocolError {
    ProtocolError(format!("Protocol error: too big {what} string"))
}

/// Parses a decimal length as Redis's `string2ll` does (optional `-`, digits only).
fn parse_len(digits: &[u8]) -> Option<i64> {
    let (neg, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
    Some(if neg { -n } else { n })
}

fn parse_multibulk(
    buf: &[u8],
    limits: &Limits,
    args: &mut Args,
) -> Result<Option<usize>, ProtocolError> {
    let Some(end) = line_end(buf, 1, limits, "mbulk count")? else {
        return Ok(None);
    };
    let count = match parse_len(&buf[1..end]) {
        Some(n) if n > limits.max_multibulk_len as i64 => {
            return Err(ProtocolError(
                "Protocol error: invalid multibulk length".into(),
            ));
        }
        Some(n) => n,
        None => {
            return Err(ProtocolError(
                "Protocol error: invalid multibulk length".into(),
            ));
        }
    };
    let mut pos = end + 2;
    if count <= 0 {
        return Ok(Some(pos));
    }
    // Argument vectors are added only as arguments arrive, so a large claimed count
    // costs nothing until then.
    for _ in 0..count {
        let Some(&first) = buf.get(pos) else {
            return Ok(None);
        };
        if first != b'$' {
            return Err(ProtocolError(format!(
                "Protocol error: expected '$', got '{}'",
                char::from(first)
            )));
        }
        let Some(end) = line_end(buf, pos + 1, limits, "bulk count")? else {
            return Ok(None);
        };
        let len = match parse_len(&buf[pos + 1..end]) {
            Some(n) if n >= 0 && n as u64 <= limits.max_bulk_len as u64 => n as usize,
            _ => return Err(ProtocolError("Protocol error: invalid bulk length".into())),
        };
        let start = end + 2;
        if buf.len() < start + len + 2 {
            return Ok(None);
        }
        if &buf[start + len..start + len + 2] != b"\r\n" {
            return Err(ProtocolError("Protocol error: invalid bulk length".into()));
        }
        args.push(&buf[start..start + len]);
        pos = start + len + 2;
    }
    Ok(Some(pos))
}

fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Option<Parsed>, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > limits.max_inline_len {
            return Err(too_big("inline request"));
        }
        return Ok(None);
    };
    if nl > limits.max_inline_len {
        return Err(too_big("inline request"));
    }
    let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    let args = split_args(line)
        .ok_or_else(|| ProtocolError("Protocol error: unbalanced quotes in request".into()))?;
    Ok(Some((args, nl + 1)))
}

/// Splits an inline request into arguments as `redis-cli` and Redis do (`sdssplitargs`):
/// whitespace separates, `"…"` takes escapes (`\n`, `\xHH`, …), `'…'` takes only `\'`.
/// `None` on unbalanced quotes or a closing quote not followed by a space.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let (mut in_dq, mut in_sq) = (false, false);
        loop {
            let c = line.get(i).copied();
            if in_dq {
                match c {
                    None => return None,
                    Some(b'\\')
                        if line.len() > i + 3
                            && line[i + 1] == b'x'
                            && line[i + 2].is_ascii_hexdigit()
                            && line[i + 3].is_ascii_hexdigit() =>
                    {
                        let hex = std::str::from_utf8(&line[i + 2..i + 4]).ok()?;
                        cur.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 3;
                    }
                    Some(b'\\') if i + 1 < line.len() => {
                        i += 1;
                        cur.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return None;
                        }
                        in_dq = false;
                        i += 1;
                        break;
                    }
                    Some(b) => cur.push(b),
                }
            } else if in_sq {
                match c {
                    None => return None,
                    Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return None;
                        }
                        in_sq = false;
                        i += 1;
                        break;
                    }
                    Some(b) => cur.push(b),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if b.is_ascii_whitespace() => break,
                    Some(b'"') => in_dq = true,
                    Some(b'\'') => in_sq = true,
                    Some(b) => cur.push(b),
                }
            }
            i += 1;
        }
        debug_assert!(!in_dq && !in_sq);
        args.push(cur);
    }
}

/// Appends `parts` as one request (a RESP array of bulk strings) to `out`: the inverse
/// of [`parse`], and the form of the append-only file's records.
pub(crate) fn encode_request(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
    for p in parts {
        out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
}

/// A reply, encoded for the client's protocol version by [`Reply::encode`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// `+OK`-style status.
    Simple(&'static str),
    /// An error; the text starts with its code (`ERR`, `WRONGTYPE`, …).
    Error(String),
    /// An integer.
    Int(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// The null reply (`$-1` in RESP2, `_` in RESP3).
    Nil,
    /// An array.
    Array(Vec<Reply>),
    /// A map (a flat array of keys and values in RESP2).
    Map(Vec<(Reply, Reply)>),
    /// Nothing at all: `SHUTDOWN` closes the connection without a reply, as Redis does.
    Silence,
    /// A double (a bulk string in RESP2, `,` in RESP3), formatted as Redis 7.0 does.
    Double(f64),
    /// A verbatim text (a bulk string in RESP2), as `INFO` and `CLIENT INFO` send.
    Verbatim(Vec<u8>),
    /// A set (an array in RESP2, `~` in RESP3): `SMEMBERS`, `SINTER`, `SPOP` with a count.
    Set(Vec<Reply>),
    /// The null array (`*-1` in RESP2, `_` in RESP3): a blocking pop that timed out.
    NilArray,
    /// An out-of-band push (an array in RESP2, `>` in RESP3): Pub/Sub messages and
    /// subscription confirmations.
    Push(Vec<Reply>),
    /// Several replies to one command, one after the other (`SUBSCRIBE a b` confirms
    /// each channel with a reply of its own).
    Many(Vec<Reply>),
    /// An array of `count` bulk strings whose encodings (the same in RESP2 and RESP3)
    /// are already in `bytes` ([`put_bulk`]): `LRANGE` writes a node's elements straight
    /// into one buffer rather than one allocation per element.
    Bulks {
        /// Number of bulk strings in `bytes`.
        count: usize,
        /// Their encodings, one after the other.
        bytes: Vec<u8>,
    },
}

/// Appends the encoding of bulk string `b` to `out` (as [`Reply::Bulk`] encodes it).
pub(crate) fn put_bulk(out: &mut Vec<u8>, b: &[u8]) {
    header(out, b'$', b.len() as i64);
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

impl Reply {
    /// `+OK`.
    pub(crate) const OK: Reply = Reply::Simple("OK");

    /// An error reply from its full text.
    pub(crate) fn err(text: impl Into<String>) -> Reply {
        Reply::Error(text.into())
    }

    /// A bulk string from anything byte-like.
    pub(crate) fn bulk(bytes: impl AsRef<[u8]>) -> Reply {
        Reply::Bulk(bytes.as_ref().to_vec())
    }

    /// Appends the encoding for protocol `proto` (2 or 3) to `out`.
    pub(crate) fn encode(&self, proto: u8, out: &mut Vec<u8>) {
        match self {
            Reply::Simple(s) => line(out, b'+', s),
            Reply::Error(s) => {
                // An error is one line: a newline inside would end the reply early.
                let clean: String = s
                    .chars()
                    .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
                    .collect();
                line(out, b'-', &clean)
            }
            Reply::Int(n) => header(out, b':', *n),
            Reply::Bulk(b) => put_bulk(out, b),
            Reply::Bulks { count, bytes } => {
                header(out, b'*', *count as i64);
                out.extend_from_slice(bytes);
            }
            Reply::Nil if proto >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::Array(items) => {
                header(out, b'*', items.len() as i64);
                for item in items {
                    item.encode(proto, out);
                }
            }
            Reply::Set(items) => {
                header(
                    out,
                    if proto >= 3 { b'~' } else { b'*' },
                    items.len() as i64,
                );
                for item in items {
                    item.encode(proto, out);
                }
            }
            Reply::Push(items) => {
                header(
                    out,
                    if proto >= 3 { b'>' } else { b'*' },
                    items.len() as i64,
                );
                for item in items {
                    item.encode(proto, out);
                }
            }
            Reply::Many(replies) => {
                for r in replies {
                    r.encode(proto, out);
                }
            }
            Reply::NilArray if proto >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Map(pairs) => {
                if proto >= 3 {
                    header(out, b'%', pairs.len() as i64);
                } else {
                    header(out, b'*', 2 * pairs.len() as i64);
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
            Reply::Verbatim(b) if proto >= 3 => {
                header(out, b'=', b.len() as i64 + 4);
                out.extend_from_slice(b"txt:");
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Verbatim(b) => Reply::Bulk(b.clone()).encode(proto, out),
            Reply::Silence => {}
            Reply::Double(d) if proto >= 3 => line(out, b',', &crate::num::format_score(*d)),
            Reply::Double(d) => Reply::bulk(crate::num::format_score(*d)).encode(proto, out),
        }
    }
}

fn line(out: &mut Vec<u8>, kind: u8, text: &str) {
    out.push(kind);
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `kind`, `n` in decimal, CRLF: written digit by digit (no formatter, no allocation:
/// this runs for every bulk reply).
fn header(out: &mut Vec<u8>, kind: u8, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    out.push(kind);
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_print_every_integer() {
        for n in [0, 1, -1, 9, 10, 99, 100, 12345, -98765, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            header(&mut out, b':', n);
            assert_eq!(out, format!(":{n}\r\n").into_bytes(), "{n}");
        }
    }

    fn lim() -> Limits {
        Limits {
            max_bulk_len: 16,
            max_multibulk_len: 4,
            max_inline_len: 32,
        }
    }

    fn args(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_whole_and_in_every_split() {
        let req = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n";
        let (a, used) = parse(req, &lim()).unwrap().unwrap();
        assert_eq!(a, args(&["GET", "k"]));
        let (b, used2) = parse(&req[used..], &lim()).unwrap().unwrap();
        assert_eq!(b, args(&["PING"]));
        assert_eq!(used + used2, req.len());
        for cut in 0..used {
            assert_eq!(parse(&req[..cut], &lim()), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn binary_and_empty_bulks() {
        let req = b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\n\r\n\x00\xff\r\n";
        let (a, used) = parse(req, &lim()).unwrap().unwrap();
        assert_eq!(used, req.len());
        assert_eq!(
            a,
            vec![b"SET".to_vec(), vec![], vec![b'\r', b'\n', 0, 0xff]]
        );
        assert_eq!(parse(b"*0\r\n", &lim()), Ok(Some((vec![], 4))));
        assert_eq!(parse(b"*-1\r\n", &lim()), Ok(Some((vec![], 5))));
    }

    #[test]
    fn malformed_multibulk_gets_redis_errors() {
        let e = |s: &[u8]| parse(s, &lim()).unwrap_err().0;
        assert_eq!(e(b"*x\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(e(b"*5\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(e(b"*\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(
            e(b"*1\r\n+PING\r\n"),
            "Protocol error: expected '$', got '+'"
        );
        assert_eq!(e(b"*1\r\n$-1\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(e(b"*1\r\n$17\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(e(b"*1\r\n$1x\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(
            e(b"*1\r\n$99999999999999999999\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n$2\r\nabcd\r\n"),
            "Protocol error: invalid bulk length"
        );
        assert_eq!(e(&[b'*'; 40]), "Protocol error: too big mbulk count string");
        let mut long = b"*1\r\n$".to_vec();
        long.extend([b'1'; 40]);
        assert_eq!(e(&long), "Protocol error: too big bulk count string");
    }

    #[test]
    fn inline_requests_split_like_redis() {
        let (a, used) = parse(b"set k  \"a b\\x41\\n\"\r\nrest", &lim())
            .unwrap()
            .unwrap();
        assert_eq!(a, vec![b"set".to_vec(), b"k".to_vec(), b"a bA\n".to_vec()]);
        assert_eq!(used, 20);
        assert_eq!(parse(b"PING\n", &lim()), Ok(Some((args(&["PING"]), 5))));
        assert_eq!(parse(b"\r\n", &lim()), Ok(Some((vec![], 2))));
        assert_eq!(
            parse(b"echo 'it\\'s'\n", &lim()).unwrap().unwrap().0,
            args(&["echo", "it's"])
        );
        assert_eq!(parse(b"PING", &lim()), Ok(None));
        let e = |s: &[u8]| parse(s, &lim()).unwrap_err().0;
        assert_eq!(
            e(b"echo \"abc\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            e(b"echo \"a\"b\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            e(b"echo 'abc\n"),
            "Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            e(&[b'a'; 40]),
            "Protocol error: too big inline request string"
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A deterministic walk over many short byte strings built from RESP's own symbols.
        use rand::Rng;
        let alphabet = b"*$\r\n0129-x\"' \\";
        let mut rng = orrery_core::testing::rng::rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let mut buf = Vec::new();
            for _ in 0..rng.random_range(0..24) {
                buf.push(alphabet[rng.random_range(0..alphabet.len())]);
            }
            if let Ok(Some((_, used))) = parse(&buf, &lim()) {
                assert!(used <= buf.len() && used > 0);
            }
        }
    }

    #[test]
    fn replies_in_both_protocols() {
        let enc = |r: &Reply, p| {
            let mut out = Vec::new();
            r.encode(p, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(enc(&Reply::Nil, 2), "$-1\r\n");
        assert_eq!(enc(&Reply::Nil, 3), "_\r\n");
        let m = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
        assert_eq!(enc(&m, 2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&m, 3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::Verbatim(b"x".to_vec()), 3), "=5\r\ntxt:x\r\n");
        assert_eq!(enc(&Reply::err("ERR a\r\nb"), 2), "-ERR a  b\r\n");
    }
}
