//! `inbox-ops console`: a web console on 127.0.0.1 for the operator's own machine, reading the
//! stack's resources with the operator's own AWS credentials (docs/operations.md, "The
//! console"). Server-rendered pages (maud) on axum, no script:
//!
//! - the overview ([`figures`], `status::status`): per source the last 24 hours of the
//!   functions' counts, the queues, whether delivery is paused, the alarms in ALARM;
//! - the event list ([`listing`]): the ledger's keys-only index, newest first, paginated;
//! - one event: its ledger item, its archived headers (signatures masked, [`show`]) and body;
//! - the actions ([`actions`]): replay, redrive, pause and resume, each confirmed on the page
//!   and each the CLI command's own functions.
//!
//! The guard ([`guard`]) keeps it to the person who started it: loopback only, the served
//! `Host` only, a per-run token, a CSRF token on every action.

pub mod actions;
pub mod error;
pub mod figures;
pub mod guard;
pub mod layout;
pub mod listing;
pub mod pages;
pub mod rates;
pub mod routes;
pub mod show;

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use inbox::bucket::S3Bucket;
use inbox::clock::Clock as _;
use inbox::ledger::dynamo::DynamoLedger;

use self::error::ConsoleError;
use self::guard::Guard;
use crate::esm::Locator;
use crate::stack::{StackResources, DEFAULT_STACK};

/// `console`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct ConsoleArgs {
    /// The stack whose resources it reads (its outputs and WebhookSources).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The port on 127.0.0.1 [default: any free one].
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Print the URL only; do not open a browser.
    #[arg(long)]
    pub no_open: bool,
}

/// What every request reads: the SDK configuration, the stack's resources, the run's guard.
pub struct Console {
    pub sdk: aws_config::SdkConfig,
    pub stack: StackResources,
    pub guard: Guard,
}

impl Console {
    fn now_ms(&self) -> i64 {
        inbox::clock::SystemClock.now_ms()
    }

    /// The stack's output, or a 502 page naming it.
    fn need<'a>(&self, value: &'a Option<String>, output: &str) -> Result<&'a str, ConsoleError> {
        self.stack.need(value, output).map_err(ConsoleError::Stack)
    }

    /// The archive (the payload bucket) and the ledger, as `replay` and `lookup --body` read them.
    fn archive(&self) -> Result<(S3Bucket, DynamoLedger), ConsoleError> {
        let bucket = self.need(&self.stack.bucket, crate::stack::BUCKET_OUTPUT)?;
        let table = self.need(&self.stack.table, crate::stack::TABLE_OUTPUT)?;
        Ok((
            S3Bucket::new(inbox::bucket::s3_client(&self.sdk), bucket),
            DynamoLedger::new(crate::aws::dynamo(&self.sdk), table),
        ))
    }

    /// `inbox-ops status` of the stack's mapping and queue.
    async fn status(&self) -> anyhow::Result<crate::status::MappingStatus> {
        let uuid = self
            .stack
            .need(&self.stack.mapping, crate::stack::MAPPING_OUTPUT)?;
        let queue = self
            .stack
            .need(&self.stack.queue_url, crate::stack::QUEUE_OUTPUT)?;
        crate::status::status(&self.sdk, &Locator::Uuid(uuid.to_owned()), Some(queue)).await
    }
}

/// Serves `console` on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, console: Console) -> std::io::Result<()> {
    axum::serve(listener, routes::router(Arc::new(console))).await
}

/// Binds 127.0.0.1:`port` (0: any free port).
pub async fn bind(port: u16) -> std::io::Result<(tokio::net::TcpListener, u16)> {
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    let port = listener.local_addr()?.port();
    Ok((listener, port))
}

/// Runs `console`: resolves the stack, binds loopback, prints (and opens) the URL, serves.
pub async fn run(args: &ConsoleArgs) -> anyhow::Result<ExitCode> {
    let sdk = crate::aws::config().await;
    let stack = crate::stack::resolve(&sdk, &args.stack).await?;
    let (listener, port) = bind(args.port).await?;
    let guard = Guard::new(port);
    let url = guard.login_url();
    println!("inbox console for stack {} at {url}", stack.name);
    println!("(the URL carries this run's token; Ctrl-C stops the console)");
    if !args.no_open && webbrowser::open(&url).is_err() {
        println!("no browser to open here: open the URL yourself");
    }
    serve(listener, Console { sdk, stack, guard }).await?;
    Ok(ExitCode::SUCCESS)
}
