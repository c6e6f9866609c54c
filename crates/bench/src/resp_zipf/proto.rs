//! The little of RESP the load generator speaks: `GET` and `SET` requests encoded as
//! arrays of bulk strings, and replies parsed from a byte buffer that may end in the
//! middle of one (the reader then waits for more bytes).
//!
//! Only the reply shapes `GET` and `SET` produce are accepted (simple string, error,
//! integer, bulk string, nil bulk, RESP3 null); anything else is a protocol error, which
//! ends the run with a message rather than a guess.

/// One parsed reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK` and other simple strings.
    Simple,
    /// `-ERR …`: the message (without the `-`).
    Error(String),
    /// `:n`.
    Int(i64),
    /// A bulk string of this many bytes (its bytes are not kept).
    Bulk(usize),
    /// `$-1` (RESP2) or `_` (RESP3): the key is absent.
    Nil,
}

/// Appends `GET key`.
pub(crate) fn encode_get(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
    bulk(out, key);
}

/// Appends `SET key value`.
pub(crate) fn encode_set(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
    bulk(out, key);
    bulk(out, value);
}

fn bulk(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(s.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(s);
    out.extend_from_slice(b"\r\n");
}

/// The line at the start of `buf` (without its CRLF) and the bytes it takes, or `None`
/// when the CRLF has not arrived yet.
fn line(buf: &[u8]) -> Option<(&[u8], usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    Some((&buf[..end], end + 2))
}

fn number(s: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("bad number {:?} in a reply", String::from_utf8_lossy(s)))
}

/// Parses the reply at the start of `buf`: `Ok(Some((reply, bytes used)))`, `Ok(None)`
/// when `buf` holds only part of it, `Err` for bytes that are not a reply of `GET` or
/// `SET`.
pub(crate) fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(&kind) = buf.first() else {
        return Ok(None);
    };
    let Some((text, used)) = line(&buf[1..]) else {
        return Ok(None);
    };
    let used = used + 1;
    let reply = match kind {
        b'+' => Reply::Simple,
        b'-' => Reply::Error(String::from_utf8_lossy(text).into_owned()),
        b':' => Reply::Int(number(text)?),
        b'_' if text.is_empty() => Reply::Nil,
        b'$' => {
            let n = number(text)?;
            if n == -1 {
                Reply::Nil
            } else if n < 0 {
                return Err(format!("bad bulk length {n} in a reply"));
            } else {
                let n = n as usize;
                let Some(end) = used.checked_add(n).and_then(|e| e.checked_add(2)) else {
                    return Err(format!("bad bulk length {n} in a reply"));
                };
                if buf.len() < end {
                    return Ok(None);
                }
                if &buf[end - 2..end] != b"\r\n" {
                    return Err("a bulk reply not ended by CRLF".into());
                }
                return Ok(Some((Reply::Bulk(n), end)));
            }
        }
        other => {
            return Err(format!(
                "unexpected reply type {:?} (GET and SET expected)",
                char::from(other)
            ));
        }
    };
    Ok(Some((reply, used)))
}
