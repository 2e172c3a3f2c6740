//! The receiver, end to end against a real AWS-API server (moto on loopback), through the
//! SDK clients the function uses, with tables and queues made from template.yaml.

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::faults::When;
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{self, github_headers, post, LocalAws};
use inbox::ledger::Status;
use inbox::metrics::{tally, Metric};
use inbox::queue::Envelope;
use inbox::receiver::ReceiverSettings;
use lambda_http::{Body, Response};

mod inputs;

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
    // expires_at is epoch seconds, a week ahead (not milliseconds).
    assert!(
        (item.expires_at - (now_s + 168 * 3600)).abs() < 60,
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
    // Not yet taken by the consumer: RECEIVED, so the duplicate sends too (same dedup id).
    assert_eq!(
        aws.faults.all_calls().into_iter().collect::<Vec<_>>(),
        vec![("PutItem".to_owned(), 1), ("SendMessage".to_owned(), 1)]
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

async fn put_raw_item(
    aws: &LocalAws,
    key: &str,
    status: &str,
    expires_at: i64,
    lease: Option<(i64, &str)>,
) {
    let mut req = aws
        .dynamo
        .put_item()
        .table_name(&aws.resources.table)
        .item("pk", AttributeValue::S(key.to_owned()))
        .item("status", AttributeValue::S(status.to_owned()))
        .item("expires_at", AttributeValue::N(expires_at.to_string()))
        .item("payload_sha256", AttributeValue::S("old".to_owned()))
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
    put_raw_item(&aws, "github:d-7", "COMPLETED", now_s - 10, None).await;
    let body = gh_body(7);
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
async fn a_claim_whose_lease_ran_out_is_taken_over() {
    let aws = LocalAws::new("takeover").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let now = testkit::now_ms();
    // An invocation claimed it and died before enqueueing: its lease ran out a second ago.
    put_raw_item(
        &aws,
        "github:d-8",
        "RECEIVED",
        now / 1000 + 3600,
        Some((now - 1000, "dead-invocation")),
    )
    .await;
    let body = gh_body(8);
    let resp = rx
        .handle(post("github", &github_headers("d-8", &body), &body))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(!replayed(&resp));
    assert_eq!(aws.receive_all(&aws.resources.queue_url).await.len(), 1);
    assert_eq!(aws.ledger_items().await[0].status, Status::Received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_flight_duplicate_sends_the_event_itself_and_replays_the_first_answer() {
    let aws = LocalAws::new("inflight").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let now = testkit::now_ms();
    // A live claim whose invocation has not sent yet (or died before it could).
    put_raw_item(
        &aws,
        "github:d-9",
        "RECEIVED",
        now / 1000 + 3600,
        Some((now + 60_000, "live-invocation")),
    )
    .await;
    let body = gh_body(9);
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
    put_raw_item(
        &aws,
        "github:d-10",
        "RECEIVED",
        now / 1000 + 3600,
        Some((now + 60_000, "first")),
    )
    .await;
    aws.faults.fail("SendMessage", When::Before, 1);
    let body = gh_body(10);
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
