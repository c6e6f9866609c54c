//! Redis's glob patterns (`KEYS`, `SCAN MATCH`): `*`, `?`, `[abc]`, `[^a-z]`, `\x`.
//!
//! Written from Redis's documented semantics, plus [`literal_prefix`] so that an ordered
//! backend can start a pattern's scan at its fixed prefix instead of at the first key.

/// Whether `s` matches `pattern`, byte-wise and case-sensitive, as Redis's `stringmatchlen`.
pub(crate) fn matches(pattern: &[u8], s: &[u8]) -> bool {
    // Iterative matcher with backtracking to the last `*` (linear in practice, and never
    // exponential: only the most recent star is retried).
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    let (hit, next) = class(pattern, p, s[i]);
                    if hit {
                        p = next;
                        i += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == s[i] {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if c == s[i] {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the class opening at `pattern[p] == b'['`: whether it hit, and the
/// pattern position after the class. An unterminated class runs to the pattern's end.
fn class(pattern: &[u8], p: usize, c: u8) -> (bool, usize) {
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        match pattern.get(j) {
            None => break,
            Some(b']') => {
                j += 1;
                break;
            }
            Some(b'\\') if j + 1 < pattern.len() => {
                hit |= pattern[j + 1] == c;
                j += 2;
            }
            Some(&lo) if pattern.get(j + 1) == Some(&b'-') && j + 2 < pattern.len() => {
                let hi = pattern[j + 2];
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                hit |= (lo..=hi).contains(&c);
                j += 3;
            }
            Some(&x) => {
                hit |= x == c;
                j += 1;
            }
        }
    }
    (hit != negate, j)
}

/// The bytes every match of `pattern` starts with (up to its first special character).
pub(crate) fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'*' | b'?' | b'[' => break,
            b'\\' if i + 1 < pattern.len() => {
                out.push(pattern[i + 1]);
                i += 2;
            }
            b'\\' => break,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_glob_cases() {
        let yes = [
            ("*", ""),
            ("*", "abc"),
            ("h?llo", "hello"),
            ("h*llo", "hllo"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h[b-a]llo", "hallo"),
            ("h\\*llo", "h*llo"),
            ("*a*b*", "xxaxxbxx"),
            ("user:*", "user:1"),
        ];
        for (p, s) in yes {
            assert!(matches(p.as_bytes(), s.as_bytes()), "{p} ~ {s}");
        }
        let no = [
            ("h?llo", "hllo"),
            ("h[ae]llo", "hillo"),
            ("h[^e]llo", "hello"),
            ("h\\*llo", "hello"),
            ("abc", "abcd"),
            ("*a*b", "xxaxxbxxc"),
            ("user:*", "use"),
        ];
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes()), "{p} !~ {s}");
        }
    }

    #[test]
    fn pathological_patterns_stay_fast() {
        let p = "*a".repeat(40) + "b";
        assert!(!matches(p.as_bytes(), "a".repeat(4000).as_bytes()));
    }

    #[test]
    fn prefixes() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a\\*b?"), b"a*b");
        assert_eq!(literal_prefix(b"*"), b"");
        assert_eq!(literal_prefix(b"abc"), b"abc");
    }
}
