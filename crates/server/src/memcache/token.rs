//! The lexical layer of the memcached text protocol, shared by the classic and the meta
//! commands: memcached's tokenizer (split on spaces, at most 24 tokens) and its number
//! readers, C library quirks included: `strtol` into a `long` truncated to 32 bits (so
//! `set k 0 0 4294967297` stores 1 byte), leading whitespace and a sign accepted, trailing
//! whitespace accepted, anything else refused.

/// The longest key (memcached's `KEY_MAX_LENGTH`).
pub(crate) const KEY_MAX: usize = 250;

/// Most tokens a line is split into (memcached's `MAX_TOKENS`, the terminal one included).
pub(crate) const MAX_TOKENS: usize = 24;

/// Longest line without a newline before the connection is closed (memcached's 2048),
/// unless it starts as a `get`/`gets` (multi-gets are unbounded: up to the buffer limit).
pub(crate) const MAX_LINE: usize = 2048;

/// The reply to most malformed lines.
pub(crate) const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";

/// The parser's limits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Largest item, memcached's `-I` (bytes, memcached's accounting).
    pub(crate) max_item: usize,
    /// Largest multi-get line (bytes).
    pub(crate) max_get_line: usize,
}

/// The tokens of a line: at most [`MAX_TOKENS`] - 1, and the rest of the line when it had
/// more (memcached's terminal token).
pub(crate) struct Tokens<'a> {
    pub(crate) words: Vec<&'a [u8]>,
    /// The unsplit rest after the last token, when the line had more tokens.
    pub(crate) rest: Option<&'a [u8]>,
}

impl<'a> Tokens<'a> {
    /// Splits `line` on spaces as memcached's `tokenize_command` does.
    pub(crate) fn split(line: &'a [u8]) -> Tokens<'a> {
        let mut words = Vec::new();
        let mut s = 0;
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' {
                if s != i {
                    words.push(&line[s..i]);
                    if words.len() == MAX_TOKENS - 1 {
                        let rest = &line[i + 1..];
                        return Tokens {
                            words,
                            rest: Some(rest),
                        };
                    }
                }
                s = i + 1;
            }
            i += 1;
        }
        if s != i {
            words.push(&line[s..i]);
        }
        Tokens { words, rest: None }
    }

    /// memcached's `ntokens`: the words plus the terminal token.
    pub(crate) fn n(&self) -> usize {
        self.words.len() + 1
    }

    /// Whether the last word is `noreply` (memcached's `set_noreply_maybe`).
    pub(crate) fn noreply(&self) -> bool {
        self.rest.is_none() && self.words.last() == Some(&&b"noreply"[..])
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// C's `strtol`/`strtoull` on a token and memcached's check of what follows: the value as
/// an `i128` (sign applied), or `None` (no digits, out of `long` range, junk after).
fn c_number(tok: &[u8], unsigned: bool) -> Option<i128> {
    let mut i = 0;
    while i < tok.len() && is_space(tok[i]) {
        i += 1;
    }
    let neg = match tok.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: i128 = 0;
    let mut overflow = false;
    while i < tok.len() && tok[i].is_ascii_digit() {
        v = v * 10 + i128::from(tok[i] - b'0');
        if v > i128::from(u64::MAX) {
            overflow = true;
            v = i128::from(u64::MAX);
        }
        i += 1;
    }
    if i == start {
        return None;
    }
    if i < tok.len() && !is_space(tok[i]) {
        return None;
    }
    let v = if neg { -v } else { v };
    if unsigned {
        // strtoull: magnitude up to 2^64-1, a negative one wraps.
        if overflow {
            return None;
        }
        Some(v)
    } else {
        // strtol: within a 64-bit long.
        if overflow || v > i128::from(i64::MAX) || v < i128::from(i64::MIN) {
            return None;
        }
        Some(v)
    }
}

/// memcached's `safe_strtol` into an `int32_t` (the `long` truncated).
pub(crate) fn strtol32(tok: &[u8]) -> Option<i32> {
    c_number(tok, false).map(|v| v as i64 as i32)
}

/// memcached's `safe_strtoull`.
pub(crate) fn strtoull(tok: &[u8]) -> Option<u64> {
    let v = c_number(tok, true)?;
    let u = v.rem_euclid(1i128 << 64) as u64;
    if (u as i64) < 0 && tok.contains(&b'-') {
        return None;
    }
    Some(u)
}

/// memcached's `safe_strtoul` into a `uint32_t` (the `unsigned long` truncated).
pub(crate) fn strtoul32(tok: &[u8]) -> Option<u32> {
    strtoull(tok).map(|v| v as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_c() {
        assert_eq!(strtol32(b"12"), Some(12));
        assert_eq!(strtol32(b"-1"), Some(-1));
        assert_eq!(strtol32(b"4294967297"), Some(1));
        assert_eq!(strtol32(b"99999999999999999999"), None);
        assert_eq!(strtol32(b"1x"), None);
        assert_eq!(strtol32(b"1\t"), Some(1));
        assert_eq!(strtol32(b"\t+7"), Some(7));
        assert_eq!(strtol32(b""), None);
        assert_eq!(strtoul32(b"-1"), None);
        assert_eq!(strtoul32(b"-0"), Some(0));
        assert_eq!(strtoul32(b"4294967296"), Some(0));
        assert_eq!(strtoull(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(strtoull(b"18446744073709551616"), None);
        assert_eq!(strtoull(b"-5"), None);
    }

    #[test]
    fn tokens_split_like_memcached() {
        let t = Tokens::split(b"  get a  b ");
        assert_eq!(t.words, vec![&b"get"[..], b"a", b"b"]);
        assert!(t.rest.is_none());
        let line: Vec<u8> = (0..30)
            .flat_map(|i| format!("k{i} ").into_bytes())
            .collect();
        let t = Tokens::split(&line);
        assert_eq!(t.words.len(), 23);
        assert!(t.rest.unwrap().starts_with(b"k23 "));
    }
}
