//! JSON lines: one object per result, appended to a file.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Record;

/// Appends records to a JSON-lines file.
pub(crate) struct JsonSink {
    path: PathBuf,
}

impl JsonSink {
    /// A sink appending to `path` (created if missing; its directory must exist).
    pub(crate) fn new(path: &Path) -> Result<JsonSink, String> {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open {} for --json: {e}", path.display()))?;
        Ok(JsonSink {
            path: path.to_path_buf(),
        })
    }

    /// Appends one record (the file is reopened so an interrupted run keeps what it wrote).
    pub(crate) fn write(&self, r: &Record) -> Result<(), String> {
        let line = serde_json::to_string(r).map_err(|e| e.to_string())?;
        let mut f = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| format!("cannot append to {}: {e}", self.path.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("cannot append to {}: {e}", self.path.display()))
    }
}

/// Reads every record of a JSON-lines file (blank lines skipped).
pub(crate) fn read(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: not a result line: {e}", path.display(), i + 1))
        })
        .collect()
}
