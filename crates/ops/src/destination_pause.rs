//! `pause --destination NAME` and `resume --destination NAME`: one destination's switch on the
//! ledger table's pause board (`#destinations`, [`inbox::destination::pause`]), which the
//! consumer reads once per batch; the event source mapping and the other destinations run on.

use crate::esm::PauseArgs;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use inbox::destination::pause::PauseBoard;

use crate::aws;
use crate::stack::DEFAULT_STACK;

/// Pauses (`paused`) or resumes `destination`; writing the set twice changes nothing.
pub async fn run(args: &PauseArgs, destination: &str, paused: bool) -> anyhow::Result<ExitCode> {
    if !inbox::route::valid_name(destination) {
        bail!("--destination `{destination}`: a destination name is 1 to 64 letters, digits, `-` and `_`");
    }
    let sdk = aws::config().await;
    let stack_name = args.mapping.stack.as_deref().unwrap_or(DEFAULT_STACK);
    let table = crate::stack::Lazy::new(&sdk, stack_name)
        .pick(args.table.as_deref(), crate::stack::TABLE_OUTPUT, |r| {
            &r.table
        })
        .await?;
    let board = PauseBoard::new(aws::dynamo(&sdk), &table);
    board
        .set(destination, paused)
        .await
        .map_err(|e| anyhow!("writing the pause board in {table}: {e}"))?;
    let now = board
        .paused()
        .await
        .map_err(|e| anyhow!("reading the pause board in {table}: {e}"))?;
    let verb = if paused { "paused" } else { "resumed" };
    println!("{verb}: destination {destination} (table {table})");
    println!(
        "paused destinations: {}",
        if now.is_empty() {
            "none".to_owned()
        } else {
            now.into_iter().collect::<Vec<_>>().join(", ")
        }
    );
    Ok(ExitCode::SUCCESS)
}
