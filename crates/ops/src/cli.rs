//! The command line of `inbox-ops` (clap derive) and its dispatch to the commands: `init`, `preflight`,
//! `audit`, `why`, `lookup`, `redrive`, `replay`, `pause`, `resume`, `status`, `smoke`,
//! `handshake open`, `secret set`, `destroy`. The
//! queue, table and bucket flags fall back to the environment variable names the functions get
//! in template.yaml (`LEDGER_TABLE`, `QUEUE_URL`, `PAYLOAD_BUCKET`), and `--dlq` to `DLQ_URL`.
//! A flag or variable given but empty counts as missing.

use std::process::ExitCode;

use clap::builder::NonEmptyStringValueParser;
use clap::{CommandFactory as _, Parser, Subcommand};

// Each command's arguments are beside the command; the command line gathers them.
pub use crate::audit::AuditArgs;
pub use crate::console::ConsoleArgs;
pub use crate::esm::{MappingArgs, PauseArgs};
pub use crate::handshake::{HandshakeCommand, HandshakeOpenArgs};
pub use crate::lookup::LookupArgs;
pub use crate::preflight::PreflightArgs;
pub use crate::redrive::RedriveArgs;
pub use crate::replay::{ReplayArgs, StatusFilter};
pub use crate::secret::{SecretCommand, SecretSetArgs};
pub use crate::smoke::SmokeArgs;
pub use crate::status::StatusArgs;
pub use crate::why::WhyArgs;
use crate::{
    audit, console, esm, handshake, lookup, preflight, redrive, replay, secret, smoke, status, why,
};

/// The operator's commands against a deployed inbox.
#[derive(Clone, Debug, PartialEq, Eq, Parser)]
#[command(
    name = "inbox-ops",
    version,
    after_help = "AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL (a local server) as for any AWS SDK.\n\
                  Nothing is printed of a webhook's body or headers: a dead letter is shown by its key,\n\
                  its queue attributes and its ledger item."
)]
pub struct Cli {
    /// Without one, the help is printed.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Act as this role, assumed with STS AssumeRole over your credentials: the stack's
    /// OperatorRoleArn output for replay, redrive, why, pause, resume and the console.
    #[arg(long, global = true, env = "INBOX_OPS_ROLE_ARN", value_name = "ARN", value_parser = NonEmptyStringValueParser::new())]
    pub role_arn: Option<String>,
    /// The AWS config's profile to take credentials (and a role_arn) from [default:
    /// AWS_PROFILE, else the default chain].
    #[arg(long, global = true, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub profile: Option<String>,
}

/// One command.
#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Before `sam deploy`: the parameter values samconfig.toml would deploy (its
    /// parameter_overrides, then the template's defaults), refused with every problem listed,
    /// each naming its parameter.
    ///
    /// Refuses placeholders (REGION, ACCOUNT_ID, ACCOUNT, example.com/.org/.net hosts,
    /// replace-me, the docs' whsec_…), a ForwardUrl that is missing or not https://,
    /// WebhookSources the functions would refuse, and each referenced secret that is missing,
    /// an env: reference, invalid for its scheme or outside what the receiver may read
    /// (SecretArns; when empty, the secrets named <stack>/*); Destinations as the consumer
    /// reads it (its ARNs against Destination*Arns, its signing secrets against
    /// DestinationSecretArns, a source whose every event would go nowhere). Warns of events
    /// that would go nowhere, unsigned destinations and a bus with no rule for a source.
    /// Secrets are read with your own credentials, as the functions read them; no value is
    /// printed. Exits 1 on any problem.
    Preflight(PreflightArgs),
    /// What each source does when a webhook arrives twice, what identifies a repeat, what the
    /// sender is told when we fail; decisions worth a second look flagged.
    ///
    /// Sources: --sources FILE, else $WEBHOOK_SOURCES, else the WebhookSources default in
    /// template.yaml. Exits 1 on a configuration error, naming the source and the field.
    Audit(AuditArgs),
    /// Each dead-lettered message: its key and its ledger item's status, attempts, last_error.
    Why(WhyArgs),
    /// Prints the ledger item of KEY (`<source>:<value>`) as JSON; exits 1 when there is none.
    /// With --body, the event's body from the archive instead: byte for byte when piped,
    /// control characters escaped (`\xNN`) on a terminal.
    Lookup(LookupArgs),
    /// Puts archived events back on the queue as a replay: the side effect runs once more
    /// per replay id, even where the key is COMPLETED; the forward carries the same
    /// Idempotency-Key and `Webhook-Replay-Id: <id>`. By --key, or by --source with --from and
    /// --to (one prefix listing per hour of the archive).
    Replay(ReplayArgs),
    /// Moves the dead-letter queue's messages back (StartMessageMoveTask, else
    /// receive/send/delete).
    Redrive(RedriveArgs),
    /// Holds delivery: disables the consumer's event source mapping. The receiver keeps
    /// accepting; events wait on the queue.
    Pause(PauseArgs),
    /// Resumes delivery: enables the consumer's event source mapping.
    Resume(PauseArgs),
    /// Whether delivery is paused, and what waits on the queue and the dead-letter queue.
    Status(StatusArgs),
    /// Sends a signed test event and its duplicate to the receiver (the stack's WebhookUrl) and
    /// checks the answers: 200, then the same answer replayed. Exits 1 otherwise.
    ///
    /// Sources: --sources FILE, else $WEBHOOK_SOURCES, else the WebhookSources default in
    /// template.yaml; the source's first secret is read as the receiver reads it.
    Smoke(SmokeArgs),
    /// A web console on 127.0.0.1: the events (failed ones first to find), their ledger items,
    /// bodies and reasons, the figures of the last 24 hours, and replay, redrive, pause and
    /// resume, each confirmed on the page. Prints the URL (with this run's token) and opens it.
    Console(ConsoleArgs),
    /// A provider's handshake that establishes the source's secret (Asana's): `open SOURCE
    /// --minutes N` lets the first handshake within N minutes keep its secret; outside such a
    /// window a handshake is refused (401), so no stranger can claim the source.
    #[command(subcommand)]
    Handshake(HandshakeCommand),
    /// Sets up a first deploy: asks (or takes as flags) the stack, the senders by preset name,
    /// the system of record's URL, an alarm address and the destinations; the region from
    /// the AWS config. Writes samconfig.toml, creates the secrets you choose (a random one, as
    /// GitHub's), declares pending those the provider issues (Stripe, Slack), and prints each
    /// provider's steps in the order that works.
    Init(crate::init::InitArgs),
    /// A throwaway system of record for trying a stack: listens (127.0.0.1:8080), answers every
    /// request 200, prints one line per request (its Idempotency-Key, webhook-id, whether the
    /// forward's signature verifies with --verify-with, its size).
    Receive(crate::receive::ReceiveArgs),
    /// A source's signing secret in Secrets Manager: `set SOURCE` stores it where the stack's
    /// WebhookSources says the receiver reads it, checked first as the receiver checks it. A
    /// pending source (Stripe, Slack: the secret comes after the URL) starts verifying within
    /// seconds, with no deploy; a rotated secret reaches the warm receivers the same way.
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Deletes the stack (samconfig.toml's stack_name and region, as `init` writes them),
    /// asking first; then, once you type the stack's name, what it retains by design: the
    /// ledger table (deletion protection turned off first) and the payload bucket (every object
    /// version deleted first). Lists the senders' secrets left (`<stack>/…`) and how to delete
    /// them.
    Destroy(crate::destroy::DestroyArgs),
}

