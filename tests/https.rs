//! Every https path of the consumer against a local TLS server with a certificate of its own
//! (`devstack::testkit::HttpsServer`, its CA made at test time), trusted through the test-only
//! setting `HTTPS_TEST_CA_FILE` as start-up reads it (`inbox::test_ca::TestCa::from_setting`
//! of the server's CA file), behind the real receiver and consumer on a local stack:
//!
//! - a forward (`FORWARD_URL` https) arrives once with the exact bytes the sender signed, its
//!   `Idempotency-Key`, and a Standard Webhooks signature computed here independently;
//! - an `https://` destination of `WEBHOOK_DESTINATIONS` that answers 500 twice, then 200:
//!   its pair completes once (three calls, two failures, one applied), the event completes;
//! - a 429 with `Retry-After` from an `https://` destination: deferred with no failure
//!   counted, back once the delay is over, then completed;
//! - without the setting the same server is not trusted: the forward fails naming the
//!   certificate (`last_error`), and the server received nothing;
//! - the receiver's key fetches (`KEY_FETCH_TEST_ORIGIN` an `https://` origin) trust the same
//!   CA, and fail naming the certificate without it;
//! - the consumer's own binary, the setting in its environment, forwards and delivers to an
//!   `https://` destination on the server: start-up wires the CA into both clients.
//!
//! Nothing sleeps blindly: every wait polls with a deadline.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use devstack::testkit::{
    self, github_headers, post, HttpsServer, LocalAws, MetricLines, Received, Reply, TEST_SECRET,
    TEST_WHSEC,
};
use hmac::{Hmac, Mac as _};
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings};
use inbox::destination::{Adapter, Targets};
use inbox::forward::signing::webhook_id;
use inbox::forward::{ForwardSigner, HttpForwarder};
use inbox::key_fetch::{FetchError, KeyFetcher};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Record, Status};
use inbox::metrics::{tally, Metric, Metrics};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::SqsRedelivery;
use inbox::route::{destination_key, Routes};
use inbox::test_ca::TestCa;
use inbox::SourceSpecs;

use crate::support::{bridge, drain};

/// The CA `HTTPS_TEST_CA_FILE` would name for `server`, read as start-up reads it.
fn test_ca(server: &HttpsServer) -> TestCa {
    let path = server.ca_pem_path().to_string_lossy().into_owned();
    TestCa::from_setting(Some(path))
        .expect("the server's CA file is one PEM certificate")
        .expect("the setting is set")
}

/// The shipped forwarder to `url`, trusting `ca` where given, signed with [`TEST_WHSEC`].
fn forwarder(url: &str, ca: Option<&TestCa>) -> HttpForwarder {
    HttpForwarder::trusting(url, Duration::from_secs(30), ca)
        .expect("the forwarder's client builds")
        .signed(ForwardSigner::new(&[TEST_WHSEC]).expect("a whsec_ secret"))
}

/// A body with what a careless re-serialisation would change: an integer beyond 64 bits, a
/// key given twice, an escaped and a raw non-ASCII character, spacing.
const BODY: &str = r#"{"action":"opened", "n":123456789012345678901234,"name":"a","name":"b","cafe":"caf\u00e9 café"}"#;

/// One signed GitHub delivery `id` of [`BODY`] through the stack's receiver, answered 200; its key.
async fn deliver(aws: &LocalAws, id: &str) -> String {
    deliver_event(aws, id, "push").await
}

/// [`deliver`] with this `X-GitHub-Event`.
async fn deliver_event(aws: &LocalAws, id: &str, event: &str) -> String {
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let mut headers = github_headers(id, BODY.as_bytes());
    for (name, value) in &mut headers {
        if *name == "x-github-event" {
            event.clone_into(value);
        }
    }
    let answer = rx.handle(post("github", &headers, BODY.as_bytes())).await;
    assert_eq!(answer.status(), 200, "{id} accepted");
    format!("github:{id}")
}

async fn item(aws: &LocalAws, key: &str) -> Record {
    aws.ledger()
        .get(key)
        .await
        .expect("get")
        .unwrap_or_else(|| panic!("{key}'s item"))
}

