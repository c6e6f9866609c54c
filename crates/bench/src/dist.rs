//! Request distributions: uniform, YCSB's scrambled zipfian, and latest.
//!
//! The generators themselves (Gray et al.'s zipfian, YCSB's scrambled zipfian) are shared
//! with the structures' examples and live in [`orrery::testing::zipf`]; this module parses
//! the `--dist` argument.
//!
//! *Latest* (YCSB workload D) is a zipfian over recency: rank 0 is the most recently
//! inserted key. The op-stream generator maps the rank to a key index.

use std::fmt;

pub(crate) use orrery::testing::zipf::{ScrambledZipf, Zipf};

/// How requests pick their keys.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Dist {
    /// Every loaded key equally likely (the papers' default).
    Uniform,
    /// YCSB scrambled zipfian with the given θ in (0, 1).
    Zipf(f64),
    /// Zipfian over recency with the given θ (rank 0 = newest key).
    Latest(f64),
}

/// YCSB's default zipfian constant.
pub(crate) const DEFAULT_THETA: f64 = 0.99;

impl Dist {
    /// Parses `uniform`, `zipf`, `zipf:0.8`, `latest`, `latest:0.9`.
    pub(crate) fn parse(s: &str) -> Result<Dist, String> {
        let (name, theta) = match s.split_once(':') {
            Some((n, t)) => {
                let theta: f64 = t
                    .parse()
                    .map_err(|_| format!("bad zipfian constant {t:?} in distribution {s:?}"))?;
                (n, Some(theta))
            }
            None => (s, None),
        };
        let check = |t: f64| {
            if t > 0.0 && t < 1.0 {
                Ok(t)
            } else {
                Err(format!(
                    "zipfian constant must be strictly between 0 and 1, got {t} in {s:?}"
                ))
            }
        };
        match (name, theta) {
            ("uniform", None) => Ok(Dist::Uniform),
            ("zipf" | "zipfian", t) => Ok(Dist::Zipf(check(t.unwrap_or(DEFAULT_THETA))?)),
            ("latest", t) => Ok(Dist::Latest(check(t.unwrap_or(DEFAULT_THETA))?)),
            ("uniform", Some(_)) => Err("uniform takes no parameter".into()),
            _ => Err(format!(
                "unknown distribution {s:?} (expected uniform, zipf[:θ] or latest[:θ])"
            )),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Uniform => f.write_str("uniform"),
            Dist::Zipf(t) => write!(f, "zipf:{t}"),
            Dist::Latest(t) => write!(f, "latest:{t}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_distributions() {
        assert_eq!(Dist::parse("uniform"), Ok(Dist::Uniform));
        assert_eq!(Dist::parse("zipf"), Ok(Dist::Zipf(0.99)));
        assert_eq!(Dist::parse("zipf:0.5"), Ok(Dist::Zipf(0.5)));
        assert_eq!(Dist::parse("latest"), Ok(Dist::Latest(0.99)));
        assert!(
            Dist::parse("zipf:1.0")
                .unwrap_err()
                .contains("between 0 and 1")
        );
        assert!(Dist::parse("zipf:x").unwrap_err().contains("bad zipfian"));
        assert!(
            Dist::parse("gauss")
                .unwrap_err()
                .contains("unknown distribution")
        );
    }
}
