//! The queue is a trust boundary (docs/design.md §5): messages put on the webhook queue by
//! hand, by a principal that may send to it, whose envelope's parts disagree, are refused
//! before any side effect, noted on the key's item where one exists, counted `Refused`, and
//! dead-lettered at once. The consumer as deployed (the shipped forwarder, the stack's
//! payload bucket, its dead-letter queue) against moto, beside real events that go through.

use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, LocalAws, SystemOfRecord};
use inbox::key::sha256_hex;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::{tally, Metric};
use inbox::queue::{BodyRef, Envelope, Outgoing, Queue as _};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::SqsRedelivery;
use inbox::store::payload_key;

const MIB: usize = 1024 * 1024;

/// An envelope on the queue as a sender with `sqs:SendMessage` would put it: its own group
/// and deduplication id.
async fn put_by_hand(aws: &LocalAws, envelope: &Envelope) {
    aws.queue()
        .send(Outgoing::new(
            &envelope.key,
            &testkit::unique("forged"),
            envelope.to_json(),
        ))
        .await
        .expect("a hand-made message on the queue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn forged_envelopes_on_the_queue_reach_nothing() {
    let aws = LocalAws::new("trust").await;
    let sor = SystemOfRecord::start();
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let (cx, lines) = aws.consumer(testkit::forwarder(sor.url()));
    let cx = cx
        .with_store(aws.payload_store())
        .with_redelivery(SqsRedelivery::new(
            aws.sqs.clone(),
            &aws.resources.queue_url,
            Some(aws.resources.dlq_url.clone()),
        ));
    let mut bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    bridge.retry_failed_now = true;

    // Two real events of the `strict` source: a small one, and one whose body is in the
    // bucket (too big for the queue).
    let small = br#"{"victim":1}"#.to_vec();
    let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(MIB + MIB / 2)).into_bytes();
    for (id, body) in [("v-1", &small), ("v-big", &big)] {
        let resp = rx
            .handle(post("strict", &github_headers(id, body), body))
            .await;
        assert_eq!(resp.status(), 200, "{id}");
    }
    bridge
        .drain(|e| testkit::consume(&cx, e))
        .await
        .expect("drained");
    assert_eq!(sor.deliveries().len(), 2);
    let big_sha = sha256_hex(&big);
    let big_object = payload_key("strict", "strict:v-big", &big_sha);

    // 1. A key of another source: `github` (which the consumer knows) naming strict's key,
    //    its own body hashing right.
    let forged = br#"{"forged":"another source's key"}"#;
    let another_source = Envelope::new(
        "strict:v-1",
        "github",
        testkit::now_ms(),
        &sha256_hex(forged),
        Default::default(),
        forged,
    );
    // 2. A pointer into another source's payloads, hash and size as the object's.
    let mut pointer = Envelope::new(
        "github:f-2",
        "github",
        testkit::now_ms(),
        &big_sha,
        Default::default(),
        b"",
    );
    pointer.body_ref = Some(BodyRef {
        s3_key: big_object.clone(),
        sha256: big_sha.clone(),
        size: big.len() as u64,
    });
    // 3. A body that does not hash to payload_sha256.
    let unhashed = Envelope::new(
        "github:f-3",
        "github",
        testkit::now_ms(),
        &sha256_hex(b"{}"),
        Default::default(),
        br#"{"forged":"a body never hashed"}"#,
    );
    for envelope in [&another_source, &pointer, &unhashed] {
        put_by_hand(&aws, envelope).await;
    }
    bridge
        .drain(|e| testkit::consume(&cx, e))
        .await
        .expect("drained");

    // Nothing reached the system of record: still the two real events, once each.
    let mut delivered: Vec<_> = sor.deliveries().into_iter().map(|d| d.key).collect();
    delivered.sort_unstable();
    assert_eq!(delivered, ["strict:v-1", "strict:v-big"]);
    // Each dead-lettered at once, none left on the queue.
    let dead = aws.receive_all(&aws.resources.dlq_url).await;
    let mut dead_keys: Vec<_> = dead
        .iter()
        .map(|m| {
            Envelope::parse(m.body().unwrap_or_default())
                .expect("envelope")
                .key
        })
        .collect();
    dead_keys.sort_unstable();
    assert_eq!(dead_keys, ["github:f-2", "github:f-3", "strict:v-1"]);
    assert_eq!(aws.queue_counts(&aws.resources.queue_url).await, (0, 0));
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Refused), 3);
    assert_eq!(tally(&lines, "github", Metric::Completed), 0);

    // No ledger item made for the forged keys; the named item keeps its state, with a note.
    let ledger = aws.ledger();
    for key in ["github:f-2", "github:f-3"] {
        assert_eq!(ledger.get(key).await.expect("get"), None, "{key}");
    }
    let victim = ledger.get("strict:v-1").await.expect("get").expect("item");
    assert_eq!(victim.status, Status::Completed);
    assert_eq!(
        victim.last_error.as_deref(),
        Some("refused: the key is not of the envelope's source")
    );
    let big_item = ledger
        .get("strict:v-big")
        .await
        .expect("get")
        .expect("item");
    assert_eq!(big_item.status, Status::Completed);
    assert_eq!(
        big_item.last_error, None,
        "the pointer's key was github:f-2"
    );
}
