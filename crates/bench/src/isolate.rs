//! Process isolation for `run`: every group of cells in a fresh process.
//!
//! Indexes measured one after another in one process do not start equal: the heap left
//! fragmented by earlier indexes, the transparent-huge-page state of memory they returned,
//! the page cache and the allocator's arenas all carry over, and the late indexes can
//! measure low (measured: `docs/results/wormhole.md`, "Lookups at 10M keys", on congee).
//! So by default `run` measures each [`Group`] — one index on one dataset at one key
//! count, everything that shares a loaded index — in a child process of its own:
//!
//! 1. The parent validates the whole matrix, reads (or measures) the machine description
//!    once, prints the header, and lists the groups ([`crate::matrix::Plan::groups`]).
//! 2. For each group in order it re-executes its own binary (`std::env::current_exe()`)
//!    with the parent's command line plus the hidden [`CHILD_FLAG`] naming the group and,
//!    if there is one, the machine description as JSON ([`MACHINE_FLAG`]). The child builds
//!    the same plans from the same arguments (so the same key set, seeds and operation
//!    streams as an in-process run), runs only that group
//!    ([`crate::matrix::Plan::run_group`]) and writes each result to stdout as one JSON
//!    line behind [`RECORD_PREFIX`]. Its other stdout lines are passed through.
//! 3. The parent prints each result's table row and appends it to `--json` as it arrives,
//!    exactly as in-process runs do, so table and JSON keep the in-process order. The
//!    child's stderr (warnings, errors, progress bars) is forwarded as it comes, and its
//!    tail is kept for error messages. When the parent's stderr is a terminal the child
//!    draws its bars for it ([`TTY_ENV`], see `crate::progress`).
//! 4. A child that fails — an error, a panic, a kill by a signal (the OOM killer), or an
//!    exit without all its results — ends the run with an error naming the group, the
//!    child's PID and exit status and the last lines of its stderr: the same policy as an
//!    error in an in-process run, which also stops the run after the results so far.
//!
//! The child's environment sets orrery-core's epoch pin barrier from the plan's
//! `--epoch-pin` (`crate::settings::Settings::epoch_pin`), which the library reads once per
//! process; each record names the barrier its process really used.
//!
//! Nothing inside a group changes: the child measures with the same code (`matrix`,
//! `exec`) as `--in-process`; only the process boundary moves. Every result records the PID
//! that measured it and whether it was isolated (`pid`, `isolated` in the JSON).
//!
//! Test hook: a child whose group's index is named by [`FAIL_ENV`] fails on purpose
//! (`NAME` panics, `NAME:abort` aborts, `NAME:exit` exits with status 3 and no results).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, ExitStatus, Stdio};

use crate::machine::Machine;
use crate::matrix::Group;
use crate::output::Record;
use crate::settings::EpochPin;

/// Hidden `run` option of a child: the group to run (`PLAN:KEYS:DATASET:INDEX`).
pub(crate) const CHILD_FLAG: &str = "--child-group";
/// Hidden `run` option of a child: the parent's machine description, JSON.
pub(crate) const MACHINE_FLAG: &str = "--child-machine";
/// Prefix of a child's stdout line carrying one result as JSON.
pub(crate) const RECORD_PREFIX: &str = "@orrery-bench-record ";
/// Test hook: a child whose index has this name fails (see the module docs).
pub(crate) const FAIL_ENV: &str = "ORRERY_BENCH_FAIL_CHILD";
/// Set by the parent for its children when its stderr is a terminal: the terminal width,
/// for the children's progress bars (their stderr is a pipe to the parent).
pub(crate) const TTY_ENV: &str = "ORRERY_BENCH_CHILD_TTY_WIDTH";

/// Bytes of a child's stderr kept for the error message of a failing child.
const TAIL_BYTES: usize = 16 * 1024;
/// Lines of that tail quoted in the error message.
const TAIL_LINES: usize = 20;

/// Where a group is in the command line's plans: what a child is told to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GroupId {
    /// Position of the plan (a suite has several matrices).
    pub(crate) plan: usize,
    /// Loaded key count.
    pub(crate) keys: u64,
    /// Position of the dataset in the plan.
    pub(crate) dataset: usize,
    /// Position of the index in the plan.
    pub(crate) index: usize,
}

