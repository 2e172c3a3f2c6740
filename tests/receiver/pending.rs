//! A sender whose secret exists only once the URL does (Stripe): the source is declared
//! `pending`, deployed without its secret, answered 503 with `Retry-After` (nothing claimed,
//! nothing queued) until `inbox-ops secret set` stores it; then the same warm receiver verifies
//! with it, and a rotated secret reaches it the same way, without a cold start. The reads are
//! counted at the resolver, one `GetSecretValue` each; the receiver's clock is a manual one, so
//! the re-read bound ([`SECRET_RETRY_MS`]) is crossed by moving it, not by waiting.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::Parser as _;
use devstack::local_stack::Secret;
use devstack::senders;
use devstack::testkit::{self, github_headers, post, unique, LocalAws, MetricLines, TEST_SECRET};
use inbox::bucket::S3Bucket;
use inbox::clock::{Clock, ManualClock};
use inbox::config::{AwsSecretResolver, SecretRef, SecretResolver};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::metrics::{tally, Metric};
use inbox::queue::SqsQueue;
use inbox::receiver::Receiver;
use inbox::receiver::{
    ReceiverSettings, PENDING_RETRY_AFTER_SECONDS, PREVIOUS_SECRET_MS, SECRET_RETRY_MS,
};
use inbox_ops::cli::Cli;

/// Two Stripe endpoint secrets, as Stripe shows them (`whsec_` and 32 characters).
const STRIPE_FIRST: &str = "whsec_9fKQ2r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const STRIPE_ROLLED: &str = "whsec_4bT7yQpL0sVn2XcW8mRk5JhGf3DzA1Eu";

/// The library's resolver on moto, each read counted (one `GetSecretValue` per read of a
/// one-secret source).
#[derive(Clone)]
struct Counting {
    inner: Arc<AwsSecretResolver>,
    reads: Arc<AtomicU64>,
}

impl SecretResolver for Counting {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.resolve(reference).await
    }
}

/// A stack whose `stripe` is pending on `<prefix>/stripe` (not created) and whose `github`
/// reads `<prefix>/github` (stored).
async fn stack(label: &str) -> (LocalAws, String) {
    let prefix = unique(label);
    let sources = format!(
        r#"{{"stripe": {{"preset": "stripe", "pending": true, "signature": {{"secrets": ["secretsmanager:{prefix}/stripe"]}}}},
            "github": {{"preset": "github", "signature": {{"secrets": ["secretsmanager:{prefix}/github"]}}, "replay_guard_seconds": null}}}}"#
    );
    let secrets = [Secret::new(format!("{prefix}/github"), TEST_SECRET)];
    (
        LocalAws::with_sources(label, &sources, &secrets).await,
        prefix,
    )
}

fn stripe_event(id: &str, secret: &str, t: i64) -> lambda_http::Request {
    let body = format!(r#"{{"id":"{id}","type":"invoice.paid"}}"#).into_bytes();
    let signature = senders::Stripe::new(secret).signature(t, &body);
    post("stripe", &[("stripe-signature", signature)], &body)
}

/// `inbox-ops secret set stripe --stack <stack> ...`, the real command line, on moto.
async fn secret_set(stack: &str, how: &[&str]) -> ExitCode {
    let mut args = vec!["inbox-ops", "secret", "set", "stripe", "--stack", stack];
    args.extend_from_slice(how);
    Cli::try_parse_from(args)
        .expect("the command line parses")
        .run()
        .await
}

fn error_code(resp: &lambda_http::Response<lambda_http::Body>) -> String {
    let v: serde_json::Value = serde_json::from_slice(resp.body().as_ref()).expect("JSON");
    v["error"].as_str().unwrap_or_default().to_owned()
}

/// A warm receiver over [`stack`], on a manual clock, its secret reads counted.
struct Warm {
    aws: LocalAws,
    prefix: String,
    clock: ManualClock,
    reads: Arc<AtomicU64>,
    rx: Receiver<DynamoLedger, SqsQueue, ManualClock, S3Bucket>,
    lines: MetricLines,
}

impl Warm {
    async fn new(label: &str) -> Warm {
        let (aws, prefix) = stack(label).await;
        let clock = ManualClock::at_ms(testkit::now_ms());
        let reads = Arc::new(AtomicU64::new(0));
        let (rx, lines) = aws
            .receiver_at(clock.clone(), ReceiverSettings::default())
            .await;
        let rx = rx.with_secret_resolver(Counting {
            inner: Arc::new(AwsSecretResolver::new(&aws.sdk)),
            reads: reads.clone(),
        });
        aws.faults.reset_calls();
        Warm {
            aws,
            prefix,
            clock,
            reads,
            rx,
            lines,
        }
    }

    fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }

    /// A Stripe event signed with `secret` now, answered.
    async fn stripe(&self, id: &str, secret: &str) -> lambda_http::Response<lambda_http::Body> {
        self.rx
            .handle(stripe_event(id, secret, self.clock.now_secs()))
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_source_waits_with_503_then_verifies_once_its_secret_is_set_and_rotated() {
    let w = Warm::new("pending").await;
    waits_while_pending(&w).await;
    secret_set_refuses_then_stores(&w).await;
    // Within the bound the warm receiver has not looked yet; past it, it verifies.
    let resp = w.stripe("evt_1", STRIPE_FIRST).await;
    assert_eq!(resp.status(), 503, "within the bound");
    assert_eq!(w.reads(), 1);
    w.clock.advance_ms(SECRET_RETRY_MS);
    let resp = w.stripe("evt_1", STRIPE_FIRST).await;
    assert_eq!(resp.status(), 200, "{:?}", resp.body());
    assert_eq!(w.reads(), 2);
    let keys: Vec<String> = w
        .aws
        .ledger_items()
        .await
        .into_iter()
        .map(|i| i.key)
        .collect();
    assert!(keys.contains(&"stripe:evt_1".to_owned()), "{keys:?}");
    // Verifying needs no read now.
    assert_eq!(w.stripe("evt_2", STRIPE_FIRST).await.status(), 200);
    assert_eq!(w.reads(), 2);
    rotation_reaches_it(&w).await;
}

/// Deployed without its secret: 503, Retry-After, nothing written; the other source runs;
/// past the bound the source reads again, finds nothing, and still waits.
async fn waits_while_pending(w: &Warm) {
    for attempt in 0..3 {
        let resp = w.stripe("evt_1", STRIPE_FIRST).await;
        assert_eq!(resp.status(), 503, "attempt {attempt}");
        assert_eq!(error_code(&resp), "source_pending");
        assert_eq!(
            resp.headers()["retry-after"],
            PENDING_RETRY_AFTER_SECONDS.to_string().as_str()
        );
    }
    assert_eq!(w.reads(), 0, "read at start-up only");
    assert_eq!(
        w.aws.faults.all_calls(),
        BTreeMap::new(),
        "no claim, no send"
    );
    let lines = w.lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "stripe", Metric::SourcePending), 3);
    let body = br#"{"action":"opened","number":1}"#;
    let resp =
        w.rx.handle(post("github", &github_headers("d-1", body), body))
            .await;
    assert_eq!(resp.status(), 200, "the other sources run");
    w.clock.advance_ms(SECRET_RETRY_MS);
    assert_eq!(w.stripe("evt_1", STRIPE_FIRST).await.status(), 503);
    assert_eq!(w.reads(), 1);
}

