//! The command line of `inbox-ops` (clap derive) and its dispatch to the commands: `init`, `preflight`,
//! `audit`, `why`, `lookup`, `redrive`, `replay`, `pause`, `resume`, `status`, `smoke`,
//! `handshake open`, `secret set`, `destroy`. The
//! queue, table and bucket flags fall back to the environment variable names the functions get
//! in template.yaml (`LEDGER_TABLE`, `QUEUE_URL`, `PAYLOAD_BUCKET`), and `--dlq` to `DLQ_URL`.
//! A flag or variable given but empty counts as missing.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::NonEmptyStringValueParser;
use clap::{Args, CommandFactory as _, Parser, Subcommand};

pub use crate::console::ConsoleArgs;
use crate::redrive::{Method, DEFAULT_WAIT_SECONDS};
pub use crate::smoke::SmokeArgs;
use crate::stack::DEFAULT_STACK;
use crate::why::DEFAULT_PEEK_SECONDS;
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

/// `secret`'s actions.
#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum SecretCommand {
    /// Stores SOURCE's secret: typed at a prompt that does not echo it, or piped on standard
    /// input, or --from-file; creates the secret where it does not exist yet. Prints the
    /// secret's name, never its value. Exits 1 when the value is not one the receiver would take.
    Set(SecretSetArgs),
}

/// `secret set`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct SecretSetArgs {
    /// The source (its name in WebhookSources, the URL's last segment).
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The stack whose WebhookSources parameter names the source's secret.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The sources configuration (JSON, as WEBHOOK_SOURCES takes it) instead of the stack's.
    #[arg(long = "sources", value_name = "FILE")]
    pub sources_file: Option<PathBuf>,
    /// Which of the source's secrets, by position (1-based), where it has several
    /// secretsmanager: references [default: its only one].
    #[arg(long, value_name = "N")]
    pub position: Option<usize>,
    /// Read the value from this file (one trailing line end dropped).
    #[arg(long, value_name = "FILE", conflicts_with = "value")]
    pub from_file: Option<PathBuf>,
    /// The value itself, for scripts: your shell's history keeps it; prefer the prompt,
    /// standard input or --from-file.
    #[arg(long, value_name = "SECRET")]
    pub value: Option<String>,
}

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

/// Which event source mapping: at most one of these; none is `--stack webhook-inbox`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
#[group(required = false, multiple = false)]
pub struct MappingArgs {
    /// The mapping's UUID (the stack's output ConsumerEventSourceMapping).
    #[arg(long, value_name = "UUID", value_parser = NonEmptyStringValueParser::new())]
    pub uuid: Option<String>,
    /// The consumer function's name or ARN: its one SQS event source mapping.
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub function: Option<String>,
    /// The stack's name: its one event source mapping [default: webhook-inbox, when neither
    /// --uuid nor --function is given].
    #[arg(long, value_name = "STACK", value_parser = NonEmptyStringValueParser::new())]
    pub stack: Option<String>,
}

/// `pause`'s and `resume`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub mapping: MappingArgs,
    /// Seconds to wait for the mapping to settle (Disabled, Enabled).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub wait: u64,
    /// One destination only (docs/routing.md): its events wait, the mapping and the other
    /// destinations run on.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["uuid", "function"])]
    pub destination: Option<String>,
    /// With --destination: the ledger table [default: the stack's LedgerTableName].
    #[arg(long, value_name = "LEDGER_TABLE", requires = "destination", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
}

/// `status`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub mapping: MappingArgs,
    /// The webhook queue's URL [default: the mapping's event source].
    #[arg(long, env = "QUEUE_URL", value_name = "QUEUE_URL", value_parser = NonEmptyStringValueParser::new())]
    pub queue: Option<String>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `preflight`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct PreflightArgs {
    /// The SAM template.
    #[arg(long, value_name = "FILE", default_value = "template.yaml")]
    pub template: PathBuf,
    /// The SAM CLI configuration `sam deploy` reads (its `default` environment).
    #[arg(long, value_name = "FILE", default_value = "samconfig.toml")]
    pub config: PathBuf,
    /// The stack's name [default: samconfig's stack_name, else webhook-inbox].
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub stack: Option<String>,
}

/// `audit`'s arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct AuditArgs {
    /// The sources configuration (JSON, as WEBHOOK_SOURCES takes it).
    #[arg(long = "sources", value_name = "FILE")]
    pub sources_file: Option<PathBuf>,
    /// The SAM template [default: template.yaml at the workspace root].
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The consumer's signing secret references, as it would read them [default: as the
    /// template sets them]; blank: unsigned, which is flagged.
    #[arg(long, env = "FORWARD_SIGNING_SECRET", value_name = "REFERENCES")]
    pub forward_signing_secret: Option<String>,
    /// The destinations (JSON, as WEBHOOK_DESTINATIONS takes it) [default:
    /// $WEBHOOK_DESTINATIONS, else the template's Destinations default].
    #[arg(long = "destinations", value_name = "FILE")]
    pub destinations_file: Option<PathBuf>,
    /// The stack's ForwardUrl, the default destination; blank: none, and what no destination
    /// takes goes nowhere, which is flagged [default: assumed set].
    #[arg(long, env = "FORWARD_URL", value_name = "URL")]
    pub forward_url: Option<String>,
}