/// `pause` (`paused`) or `resume`: one destination's switch with `--destination`, else the
/// event source mapping.
async fn pause(args: &PauseArgs, paused: bool) -> anyhow::Result<ExitCode> {
    match &args.destination {
        Some(name) => crate::destination_pause::run(args, name, paused).await,
        None => esm::run(args, !paused).await,
    }
}

impl Cli {
    /// Runs the command, printing its output to stdout and an error to stderr. Exit code 0
    /// when done; 1 when it failed, found nothing, or the audit met a configuration error.
    pub async fn run(self) -> ExitCode {
        let Some(command) = self.command else {
            let _ = Cli::command().print_long_help();
            return ExitCode::SUCCESS;
        };
        let identity = crate::aws::Identity {
            profile: self.profile,
            role_arn: self.role_arn,
        };
        crate::aws::act_as(identity.clone());
        let (name, outcome) = match &command {
            Command::Preflight(args) => ("preflight", preflight::run(args).await),
            Command::Audit(args) => (
                "audit",
                audit::run(args, std::env::var("WEBHOOK_SOURCES").ok()).map(|report| {
                    print!("{report}");
                    ExitCode::SUCCESS
                }),
            ),
            Command::Why(args) => ("inbox-ops", why::run(args).await),
            Command::Lookup(args) => ("inbox-ops", lookup::run(args).await),
            Command::Replay(args) => ("replay", replay::run(args).await),
            Command::Redrive(args) => ("inbox-ops", redrive::run(args).await),
            Command::Pause(args) => ("inbox-ops", pause(args, true).await),
            Command::Resume(args) => ("inbox-ops", pause(args, false).await),
            Command::Status(args) => ("inbox-ops", status::run(args).await),
            Command::Smoke(args) => (
                "smoke",
                smoke::run(args, std::env::var("WEBHOOK_SOURCES").ok()).await,
            ),
            Command::Console(args) => ("console", console::run(args).await),
            Command::Handshake(HandshakeCommand::Open(args)) => {
                ("handshake", handshake::open(args).await)
            }
            Command::Init(args) => ("init", crate::init::run(args).await),
            Command::Receive(args) => ("receive", crate::receive::run(args).await),
            Command::Secret(SecretCommand::Set(args)) => ("secret", secret::set(args).await),
            Command::Destroy(args) => ("destroy", crate::destroy::run(args).await),
        };
        outcome.unwrap_or_else(|e| {
            // An error may quote a key or a message: shown escaped (crate::text).
            let text = format!("{e:#}");
            eprintln!("{name}: {}", crate::text::shown_lines(&text));
            if let Some(hint) = crate::aws::denied_hint(&text, &identity) {
                eprintln!("{name}: {hint}");
            }
            ExitCode::FAILURE
        })
    }
}

#[cfg(test)]
mod tests;
