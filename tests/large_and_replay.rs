//! Bodies too big for the queue, and replays, against moto's S3 (docs/design.md §12): the
//! receiver and consumer as deployed (the stack's payload bucket, `ARCHIVE_BODIES` on), a
//! GitHub push signed as GitHub signs it, the shipped forwarder and a real HTTP system of
//! record on loopback that records each body.
//!
//! - a 3 MiB push and a 700 KiB one reach the system of record byte for byte; every queue
//!   message stays under 1 MiB, the 3 MiB one by a pointer into the bucket;
//! - S3 failing on put answers 500 with the claim released, and the retry succeeds;
//! - a missing object on the consumer's side fails the message with a clear `last_error`;
//! - a replay of a completed key runs it once more (`Webhook-Replay-Id`), a second delivery of
//!   that replay does not, and the original's redelivery still does nothing;
//! - a replay by time range selects exactly the events of that hour;
//! - a replay that fails leaves its completed key COMPLETED, and a late copy of the original
//!   runs nothing;
//! - an at-most-once source's replay runs once per replay id.

use devstack::faults::When;
use devstack::testkit::{self, github_headers, post, LocalAws, MetricLines, SystemOfRecord};
use inbox::bucket::{payload_key, PayloadBucket as _, S3Bucket};
use inbox::clock::ManualClock;
use inbox::forward::HttpForwarder;
use inbox::key::sha256_hex;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::{tally, Metric};
use inbox::queue::{Envelope, Outgoing, Queue as _, SQS_MAX_MESSAGE_BYTES};
use inbox::receiver::ReceiverSettings;
use inbox_ops::cli::StatusFilter;
use inbox_ops::replay::{self, Selection};

use crate::support::{bridge, drain};

const MIB: usize = 1024 * 1024;

/// The consumer as deployed, reading bodies behind pointers from the stack's bucket.
type Cx = testkit::ArchivingConsumer<HttpForwarder>;

/// A GitHub push payload of about `size` bytes: JSON with many commits (quotes to escape).
fn push_body(size: usize, tag: &str) -> Vec<u8> {
    let mut body = format!(r#"{{"ref":"refs/heads/main","tag":"{tag}","commits":["#);
    let mut i = 0;
    while body.len() < size - 200 {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&format!(
            r#"{{"id":"{:040x}","message":"Fix \"the\" thing\n\nline {i}","added":["src/{i}.rs"]}}"#,
            i
        ));
        i += 1;
    }
    body.push_str("]}");
    body.into_bytes()
}

/// The consumer as deployed: the shipped forwarder to `sor`, the stack's payload bucket and
/// archive stream.
fn consumer(aws: &LocalAws, sor: &SystemOfRecord) -> (Cx, MetricLines) {
    aws.archiving_consumer(testkit::forwarder(sor.url()))
}

/// The `github` events received in `[from_ms, to_ms)`, archived up to `lag_ms` later.
fn github_range(from_ms: i64, to_ms: i64, lag_ms: i64) -> Selection {
    Selection::Range {
        source: "github".into(),
        from_ms,
        to_ms,
        archive_lag_ms: lag_ms,
    }
}

