//! The files of the log and their format.
//!
//! The log is a chain of files in `--dir`, replayed in order: the *base* `appendonly.aof`,
//! then the *increments* `appendonly.aof.incr.N`, `N+1`, … (consecutive numbers). New
//! frames go to the last file of the chain (the *live* one). A server that never
//! rewrote has the base alone; each rewrite starts a new increment. The layout follows
//! Redis 7's multi-part AOF, without its manifest: a rewritten base names, in its first
//! frame (the record `BASE n`), the first increment that follows it, and so the rename
//! that installs a new base also drops the increments it contains (a base without the
//! record is followed by the increments from 1). Increments older than the base's `n`
//! and temporary files of an interrupted rewrite are deleted at start.
//!
//! Each file:
//!
//! ```text
//! "ORRERYAOF1\n"                        11-byte magic
//! frame*                                one frame per write command
//! frame = len:u32le  crc_len:u32le  crc_payload:u32le  payload[len]
//! ```
//!
//! `crc_len` is the CRC32C of the 4 length bytes and `crc_payload` that of the payload
//! (`orrery::hash::crc32c`). A frame holds all the records of one command, so a command is
//! replayed whole or not at all.
//!

use std::fs::File;
use std::path::{Path, PathBuf};

use orrery::hash::crc32c;

use crate::resp;

/// The file's first bytes.
pub(super) const MAGIC: &[u8] = b"ORRERYAOF1\n";
/// Bytes before a frame's payload.
pub(super) const FRAME_HEADER: usize = 12;
/// The base file's name inside `--dir`.
pub(crate) const FILE_NAME: &str = "appendonly.aof";
/// Between [`FILE_NAME`] and an increment file's number.
pub(super) const INCR_INFIX: &str = ".incr.";
/// How a rewrite's output starts until it is renamed over the base.
pub(super) const TEMP_PREFIX: &str = "temp-rewriteaof-";

/// Appends `payload` as one frame to `out`.
pub(super) fn encode_frame(out: &mut Vec<u8>, payload: &[u8]) {
    let len = (payload.len() as u32).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc32c(&len).to_le_bytes());
    out.extend_from_slice(&crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

pub(super) fn io_err(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("{what} {}: {e}", path.display())
}

/// Syncs directory `dir` (so that a created or renamed file's name is durable).
pub(super) fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot sync directory", dir, e))
}

/// The name of increment file `seq`.
pub(super) fn incr_name(seq: u64) -> String {
    format!("{FILE_NAME}{INCR_INFIX}{seq}")
}

/// The increment files in `dir`, by number, ascending.
pub(super) fn list_incr(dir: &Path) -> Result<Vec<(u64, PathBuf)>, String> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| io_err("cannot list", dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| io_err("cannot list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let seq = name
            .strip_prefix(FILE_NAME)
            .and_then(|r| r.strip_prefix(INCR_INFIX))
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| n > 0 && incr_name(n) == name);
        if let Some(seq) = seq {
            out.push((seq, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

pub(super) fn file_len(path: &Path) -> Result<u64, String> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| io_err("cannot stat", path, e))
}

/// Why a frame could not be read.
pub(super) enum Bad {
    /// The end of the file is a torn write.
    Torn,
    /// Anything else.
    Corrupt(String),
}

/// The increment number a base file's first frame names (`BASE n`), if it has one.
pub(super) fn base_record(data: &[u8]) -> Option<u64> {
    if !data.starts_with(MAGIC) {
        return None;
    }
    let (payload, _) = frame_at(data, MAGIC.len()).ok()?;
    let (args, used) = resp::parse(payload, &record_limits()).ok()??;
    if used != payload.len() || args.len() != 2 || args[0] != b"BASE" {
        return None;
    }
    std::str::from_utf8(&args[1]).ok()?.parse().ok()
}

/// The payload of the frame at `at` and where the next one starts.
pub(super) fn frame_at(data: &[u8], at: usize) -> Result<(&[u8], usize), Bad> {
    let rest = &data[at..];
    if rest.iter().all(|&b| b == 0) {
        return Err(Bad::Torn);
    }
    if rest.len() < FRAME_HEADER {
        return Err(Bad::Torn);
    }
    let word = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
    let (len, crc_len, crc_payload) = (word(0), word(4), word(8));
    if crc32c(&rest[..4]) != crc_len {
        return Err(Bad::Corrupt("a record header fails its checksum".into()));
    }
    let end = FRAME_HEADER + len as usize;
    if rest.len() < end {
        return Err(Bad::Torn);
    }
    let payload = &rest[FRAME_HEADER..end];
    if crc32c(payload) != crc_payload {
        if rest.len() == end {
            return Err(Bad::Torn);
        }
        return Err(Bad::Corrupt("a record fails its checksum".into()));
    }
    Ok((payload, at + end))
}

/// The parser's limits for records (the file was written by us: generous).
pub(super) fn record_limits() -> resp::Limits {
    resp::Limits {
        max_bulk_len: 1 << 32,
        max_multibulk_len: 1 << 30,
        max_inline_len: 64,
    }
}