/// The Standard Webhooks signature of a request, computed from the spec (HMAC-SHA256 over
/// `id.timestamp.body` with the secret's bytes, base64, `v1,`), not by the forward's signer.
fn standard_webhooks_signature(r: &Received) -> String {
    let content = [
        r.header("webhook-id").expect("webhook-id").as_bytes(),
        b".",
        r.header("webhook-timestamp")
            .expect("webhook-timestamp")
            .as_bytes(),
        b".",
        &r.body,
    ]
    .concat();
    // TEST_WHSEC is `whsec_` and base64 of TEST_SECRET's bytes.
    let mut mac =
        Hmac::<sha2::Sha256>::new_from_slice(TEST_SECRET.as_bytes()).expect("any key length");
    mac.update(&content);
    format!("v1,{}", B64.encode(mac.finalize().into_bytes()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_over_https_arrives_with_the_signed_bytes_and_its_signature() {
    let aws = LocalAws::new("https-fwd").await;
    let server = HttpsServer::start();
    let ca = test_ca(&server);
    let (cx, lines) = aws.consumer(forwarder(&server.url_for("/events"), Some(&ca)));
    let key = deliver(&aws, "tls-fwd-1").await;
    let cx = &cx;
    drain(&bridge(&aws).await, |e| testkit::consume(cx, e)).await;

    let received = server.received();
    assert_eq!(received.len(), 1, "one forward");
    let r = &received[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str(), r.status),
        ("POST", "/events", 200)
    );
    assert_eq!(r.body, BODY.as_bytes(), "the bytes the sender signed");
    assert_eq!(r.header("idempotency-key"), Some(key.as_str()));
    assert_eq!(r.header("x-webhook-source"), Some("github"));
    assert_eq!(
        r.header("webhook-id"),
        Some(webhook_id(&key, None).as_str())
    );
    assert_eq!(
        r.header("webhook-signature"),
        Some(standard_webhooks_signature(r).as_str())
    );
    assert!(server.failed_handshakes().is_empty());
    let event = item(&aws, &key).await;
    assert_eq!(
        (event.status, event.attempts, event.failures),
        (Status::Completed, 1, 0)
    );
    assert_eq!(
        tally(&lines.lock().expect("lines"), "github", Metric::Completed),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_test_ca_an_https_forward_fails_naming_the_certificate() {
    let aws = LocalAws::new("https-untrusted").await;
    let server = HttpsServer::start();
    let (cx, _) = aws.consumer(forwarder(&server.url_for("/events"), None));
    let key = deliver(&aws, "tls-untrusted-1").await;
    let round = bridge(&aws)
        .await
        .pump_once(|e| testkit::consume(&cx, e))
        .await
        .expect("pump")
        .expect("a message");
    assert_eq!((round.received, round.failed), (1, 1), "reported failed");
    let event = item(&aws, &key).await;
    assert_eq!((event.status, event.failures), (Status::Failed, 1));
    assert_eq!(
        event.last_error.as_deref(),
        Some("forward failed: could not connect: invalid peer certificate: UnknownIssuer")
    );
    assert!(server.received().is_empty(), "no request got through");
    // The server saw the consumer refuse its certificate (recorded by the server's own task,
    // which may finish just after the consumer's call: poll).
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.failed_handshakes().is_empty() {
        assert!(Instant::now() < deadline, "no failed handshake recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        server.failed_handshakes(),
        ["received fatal alert: UnknownCA"]
    );
}

/// The consumer over the stack's sources with one `https://` destination, `records`, on
/// `server` (trusting `ca`), the forward unused; delaying throttled messages on the stack's
/// queue as deployed.
type RoutedConsumer = Consumer<
    DynamoLedger,
    HttpForwarder,
    SystemClock,
    inbox::consumer::Wiring<
        SqsRedelivery,
        inbox::bucket::NoBucket,
        inbox::archive::NoArchive,
        Targets,
    >,
>;

fn records_consumer(
    aws: &LocalAws,
    server: &HttpsServer,
    ca: &TestCa,
) -> (RoutedConsumer, MetricLines) {
    let specs = SourceSpecs::parse(
        aws.stack
            .consumer
            .environment
            .get("WEBHOOK_SOURCES")
            .expect("the consumer's WEBHOOK_SOURCES"),
    )
    .expect("the stack's sources parse");
    let destinations = format!(
        r#"{{"records": {{"target": "{}", "sources": ["github"]}}}}"#,
        server.url_for("/in")
    );
    let routes = Routes::parse(&destinations, &specs).expect("an https destination");
    let targets = Targets::new(
        BTreeMap::from([(
            "records".to_owned(),
            Adapter::Http(forwarder(&server.url_for("/in"), Some(ca))),
        )]),
        None,
    );
    let (metrics, lines) = Metrics::memory("consumer");
    let unused = HttpForwarder::new(testkit::UNUSED_FORWARD_URL, Duration::from_secs(1))
        .expect("a forwarder");
    let cx = Consumer::new(
        specs,
        aws.ledger(),
        unused,
        SystemClock,
        ConsumerSettings {
            queue_retention_seconds: Some(345_600),
            ..ConsumerSettings::default()
        },
        metrics,
    )
    .with_redelivery(SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    ))
    .with_destinations(routes, targets);
    (cx, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_destination_that_fails_then_recovers_completes_its_pair_once() {
    let aws = LocalAws::new("https-recover").await;
    let server = HttpsServer::start();
    server.answer([Reply::status(500), Reply::status(500)]);
    let (cx, lines) = records_consumer(&aws, &server, &test_ca(&server));
    let key = deliver(&aws, "tls-recover-1").await;
    let cx = &cx;
    drain(&bridge(&aws).await, |e| async move {
        Ok(cx
            .handle_batch(
                &e.records,
                &testkit::unique("cx"),
                Some(testkit::now_ms() + 30_000),
            )
            .await)
    })
    .await;

    let received = server.received();
    assert_eq!(
        received.iter().map(|r| r.status).collect::<Vec<_>>(),
        [500, 500, 200],
        "two failures, then applied once"
    );
    let first_id = received[0].header("webhook-id").map(str::to_owned);
    for r in &received {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/in"));
        assert_eq!(r.body, BODY.as_bytes());
        assert_eq!(r.header("idempotency-key"), Some(key.as_str()));
        assert_eq!(
            r.header("webhook-id").map(str::to_owned),
            first_id,
            "one id"
        );
        assert_eq!(
            r.header("webhook-signature"),
            Some(standard_webhooks_signature(r).as_str())
        );
    }
    let pair = item(&aws, &destination_key(&key, "records")).await;
    assert_eq!(
        (pair.status, pair.attempts, pair.failures),
        (Status::Completed, 3, 2)
    );
    assert_eq!(item(&aws, &key).await.status, Status::Completed);
    let lines = lines.lock().expect("lines").clone();
    assert_eq!(tally(&lines, "github", Metric::Failed), 2);
    assert_eq!(tally(&lines, "github", Metric::Throttled), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_from_an_https_destination_defers_without_a_failure_then_completes()
{
    let aws = LocalAws::new("https-429").await;
    let server = HttpsServer::start();
    server.answer([Reply::retry_after(429, 1)]);
    let (cx, lines) = records_consumer(&aws, &server, &test_ca(&server));
    let key = deliver(&aws, "tls-429-1").await;
    let pair_key = destination_key(&key, "records");
    let b = bridge(&aws).await;
    let invoke = |e: aws_lambda_events::sqs::SqsEvent| {
        let cx = &cx;
        async move {
            Ok(cx
                .handle_batch(
                    &e.records,
                    &testkit::unique("cx"),
                    Some(testkit::now_ms() + 30_000),
                )
                .await)
        }
    };

    let round = b.pump_once(invoke).await.expect("pump").expect("a message");
    assert_eq!(
        (round.received, round.failed),
        (1, 1),
        "held back, not done"
    );
    let pair = item(&aws, &pair_key).await;
    assert_eq!(
        (pair.status, pair.attempts, pair.failures),
        (Status::Queued, 1, 0),
        "deferred, no failure counted"
    );
    assert_eq!(
        pair.last_error.as_deref(),
        Some("throttled: forward answered 429 Too Many Requests, retry after 1 s")
    );

    // Poll until the consumer's delay is over and the message is back; then it completes.
    let deadline = Instant::now() + Duration::from_secs(60);
    let round = loop {
        assert!(Instant::now() < deadline, "not back within 60 s");
        if let Some(round) = b.pump_once(invoke).await.expect("pump") {
            break round;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!((round.received, round.deleted), (1, 1), "completed");
    assert_eq!(
        server
            .received()
            .iter()
            .map(|r| r.status)
            .collect::<Vec<_>>(),
        [429, 200]
    );
    let pair = item(&aws, &pair_key).await;
    assert_eq!(
        (pair.status, pair.attempts, pair.failures),
        (Status::Completed, 2, 0)
    );
    assert_eq!(item(&aws, &key).await.status, Status::Completed);
    let lines = lines.lock().expect("lines").clone();
    assert_eq!(tally(&lines, "github", Metric::Throttled), 1);
    assert_eq!(tally(&lines, "github", Metric::Failed), 0);
    assert!(drain(&b, invoke).await.is_empty(), "nothing left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_receivers_key_fetches_trust_the_test_ca_and_fail_naming_the_certificate_without_it() {
    let server = HttpsServer::start();
    let ca = test_ca(&server);
    // A SubscribeURL on an SNS host, sent to the local origin (path and query kept).
    let url = reqwest::Url::parse(
        "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=t",
    )
    .expect("a URL");
    let trusted = KeyFetcher::trusting(Some(server.url()), Some(&ca)).expect("a fetcher");
    assert_eq!(trusted.visit(&url).await, Ok(()));
    let untrusted = KeyFetcher::new(Some(server.url())).expect("a fetcher");
    assert_eq!(
        untrusted.visit(&url).await,
        Err(FetchError::Transport(
            "error sending request: invalid peer certificate: UnknownIssuer".to_owned()
        ))
    );
    let received = server.received();
    assert_eq!(received.len(), 1, "only the trusting fetch got through");
    assert_eq!(
        (received[0].method.as_str(), received[0].path.as_str()),
        ("GET", "/?Action=ConfirmSubscription&Token=t")
    );
}

/// The consumer's own binary, as deployed (the stack's environment on moto, under the Lambda
/// Runtime API emulator), with `HTTPS_TEST_CA_FILE` naming the server's CA, `FORWARD_URL` and an
/// `https://` destination on the server: start-up reads the setting and both clients it builds
/// (the forward's and the destination's) trust it. A `push` goes to the destination, an
/// `issues` event (no destination takes it) to the forward, each once. (Without the setting
/// nothing arrives: the same run with the variable renamed fails its first assertion.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_binary_trusts_the_test_ca_for_its_forward_and_its_https_destination() {
    use devstack::runtime::{Emulator, Outcome, Supervisor};

    let aws = LocalAws::new("https-binary").await;
    let server = HttpsServer::start();
    let consumer = consumer_process(&aws, &server);
    let emu = Emulator::with_timeout(Duration::from_secs(30))
        .await
        .expect("a runtime API");
    let _consumers = Supervisor::start(consumer, &emu, 1)
        .await
        .expect("the consumer's process");
    emu.wait_for_polls(1, Duration::from_secs(60))
        .await
        .expect("the consumer started");

    let push = deliver(&aws, "tls-bin-push").await;
    let issue = deliver_event(&aws, "tls-bin-issue", "issues").await;

    let emu = &emu;
    drain(&bridge(&aws).await, |event| async move {
        match emu.invoke(serde_json::to_vec(&event)?).await? {
            Outcome::Response(b) => Ok(serde_json::from_slice(&b)?),
            Outcome::Error(b) => {
                anyhow::bail!("the invocation failed: {}", String::from_utf8_lossy(&b))
            }
        }
    })
    .await;

    let mut arrived: Vec<(String, String, u16)> = server
        .received()
        .iter()
        .map(|r| {
            assert_eq!(r.body, BODY.as_bytes(), "{}", r.path);
            (
                r.path.clone(),
                r.header("idempotency-key").unwrap_or_default().to_owned(),
                r.status,
            )
        })
        .collect();
    arrived.sort();
    assert_eq!(
        arrived,
        [
            ("/forward".to_owned(), issue.clone(), 200),
            ("/records".to_owned(), push.clone(), 200),
        ]
    );
    assert!(server.failed_handshakes().is_empty());
    let pair = item(&aws, &destination_key(&push, "records")).await;
    assert_eq!((pair.status, pair.attempts), (Status::Completed, 1));
    for key in [&push, &issue] {
        assert_eq!(item(&aws, key).await.status, Status::Completed, "{key}");
    }
}

/// The consumer's binary with the stack's environment on moto, `FORWARD_URL` and the
/// destination `records` (`push` only) on `server`, and `HTTPS_TEST_CA_FILE` its CA.
fn consumer_process(aws: &LocalAws, server: &HttpsServer) -> devstack::runtime::FunctionProcess {
    let destinations = format!(
        r#"{{"records": {{"target": "{}", "sources": ["github"], "event_types": ["push"]}}}}"#,
        server.url_for("/records")
    );
    let mut env: Vec<(String, String)> = aws
        .stack
        .consumer
        .environment
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.extend([
        (
            "AWS_ENDPOINT_URL".to_owned(),
            devstack::moto::shared().to_owned(),
        ),
        ("FORWARD_URL".to_owned(), server.url_for("/forward")),
        ("WEBHOOK_DESTINATIONS".to_owned(), destinations),
        (
            "HTTPS_TEST_CA_FILE".to_owned(),
            server.ca_pem_path().to_string_lossy().into_owned(),
        ),
    ]);
    devstack::runtime::FunctionProcess {
        name: "consumer".into(),
        program: env!("CARGO_BIN_EXE_chaos-consumer").into(),
        env,
    }
}
