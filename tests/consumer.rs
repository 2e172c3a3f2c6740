//! The consumer, end to end: a real FIFO queue and ledger on the local AWS API server, and a
//! real HTTP system of record on loopback that counts calls per `Idempotency-Key`.

use std::time::Duration;

use aws_lambda_events::sqs::SqsBatchResponse;
use devstack::testkit::{self, github_headers, post, LocalAws, SystemOfRecord, TestReceiver};
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::{tally, Metric};
use inbox::queue::Queue as _;
use inbox::receiver::ReceiverSettings;

use crate::support::{bridge, drain};

async fn deliver_github(rx: &TestReceiver, id: &str, body: &[u8]) -> u16 {
    rx.handle(post("github", &github_headers(id, body), body))
        .await
        .status()
        .as_u16()
}

/// A copy of an already-accepted event's message, as a redelivery after the queue's
/// five-minute deduplication window would look (a new deduplication id).
async fn redeliver_late(aws: &LocalAws, envelope_body: &str, group: &str, n: u32) {
    aws.queue()
        .send(inbox::queue::Outgoing::new(
            group,
            &format!("late-{n}-{}", testkit::unique("x")),
            envelope_body.to_owned(),
        ))
        .await
        .expect("send");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_of_a_completed_event_runs_the_side_effect_once() {
    let aws = LocalAws::new("c-dup").await;
    let sor = SystemOfRecord::start();
    let (cx, lines) = aws.consumer(testkit::forwarder(sor.url()));
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let b = bridge(&aws).await;
    let body = br#"{"n":1}"#;
    assert_eq!(deliver_github(&rx, "e-1", body).await, 200);

    // Keep a copy of the message before the consumer deletes it.
    let copy = aws.receive_all(&aws.resources.queue_url).await;
    let envelope = copy[0].body().expect("body").to_owned();
    aws.sqs
        .change_message_visibility()
        .queue_url(&aws.resources.queue_url)
        .receipt_handle(copy[0].receipt_handle().expect("handle"))
        .visibility_timeout(0)
        .send()
        .await
        .expect("visible");
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(sor.calls_for("github:e-1"), 1);

    // Two late copies in one batch, and one more later.
    redeliver_late(&aws, &envelope, "github:e-1", 1).await;
    redeliver_late(&aws, &envelope, "github:e-1", 2).await;
    drain(&b, |e| testkit::consume(&cx, e)).await;
    redeliver_late(&aws, &envelope, "github:e-1", 3).await;
    drain(&b, |e| testkit::consume(&cx, e)).await;

    assert_eq!(sor.calls_for("github:e-1"), 1, "side effect ran once");
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Completed), 1);
    assert_eq!(tally(&lines, "github", Metric::DuplicateDelivery), 3);
    let item = aws
        .ledger()
        .get("github:e-1")
        .await
        .expect("get")
        .expect("item");
    assert_eq!(item.status, Status::Completed);
    assert_eq!(item.attempts, 1);
    assert!(aws.receive_all(&aws.resources.queue_url).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn a_failure_in_one_group_holds_back_its_later_messages_and_other_groups_complete() {
    let aws = LocalAws::new("c-groups").await;
    let sor = SystemOfRecord::start();
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let t = testkit::now_ms() / 1000;
    // Source "acme" groups by customer: A1 A2 A3 for customer A, B1 B2 for customer B.
    let mut keys = Vec::new();
    for (id, customer) in [
        ("A1", "A"),
        ("B1", "B"),
        ("A2", "A"),
        ("A3", "A"),
        ("B2", "B"),
    ] {
        let body = format!(r#"{{"customer_id":"{customer}","event":"{id}"}}"#).into_bytes();
        let resp = rx
            .handle(post(
                "acme",
                &testkit::standard_webhooks_headers(id, t, &body),
                &body,
            ))
            .await;
        assert_eq!(resp.status(), 200);
        keys.push(format!("acme:{id}"));
    }
    sor.fail_key("acme:A2", 1);

    let b = bridge(&aws).await;
    // One batch holding both groups, as the event source mapping would deliver it.
    let messages = b.receive().await.expect("receive");
    assert_eq!(messages.len(), 5, "both groups in one batch");
    let event = b.event(&messages);
    let id_of = |key: &str| {
        event
            .records
            .iter()
            .find(|r| {
                r.body
                    .as_deref()
                    .is_some_and(|body| body.contains(&format!("\"key\":\"{key}\"")))
            })
            .and_then(|r| r.message_id.clone())
            .expect("message for key")
    };
    let response = testkit::consume(&cx, event.clone()).await.expect("invoke");
    let mut failed: Vec<String> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    let mut expected = vec![id_of("acme:A2"), id_of("acme:A3")];
    expected.sort();
    assert_eq!(failed, expected, "A2 failed, A3 held back without running");
    assert_eq!(sor.calls_for("acme:A1"), 1);
    assert_eq!(sor.calls_for("acme:A2"), 1);
    assert_eq!(sor.calls_for("acme:A3"), 0, "held back, not run");
    assert_eq!(sor.calls_for("acme:B1"), 1);
    assert_eq!(sor.calls_for("acme:B2"), 1);
    let a2 = aws
        .ledger()
        .get("acme:A2")
        .await
        .expect("get")
        .expect("item");
    assert_eq!(a2.status, Status::Failed);
    assert_eq!(
        a2.last_error.as_deref(),
        Some("forward answered 500 Internal Server Error")
    );

    // The mapping redelivers the two; they complete in order.
    b.settle(&messages, &response).await.expect("settle");
    drain(&b, |e| testkit::consume(&cx, e)).await;
    for key in &keys {
        let item = aws.ledger().get(key).await.expect("get").expect("item");
        assert_eq!(item.status, Status::Completed, "{key}");
    }
    assert_eq!(sor.calls_for("acme:A2"), 2);
    assert_eq!(sor.calls_for("acme:A3"), 1);
    assert_eq!(
        aws.ledger()
            .get("acme:A2")
            .await
            .expect("get")
            .expect("item")
            .attempts,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_dies_after_take_is_taken_over_once_its_lease_runs_out() {
    let aws = LocalAws::new("c-die").await;
    let sor = SystemOfRecord::start();
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    assert_eq!(deliver_github(&rx, "e-die", b"{}").await, 200);

    let b = bridge(&aws).await;
    let messages = b.receive().await.expect("receive");
    let event = b.event(&messages);
    // The first invocation takes the key with a short lease, then dies before its side
    // effect: nothing is released, nothing is deleted, nothing else is written.
    let short = testkit::now_ms() + 400;
    let env = inbox::queue::Envelope::parse(event.records[0].body.as_deref().expect("body"))
        .expect("envelope");
    let take = inbox::ledger::Take {
        key: env.key.clone(),
        source: env.source.clone(),
        payload_sha256: env.payload_sha256.clone(),
        owner: "dead-invocation:m".into(),
        now_ms: testkit::now_ms(),
        lease_until_ms: short,
        expires_at: testkit::now_ms() / 1000 + 3600,
        response_status: 200,
        response_body: inbox::receiver::accepted_response(&env.key).1,
        archived_at: None,
        item: inbox::ledger::TakeItem::Event,
    };
    assert_eq!(
        aws.ledger().take(&take).await,
        Ok(inbox::ledger::TakeOutcome::Taken { attempts: 1 })
    );
    // Redelivered while the dead lease is live: reported failed, not run.
    let early = cx
        .handle_batch(
            &event.records,
            "inv-early",
            Some(testkit::now_ms() + 30_000),
        )
        .await;
    assert_eq!(early.batch_item_failures.len(), 1);
    assert_eq!(sor.calls_for("github:e-die"), 0);

    // After the lease runs out the next delivery takes over and completes once.
    while testkit::now_ms() <= short {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let late = cx
        .handle_batch(&event.records, "inv-late", Some(testkit::now_ms() + 30_000))
        .await;
    assert!(late.batch_item_failures.is_empty());
    b.settle(&messages, &late).await.expect("settle");
    drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(sor.calls_for("github:e-die"), 1);
    let item = aws
        .ledger()
        .get("github:e-die")
        .await
        .expect("get")
        .expect("item");
    assert_eq!(item.status, Status::Completed);
    assert_eq!(item.attempts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_effect_that_fails_then_succeeds_completes_once_with_two_attempts() {
    let aws = LocalAws::new("c-retry").await;
    let sor = SystemOfRecord::start();
    let (cx, lines) = aws.consumer(testkit::forwarder(sor.url()));
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    sor.fail_key("github:e-flaky", 1);
    assert_eq!(deliver_github(&rx, "e-flaky", b"{}").await, 200);
    let b = bridge(&aws).await;
    let rounds = drain(&b, |e| testkit::consume(&cx, e)).await;
    assert_eq!(
        rounds
            .iter()
            .map(|r| (r.received, r.failed))
            .collect::<Vec<_>>(),
        [(1, 1), (1, 0)],
        "one round failing the message, one completing it"
    );
    let item = aws
        .ledger()
        .get("github:e-flaky")
        .await
        .expect("get")
        .expect("item");
    assert_eq!(item.status, Status::Completed);
    assert_eq!(item.attempts, 2);
    assert_eq!(
        sor.calls_for("github:e-flaky"),
        2,
        "one failed call, one successful"
    );
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Failed), 1);
    assert_eq!(tally(&lines, "github", Metric::Completed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unparseable_message_is_reported_failed_never_dropped() {
    let aws = LocalAws::new("c-garbage").await;
    let sor = SystemOfRecord::start();
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    aws.queue()
        .send(inbox::queue::Outgoing::new(
            "g",
            "garbage",
            "this is not an envelope".into(),
        ))
        .await
        .expect("send");
    let b = bridge(&aws).await;
    let round = b
        .pump_once(|e| testkit::consume(&cx, e))
        .await
        .expect("pump")
        .expect("a message");
    assert_eq!(
        round,
        devstack::bridge::Round {
            received: 1,
            deleted: 0,
            failed: 1,
            gone: 0,
        }
    );
    assert_eq!(
        aws.receive_all(&aws.resources.queue_url).await.len(),
        1,
        "still on the queue"
    );
    assert!(sor.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_then_consumer_100_events_delivered_3_times_forward_exactly_100_calls() {
    let aws = LocalAws::new("c-e2e").await;
    let sor = SystemOfRecord::start();
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let b = bridge(&aws).await;

    // Three rounds of all 100 events, 25 at a time, with the consumer running in between.
    for round in 0..3 {
        for chunk in (0..100).collect::<Vec<u32>>().chunks(25) {
            let answers = futures::future::join_all(chunk.iter().map(|i| {
                let body = format!(r#"{{"n":{i}}}"#).into_bytes();
                let id = format!("ev-{i}");
                let rx = &rx;
                async move { deliver_github(rx, &id, &body).await }
            }))
            .await;
            assert!(
                answers.iter().all(|s| *s == 200),
                "round {round}: {answers:?}"
            );
        }
        if round == 1 {
            drain(&b, |e| testkit::consume(&cx, e)).await;
        }
    }
    drain(&b, |e| testkit::consume(&cx, e)).await;

    let calls = sor.calls();
    assert_eq!(calls.len(), 100, "one key per event");
    assert!(calls.values().all(|n| *n == 1), "{calls:?}");
    assert_eq!(calls.values().sum::<u64>(), 100);
    assert!(
        (0..100).all(|i| calls.contains_key(&format!("github:ev-{i}"))),
        "each carried its Idempotency-Key"
    );
    let items = aws.ledger_items().await;
    assert_eq!(items.len(), 100);
    assert!(items
        .iter()
        .all(|i| i.status == Status::Completed && i.attempts == 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settle_after_a_later_receive_deleted_the_message_is_dropped_not_an_error() {
    // As on a standard queue, or after a visibility timeout ran out: the message went out
    // again and that receive deleted it, then the first receive settles. SQS (moto too)
    // answers the stale receipt handle with ReceiptHandleIsInvalid; the event source mapping
    // drops such a settle, and so does the bridge.
    let aws = LocalAws::new("c-stale").await;
    aws.queue()
        .send(inbox::queue::Outgoing::new("g", "stale", "{}".into()))
        .await
        .expect("send");
    let b = bridge(&aws).await;
    let first = b.receive().await.expect("receive");
    assert_eq!(first.len(), 1);
    let handle = first[0].receipt_handle().expect("a receipt handle");
    aws.sqs
        .change_message_visibility()
        .queue_url(&aws.resources.queue_url)
        .receipt_handle(handle)
        .visibility_timeout(0)
        .send()
        .await
        .expect("visible again");
    let second = b.receive().await.expect("receive again");
    assert_eq!(second.len(), 1, "the same message, received again");
    let done = b
        .settle(&second, &SqsBatchResponse::default())
        .await
        .expect("settled");
    assert_eq!(done.deleted, 1);
    // The first receive reports it failed: its visibility change meets a deleted message.
    let mut failed = SqsBatchResponse::default();
    let mut f = aws_lambda_events::sqs::BatchItemFailure::default();
    f.item_identifier = first[0].message_id().unwrap_or_default().to_owned();
    failed.batch_item_failures.push(f);
    let stale = b.settle(&first, &failed).await.expect("no error");
    assert_eq!((stale.failed, stale.gone), (1, 1));
    assert!(aws.receive_all(&aws.resources.queue_url).await.is_empty());
}

/// An item as the former two-path consumer left it (one failed forward: FAILED, one attempt,
/// one failure), written attribute by attribute: the one path takes it in place (the default
/// destination's item is the event's own, `pk` the key), completes it with the same attribute
/// names and status strings, and writes no other item. No migration for a deployed stack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_written_before_the_one_path_is_completed_in_place_with_its_layout() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let aws = LocalAws::new("c-oldform").await;
    let sor = SystemOfRecord::start();
    let (cx, lines) = aws.consumer(testkit::forwarder(sor.url()));
    let (key, body) = ("github:e-oldform", br#"{"n":1}"#.as_slice());
    let sha = inbox::key::sha256_hex(body);
    let now = testkit::now_ms();
    put_item_as_before(&aws, key, &sha, now).await;

    let envelope = inbox::queue::Envelope::new(
        key,
        "github",
        now - 60_000,
        &sha,
        github_headers("e-oldform", body)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        body,
    );
    let mut msg = aws_lambda_events::sqs::SqsMessage::default();
    msg.message_id = Some("m-oldform".into());
    msg.body = Some(envelope.to_json());
    let answer = cx.handle_batch(&[msg], "inv-oldform", None).await;
    assert!(answer.batch_item_failures.is_empty(), "{answer:?}");
    assert_eq!(sor.calls_for(key), 1);

    let scan = aws
        .dynamo
        .scan()
        .table_name(&aws.resources.table)
        .send()
        .await
        .expect("scan");
    let items = scan.items();
    assert_eq!(items.len(), 1, "no item but the event's own: {items:?}");
    let item = &items[0];
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "attempts",
            "completed_at",
            "expires_at",
            "failures",
            "last_error",
            "payload_sha256",
            "pk",
            "received_at",
            "response_body",
            "response_status",
            "source",
            "status"
        ]
    );
    assert_eq!(item["pk"], V::S(key.into()));
    assert_eq!(item["status"], V::S("COMPLETED".into()));
    assert_eq!(item["attempts"], V::N("2".into()));
    assert_eq!(item["failures"], V::N("1".into()));
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Completed), 1);
    assert_eq!(tally(&lines, "github", Metric::Failed), 0);
}

/// An event's item as the former two-path consumer left it after one failed forward: FAILED,
/// one attempt, one failure, written attribute by attribute.
async fn put_item_as_before(aws: &LocalAws, key: &str, sha: &str, now: i64) {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let (_, response_body) = inbox::receiver::accepted_response(key);
    let old = [
        ("pk", V::S(key.into())),
        ("source", V::S("github".into())),
        ("status", V::S("FAILED".into())),
        ("expires_at", V::N((now / 1000 + 3600).to_string())),
        ("payload_sha256", V::S(sha.into())),
        ("response_status", V::N("200".into())),
        ("response_body", V::S(response_body)),
        ("attempts", V::N("1".into())),
        ("failures", V::N("1".into())),
        (
            "last_error",
            V::S("forward answered 500 Internal Server Error".into()),
        ),
        ("received_at", V::N((now - 60_000).to_string())),
    ];
    let mut put = aws.dynamo.put_item().table_name(&aws.resources.table);
    for (name, value) in old {
        put = put.item(name, value);
    }
    put.send().await.expect("the old item");
}
