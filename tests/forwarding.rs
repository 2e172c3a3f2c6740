//! The shipped forwarder against a real HTTP server on loopback as the system of record, behind
//! the real receiver and consumer on a local stack (docs/design.md §6):
//!
//! - every forward verifies with the official `standardwebhooks` package (Python, the
//!   workspace's `.venv` or `INBOX_PYTHON`), with either secret during a rotation, and a
//!   tampered body does not; `webhook-id` is the same on every retry;
//! - a 3xx is a failure: the event stays not COMPLETED and is reported failed, and the server
//!   never sees the redirect followed (301, 302, 303 to a page that answers GET 200; 307, 308
//!   to one that answers POST 200);
//! - a 429 with `Retry-After: 5` brings the message back after about five seconds (not the
//!   queue's 360 s visibility timeout, nor at once under the bridge's retry shortcut), nothing
//!   else starts meanwhile, and it then completes once;
//! - `inbox-ops` pause holds delivery while the receiver answers 200, resume delivers each
//!   event exactly once (the bridge follows the event source mapping moto holds).
//!
//! Nothing sleeps blindly: every wait polls with a deadline.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use devstack::bridge::{Bridge, Watched};
use devstack::testkit::{self, github_headers, post, LocalAws, TEST_WHSEC};
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings};
use inbox::forward::signing::webhook_id;
use inbox::forward::ForwardSigner;
use inbox::forward::HttpForwarder;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::{tally, Metric, Metrics};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::SqsRedelivery;
use inbox_ops::esm::{self, Locator};
use serde_json::{json, Value};

use crate::support::downstream::{Downstream, Seen};
use crate::support::{self, drain};

/// A second Standard Webhooks secret, for a rotation.
const OTHER_WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

type Cx = Consumer<
    DynamoLedger,
    HttpForwarder,
    SystemClock,
    inbox::consumer::Wiring<Watched<SqsRedelivery>>,
>;

/// The consumer as deployed, on the stack's ledger and queues: groups one at a time, so that
/// what a throttle holds back is deterministic.
fn consumer(aws: &LocalAws, forwarder: HttpForwarder) -> (Cx, testkit::MetricLines) {
    let (metrics, lines) = Metrics::memory("consumer");
    let redelivery = SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    );
    let cx = Consumer::new(
        testkit::test_sources(),
        aws.ledger(),
        forwarder,
        SystemClock,
        ConsumerSettings {
            max_concurrent_groups: 1,
            max_failures: 5,
            queue_retention_seconds: Some(345_600),
            archive_bodies: false,
        },
        metrics,
    )
    .with_redelivery(Watched(redelivery));
    (cx, lines)
}

fn forwarder(url: &str) -> HttpForwarder {
    HttpForwarder::new(url, Duration::from_secs(5)).expect("the forwarder's client builds")
}

async fn invoke(cx: &Cx, event: SqsEvent) -> anyhow::Result<SqsBatchResponse> {
    let deadline = testkit::now_ms() + 30_000;
    Ok(cx
        .handle_batch(&event.records, &testkit::unique("cx"), Some(deadline))
        .await)
}

