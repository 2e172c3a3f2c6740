//! `make audit`: every webhook source against the three questions (what if it arrives twice,
//! which key identifies a repeat, what we return when we fail), with flags. Logic in
//! `local::audit`.
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match local::audit::run(&args, std::env::var("WEBHOOK_SOURCES").ok()) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("audit: {e:#}");
            ExitCode::FAILURE
        }
    }
}
