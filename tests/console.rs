//! `inbox-ops console` in a real browser: headless Chromium (Debian's `chromium`,
//! installed by `make test`) driven by playwright-core (pinned in package-lock.json) through
//! `tests/console/console.spec.mjs`, against the local stack made from template.yaml.
//!
//! Here: the receiver and consumer as deployed (archive on, the consumer dead-letters after its
//! first real failure) take two GitHub pushes: one the system of record refuses (FAILED, its
//! `last_error`, dead-lettered), one whose body holds a `<script>`; and a third push whose
//! signature does not match its body (rejected). Their EMF lines go to the local CloudWatch
//! as Lambda's would in AWS (`devstack::local_metrics`), and the console is served against the
//! stack found by its name alone (`stack::resolve`). The browser script checks: the overview's
//! figures for the last 24 hours, the run's own counts per source and series (CloudWatch
//! answered in the SDK's protocol, Smithy RPC v2 CBOR, which devstack's moto serves), nothing
//! "unavailable"; each destination's row (`billing`'s breaker open, `crm` paused, both with
//! their held events' link); the dead letter and the failed events reachable from the overview, the
//! failed event in the list with its `last_error`, its body on its page, the `<script>` body
//! inert, the replay sent from the page, a foreign `Host` refused (421), an action without the
//! token refused (403); it saves the screenshots of docs/operations.md into docs/images/.
//! Then the replay is delivered: the system of record gets the event once more.
//!
//! Not here: alarms in ALARM. Moto's CloudFormation creates no `AWS::CloudWatch::Alarm`, so the
//! stack lists none and "Alarms in ALARM" is "None."; `DescribeAlarms` through the same
//! protocol is tested in crates/devstack/tests/local_stack.rs, the rendering in the ops crate.

use std::path::PathBuf;

use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, LocalAws, SystemOfRecord};
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings};
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::{tally, Metric, Metrics};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::SqsRedelivery;
use inbox_ops::console::guard::Guard;
use inbox_ops::console::{self, Console};

const FAILED: &str = "github:console-fails";
const SCRIPTED: &str = "github:console-script";
const SCRIPT_BODY: &str =
    r#"{"ref":"refs/heads/main","title":"<script>window.__xss=1;alert('xss')</script>"}"#;
const FAILING_BODY: &str =
    r#"{"ref":"refs/heads/main","marker":"refused-by-the-system-of-record"}"#;

/// The stack's `Destinations`: one limited to 5 calls a second, one without a limit.
const RATED_DESTINATIONS: &str = r#"{"invoices": {"target": "https://invoices.example/in", "sources": ["stripe"], "max_per_second": 5},
    "ledger": {"target": "https://ledger.example/in", "sources": ["stripe"]}}"#;

/// The workspace root (the node script and docs/images/ are there).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Two pushes through the receiver and the consumer: one refused by the system of record
/// (FAILED, dead-lettered), one with a `<script>` body (COMPLETED); and one whose signature is
/// of another body (rejected). Returns both functions' EMF lines.
async fn two_events(aws: &LocalAws, sor: &SystemOfRecord) -> Vec<String> {
    let (rx, received) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let (metrics, consumed) = Metrics::memory("consumer");
    let cx = Consumer::new(
        testkit::test_sources(),
        aws.ledger(),
        testkit::forwarder(sor.url()),
        SystemClock,
        ConsumerSettings {
            // The first real failure moves the message to the dead-letter queue.
            max_failures: 1,
            archive_bodies: true,
            ..ConsumerSettings::default()
        },
        metrics,
    )
    .with_store(aws.payload_store())
    .with_archive(aws.archive())
    .with_redelivery(SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    ));
    sor.fail_key(FAILED, 1);
    for (id, body) in [
        ("console-fails", FAILING_BODY),
        ("console-script", SCRIPT_BODY),
    ] {
        let resp = rx
            .handle(post(
                "github",
                &github_headers(id, body.as_bytes()),
                body.as_bytes(),
            ))
            .await;
        assert_eq!(resp.status(), 200, "{id}");
    }
    let forged = rx
        .handle(post(
            "github",
            &github_headers("console-forged", b"{\"signed\":\"this\"}"),
            b"{\"sent\":\"that\"}",
        ))
        .await;
    assert_eq!(forged.status(), 401, "a signature of another body");
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    bridge
        .drain(|e| testkit::consume(&cx, e))
        .await
        .expect("drained");
    let mut lines = received.lock().unwrap().clone();
    lines.extend(consumed.lock().unwrap().iter().cloned());
    lines
}

/// The overview's series of one source as the lines count them (`figures::SERIES`: rejected is
/// `Rejected` + `SignatureRejected`), as JSON for the browser script.
fn expected_figures(lines: &[String], source: &str) -> serde_json::Value {
    let n = |m: Metric| tally(lines, source, m);
    serde_json::json!({
        "accepted": n(Metric::Accepted),
        "replayed": n(Metric::Replayed),
        "rejected": n(Metric::Rejected) + n(Metric::SignatureRejected),
        "failed": n(Metric::Failed),
        "dead-lettered": n(Metric::DeadLettered),
    })
}