impl GroupId {
    /// The id of group `g` of plan number `plan`.
    pub(crate) fn of(plan: usize, g: &Group) -> GroupId {
        GroupId {
            plan,
            keys: g.keys,
            dataset: g.dataset,
            index: g.index,
        }
    }

    /// The [`CHILD_FLAG`] argument.
    pub(crate) fn to_arg(self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.plan, self.keys, self.dataset, self.index
        )
    }

    /// Parses a [`CHILD_FLAG`] argument.
    pub(crate) fn parse(s: &str) -> Result<GroupId, String> {
        let bad = || format!("bad {CHILD_FLAG} {s:?} (expected PLAN:KEYS:DATASET:INDEX)");
        let parts: Vec<&str> = s.split(':').collect();
        let [plan, keys, dataset, index] = parts[..] else {
            return Err(bad());
        };
        Ok(GroupId {
            plan: plan.parse().map_err(|_| bad())?,
            keys: keys.parse().map_err(|_| bad())?,
            dataset: dataset.parse().map_err(|_| bad())?,
            index: index.parse().map_err(|_| bad())?,
        })
    }
}

/// In a child: hands one result to the parent (one line on stdout).
pub(crate) fn send(r: &Record) -> Result<(), String> {
    let json = serde_json::to_string(r).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{RECORD_PREFIX}{json}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot send a result to the parent process: {e}"))
}

/// In a child, before it measures: the [`FAIL_ENV`] test hook for index `name`.
pub(crate) fn fail_hook(name: &str) {
    let Ok(v) = std::env::var(FAIL_ENV) else {
        return;
    };
    let (target, how) = v.split_once(':').unwrap_or((&v, "panic"));
    if target != name {
        return;
    }
    match how {
        "abort" => std::process::abort(),
        "exit" => std::process::exit(3),
        _ => panic!("{FAIL_ENV} test hook: the child measuring {name} fails on purpose"),
    }
}

/// The width of the terminal on stderr, if stderr is one.
fn stderr_tty_width() -> Option<u16> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the valid pointer to `ws`.
    let r = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) };
    Some(if r == 0 && ws.ws_col > 0 {
        ws.ws_col
    } else {
        80
    })
}

/// Runs group `g` (`id` in the plans of `args`, the parent's command line without the
/// program name) in a child process with epoch pin barrier `pin`, handing its results to
/// `emit` in order. `quiet`: the parent shows no progress.
pub(crate) fn run_group(
    args: &[OsString],
    id: GroupId,
    g: &Group,
    pin: EpochPin,
    machine: Option<&Machine>,
    quiet: bool,
    emit: &mut dyn FnMut(Record) -> Result<(), String>,
) -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("{}: cannot find this program to re-execute: {e}", g.label))?;
    let mut cmd = Command::new(&exe);
    cmd.args(args).arg(CHILD_FLAG).arg(id.to_arg());
    if let Some(m) = machine {
        cmd.arg(MACHINE_FLAG)
            .arg(serde_json::to_string(m).map_err(|e| e.to_string())?);
    }
    cmd.env_remove(TTY_ENV);
    // orrery-core reads its pin barrier from the environment once per process: the child's
    // follows `--epoch-pin`, whatever the parent's environment says.
    match pin {
        EpochPin::Asymmetric => cmd.env(orrery::sync::epoch::ASYMMETRIC_ENV, "1"),
        EpochPin::Fenced => cmd.env_remove(orrery::sync::epoch::ASYMMETRIC_ENV),
    };
    if !quiet && let Some(w) = stderr_tty_width() {
        cmd.env(TTY_ENV, w.to_string());
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{}: cannot start {}: {e}", g.label, exe.display()))?;
    let pid = child.id();
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("{}: the child's output pipes are missing", g.label));
    };
    // Forward the child's stderr as it comes (bars redraw without newlines: by chunks),
    // keeping its tail.
    let forward = std::thread::spawn(move || {
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(&buf[..n]);
                    let _ = err.flush();
                    tail.extend_from_slice(&buf[..n]);
                    if tail.len() > 2 * TAIL_BYTES {
                        tail.drain(..tail.len() - TAIL_BYTES);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        tail
    });
    let mut got = 0usize;
    // A load stopped at the memory ceiling: the child sends its record and skips the cells
    // that needed the whole load, so fewer records than cells is the expected outcome.
    let mut stopped = false;
    let mut failure = None;
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                failure = Some(format!("cannot read its results: {e}"));
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let Some(json) = text.strip_prefix(RECORD_PREFIX) else {
            // Not a result: something the index or a library printed. Pass it on.
            println!("{text}");
            continue;
        };
        match serde_json::from_str::<Record>(json) {
            Ok(r) => {
                got += 1;
                stopped |= r.held_keys.is_some();
                if let Err(e) = emit(r) {
                    failure = Some(e);
                    break;
                }
            }
            Err(e) => {
                failure = Some(format!("it sent an unreadable result ({e})"));
                break;
            }
        }
    }
    if failure.is_some() {
        // The run stops here, as an in-process run stops at its first error.
        let _ = child.kill();
    }
    drop(reader);
    let status = child.wait();
    let tail = forward.join().unwrap_or_default();
    let status = status.map_err(|e| format!("{}: cannot wait for pid {pid}: {e}", g.label))?;
    if let Some(f) = failure {
        return Err(format!("{}: {f} (process {pid})", g.label));
    }
    if !status.success() {
        return Err(format!(
            "{}: its process (pid {pid}) {}; {}",
            g.label,
            describe(status),
            quote_tail(&tail)
        ));
    }
    if got != g.cells && !(stopped && got < g.cells) {
        return Err(format!(
            "{}: its process (pid {pid}) exited successfully but sent {got} of {} results; {}",
            g.label,
            g.cells,
            quote_tail(&tail)
        ));
    }
    Ok(())
}

