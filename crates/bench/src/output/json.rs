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

#[cfg(test)]
mod tests {
    /// Records written before a field existed still read: `settings`, `split`, `malloc`,
    /// `pid` and `isolated` are absent from older results.
    #[test]
    fn old_records_without_settings_still_read() {
        let dir = std::env::temp_dir().join(format!("orrery-bench-old-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.jsonl");
        let old = r#"{"index":"btreemap","dataset":"rand-8","keys":1000,"value_size":8,"workload":"c","dist":"uniform","threads":1,"ops":1000,"secs":0.001,"mops":1.0,"mops_repeats":[1.0],"mops_cpu":1.0,"mops_cpu_repeats":[1.0],"bytes_per_key":60.0,"rss_bytes_per_key":null,"mem_usage_bytes_per_key":null,"p50_ns":100,"p99_ns":200,"p999_ns":300,"latency":"l","dram_rt_per_op":null,"ns_per_op":1000.0,"cpu_ns_per_op":1000.0,"load_mops":1.0,"load_threads":1,"repeats":1,"seed":42,"loadavg":1.0,"git_rev":"abc","machine":null,"suite":null,"unix_time":1}"#;
        std::fs::write(&path, format!("{old}\n")).unwrap();
        let recs = super::read(&path).unwrap();
        assert_eq!(recs.len(), 1);
        assert!(recs[0].settings.is_none());
        assert!(recs[0].index_stats.is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
