//! `inbox-ops`: parses the command line and runs it (see [`inbox_ops::cli`]).
use std::process::ExitCode;

use clap::Parser as _;
use inbox_ops::cli::Cli;

#[tokio::main]
async fn main() -> ExitCode {
    match Cli::try_parse() {
        Ok(cli) => cli.run().await,
        // Help and version on stdout with 0; a usage error on stderr with 1.
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}
