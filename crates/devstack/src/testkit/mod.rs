//! Shared by the end-to-end tests, the demo and the bench: the demo sources and their secrets,
//! local AWS on a stack created from the template ([`LocalAws`]), the functions built on it, signed
//! requests ([`requests`], [`apigw`]), a system of record that counts calls per
//! `Idempotency-Key` ([`SystemOfRecord`]), and one over HTTPS with a CA of its own
//! ([`HttpsServer`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use inbox::clock::{Clock, SystemClock};
use inbox::config::SourceSpecs;
use inbox::consumer::{Consumer, ConsumerSettings, Processor};
use inbox::forward::HttpForwarder;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::LedgerStore;
use inbox::metrics::Metrics;
use inbox::queue::SqsQueue;
use inbox::receiver::Receiver;

use crate::local_stack::{env_secrets_to_secrets_manager, Secret};

pub mod apigw;
mod front_door;
mod https_server;
mod local_aws;
pub mod requests;
mod system_of_record;

pub use front_door::FrontDoor;
pub use https_server::{HttpsServer, Received, Reply, TestCertificates};
pub use local_aws::{LocalAws, UNUSED_FORWARD_URL};
pub use requests::{
    context, github_headers, github_signature, hmac_hex, now_ms, post, post_with_deadline,
    shopify_signature, standard_webhooks, standard_webhooks_headers, stripe_signature,
};
pub use system_of_record::{Delivery, SystemOfRecord};

/// The secret the tests' and the demo's sources verify with (never a real one).
pub const TEST_SECRET: &str = "demo-secret-for-local-use-only";
/// A Standard Webhooks secret (`whsec_` + base64 of the bytes of TEST_SECRET).
pub const TEST_WHSEC: &str = "whsec_ZGVtby1zZWNyZXQtZm9yLWxvY2FsLXVzZS1vbmx5";

/// Sources used by the tests and the demo: one per shipped scheme. `github` and `shop` drop
/// their presets' replay guard (`null`): the tests count each first delivery's AWS calls and
/// send one body under several keys; the guard is proven in crates/inbox/tests.
pub const TEST_SOURCES: &str = r#"{
  "github": {"preset": "github", "signature": {"secrets": ["env:INBOX_TEST_SECRET"]}, "replay_guard_seconds": null},
  "stripe": {"preset": "stripe", "signature": {"secrets": ["env:INBOX_TEST_SECRET"], "tolerance_seconds": 300}},
  "acme":   {"signature": {"scheme": "standard-webhooks", "secrets": ["env:INBOX_TEST_WHSEC"]},
             "key": {"from": "header", "name": "webhook-id"},
             "group": {"from": "json", "pointers": ["/customer_id"]}},
  "shop":   {"preset": "shopify", "signature": {"secrets": ["env:INBOX_TEST_SECRET"]}, "replay_guard_seconds": null},
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

/// Where the local stacks' sources keep their secrets in Secrets Manager: `webhook-inbox/<source>`,
/// the names the template's default `WebhookSources` references.
pub const SECRETS_PREFIX: &str = "webhook-inbox";

