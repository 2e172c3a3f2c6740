//! Destinations on the local AWS API server (docs/routing.md): the real consumer, ledger and
//! queue of a local stack, real HTTP systems of record on loopback, and moto's EventBridge and
//! SQS as targets.
//!
//! - fan-out to two HTTP destinations where one fails three times, then succeeds: the other is
//!   called exactly once, the failing one applies exactly once, each pair COMPLETED;
//! - an EventBridge bus whose rule targets an SQS queue receives each routed event once, with
//!   `Source` `webhook-inbox.<source>`, `DetailType` the event type and the key in `Detail`;
//!   an SQS destination receives each once; a filter sends `invoice.paid` to billing and not to
//!   CI, and `push` to CI and not to billing;
//! - a destination that keeps failing dead-letters the message: `inbox-ops why` and `lookup`
//!   show each destination's state (from the stack's `Destinations`, as the consumer reads
//!   it), and `replay --destination` runs one destination again, not the others.
//!
//! - what each target receives is the body the sender signed (a 24-digit integer, a name given
//!   twice): the raw bytes to `https://` and SQS, the JSON text in place in the `PutEvents`
//!   request's `Detail` (as a string beyond 64-bit integers) and in a Lambda `Invoke`'s
//!   payload (on a loopback endpoint answering 202, as Lambda answers an asynchronous call).
//!
//! - an event no destination takes goes to the forward (the default destination); with no
//!   `FORWARD_URL` it completes, calls nothing and is counted `Unrouted`, once.
//!
//! Envelopes carrying `event_type` are put on the queue as the receiver writes them once the
//! source declares its event type; the fan-out test goes through the receiver.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_eventbridge::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_eventbridge::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use devstack::targets;
use devstack::testkit::{self, github_headers, post, LocalAws, MetricLines, SystemOfRecord};
use inbox::archive::NoArchive;
use inbox::bucket::NoBucket;
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings, Outcome, DEFAULT_MAX_FAILURES};
use inbox::destination::{Adapter, EventBus, FunctionTarget, QueueTarget, Targets};
use inbox::forward::HttpForwarder;
use inbox::key::sha256_hex;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::Metrics;
use inbox::queue::{Envelope, Outgoing, Queue as _};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::{NoRedelivery, SqsRedelivery};
use inbox::route::{destination_key, Routes};
use inbox::SourceSpecs;
use inbox_ops::cli::StatusFilter;
use inbox_ops::replay::{self, Selection};
use serde_json::Value;

use crate::support::{bridge, drain};

pub(crate) fn specs(aws: &LocalAws) -> SourceSpecs {
    let text = aws
        .stack
        .consumer
        .environment
        .get("WEBHOOK_SOURCES")
        .expect("the consumer's WEBHOOK_SOURCES");
    SourceSpecs::parse(text).expect("the stack's sources parse")
}

fn http(url: &str) -> Adapter {
    Adapter::Http(HttpForwarder::new(url, std::time::Duration::from_secs(5)).expect("a forwarder"))
}

pub(crate) fn unused_forward() -> HttpForwarder {
    HttpForwarder::new(
        testkit::UNUSED_FORWARD_URL,
        std::time::Duration::from_secs(1),
    )
    .expect("a forwarder")
}

/// The two HTTP destinations of the fan-out tests, as `WEBHOOK_DESTINATIONS` (and the stack's
/// `Destinations`) declares them.
const LEDGER_AND_CRM: &str = r#"{"ledger": {"target": "https://ledger.example/in", "sources": ["github"]},
    "crm": {"target": "https://crm.example/in", "sources": ["github"]}}"#;

/// The two HTTP destinations `ledger` and `crm` of the fan-out tests, each a loopback system of
/// record (an https:// URL is what the configuration takes; the adapter itself takes any URL).
fn ledger_and_crm(ledger: &SystemOfRecord, crm: &SystemOfRecord) -> Targets {
    Targets::new(
        BTreeMap::from([
            ("ledger".to_owned(), http(ledger.url())),
            ("crm".to_owned(), http(crm.url())),
        ]),
        None,
    )
}

