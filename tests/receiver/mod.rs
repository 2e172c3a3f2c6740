//! The receiver, end to end against a real AWS-API server (moto on loopback), through the
//! SDK clients the function uses, with tables and queues made from template.yaml.

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::faults::When;
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{self, github_headers, post, post_with_deadline, LocalAws};
use inbox::bucket::PayloadBucket;
use inbox::clock::{Clock, ManualClock};
use inbox::ledger::Status;
use inbox::metrics::{tally, Metric};
use inbox::queue::Envelope;
use inbox::receiver::ReceiverSettings;
use lambda_http::{Body, Response};

mod batches;
mod inputs;
mod pending;

fn body_json(resp: &Response<Body>) -> serde_json::Value {
    serde_json::from_slice(resp.body().as_ref()).expect("JSON body")
}

fn replayed(resp: &Response<Body>) -> bool {
    resp.headers()
        .get("idempotent-replayed")
        .map(|v| v.as_bytes())
        == Some(b"true")
}

fn gh_body(n: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{n}}}"#).into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_delivery_is_claimed_and_enqueued_in_two_calls() {
    let aws = LocalAws::new("first").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(1);
    let resp = rx
        .handle(post("github", &github_headers("d-1", &body), &body))
        .await;

    assert_eq!(resp.status(), 200);
    assert_eq!(
        body_json(&resp),
        serde_json::json!({"status": "accepted", "key": "github:d-1"})
    );
    assert!(!replayed(&resp));

    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(msgs.len(), 1);
    let attrs = msgs[0].attributes().expect("system attributes");
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    assert_eq!(
        attrs.get(&A::MessageDeduplicationId).map(String::as_str),
        Some("github:d-1")
    );
    assert_eq!(
        attrs.get(&A::MessageGroupId).map(String::as_str),
        Some("github:d-1")
    );
    let env = Envelope::parse(msgs[0].body().expect("body")).expect("an envelope");
    assert_eq!(env.key, "github:d-1");
    assert_eq!(env.source, "github");
    assert_eq!(env.body_bytes().expect("body"), body);
    assert_eq!(env.payload_sha256, inbox::key::sha256_hex(&body));
    assert!(env.headers.contains_key("x-hub-signature-256"));
    assert!(env.headers.contains_key("x-github-delivery"));

    let items = aws.ledger_items().await;
    assert_eq!(items.len(), 1);
    let item = &items[0];
    // Left RECEIVED under the claim's lease: the consumer's take accepts it (no mark queued).
    assert_eq!(item.status, Status::Received);
    assert!(item.lease_owner.is_some());
    assert!(item.lease_until.is_some());
    assert_eq!(item.response_status, Some(200));
    let now_s = testkit::now_ms() / 1000;
    // expires_at is epoch seconds, the default retention (264 h) ahead (not milliseconds).
    let retention_s = i64::try_from(inbox::config::DEFAULT_RETENTION_HOURS * 3600).expect("fits");
    assert!(
        (item.expires_at - (now_s + retention_s)).abs() < 60,
        "{}",
        item.expires_at
    );
    assert_eq!(aws.faults.calls("PutItem"), 1);
    assert_eq!(aws.faults.calls("SendMessage"), 1);
    assert_eq!(aws.faults.calls("UpdateItem"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_behind_the_live_claim_sends_again_and_replays_the_first_response() {
    let aws = LocalAws::new("dup").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(2);
    let first = rx
        .handle(post("github", &github_headers("d-2", &body), &body))
        .await;
    aws.faults.reset_calls();
    let second = rx
        .handle(post("github", &github_headers("d-2", &body), &body))
        .await;

    assert_eq!(second.status(), 200);
    assert!(replayed(&second));
    assert_eq!(body_json(&second), body_json(&first));
    // Not yet taken by the consumer: RECEIVED, so the duplicate sends too (same dedup id),
    // after marking the item resent (so the first delivery cannot release it).
    assert_eq!(
        aws.faults.all_calls().into_iter().collect::<Vec<_>>(),
        vec![
            ("PutItem".to_owned(), 1),
            ("SendMessage".to_owned(), 1),
            ("UpdateItem".to_owned(), 1)
        ]
    );
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Accepted), 1);
    assert_eq!(tally(&lines, "github", Metric::Replayed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_concurrent_deliveries_give_one_message_and_one_item() {
    let aws = LocalAws::new("storm32").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(3);
    let deliveries =
        (0..32).map(|_| rx.handle(post("github", &github_headers("d-3", &body), &body)));
    let answers = futures::future::join_all(deliveries).await;

    let statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(
        answers.iter().filter(|r| !replayed(r)).count(),
        1,
        "exactly one first delivery"
    );
    assert!(answers.iter().all(|r| body_json(r)["key"] == "github:d-3"));
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    let items = aws.ledger_items().await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, Status::Received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqs_failure_releases_the_claim_and_the_retry_succeeds() {
    let aws = LocalAws::new("sqsfail").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(4);
    aws.faults.fail("SendMessage", When::Before, 1);

    let failed = rx
        .handle(post("github", &github_headers("d-4", &body), &body))
        .await;
    assert_eq!(failed.status(), 500);
    assert_eq!(body_json(&failed), serde_json::json!({"error": "internal"}));
    assert!(
        aws.ledger_items().await.is_empty(),
        "the claim was released"
    );
    assert!(aws.receive_all(&aws.resources.queue_url).await.is_empty());

    let retry = rx
        .handle(post("github", &github_headers("d-4", &body), &body))
        .await;
    assert_eq!(retry.status(), 200);
    assert!(!replayed(&retry));
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    assert_eq!(aws.ledger_items().await[0].status, Status::Received);
    assert_eq!(
        tally(&lines.lock().expect("metrics"), "github", Metric::Released),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_failure_answers_500_and_writes_nothing() {
    let aws = LocalAws::new("claimfail").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(5);
    aws.faults.fail("PutItem", When::Before, 1);
    let failed = rx
        .handle(post("github", &github_headers("d-5", &body), &body))
        .await;
    assert_eq!(failed.status(), 500);
    assert!(aws.ledger_items().await.is_empty());
    assert!(aws.receive_all(&aws.resources.queue_url).await.is_empty());
    let retry = rx
        .handle(post("github", &github_headers("d-5", &body), &body))
        .await;
    assert_eq!(retry.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_delivery_makes_no_update_item() {
    let aws = LocalAws::new("markfail").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(6);
    // An UpdateItem would fail: there is none on the receiver's path.
    aws.faults.fail("UpdateItem", When::Before, 1);
    let resp = rx
        .handle(post("github", &github_headers("d-6", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(aws.faults.calls("UpdateItem"), 0);
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    assert_eq!(aws.ledger_items().await[0].status, Status::Received);
}

/// An item as an invocation would have left it, its `payload_sha256` that of `body`.
async fn put_raw_item(
    aws: &LocalAws,
    key: &str,
    status: &str,
    expires_at: i64,
    lease: Option<(i64, &str)>,
    body: &[u8],
) {
    let mut req = aws
        .dynamo
        .put_item()
        .table_name(&aws.resources.table)
        .item("pk", AttributeValue::S(key.to_owned()))
        .item("status", AttributeValue::S(status.to_owned()))
        .item("expires_at", AttributeValue::N(expires_at.to_string()))
        .item(
            "payload_sha256",
            AttributeValue::S(inbox::key::sha256_hex(body)),
        )
        .item("response_status", AttributeValue::N("200".to_owned()))
        .item(
            "response_body",
            AttributeValue::S(format!(r#"{{"status":"accepted","key":"{key}"}}"#)),
        );
    if let Some((until, owner)) = lease {
        req = req
            .item("lease_until", AttributeValue::N(until.to_string()))
            .item("lease_owner", AttributeValue::S(owner.to_owned()));
    }
    req.send().await.expect("seed item");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_item_counts_as_absent_and_is_claimed_again() {
    let aws = LocalAws::new("expired").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let now_s = testkit::now_ms() / 1000;
    // Past its TTL but not yet deleted by DynamoDB.
    let body = gh_body(7);
    put_raw_item(&aws, "github:d-7", "COMPLETED", now_s - 10, None, b"old").await;
    let resp = rx
        .handle(post("github", &github_headers("d-7", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(!replayed(&resp), "an expired key is a first delivery");
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    let items = aws.ledger_items().await;
    assert_eq!(items[0].status, Status::Received);
    assert!(items[0].expires_at > now_s + 3600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_claimant_died_before_its_send_is_sent_by_the_next_delivery() {
    let aws = LocalAws::new("dead-claimant").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let now = testkit::now_ms();
    let body = gh_body(8);
    // An invocation claimed it and died before enqueueing: its lease ran out a second ago.
    put_raw_item(
        &aws,
        "github:d-8",
        "RECEIVED",
        now / 1000 + 3600,
        Some((now - 1000, "dead-invocation")),
        &body,
    )
    .await;
    let before = aws.ledger_items().await;
    let resp = rx
        .handle(post("github", &github_headers("d-8", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(replayed(&resp), "the first answer, not a new claim");
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    assert_eq!(
        resent(aws.ledger_items().await),
        before,
        "the item is left as it was, but for the mark of its resend"
    );
}

/// The lease as deployed (the receiver's 10 s function timeout), run out on the test's clock,
/// with no replay cache (the retry reaching another execution environment, as on AWS): an
/// item whose event may be on the queue is never claimed anew. A changed body is refused on
/// a `reject` source, and never sent or archived; the stored body is sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_received_item_past_its_deployed_lease_is_never_claimed_anew() {
    const TIMEOUT_MS: i64 = 10_000;
    let aws = LocalAws::new("lease-out").await;
    let timeout_s = aws.stack.receiver.timeout_seconds.expect("a Timeout");
    assert_eq!(
        i64::from(timeout_s) * 1000,
        TIMEOUT_MS,
        "the template's receiver Timeout"
    );
    // Five seconds before an hour: the retries come in the next hour of the archive.
    let now = testkit::now_ms();
    let clock = ManualClock::at_ms(now - now.rem_euclid(3_600_000) - 5_000);
    let (rx, lines) = aws
        .receiver_at(clock.clone(), ReceiverSettings::default())
        .await;
    let deliver = |id: &str, body: &[u8]| {
        post_with_deadline(
            "strict",
            &github_headers(id, body),
            body,
            clock.now_ms() + TIMEOUT_MS,
        )
    };
    let (first, changed) = (gh_body(31), gh_body(32));
    let resp = rx.handle(deliver("s-1", &first)).await;
    assert_eq!(resp.status(), 200);
    assert!(!replayed(&resp));
    let claimed = aws.ledger_items().await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].lease_until, Some(clock.now_ms() + TIMEOUT_MS));
    let sends = aws.faults.calls("SendMessage");

    // The consumer is not there yet; the claimant's lease has run out.
    clock.advance_ms(TIMEOUT_MS + 1_000);
    let resp = rx.handle(deliver("s-1", &changed)).await;
    assert_eq!(resp.status(), 422, "the mismatch rule holds at any age");
    assert_eq!(body_json(&resp)["error"], "payload_mismatch");
    assert_eq!(
        aws.faults.calls("SendMessage"),
        sends,
        "a changed body is never sent"
    );
    assert_eq!(aws.ledger_items().await, claimed, "nor written");

    // The sender's own retry of the original: the first answer, and the stored event sent
    // again under the same deduplication id.
    let resp = rx.handle(deliver("s-1", &first)).await;
    assert_eq!(resp.status(), 200);
    assert!(replayed(&resp));
    assert_eq!(
        body_json(&resp),
        serde_json::json!({"status": "accepted", "key": "strict:s-1"})
    );
    assert_eq!(aws.faults.calls("SendMessage"), sends + 1, "sent again");
    assert_eq!(
        resent(aws.ledger_items().await),
        claimed,
        "still the first claim, marked resent"
    );
    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(
        msgs.len(),
        1,
        "one message: the deduplication id is the key"
    );
    let env = Envelope::parse(msgs[0].body().expect("body")).expect("an envelope");
    assert_eq!(env.body.as_bytes(), first.as_slice());
    assert_eq!(env.received_at, claimed[0].received_at);

    // The archive is the consumer's, off the sender's path: the receiver wrote none.
    let store = aws.payload_store();
    assert!(store.list("archive/").await.expect("list").is_empty());

    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "strict", Metric::Accepted), 1);
    assert_eq!(tally(&lines, "strict", Metric::PayloadMismatch), 1);
}

/// A duplicate with a changed body behind a live claim (the claimant's
/// lease not run out) is not sent, and the archive (the consumer's, from the queue) keeps
/// the first body, which `lookup --body` and replay read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_body_behind_a_live_claim_leaves_the_archive_copy_alone() {
    let aws = LocalAws::new("archive-keep").await;
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let (first, changed) = (gh_body(51), gh_body(52));
    let resp = rx
        .handle(post("github", &github_headers("k-1", &first), &first))
        .await;
    assert_eq!(resp.status(), 200);
    let claimed = aws.ledger_items().await;
    assert!(
        claimed[0].lease_until > Some(testkit::now_ms()),
        "a live claim"
    );
    let sends = aws.faults.calls("SendMessage");
    let resp = rx
        .handle(post("github", &github_headers("k-1", &changed), &changed))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(replayed(&resp));
    assert_eq!(aws.faults.calls("SendMessage"), sends, "not sent");
    let sor = testkit::SystemOfRecord::start();
    let (cx, _) = aws.archiving_consumer(testkit::forwarder(sor.url()));
    let mut b = devstack::bridge::Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    b.retry_failed_now = true;
    b.drain(|e| testkit::consume(&cx, e))
        .await
        .expect("drained");
    let store = aws.payload_store();
    let objects = store.list("archive/").await.expect("list");
    let mut copies = Vec::new();
    for object in &objects {
        let bytes = store.get(object).await.expect("get").expect("object");
        copies.extend(
            inbox::archive::envelopes_in(&bytes)
                .map(|e| e.expect("an envelope"))
                .filter(|e| e.key == "github:k-1"),
        );
    }
    assert_eq!(copies.len(), 1, "one archive copy");
    assert_eq!(
        copies[0].body.as_bytes(),
        first.as_slice(),
        "the first body"
    );
    let item = aws.ledger_items().await;
    assert!(item[0].archived_at.is_some(), "the take records it");
}

/// As above on a source that accepts a changed body (`on_payload_mismatch: accept`): the
/// first answer, counted as a mismatch, nothing sent; the original's retry is still answered
/// 200 and sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_body_past_the_lease_gets_the_first_answer_and_is_not_sent() {
    const TIMEOUT_MS: i64 = 10_000;
    let aws = LocalAws::new("lease-out-accept").await;
    assert_eq!(aws.stack.receiver.timeout_seconds, Some(10));
    let clock = ManualClock::at_ms(testkit::now_ms());
    let (rx, lines) = aws
        .receiver_at(clock.clone(), ReceiverSettings::default())
        .await;
    let deliver = |body: &[u8]| {
        post_with_deadline(
            "github",
            &github_headers("a-1", body),
            body,
            clock.now_ms() + TIMEOUT_MS,
        )
    };
    let (first, changed) = (gh_body(41), gh_body(42));
    assert_eq!(rx.handle(deliver(&first)).await.status(), 200);
    let claimed = aws.ledger_items().await;
    let sends = aws.faults.calls("SendMessage");
    clock.advance_ms(TIMEOUT_MS + 1_000);

    let resp = rx.handle(deliver(&changed)).await;
    assert_eq!(resp.status(), 200);
    assert!(replayed(&resp), "the first answer");
    assert_eq!(
        aws.faults.calls("SendMessage"),
        sends,
        "the changed body is not sent"
    );
    assert_eq!(aws.ledger_items().await, claimed);
    let resp = rx.handle(deliver(&first)).await;
    assert_eq!(resp.status(), 200, "the original's retry is not a mismatch");
    assert!(replayed(&resp));
    assert_eq!(aws.faults.calls("SendMessage"), sends + 1);
    assert_eq!(resent(aws.ledger_items().await), claimed);
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Accepted), 1);
    assert_eq!(tally(&lines, "github", Metric::PayloadMismatch), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_flight_duplicate_sends_the_event_itself_and_replays_the_first_answer() {
    let aws = LocalAws::new("inflight").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let now = testkit::now_ms();
    // A live claim whose invocation has not sent yet (or died before it could).
    let body = gh_body(9);
    put_raw_item(
        &aws,
        "github:d-9",
        "RECEIVED",
        now / 1000 + 3600,
        Some((now + 60_000, "live-invocation")),
        &body,
    )
    .await;
    let resp = rx
        .handle(post("github", &github_headers("d-9", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(replayed(&resp));
    assert_eq!(
        body_json(&resp),
        serde_json::json!({"status": "accepted", "key": "github:d-9"})
    );
    // On the queue once the 200 is out: whatever became of the first delivery.
    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(msgs.len(), 1);
    let env = Envelope::parse(msgs[0].body().expect("body")).expect("an envelope");
    assert_eq!(env.key, "github:d-9");
    let item = &aws.ledger_items().await[0];
    assert_eq!(item.status, Status::Received);
    assert_eq!(
        item.lease_owner.as_deref(),
        Some("live-invocation"),
        "not ours"
    );
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::Replayed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_flight_duplicate_whose_send_fails_answers_500_and_leaves_the_claim() {
    let aws = LocalAws::new("inflight2").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let now = testkit::now_ms();
    let body = gh_body(10);
    put_raw_item(
        &aws,
        "github:d-10",
        "RECEIVED",
        now / 1000 + 3600,
        Some((now + 60_000, "first")),
        &body,
    )
    .await;
    aws.faults.fail("SendMessage", When::Before, 1);
    let resp = rx
        .handle(post("github", &github_headers("d-10", &body), &body))
        .await;
    assert_eq!(resp.status(), 500);
    assert_eq!(aws.faults.calls("DeleteItem"), 0, "the claim is not ours");
    assert_eq!(aws.ledger_items().await[0].status, Status::Received);
    // The sender's retry sends and gets the first answer.
    let retry = rx
        .handle(post("github", &github_headers("d-10", &body), &body))
        .await;
    assert_eq!(retry.status(), 200);
    assert!(replayed(&retry));
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
}

/// The items as they were before a duplicate sent the event behind their claim: each carries
/// the mark of that resend (`resent_by`, docs/design.md §4), which is taken off here.
fn resent(items: Vec<inbox::ledger::Record>) -> Vec<inbox::ledger::Record> {
    items
        .into_iter()
        .map(|mut r| {
            assert!(
                r.resent_by.is_some(),
                "marked resent before the send: {r:?}"
            );
            r.resent_by = None;
            r
        })
        .collect()
}
