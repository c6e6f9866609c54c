//! Datasets: deterministic key sets named as in the papers.
//!
//! | name | keys | source |
//! |---|---|---|
//! | `rand-8`, `rand-16`, `rand-N` | random N-byte keys | Cuckoo Trie Table 1 |
//! | `k3` `k4` `k6` `k8` `k10` | random keys of 8, 16, 64, 256, 1024 B | Wormhole Table 1 |
//! | `kshort-L`, `klong-L` | random L-byte keys; the same with the first L−4 bytes `'0'` | Wormhole §4.2 |
//! | `seq-int`, `rand-int` | 8-byte big-endian integers, sequential / random | Hyperion §4.4 |
//! | `az`, `az2` | item-user-time / user-item-time tuples, ~40 B, skewed ids | Wormhole Az1/Az2 |
//! | `url` | URLs, ~80 B, shared scheme/host/path prefixes | Wormhole Url |
//! | `ngram` | word 2- and 3-grams with a year, ~23 B | Hyperion §4.3 |
//! | `fb-usr` … `fb-sys` | key sizes of Facebook's Memcached pools | Atikoglu et al. (see `facebook`) |
//! | `file:PATH` | one key per line, deduplicated, shuffled with the seed | real key sets |
//! | `sorted:NAME` | NAME's keys, the loaded ones in ascending byte order | Hyperion Table 1 |
//! | `stream:rand-int`, `stream:seq-int`, `stream:ngram` | key `i` computed from `i`, none stored | scale runs (`stream`) |
//!
//! Every set is a pure function of (name, seed, scale), where the scale is the number of
//! keys to load: key `i` does not depend on how many keys are generated, so the first `N` keys (the loaded ones) are the same whatever extra keys a
//! workload needs for inserts or negative lookups. Keys are distinct (duplicates are dropped
//! as they are generated) and in random order, except `seq-int`, whose order is the point.
//!
//! `sorted:NAME` loads the same keys as `NAME` in ascending byte order (Hyperion's sorted
//! insertion order, §4.3): the first `scale` keys (the loaded ones) are sorted, the keys
//! after them (absent keys for `lookup-neg`, fresh keys for inserts) stay as `NAME` has
//! them. Key `i` then depends on the scale, but still not on how many extra keys are
//! generated; workloads pick keys by position with their distribution, so uniform reads
//! stay uniform over the same loaded set.
//!
//! `stream:NAME` sets are key streams (`stream`): nothing is generated or stored ahead,
//! key `i` is computed from `i` whenever a workload needs it, so the harness's key memory
//! does not grow with the key count (a stored `rand-8` set costs 16 bytes a key; a billion
//! keys would fill the machine before the index did). The names say "stream" so a record
//! never confuses a stream's keys with the stored set of the same family: `rand-int` and
//! `stream:rand-int` hold different keys (both random 64-bit integers).

mod az;
mod file;
mod ints;
mod keyset;
mod ngram;
mod random;
mod stats;
mod stream;
mod url;
mod words;

use std::path::PathBuf;

#[cfg(test)]
pub(crate) use keyset::Builder as KeySetBuilder;
pub(crate) use keyset::KeySet;
pub(crate) use stats::stats;
pub(crate) use stream::{KeyBuf, StreamKind};

use crate::progress::Progress;
use crate::rng::Rng;
use keyset::Builder;

/// A key generator: appends one candidate key to the buffer, drawing from the generator.
type KeyGen = Box<dyn FnMut(&mut Rng, &mut Vec<u8>)>;

/// A dataset name, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Spec {
    /// Random bytes of a fixed length.
    Random(usize),
    /// Random L-byte keys whose last 4 bytes are distinct (Wormhole's K_short).
    KShort(usize),
    /// K_short's keys with the first L−4 bytes set to `'0'` (Wormhole's K_long).
    KLong(usize),
    /// 8-byte big-endian integers 0, 1, 2, … in that order.
    SeqInt,
    /// Random 8-byte big-endian integers.
    RandInt,
    /// Item-user-time review tuples (Az1).
    Az,
    /// User-item-time review tuples (Az2).
    Az2,
    /// URLs.
    Url,
    /// Word n-grams with a year.
    Ngram,
    /// Keys from a file, one per line.
    File(PathBuf),
    /// Keys sized like a Facebook Memcached pool's.
    Facebook(crate::facebook::Trace),
    /// Another dataset's keys with the loaded ones in ascending order (`sorted:NAME`).
    Sorted(Box<Spec>),
    /// A key stream (`stream:NAME`): key `i` computed from `i`, nothing stored.
    Stream(StreamKind),
}

