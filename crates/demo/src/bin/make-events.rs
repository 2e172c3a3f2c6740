//! `make events`: writes the sample Lambda events into `events/`, signed now.
//!
//! ```text
//! make-events [--dir DIR]     # write the files (default: events/ at the workspace root)
//! make-events --readme-table  # print the README's table of files and expected answers
//! ```
//! Stripe and Standard Webhooks events carry a signed timestamp and are refused 300 s after
//! they were generated: run it again before `cargo lambda invoke`-ing them.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use demo::events;

/// Writes the sample Lambda events (API Gateway requests for the receiver, SQS batches for the
/// consumer), signed now.
#[derive(Parser, Debug)]
#[command(name = "make-events")]
struct Cli {
    /// Where to write them [default: events/ at the workspace root].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print the events table of docs/local-development.md instead of writing files.
    #[arg(long)]
    readme_table: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let samples = events::generate(devstack::testkit::now_ms() / 1000);
    if cli.readme_table {
        print!("{}", events::readme_table(&samples));
        return ExitCode::SUCCESS;
    }
    let dir = cli.dir.unwrap_or_else(events::events_dir);
    if let Err(e) = events::write_all(&dir, &samples) {
        eprintln!("make-events: {e:#}");
        return ExitCode::FAILURE;
    }
    let stale: Vec<&str> = samples
        .iter()
        .filter(|s| s.timestamped)
        .map(|s| s.file.as_str())
        .collect();
    println!(
        "wrote {} events to {}; {} of them carry a signed timestamp and are refused after {} s: {}",
        samples.len(),
        if dir == events::events_dir() {
            "events/".to_owned()
        } else {
            dir.display().to_string()
        },
        stale.len(),
        events::STALE_AFTER_S,
        stale.join(", ")
    );
    ExitCode::SUCCESS
}