/// Accepts a GitHub delivery `id` at the receiver (200).
async fn accept(rx: &testkit::TestReceiver, id: &str) -> String {
    let body = format!(r#"{{"action":"opened","number":"{id}"}}"#).into_bytes();
    let resp = rx
        .handle(post("github", &github_headers(id, &body), &body))
        .await;
    assert_eq!(resp.status(), 200, "{id} accepted");
    format!("github:{id}")
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tests/python/verify_forward.py` on a request: whether each secret verifies it.
fn verify_with_python(secrets: &[&str], request: &Seen) -> Vec<bool> {
    let python = std::env::var_os("INBOX_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python"));
    let script = workspace_root().join("tests/python/verify_forward.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    let input = json!({
        "secrets": secrets,
        "headers": request.headers,
        "body_base64": B64.encode(&request.body),
    });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write the request");
    let out = child.wait_with_output().expect("verify_forward.py");
    assert!(
        out.status.success(),
        "verify_forward.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(answer["package"]
        .as_str()
        .unwrap_or_default()
        .starts_with("standardwebhooks"));
    answer["verified"]
        .as_array()
        .expect("verified")
        .iter()
        .map(|v| v.as_bool().expect("a bool"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_verify_with_the_standard_webhooks_library_during_a_rotation() {
    let aws = LocalAws::new("fwd-sign").await;
    // The first call fails, so the event is forwarded twice.
    let sor = Downstream::start(|_, before| (if before == 0 { 500 } else { 200 }, vec![]));
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let signer = ForwardSigner::new(&[TEST_WHSEC, OTHER_WHSEC]).expect("whsec_ secrets");
    let (cx, _) = consumer(&aws, forwarder(&sor.url("/events")).signed(signer));
    let bridge = support::bridge(&aws).await;
    let key = accept(&rx, "sign-1").await;
    drain(&bridge, |e| invoke(&cx, e)).await;
    assert_eq!(
        aws.ledger().get(&key).await.unwrap().expect("item").status,
        Status::Completed
    );

    let forwards = sor.for_key(&key);
    assert_eq!(forwards.len(), 2, "failed once, then completed");
    for f in &forwards {
        assert_eq!(f.method, "POST");
        assert_eq!(f.headers["x-webhook-source"], "github");
        assert_eq!(
            f.headers["webhook-id"],
            webhook_id(&key, None),
            "derived from the key"
        );
        assert!(!f.headers["webhook-id"].contains('.'));
        assert!(!f.headers.contains_key("referer"));
        assert_eq!(
            f.headers["webhook-signature"].split(' ').count(),
            2,
            "one per secret"
        );
        assert_eq!(
            verify_with_python(
                &[
                    TEST_WHSEC,
                    OTHER_WHSEC,
                    "whsec_c29tZW9uZS1lbHNlcy1rZXktb2YtMjQtYnl0ZXM="
                ],
                f
            ),
            [true, true, false],
            "either secret verifies, a stranger's does not"
        );
        let mut tampered = f.clone();
        tampered.body.extend_from_slice(b" ");
        assert_eq!(
            verify_with_python(&[TEST_WHSEC, OTHER_WHSEC], &tampered),
            [false, false]
        );
    }
    assert_eq!(
        forwards[0].headers["webhook-id"], forwards[1].headers["webhook-id"],
        "the same webhook-id on every retry"
    );

    // One secret: its signature alone, verifying with it only.
    let single = Downstream::start(|_, _| (200, vec![]));
    let signer = ForwardSigner::new(&[OTHER_WHSEC]).expect("whsec_");
    let (cx, _) = consumer(&aws, forwarder(&single.url("/events")).signed(signer));
    let key = accept(&rx, "sign-2").await;
    drain(&bridge, |e| invoke(&cx, e)).await;
    let forwards = single.for_key(&key);
    assert_eq!(forwards.len(), 1);
    assert_eq!(
        verify_with_python(&[OTHER_WHSEC, TEST_WHSEC], &forwards[0]),
        [true, false]
    );
}

/// A replay's identity is inside what is signed. Its `webhook-id` is
/// derived from the key and the replay id, so it verifies with the `standardwebhooks`
/// library as itself, differs from the original's (a system of record deduplicating on
/// `webhook-id` runs it), and a forward whose `webhook-id` is changed (to the original's, or
/// to another replay's) no longer verifies. `Idempotency-Key` stays the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_is_signed_as_itself_and_a_changed_webhook_id_fails() {
    let aws = LocalAws::new("fwd-replay-sign").await;
    let sor = Downstream::start(|_, _| (200, vec![]));
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let signer = ForwardSigner::new(&[TEST_WHSEC]).expect("whsec_ secret");
    let (cx, _) = consumer(&aws, forwarder(&sor.url("/events")).signed(signer));
    let bridge = support::bridge(&aws).await;
    let key = accept(&rx, "rp-sign-1").await;
    drain(&bridge, |e| invoke(&cx, e)).await;

    // The replay, as inbox-ops replay puts it on the queue: the archived event, a replay id.
    let body = br#"{"action":"opened","number":"rp-sign-1"}"#;
    let mut replay = inbox::queue::Envelope::new(
        &key,
        "github",
        testkit::now_ms(),
        &inbox::key::sha256_hex(body),
        BTreeMap::new(),
        body,
    );
    replay.replay_id = Some("rp-a".to_owned());
    let recorded = aws
        .ledger()
        .request_replay(&key, &replay.payload_sha256, "rp-a", testkit::now_ms())
        .await
        .expect("recorded");
    assert!(recorded, "the replay recorded on the accepted event's item");
    inbox::queue::Queue::send(
        &aws.queue(),
        inbox::queue::Outgoing::new(&key, "replay:rp-a", replay.to_json()),
    )
    .await
    .expect("replay sent");
    drain(&bridge, |e| invoke(&cx, e)).await;

    let forwards = sor.for_key(&key);
    assert_eq!(forwards.len(), 2, "the original, then its replay");
    let (original, replayed) = (&forwards[0], &forwards[1]);
    assert_eq!(replayed.headers["idempotency-key"], key);
    assert_eq!(replayed.headers["webhook-replay-id"], "rp-a");
    assert_eq!(original.headers["webhook-id"], webhook_id(&key, None));
    assert_eq!(
        replayed.headers["webhook-id"],
        webhook_id(&key, Some("rp-a"))
    );
    assert_ne!(
        replayed.headers["webhook-id"],
        original.headers["webhook-id"]
    );
    assert_eq!(verify_with_python(&[TEST_WHSEC], replayed), [true]);
    for forged_id in [
        original.headers["webhook-id"].clone(),
        webhook_id(&key, Some("rp-b")),
    ] {
        let mut changed = replayed.clone();
        changed.headers.insert("webhook-id".to_owned(), forged_id);
        assert_eq!(
            verify_with_python(&[TEST_WHSEC], &changed),
            [false],
            "a replay's webhook-id is signed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_a_failure_and_never_followed() {
    let aws = LocalAws::new("fwd-redirect").await;
    // POST /events/<status> answers that redirect to /moved, which answers anything 200.
    let sor = Downstream::start(|seen, _| match seen.path.strip_prefix("/events/") {
        Some(code) => (
            code.parse().expect("a status"),
            vec![("Location", "/moved".to_owned())],
        ),
        None => (200, vec![]),
    });
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    for (status, reason) in [
        (301, "Moved Permanently"),
        (302, "Found"),
        (303, "See Other"),
        (307, "Temporary Redirect"),
        (308, "Permanent Redirect"),
    ] {
        let (cx, lines) = consumer(&aws, forwarder(&sor.url(&format!("/events/{status}"))));
        let key = accept(&rx, &format!("redirect-{status}")).await;
        let round = bridge
            .pump_once(|e| invoke(&cx, e))
            .await
            .expect("pump")
            .expect("a message");
        assert_eq!(
            (round.received, round.failed),
            (1, 1),
            "{status}: reported failed"
        );
        let item = aws.ledger().get(&key).await.unwrap().expect("item");
        assert_ne!(item.status, Status::Completed, "{status}");
        assert_eq!(item.status, Status::Failed, "{status}");
        assert_eq!(
            item.last_error.as_deref(),
            Some(
                format!("forward answered {status} {reason} (redirects are not followed)").as_str()
            )
        );
        assert_eq!(tally(&lines.lock().unwrap(), "github", Metric::Failed), 1);
        let forwards = sor.for_key(&key);
        assert_eq!(forwards.len(), 1, "{status}: one POST");
        assert_eq!(forwards[0].path, format!("/events/{status}"));
    }
    assert!(
        sor.seen().iter().all(|r| r.path != "/moved"),
        "no redirect was followed: {:?}",
        sor.seen()
            .iter()
            .map(|r| (&r.method, &r.path))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_comes_back_after_it_and_then_completes_once() {
    let aws = LocalAws::new("fwd-429").await;
    // The first forward is throttled for five seconds; the rest are accepted.
    let sor = Downstream::start(|_, before| {
        if before == 0 {
            (429, vec![("Retry-After", "5".to_owned())])
        } else {
            (200, vec![])
        }
    });
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, lines) = consumer(&aws, forwarder(&sor.url("/events")));
    // The queue's visibility timeout is 360 s, and the bridge's shortcut would make a failed
    // message visible at once: the consumer's delay must hold against both.
    let bridge = support::bridge(&aws).await;
    let first = accept(&rx, "throttle-1").await;
    let second = accept(&rx, "throttle-2").await;

    let round = bridge
        .pump_once(|e| invoke(&cx, e))
        .await
        .expect("pump")
        .expect("a batch");
    let throttled_at = Instant::now();
    assert_eq!(
        (round.received, round.failed),
        (2, 2),
        "the batch reported failed"
    );
    assert_eq!(sor.seen().len(), 1, "nothing else started after the 429");
    let item = aws.ledger().get(&first).await.unwrap().expect("item");
    assert_eq!(
        (item.status, item.failures),
        (Status::Queued, 0),
        "deferred, no failure"
    );
    assert!(item
        .last_error
        .as_deref()
        .unwrap_or_default()
        .contains("429"));
    let held = aws.ledger().get(&second).await.unwrap().expect("claimed");
    assert_eq!(
        (held.status, held.attempts),
        (Status::Received, 0),
        "never taken"
    );

    // Poll: nothing comes back before about five seconds; both do soon after.
    let deadline = throttled_at + Duration::from_secs(30);
    let round = loop {
        assert!(Instant::now() < deadline, "not back within 30 s");
        if let Some(round) = bridge.pump_once(|e| invoke(&cx, e)).await.expect("pump") {
            break round;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let waited = throttled_at.elapsed();
    assert!(
        waited >= Duration::from_secs(4),
        "back after {waited:?}, before the Retry-After"
    );
    assert_eq!((round.received, round.deleted), (2, 2), "both complete");
    for key in [&first, &second] {
        let item = aws.ledger().get(key).await.unwrap().expect("item");
        assert_eq!(item.status, Status::Completed, "{key}");
        assert_eq!(item.failures, 0, "{key}: throttled tries are no failures");
        let applied = sor
            .for_key(key)
            .into_iter()
            .filter(|r| r.method == "POST")
            .count();
        assert_eq!(applied, if key == &first { 2 } else { 1 }, "{key}");
    }
    let lines = lines.lock().unwrap().clone();
    assert_eq!(tally(&lines, "github", Metric::Throttled), 1);
    assert_eq!(tally(&lines, "github", Metric::Completed), 2);
    assert_eq!(tally(&lines, "github", Metric::Failed), 0);
    assert!(
        drain(&bridge, |e| invoke(&cx, e)).await.is_empty(),
        "completed once: nothing left"
    );
}

/// `ApproximateAgeOfOldestMessage` of the stack's queue on the local CloudWatch, a minute ago,
/// as SQS publishes it once a minute (nothing publishes it on moto).
async fn put_queue_age(aws: &LocalAws, seconds: f64) {
    use aws_sdk_cloudwatch::types::{Dimension, MetricDatum};
    let queue_name = aws.resources.queue_url.rsplit('/').next().expect("a name");
    let at = std::time::SystemTime::now() - Duration::from_secs(60);
    aws_sdk_cloudwatch::Client::new(&aws.sdk)
        .put_metric_data()
        .namespace("AWS/SQS")
        .metric_data(
            MetricDatum::builder()
                .metric_name("ApproximateAgeOfOldestMessage")
                .dimensions(
                    Dimension::builder()
                        .name("QueueName")
                        .value(queue_name)
                        .build(),
                )
                .value(seconds)
                .timestamp(at.into())
                .build(),
        )
        .send()
        .await
        .expect("PutMetricData");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_holds_delivery_and_resume_delivers_each_event_once() {
    let aws = LocalAws::new("fwd-pause").await;
    let sor = Downstream::start(|_, _| (200, vec![]));
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, _) = consumer(&aws, forwarder(&sor.url("/events")));
    let lambda = aws_sdk_lambda::Client::new(&aws.sdk);
    let uuid = aws.stack.event_source_mapping.uuid.clone();
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge")
        .with_mapping(lambda.clone(), &uuid);

    // The mapping, found as the operator would: from the stack, from the function.
    let by_stack = Locator::Stack(aws.stack.name.clone());
    assert_eq!(
        esm::find(&aws.sdk, &by_stack).await.expect("by stack"),
        uuid
    );
    let by_function = Locator::Function(aws.stack.consumer.name.clone());
    assert_eq!(
        esm::find(&aws.sdk, &by_function)
            .await
            .expect("by function"),
        uuid
    );

    let paused = esm::set_enabled(&lambda, &uuid, false, Duration::from_secs(30))
        .await
        .expect("pause");
    assert!(paused.paused(), "{}", paused.state);

    // The receiver keeps accepting; nothing is delivered.
    let mut keys = Vec::new();
    for n in 0..3 {
        keys.push(accept(&rx, &format!("paused-{n}")).await);
    }
    let waited_until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < waited_until {
        let round = bridge.pump_once(|e| invoke(&cx, e)).await.expect("pump");
        assert_eq!(round, None, "delivered while paused");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(sor.seen().is_empty(), "the system of record heard nothing");
    let status = inbox_ops::status::status(&aws.sdk, &by_stack, None)
        .await
        .expect("status");
    assert!(status.mapping.paused());
    assert_eq!(status.queue.waiting, 3, "{}", status.to_text());
    assert!(status.to_text().starts_with("delivery: PAUSED"));
    // CloudWatch answered (in the SDK's protocol): no datapoint yet, as SQS publishes none on
    // moto. The age SQS would publish, put there, is what status reads.
    assert_eq!(status.oldest_age_seconds, Ok(None), "{}", status.to_text());
    put_queue_age(&aws, 42.0).await;
    let status = inbox_ops::status::status(&aws.sdk, &by_stack, None)
        .await
        .expect("status");
    assert_eq!(
        status.oldest_age_seconds,
        Ok(Some(42)),
        "{}",
        status.to_text()
    );

    let resumed = esm::set_enabled(&lambda, &uuid, true, Duration::from_secs(30))
        .await
        .expect("resume");
    assert_eq!(resumed.state, "Enabled");
    let deadline = Instant::now() + Duration::from_secs(30);
    while keys.len() > sor.seen().len() {
        assert!(Instant::now() < deadline, "not delivered after resume");
        drain(&bridge, |e| invoke(&cx, e)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for key in &keys {
        assert_eq!(sor.for_key(key).len(), 1, "{key}: exactly once");
        let item = aws.ledger().get(key).await.unwrap().expect("item");
        assert_eq!(item.status, Status::Completed, "{key}");
    }
    let status = inbox_ops::status::status(&aws.sdk, &by_stack, None)
        .await
        .expect("status");
    assert!(!status.mapping.paused());
    assert_eq!(
        status.queue.waiting + status.queue.in_flight,
        0,
        "{}",
        status.to_text()
    );
}