/// The names `datasets` lists (besides the parameterised `rand-N`, `kshort-L`, `klong-L`
/// and `file:PATH`).
pub(crate) const LISTED: &[&str] = &[
    "rand-8",
    "rand-16",
    "k3",
    "k4",
    "k6",
    "k8",
    "k10",
    "kshort-16",
    "klong-16",
    "seq-int",
    "rand-int",
    "az",
    "az2",
    "url",
    "ngram",
    "stream:rand-int",
    "stream:seq-int",
    "stream:ngram",
];

/// Longest fixed key length a generated dataset accepts (the API's key limit).
const MAX_LEN: usize = orrery::api::MAX_KEY_LEN;

fn parse_len(s: &str, name: &str, min: usize) -> Result<usize, String> {
    let len: usize = s
        .parse()
        .map_err(|_| format!("bad key length {s:?} in dataset {name:?}"))?;
    if len < min || len > MAX_LEN {
        return Err(format!(
            "key length in dataset {name:?} must be between {min} and {MAX_LEN}, got {len}"
        ));
    }
    Ok(len)
}

impl Spec {
    /// Parses a dataset name.
    pub(crate) fn parse(name: &str) -> Result<Spec, String> {
        if let Some(inner) = name.strip_prefix("sorted:") {
            return match Spec::parse(inner)? {
                Spec::Sorted(_) => Err(format!("{name:?}: sorted: twice")),
                Spec::Stream(_) => Err(format!(
                    "{name:?}: a key stream cannot be sorted (it stores no keys to sort)"
                )),
                s => Ok(Spec::Sorted(Box::new(s))),
            };
        }
        if let Some(family) = name.strip_prefix("stream:") {
            return StreamKind::parse(family).map(Spec::Stream).ok_or_else(|| {
                format!(
                    "unknown key stream {name:?}; known: stream:rand-int, stream:seq-int, \
                     stream:ngram"
                )
            });
        }
        if let Some(path) = name.strip_prefix("file:") {
            if path.is_empty() {
                return Err("file: needs a path, as in file:keys.txt".into());
            }
            return Ok(Spec::File(PathBuf::from(path)));
        }
        Ok(match name {
            "k3" => Spec::Random(8),
            "k4" => Spec::Random(16),
            "k6" => Spec::Random(64),
            "k8" => Spec::Random(256),
            "k10" => Spec::Random(1024),
            "seq-int" => Spec::SeqInt,
            "rand-int" => Spec::RandInt,
            "az" => Spec::Az,
            "az2" => Spec::Az2,
            "url" => Spec::Url,
            "ngram" => Spec::Ngram,
            _ => {
                if let Some(l) = name.strip_prefix("rand-") {
                    Spec::Random(parse_len(l, name, 1)?)
                } else if let Some(l) = name.strip_prefix("kshort-") {
                    Spec::KShort(parse_len(l, name, 4)?)
                } else if let Some(l) = name.strip_prefix("klong-") {
                    Spec::KLong(parse_len(l, name, 4)?)
                } else if let Some(t) = name
                    .strip_prefix("fb-")
                    .and_then(crate::facebook::Trace::parse)
                {
                    Spec::Facebook(t)
                } else {
                    return Err(format!(
                        "unknown dataset {name:?}; known: {}, rand-N, kshort-L, klong-L, file:PATH",
                        LISTED.join(", ")
                    ));
                }
            }
        })
    }

    /// The length of every key when it is fixed.
    pub(crate) fn fixed_len(&self) -> Option<usize> {
        match self {
            Spec::Random(l) | Spec::KShort(l) | Spec::KLong(l) => Some(*l),
            Spec::SeqInt | Spec::RandInt => Some(8),
            Spec::Stream(StreamKind::RandInt | StreamKind::SeqInt) => Some(8),
            Spec::Sorted(s) => s.fixed_len(),
            _ => None,
        }
    }

    /// Whether keys may contain the byte 0x00: binary keys do; the text sets (`az`, `url`,
    /// `ngram`, the Facebook sizes, files of lines) do not.
    pub(crate) fn may_contain_nul(&self) -> bool {
        match self {
            Spec::Random(_) | Spec::KShort(_) | Spec::KLong(_) | Spec::SeqInt | Spec::RandInt => {
                true
            }
            Spec::Stream(k) => *k != StreamKind::Ngram,
            Spec::Az | Spec::Az2 | Spec::Url | Spec::Ngram | Spec::File(_) | Spec::Facebook(_) => {
                false
            }
            Spec::Sorted(s) => s.may_contain_nul(),
        }
    }

