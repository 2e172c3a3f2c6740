//! Shared by the end-to-end tests and the demo: local AWS provisioned from the template,
//! signed requests, and a system of record that counts calls per `Idempotency-Key`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lambda_http::{Body, Request, RequestExt};

use inbox::clock::SystemClock;
use inbox::config::{AwsSecretResolver, SourceSpecs};
use inbox::consumer::{Consumer, ConsumerSettings, HttpForwarder, Processor};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::metrics::Metrics;
use inbox::queue::SqsQueue;
use inbox::receiver::{Receiver, ReceiverSettings};

use crate::faults::{self, Faults};
use crate::moto;
use crate::provision::{self, Provisioned, Template};
use crate::senders::{self, Sender as _};

pub mod apigw;

/// The secret the tests' and the demo's sources verify with (never a real one).
pub const TEST_SECRET: &str = "demo-secret-for-local-use-only";
/// A Standard Webhooks secret (`whsec_` + base64 of the bytes of TEST_SECRET).
pub const TEST_WHSEC: &str = "whsec_ZGVtby1zZWNyZXQtZm9yLWxvY2FsLXVzZS1vbmx5";

/// Sources used by the tests and the demo: one per shipped scheme.
pub const TEST_SOURCES: &str = r#"{
  "github": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_SECRET"]},
             "key": {"from": "header", "name": "X-GitHub-Delivery"}},
  "stripe": {"signature": {"scheme": "stripe", "secrets": ["env:INBOX_TEST_SECRET"], "tolerance_seconds": 300},
             "key": {"from": "json", "pointers": ["/id"]}},
  "acme":   {"signature": {"scheme": "standard-webhooks", "secrets": ["env:INBOX_TEST_WHSEC"]},
             "key": {"from": "header", "name": "webhook-id"},
             "group": {"from": "json", "pointers": ["/customer_id"]}},
  "shop":   {"signature": {"scheme": "shopify", "secrets": ["env:INBOX_TEST_SECRET"]},
             "key": {"from": "header", "name": "X-Shopify-Event-Id"}},
  "strict": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_SECRET"]},
             "key": {"from": "header", "name": "X-GitHub-Delivery"}, "on_payload_mismatch": "reject"},
  "orders": {"signature": {"scheme": "hmac-sha256", "secrets": ["env:INBOX_TEST_SECRET"], "header": "X-Signature", "encoding": "hex"},
             "key": {"from": "json", "pointers": ["/type", "/order/id"]}}
}"#;

