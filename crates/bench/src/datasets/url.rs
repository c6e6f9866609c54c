//! `url`: URLs like Wormhole's MemeTracker keyset (~80 B).
//!
//! `scheme://[www.]host.tld/section[/sub]/[yyyy/mm/dd/]slug[.html|.php?id=N]`. Hosts are
//! drawn zipfian (a few big sites hold most pages), sections zipfian per host, slugs from a
//! zipfian word vocabulary; dates fall in Aug 2008 – Apr 2009 as in MemeTracker. Sorted
//! neighbours therefore share the scheme, host and often the section: long common prefixes.

use super::KeyGen;
use super::words::word;
use crate::dist::Zipf;
use crate::rng::{Rng, mix64};

const TLDS: &[&str] = &[
    ".com", ".com", ".com", ".com", ".com", ".org", ".net", ".co.uk", ".de", ".info",
];

fn host(rank: u64, salt: u64, out: &mut Vec<u8>) {
    let h = mix64(rank ^ salt ^ 0x4057);
    if h % 10 < 6 {
        out.extend_from_slice(b"www.");
    }
    word(mix64(h) % 5000, salt ^ 1, out);
    if (h >> 8).is_multiple_of(3) {
        out.push(b'-');
        word(mix64(h ^ 2) % 5000, salt ^ 1, out);
    } else if (h >> 8) % 3 == 1 {
        word(mix64(h ^ 3) % 5000, salt ^ 1, out);
    }
    out.extend_from_slice(TLDS[(h >> 16) as usize % TLDS.len()].as_bytes());
}

/// A generator of URL keys for a dataset of about `n` keys.
pub(super) fn generator(n: usize, rng: &mut Rng) -> KeyGen {
    let hosts = Zipf::new((n as u64 / 40).max(50), 0.9);
    let sections = Zipf::new(40, 0.9);
    let vocab = Zipf::new(50_000, 0.8);
    let salt = rng.next_u64();
    Box::new(move |rng, out| {
        let host_rank = hosts.sample(rng.f64());
        out.extend_from_slice(if rng.below(5) == 0 {
            b"https://"
        } else {
            b"http://"
        });
        host(host_rank, salt, out);
        out.push(b'/');
        let section = mix64(host_rank ^ sections.sample(rng.f64())) % 3000;
        word(section, salt ^ 2, out);
        if rng.below(3) == 0 {
            out.push(b'/');
            word(
                mix64(section ^ sections.sample(rng.f64())) % 3000,
                salt ^ 2,
                out,
            );
        }
        out.push(b'/');
        if rng.below(2) == 0 {
            let day = rng.below(270);
            let (m, d) = if day < 153 {
                (8 + day / 31, 1 + day % 31)
            } else {
                (1 + (day - 153) / 30, 1 + (day - 153) % 30)
            };
            let y = if day < 153 { 2008 } else { 2009 };
            out.extend_from_slice(format!("{y}/{m:02}/{d:02}/").as_bytes());
        }
        let words = rng.range_incl(2, 6);
        for i in 0..words {
            if i > 0 {
                out.push(b'-');
            }
            word(vocab.sample(rng.f64()), salt ^ 3, out);
        }
        match rng.below(10) {
            0..=3 => out.extend_from_slice(b".html"),
            4 => out.extend_from_slice(format!(".php?id={}", rng.below(100_000)).as_bytes()),
            _ => {}
        }
    })
}
