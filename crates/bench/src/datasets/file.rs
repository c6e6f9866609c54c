//! `file:PATH`: real keys, one per line.
//!
//! Lines are split on `\n` (a trailing `\r` is dropped), empty lines are skipped,
//! duplicates are dropped (first occurrence kept), then the keys are shuffled with the seed
//! so that the load order is random like the papers' shuffled datasets.

use std::path::Path;

use super::KeySet;
use super::keyset::Builder;
use crate::rng::Rng;

/// Loads the first `n` keys (after deduplication and shuffling) of the file at `path`.
pub(super) fn load(path: &Path, n: usize, seed: u64) -> Result<KeySet, String> {
    let data = std::fs::read(path)
        .map_err(|e| format!("cannot read keys from {}: {e}", path.display()))?;
    let mut b = Builder::new(data.len() / 16 + 1, 16, None);
    for line in data.split(|&c| c == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if line.len() > orrery::api::MAX_KEY_LEN {
            return Err(format!(
                "{} holds a key of {} bytes, longer than the limit of {} bytes",
                path.display(),
                line.len(),
                orrery::api::MAX_KEY_LEN
            ));
        }
        b.offer(|v| v.extend_from_slice(line))?;
    }
    let all = b.finish();
    if all.len() < n {
        return Err(format!(
            "{} holds {} distinct keys, but {n} are needed (the keys to load plus those the \
             workload inserts or looks up as absent)",
            path.display(),
            all.len()
        ));
    }
    let mut order: Vec<usize> = (0..all.len()).collect();
    Rng::fork(seed, "file", 0).shuffle(&mut order);
    order.truncate(n);
    Ok(all.permuted(&order))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_keys_are_deduplicated_and_shuffled_deterministically() {
        let dir = std::env::temp_dir().join(format!("orrery-bench-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.txt");
        std::fs::write(&path, b"b\r\na\n\nc\na\nd\n").unwrap();
        let a = load(&path, 4, 1).unwrap();
        let b = load(&path, 4, 1).unwrap();
        let mut ka: Vec<&[u8]> = (0..4).map(|i| a.get(i)).collect();
        let kb: Vec<&[u8]> = (0..4).map(|i| b.get(i)).collect();
        assert_eq!(ka, kb);
        ka.sort();
        assert_eq!(ka, [&b"a"[..], b"b", b"c", b"d"]);
        assert!(
            load(&path, 5, 1)
                .unwrap_err()
                .contains("holds 4 distinct keys")
        );
        assert!(
            load(&dir.join("missing"), 1, 1)
                .unwrap_err()
                .contains("cannot read")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
