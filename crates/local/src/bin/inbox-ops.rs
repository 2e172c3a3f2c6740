//! `inbox-ops`: dead-letter redrive, why a message was dead-lettered, ledger look-up.
//! Logic in `local::ops`.
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    local::ops::main(std::env::args().skip(1).collect()).await
}
