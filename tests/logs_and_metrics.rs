//! Operating it, end to end against the local AWS API server:
//!
//! - the logs: the binaries' own subscriber (`init_default_subscriber`, with
//!   `AWS_LAMBDA_LOG_FORMAT=JSON`) writing to a buffer; a known scenario through the real
//!   receiver and consumer, each invocation inside the span the Lambda runtime opens for it;
//!   every outcome line names its source, key and the invocation's request id, and no line
//!   holds a secret, a signature or a body;
//! - the EMF metrics of that scenario, counted exactly;
//! - a throttled forward and a dead letter the consumer moves: their lines and counts.
//!
//! The dead-letter tools (`inbox-ops why|redrive|lookup`) are tested in `crates/ops/tests`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::MessageSystemAttributeName as Sys;
use devstack::bridge::Bridge;
use devstack::faults::When;
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{
    self, github_headers, LocalAws, SystemOfRecord, TestReceiver, TEST_SECRET, TEST_WHSEC,
};
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings, HttpForwarder, Processor};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{Claim, LedgerStore as _};
use inbox::metrics::{tally, Metric, Metrics};
use inbox::receiver::{accepted_response, ReceiverSettings};
use inbox::redelivery::{Redelivery, SqsRedelivery};
use lambda_runtime::layers::trace::request_span;
use lambda_runtime::tracing::subscriber::fmt::MakeWriter;
use lambda_runtime::LambdaEvent;
use serde_json::Value;
use tracing::Instrument as _;

/// Every body in this file carries it, so a body that leaks into a log is found.
const BODY_MARKER: &str = "body-marker-7f3a";

// --- the log buffer ---------------------------------------------------------------------------

/// Where the subscriber writes: one buffer for the process (a global subscriber).
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("log buffer").clone()).expect("UTF-8 logs")
    }
}

/// The binaries' subscriber, as Lambda configures it (template: `LogFormat: JSON`), into a buffer.
fn logs() -> &'static Buffer {
    static LOGS: OnceLock<Buffer> = OnceLock::new();
    LOGS.get_or_init(|| {
        std::env::set_var("AWS_LAMBDA_LOG_FORMAT", "JSON");
        std::env::set_var("AWS_LAMBDA_LOG_LEVEL", "INFO");
        std::env::remove_var("RUST_LOG");
        let buffer = Buffer::default();
        lambda_runtime::tracing::init_default_subscriber_with_writer(buffer.clone());
        buffer
    })
}

/// One JSON log line.
struct Line(Value);

impl Line {
    /// A field of the event, else of its spans (innermost first).
    fn get(&self, name: &str) -> Option<&str> {
        let spans = self.0["spans"].as_array().into_iter().flatten().rev();
        std::iter::once(&self.0["fields"])
            .chain(spans)
            .find_map(|v| v.get(name).and_then(Value::as_str))
    }

    /// The Lambda runtime's span field.
    fn request_id(&self) -> Option<&str> {
        self.0["spans"]
            .as_array()?
            .iter()
            .find_map(|s| s.get("requestId").and_then(Value::as_str))
    }
}

fn parsed(text: &str) -> Vec<Line> {
    text.lines()
        .map(|l| {
            Line(
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}")),
            )
        })
        .collect()
}

/// The lines with this outcome and key, logged by this invocation.
fn outcome<'a>(
    lines: &'a [Line],
    outcome: &str,
    key: Option<&str>,
    request_id: &str,
) -> Vec<&'a Line> {
    lines
        .iter()
        .filter(|l| l.get("outcome") == Some(outcome))
        .filter(|l| l.request_id() == Some(request_id))
        .filter(|l| key.is_none() || l.get("key") == key)
        .collect()
}

// --- invocations, as the Lambda runtime makes them --------------------------------------------

fn apigw_event(source: &str, headers: &[(&str, String)], body: &[u8]) -> ApiGatewayV2httpRequest {
    ApiGatewayEvent::post(source)
        .headers(headers.iter().map(|(k, v)| (*k, v)))
        .body(body)
        .request()
}

