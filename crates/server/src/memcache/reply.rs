//! The reply writer: memcached's reply lines, numbers written without formatting
//! machinery, appended to a connection's output buffer.

/// Appends the decimal digits of `v`.
pub(crate) fn num(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends a signed decimal.
pub(crate) fn signed(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    num(out, v.unsigned_abs());
}

/// Appends `text` and `\r\n`.
pub(crate) fn line(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Appends `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`.
pub(crate) fn value(out: &mut Vec<u8>, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.push(b' ');
    num(out, u64::from(flags));
    out.push(b' ');
    num(out, data.len() as u64);
    if let Some(c) = cas {
        out.push(b' ');
        num(out, c);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends one `STAT name value\r\n` line.
pub(crate) fn stat(out: &mut Vec<u8>, name: &str, value: impl std::fmt::Display) {
    use std::io::Write;
    let _ = write!(out, "STAT {name} {value}\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let mut out = Vec::new();
        num(&mut out, 0);
        out.push(b' ');
        num(&mut out, u64::MAX);
        out.push(b' ');
        signed(&mut out, -12);
        assert_eq!(out, b"0 18446744073709551615 -12");
        out.clear();
        value(&mut out, b"k", 3, b"ab", Some(9));
        assert_eq!(out, b"VALUE k 3 2 9\r\nab\r\n");
        out.clear();
        stat(&mut out, "pid", 7);
        line(&mut out, "END");
        assert_eq!(out, b"STAT pid 7\r\nEND\r\n");
    }
}
