//! `make demo`: the whole inbox on one machine, driven over HTTP like real senders drive it.
//!
//! moto plays AWS (table and queues made from template.yaml), `cargo lambda watch` runs both
//! functions behind the real Runtime API emulator, a loopback system of record counts the side
//! effects, and the bridge plays the SQS event source mapping by invoking the consumer through
//! the emulator. Then senders deliver: the sample webhooks, a retry storm, bad signatures and
//! malformed bodies; a few receiver crashes after enqueueing are replayed, and some completed
//! events are redelivered late straight onto the queue. The result table counts what each layer
//! stopped, and the run fails unless every accepted event had exactly one side effect.
//!
//! `demo serve` starts the same stack and waits, for `cargo lambda invoke --data-file events/…`;
//! `demo check-events` invokes every file in `events/` through the emulator and checks each
//! answer against [`events`]' expectations.

pub mod events;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use base64::Engine as _;
use futures::StreamExt;
use inbox::fifo::sqs_id;
use inbox::ledger::{Claim, ClaimOutcome, LedgerStore as _, Status};
use inbox::metrics::Metric;
use inbox::queue::{Envelope, Outgoing, Queue as _};
use serde_json::Value;

use crate::bridge::Bridge;
use crate::moto::{self, MotoServer};
use crate::provision::{self, Provisioned, Template};
use crate::testkit::{self, SystemOfRecord};
use watch::{Output, Watch, WatchOptions};

/// The workspace root, without `..` in it (for messages).
fn root() -> PathBuf {
    let root = moto::workspace_root();
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The demo's knobs (`demo --help`).
#[derive(Clone, Debug)]
pub struct Options {
    /// Distinct events in the retry storm.
    pub storm_events: usize,
    /// Deliveries of each storm event (a sender retrying, a user clicking "Redeliver").
    pub storm_copies: usize,
    /// Senders at once.
    pub concurrency: usize,
    /// `cargo lambda watch --concurrency`: instances per function.
    pub instances: u32,
    /// Receiver invocations that "die" after enqueueing, before answering.
    pub crashes: usize,
    /// Completed events put on the queue again with a fresh deduplication id.
    pub late: usize,
    /// Keys whose first forward the system of record answers 500.
    pub forward_failures: usize,
    /// Overrides the template's `IN_PROGRESS_WAIT_MS` (0: a concurrent duplicate gets 503 and
    /// `Retry-After` at once, and the senders' retries show).
    pub in_progress_wait_ms: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            storm_events: 100,
            storm_copies: 10,
            concurrency: 32,
            instances: 4,
            crashes: 5,
            late: 10,
            forward_failures: 3,
            in_progress_wait_ms: None,
        }
    }
}

/// Everything the demo starts, stopped in reverse order when dropped.
pub struct Stack {
    // Field order is drop order: the functions first, then the system of record, then AWS.
    pub watch: Watch,
    pub sor: SystemOfRecord,
    pub resources: Provisioned,
    pub sqs: aws_sdk_sqs::Client,
    pub dynamo: aws_sdk_dynamodb::Client,
    pub env_file: PathBuf,
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
    /// Variables set in the env file over the template's values.
    pub overrides: Vec<(String, String)>,
}

/// Prints a progress line with the time since `start`.
fn step(start: Instant, text: &str) {
    eprintln!("[{:>6.1}s] {text}", start.elapsed().as_secs_f64());
}

/// `cargo build -p receiver -p consumer`: what `cargo lambda watch` will `cargo run`, built
/// once here so that no build happens while anything is timed.
pub fn build_functions(root: &std::path::Path) -> anyhow::Result<()> {
    let mut cmd = std::process::Command::new("cargo");
    cmd.args(["build", "--quiet", "-p", "receiver", "-p", "consumer"])
        .current_dir(root);
    for name in watch::cargo_run_vars() {
        cmd.env_remove(name);
    }
    let status = cmd.status().context("running cargo build")?;
    if !status.success() {
        bail!("cargo build -p receiver -p consumer failed ({status})");
    }
    Ok(())
}

