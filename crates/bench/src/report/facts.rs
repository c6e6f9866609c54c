//! What the results ran on and with: the machine, malloc, revisions and load average, and
//! the settings each distinct set of results recorded.

use std::fmt::Write as _;

use crate::output::Record;

/// The machine, malloc, revision and load-average lines of the results.
pub(super) fn machine_section(md: &mut String, recs: &[&Record]) {
    let mut revs: Vec<&str> = recs.iter().map(|r| r.git_rev.as_str()).collect();
    revs.sort();
    revs.dedup();
    let loads: Vec<f64> = recs.iter().filter_map(|r| r.loadavg).collect();
    if let Some(m) = recs.iter().map(|r| &r.machine).find(|m| !m.is_null()) {
        let g = |k: &str| {
            m.get(k)
                .map_or("?".into(), |v| v.to_string().trim_matches('"').to_string())
        };
        let _ = writeln!(
            md,
            "**Machine:** {}, {} cores, {} GiB, kernel {}, THP {}. Dependent random DRAM read: \
             {} ns (4 KiB pages), {} ns (huge pages); best independent-read rate {} ns/read.\n",
            g("cpu"),
            g("cores"),
            g("mem_gib"),
            g("kernel"),
            g("thp"),
            g("lat_4k_ns"),
            g("lat_huge_ns"),
            g("mlp_best_ns")
        );
    }
    let mut mallocs: Vec<&str> = recs.iter().filter_map(|r| r.malloc.as_deref()).collect();
    mallocs.sort();
    mallocs.dedup();
    if !mallocs.is_empty() {
        let _ = writeln!(md, "**Malloc:** {}.\n", mallocs.join("; "));
    }
    let _ = writeln!(md, "**Revisions:** {}.", revs.join(", "));
    if !loads.is_empty() {
        let min = loads.iter().cloned().fold(f64::MAX, f64::min);
        let max = loads.iter().cloned().fold(f64::MIN, f64::max);
        let _ = writeln!(
            md,
            "**1-minute load average while recording:** {min:.1} to {max:.1} (other work on the \
             machine shows here).\n"
        );
    }
}

/// The settings the results ran with (`Record::settings`), one line per distinct set.
pub(super) fn settings_section(md: &mut String, recs: &[&Record]) {
    let mut seen: Vec<String> = Vec::new();
    let mut unrecorded = 0;
    for r in recs {
        match &r.settings {
            Some(s) => {
                let line = s.switches.to_string();
                if !seen.contains(&line) {
                    seen.push(line);
                }
            }
            None => unrecorded += 1,
        }
    }
    let _ = writeln!(md, "Settings:\n");
    for line in &seen {
        let _ = writeln!(md, "- `{line}`");
    }
    if unrecorded > 0 {
        let _ = writeln!(
            md,
            "- {unrecorded} results from before settings were recorded (their switches are unknown)"
        );
    }
    md.push('\n');
}