/// `secret set`: a value Stripe would not issue is refused before anything is written; then
/// from a file, the secret is created where WebhookSources says, its line end dropped.
async fn secret_set_refuses_then_stores(w: &Warm) {
    let code = secret_set(
        &w.aws.stack.name,
        &["--value", "sk_live_0123456789abcdefghij"],
    )
    .await;
    assert_eq!(code, ExitCode::FAILURE);
    let sm = aws_sdk_secretsmanager::Client::new(&w.aws.sdk);
    let id = format!("{}/stripe", w.prefix);
    let missing = sm
        .describe_secret()
        .secret_id(&id)
        .send()
        .await
        .expect_err("not created by a refused value");
    assert!(
        missing
            .as_service_error()
            .is_some_and(|e| e.is_resource_not_found_exception()),
        "{missing:?}"
    );
    let file = std::env::temp_dir().join(unique("stripe-secret"));
    std::fs::write(&file, format!("{STRIPE_FIRST}\n")).expect("write the secret file");
    let from_file = file.display().to_string();
    let code = secret_set(&w.aws.stack.name, &["--from-file", &from_file]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    let stored = sm
        .get_secret_value()
        .secret_id(&id)
        .send()
        .await
        .expect("stored");
    assert_eq!(stored.secret_string(), Some(STRIPE_FIRST));
}

/// Rotation: the new value stored in place; the first request it signs, past the bound since
/// the last read, makes the warm receiver read it again; the previous value verifies for its
/// overlap, then no longer.
async fn rotation_reaches_it(w: &Warm) {
    let code = secret_set(&w.aws.stack.name, &["--value", STRIPE_ROLLED]).await;
    assert_eq!(code, ExitCode::SUCCESS);
    w.clock.advance_ms(SECRET_RETRY_MS);
    let resp = w.stripe("evt_3", STRIPE_ROLLED).await;
    assert_eq!(resp.status(), 200, "the rotated secret verifies");
    assert_eq!(w.reads(), 3);
    let resp = w.stripe("evt_4", STRIPE_FIRST).await;
    assert_eq!(
        resp.status(),
        200,
        "the previous secret, within its overlap"
    );
    w.clock.advance_ms(PREVIOUS_SECRET_MS);
    let resp = w.stripe("evt_5", STRIPE_FIRST).await;
    assert_eq!(resp.status(), 401);
    assert_eq!(error_code(&resp), "invalid_signature");
    assert_eq!(w.stripe("evt_6", STRIPE_ROLLED).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_bad_signatures_reads_the_secret_at_most_once_per_bound() {
    let w = Warm::new("pending-storm").await;
    let (rx, clock) = (&w.rx, &w.clock);
    // 100 forged requests a second apart (a real storm is denser: the bound is per time).
    let forged = senders::Stripe::new("whsec_forgedforgedforgedforgedforged");
    let step_ms = 1_000;
    let requests = 100;
    for n in 0..requests {
        clock.advance_ms(step_ms);
        let body = format!(r#"{{"action":"opened","number":{n}}}"#).into_bytes();
        let mut headers = github_headers(&format!("storm-{n}"), &body);
        for (name, value) in &mut headers {
            if *name == "x-hub-signature-256" {
                *value = format!("sha256={}", "0".repeat(64));
            }
        }
        let resp = rx.handle(post("github", &headers, &body)).await;
        assert_eq!(resp.status(), 401, "request {n}");
        let resp = rx
            .handle({
                let body = format!(r#"{{"id":"evt_storm_{n}"}}"#).into_bytes();
                let sig = forged.signature(clock.now_secs(), &body);
                post("stripe", &[("stripe-signature", sig)], &body)
            })
            .await;
        assert_eq!(resp.status(), 503, "the pending source, request {n}");
    }
    // 100 s of storm, one read per source every SECRET_RETRY_MS at most: 20 each.
    let bound = u64::try_from(requests * step_ms / SECRET_RETRY_MS).expect("positive");
    assert_eq!(w.reads(), 2 * bound);
    assert_eq!(
        w.aws.faults.all_calls(),
        BTreeMap::new(),
        "no ledger, no queue"
    );
}
