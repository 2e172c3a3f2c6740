//! The input edges that are *accepted*, end to end on the local AWS API server: numeric
//! ids beyond 64 bits stay distinct events, and a body SQS cannot carry as text (U+FFFE,
//! U+FFFF) is accepted, carried base64 and handed to the side effect byte for byte. (The edges
//! that are refused are in `bad_inputs/edges.rs`, which shows they write nothing.)

use std::sync::{Arc, Mutex};

use devstack::bridge::Bridge;
use devstack::testkit::{self, post, LocalAws};
use inbox::consumer::{Job, ProcessError, Processor};
use inbox::ledger::LedgerStore as _;
use inbox::queue::{sqs_can_carry, Envelope};
use inbox::receiver::ReceiverSettings;

fn stripe_post(body: &[u8]) -> lambda_http::Request {
    let t = testkit::now_ms() / 1000;
    post(
        "stripe",
        &[("stripe-signature", testkit::stripe_signature(body, t))],
        body,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numeric_ids_beyond_64_bits_are_distinct_events() {
    let aws = LocalAws::new("edge-num").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    // Both parse to the same f64 (1.2345678901234568e22).
    let (a, b) = ("12345678901234567890123", "12345678901234567890124");
    for id in [a, b] {
        let body = format!(r#"{{"id":{id},"type":"charge.succeeded"}}"#).into_bytes();
        let resp = rx.handle(stripe_post(&body)).await;
        assert_eq!(resp.status(), 200, "id {id}");
        let answer: serde_json::Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
        assert_eq!(answer["key"], format!("stripe:{id}"));
        assert!(resp.headers().get("idempotent-replayed").is_none(), "{id}");
    }
    let mut keys: Vec<String> = aws
        .ledger_items()
        .await
        .into_iter()
        .map(|r| r.key)
        .collect();
    keys.sort();
    assert_eq!(keys, vec![format!("stripe:{a}"), format!("stripe:{b}")]);
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 2);
}

/// Records the bodies the side effect is handed.
#[derive(Clone, Default)]
struct Bodies(Arc<Mutex<Vec<Vec<u8>>>>);

impl Processor for Bodies {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        self.0.lock().expect("bodies").push(job.body.to_vec());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sqs_cannot_carry_as_text_is_accepted_and_handed_on_byte_for_byte() {
    let aws = LocalAws::new("edge-fffe").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let bodies = Bodies::default();
    let (cx, _) = aws.consumer(bodies.clone());
    let body = "{\"id\":\"evt_fffe\",\"note\":\"\u{FFFE}\u{FFFF}\"}"
        .as_bytes()
        .to_vec();
    assert_eq!(rx.handle(stripe_post(&body)).await.status(), 200);

    // The message as SQS holds it: only characters of SQS's documented set (moto does not
    // check them; SQS refuses U+FFFE and U+FFFF), the body base64.
    let messages = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(messages.len(), 1);
    let text = messages[0].body().expect("a body");
    assert!(text.chars().all(sqs_can_carry), "{text}");
    let envelope = Envelope::parse(text).expect("an envelope");
    assert_eq!(envelope.body_encoding.as_deref(), Some("base64"));
    assert_eq!(envelope.body_bytes().unwrap(), body);
    aws.sqs
        .change_message_visibility()
        .queue_url(&aws.resources.queue_url)
        .receipt_handle(messages[0].receipt_handle().expect("handle"))
        .visibility_timeout(0)
        .send()
        .await
        .expect("visible again");

    // The consumer hands the side effect the bytes as sent.
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    let ran = bridge
        .pump_once(|event| testkit::consume(&cx, event))
        .await
        .expect("pump");
    assert!(ran.is_some(), "a batch ran");
    assert_eq!(*bodies.0.lock().unwrap(), vec![body]);
    let item = aws.ledger().get("stripe:evt_fffe").await.unwrap().unwrap();
    assert_eq!(item.status, inbox::ledger::Status::Completed);
}

/// A source signing the body alone (GitHub) with a replay guard: the same body under a fresh
/// delivery id, within the window, is refused 409 `replayed_body` and claims nothing; the
/// sender's own retry (same id) is still a replayed duplicate; another body is a new event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_resent_under_a_fresh_delivery_id_is_refused_by_the_replay_guard() {
    use inbox::clock::SystemClock;
    use inbox::config::{AwsSecretResolver, SourceSpecs};
    use inbox::metrics::Metrics;
    use inbox::receiver::Receiver;

    let aws = LocalAws::new("edge-guard").await;
    testkit::set_test_secrets();
    let sources = SourceSpecs::parse(
        r#"{"gh": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_SECRET"]},
                   "key": {"from": "header", "name": "X-GitHub-Delivery"},
                   "replay_guard_seconds": 3600}}"#,
    )
    .expect("parses")
    .resolve(&AwsSecretResolver::env_only())
    .await
    .expect("resolves");
    let rx = Receiver::new(
        sources,
        aws.ledger(),
        aws.queue(),
        SystemClock,
        ReceiverSettings::default(),
        Metrics::memory("receiver").0,
    );
    let deliver =
        |id: &str, body: &[u8]| rx.handle(post("gh", &testkit::github_headers(id, body), body));
    let body = br#"{"action":"opened","number":1}"#;

    assert_eq!(deliver("d-1", body).await.status(), 200);
    let again = deliver("d-1", body).await;
    assert_eq!(again.status(), 200);
    assert!(
        again.headers().get("idempotent-replayed").is_some(),
        "the sender's retry replays"
    );

    let replay = deliver("d-2", body).await;
    assert_eq!(replay.status(), 409);
    let answer: serde_json::Value = serde_json::from_slice(replay.body().as_ref()).unwrap();
    assert_eq!(answer, serde_json::json!({"error": "replayed_body"}));
    assert_eq!(aws.ledger().get("gh:d-2").await.unwrap(), None, "no claim");

    let other = br#"{"action":"opened","number":2}"#;
    assert_eq!(deliver("d-3", other).await.status(), 200);

    let messages = aws.receive_all(&aws.resources.queue_url).await;
    let mut keys: Vec<String> = messages
        .iter()
        .map(|m| Envelope::parse(m.body().unwrap()).unwrap().key)
        .collect();
    keys.sort();
    assert_eq!(keys, vec!["gh:d-1", "gh:d-3"], "the replay queued nothing");
}
