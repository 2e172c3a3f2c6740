//! The demo's stack: moto, template.yaml created on its CloudFormation as the stack `demo`
//! ([`devstack::local_stack`]: the demo sources' secrets in its Secrets Manager, the forward URL a
//! loopback system of record), the env file from the functions' configurations, and both
//! functions under `cargo lambda watch`; started for `demo run`, `demo serve` and
//! `demo check-events` alike, and stopped (in reverse order) when dropped.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::destinations::DemoDestinations;
use crate::env_file;
use crate::watch::{self, Watch, WatchOptions};
use devstack::cloudformation;
use devstack::local_stack::{self, Resources};
use devstack::moto::{self, MotoServer};
use devstack::testkit::{self, SystemOfRecord};

/// The demo's stack name (its queue is `demo-webhooks.fifo`).
pub const STACK_NAME: &str = "demo";

/// The workspace root, without `..` in it (for messages).
pub fn root() -> PathBuf {
    let root = moto::workspace_root();
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// `.local/` at the workspace root: the env files and the functions' logs.
pub fn local_dir() -> PathBuf {
    root().join(".local")
}

/// Each source with its preset where it has one (`github (preset github)`), as the demo
/// declares them.
fn describe_sources(json: &str) -> String {
    match inbox::SourceSpecs::parse(json) {
        Ok(specs) => specs
            .iter()
            .map(|s| match &s.preset {
                Some(preset) => format!("{} (preset {preset})", s.name),
                None => format!("{} ({})", s.name, s.scheme.name()),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Err(e) => format!("(not parsed: {e})"),
    }
}

/// Prints a progress line with the time since `start`.
pub fn step(start: Instant, text: &str) {
    eprintln!("[{:>6.1}s] {text}", start.elapsed().as_secs_f64());
}

/// Everything the demo starts, stopped in reverse order when dropped.
pub struct Stack {
    // Field order is drop order: the functions first, then the system of record, then AWS.
    pub watch: Watch,
    pub sor: SystemOfRecord,
    /// The stack's table and queues.
    pub resources: Resources,
    /// The stack as moto's CloudFormation holds it (functions, event source mapping, outputs).
    pub deployed: cloudformation::Stack,
    pub sqs: aws_sdk_sqs::Client,
    pub dynamo: aws_sdk_dynamodb::Client,
    /// Moto's Lambda, where the stack's event source mapping is.
    pub lambda: aws_sdk_lambda::Client,
    pub env_file: PathBuf,
    /// Where the stripe source's events go instead of the forward (`demo run` only:
    /// `demo serve` and `check-events` forward every source, as `events/` documents).
    pub destinations: Option<DemoDestinations>,
    _moto: MotoServer,
}

/// Where a stack listens and writes.
#[derive(Clone, Debug)]
pub struct StackOptions {
    pub address: String,
    pub port: u16,
    pub instances: u32,
    pub env_file: PathBuf,
    pub log: PathBuf,
    pub echo: bool,
    /// Route the stripe source to the demo's destinations ([`DemoDestinations`]).
    pub destinations: bool,
}

impl StackOptions {
    /// One instance per function on a free loopback port, quiet, with `.local/<name>.env` and
    /// `.local/<name>-watch.log`.
    pub fn loopback(name: &str) -> anyhow::Result<StackOptions> {
        let local = local_dir();
        Ok(StackOptions {
            address: "127.0.0.1".into(),
            port: watch::free_port()?,
            instances: 1,
            env_file: local.join(format!("{name}.env")),
            log: local.join(format!("{name}-watch.log")),
            echo: false,
            destinations: false,
        })
    }
}

/// `cargo build --bin receiver --bin consumer`: what `cargo lambda watch` will `cargo run --bin`,
/// built once here so that no build happens while anything is timed. By binary, not by package
/// (`-p`): the features then resolve over the whole workspace, as `cargo lambda watch`'s and
/// `cargo test --workspace`'s do, and the three share one build (crates/unified-features).
pub fn build_functions(root: &Path) -> anyhow::Result<()> {
    let mut cmd = std::process::Command::new("cargo");
    cmd.args(["build", "--quiet", "--bin", "receiver", "--bin", "consumer"])
        .current_dir(root);
    for name in watch::cargo_run_vars() {
        cmd.env_remove(name);
    }
    let status = cmd.status().context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --bin receiver --bin consumer failed ({status})");
    }
    Ok(())
}

impl Stack {
    /// [`build_functions`], then [`Stack::start`]; `note` ends the build's progress line.
    pub async fn build_and_start(
        opts: &StackOptions,
        start: Instant,
        note: &str,
    ) -> anyhow::Result<Stack> {
        step(start, &format!("building receiver and consumer{note}"));
        build_functions(&root())?;
        Stack::start(opts, start).await
    }

    /// moto, a system of record, the stack, the env file, and both functions under
    /// `cargo lambda watch`, warmed up.
    #[allow(
        clippy::too_many_lines,
        reason = "the local stack's start-up steps in order"
    )]
    pub async fn start(opts: &StackOptions, start: Instant) -> anyhow::Result<Stack> {
        let root = root();
        moto::python()?;
        step(start, "starting moto (local AWS)");
        let moto = MotoServer::start()?;
        // This process's own SDK clients (the stack, the bridge) use the standard variables.
        std::env::set_var("AWS_ENDPOINT_URL", moto.endpoint());
        std::env::set_var("AWS_REGION", "us-east-1");
        std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
        std::env::remove_var("AWS_PROFILE");
        let sdk = inbox::app::sdk_config().await;
        let dynamo = aws_sdk_dynamodb::Client::new(&sdk);
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let sor = SystemOfRecord::start();
        let (sources, secrets) = testkit::stack_sources();
        step(start, &format!("sources: {}", describe_sources(&sources)));
        local_stack::put_secrets(&sdk, &secrets).await?;
        step(
            start,
            &format!(
                "{} secrets in Secrets Manager ({}/<source>); translating template.yaml",
                secrets.len(),
                testkit::SECRETS_PREFIX
            ),
        );
        let specs = inbox::SourceSpecs::parse(&sources).context("the demo's sources")?;
        let arns = local_stack::secret_arns(&sdk, &specs).await?;
        let mut parameters = local_stack::parameters(&sources, sor.url(), &arns)?;
        let destinations = match opts.destinations {
            true => Some(DemoDestinations::create(&sdk).await?),
            false => None,
        };
        if let Some(d) = &destinations {
            step(start, &d.describe());
            for (name, value) in d.parameters() {
                parameters.set(name, value);
            }
        }
        let deployed = local_stack::deploy_parameters(&sdk, STACK_NAME, &parameters).await?;
        let resources = Resources::from(&deployed);
        step(
            start,
            &format!(
                "stack {} CREATE_COMPLETE on moto's CloudFormation: table {}, queue {}",
                deployed.name,
                resources.table,
                resources.queue_url.rsplit('/').next().unwrap_or_default()
            ),
        );
        let vars = env_file::local_env(&deployed, moto.endpoint())?;
        env_file::write_env_file(&opts.env_file, &vars)?;
        step(
            start,
            &format!(
                "system of record on {}; env file {}",
                sor.url(),
                opts.env_file.display()
            ),
        );
        step(
            start,
            &format!(
                "starting both functions: cargo lambda watch on {}:{} (--concurrency {})",
                opts.address, opts.port, opts.instances
            ),
        );
        let watch = Watch::start(&WatchOptions {
            root,
            env_file: opts.env_file.clone(),
            address: opts.address.clone(),
            port: opts.port,
            concurrency: opts.instances,
            log: opts.log.clone(),
            echo: opts.echo,
            metrics: Some(aws_sdk_cloudwatch::Client::new(&sdk)),
        })
        .await?;
        watch.warm_up().await.with_context(|| {
            format!(
                "the functions did not answer; see {} for their output",
                opts.log.display()
            )
        })?;
        step(start, "receiver and consumer answer through the emulator");
        Ok(Stack {
            watch,
            sor,
            resources,
            deployed,
            lambda: aws_sdk_lambda::Client::new(&sdk),
            sqs,
            dynamo,
            env_file: opts.env_file.clone(),
            destinations,
            _moto: moto,
        })
    }

    pub fn ledger(&self) -> inbox::ledger::dynamo::DynamoLedger {
        inbox::ledger::dynamo::DynamoLedger::new(self.dynamo.clone(), &self.resources.table)
    }

    pub fn queue(&self) -> inbox::queue::SqsQueue {
        inbox::queue::SqsQueue::new(self.sqs.clone(), &self.resources.queue_url)
    }

    /// Messages on the queue, visible or in flight.
    pub async fn queue_depth(&self) -> anyhow::Result<u64> {
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(&self.resources.queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await?;
        let attrs = out.attributes.unwrap_or_default();
        Ok([
            QueueAttributeName::ApproximateNumberOfMessages,
            QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        ]
        .iter()
        .filter_map(|a| attrs.get(a).and_then(|v| v.parse::<u64>().ok()))
        .sum())
    }
}
