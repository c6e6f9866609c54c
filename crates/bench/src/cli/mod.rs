//! The command line: `run`, `datasets`, `indexes`, `workloads`, `suites`, `machine`,
//! `report`, `lab`, `torture`, `resp-zipf`.
//!
//! Every bad input (unknown name, unsupported pairing, bad number, unreadable file) ends
//! with a one-line `error:` message on stderr and a non-zero exit status: 2 for command-line
//! syntax (clap), 1 for everything else.
//!
//! | module | holds |
//! |---|---|
//! | `args` | the grammar: subcommands and options (clap) |
//! | `list` | `datasets`, `indexes`, `workloads`, `suites` |
//! | `machine` | `machine` |
//! | `run` | `run`: the matrix or suite, the parent and the child of an isolated run |
//!
//! `report`, `lab`, `torture` and `resp-zipf` are their own modules ([`crate::report`],
//! [`crate::lab`], [`crate::torture`], [`crate::resp_zipf`]); this one
//! parses and dispatches.

mod args;
mod list;
mod machine;
mod run;

#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use args::{Cli, Cmd};

use crate::{lab, report, resp_zipf, torture};

/// Runs the command line `args` (program name first); returns the exit status.
pub(crate) fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match dispatch(cli.cmd, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Parses the command line `args` (program name first), noting which `run` options were
/// given rather than defaulted.
fn parse(args: &[OsString]) -> Result<Cli, clap::Error> {
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    if let (Cmd::Run(a), Some(m)) = (&mut cli.cmd, matches.subcommand_matches("run")) {
        a.given = m
            .ids()
            .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect();
    }
    Ok(cli)
}

/// Runs `cmd`, parsed from `args` (program name first; isolated runs hand the same
/// arguments to their child processes).
fn dispatch(cmd: Cmd, args: &[OsString]) -> Result<(), String> {
    match cmd {
        Cmd::Run(a) => run::run(*a, args.get(1..).unwrap_or_default()),
        Cmd::Datasets(a) => list::datasets(a),
        Cmd::Indexes => list::indexes(),
        Cmd::Workloads => list::workloads(),
        Cmd::Suites { suites } => list::suites(suites.as_deref()),
        Cmd::Machine(a) => machine::main(a),
        Cmd::Report(a) => report::run(&a),
        Cmd::Lab { name, args } => lab::main(name.as_deref(), &args),
        Cmd::Torture(a) => torture::main(a),
        Cmd::RespZipf(a) => resp_zipf::main(a),
    }
}
