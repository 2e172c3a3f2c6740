//! Destinations on the local AWS API server (docs/routing.md): the real consumer, ledger and
//! queue of a local stack, real HTTP systems of record on loopback, and moto's EventBridge and
//! SQS as targets.
//!
//! - fan-out to two HTTP destinations where one fails three times, then succeeds: the other is
//!   called exactly once, the failing one applies exactly once, each pair COMPLETED;
//! - an EventBridge bus whose rule targets an SQS queue receives each routed event once, with
//!   `Source` `webhook-inbox.<source>`, `DetailType` the event type and the key in `Detail`;
//!   an SQS destination receives each once; a filter sends `invoice.paid` to billing and not to
//!   CI, and `push` to CI and not to billing.
//!
//! Envelopes carrying `event_type` are put on the queue as the receiver writes them once the
//! source declares its event type (issue 23); the fan-out test goes through the receiver.

use std::collections::BTreeMap;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, LocalAws, SystemOfRecord};
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings};
use inbox::destination::{Adapter, EventBus, QueueTarget, Targets};
use inbox::forward::HttpForwarder;
use inbox::key::sha256_hex;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::Metrics;
use inbox::queue::{Envelope, Outgoing, Queue as _};
use inbox::receiver::ReceiverSettings;
use inbox::route::{destination_key, Routes};
use inbox::SourceSpecs;
use serde_json::Value;

fn specs(aws: &LocalAws) -> SourceSpecs {
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

fn unused_forward() -> HttpForwarder {
    HttpForwarder::new(
        testkit::UNUSED_FORWARD_URL,
        std::time::Duration::from_secs(1),
    )
    .expect("a forwarder")
}

async fn bridge(aws: &LocalAws) -> Bridge {
    let mut b = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    b.retry_failed_now = true;
    b
}

/// Pumps until nothing is visible (bounded); the consumer's answers.
async fn drain<F, Fut>(b: &Bridge, run: F)
where
    F: Fn(SqsEvent) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<SqsBatchResponse>>,
{
    for _ in 0..200 {
        if b.pump_once(&run).await.expect("pump").is_none() {
            return;
        }
    }
    panic!("the queue did not drain in 200 rounds");
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
    let specs = specs(&aws);
    let routes = Routes::parse(
        r#"{"ledger": {"target": "https://ledger.example/in", "sources": ["github"]},
            "crm": {"target": "https://crm.example/in", "sources": ["github"]}}"#,
        &specs,
    )
    .expect("routes");
    // The targets' URLs are the loopback servers (an https:// URL is what the configuration
    // takes; the adapter itself takes any URL).
    let targets = Targets::new(
        BTreeMap::from([
            ("ledger".to_owned(), http(ledger_sor.url())),
            ("crm".to_owned(), http(crm_sor.url())),
        ]),
        None,
    );
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
    let cx = &cx;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let ids = ["d-1", "d-2", "d-3"];
    for id in ids {
        let body = format!(r#"{{"n":"{id}"}}"#);
        let answer = rx
            .handle(post(
                "github",
                &github_headers(id, body.as_bytes()),
                body.as_bytes(),
            ))
            .await;
        assert_eq!(answer.status(), 200);
    }
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
}

/// A queue on moto; its URL and ARN.
async fn queue(aws: &LocalAws, name: &str) -> (String, String) {
    let url = aws
        .sqs
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .expect("create queue")
        .queue_url()
        .expect("url")
        .to_owned();
    let arn = format!("arn:aws:sqs:us-east-1:123456789012:{name}");
    (url, arn)
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
    aws.queue()
        .send(Outgoing::new(&key, &key, env.to_json()))
        .await
        .expect("send");
    key
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
    let bus_arn = events
        .create_event_bus()
        .name(&bus_name)
        .send()
        .await
        .expect("create bus")
        .event_bus_arn()
        .expect("arn")
        .to_owned();
    let (seen_url, seen_arn) = queue(&aws, &testkit::unique("bus-seen")).await;
    let rule = testkit::unique("inbox");
    events
        .put_rule()
        .name(&rule)
        .event_bus_name(&bus_name)
        .event_pattern(r#"{"source": [{"prefix": "webhook-inbox."}]}"#)
        .send()
        .await
        .expect("put rule");
    events
        .put_targets()
        .rule(&rule)
        .event_bus_name(&bus_name)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("seen")
                .arn(&seen_arn)
                .build()
                .expect("target"),
        )
        .send()
        .await
        .expect("put targets");
    let ci_name = testkit::unique("ci");
    let (ci_url, ci_arn) = queue(&aws, &ci_name).await;
    let specs = specs(&aws);
    let routes = Routes::parse(
        &format!(
            r#"{{"billing": {{"target": "https://billing.example/in", "sources": ["stripe"], "event_types": ["invoice.*"]}},
                "bus": {{"target": "{bus_arn}", "sources": ["stripe"]}},
                "ci": {{"target": "{ci_arn}", "sources": ["github", "stripe"], "event_types": ["push"]}}}}"#
        ),
        &specs,
    )
    .expect("routes");
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
    let (metrics, _) = Metrics::memory("consumer");
    let cx = Consumer::new(
        specs,
        aws.ledger(),
        unused_forward(),
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    )
    .with_destinations(routes, targets);
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
