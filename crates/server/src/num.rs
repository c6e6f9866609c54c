//! Numbers as Redis reads and writes them: integers as `string2ll` accepts them, floats
//! as `INCRBYFLOAT` and the sorted-set commands accept them, and the two ways Redis 7.0
//! prints a double (a score's `%.17g`, `INCRBYFLOAT`'s human form). A leaf: the command
//! layer parses with it and the reply encoder formats `Reply::Double` with it.

/// Parses an integer exactly as Redis's `string2ll`: optional `-`, no `+`, no spaces, no
/// leading zeros, within `i64`.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        let d = i64::from(d - b'0');
        n = n.checked_mul(10)?;
        n = if neg {
            n.checked_sub(d)?
        } else {
            n.checked_add(d)?
        };
    }
    Some(n)
}

/// Parses a float as Redis does for `INCRBYFLOAT` (no spaces, no NaN).
pub(crate) fn parse_f64(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty()
        || s.starts_with(|c: char| c.is_ascii_whitespace())
        || s.ends_with(|c: char| c.is_ascii_whitespace())
    {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// Formats a score as Redis 7.0 replies it: an integer when the value is one (within
/// ±2^52), else C's `%.17g`; `inf`, `-inf`.
pub(crate) fn format_score(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if v > -4_503_599_627_370_495.0 && v < 4_503_599_627_370_496.0 && v == v.trunc() {
        return format!("{}", v as i64);
    }
    // %.17g: 17 significant digits, scientific when the exponent is < -4 or >= 17,
    // trailing zeros removed.
    let sci = format!("{v:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("`e` formatting has an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{v:.*}", (16 - exp) as usize))
    }
}

/// Formats a float as Redis's human-readable form (`INCRBYFLOAT`): no exponent, no
/// trailing zeros.
pub(crate) fn format_f64(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_like_redis() {
        for (s, v) in [("0", Some(0)), ("-1", Some(-1)), ("123", Some(123))] {
            assert_eq!(parse_i64(s.as_bytes()), v, "{s}");
        }
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for s in [
            "",
            "+1",
            " 1",
            "1 ",
            "01",
            "-0",
            "-",
            "9223372036854775808",
            "1.0",
            "abc",
        ] {
            assert_eq!(parse_i64(s.as_bytes()), None, "{s:?}");
        }
    }

    #[test]
    fn floats_parse_and_print_like_redis() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(format_f64(10.5 + 0.1), "10.6");
        assert_eq!(format_f64(3.0), "3");
        assert_eq!(format_f64(-0.0), "0");
        assert_eq!(format_f64(5e20), "500000000000000000000");
        for (v, s) in [
            (0.1, "0.10000000000000001"),
            (2.0, "2"),
            (1e300, "1.0000000000000001e+300"),
            (-1.5, "-1.5"),
            (1e-5, "1.0000000000000001e-05"),
            (123456.789, "123456.789"),
            (f64::NEG_INFINITY, "-inf"),
            (4503599627370496.0, "4503599627370496"),
        ] {
            assert_eq!(format_score(v), s, "{v}");
        }
    }
}
