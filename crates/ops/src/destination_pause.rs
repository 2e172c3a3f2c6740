//! `pause --destination NAME` and `resume --destination NAME`: one destination's switch on the
//! ledger table's pause board (`#destinations`, [`inbox::destination::pause`]), which the
//! consumer reads once per batch; the event source mapping and the other destinations run on.
//! `resume` also closes the destination's circuit breaker (docs/routing.md#breakers), with the
//! same conditional write the consumers use, so that its held events go at once.

use crate::esm::PauseArgs;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use inbox::breaker::{apply, Breaker, BreakerBoard as _};
use inbox::destination::pause::PauseBoard;

use crate::aws;
use crate::stack::DEFAULT_STACK;

/// What a switch did: the lines `pause`/`resume --destination` print.
pub async fn switch(board: &PauseBoard, destination: &str, paused: bool) -> Result<String, String> {
    board.set(destination, paused).await?;
    let mut out = String::new();
    if !paused {
        let seen = board
            .breakers()
            .await?
            .remove(destination)
            .unwrap_or_default();
        let was = seen.state.name();
        let (closed, _) = apply(board, destination, seen, Breaker::close_by_hand).await?;
        if closed.is_some() {
            out.push_str(&format!(
                "breaker: destination {destination} closed (it was {was})\n"
            ));
        }
    }
    let now = board.paused().await?;
    out.push_str(&format!(
        "paused destinations: {}\n",
        if now.is_empty() {
            "none".to_owned()
        } else {
            now.into_iter().collect::<Vec<_>>().join(", ")
        }
    ));
    Ok(out)
}

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
    let out = switch(&board, destination, paused)
        .await
        .map_err(|e| anyhow!("the pause board in {table}: {e}"))?;
    let verb = if paused { "paused" } else { "resumed" };
    println!("{verb}: destination {destination} (table {table})");
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