/// One receiver invocation inside the runtime's request span; the status and the request id.
async fn post(
    rx: &TestReceiver,
    source: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (u16, String) {
    let request_id = testkit::unique("rx");
    let ctx = testkit::context(&request_id, testkit::now_ms() + 10_000);
    let span = request_span(&ctx);
    let resp = rx
        .handle_event(LambdaEvent::new(apigw_event(source, headers, body), ctx))
        .instrument(span)
        .await
        .expect("infallible");
    (
        u16::try_from(resp.status_code).expect("a status"),
        request_id,
    )
}

/// One consumer invocation inside the runtime's request span; the answer and the request id.
async fn invoke<P: Processor, Q: Redelivery>(
    cx: &Consumer<DynamoLedger, P, SystemClock, Q>,
    event: SqsEvent,
) -> (SqsBatchResponse, String) {
    let request_id = testkit::unique("cx");
    let ctx = testkit::context(&request_id, testkit::now_ms() + 30_000);
    let span = request_span(&ctx);
    let resp = cx
        .handle_event(LambdaEvent::new(event, ctx))
        .instrument(span)
        .await
        .expect("infallible");
    (resp, request_id)
}

fn failed_ids(resp: &SqsBatchResponse) -> Vec<String> {
    resp.batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

fn body(n: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{n},"note":"{BODY_MARKER}-{n}"}}"#).into_bytes()
}

/// A system of record that, while a call is in flight, lets "another invocation" take the key
/// over in the ledger, then answers 200: the consumer's side effect ran, its lease is gone.
struct LeaseThief {
    url: String,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LeaseThief {
    fn start(aws: &LocalAws) -> LeaseThief {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server.server_addr().to_ip().expect("IP").port();
        let (steal_tx, mut steal_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (dynamo, table) = (aws.dynamo.clone(), aws.resources.table.clone());
        tokio::spawn(async move {
            while let Some(key) = steal_rx.recv().await {
                dynamo
                    .update_item()
                    .table_name(&table)
                    .key("pk", AttributeValue::S(key))
                    .update_expression("SET lease_owner = :other")
                    .expression_attribute_values(
                        ":other",
                        AttributeValue::S("another-invocation".into()),
                    )
                    .send()
                    .await
                    .expect("take the lease over");
                let _ = done_tx.send(());
            }
        });
        let s = server.clone();
        let thread = std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let key = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Idempotency-Key"))
                    .map(|h| h.value.as_str().to_owned())
                    .unwrap_or_default();
                let mut sink = Vec::new();
                let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
                let _ = steal_tx.send(key);
                let _ = done_rx.recv_timeout(Duration::from_secs(10));
                let _ = request.respond(tiny_http::Response::empty(200));
            }
        });
        LeaseThief {
            url: format!("http://127.0.0.1:{port}/events"),
            server,
            thread: Some(thread),
        }
    }
}