/// `why`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct WhyArgs {
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The dead-letter queue's URL [default: the stack's DeadLetterQueueUrl].
    #[arg(long, env = "DLQ_URL", value_name = "DLQ_URL", value_parser = NonEmptyStringValueParser::new())]
    pub dlq: Option<String>,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Seconds the messages looked at stay invisible, at most (visible again when done).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_PEEK_SECONDS,
        value_parser = clap::value_parser!(i32).range(1..=43_200)
    )]
    pub peek: i32,
}

/// `lookup`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct LookupArgs {
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
    /// The key, `<source>:<value>`.
    #[arg(value_name = "KEY")]
    pub key: String,
    /// Print the event's body from the archive (PAYLOAD_BUCKET) instead of the ledger item.
    #[arg(long)]
    pub body: bool,
    /// The payload bucket [default: the stack's PayloadBucketName].
    #[arg(long, env = "PAYLOAD_BUCKET", value_name = "BUCKET", value_parser = NonEmptyStringValueParser::new())]
    pub bucket: Option<String>,
}

/// Which ledger statuses a replay selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFilter {
    Completed,
    Failed,
    /// Every archived event, whatever its status (none, too).
    Any,
}

/// `replay`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct ReplayArgs {
    /// One event, by its key `<source>:<value>` (found through its ledger item).
    #[arg(long, value_name = "KEY", conflicts_with_all = ["source", "from", "to"], required_unless_present = "source", value_parser = NonEmptyStringValueParser::new())]
    pub key: Option<String>,
    /// One source's events received from --from (included) to --to (excluded).
    #[arg(long, value_name = "SOURCE", requires_all = ["from", "to"], value_parser = NonEmptyStringValueParser::new())]
    pub source: Option<String>,
    /// RFC 3339 time (2026-12-03T13:00:00Z) or epoch milliseconds.
    #[arg(long, value_name = "TIME", value_parser = replay::parse_time)]
    pub from: Option<i64>,
    /// RFC 3339 time or epoch milliseconds (excluded).
    #[arg(long, value_name = "TIME", value_parser = replay::parse_time)]
    pub to: Option<i64>,
    /// With --from and --to: how many hours after its receipt an event may have been archived
    /// (the consumer archives a batch as it receives it; give more after a pause or a backlog).
    #[arg(long, value_name = "HOURS", default_value_t = 1, requires = "from")]
    pub archive_lag: u32,
    /// Only the events whose ledger item is so.
    #[arg(long, value_enum, default_value_t = StatusFilter::Any)]
    pub status: StatusFilter,
    /// List what would be replayed (key, receipt, status, archived object); send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// At most this many events a second (`N/s`).
    #[arg(long, value_name = "N/s", default_value = "10/s", value_parser = replay::parse_rate)]
    pub rate: u32,
    /// The replay's id [default: a new one]; the same id again sends nothing that already ran.
    #[arg(long, value_name = "ID")]
    pub replay_id: Option<String>,
    /// One destination of a routed event only (docs/routing.md); --status then reads that
    /// destination's item.
    #[arg(long, value_name = "NAME", value_parser = destination_name)]
    pub destination: Option<String>,
    /// The payload bucket [default: the stack's PayloadBucketName].
    #[arg(long, env = "PAYLOAD_BUCKET", value_name = "BUCKET", value_parser = NonEmptyStringValueParser::new())]
    pub bucket: Option<String>,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
    /// The webhook queue's URL [default: the stack's QueueUrl].
    #[arg(long, env = "QUEUE_URL", value_name = "QUEUE_URL", value_parser = NonEmptyStringValueParser::new())]
    pub queue: Option<String>,
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
}

/// `redrive`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct RedriveArgs {
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The dead-letter queue's URL [default: the stack's DeadLetterQueueUrl].
    #[arg(long, env = "DLQ_URL", value_name = "DLQ_URL", value_parser = NonEmptyStringValueParser::new())]
    pub dlq: Option<String>,
    /// The webhook queue's URL [default: the stack's QueueUrl].
    #[arg(long, env = "QUEUE_URL", value_name = "QUEUE_URL", value_parser = NonEmptyStringValueParser::new())]
    pub queue: Option<String>,
    /// How the messages are moved.
    #[arg(long, value_enum, default_value_t = Method::Auto)]
    pub method: Method,
    /// Seconds to wait for a move task to finish.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_WAIT_SECONDS)]
    pub wait: u64,
}

/// `--destination`: a destination's name (1 to 64 letters, digits, `-` and `_`).
fn destination_name(text: &str) -> Result<String, String> {
    if inbox::route::valid_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not a destination name (1 to 64 letters, digits, `-` and `_`)"
        ))
    }
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
