//! The `orrery-server` binary: parses the command line and runs the server.

use std::process::ExitCode;

fn main() -> ExitCode {
    match orrery_server::Config::from_args(std::env::args().skip(1)) {
        Ok(None) => {
            print!("{}", orrery_server::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Some(config)) => match orrery_server::run(config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("orrery-server: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("orrery-server: {e}");
            ExitCode::from(2)
        }
    }
}