/// Puts the test secrets in the environment (the sources read them as `env:`).
pub fn set_test_secrets() {
    std::env::set_var("INBOX_TEST_SECRET", TEST_SECRET);
    std::env::set_var("INBOX_TEST_WHSEC", TEST_WHSEC);
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other test in this run uses.
pub fn unique(label: &str) -> String {
    format!(
        "{label}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The receiver as the tests build it: DynamoDB ledger, SQS queue, the system clock.
pub type TestReceiver = Receiver<DynamoLedger, SqsQueue, SystemClock>;
/// The consumer as the tests build it, with the shipped forwarder unless told otherwise.
pub type TestConsumer<P = HttpForwarder> = Consumer<DynamoLedger, P, SystemClock>;
/// The EMF lines a function wrote (`Metrics::memory`).
pub type MetricLines = Arc<Mutex<Vec<String>>>;

/// [`TEST_SOURCES`], parsed.
pub fn test_sources() -> SourceSpecs {
    SourceSpecs::parse(TEST_SOURCES).expect("TEST_SOURCES parses")
}

/// The consumer over [`TEST_SOURCES`] on any ledger (a counted client, say).
pub fn consumer_on<P: Processor>(
    ledger: DynamoLedger,
    processor: P,
) -> (TestConsumer<P>, MetricLines) {
    let (metrics, lines) = Metrics::memory("consumer");
    let consumer = Consumer::new(
        test_sources(),
        ledger,
        processor,
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    );
    (consumer, lines)
}

/// The shipped forwarder to `url` (a [`SystemOfRecord`]), 5 s timeout.
pub fn forwarder(url: &str) -> HttpForwarder {
    HttpForwarder::new(url, std::time::Duration::from_secs(5))
        .expect("the forwarder's client builds")
}

/// A receiver setting: how long a duplicate waits behind a live claim before its 503.
pub fn in_progress_wait(ms: u64) -> ReceiverSettings {
    ReceiverSettings {
        in_progress_wait: std::time::Duration::from_millis(ms),
        ..ReceiverSettings::default()
    }
}

/// Local AWS for one test: its own table and queues, made from template.yaml.
pub struct LocalAws {
    pub sdk: aws_config::SdkConfig,
    pub faults: Faults,
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub resources: Provisioned,
}

impl LocalAws {
    /// Shared moto server, standard environment, fresh resources named after `label`.
    pub async fn new(label: &str) -> LocalAws {
        moto::shared();
        set_test_secrets();
        let sdk = inbox::app::sdk_config().await;
        let faults = Faults::new();
        let dynamo = faults::dynamo_client(&sdk, &faults);
        let sqs = faults::sqs_client(&sdk, &faults);
        let template = Template::load(&provision::template_path()).expect("template.yaml loads");
        let resources = provision::provision(&template, &dynamo, &sqs, &unique(label))
            .await
            .expect("provisioning local AWS from template.yaml");
        faults.reset_calls();
        LocalAws {
            sdk,
            faults,
            dynamo,
            sqs,
            resources,
        }
    }

    /// The receiver over [`TEST_SOURCES`] on these clients, and the metric lines it writes.
    pub async fn receiver(&self, settings: ReceiverSettings) -> (TestReceiver, MetricLines) {
        let sources = test_sources()
            .resolve(&AwsSecretResolver::env_only())
            .await
            .expect("the test secrets resolve from the environment");
        let (metrics, lines) = Metrics::memory("receiver");
        let receiver = Receiver::new(
            sources,
            self.ledger(),
            self.queue(),
            SystemClock,
            settings,
            metrics,
        );
        (receiver, lines)
    }

    /// The consumer over [`TEST_SOURCES`] on this ledger, running `processor`, and the metric
    /// lines it writes.
    pub fn consumer<P: Processor>(&self, processor: P) -> (TestConsumer<P>, MetricLines) {
        consumer_on(self.ledger(), processor)
    }

    pub fn ledger(&self) -> DynamoLedger {
        DynamoLedger::new(self.dynamo.clone(), &self.resources.table)
    }

    pub fn queue(&self) -> SqsQueue {
        SqsQueue::new(self.sqs.clone(), &self.resources.queue_url)
    }

    /// Receives every message now visible on `queue_url`, leaving them in flight.
    pub async fn receive_all(&self, queue_url: &str) -> Vec<aws_sdk_sqs::types::Message> {
        let mut all = Vec::new();
        loop {
            let out = self
                .sqs
                .receive_message()
                .queue_url(queue_url)
                .max_number_of_messages(10)
                .visibility_timeout(600)
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .send()
                .await
                .expect("receive");
            let batch = out.messages.unwrap_or_default();
            if batch.is_empty() {
                return all;
            }
            all.extend(batch);
        }
    }

    /// Items in the ledger table.
    pub async fn ledger_items(&self) -> Vec<inbox::ledger::Record> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .dynamo
                .scan()
                .table_name(&self.resources.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan");
            for item in out.items() {
                items.push(inbox::ledger::dynamo::from_item(item).expect("readable item"));
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }
}

impl LocalAws {
    /// The same table and queues through clients of their own, with their own fault plan
    /// and SDK settings: another process (one that may die on its own, or retry faster).
    pub fn sibling(&self, sdk: aws_config::SdkConfig, faults: Faults) -> LocalAws {
        let dynamo = faults::dynamo_client(&sdk, &faults);
        let sqs = faults::sqs_client(&sdk, &faults);
        LocalAws {
            sdk,
            faults,
            dynamo,
            sqs,
            resources: self.resources.clone(),
        }
    }

    /// Messages on `queue_url`: (visible, in flight), as SQS approximates them.
    pub async fn queue_counts(&self, queue_url: &str) -> (u64, u64) {
        use aws_sdk_sqs::types::QueueAttributeName as Q;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(Q::ApproximateNumberOfMessages)
            .attribute_names(Q::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("queue attributes");
        let get = |name: &Q| {
            out.attributes()
                .and_then(|a| a.get(name))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (
            get(&Q::ApproximateNumberOfMessages),
            get(&Q::ApproximateNumberOfMessagesNotVisible),
        )
    }

    /// The keys of the messages now visible on `queue_url`, left visible (each is received,
    /// read, and made visible again at once).
    pub async fn peek_keys(&self, queue_url: &str) -> Vec<String> {
        let messages = self.receive_all(queue_url).await;
        let mut keys = Vec::new();
        for m in &messages {
            if let Some(env) = m.body().and_then(|b| inbox::queue::Envelope::parse(b).ok()) {
                keys.push(env.key);
            }
            self.sqs
                .change_message_visibility()
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .visibility_timeout(0)
                .send()
                .await
                .expect("visible again");
        }
        keys.sort();
        keys
    }
}

/// A Lambda context with its own request id and a deadline `lease_ms` from now.
pub fn context(request_id: &str, deadline_ms: i64) -> lambda_runtime::Context {
    let mut ctx = lambda_runtime::Context::default();
    ctx.request_id = request_id.to_owned();
    ctx.deadline = u64::try_from(deadline_ms).unwrap_or(0);
    ctx
}

/// Epoch milliseconds now.
pub fn now_ms() -> i64 {
    inbox::clock::Clock::now_ms(&inbox::clock::SystemClock)
}

/// `POST /webhooks/<source>` as API Gateway hands it to the function, with a fresh request id.
pub fn post(source: &str, headers: &[(&str, String)], body: &[u8]) -> Request {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri(format!("https://example.com/webhooks/{source}"));
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    let req = builder
        .body(Body::Binary(body.to_vec()))
        .expect("a valid test request");
    req.with_lambda_context(context(&unique("req"), now_ms() + 10_000))
}

/// [`post`] from an invocation whose deadline (the receiver's lease) is `deadline_ms`.
pub fn post_with_deadline(
    source: &str,
    headers: &[(&str, String)],
    body: &[u8],
    deadline_ms: i64,
) -> Request {
    post(source, headers, body).with_lambda_context(context(&unique("req"), deadline_ms))
}

/// `X-Hub-Signature-256` for a body, as GitHub computes it with [`TEST_SECRET`].
pub fn github_signature(body: &[u8]) -> String {
    senders::GitHub::new(TEST_SECRET).signature(body)
}

/// Headers of a GitHub `push` delivery signed with [`TEST_SECRET`].
pub fn github_headers(delivery: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    senders::GitHub::new(TEST_SECRET).headers(delivery, 0, body)
}

/// `Stripe-Signature` for a body at `t` (epoch seconds), with [`TEST_SECRET`].
pub fn stripe_signature(body: &[u8], t: i64) -> String {
    senders::Stripe::new(TEST_SECRET).signature(t, body)
}

/// The Standard Webhooks sender of the `acme` source (secret [`TEST_WHSEC`]).
pub fn standard_webhooks() -> senders::StandardWebhooks {
    senders::StandardWebhooks::new(TEST_WHSEC).expect("TEST_WHSEC is whsec_ and base64")
}

/// Standard Webhooks headers for a body, signed with [`TEST_WHSEC`].
pub fn standard_webhooks_headers(id: &str, t: i64, body: &[u8]) -> Vec<(&'static str, String)> {
    standard_webhooks().headers(id, t, body)
}

/// `X-Shopify-Hmac-Sha256` for a body, with [`TEST_SECRET`].
pub fn shopify_signature(body: &[u8]) -> String {
    senders::Shopify::new(TEST_SECRET).signature(body)
}

/// Hex HMAC-SHA256 of a body with [`TEST_SECRET`] (the `orders` source's `X-Signature`).
pub fn hmac_hex(body: &[u8]) -> String {
    senders::HmacHex::new(TEST_SECRET, "x-signature").signature(body)
}

/// A system of record on loopback: counts POSTs per `Idempotency-Key`, and answers 500 to
/// the first `fail_first` calls of any key listed in `failing`.
pub struct SystemOfRecord {
    url: String,
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
    applied: Arc<Mutex<BTreeMap<String, u64>>>,
    failing: Arc<Mutex<BTreeMap<String, u64>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SystemOfRecord {
    pub fn start() -> SystemOfRecord {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .expect("an IP listener");
        let calls: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let failing: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let applied: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
        let (s, c, f, a) = (
            server.clone(),
            calls.clone(),
            failing.clone(),
            applied.clone(),
        );
        let thread = std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let key = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Idempotency-Key"))
                    .map(|h| h.value.as_str().to_owned());
                let mut sink = Vec::new();
                let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
                let status = match key {
                    None => 400,
                    Some(key) => {
                        *c.lock().expect("calls").entry(key.clone()).or_default() += 1;
                        let mut fails = f.lock().expect("failing");
                        match fails.get_mut(&key) {
                            Some(left) if *left > 0 => {
                                *left -= 1;
                                500
                            }
                            _ => {
                                *a.lock().expect("applied").entry(key).or_default() += 1;
                                200
                            }
                        }
                    }
                };
                let _ = request.respond(tiny_http::Response::empty(status));
            }
        });
        SystemOfRecord {
            url: format!("http://127.0.0.1:{port}/events"),
            calls,
            applied,
            failing,
            server,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next `times` calls with this key answer 500.
    pub fn fail_key(&self, key: &str, times: u64) {
        self.failing
            .lock()
            .expect("failing")
            .insert(key.to_owned(), times);
    }

    /// Calls per key so far.
    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.calls.lock().expect("calls").clone()
    }

    pub fn calls_for(&self, key: &str) -> u64 {
        self.calls().get(key).copied().unwrap_or(0)
    }

    /// Calls per key answered 2xx (applied, as far as the caller knows) so far.
    pub fn applied(&self) -> BTreeMap<String, u64> {
        self.applied.lock().expect("applied").clone()
    }

    pub fn applied_for(&self, key: &str) -> u64 {
        self.applied().get(key).copied().unwrap_or(0)
    }
}

impl Drop for SystemOfRecord {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
