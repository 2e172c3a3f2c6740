//! The queue is a trust boundary (docs/design.md §5): messages put on the webhook queue by
//! hand, by a principal that may send to it, whose envelope's parts disagree, are refused
//! before any side effect, noted on the key's item where one exists, counted `Refused`, and
//! dead-lettered at once. The consumer as deployed (the shipped forwarder, the stack's
//! payload bucket, its dead-letter queue) against moto, beside real events that go through.

use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, LocalAws, MetricLines, SystemOfRecord};
use inbox::bucket::payload_key;
use inbox::bucket::S3Bucket;
use inbox::clock::SystemClock;
use inbox::consumer::Consumer;
use inbox::forward::HttpForwarder;
use inbox::key::sha256_hex;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::{tally, Metric};
use inbox::queue::{BodyRef, Envelope, Outgoing, Queue as _};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::SqsRedelivery;

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

/// The consumer as deployed: the shipped forwarder to `sor`, the stack's payload bucket and
/// its dead-letter queue; and a bridge that hands a failed message back at once.
async fn deployed_consumer(
    aws: &LocalAws,
    sor: &SystemOfRecord,
) -> (
    Consumer<
        DynamoLedger,
        HttpForwarder,
        SystemClock,
        inbox::consumer::Wiring<SqsRedelivery, S3Bucket>,
    >,
    MetricLines,
    Bridge,
) {
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
    (cx, lines, bridge)
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
    let (cx, lines, bridge) = deployed_consumer(&aws, &sor).await;

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

/// What the review's probe sent, each a message whose parts agree but that no receiver
/// accepted (docs/design.md §5, "Only accepted events are work"): a self-consistent event
/// with no ledger item (as a forged dead letter redriven would arrive), the real key with
/// another body, a spaced key naming a destination's item, a replay nobody recorded, and a
/// replay for a destination the consumer does not have. Each is refused with its own reason,
/// dead-lettered, and writes no ledger item; the real event is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: a real event, then each probe sequence against it"
)]
async fn messages_nobody_accepted_are_refused_whatever_their_parts_say() {
    let aws = LocalAws::new("trust-acc").await;
    let sor = SystemOfRecord::start();
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, lines, bridge) = deployed_consumer(&aws, &sor).await;
    let body = br#"{"real":1}"#.to_vec();
    let resp = rx
        .handle(post("github", &github_headers("r-1", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    bridge
        .drain(|e| testkit::consume(&cx, e))
        .await
        .expect("drained");
    assert_eq!(sor.deliveries().len(), 1);

    let now = testkit::now_ms();
    let consistent = |key: &str, body: &[u8]| {
        Envelope::new(
            key,
            "github",
            now,
            &sha256_hex(body),
            Default::default(),
            body,
        )
    };
    let other = br#"{"real":1,"amount":1000}"#;
    let mut unrecorded = consistent("github:r-1", &body);
    unrecorded.replay_id = Some("rp-forged".into());
    let mut nowhere = consistent("github:r-1", &body);
    nowhere.replay_id = Some("rp-forged".into());
    nowhere.destination = Some("nosuch".into());
    let cases = [
        (
            consistent("github:f-9", br#"{"forged":1}"#),
            "refused: no ledger item holds this key (no receiver accepted it)",
        ),
        (
            consistent("github:r-1", other),
            "refused: payload_sha256 is not the ledger item's",
        ),
        (
            consistent("github:r-1 to:crm", &body),
            "refused: the key breaks the key rules (holds a space or separator)",
        ),
        (
            unrecorded,
            "refused: this replay id was not recorded on the key's item by inbox-ops replay",
        ),
        (
            nowhere,
            "refused: no destination of this consumer by that name takes this event",
        ),
    ];
    for (refused, (envelope, reason)) in (1u64..).zip(&cases) {
        put_by_hand(&aws, envelope).await;
        bridge
            .drain(|e| testkit::consume(&cx, e))
            .await
            .expect("drained");
        let logged = lines.lock().expect("metrics").clone();
        assert!(
            sor.deliveries().len() == 1,
            "{reason}: nothing reached the system of record"
        );
        let item = aws.ledger().get("github:r-1").await.expect("get");
        let noted = item.as_ref().and_then(|r| r.last_error.clone());
        if envelope.key == "github:r-1" {
            assert_eq!(noted.as_deref(), Some(*reason), "noted on the real item");
        }
        assert_eq!(
            tally(&logged, "github", Metric::Refused),
            refused,
            "{reason}: counted once"
        );
    }
    let logged = lines.lock().expect("metrics").clone();
    assert_eq!(
        tally(&logged, "github", Metric::Refused),
        cases.len() as u64
    );
    for key in ["github:f-9", "github:r-1 to:crm"] {
        assert_eq!(aws.ledger().get(key).await.expect("get"), None, "{key}");
    }
    let real = aws
        .ledger()
        .get("github:r-1")
        .await
        .expect("get")
        .expect("item");
    assert_eq!((real.status, real.attempts), (Status::Completed, 1));
    assert!(real.replays.is_empty());
    let dead = aws.receive_all(&aws.resources.dlq_url).await;
    assert_eq!(dead.len(), cases.len(), "each dead-lettered at once");
    assert_eq!(aws.queue_counts(&aws.resources.queue_url).await, (0, 0));
}