/// [`TEST_SOURCES`] as the local stacks declare them: each source's secret read from Secrets
/// Manager (`secretsmanager:webhook-inbox/<source>`) instead of the environment, and those
/// secrets, holding [`TEST_SECRET`] or [`TEST_WHSEC`].
pub fn stack_sources() -> (String, Vec<Secret>) {
    env_secrets_to_secrets_manager(TEST_SOURCES, SECRETS_PREFIX, |var| match var {
        "INBOX_TEST_SECRET" => Some(TEST_SECRET.to_owned()),
        "INBOX_TEST_WHSEC" => Some(TEST_WHSEC.to_owned()),
        _ => None,
    })
    .expect("TEST_SOURCES reads only the test secrets")
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
pub type TestReceiver<S = inbox::bucket::NoBucket> =
    Receiver<DynamoLedger, SqsQueue, SystemClock, S>;
/// The consumer as the tests build it, with the shipped forwarder unless told otherwise.
pub type TestConsumer<P = HttpForwarder> = Consumer<DynamoLedger, P, SystemClock>;
/// The consumer as deployed with an archive: the stack's payload bucket and archive stream.
pub type ArchivingConsumer<P> = Consumer<
    DynamoLedger,
    P,
    SystemClock,
    inbox::consumer::Wiring<
        inbox::redelivery::NoRedelivery,
        inbox::bucket::S3Bucket,
        inbox::archive::FirehoseArchive,
    >,
>;
/// The EMF lines a function wrote (`Metrics::memory`).
pub type MetricLines = Arc<Mutex<Vec<String>>>;

/// One consumer invocation over `event`, as the event source mapping makes it: a fresh
/// request id and 30 s to run.
pub async fn consume<L, P, C, W>(
    cx: &Consumer<L, P, C, W>,
    event: SqsEvent,
) -> anyhow::Result<SqsBatchResponse>
where
    L: LedgerStore,
    P: Processor,
    C: Clock,
    W: inbox::consumer::Wired,
{
    Ok(cx
        .handle_batch(&event.records, &unique("inv"), Some(now_ms() + 30_000))
        .await)
}

/// Claims in `ledger` the key of each envelope among `bodies`, as the receiver that accepted
/// it would have left it (docs/design.md §5: the consumer takes nothing else), and returns how
/// many it claimed now (a key claimed before stays as it is); a body that is not an envelope is
/// passed over. For tests and samples that put envelopes on a queue themselves.
pub async fn accept<'a>(
    ledger: &impl LedgerStore,
    bodies: impl IntoIterator<Item = &'a str>,
) -> anyhow::Result<usize> {
    let now = now_ms();
    let mut claimed = 0;
    for body in bodies {
        let Ok(envelope) = inbox::queue::Envelope::parse(body) else {
            continue;
        };
        let outcome = ledger.claim(&envelope.accepted_claim(now, 264)).await?;
        if outcome == inbox::ledger::ClaimOutcome::Claimed {
            claimed += 1;
        }
    }
    Ok(claimed)
}

/// [`accept`] of the messages' bodies.
pub async fn accept_messages(
    ledger: &impl LedgerStore,
    messages: &[aws_lambda_events::sqs::SqsMessage],
) -> anyhow::Result<usize> {
    accept(ledger, messages.iter().filter_map(|m| m.body.as_deref())).await
}

/// [`TEST_SOURCES`], parsed.
pub fn test_sources() -> SourceSpecs {
    SourceSpecs::parse(TEST_SOURCES).expect("TEST_SOURCES parses")
}

/// The consumer over [`TEST_SOURCES`] on any ledger (a counted client, say).
pub fn consumer_on<P: Processor>(
    ledger: DynamoLedger,
    processor: P,
) -> (TestConsumer<P>, MetricLines) {
    consumer_with(test_sources(), ledger, processor)
}

/// The consumer over these sources on any ledger.
pub fn consumer_with<P: Processor>(
    sources: SourceSpecs,
    ledger: DynamoLedger,
    processor: P,
) -> (TestConsumer<P>, MetricLines) {
    let (metrics, lines) = Metrics::memory("consumer");
    let consumer = Consumer::new(
        sources,
        ledger,
        processor,
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    );
    (consumer, lines)
}

/// The shipped forwarder to `url` (a [`SystemOfRecord`]), 30 s timeout. Not the deployed 10 s:
/// on a loaded 2-core machine a loopback answer was seen to take over 5 s, and a forward that
/// times out after the system of record applied it is a second attempt (correct, but the
/// storm's and the call counts' `attempts == 1` would then fail for the machine's sake).
pub fn forwarder(url: &str) -> HttpForwarder {
    HttpForwarder::new(url, std::time::Duration::from_secs(30))
        .expect("the forwarder's client builds")
}