    /// A short description for listings.
    pub(crate) fn about(&self) -> String {
        match self {
            Spec::Random(l) => format!("random {l}-byte keys"),
            Spec::KShort(l) => format!("random {l}-byte keys, distinct last 4 bytes"),
            Spec::KLong(l) => format!("kshort-{l} with the first {} bytes '0'", l - 4),
            Spec::SeqInt => "8-byte big-endian 0, 1, 2, ... in order".into(),
            Spec::RandInt => "random 8-byte big-endian integers".into(),
            Spec::Az => "item-user-time review tuples (Az1)".into(),
            Spec::Az2 => "user-item-time review tuples (Az2)".into(),
            Spec::Url => "URLs with shared scheme/host/path prefixes".into(),
            Spec::Ngram => "word 2/3-grams with a year".into(),
            Spec::File(p) => format!("keys from {}", p.display()),
            Spec::Facebook(t) => format!(
                "keys sized like Facebook's {} pool (SLB paper's table: {} GB; load with \
                 --value-size {}, the pool's median)",
                t.params().name.to_uppercase(),
                t.params().paper_table_gb,
                t.params().median_value
            ),
            Spec::Sorted(s) => format!("{}, loaded in ascending order", s.about()),
            Spec::Stream(StreamKind::RandInt) => {
                "random 8-byte big-endian integers, computed (key stream: none stored)".into()
            }
            Spec::Stream(StreamKind::SeqInt) => {
                "8-byte big-endian 0, 1, 2, ... computed (key stream: none stored)".into()
            }
            Spec::Stream(StreamKind::Ngram) => {
                "text keys with ngram's lengths, computed (key stream: none stored)".into()
            }
        }
    }

    /// Generates the first `n` keys of this dataset for `seed`, sized for `scale` loaded
    /// keys (the skewed datasets size their catalogues of items, users, hosts to it).
    pub(crate) fn generate(
        &self,
        n: usize,
        scale: usize,
        seed: u64,
        progress: &Progress,
    ) -> Result<KeySet, String> {
        if let Spec::File(path) = self {
            return file::load(path, n, seed);
        }
        if let Spec::Stream(kind) = self {
            return Ok(KeySet::from_stream(stream::KeyStream::new(*kind, n, seed)));
        }
        if let Spec::Sorted(inner) = self {
            let keys = inner.generate(n, scale, seed, progress)?;
            let loaded = scale.min(keys.len());
            let mut order: Vec<usize> = (0..loaded).collect();
            order.sort_unstable_by(|&a, &b| keys.get(a).cmp(keys.get(b)));
            order.extend(loaded..keys.len());
            return Ok(keys.permuted(&order));
        }
        let label = match self {
            // K_short and K_long share their random stream: the same keys, masked.
            Spec::KShort(l) | Spec::KLong(l) => format!("kshort-{l}"),
            Spec::Random(l) => format!("rand-{l}"),
            Spec::SeqInt => "seq-int".into(),
            Spec::RandInt => "rand-int".into(),
            Spec::Az => "az".into(),
            Spec::Az2 => "az2".into(),
            Spec::Url => "url".into(),
            Spec::Ngram => "ngram".into(),
            Spec::Facebook(t) => t.to_string(),
            Spec::File(_) | Spec::Sorted(_) | Spec::Stream(_) => unreachable!("handled above"),
        };
        let mut rng = Rng::fork(seed, &label, 0);
        let bar = progress.bar(n as u64, &format!("generating {n} keys"));
        let (avg, suffix) = match self {
            Spec::KShort(_) | Spec::KLong(_) => (self.fixed_len().unwrap_or(8), Some(4)),
            Spec::Url => (80, None),
            Spec::Az | Spec::Az2 => (40, None),
            Spec::Ngram => (24, None),
            Spec::Facebook(t) => (crate::facebook::typical_key_len(*t), None),
            _ => (self.fixed_len().unwrap_or(16), None),
        };
        let mut b = Builder::new(n, avg, suffix);
        let mut next_key: KeyGen = match self {
            Spec::Random(l) => random::fixed(*l),
            Spec::KShort(l) => random::kshort(*l),
            Spec::KLong(l) => random::klong(*l),
            Spec::SeqInt => ints::sequential(),
            Spec::RandInt => ints::random(),
            Spec::Az => az::generator(scale, az::Order::ItemUserTime, &mut rng),
            Spec::Az2 => az::generator(scale, az::Order::UserItemTime, &mut rng),
            Spec::Url => url::generator(scale, &mut rng),
            Spec::Ngram => ngram::generator(&mut rng),
            Spec::Facebook(t) => Box::new(crate::facebook::key_generator(*t)),
            Spec::File(_) | Spec::Sorted(_) | Spec::Stream(_) => unreachable!("handled above"),
        };
        while b.len() < n {
            if b.offer(|out| next_key(&mut rng, out))? && b.len().is_multiple_of(65536) {
                bar.set_position(b.len() as u64);
            }
        }
        bar.finish_and_clear();
        Ok(b.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make_keys(name: &str, n: usize, seed: u64) -> KeySet {
        Spec::parse(name)
            .unwrap()
            .generate(n, 1000, seed, &Progress::hidden())
            .unwrap()
    }

    fn keys(s: &KeySet) -> Vec<Vec<u8>> {
        let mut buf = [0u8; stream::MAX_LEN];
        (0..s.len()).map(|i| s.key(i, &mut buf).to_vec()).collect()
    }

    #[test]
    fn every_listed_dataset_is_deterministic_and_prefix_stable() {
        for name in LISTED {
            let a = make_keys(name, 3000, 11);
            let b = make_keys(name, 3000, 11);
            let c = make_keys(name, 1000, 11);
            let d = make_keys(name, 1000, 12);
            assert_eq!(a.len(), 3000, "{name}");
            assert_eq!(keys(&a), keys(&b), "{name}: same seed, same keys");
            assert_eq!(keys(&a)[..1000], keys(&c)[..], "{name}: prefix-stable");
            if !name.ends_with("seq-int") {
                assert_ne!(keys(&c), keys(&d), "{name}: seed changes keys");
            }
            let mut sorted = keys(&a);
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), 3000, "{name}: keys are distinct");
        }
    }

