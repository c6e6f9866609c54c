//! Progress bars on stderr (`indicatif`), switched off by `--quiet`.
//!
//! Bars draw only when stderr is a terminal (indicatif hides them otherwise), so logs and
//! CI output stay clean; results go to stdout either way. A child process of an isolated
//! run (`crate::isolate`) writes to a pipe its parent forwards to a terminal: it draws its
//! bars with plain ANSI sequences at the width the parent passed ([`Progress::for_parent`]).

use std::io::Write;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// Makes progress bars, or hidden ones when quiet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    quiet: bool,
    /// Draw on stderr even though it is no terminal, this many columns wide.
    forced_width: Option<u16>,
}

impl Progress {
    /// Bars shown unless `quiet`.
    pub(crate) fn new(quiet: bool) -> Progress {
        Progress {
            quiet,
            forced_width: None,
        }
    }

    /// Bars drawn on stderr, a pipe to a parent process that shows them on a terminal
    /// `width` columns wide.
    pub(crate) fn for_parent(width: u16) -> Progress {
        Progress {
            quiet: false,
            forced_width: Some(width),
        }
    }

    /// Never shows anything (tests).
    #[cfg(test)]
    pub(crate) fn hidden() -> Progress {
        Progress::new(true)
    }

    /// A bar counting to `len`, labelled `msg`.
    pub(crate) fn bar(&self, len: u64, msg: &str) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let target = match self.forced_width {
            Some(width) => ProgressDrawTarget::term_like(Box::new(AnsiStderr { width })),
            None => ProgressDrawTarget::stderr(),
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
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

/// Stderr driven with ANSI cursor sequences, whatever it is connected to.
#[derive(Debug)]
struct AnsiStderr {
    width: u16,
}

impl AnsiStderr {
    fn put(&self, s: &str) -> std::io::Result<()> {
        std::io::stderr().lock().write_all(s.as_bytes())
    }
}

impl AnsiStderr {
    /// Moves the cursor `n` cells in the direction of the CSI final byte `dir` (none: no-op).
    fn cursor(&self, n: usize, dir: char) -> std::io::Result<()> {
        if n == 0 {
            Ok(())
        } else {
            self.put(&format!("\x1b[{n}{dir}"))
        }
    }
}

impl TermLike for AnsiStderr {
    fn width(&self) -> u16 {
        self.width
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'D')
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(&format!("{s}\n"))
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.put("\r\x1b[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().lock().flush()
    }
}
