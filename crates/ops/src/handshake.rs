//! `inbox-ops handshake open SOURCE --minutes N`: opens the window in which the source's first
//! handshake (Asana's `X-Hook-Secret`) may keep its secret in the ledger table
//! (docs/providers.md, "asana"). Outside a window an operator opened, whoever posts a
//! handshake first would own the source, so the receiver refuses it (401).

use crate::stack::DEFAULT_STACK;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use clap::Subcommand;
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use inbox::clock::{Clock as _, SystemClock};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::LedgerStore as _;

use crate::aws;

/// `handshake`'s actions.
#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum HandshakeCommand {
    /// Opens the window for SOURCE's first handshake; exits 1 if a secret is kept already.
    Open(HandshakeOpenArgs),
}

/// `handshake open`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct HandshakeOpenArgs {
    /// The source (its name in WebhookSources, the URL's last segment).
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// How long the window stays open, 1 to 60.
    #[arg(long, value_name = "MINUTES", default_value_t = 10)]
    pub minutes: u64,
    /// The stack whose outputs name the table.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
}

/// The longest window: an hour.
pub const MAX_WINDOW_MINUTES: u64 = 60;

/// Opens the window; exit code 1 when a secret is kept already (delete its item first).
pub async fn open(args: &HandshakeOpenArgs) -> anyhow::Result<ExitCode> {
    let source = args.source.as_str();
    if !inbox::route::valid_name(source) {
        bail!("`{source}`: a source name is 1 to 64 letters, digits, `-` and `_`");
    }
    if args.minutes == 0 || args.minutes > MAX_WINDOW_MINUTES {
        bail!("--minutes {}: 1 to {MAX_WINDOW_MINUTES}", args.minutes);
    }
    let sdk = aws::config().await;
    let table = crate::stack::Lazy::new(&sdk, &args.stack)
        .pick(args.table.as_deref(), crate::stack::TABLE_OUTPUT, |r| {
            &r.table
        })
        .await?;
    let until = window_end(SystemClock.now_secs(), args.minutes);
    let ledger = DynamoLedger::new(aws::dynamo(&sdk), &table);
    let opened = ledger
        .open_handshake(source, until)
        .await
        .map_err(|e| anyhow!("opening the handshake window in {table}: {e}"))?;
    let key = inbox::ledger::hook_secret_key(source);
    if opened {
        println!(
            "handshake window open for {source} for {} minutes (until epoch {until}, table {table}): create the webhook now; the first handshake's secret is kept",
            args.minutes
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "{source} keeps a handshake secret already; to create its webhook again, delete it first: aws dynamodb delete-item --table-name {table} --key '{{\"pk\":{{\"S\":\"{key}\"}}}}'"
        );
        Ok(ExitCode::FAILURE)
    }
}

/// When a window opened at `now_secs` for `minutes` closes (epoch seconds).
fn window_end(now_secs: i64, minutes: u64) -> i64 {
    now_secs.saturating_add(i64::try_from(minutes.saturating_mul(60)).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_window_ends_minutes_later() {
        assert_eq!(super::window_end(1_000, 10), 1_600);
    }
}