/// How a child ended, for people.
fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let what = match sig {
                libc::SIGKILL => " (SIGKILL: the kernel's OOM killer, or someone, killed it)",
                libc::SIGABRT => " (SIGABRT: an abort, e.g. a failed allocation)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGBUS => " (SIGBUS)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGTERM => " (SIGTERM)",
                _ => "",
            };
            return format!("was killed by signal {sig}{what}");
        }
    }
    match status.code() {
        Some(101) => "panicked (exit status 101)".into(),
        Some(c) => format!("exited with status {c}"),
        None => format!("ended: {status}"),
    }
}

/// The last lines of a child's stderr, for an error message (progress-bar redraws, which
/// carry terminal escapes, left out).
fn quote_tail(tail: &[u8]) -> String {
    let text = String::from_utf8_lossy(tail);
    let lines: Vec<&str> = text
        .split(['\n', '\r'])
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.contains('\x1b'))
        .collect();
    if lines.is_empty() {
        return "its stderr was empty".into();
    }
    // A panic's message comes before its backtrace (RUST_BACKTRACE): quote from there.
    let from = match lines.iter().rposition(|l| l.contains(" panicked at ")) {
        Some(p) if p + 2 * TAIL_LINES >= lines.len() => p,
        _ => lines.len().saturating_sub(TAIL_LINES),
    };
    let to = lines.len().min(from + 2 * TAIL_LINES);
    format!(
        "the end of its stderr:\n    {}",
        lines[from..to].join("\n    ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_id_round_trips_and_rejects_garbage() {
        let id = GroupId {
            plan: 2,
            keys: 10_000_000,
            dataset: 1,
            index: 4,
        };
        assert_eq!(GroupId::parse(&id.to_arg()), Ok(id));
        for bad in ["", "1:2:3", "1:2:3:4:5", "a:2:3:4", "1:-2:3:4"] {
            assert!(
                GroupId::parse(bad).unwrap_err().contains(CHILD_FLAG),
                "{bad}"
            );
        }
    }

    #[test]
    fn tail_keeps_the_last_plain_lines() {
        let mut s = String::new();
        for i in 0..30 {
            s.push_str(&format!("line {i}\n"));
        }
        s.push_str("\x1b[2Kbar redraw\r\n");
        let q = quote_tail(s.as_bytes());
        assert!(q.contains("line 29") && q.contains("line 10"), "{q}");
        assert!(!q.contains("line 9\n") && !q.contains("bar redraw"), "{q}");
        assert_eq!(quote_tail(b""), "its stderr was empty");
        // A panic message followed by a long backtrace stays quoted.
        let mut p = String::from("noise\nthread 'main' panicked at x.rs:1:1:\nboom\n");
        for i in 0..30 {
            p.push_str(&format!("  {i}: frame\n"));
        }
        let q = quote_tail(p.as_bytes());
        assert!(q.contains("panicked at") && q.contains("boom"), "{q}");
        assert!(!q.contains("noise"), "{q}");
    }
}
