//! `inbox-ops`: the audit, dead-letter redrive, why a message was dead-lettered, ledger look-up.
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("audit") {
        return match inbox_ops::audit::run(&args[1..], std::env::var("WEBHOOK_SOURCES").ok()) {
            Ok(report) => {
                print!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("audit: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    inbox_ops::ops::main(args).await
}