/// The consumer of [`routed_consumer`]: no redelivery, store or archive; destinations.
type RoutedConsumer = Consumer<
    DynamoLedger,
    HttpForwarder,
    SystemClock,
    inbox::consumer::Wiring<NoRedelivery, NoBucket, NoArchive, Targets>,
>;

/// The consumer over the stack's sources with these destinations (`WEBHOOK_DESTINATIONS`)
/// on these targets, the forward unused; and the metric lines it writes.
fn routed_consumer(
    aws: &LocalAws,
    destinations: &str,
    targets: Targets,
) -> (RoutedConsumer, MetricLines) {
    let specs = specs(aws);
    let routes = Routes::parse(destinations, &specs).expect("routes");
    let (metrics, lines) = Metrics::memory("consumer");
    let cx = Consumer::new(
        specs,
        aws.ledger(),
        unused_forward(),
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    )
    .with_destinations(routes, targets);
    (cx, lines)
}

/// Each id delivered once through the stack's receiver as a signed GitHub event, answered 200.
pub(crate) async fn deliver_github(aws: &LocalAws, ids: &[&str]) {
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    for id in ids {
        let body = format!(r#"{{"n":"{id}"}}"#);
        let answer = rx
            .handle(post(
                "github",
                &github_headers(id, body.as_bytes()),
                body.as_bytes(),
            ))
            .await;
        assert_eq!(answer.status(), 200, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: set up, deliver, check every pair"
)]
async fn fan_out_applies_each_destination_once_while_one_fails_three_times() {
    let aws = LocalAws::new("fanout").await;
    let ledger_sor = SystemOfRecord::start();
    let crm_sor = SystemOfRecord::start();
    let (cx, lines) = routed_consumer(&aws, LEDGER_AND_CRM, ledger_and_crm(&ledger_sor, &crm_sor));
    let cx = &cx;
    let ids = ["d-1", "d-2", "d-3"];
    deliver_github(&aws, &ids).await;
    crm_sor.fail_key("github:d-2", 3);
    let b = bridge(&aws).await;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    for id in ids {
        let key = format!("github:{id}");
        assert_eq!(
            ledger_sor.calls_for(&key),
            1,
            "ledger called once for {key}"
        );
        assert_eq!(ledger_sor.applied_for(&key), 1);
        assert_eq!(crm_sor.applied_for(&key), 1, "crm applied once for {key}");
        for d in ["ledger", "crm"] {
            let pair = aws
                .ledger()
                .get(&destination_key(&key, d))
                .await
                .expect("get")
                .expect("the pair's item");
            assert_eq!(pair.status, Status::Completed, "{key} to {d}");
        }
        let event = aws.ledger().get(&key).await.expect("get").expect("item");
        assert_eq!(event.status, Status::Completed);
    }
    assert_eq!(
        crm_sor.calls_for("github:d-2"),
        4,
        "three failures, then once"
    );
    let crm_d2 = aws
        .ledger()
        .get(&destination_key("github:d-2", "crm"))
        .await
        .expect("get")
        .expect("item");
    assert_eq!((crm_d2.attempts, crm_d2.failures), (4, 3));
    let lines = lines.lock().expect("lines").clone();
    let crm_completed = lines
        .iter()
        .filter(|l| l.contains(r#""destination":"crm""#) && l.contains(r#""Completed":1"#))
        .count();
    assert_eq!(crm_completed, 3, "Completed counted per destination");
    // The index of events (the console's list) holds the events, not their pairs.
    let indexed = aws
        .dynamo
        .query()
        .table_name(&aws.resources.table)
        .index_name(inbox_ops::console::listing::INDEX)
        .key_condition_expression("#source = :source")
        .expression_attribute_names("#source", "source")
        .expression_attribute_values(
            ":source",
            aws_sdk_dynamodb::types::AttributeValue::S("github".into()),
        )
        .send()
        .await
        .expect("query the index");
    let mut keys: Vec<&str> = indexed
        .items()
        .iter()
        .filter_map(|i| i.get("pk").and_then(|v| v.as_s().ok()))
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["github:d-1", "github:d-2", "github:d-3"]);
}

async fn enqueue(aws: &LocalAws, source: &str, id: &str, event_type: &str, body: &str) -> String {
    let key = format!("{source}:{id}");
    let mut env = Envelope::new(
        &key,
        source,
        testkit::now_ms(),
        &sha256_hex(body.as_bytes()),
        BTreeMap::new(),
        body.as_bytes(),
    );
    env.event_type = Some(event_type.to_owned());
    // Accepted as the receiver would have (the consumer takes nothing else), then queued.
    let body = env.to_json();
    testkit::accept(&aws.ledger(), [body.as_str()])
        .await
        .expect("accepted");
    aws.queue()
        .send(Outgoing::new(&key, &key, body))
        .await
        .expect("send");
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: with a forward, then without, on the same destinations"
)]
async fn an_event_no_destination_takes_goes_to_the_forward_or_is_counted_unrouted() {
    let aws = LocalAws::new("unrouted").await;
    let billing = SystemOfRecord::start();
    let records = SystemOfRecord::start();
    let destinations = r#"{"billing": {"target": "https://billing.example/in", "sources": ["stripe"], "event_types": ["invoice.*"]}}"#;
    let billing_only = || {
        Targets::new(
            BTreeMap::from([("billing".to_owned(), http(billing.url()))]),
            None,
        )
    };
    let b = bridge(&aws).await;

    // With a forward: the invoice to billing, the customer event to the forward, each once.
    let specs = specs(&aws);
    let (metrics, _) = Metrics::memory("consumer");
    let forward =
        HttpForwarder::new(records.url(), std::time::Duration::from_secs(5)).expect("a forwarder");
    let cx = Consumer::new(
        specs.clone(),
        aws.ledger(),
        forward,
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    )
    .with_destinations(
        Routes::parse(destinations, &specs).expect("routes"),
        billing_only(),
    );
    let cx = &cx;
    let paid = enqueue(
        &aws,
        "stripe",
        "evt_u1",
        "invoice.paid",
        r#"{"id":"evt_u1"}"#,
    )
    .await;
    let customer = enqueue(
        &aws,
        "stripe",
        "evt_u2",
        "customer.created",
        r#"{"id":"evt_u2"}"#,
    )
    .await;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    assert_eq!(billing.applied_for(&paid), 1);
    assert_eq!(billing.calls_for(&customer), 0);
    assert_eq!(records.applied_for(&customer), 1, "the default destination");
    assert_eq!(records.calls_for(&paid), 0);
    let item = aws
        .ledger()
        .get(&customer)
        .await
        .expect("get")
        .expect("item");
    assert_eq!(item.status, Status::Completed);

    // Without a forward: the customer event completes, calls nothing, and is counted.
    let (metrics, lines) = Metrics::memory("consumer");
    let routes = Routes::parse(destinations, &specs)
        .expect("routes")
        .without_forward();
    let cx = Consumer::new(
        specs.clone(),
        aws.ledger(),
        None::<HttpForwarder>,
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    )
    .with_destinations(routes, billing_only());
    let cx = &cx;
    let lost = enqueue(
        &aws,
        "stripe",
        "evt_u3",
        "customer.updated",
        r#"{"id":"evt_u3"}"#,
    )
    .await;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    // The same event again (a redelivery): acknowledged, not counted twice.
    let again = {
        let body = r#"{"id":"evt_u3"}"#;
        let mut env = Envelope::new(
            &lost,
            "stripe",
            1,
            &sha256_hex(body.as_bytes()),
            BTreeMap::new(),
            body.as_bytes(),
        );
        env.event_type = Some("customer.updated".into());
        env.to_json()
    };
    aws.queue()
        .send(Outgoing::new(&lost, "late-copy", again))
        .await
        .expect("send");
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    assert_eq!(billing.calls_for(&lost) + records.calls_for(&lost), 0);
    let item = aws.ledger().get(&lost).await.expect("get").expect("item");
    assert_eq!(item.status, Status::Completed);
    let lines = lines.lock().expect("lines").clone();
    assert_eq!(
        inbox::metrics::tally(&lines, "stripe", inbox::metrics::Metric::Unrouted),
        1,
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: the bus, its rule, the queues, the checks"
)]
async fn eventbridge_and_sqs_destinations_each_receive_their_events_once() {
    let aws = LocalAws::new("aws-targets").await;
    let billing = SystemOfRecord::start();
    let bus_name = testkit::unique("payments");
    let events = aws_sdk_eventbridge::Client::new(&aws.sdk);
    let (bus_arn, seen_url) =
        targets::bus_to_queue(&aws.sdk, &bus_name, &testkit::unique("bus-seen"))
            .await
            .expect("the bus, its rule and its queue");
    let ci_name = testkit::unique("ci");
    let (ci_url, ci_arn) = targets::queue(&aws.sqs, &ci_name, false)
        .await
        .expect("the CI queue");
    let destinations = format!(
        r#"{{"billing": {{"target": "https://billing.example/in", "sources": ["stripe"], "event_types": ["invoice.*"]}},
            "bus": {{"target": "{bus_arn}", "sources": ["stripe"]}},
            "ci": {{"target": "{ci_arn}", "sources": ["github", "stripe"], "event_types": ["push"]}}}}"#
    );
    let targets = Targets::new(
        BTreeMap::from([
            ("billing".to_owned(), http(billing.url())),
            (
                "bus".to_owned(),
                Adapter::Bus(EventBus::new(events.clone(), bus_arn.clone(), None)),
            ),
            (
                "ci".to_owned(),
                Adapter::Queue(QueueTarget::new(
                    aws.sqs.clone(),
                    "ci".into(),
                    ci_url.clone(),
                    false,
                    None,
                )),
            ),
        ]),
        None,
    );
    let (cx, _) = routed_consumer(&aws, &destinations, targets);
    let cx = &cx;
    let paid = enqueue(
        &aws,
        "stripe",
        "evt_1",
        "invoice.paid",
        r#"{"id":"evt_1","amount":5}"#,
    )
    .await;
    let push = enqueue(&aws, "github", "p-1", "push", r#"{"ref":"main"}"#).await;
    // The same event again (as a redelivery would be): nothing is delivered twice.
    let again = {
        let body = r#"{"id":"evt_1","amount":5}"#;
        let mut env = Envelope::new(
            &paid,
            "stripe",
            1,
            &sha256_hex(body.as_bytes()),
            BTreeMap::new(),
            body.as_bytes(),
        );
        env.event_type = Some("invoice.paid".into());
        env.to_json()
    };
    let b = bridge(&aws).await;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    aws.queue()
        .send(Outgoing::new(&paid, "late-copy", again))
        .await
        .expect("send");
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;

    // Billing: invoice.paid once, never the push.
    assert_eq!(billing.applied_for(&paid), 1);
    assert_eq!(billing.calls_for(&push), 0);
    // The bus's rule -> SQS: the stripe event once, with Source, DetailType and the key.
    let seen = aws.receive_all(&seen_url).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let event: Value = serde_json::from_str(seen[0].body().expect("body")).expect("json");
    assert_eq!(event["source"], "webhook-inbox.stripe");
    assert_eq!(event["detail-type"], "invoice.paid");
    assert_eq!(event["detail"]["idempotency_key"], paid.as_str());
    assert_eq!(event["detail"]["body"]["amount"], 5);
    // CI: the push once, with the key as a message attribute; never the invoice.
    let ci = aws.receive_all(&ci_url).await;
    assert_eq!(ci.len(), 1, "{ci:?}");
    assert_eq!(ci[0].body(), Some(r#"{"ref":"main"}"#));
    // (receive_all asks for no attributes; the ledger says who got what.)
    for (key, dest, applied) in [
        (&paid, "billing", true),
        (&paid, "bus", true),
        (&paid, "ci", false),
        (&push, "ci", true),
        (&push, "billing", false),
    ] {
        let item = aws
            .ledger()
            .get(&destination_key(key, dest))
            .await
            .expect("get");
        match applied {
            true => assert_eq!(
                item.map(|r| r.status),
                Some(Status::Completed),
                "{key} {dest}"
            ),
            false => assert!(item.is_none(), "{key} never went to {dest}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: a dead letter of one destination, explained, looked up, replayed"
)]
async fn each_destinations_state_is_shown_and_a_replay_runs_one_of_them() {
    let aws = LocalAws::with_destinations("dstate", LEDGER_AND_CRM).await;
    // inbox-ops reads the destinations from the stack as the consumer does.
    let stack = inbox_ops::stack::resolve(&aws.sdk, &aws.stack.name)
        .await
        .expect("the stack's resources");
    let routes = stack.routes().expect("the stack's destinations");
    let consumer_env = aws
        .stack
        .consumer
        .environment
        .get("WEBHOOK_DESTINATIONS")
        .expect("the consumer's WEBHOOK_DESTINATIONS");
    assert_eq!(
        routes,
        Routes::parse(consumer_env, &specs(&aws)).expect("routes")
    );
    let (ledger_sor, crm_sor) = (SystemOfRecord::start(), SystemOfRecord::start());
    let targets = ledger_and_crm(&ledger_sor, &crm_sor);
    let (cx, _) = aws.archiving_consumer(unused_forward());
    let cx = cx
        .with_redelivery(SqsRedelivery::new(
            aws.sqs.clone(),
            &aws.resources.queue_url,
            Some(aws.resources.dlq_url.clone()),
        ))
        .with_destinations(routes.clone(), targets);
    let cx = &cx;
    deliver_github(&aws, &["s-1", "s-2"]).await;
    // The CRM never takes s-2: at its MAX_FAILURES-th failure the message is dead-lettered.
    crm_sor.fail_key("github:s-2", 1000);
    let b = bridge(&aws).await;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    let max = DEFAULT_MAX_FAILURES;
    assert_eq!(crm_sor.calls_for("github:s-2"), u64::from(max));
    assert_eq!(ledger_sor.calls_for("github:s-2"), 1, "never re-run");

    // why: the dead letter, each destination's state, and which one is left.
    let ledger = aws.ledger();
    let why = inbox_ops::why::why(&aws.sqs, &ledger, &routes, &aws.resources.dlq_url, 5)
        .await
        .expect("why");
    assert_eq!(why.letters.len(), 1);
    let letter = &why.letters[0];
    assert_eq!(letter.key(), Some("github:s-2"));
    let states: Vec<(String, Option<Status>, u32)> = letter
        .destinations
        .as_ref()
        .expect("the destinations' items read")
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.record.as_ref().map(|r| r.status),
                s.record.as_ref().map_or(0, |r| r.failures),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("crm".to_owned(), Some(Status::Failed), max),
            ("ledger".to_owned(), Some(Status::Completed), 0),
        ]
    );
    let now = testkit::now_ms();
    let hint = letter.hint(now);
    assert!(hint.starts_with("destination(s) crm not applied"), "{hint}");
    let text = why.to_text(now);
    assert!(
        text.contains(&format!(
            "  to crm: FAILED  attempts {max}  failures {max}  last_error: "
        )),
        "{text}"
    );
    assert!(text.contains("  to ledger: COMPLETED"), "{text}");
    assert_eq!(
        why.to_json(now)["messages"][0]["destinations"][0]["failures"],
        max
    );

    // lookup: the event's item, and each destination's item under `destinations`.
    let table = aws.resources.table.as_str();
    let item = inbox_ops::lookup::lookup(&aws.dynamo, table, "github:s-2")
        .await
        .expect("lookup")
        .expect("the item");
    let pairs =
        inbox_ops::lookup::destination_items(&aws.dynamo, table, &routes, "github:s-2", &item)
            .await
            .expect("the destinations' items")
            .expect("a routed source");
    assert_eq!(pairs["crm"]["status"], "FAILED");
    assert_eq!(pairs["crm"]["failures"], max);
    assert_eq!(pairs["ledger"]["status"], "COMPLETED");
    assert_eq!(pairs["ledger"]["pk"], "github:s-2 to:ledger");

    // replay --destination crm of s-1 (both applied): the CRM once more, the ledger not.
    let store = aws.payload_store();
    let one = Selection::Key("github:s-1".into());
    assert!(replay::check_destination(&routes, &one, "crm").is_ok());
    let unknown = replay::check_destination(&routes, &one, "billing").unwrap_err();
    assert!(
        unknown.to_string().contains("known: crm, ledger"),
        "{unknown}"
    );
    let picked = replay::select_for(&store, &ledger, &one, StatusFilter::Completed, Some("crm"))
        .await
        .expect("select")
        .candidates;
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0].envelope.destination.as_deref(), Some("crm"));
    replay::send(&aws.queue(), &ledger, &picked, "rp-crm", 50, |_| {})
        .await
        .expect("send");
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    assert_eq!(crm_sor.calls_for("github:s-1"), 2, "once, then the replay");
    assert_eq!(ledger_sor.calls_for("github:s-1"), 1, "not replayed");
    let crm_pair = ledger
        .get(&destination_key("github:s-1", "crm"))
        .await
        .expect("get")
        .expect("the pair");
    assert_eq!(crm_pair.status, Status::Completed);
    assert!(crm_pair.replays.contains("rp-crm"), "{crm_pair:?}");
    // The CRM's failed pair is what --status failed selects for it; the ledger's is not.
    let failed = replay::select_for(
        &store,
        &ledger,
        &Selection::Key("github:s-2".into()),
        StatusFilter::Failed,
        Some("ledger"),
    )
    .await
    .expect("select")
    .candidates;
    assert!(failed.is_empty(), "the ledger's pair of s-2 completed");
}

/// A body a general JSON parser would change: an integer beyond 64 bits, a name given twice.
const SIGNED: &str = r#"{"id":123456789012345678901234,"amount":1,"amount":1000}"#;

/// A body within EventBridge's signed 64-bit integers, a name given twice.
const SIGNED_I64: &str = r#"{"id":1234567890123456789,"amount":1,"amount":1000}"#;

/// Every request body a client sends, as it goes on the wire (read before transmit).
#[derive(Clone, Debug, Default)]
struct SentBodies(Arc<Mutex<Vec<Vec<u8>>>>);

impl SentBodies {
    fn all(&self) -> Vec<Vec<u8>> {
        self.0.lock().expect("sent bodies").clone()
    }
}

impl Intercept for SentBodies {
    fn name(&self) -> &'static str {
        "SentBodies"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(bytes) = context.request().body().bytes() {
            self.0.lock().expect("sent bodies").push(bytes.to_vec());
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: three targets, two bodies, what each received"
)]
async fn every_target_receives_the_body_the_sender_signed() {
    let aws = LocalAws::new("rawjson").await;
    let hooks = SystemOfRecord::start();
    let sent = SentBodies::default();
    let events = aws_sdk_eventbridge::Client::from_conf(
        aws_sdk_eventbridge::config::Builder::from(&aws.sdk)
            .interceptor(sent.clone())
            .build(),
    );
    let (bus_arn, seen_url) = targets::bus_to_queue(
        &aws.sdk,
        &testkit::unique("raw-bus"),
        &testkit::unique("raw-seen"),
    )
    .await
    .expect("the bus, its rule and its queue");
    let (queue_url, queue_arn) = targets::queue(&aws.sqs, &testkit::unique("raw-q"), false)
        .await
        .expect("the queue");
    let destinations = format!(
        r#"{{"hooks": {{"target": "https://hooks.example/in", "sources": ["stripe"]}},
            "bus": {{"target": "{bus_arn}", "sources": ["stripe"]}},
            "q": {{"target": "{queue_arn}", "sources": ["stripe"]}}}}"#
    );
    let targets = Targets::new(
        BTreeMap::from([
            ("hooks".to_owned(), http(hooks.url())),
            (
                "bus".to_owned(),
                Adapter::Bus(EventBus::new(events, bus_arn.clone(), None)),
            ),
            (
                "q".to_owned(),
                Adapter::Queue(QueueTarget::new(
                    aws.sqs.clone(),
                    "q".into(),
                    queue_url.clone(),
                    false,
                    None,
                )),
            ),
        ]),
        None,
    );
    let (cx, _) = routed_consumer(&aws, &destinations, targets);
    let cx = &cx;
    let big = enqueue(&aws, "stripe", "evt_big", "invoice.paid", SIGNED).await;
    let fits = enqueue(&aws, "stripe", "evt_i64", "invoice.paid", SIGNED_I64).await;
    let b = bridge(&aws).await;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;
    let signed = |key: &str| if key == big { SIGNED } else { SIGNED_I64 };

    // https: the raw bytes as the body.
    let delivered = hooks.deliveries();
    assert_eq!(delivered.len(), 2, "{delivered:?}");
    for d in &delivered {
        assert_eq!(d.body, signed(&d.key).as_bytes(), "{}", d.key);
    }
    // SQS: the raw text as the message body.
    let mut bodies: Vec<String> = aws
        .receive_all(&queue_url)
        .await
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    bodies.sort();
    assert_eq!(bodies, [SIGNED_I64, SIGNED]);
    // EventBridge: the Detail of each PutEvents request, as sent to the server.
    let details: BTreeMap<String, String> = sent
        .all()
        .iter()
        .filter_map(|body| {
            let request: Value = serde_json::from_slice(body).ok()?;
            let detail = request["Entries"][0]["Detail"].as_str()?.to_owned();
            let key = serde_json::from_str::<Value>(&detail).ok()?["idempotency_key"]
                .as_str()?
                .to_owned();
            Some((key, detail))
        })
        .collect();
    assert_eq!(
        details[&fits],
        format!(
            r#"{{"idempotency_key":"{fits}","source":"stripe","event_type":"invoice.paid","body":{SIGNED_I64}}}"#
        ),
        "within 64 bits: the JSON text itself, both members of one name"
    );
    assert_eq!(
        details[&big],
        format!(
            r#"{{"idempotency_key":"{big}","source":"stripe","event_type":"invoice.paid","body_text":{}}}"#,
            Value::from(SIGNED)
        ),
        "beyond 64 bits: the exact text as a string"
    );
    // The rule's queue: what the bus delivered. The local server reads Detail and writes it
    // again (keeping the last of two members of one name); a string comes through exact.
    let seen = aws.receive_all(&seen_url).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    for message in &seen {
        let event: Value = serde_json::from_str(message.body().expect("body")).expect("an event");
        let key = event["detail"]["idempotency_key"].as_str().expect("key");
        if key == big {
            assert_eq!(event["detail"]["body_text"], SIGNED);
        } else {
            assert_eq!(event["detail"]["body"]["id"], 1_234_567_890_123_456_789_u64);
        }
    }
    for key in [&big, &fits] {
        for d in ["hooks", "bus", "q"] {
            let pair = aws
                .ledger()
                .get(&destination_key(key, d))
                .await
                .expect("get")
                .expect("the pair");
            assert_eq!(pair.status, Status::Completed, "{key} to {d}");
        }
    }
}