impl Drop for LeaseThief {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// --- logs and metrics -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_is_logged_with_source_key_and_request_id_and_counted_exactly() {
    let logs = logs();
    let aws = LocalAws::new("logs").await;
    let sor = SystemOfRecord::start();
    let (rx, rx_metrics) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, cx_metrics) = aws.consumer(testkit::forwarder(sor.url()));
    let gh = github_headers;

    // Receiver: accepted, replayed, replayed with another body, bad signature.
    let (a, a2) = (body(1), body(2));
    let (s, rid_accepted) = post(&rx, "github", &gh("logs-a", &a), &a).await;
    assert_eq!(s, 200);
    let (s, rid_replayed) = post(&rx, "github", &gh("logs-a", &a), &a).await;
    assert_eq!(s, 200);
    let (s, rid_mismatch) = post(&rx, "github", &gh("logs-a", &a2), &a2).await;
    assert_eq!(s, 200);
    let mut bad = gh("logs-b", &a);
    bad[2].1 = testkit::github_signature(b"another body");
    let (s, rid_badsig) = post(&rx, "github", &bad, &a).await;
    assert_eq!(s, 401);

    // The queue refuses once: the claim is released, 500; the retry is accepted.
    let c = body(3);
    aws.faults.fail("SendMessage", When::Before, 1);
    let (s, rid_released) = post(&rx, "github", &gh("logs-c", &c), &c).await;
    assert_eq!(s, 500);
    let (s, rid_retry) = post(&rx, "github", &gh("logs-c", &c), &c).await;
    assert_eq!(s, 200);

    // A first delivery still between claim and enqueue (another invocation holds it): the
    // duplicate sends the event itself and replays the first answer.
    let d = body(4);
    let now = testkit::now_ms();
    aws.ledger()
        .claim(&Claim {
            key: "github:logs-d".into(),
            source: "github".into(),
            payload_sha256: inbox::key::sha256_hex(&d),
            owner: "first-invocation".into(),
            now_ms: now,
            lease_until_ms: now + 60_000,
            expires_at: now / 1000 + 3600,
            response_status: 200,
            response_body: accepted_response("github:logs-d").1,
        })
        .await
        .expect("claim");
    let (s, rid_in_progress) = post(&rx, "github", &gh("logs-d", &d), &d).await;
    assert_eq!(s, 200);

    // No key: 400.
    let mut no_key = gh("logs-x", &d);
    no_key.remove(0);
    let (s, rid_no_key) = post(&rx, "github", &no_key, &d).await;
    assert_eq!(s, 400);

    // Another source.
    let stripe = format!(r#"{{"id":"evt_logs_1","note":"{BODY_MARKER}-s"}}"#).into_bytes();
    let stripe_sig = testkit::stripe_signature(&stripe, testkit::now_ms() / 1000);
    let (s, rid_stripe) = post(
        &rx,
        "stripe",
        &[("stripe-signature", stripe_sig.clone())],
        &stripe,
    )
    .await;
    assert_eq!(s, 200);

    // Consumer: the system of record fails logs-c once; the same batch delivered twice.
    sor.fail_key("github:logs-c", 1);
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    let messages = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(
        messages.len(),
        4,
        "logs-a, logs-c, logs-d (sent by its duplicate) and evt_logs_1 are queued"
    );
    let id_of = |key: &str| {
        messages
            .iter()
            .find(|m| {
                m.attributes()
                    .and_then(|a| a.get(&Sys::MessageGroupId))
                    .map(String::as_str)
                    == Some(key)
            })
            .and_then(|m| m.message_id())
            .expect("message of the key")
            .to_owned()
    };
    let (first, rid_batch1) = invoke(&cx, bridge.event(&messages)).await;
    assert_eq!(failed_ids(&first), vec![id_of("github:logs-c")]);
    let (second, rid_batch2) = invoke(&cx, bridge.event(&messages)).await;
    assert_eq!(failed_ids(&second), Vec::<String>::new());

    // Lease lost: the side effect runs, but another invocation took the key meanwhile.
    let e = body(5);
    let (s, rid_accepted_e) = post(&rx, "github", &gh("logs-e", &e), &e).await;
    assert_eq!(s, 200);
    let thief = LeaseThief::start(&aws);
    let (cx_thief, cx_thief_metrics) = aws.consumer(testkit::forwarder(&thief.url));
    let messages_e = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(messages_e.len(), 1);
    let (third, rid_batch3) = invoke(&cx_thief, bridge.event(&messages_e)).await;
    assert_eq!(
        failed_ids(&third),
        vec![messages_e[0].message_id().unwrap_or_default().to_owned()],
        "the lease was lost: the message comes back rather than leave the key in PROCESSING"
    );
    drop(thief);

    // --- the logs ---
    let text = logs.text();
    let lines = parsed(&text);
    let one = |name: &str, key: Option<&str>, rid: &str| -> &Line {
        let found = outcome(&lines, name, key, rid);
        assert_eq!(
            found.len(),
            1,
            "one `{name}` line for {key:?} in {rid}:\n{text}"
        );
        found[0]
    };
    let a_key = Some("github:logs-a");
    one("accepted", a_key, &rid_accepted);
    one("replayed", a_key, &rid_replayed);
    one("replayed", a_key, &rid_mismatch);
    assert!(
        lines
            .iter()
            .any(|l| l.request_id() == Some(rid_mismatch.as_str())
                && l.get("key") == a_key
                && l.get("message") == Some("same key, different payload")),
        "the payload mismatch is logged with its key"
    );
    let badsig = one("rejected", None, &rid_badsig);
    assert_eq!(badsig.get("error"), Some("invalid_signature"));
    assert_eq!(
        badsig.get("reason"),
        Some("invalid signature: no signature matched")
    );
    assert_eq!(
        badsig.get("key"),
        None,
        "no key is derived before the signature holds"
    );
    let c_key = Some("github:logs-c");
    one("released", c_key, &rid_released);
    let internal = one("rejected", c_key, &rid_released);
    assert_eq!(internal.get("error"), Some("internal"));
    one("accepted", c_key, &rid_retry);
    let busy = one("replayed", Some("github:logs-d"), &rid_in_progress);
    assert_eq!(busy.get("status"), Some("RECEIVED"));
    let missing = one("rejected", None, &rid_no_key);
    assert_eq!(missing.get("error"), Some("missing_idempotency_key"));
    assert!(missing
        .get("reason")
        .is_some_and(|r| r.contains("x-github-delivery")));
    let s_key = Some("stripe:evt_logs_1");
    one("accepted", s_key, &rid_stripe);
    one("completed", a_key, &rid_batch1);
    one("completed", s_key, &rid_batch1);
    let failed = one("failed", c_key, &rid_batch1);
    assert_eq!(
        failed.get("error"),
        Some("forward answered 500 Internal Server Error")
    );
    one("duplicate", a_key, &rid_batch2);
    one("duplicate", s_key, &rid_batch2);
    one("completed", c_key, &rid_batch2);
    one("accepted", Some("github:logs-e"), &rid_accepted_e);
    one("lease_lost", Some("github:logs-e"), &rid_batch3);

    let ours: Vec<&Line> = lines
        .iter()
        .filter(|l| {
            l.get("key")
                .is_some_and(|k| k.contains(":logs-") || k.contains("evt_logs_"))
        })
        .collect();
    for line in &ours {
        assert!(
            line.get("source").is_some(),
            "source on every line: {}",
            line.0
        );
        assert!(
            line.request_id().is_some(),
            "request id on every line: {}",
            line.0
        );
    }
    let whsec_bytes = TEST_WHSEC.trim_start_matches("whsec_");
    let mut signatures: Vec<String> = [&a, &a2, &c, &d, &e]
        .iter()
        .map(|b| testkit::github_signature(b))
        .collect();
    signatures.push(stripe_sig);
    let mut never = vec![TEST_SECRET, TEST_WHSEC, whsec_bytes, BODY_MARKER];
    never.extend(signatures.iter().map(String::as_str));
    for secret in never {
        assert!(
            !text.contains(secret),
            "a log line holds `{secret}`:\n{text}"
        );
    }

    // --- the metrics ---
    let mut emf = rx_metrics.lock().expect("metrics").clone();
    emf.extend(cx_metrics.lock().expect("metrics").iter().cloned());
    emf.extend(cx_thief_metrics.lock().expect("metrics").iter().cloned());
    let expected_github = [
        (Metric::Accepted, 3),
        (Metric::Replayed, 3),
        (Metric::SignatureRejected, 1),
        (Metric::PayloadMismatch, 1),
        (Metric::Released, 1),
        (Metric::Rejected, 2),
        // logs-a, logs-c and logs-d (which its duplicate enqueued).
        (Metric::Completed, 3),
        (Metric::Failed, 1),
        (Metric::DuplicateDelivery, 2),
        (Metric::LeaseLost, 1),
    ];
    let expected_stripe = [
        (Metric::Accepted, 1),
        (Metric::Completed, 1),
        (Metric::DuplicateDelivery, 1),
    ];
    let all_metrics = expected_github.map(|(m, _)| m);
    for (source, expected) in [
        ("github", &expected_github[..]),
        ("stripe", &expected_stripe[..]),
    ] {
        for metric in all_metrics {
            let want = expected
                .iter()
                .find(|(m, _)| *m == metric)
                .map_or(0, |(_, n)| *n);
            assert_eq!(
                tally(&emf, source, metric),
                want,
                "{source} {}",
                metric.name()
            );
        }
    }
    for line in &emf {
        assert!(
            !line.contains(BODY_MARKER) && !line.contains(TEST_SECRET),
            "{line}"
        );
    }
    assert_eq!(
        sor.calls_for("github:logs-a"),
        1,
        "the duplicate ran no side effect"
    );
}

