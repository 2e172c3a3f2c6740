//! `make events`: writes the sample Lambda events into `events/`, signed now.
//!
//! ```text
//! make-events [--dir DIR]     # write the files (default: events/ at the workspace root)
//! make-events --readme-table  # print the README's table of files and expected answers
//! ```
//! Stripe and Standard Webhooks events carry a signed timestamp and are refused 300 s after
//! they were generated: run it again before `cargo lambda invoke`-ing them.

use std::process::ExitCode;

use devstack::demo::events;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut dir = events::events_dir();
    let now = devstack::testkit::now_ms() / 1000;
    let samples = events::generate(now);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => match args.next() {
                Some(d) => dir = d.into(),
                None => {
                    eprintln!("--dir needs a directory");
                    return ExitCode::from(2);
                }
            },
            "--readme-table" => {
                print!("{}", events::readme_table(&samples));
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("usage: make-events [--dir DIR] [--readme-table] (not {other})");
                return ExitCode::from(2);
            }
        }
    }
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