/// The replay the page sent, delivered by the consumer as deployed (archive on).
async fn deliver_the_replay(aws: &LocalAws, sor: &SystemOfRecord) {
    let (cx, _) = aws.archiving_consumer(testkit::forwarder(sor.url()));
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    bridge
        .drain(|e| testkit::consume(&cx, e))
        .await
        .expect("drained");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn the_console_in_a_real_browser_finds_shows_and_replays_a_failed_event() {
    // Two destinations of stripe's events (none of the run's github events goes to them), one
    // with a rate limit: the overview shows each one's (docs/routing.md, "Rate limit").
    let aws = LocalAws::with_destinations("console", RATED_DESTINATIONS).await;
    let sor = SystemOfRecord::start();
    let lines = two_events(&aws, &sor).await;
    // What Lambda and CloudWatch make of the EMF lines in AWS, on the local CloudWatch.
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&aws.sdk);
    let put = devstack::local_metrics::put(&cloudwatch, &lines)
        .await
        .expect("PutMetricData on the local CloudWatch");
    assert_eq!(put, lines.len(), "one datum a line");
    let figures = expected_figures(&lines, "github");
    assert_eq!(
        figures,
        serde_json::json!({"accepted": 2, "replayed": 0, "rejected": 1, "failed": 1, "dead-lettered": 1}),
        "the run's counts"
    );
    let ledger = aws.ledger();
    let failed = ledger.get(FAILED).await.unwrap().expect("the failed item");
    assert_eq!(failed.status, Status::Failed);
    let last_error = failed.last_error.clone().expect("its last_error");
    assert_eq!(
        ledger.get(SCRIPTED).await.unwrap().expect("item").status,
        Status::Completed
    );
    assert_eq!(sor.calls_for(FAILED), 1);
    assert_eq!(sor.applied_for(FAILED), 0);
    assert_eq!(aws.queue_counts(&aws.resources.dlq_url).await.0, 1);

    // The console, found from the stack's name alone.
    let stack = inbox_ops::stack::resolve(&aws.sdk, &aws.stack.name)
        .await
        .expect("the stack's resources");
    assert_eq!(stack.table.as_deref(), Some(aws.resources.table.as_str()));
    assert_eq!(
        stack.dlq_url.as_deref(),
        Some(aws.resources.dlq_url.as_str())
    );
    assert!(stack.sources.contains(&"github".to_owned()), "{stack:?}");
    // A destination whose breaker a consumer opened (its first failure, a rule of one), and
    // one an operator paused: the overview's destinations.
    let board =
        inbox::destination::pause::PauseBoard::new(aws.dynamo.clone(), &aws.resources.table);
    let rule = inbox::breaker::Rule {
        failures: 1,
        ..inbox::breaker::Rule::default()
    };
    inbox::breaker::apply(&board, "billing", inbox::breaker::Breaker::default(), |b| {
        b.observe(
            &rule,
            1_700_000_000_000,
            "req:m",
            inbox::breaker::Observed::Failure,
        )
    })
    .await
    .expect("the breaker opened on the board");
    board.set("crm", true).await.expect("crm paused");
    let (listener, port) = console::bind(0).await.expect("bind 127.0.0.1");
    let guard = Guard::new(port);
    let url = guard.login_url();
    let served = tokio::spawn(console::serve(
        listener,
        Console {
            sdk: aws.sdk.clone(),
            stack,
            guard,
        },
    ));

    let images = root().join("docs").join("images");
    std::fs::create_dir_all(&images).expect("docs/images");
    let out = tokio::process::Command::new("node")
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg("tests/console/console.spec.mjs")
        .current_dir(root())
        .env("CONSOLE_URL", &url)
        .env("FAILED_KEY", FAILED)
        .env("FAILED_LAST_ERROR", &last_error)
        .env("SCRIPT_KEY", SCRIPTED)
        .env("FIGURES", figures.to_string())
        .env("SCREENSHOTS", &images)
        .output()
        .await
        .expect("node runs (npm ci installs playwright-core)");
    served.abort();
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the browser script failed:\n{report}");
    for shot in [
        "console-overview.png",
        "console-events.png",
        "console-event.png",
    ] {
        let len = std::fs::metadata(images.join(shot))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(len > 10_000, "{shot}: {len} bytes\n{report}");
    }

    // The page's replay, delivered: the failed event reaches the system of record once more.
    deliver_the_replay(&aws, &sor).await;
    assert_eq!(
        sor.calls_for(FAILED),
        2,
        "once more, from the page's replay"
    );
    assert_eq!(sor.applied_for(FAILED), 1);
    let replayed: Vec<_> = sor
        .deliveries()
        .into_iter()
        .filter(|d| d.key == FAILED)
        .collect();
    assert_eq!(replayed.len(), 1);
    assert!(
        replayed[0]
            .replay_id
            .as_deref()
            .is_some_and(|id| id.starts_with("rp-")),
        "{:?}",
        replayed[0].replay_id
    );
    assert_eq!(replayed[0].body, FAILING_BODY.as_bytes());
    let item = ledger.get(FAILED).await.unwrap().expect("item");
    assert_eq!(item.status, Status::Completed);
    assert_eq!(item.replays.len(), 1);
    assert_eq!(sor.calls_for(SCRIPTED), 1, "the other event untouched");
    assert_eq!(
        aws.queue_counts(&aws.resources.dlq_url).await.0,
        1,
        "the refused redrive moved nothing"
    );
}