impl Stack {
    /// moto, the template's resources, a system of record, the env file, and both functions
    /// under `cargo lambda watch`, warmed up.
    pub async fn start(opts: &StackOptions, start: Instant) -> anyhow::Result<Stack> {
        let root = root();
        moto::python()?;
        step(start, "starting moto (local AWS)");
        let moto = MotoServer::start()?;
        // This process's own SDK clients (provisioning, the bridge) use the standard variables.
        std::env::set_var("AWS_ENDPOINT_URL", moto.endpoint());
        std::env::set_var("AWS_REGION", "us-east-1");
        std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
        std::env::remove_var("AWS_PROFILE");
        let sdk = inbox::app::sdk_config().await;
        let dynamo = aws_sdk_dynamodb::Client::new(&sdk);
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let template = Template::load(&provision::template_path())?;
        let resources = provision::provision(&template, &dynamo, &sqs, "demo").await?;
        step(
            start,
            &format!(
                "provisioned from template.yaml: table {}, queue {}",
                resources.table,
                resources.queue_url.rsplit('/').next().unwrap_or_default()
            ),
        );
        let sor = SystemOfRecord::start();
        let mut vars = watch::local_env(&template, &resources, moto.endpoint(), sor.url())?;
        for (name, value) in &opts.overrides {
            match vars.iter_mut().find(|(n, _)| n == name) {
                Some(var) => var.1 = value.clone(),
                None => vars.push((name.clone(), value.clone())),
            }
        }
        watch::write_env_file(&opts.env_file, &vars)?;
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
            sqs,
            dynamo,
            env_file: opts.env_file.clone(),
            _moto: moto,
        })
    }

    fn ledger(&self) -> inbox::ledger::dynamo::DynamoLedger {
        inbox::ledger::dynamo::DynamoLedger::new(self.dynamo.clone(), &self.resources.table)
    }

    fn queue(&self) -> inbox::queue::SqsQueue {
        inbox::queue::SqsQueue::new(self.sqs.clone(), &self.resources.queue_url)
    }

    /// Messages on the queue, visible or in flight.
    async fn queue_depth(&self) -> anyhow::Result<u64> {
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

// ---------------------------------------------------------------------------------------
// Senders
// ---------------------------------------------------------------------------------------

/// How a delivery is signed: fixed headers, or a timestamped scheme signed at each attempt
/// (a sender's retry carries a fresh timestamp).
#[derive(Clone, Debug)]
enum Signing {
    Fixed(Vec<(&'static str, String)>),
    Stripe,
    StandardWebhooks(String),
}

/// One webhook a sender delivers, retrying as real senders do.
#[derive(Clone, Debug)]
struct Delivery {
    source: String,
    body: Vec<u8>,
    signing: Signing,
}

impl Delivery {
    fn headers(&self) -> Vec<(&'static str, String)> {
        let now = testkit::now_ms() / 1000;
        match &self.signing {
            Signing::Fixed(h) => h.clone(),
            Signing::Stripe => vec![
                (
                    "stripe-signature",
                    testkit::stripe_signature(&self.body, now),
                ),
                ("content-type", "application/json".to_owned()),
            ],
            Signing::StandardWebhooks(id) => {
                testkit::standard_webhooks_headers(id, now, &self.body)
            }
        }
    }
}

/// A signed, valid event of one of the demo sources; its key is `<source>:<id>` (orders:
/// `orders:order.created|<id>`).
fn valid(source: &str, id: &str, n: usize) -> Delivery {
    let (body, signing) = match source {
        "github" => {
            let body = format!(r#"{{"action":"opened","issue":{{"number":{n}}}}}"#).into_bytes();
            let h = testkit::github_headers(id, &body);
            (body, Signing::Fixed(h))
        }
        "stripe" => (
            format!(r#"{{"id":"{id}","object":"event","type":"invoice.paid","data":{{"object":{{"amount":{n}}}}}}}"#)
                .into_bytes(),
            Signing::Stripe,
        ),
        "acme" => (
            format!(r#"{{"type":"invoice.paid","customer_id":"cus_{}","n":{n}}}"#, n % 5).into_bytes(),
            Signing::StandardWebhooks(id.to_owned()),
        ),
        "shop" => {
            let body = format!(r#"{{"id":{n},"total_price":"{n}.00"}}"#).into_bytes();
            let h = vec![
                ("x-shopify-hmac-sha256", testkit::shopify_signature(&body)),
                ("x-shopify-event-id", id.to_owned()),
                ("x-shopify-topic", "orders/paid".to_owned()),
                ("content-type", "application/json".to_owned()),
            ];
            (body, Signing::Fixed(h))
        }
        _ => {
            let body =
                format!(r#"{{"type":"order.created","order":{{"id":"{id}","n":{n}}}}}"#).into_bytes();
            let h = vec![
                ("x-signature", testkit::hmac_hex(&body)),
                ("content-type", "application/json".to_owned()),
            ];
            (body, Signing::Fixed(h))
        }
    };
    Delivery {
        source: source.to_owned(),
        body,
        signing,
    }
}

/// A delivery whose body was changed after signing (or, for Stripe, signed long ago).
fn bad_signature(i: usize) -> Delivery {
    let source = ["github", "shop", "orders", "stripe"][i % 4];
    let mut d = valid(source, &format!("bad-signature-{i}"), i);
    if source == "stripe" {
        d.signing = Signing::Fixed(vec![(
            "stripe-signature",
            testkit::stripe_signature(&d.body, testkit::now_ms() / 1000 - 3600),
        )]);
    } else {
        d.body.extend_from_slice(b" ");
    }
    d
}

/// A correctly signed body that is not JSON, or lacks its key.
fn malformed(i: usize) -> Delivery {
    let body = if i.is_multiple_of(2) {
        b"type=order.created&order=1".to_vec()
    } else {
        br#"{"type":"order.created","order":{}}"#.to_vec()
    };
    Delivery {
        source: "orders".into(),
        signing: Signing::Fixed(vec![("x-signature", testkit::hmac_hex(&body))]),
        body,
    }
}

fn key_of(source: &str, id: &str) -> String {
    match source {
        "orders" => format!("orders:order.created|{id}"),
        _ => format!("{source}:{id}"),
    }
}

/// What the senders saw.
#[derive(Debug, Default)]
struct Answers {
    /// (status, `error` code or "accepted"/"replayed") -> count, every attempt.
    by_answer: BTreeMap<(u16, String), u64>,
    attempts: u64,
    retries: u64,
    /// Deliveries that never got a final answer (gave up after retrying).
    gave_up: u64,
    /// Keys of every 200 answer.
    accepted: BTreeSet<String>,
    replayed: u64,
}

#[derive(Clone)]
struct Sender {
    http: reqwest::Client,
    base: String,
    answers: Arc<Mutex<Answers>>,
}

impl Sender {
    fn record(&self, f: impl FnOnce(&mut Answers)) {
        match self.answers.lock() {
            Ok(mut a) => f(&mut a),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    /// One delivery: retried on 5xx (honouring `Retry-After`) and on connection errors, with
    /// exponential backoff, up to 8 attempts; any other answer is final.
    async fn deliver(&self, d: &Delivery, method: reqwest::Method) -> Option<u16> {
        let mut backoff = Duration::from_millis(100);
        for attempt in 0..8 {
            if attempt > 0 {
                self.record(|a| a.retries += 1);
            }
            let mut req = self
                .http
                .request(
                    method.clone(),
                    format!("{}/lambda-url/receiver/webhooks/{}", self.base, d.source),
                )
                .body(d.body.clone());
            for (name, value) in d.headers() {
                req = req.header(name, value);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(_) => {
                    self.record(|a| {
                        a.attempts += 1;
                        *a.by_answer.entry((0, "no answer".into())).or_default() += 1;
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            let status = resp.status().as_u16();
            let replayed = resp
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v.as_bytes() == b"true");
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            let body: Value = json_of(resp).await;
            let label = match (status, replayed) {
                (200, true) => "replayed".to_owned(),
                (200, false) => "accepted".to_owned(),
                _ => body
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
            };
            let key = body.get("key").and_then(Value::as_str).map(str::to_owned);
            self.record(|a| {
                a.attempts += 1;
                *a.by_answer.entry((status, label)).or_default() += 1;
                if status == 200 {
                    if replayed {
                        a.replayed += 1;
                    }
                    if let Some(k) = key {
                        a.accepted.insert(k);
                    }
                }
            });
            if status < 500 {
                return Some(status);
            }
            let wait = retry_after
                .map(|s| Duration::from_secs(s.min(2)))
                .unwrap_or(backoff);
            tokio::time::sleep(wait).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
        self.record(|a| a.gave_up += 1);
        None
    }
}

/// A response's JSON body, or null.
async fn json_of(resp: reqwest::Response) -> Value {
    let bytes = resp.bytes().await.unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// A fixed shuffle (no randomness needed, and the same run every time).
fn shuffle<T>(items: &mut [T]) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..items.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = usize::try_from(state % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

// ---------------------------------------------------------------------------------------
// The bridge, invoking the consumer through the emulator
// ---------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct BridgeSeen {
    /// Distinct messages received (a message received again after a failure counts once).
    messages: BTreeSet<String>,
    /// For each key: (group id, envelope), to redeliver late.
    envelopes: BTreeMap<String, (String, String)>,
    batches: u64,
    reported_failed: u64,
    invoke_errors: u64,
    idle: bool,
}

async fn run_bridge(
    bridge: Bridge,
    http: reqwest::Client,
    invoke_url: String,
    seen: Arc<Mutex<BridgeSeen>>,
    stop: Arc<AtomicBool>,
) {
    let with = |f: &mut dyn FnMut(&mut BridgeSeen)| match seen.lock() {
        Ok(mut s) => f(&mut s),
        Err(p) => f(&mut p.into_inner()),
    };
    while !stop.load(Ordering::Relaxed) {
        let messages = match bridge.receive().await {
            Ok(m) => m,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if messages.is_empty() {
            with(&mut |s| s.idle = true);
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        with(&mut |s| {
            s.idle = false;
            s.batches += 1;
            for m in &messages {
                s.messages
                    .insert(m.message_id().unwrap_or_default().to_owned());
                if let Some(env) = m.body().and_then(|b| Envelope::parse(b).ok()) {
                    let group = m
                        .attributes()
                        .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                        .cloned()
                        .unwrap_or_default();
                    s.envelopes.insert(
                        env.key.clone(),
                        (group, m.body().unwrap_or_default().to_owned()),
                    );
                }
            }
        });
        let event = bridge.event(&messages);
        let answer = async {
            let resp = http
                .post(&invoke_url)
                .body(serde_json::to_vec(&event)?)
                .send()
                .await?;
            let bytes = resp.error_for_status()?.bytes().await?;
            anyhow::Ok(serde_json::from_slice::<SqsBatchResponse>(&bytes)?)
        }
        .await;
        let response = match answer {
            Ok(r) => r,
            Err(_) => {
                // As Lambda's mapping does when the invocation fails: the whole batch comes back.
                with(&mut |s| s.invoke_errors += 1);
                let mut r = SqsBatchResponse::default();
                r.batch_item_failures = messages
                    .iter()
                    .map(|m| {
                        let mut f = BatchItemFailure::default();
                        f.item_identifier = m.message_id().unwrap_or_default().to_owned();
                        f
                    })
                    .collect();
                r
            }
        };
        if let Ok(round) = bridge.settle(&messages, &response).await {
            with(&mut |s| s.reported_failed += round.failed as u64);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------

/// What the run counted; [`Report::ok`] decides the exit code.
#[derive(Debug)]
pub struct Report {
    by_answer: BTreeMap<(u16, String), u64>,
    attempts: u64,
    retries: u64,
    gave_up: u64,
    accepted: usize,
    replayed: u64,
    emf_accepted: u64,
    emf_replayed: u64,
    direct_sends: u64,
    messages_seen: usize,
    consumer_duplicates: u64,
    side_effects: u64,
    forward_failures: u64,
    keys_not_once: Vec<String>,
    not_completed: usize,
    took: Duration,
}

impl Report {
    /// Every accepted event had exactly one side effect, and nothing else had one.
    pub fn ok(&self) -> bool {
        self.side_effects == self.accepted as u64
            && self.keys_not_once.is_empty()
            && self.not_completed == 0
            && self.gave_up == 0
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let row = |f: &mut std::fmt::Formatter<'_>, label: &str, value: String, note: &str| {
            let line = format!("  {label:<56} {value:>6}  {note}");
            writeln!(f, "{}", line.trim_end())
        };
        writeln!(f)?;
        writeln!(
            f,
            "  webhook inbox demo: receiver and consumer under `cargo lambda watch`, AWS on moto"
        )?;
        writeln!(f)?;
        writeln!(f, "  deliveries by answer (every HTTP attempt)")?;
        for ((status, label), n) in &self.by_answer {
            let text = match (*status, label.as_str()) {
                (0, _) => "no answer (connection error; retried)".to_owned(),
                (200, "accepted") => "200 accepted (first delivery)".to_owned(),
                (200, "replayed") => "200 replayed (Idempotent-Replayed: true)".to_owned(),
                (503, l) => format!("503 {l} (sender retried after Retry-After)"),
                (s, l) if s >= 500 => format!("{s} {l} (sender retried)"),
                (s, l) => format!("{s} {l}"),
            };
            row(f, &format!("  {text}"), n.to_string(), "")?;
        }
        row(
            f,
            "  total",
            self.attempts.to_string(),
            &format!("({} of them retries)", self.retries),
        )?;
        writeln!(f)?;
        row(
            f,
            "distinct events accepted",
            self.accepted.to_string(),
            &format!("(receiver EMF Accepted: {})", self.emf_accepted),
        )?;
        let verdict = if self.ok() {
            "= distinct events accepted: OK"
        } else {
            "MISMATCH"
        };
        row(
            f,
            "side effects recorded at the system of record",
            self.side_effects.to_string(),
            verdict,
        )?;
        writeln!(f, "  duplicates stopped")?;
        row(
            f,
            "  at the receiver (answers replayed)",
            self.replayed.to_string(),
            &format!("(receiver EMF Replayed: {})", self.emf_replayed),
        )?;
        let sends = self.emf_accepted + self.direct_sends;
        row(
            f,
            "  at the queue (sends SQS deduplicated)",
            sends.saturating_sub(self.messages_seen as u64).to_string(),
            &format!(
                "({} sends = {} Accepted + {} direct; {} messages reached the bridge)",
                sends, self.emf_accepted, self.direct_sends, self.messages_seen
            ),
        )?;
        row(
            f,
            "  at the consumer (DuplicateDelivery)",
            self.consumer_duplicates.to_string(),
            "(consumer EMF, from the watch output)",
        )?;
        row(
            f,
            "forwards the system of record failed (retried)",
            self.forward_failures.to_string(),
            "(answered 500 on purpose; the queue redelivered)",
        )?;
        if !self.keys_not_once.is_empty() {
            writeln!(
                f,
                "  keys without exactly one side effect: {:?}",
                self.keys_not_once
            )?;
        }
        if self.not_completed > 0 {
            writeln!(f, "  ledger items not COMPLETED: {}", self.not_completed)?;
        }
        if self.gave_up > 0 {
            writeln!(
                f,
                "  deliveries given up after 8 attempts: {}",
                self.gave_up
            )?;
        }
        row(
            f,
            "took",
            format!("{:.1} s", self.took.as_secs_f64()),
            &format!(
                "({:.0} deliveries/s through the emulator)",
                self.attempts as f64 / self.took.as_secs_f64().max(0.001)
            ),
        )
    }
}

/// The demo. Returns the report; the caller prints it and picks the exit code.
pub async fn run(opts: &Options) -> anyhow::Result<Report> {
    let start = Instant::now();
    let root = root();
    step(start, "building receiver and consumer (once; not timed)");
    build_functions(&root)?;
    let local = root.join(".local");
    let stack = Stack::start(
        &StackOptions {
            address: "127.0.0.1".into(),
            port: watch::free_port()?,
            instances: opts.instances,
            env_file: local.join("demo.env"),
            log: local.join("demo-watch.log"),
            echo: false,
            overrides: opts
                .in_progress_wait_ms
                .map(|ms| vec![("IN_PROGRESS_WAIT_MS".to_owned(), ms.to_string())])
                .unwrap_or_default(),
        },
        start,
    )
    .await?;

    // The clock starts with everything up and warm.
    let clock = Instant::now();
    let answers = Arc::new(Mutex::new(Answers::default()));
    let sender = Sender {
        http: stack.watch.http().clone(),
        base: stack.watch.base_url(),
        answers: answers.clone(),
    };
    let mut direct_sends = 0u64;

    // 1. Receiver crashes after enqueueing: the dead invocation's claim and message are in
    //    place, its lease runs out, the sender retries. The retry takes the claim over and sends
    //    again with the same deduplication id: SQS keeps one message.
    let ledger = stack.ledger();
    let queue = stack.queue();
    for i in 0..opts.crashes {
        let id = format!("c7a5e000-0000-4000-8000-{i:012}");
        let d = valid("github", &id, 9000 + i);
        let key = key_of("github", &id);
        let now = testkit::now_ms();
        let (status, body) = inbox::receiver::accepted_response(&key);
        let claim = Claim {
            key: key.clone(),
            source: "github".into(),
            payload_sha256: inbox::key::sha256_hex(&d.body),
            owner: format!("dead-invocation-{i}"),
            now_ms: now,
            lease_until_ms: now + 300,
            expires_at: now / 1000 + 168 * 3600,
            response_status: status,
            response_body: body,
        };
        if ledger.claim(&claim).await? != ClaimOutcome::Claimed {
            bail!("could not stage the crashed invocation's claim for {key}");
        }
        let headers: std::collections::BTreeMap<String, String> = d
            .headers()
            .into_iter()
            .filter(|(n, _)| *n != "x-github-event")
            .map(|(n, v)| (n.to_owned(), v))
            .collect();
        let envelope = Envelope::new(&key, "github", now, &claim.payload_sha256, headers, &d.body);
        queue
            .send(Outgoing::new(&key, &key, envelope.to_json()))
            .await?;
        direct_sends += 1;
    }
    if opts.crashes > 0 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        for i in 0..opts.crashes {
            let id = format!("c7a5e000-0000-4000-8000-{i:012}");
            sender
                .deliver(&valid("github", &id, 9000 + i), reqwest::Method::POST)
                .await;
        }
        step(
            start,
            &format!(
                "{} receiver crashes after enqueueing replayed; the senders' retries took the claims over",
                opts.crashes
            ),
        );
    }

    // 2. The bridge, from now on.
    let mut bridge = Bridge::new(stack.sqs.clone(), &stack.resources.queue_url).await?;
    bridge.retry_failed_now = true;
    bridge.visibility_timeout = Some(60);
    let seen = Arc::new(Mutex::new(BridgeSeen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let bridge_task = tokio::spawn(run_bridge(
        bridge,
        stack.watch.http().clone(),
        stack.watch.invoke_url("consumer"),
        seen.clone(),
        stop.clone(),
    ));

    // Some forwards fail once at the system of record.
    let sources = ["github", "stripe", "acme", "shop", "orders"];
    let storm_id = |i: usize| format!("5707e000-0000-4000-8000-{i:012}");
    let mut failing = Vec::new();
    for i in 0..opts.forward_failures.min(opts.storm_events) {
        let n = i * 7 % opts.storm_events.max(1);
        let key = key_of(sources[n % sources.len()], &storm_id(n));
        stack.sor.fail_key(&key, 1);
        failing.push(key);
    }

    // 3. The sample webhooks (events/, signed now, as HTTP requests; bad-base64.json is an
    //    API Gateway flag no HTTP request can set).
    let samples = events::generate(testkit::now_ms() / 1000);
    let mut sample_count = 0;
    for s in samples
        .iter()
        .filter(|s| s.function == events::Function::Receiver && s.file != "bad-base64.json")
    {
        let d = delivery_from_event(&s.event)?;
        let method = s
            .event
            .pointer("/requestContext/http/method")
            .and_then(Value::as_str)
            .unwrap_or("POST");
        let method =
            reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
        sender.deliver(&d, method).await;
        sample_count += 1;
    }
    step(
        start,
        &format!("{sample_count} sample webhooks from events/ sent"),
    );

    // 4. The retry storm, with bad signatures and malformed bodies mixed in.
    let mut deliveries: Vec<(Delivery, reqwest::Method)> = Vec::new();
    for i in 0..opts.storm_events {
        let source = sources[i % sources.len()];
        let d = valid(source, &storm_id(i), i);
        for _ in 0..opts.storm_copies {
            deliveries.push((d.clone(), reqwest::Method::POST));
        }
    }
    let bad = (opts.storm_events / 4).max(1);
    for i in 0..bad {
        deliveries.push((bad_signature(i), reqwest::Method::POST));
        deliveries.push((malformed(i), reqwest::Method::POST));
    }
    shuffle(&mut deliveries);
    let storm_total = deliveries.len();
    step(
        start,
        &format!(
            "retry storm: {storm_total} deliveries ({} events x {} + {} bad signatures + {} malformed or keyless bodies) from {} senders at once",
            opts.storm_events, opts.storm_copies, bad, bad, opts.concurrency
        ),
    );
    futures::stream::iter(deliveries)
        .map(|(d, m)| {
            let sender = sender.clone();
            async move { sender.deliver(&d, m).await }
        })
        .buffer_unordered(opts.concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
    step(start, "retry storm delivered; draining the queue");
    drain(&stack, &seen, Duration::from_secs(300)).await?;

    // 5. Late redeliveries: completed events straight onto the queue with fresh deduplication
    //    ids, as after the queue's five-minute window. The consumer's ledger check stops them.
    let late: Vec<(String, (String, String))> = {
        let s = lock(&seen);
        s.envelopes
            .iter()
            .take(opts.late)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    for (n, (key, (group, body))) in late.iter().enumerate() {
        stack
            .sqs
            .send_message()
            .queue_url(&stack.resources.queue_url)
            .message_group_id(group)
            .message_deduplication_id(sqs_id(&format!("late-{n}:{key}")))
            .message_body(body)
            .send()
            .await?;
        direct_sends += 1;
    }
    step(
        start,
        &format!(
            "{} completed events redelivered late onto the queue",
            late.len()
        ),
    );
    drain(&stack, &seen, Duration::from_secs(120)).await?;
    let took = clock.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = bridge_task.await;
    // Let the last EMF lines through the emulator's output.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 6. Count.
    let answers = std::mem::take(&mut *lock(&answers));
    let calls = stack.sor.calls();
    let mut forward_failures = 0;
    for key in &failing {
        forward_failures += calls.get(key).copied().unwrap_or(0).min(1);
    }
    let total_calls: u64 = calls.values().sum();
    let side_effects = total_calls - forward_failures;
    let mut keys_not_once = Vec::new();
    for key in &answers.accepted {
        let expected = 1 + u64::from(failing.contains(key));
        if calls.get(key).copied().unwrap_or(0) != expected {
            keys_not_once.push(key.clone());
        }
    }
    for key in calls.keys() {
        if !answers.accepted.contains(key) {
            keys_not_once.push(key.clone());
        }
    }
    let mut not_completed = 0;
    for key in &answers.accepted {
        let done = ledger
            .get(key)
            .await?
            .is_some_and(|r| r.status == Status::Completed);
        if !done {
            not_completed += 1;
        }
    }
    let out: &Output = &stack.watch.output;
    let seen = lock(&seen);
    Ok(Report {
        by_answer: answers.by_answer.clone(),
        attempts: answers.attempts,
        retries: answers.retries,
        gave_up: answers.gave_up,
        accepted: answers.accepted.len(),
        replayed: answers.replayed,
        emf_accepted: out.count("receiver", Metric::Accepted),
        emf_replayed: out.count("receiver", Metric::Replayed),
        direct_sends,
        messages_seen: seen.messages.len(),
        consumer_duplicates: out.count("consumer", Metric::DuplicateDelivery),
        side_effects,
        forward_failures,
        keys_not_once,
        not_completed,
        took,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Waits until the queue is empty and the bridge has found nothing twice in a row.
async fn drain(
    stack: &Stack,
    seen: &Arc<Mutex<BridgeSeen>>,
    limit: Duration,
) -> anyhow::Result<()> {
    let until = Instant::now() + limit;
    let mut quiet = 0;
    while quiet < 2 {
        if Instant::now() > until {
            bail!("the queue did not drain in {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        let idle = lock(seen).idle;
        if idle && stack.queue_depth().await? == 0 {
            quiet += 1;
        } else {
            quiet = 0;
        }
    }
    Ok(())
}

/// An API Gateway v2 event from `events/` as the HTTP request a sender would make.
fn delivery_from_event(event: &Value) -> anyhow::Result<Delivery> {
    let source = event
        .pointer("/pathParameters/source")
        .and_then(Value::as_str)
        .context("event without pathParameters.source")?;
    let body = event
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let body = if event.get("isBase64Encoded").and_then(Value::as_bool) == Some(true) {
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .context("base64 body")?
    } else {
        body.as_bytes().to_vec()
    };
    let mut headers = Vec::new();
    for (name, value) in event
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        // Hop-by-hop and API Gateway's own headers are set by the HTTP client and the emulator.
        if matches!(
            name.as_str(),
            "content-length" | "host" | "x-forwarded-for" | "x-forwarded-proto"
        ) {
            continue;
        }
        let name: &'static str = Box::leak(name.clone().into_boxed_str());
        headers.push((name, value.as_str().unwrap_or_default().to_owned()));
    }
    Ok(Delivery {
        source: source.to_owned(),
        body,
        signing: Signing::Fixed(headers),
    })
}

// ---------------------------------------------------------------------------------------
// `demo serve` and `demo check-events`
// ---------------------------------------------------------------------------------------

/// Starts the stack on `address:port` and waits for Ctrl-C.
pub async fn serve(address: &str, port: u16, instances: u32) -> anyhow::Result<()> {
    let start = Instant::now();
    let root = root();
    step(start, "building receiver and consumer");
    build_functions(&root)?;
    let local = root.join(".local");
    let stack = Stack::start(
        &StackOptions {
            address: address.to_owned(),
            port,
            instances,
            env_file: local.join("watch.env"),
            log: local.join("serve-watch.log"),
            echo: true,
            overrides: Vec::new(),
        },
        start,
    )
    .await?;
    let host = if address == "::" || address == "0.0.0.0" {
        "localhost".to_owned()
    } else if address.contains(':') {
        format!("[{address}]")
    } else {
        address.to_owned()
    };
    let port_flag = if port == 9000 {
        String::new()
    } else {
        format!(" -P {port}")
    };
    eprintln!(
        "\nReady. In another terminal:\n\n  make events   # if the stripe/acme files are older than 5 minutes\n  cargo lambda invoke receiver{port_flag} --data-file events/github-first.json\n  cargo lambda invoke consumer{port_flag} --data-file events/sqs-fifo-batch.json\n  curl -i http://{host}:{port}/lambda-url/receiver/webhooks/github -d '{{}}'\n\nThe functions read {} (moto at $AWS_ENDPOINT_URL, queue {}).\nThe system of record counts forwards at {}. Ctrl-C stops everything.\n",
        stack.env_file.display(),
        stack.resources.queue_url,
        stack.sor.url()
    );
    std::future::pending::<()>().await;
    Ok(())
}

/// One line of `check-events`.
#[derive(Debug)]
pub struct Checked {
    pub file: String,
    pub expected: String,
    pub got: String,
    pub ok: bool,
}

/// Invokes every file in `events/` through the emulator, in the README's order, and compares
/// each answer with its expectation.
pub async fn check_events() -> anyhow::Result<Vec<Checked>> {
    let start = Instant::now();
    let dir = events::events_dir();
    let samples = events::generate(testkit::now_ms() / 1000);
    let mut on_disk = Vec::new();
    for s in &samples {
        let path = dir.join(&s.file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {} (run `make events`)", path.display()))?;
        let event: Value = serde_json::from_str(&text)?;
        if s.timestamped {
            let at = events::generated_at(&event).unwrap_or(0);
            let age = testkit::now_ms() / 1000 - at;
            if age > events::STALE_AFTER_S - 30 {
                bail!(
                    "{} was generated {age} s ago: its timestamp is (nearly) stale; run `make events` first",
                    s.file
                );
            }
        }
        on_disk.push(event);
    }
    let root = root();
    step(start, "building receiver and consumer");
    build_functions(&root)?;
    let local = root.join(".local");
    let stack = Stack::start(
        &StackOptions {
            address: "127.0.0.1".into(),
            port: watch::free_port()?,
            instances: 1,
            env_file: local.join("check-events.env"),
            log: local.join("check-events-watch.log"),
            echo: false,
            overrides: Vec::new(),
        },
        start,
    )
    .await?;
    let mut out = Vec::new();
    for (s, event) in samples.iter().zip(on_disk) {
        let before: u64 = stack.sor.calls().values().sum();
        let answer = stack.watch.invoke(s.function.name(), &event).await?;
        let after: u64 = stack.sor.calls().values().sum();
        let (got, ok) = compare(&s.expected, &answer, after - before);
        out.push(Checked {
            file: s.file.clone(),
            expected: s.expected.describe(),
            got,
            ok,
        });
    }
    Ok(out)
}

/// Compares a function's answer with an expectation: (what it got, in the README's words; ok).
pub fn compare(expected: &events::Expected, answer: &Value, forwarded: u64) -> (String, bool) {
    match expected {
        events::Expected::Http { .. } => {
            let status = answer
                .get("statusCode")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let body = answer
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let replayed = answer
                .pointer("/headers/idempotent-replayed")
                .and_then(Value::as_str)
                == Some("true");
            let got = events::Expected::Http {
                status: u16::try_from(status).unwrap_or(0),
                body,
                replayed,
            };
            (got.describe(), &got == expected)
        }
        events::Expected::Batch { .. } => {
            let failures = answer
                .get("batchItemFailures")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.get("itemIdentifier").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let got = events::Expected::Batch {
                failures,
                side_effects: usize::try_from(forwarded).unwrap_or(0),
            };
            (got.describe(), &got == expected)
        }
    }
}