/// A Lambda function's endpoint on loopback: answers one `Invoke` 202, as an asynchronous
/// invocation is answered, and hands back the request's path and payload.
fn one_invocation() -> (String, std::thread::JoinHandle<(String, Vec<u8>)>) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind loopback");
    let port = server
        .server_addr()
        .to_ip()
        .map(|a| a.port())
        .expect("an IP listener");
    let thread = std::thread::spawn(move || {
        let mut request = server.recv().expect("the Invoke request");
        let mut payload = Vec::new();
        std::io::Read::read_to_end(request.as_reader(), &mut payload).expect("the payload");
        let path = request.url().to_owned();
        request
            .respond(tiny_http::Response::empty(202))
            .expect("answer 202");
        (path, payload)
    });
    (format!("http://127.0.0.1:{port}"), thread)
}

#[tokio::test]
async fn a_lambda_payload_holds_the_signed_bytes_in_place() {
    use aws_sdk_lambda::config::{BehaviorVersion, Credentials, Region};
    let (endpoint, invocation) = one_invocation();
    let conf = aws_sdk_lambda::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(endpoint)
        .build();
    let function = FunctionTarget::new(
        aws_sdk_lambda::Client::from_conf(conf),
        "arn:aws:lambda:us-east-1:123456789012:function:crm-sync".into(),
        None,
    );
    let job = inbox::Job {
        key: "stripe:evt_big".into(),
        source: "stripe".into(),
        body: SIGNED.as_bytes().to_vec().into(),
        headers: BTreeMap::new(),
        attempt: 1,
        lease_until_ms: i64::MAX,
        replay_id: None,
        event_type: Some("customer.updated".into()),
        trace: None,
    };
    assert_eq!(function.deliver(&job).await, Outcome::Done);
    let (path, payload) = invocation.join().expect("the endpoint's thread");
    assert!(path.contains("/invocations"), "{path}");
    assert_eq!(
        String::from_utf8(payload).expect("UTF-8"),
        format!(
            r#"{{"idempotency_key":"stripe:evt_big","source":"stripe","event_type":"customer.updated","body":{SIGNED}}}"#
        )
    );
}
