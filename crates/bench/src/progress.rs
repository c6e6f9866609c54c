//! Progress bars on stderr (`indicatif`), switched off by `--quiet`.
//!
//! Bars draw only when stderr is a terminal (indicatif hides them otherwise), so logs and
//! CI output stay clean; results go to stdout either way.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Makes progress bars, or hidden ones when quiet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    quiet: bool,
}

impl Progress {
    /// Bars shown unless `quiet`.
    pub(crate) fn new(quiet: bool) -> Progress {
        Progress { quiet }
    }

    /// Never shows anything (tests).
    #[cfg(test)]
    pub(crate) fn hidden() -> Progress {
        Progress { quiet: true }
    }

    /// A bar counting to `len`, labelled `msg`.
    pub(crate) fn bar(&self, len: u64, msg: &str) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:40!} [{bar:30}] {percent:>3}% {elapsed:>4} eta {eta:>4}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(msg.to_string());
        bar
    }

    /// A status line on stderr (not shown when quiet).
    pub(crate) fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }
}