/// A system of record that answers 429 (`Retry-After: 7`) to the key `github:logs-t` and 500 to
/// every other.
fn throttling_downstream() -> (String, Arc<tiny_http::Server>) {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
    let port = server.server_addr().to_ip().expect("IP").port();
    let s = server.clone();
    std::thread::spawn(move || {
        for mut request in s.incoming_requests() {
            let throttled = request
                .headers()
                .iter()
                .any(|h| h.field.equiv("Idempotency-Key") && h.value.as_str() == "github:logs-t");
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
            let response = if throttled {
                tiny_http::Response::empty(429).with_header(
                    tiny_http::Header::from_bytes("Retry-After", "7").expect("a header"),
                )
            } else {
                tiny_http::Response::empty(500)
            };
            let _ = request.respond(response);
        }
    });
    (format!("http://127.0.0.1:{port}/events"), server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_forward_and_a_dead_letter_are_logged_and_counted() {
    let logs = logs();
    let aws = LocalAws::new("logs-backpressure").await;
    let (url, server) = throttling_downstream();
    let (rx, rx_metrics) = aws.receiver(ReceiverSettings::default()).await;
    let (metrics, cx_metrics) = Metrics::memory("consumer");
    let cx = Consumer::new(
        testkit::test_sources(),
        aws.ledger(),
        HttpForwarder::new(url, Duration::from_secs(5)).expect("forwarder"),
        SystemClock,
        ConsumerSettings {
            max_concurrent_groups: 1,
            // The first real failure moves the message to the dead-letter queue.
            max_failures: 1,
            queue_retention_seconds: None,
        },
        metrics,
    )
    .with_redelivery(SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    ));
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");

    let x = body(20);
    let (s, _) = post(&rx, "github", &github_headers("logs-x", &x), &x).await;
    assert_eq!(s, 200);
    let (done, rid_dead) = invoke(
        &cx,
        bridge.event(&aws.receive_all(&aws.resources.queue_url).await),
    )
    .await;
    assert!(failed_ids(&done).is_empty(), "dead-lettered: reported done");
    let t = body(21);
    let (s, _) = post(&rx, "github", &github_headers("logs-t", &t), &t).await;
    assert_eq!(s, 200);
    let (throttled, rid_throttled) = invoke(
        &cx,
        bridge.event(&aws.receive_all(&aws.resources.queue_url).await),
    )
    .await;
    assert_eq!(
        failed_ids(&throttled).len(),
        1,
        "throttled: reported failed"
    );
    server.unblock();

    let text = logs.text();
    let lines = parsed(&text);
    let one = |name: &str, key: &str, rid: &str| -> &Line {
        let found = outcome(&lines, name, Some(key), rid);
        assert_eq!(
            found.len(),
            1,
            "one `{name}` line for {key} in {rid}:\n{text}"
        );
        assert_eq!(found[0].get("source"), Some("github"), "{}", found[0].0);
        found[0]
    };
    let failed = one("failed", "github:logs-x", &rid_dead);
    assert_eq!(
        failed.get("error"),
        Some("forward answered 500 Internal Server Error")
    );
    one("dead_lettered", "github:logs-x", &rid_dead);
    let line = one("throttled", "github:logs-t", &rid_throttled);
    assert_eq!(
        line.get("error"),
        Some("throttled: forward answered 429 Too Many Requests, retry after 7 s")
    );
    assert!(!text.contains(BODY_MARKER), "no body in a log line");

    let emf = cx_metrics.lock().expect("metrics").clone();
    for (metric, want) in [
        (Metric::Failed, 1),
        (Metric::DeadLettered, 1),
        (Metric::Throttled, 1),
        (Metric::Completed, 0),
    ] {
        assert_eq!(tally(&emf, "github", metric), want, "{}", metric.name());
    }
    let rx_emf = rx_metrics.lock().expect("metrics").clone();
    assert_eq!(tally(&rx_emf, "github", Metric::Accepted), 2);
    let dead = aws.receive_all(&aws.resources.dlq_url).await;
    assert_eq!(dead.len(), 1, "the copy on the dead-letter queue");
    let envelope = inbox::queue::Envelope::parse(dead[0].body().expect("body")).expect("envelope");
    assert_eq!(envelope.key, "github:logs-x");
}
