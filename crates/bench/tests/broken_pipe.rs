//! Regression test: `orrery-bench run ... | head` panicked ("failed printing to stdout:
//! Broken pipe") when the reader of its output went away. It must end quietly instead.

use std::io::Read;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_orrery-bench");

#[test]
fn closed_stdout_ends_quietly() {
    let mut child = Command::new(BIN)
        .args([
            "run",
            "--index",
            "btreemap",
            "--dataset",
            "rand-8",
            "--keys",
            "2000",
            "--ops",
            "2000",
            "--workload",
            "c",
            "--no-machine",
            "--in-process",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Like `| head -c 0`: the reader is gone before the first line is written (the child
    // re-executes itself and builds a dataset first).
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "stderr: {err}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.signal() == Some(libc_sigpipe()),
            "{status:?}; stderr: {err}"
        );
    }
}

/// SIGPIPE's number on Linux and the BSDs.
#[cfg(unix)]
fn libc_sigpipe() -> i32 {
    13
}