/// Every message on the queue, looked at and made visible again.
async fn peek_bodies(aws: &LocalAws) -> Vec<String> {
    let messages = aws.receive_all(&aws.resources.queue_url).await;
    let mut bodies = Vec::new();
    for m in &messages {
        bodies.push(m.body().unwrap_or_default().to_owned());
        aws.sqs
            .change_message_visibility()
            .queue_url(&aws.resources.queue_url)
            .receipt_handle(m.receipt_handle().unwrap_or_default())
            .visibility_timeout(0)
            .send()
            .await
            .expect("visible again");
    }
    bodies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3_mib_and_a_700_kib_github_push_reach_the_system_of_record_byte_for_byte() {
    let aws = LocalAws::new("big").await;
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let sor = SystemOfRecord::start();
    let (cx, _) = consumer(&aws, &sor);
    let big = push_body(3 * MIB, "big");
    let mid = push_body(700 * 1024, "mid");
    assert!(big.len() > 3 * MIB - 300 && mid.len() > 700 * 1024 - 300);
    for (id, body) in [("d-big", &big), ("d-mid", &mid)] {
        let resp = rx
            .handle(post("github", &github_headers(id, body), body))
            .await;
        assert_eq!(resp.status(), 200, "{id}");
    }

    // Every message under SQS's 1 MiB: the 3 MiB body by a pointer, the 700 KiB one inline.
    let bodies = peek_bodies(&aws).await;
    assert_eq!(bodies.len(), 2);
    for text in &bodies {
        assert!(text.len() <= SQS_MAX_MESSAGE_BYTES, "{} bytes", text.len());
        let env = Envelope::parse(text).expect("an envelope");
        match env.key.as_str() {
            "github:d-big" => {
                let r = env.body_ref.expect("the 3 MiB body is in the bucket");
                assert_eq!(
                    r.s3_key,
                    payload_key("github", "github:d-big", &sha256_hex(&big))
                );
                assert_eq!(r.size, big.len() as u64);
                assert!(env.body.is_empty());
            }
            "github:d-mid" => {
                assert!(env.body_ref.is_none(), "700 KiB fits the queue");
                assert_eq!(env.body_bytes().unwrap(), mid);
            }
            other => panic!("unexpected key {other}"),
        }
    }

    drain(&bridge(&aws).await, |e| testkit::consume(&cx, e)).await;
    let deliveries = sor.deliveries();
    assert_eq!(deliveries.len(), 2, "each once");
    for (key, body) in [("github:d-big", &big), ("github:d-mid", &mid)] {
        let d = deliveries.iter().find(|d| d.key == key).expect(key);
        assert!(d.body == *body, "{key}: the body, byte for byte");
        assert_eq!(d.replay_id, None);
        let item = aws.ledger().get(key).await.unwrap().expect("item");
        assert_eq!(item.status, Status::Completed, "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_down_on_put_answers_500_with_the_claim_released_and_the_retry_succeeds() {
    let aws = LocalAws::new("s3down").await;
    let (rx, lines) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let body = push_body(2 * MIB, "down");
    let deliver = || rx.handle(post("github", &github_headers("d-down", &body), &body));

    aws.faults.fail("PutObject", When::Before, 1);
    let resp = deliver().await;
    assert_eq!(resp.status(), 500);
    assert_eq!(
        aws.ledger().get("github:d-down").await.unwrap(),
        None,
        "the claim is released"
    );
    assert!(peek_bodies(&aws).await.is_empty(), "nothing queued");
    assert_eq!(tally(&lines.lock().unwrap(), "github", Metric::Released), 1);

    let resp = deliver().await;
    assert_eq!(resp.status(), 200, "the sender's retry");
    let bodies = peek_bodies(&aws).await;
    assert_eq!(bodies.len(), 1);
    let env = Envelope::parse(&bodies[0]).unwrap();
    let r = env.body_ref.expect("a pointer");
    assert_eq!(
        aws.payload_store().get(&r.s3_key).await.unwrap().as_deref(),
        Some(&body[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_object_reports_the_message_failed_with_a_clear_last_error() {
    let aws = LocalAws::new("gone").await;
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let sor = SystemOfRecord::start();
    let (cx, lines) = consumer(&aws, &sor);
    let body = push_body(2 * MIB, "gone");
    let resp = rx
        .handle(post("github", &github_headers("d-gone", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    let object = payload_key("github", "github:d-gone", &sha256_hex(&body));
    aws.s3
        .delete_object()
        .bucket(&aws.resources.payload_bucket)
        .key(&object)
        .send()
        .await
        .expect("DeleteObject");

    let b = bridge(&aws).await;
    let messages = b.receive().await.expect("receive");
    assert_eq!(messages.len(), 1);
    let answer = testkit::consume(&cx, b.event(&messages)).await.unwrap();
    assert_eq!(
        answer.batch_item_failures.len(),
        1,
        "reported failed, not skipped"
    );
    let item = aws
        .ledger()
        .get("github:d-gone")
        .await
        .unwrap()
        .expect("item");
    assert_eq!(item.status, Status::Failed);
    let expected = format!(
        "payload missing: s3://{}/{object}",
        aws.resources.payload_bucket
    );
    assert_eq!(item.last_error.as_deref(), Some(expected.as_str()));
    assert_eq!(tally(&lines.lock().unwrap(), "github", Metric::Failed), 1);
    assert_eq!(sor.calls_for("github:d-gone"), 0, "nothing forwarded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn a_replay_of_a_completed_key_runs_once_more_and_a_second_delivery_does_not() {
    let aws = LocalAws::new("replay").await;
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let sor = SystemOfRecord::start();
    let (cx, lines) = consumer(&aws, &sor);
    let b = bridge(&aws).await;
    let store: S3Bucket = aws.payload_store();
    let ledger = aws.ledger();
    // One small push and one carried by a pointer: both replay from the archive.
    let small = br#"{"ref":"refs/heads/main","commits":[]}"#.to_vec();
    let big = push_body(2 * MIB, "replay");
    for (id, body) in [("d-r1", &small), ("d-r2", &big)] {
        let resp = rx
            .handle(post("github", &github_headers(id, body), body))
            .await;
        assert_eq!(resp.status(), 200);
    }
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(sor.deliveries().len(), 2);

    for (key, body) in [("github:d-r1", &small), ("github:d-r2", &big)] {
        let picked = replay::select(
            &store,
            &ledger,
            &Selection::Key(key.into()),
            StatusFilter::Completed,
        )
        .await
        .expect("select")
        .candidates;
        assert_eq!(picked.len(), 1, "{key}");
        assert_eq!(
            inbox_ops::lookup::archived_body(&store, &ledger, key, &[])
                .await
                .unwrap(),
            *body,
            "lookup --body"
        );
        let sent = replay::send(&aws.queue(), &ledger, &picked, "rp-one", 50, |_| {})
            .await
            .unwrap();
        assert_eq!((sent.count, sent.skipped.len()), (1, 0));
    }
    drain(&b, |e| testkit::consume(&cx, e)).await;
    let deliveries = sor.deliveries();
    assert_eq!(deliveries.len(), 4, "each once more");
    for (key, body) in [("github:d-r1", &small), ("github:d-r2", &big)] {
        let replays: Vec<_> = deliveries
            .iter()
            .filter(|d| d.key == key && d.replay_id.as_deref() == Some("rp-one"))
            .collect();
        assert_eq!(
            replays.len(),
            1,
            "{key}: the replay, with the same Idempotency-Key"
        );
        assert!(replays[0].body == *body, "{key}: the same bytes");
        let item = ledger.get(key).await.unwrap().expect("item");
        assert_eq!(item.status, Status::Completed);
        assert!(item.replays.contains("rp-one"));
    }
    assert_eq!(
        tally(&lines.lock().unwrap(), "github", Metric::ReplayCompleted),
        2
    );

    // A second delivery of the same replay (past SQS's deduplication window: another
    // deduplication id), and a late redelivery of the original: neither runs.
    let picked = replay::select(
        &store,
        &ledger,
        &Selection::Key("github:d-r1".into()),
        StatusFilter::Any,
    )
    .await
    .unwrap()
    .candidates;
    let again = replay::replay_message(&picked[0], "rp-one");
    aws.queue()
        .send(Outgoing::new(
            "github:d-r1",
            "late-replay",
            again.body().to_owned(),
        ))
        .await
        .unwrap();
    aws.queue()
        .send(Outgoing::new(
            "github:d-r1",
            "late-original",
            picked[0].envelope.to_json(),
        ))
        .await
        .unwrap();
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(sor.deliveries().len(), 4, "nothing ran again");
    assert_eq!(
        tally(&lines.lock().unwrap(), "github", Metric::DuplicateDelivery),
        2
    );
    assert_eq!(
        tally(&lines.lock().unwrap(), "github", Metric::ReplayCompleted),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_by_time_range_selects_exactly_the_events_of_that_hour() {
    let aws = LocalAws::new("range").await;
    let now = testkit::now_ms();
    // An hour two hours back, and events around its edges.
    let hour = now - now.rem_euclid(3_600_000) - 2 * 3_600_000;
    let clock = ManualClock::at_ms(hour);
    let (rx, _) = aws
        .receiver_at(clock.clone(), ReceiverSettings::default())
        .await;
    let sor = SystemOfRecord::start();
    let (cx, _) = consumer(&aws, &sor);
    let events = [
        ("d-before", hour - 1),
        ("d-first", hour),
        ("d-middle", hour + 1_800_000),
        ("d-last", hour + 3_599_999),
        ("d-after", hour + 3_600_000),
    ];
    for (id, at) in events {
        clock.set_ms(at);
        let body = format!(r#"{{"id":"{id}"}}"#).into_bytes();
        let resp = rx
            .handle(post("github", &github_headers(id, &body), &body))
            .await;
        assert_eq!(resp.status(), 200, "{id}");
    }
    let b = bridge(&aws).await;
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(sor.deliveries().len(), 5);

    let (store, ledger) = (aws.payload_store(), aws.ledger());
    // Received two hours back on the receiver's clock, archived now (moto files the objects
    // under its own now): a lag of three hours finds them.
    let range = github_range(hour, hour + 3_600_000, 3 * 3_600_000);
    let picked = replay::select(&store, &ledger, &range, StatusFilter::Completed)
        .await
        .unwrap()
        .candidates;
    let mut keys: Vec<_> = picked.iter().map(|c| c.envelope.key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["github:d-first", "github:d-last", "github:d-middle"]);
    assert!(picked.iter().all(|c| c.object.starts_with("archive/20")));
    // No lag: the hours up to an hour after the range, not the objects filed two hours
    // after the receipts.
    let short = github_range(hour, hour + 3_600_000, 0);
    assert!(replay::select(&store, &ledger, &short, StatusFilter::Any)
        .await
        .unwrap()
        .candidates
        .is_empty());
    // A narrower range inside the hour: the received_at decides at the edges.
    let narrow = github_range(hour + 1, hour + 3_599_999, 3 * 3_600_000);
    let picked_narrow = replay::select(&store, &ledger, &narrow, StatusFilter::Any)
        .await
        .unwrap()
        .candidates;
    assert_eq!(picked_narrow.len(), 1);
    assert_eq!(picked_narrow[0].envelope.key, "github:d-middle");
    // FAILED only: none of them.
    assert!(
        replay::select(&store, &ledger, &range, StatusFilter::Failed)
            .await
            .unwrap()
            .candidates
            .is_empty()
    );

    replay::send(&aws.queue(), &ledger, &picked, "rp-hour", 100, |_| {})
        .await
        .unwrap();
    drain(&b, |e| testkit::consume(&cx, e)).await;
    let mut replayed: Vec<_> = sor
        .deliveries()
        .into_iter()
        .filter(|d| d.replay_id.as_deref() == Some("rp-hour"))
        .map(|d| d.key)
        .collect();
    replayed.sort_unstable();
    assert_eq!(
        replayed,
        ["github:d-first", "github:d-last", "github:d-middle"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_replay_leaves_the_key_completed_and_a_late_original_runs_nothing() {
    let aws = LocalAws::new("replay-fail").await;
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let sor = SystemOfRecord::start();
    let (cx, lines) = consumer(&aws, &sor);
    let b = bridge(&aws).await;
    let store: S3Bucket = aws.payload_store();
    let ledger = aws.ledger();
    let (key, body) = ("github:d-f1", br#"{"ref":"refs/heads/main","commits":[]}"#);
    let resp = rx
        .handle(post("github", &github_headers("d-f1", body), body))
        .await;
    assert_eq!(resp.status(), 200);
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(sor.applied_for(key), 1);
    let completed_at = ledger.get(key).await.unwrap().expect("item").completed_at;

    // The system of record fails the replay once.
    let picked = replay::select(
        &store,
        &ledger,
        &Selection::Key(key.into()),
        StatusFilter::Completed,
    )
    .await
    .expect("select")
    .candidates;
    sor.fail_key(key, 1);
    assert_eq!(
        replay::send(&aws.queue(), &ledger, &picked, "rp-fail", 50, |_| {})
            .await
            .unwrap()
            .count,
        1
    );
    b.pump_once(|e| testkit::consume(&cx, e))
        .await
        .expect("one round");
    assert_eq!(sor.calls_for(key), 2, "the replay was tried");
    let item = ledger.get(key).await.unwrap().expect("item");
    assert_eq!(
        item.status,
        Status::Completed,
        "a failed replay leaves the key done"
    );
    assert_eq!(item.completed_at, completed_at);
    assert_eq!(item.failures, 1);
    assert!(item.replays.is_empty());

    // A late copy of the original behind it runs nothing; the replay's retry runs once.
    aws.queue()
        .send(Outgoing::new(
            key,
            "late-original",
            picked[0].envelope.to_json(),
        ))
        .await
        .unwrap();
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(
        sor.applied_for(key),
        2,
        "the original once, the replay once"
    );
    let replays = sor
        .deliveries()
        .into_iter()
        .filter(|d| d.replay_id.as_deref() == Some("rp-fail"))
        .count();
    assert_eq!(replays, 1);
    let item = ledger.get(key).await.unwrap().expect("item");
    assert_eq!(item.status, Status::Completed);
    assert!(item.replays.contains("rp-fail"));
    assert_eq!(
        tally(&lines.lock().unwrap(), "github", Metric::DuplicateDelivery),
        1
    );
}

/// The archive is an input (docs/design.md §5): objects planted under `archive/` (one that
/// sorts before Firehose's, holding the real key with another body and a key nobody
/// accepted) are passed over by both selections, and said with why; the replay sends the
/// real body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom: the event, the planted object, both selections, the replay"
)]
async fn planted_archive_objects_are_passed_over_and_said() {
    let aws = LocalAws::new("planted").await;
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let sor = SystemOfRecord::start();
    let (cx, _) = consumer(&aws, &sor);
    let b = bridge(&aws).await;
    let (store, ledger) = (aws.payload_store(), aws.ledger());
    let real = br#"{"id":"d-p1","amount":1}"#.to_vec();
    let resp = rx
        .handle(post("github", &github_headers("d-p1", &real), &real))
        .await;
    assert_eq!(resp.status(), 200);
    drain(&b, |e| testkit::consume(&cx, e)).await;
    let item = ledger.get("github:d-p1").await.unwrap().expect("item");
    let archived_at = item.archived_at.expect("archived");

    let now = testkit::now_ms();
    let forged = br#"{"id":"d-p1","amount":1000}"#;
    let lines = [
        Envelope::new(
            "github:d-p1",
            "github",
            now,
            &sha256_hex(forged),
            Default::default(),
            forged,
        ),
        Envelope::new(
            "github:d-planted",
            "github",
            now,
            &sha256_hex(forged),
            Default::default(),
            forged,
        ),
    ]
    .map(|e| e.to_json())
    .join("\n");
    let planted = format!(
        "{}0-planted",
        inbox::archive::archive_hour_prefix(archived_at)
    );
    store
        .put(&planted, lines.into_bytes())
        .await
        .expect("planted");

    let by_key = replay::select(
        &store,
        &ledger,
        &Selection::Key("github:d-p1".into()),
        StatusFilter::Any,
    )
    .await
    .unwrap();
    assert_eq!(by_key.candidates.len(), 1);
    assert_eq!(
        by_key.candidates[0].envelope.body_bytes().unwrap(),
        real,
        "the body the ledger holds"
    );
    assert_ne!(by_key.candidates[0].object, planted);

    let range = github_range(now - 3_600_000, now + 60_000, 3_600_000);
    let by_range = replay::select(&store, &ledger, &range, StatusFilter::Any)
        .await
        .unwrap();
    let picked: Vec<_> = by_range
        .candidates
        .iter()
        .map(|c| (c.envelope.key.as_str(), c.envelope.body_bytes().unwrap()))
        .collect();
    assert_eq!(picked, [("github:d-p1", real.clone())]);
    let mut skipped: Vec<_> = by_range
        .skipped
        .iter()
        .map(|s| (s.key.as_str(), s.reason, s.object.as_str()))
        .collect();
    skipped.sort_unstable_by_key(|s| s.0);
    assert_eq!(
        skipped,
        [
            (
                "github:d-p1",
                replay::SkipReason::PayloadDiffers,
                planted.as_str()
            ),
            (
                "github:d-planted",
                replay::SkipReason::NoLedgerItem,
                planted.as_str()
            ),
        ]
    );
    assert_eq!(
        by_range.skipped[0].to_string(),
        format!(
            "skipped {} ({planted}): {}",
            by_range.skipped[0].key, by_range.skipped[0].reason
        )
    );

    // The replay records its id, then sends the real body: forwarded once more, as signed.
    let sent = replay::send(
        &aws.queue(),
        &ledger,
        &by_range.candidates,
        "rp-planted",
        50,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!((sent.count, sent.skipped.len()), (1, 0));
    drain(&b, |e| testkit::consume(&cx, e)).await;
    let replays: Vec<_> = sor
        .deliveries()
        .into_iter()
        .filter(|d| d.replay_id.is_some())
        .collect();
    assert_eq!(replays.len(), 1);
    assert!(replays[0].body == real);
    let item = ledger.get("github:d-p1").await.unwrap().expect("item");
    assert!(item.replay_requests.contains("rp-planted") && item.replays.contains("rp-planted"));
    assert_eq!(ledger.get("github:d-planted").await.unwrap(), None);
}

/// An at-most-once source keeps no ledger item, so there is nothing to check an archived
/// envelope against: its replays are refused (dead-lettered, `Refused`), and the original ran
/// once, without the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_most_once_replay_is_refused() {
    let aws = LocalAws::new("replay-amo").await;
    let sor = SystemOfRecord::start();
    let sources = inbox::config::SourceSpecs::parse(
        r#"{"notify": {"signature": {"scheme": "none"}, "allow_unsigned": true,
             "key": {"from": "header", "name": "x-id"}, "delivery": "at_most_once"}}"#,
    )
    .expect("sources");
    let (cx, lines) = testkit::consumer_with(sources, aws.ledger(), testkit::forwarder(sor.url()));
    let b = bridge(&aws).await;
    let key = "notify:n-1";
    let body = br#"{"note":"hello"}"#;
    let mut envelope = Envelope::new(
        key,
        "notify",
        testkit::now_ms(),
        &sha256_hex(body),
        Default::default(),
        body,
    );
    aws.queue()
        .send(Outgoing::new(key, "original", envelope.to_json()))
        .await
        .unwrap();
    envelope.replay_id = Some("rp-a".to_owned());
    assert!(
        !aws.ledger()
            .request_replay(key, &envelope.payload_sha256, "rp-a", testkit::now_ms())
            .await
            .unwrap(),
        "no item to record a replay on"
    );
    aws.queue()
        .send(Outgoing::new(key, "rp-a-1", envelope.to_json()))
        .await
        .unwrap();
    b.pump_once(|e| testkit::consume(&cx, e))
        .await
        .expect("one round");
    let replay_ids: Vec<_> = sor.deliveries().into_iter().map(|d| d.replay_id).collect();
    assert_eq!(replay_ids, [None], "the original only");
    assert_eq!(aws.ledger().get(key).await.unwrap(), None, "no item made");
    assert_eq!(tally(&lines.lock().unwrap(), "notify", Metric::Refused), 1);
}