    #[test]
    fn lengths_match_the_papers() {
        for (name, lo, hi) in [
            ("az", 34.0, 44.0),
            ("az2", 34.0, 44.0),
            ("url", 70.0, 90.0),
            ("ngram", 19.0, 27.0),
        ] {
            let s = stats(&make_keys(name, 20_000, 5));
            assert!(
                (lo..=hi).contains(&s.avg_len),
                "{name}: average length {} outside {lo}..{hi}",
                s.avg_len
            );
            assert!(s.avg_lcp > 4.0, "{name}: keys should share prefixes");
        }
        assert_eq!(stats(&make_keys("k6", 100, 1)).avg_len, 64.0);
        let r8 = stats(&make_keys("rand-8", 20_000, 1));
        assert!(r8.avg_lcp < 3.0);
    }

    #[test]
    fn klong_masks_kshort() {
        let s = make_keys("kshort-12", 500, 9);
        let l = make_keys("klong-12", 500, 9);
        for i in 0..500 {
            assert_eq!(&l.get(i)[..8], b"00000000");
            assert_eq!(l.get(i)[8..], s.get(i)[8..]);
        }
    }

    #[test]
    fn seq_int_is_sequential_big_endian() {
        let s = make_keys("seq-int", 300, 1);
        for i in 0..300 {
            assert_eq!(s.get(i), orrery::api::u64_key(i as u64));
        }
    }

    /// `sorted:NAME` holds NAME's loaded keys in ascending order, and the extra keys after
    /// them unchanged.
    #[test]
    fn sorted_loads_the_same_keys_in_order() {
        let make = |name: &str| {
            Spec::parse(name)
                .unwrap()
                .generate(3000, 1000, 7, &Progress::hidden())
                .unwrap()
        };
        let (plain, sorted) = (keys(&make("ngram")), keys(&make("sorted:ngram")));
        let mut want = plain[..1000].to_vec();
        want.sort();
        assert_ne!(plain[..1000], want[..], "ngram is not generated in order");
        assert_eq!(sorted[..1000], want[..]);
        assert_eq!(sorted[1000..], plain[1000..]);
        let spec = Spec::parse("sorted:rand-int").unwrap();
        assert_eq!(spec.fixed_len(), Some(8));
        assert!(spec.may_contain_nul());
        assert!(!Spec::parse("sorted:url").unwrap().may_contain_nul());
        assert!(Spec::parse("sorted:sorted:url").is_err());
        assert!(
            Spec::parse("sorted:nope")
                .unwrap_err()
                .contains("unknown dataset")
        );
    }

    #[test]
    fn bad_names_are_errors() {
        assert!(Spec::parse("nope").unwrap_err().contains("unknown dataset"));
        assert!(Spec::parse("rand-0").unwrap_err().contains("between 1"));
        assert!(Spec::parse("klong-3").unwrap_err().contains("between 4"));
        assert!(
            Spec::parse("rand-x")
                .unwrap_err()
                .contains("bad key length")
        );
        assert!(Spec::parse("file:").is_err());
        assert!(
            Spec::parse("stream:url")
                .unwrap_err()
                .contains("unknown key stream")
        );
        assert!(Spec::parse("sorted:stream:seq-int").is_err());
        assert_eq!(Spec::parse("k10"), Ok(Spec::Random(1024)));
    }

    #[test]
    fn tiny_key_spaces_report_exhaustion() {
        let e = Spec::parse("rand-1")
            .unwrap()
            .generate(300, 300, 1, &Progress::hidden())
            .unwrap_err();
        assert!(e.contains("ran out of distinct keys"), "{e}");
    }
}
