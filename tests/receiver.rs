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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_mismatch_is_a_counted_duplicate_or_a_422_where_declared() {
    let aws = LocalAws::new("mismatch").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let (a, b) = (gh_body(11), gh_body(12));
    assert_eq!(
        rx.handle(post("github", &github_headers("d-11", &a), &a))
            .await
            .status(),
        200
    );
    let dup = rx
        .handle(post("github", &github_headers("d-11", &b), &b))
        .await;
    assert_eq!(dup.status(), 200);
    assert!(replayed(&dup));
    assert_eq!(
        tally(
            &lines.lock().expect("metrics"),
            "github",
            Metric::PayloadMismatch
        ),
        1
    );

    assert_eq!(
        rx.handle(post("strict", &github_headers("d-11", &a), &a))
            .await
            .status(),
        200
    );
    let rejected = rx
        .handle(post("strict", &github_headers("d-11", &b), &b))
        .await;
    assert_eq!(rejected.status(), 422);
    assert_eq!(
        body_json(&rejected),
        serde_json::json!({"error": "payload_mismatch"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_get_their_documented_answer_and_write_nothing() {
    let aws = LocalAws::new("bad").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(13);
    let mut bad_sig = github_headers("d-13", &body);
    bad_sig[2].1 = testkit::github_signature(b"another body");
    let mut no_key = github_headers("d-13", &body);
    no_key.remove(0);
    let t = testkit::now_ms() / 1000;
    let not_json = b"not json".to_vec();
    let stripe_not_json = vec![("stripe-signature", testkit::stripe_signature(&not_json, t))];
    let no_id = br#"{"type":"invoice.paid"}"#.to_vec();
    let stripe_no_id = vec![("stripe-signature", testkit::stripe_signature(&no_id, t))];
    let old = br#"{"id":"evt_old"}"#.to_vec();
    let stripe_old = vec![("stripe-signature", testkit::stripe_signature(&old, t - 301))];
    let huge =
        vec![b'x'; usize::try_from(inbox::config::env::DEFAULT_MAX_BODY_BYTES).expect("fits") + 1];

    let cases: Vec<(lambda_http::Request, u16, &str)> = vec![
        (post("github", &bad_sig, &body), 401, "invalid_signature"),
        (post("github", &[], &body), 401, "invalid_signature"),
        (
            post("github", &no_key, &body),
            400,
            "missing_idempotency_key",
        ),
        (
            post("stripe", &stripe_not_json, &not_json),
            400,
            "malformed_body",
        ),
        (
            post("stripe", &stripe_no_id, &no_id),
            400,
            "missing_idempotency_key",
        ),
        (post("stripe", &stripe_old, &old), 401, "invalid_signature"),
        (
            post("nobody", &github_headers("d-13", &body), &body),
            404,
            "unknown_source",
        ),
        (
            post("github", &github_headers("d-13", &huge), &huge),
            413,
            "payload_too_large",
        ),
        (
            {
                let mut r = post("github", &github_headers("d-13", &body), &body);
                *r.method_mut() = http::Method::GET;
                r
            },
            405,
            "method_not_allowed",
        ),
    ];
    for (req, status, code) in cases {
        let resp = rx.handle(req).await;
        assert_eq!(resp.status().as_u16(), status, "{code}");
        assert_eq!(body_json(&resp), serde_json::json!({ "error": code }));
        assert_eq!(
            resp.headers().get("content-type").map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
    }
    assert!(
        aws.ledger_items().await.is_empty(),
        "no ledger write for bad input"
    );
    assert!(
        aws.receive_all(&aws.resources.queue_url).await.is_empty(),
        "no message for bad input"
    );
    assert_eq!(aws.faults.calls("PutItem"), 0);
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::SignatureRejected), 2);
    assert_eq!(tally(&lines, "stripe", Metric::SignatureRejected), 1);
    // A caller-chosen path segment never becomes a metric dimension.
    assert_eq!(tally(&lines, "nobody", Metric::Rejected), 0);
    assert_eq!(
        tally(
            &lines,
            inbox::receiver::UNKNOWN_SOURCE_DIMENSION,
            Metric::Rejected
        ),
        1
    );
}

/// A `POST /webhooks/<source>` event whose `body` field is this text, with this
/// `isBase64Encoded` flag.
fn apigw_event(
    source: &str,
    body: &str,
    base64: bool,
    headers: &[(&str, String)],
) -> lambda_runtime::LambdaEvent<aws_lambda_events::apigw::ApiGatewayV2httpRequest> {
    ApiGatewayEvent::post(source)
        .headers(headers.iter().map(|(k, v)| (*k, v)))
        .raw_body(body, base64)
        .lambda_event()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base64_bodies_are_decoded_before_verifying_and_bad_base64_is_a_400_not_a_panic() {
    use base64::Engine as _;
    let aws = LocalAws::new("b64").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let body = gh_body(14);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&body);
    let ok = rx
        .handle_event(apigw_event(
            "github",
            &encoded,
            true,
            &github_headers("d-14", &body),
        ))
        .await
        .expect("infallible");
    assert_eq!(ok.status_code, 200);

    let bad = rx
        .handle_event(apigw_event(
            "github",
            "***not base64***",
            true,
            &github_headers("d-15", &body),
        ))
        .await
        .expect("infallible");
    assert_eq!(bad.status_code, 400);
    let text = match bad.body {
        Some(Body::Text(t)) => t,
        other => panic!("unexpected body {other:?}"),
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).expect("json"),
        serde_json::json!({"error": "malformed_body"})
    );
    assert_eq!(aws.ledger_items().await.len(), 1, "only the good one");
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(
        tally(&lines, "github", Metric::Rejected),
        1,
        "counted under its source"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scheme_and_key_kind_is_accepted_end_to_end() {
    let aws = LocalAws::new("schemes").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let t = testkit::now_ms() / 1000;

    let stripe = br#"{"id":"evt_1","type":"invoice.paid"}"#.to_vec();
    let r = rx
        .handle(post(
            "stripe",
            &[("stripe-signature", testkit::stripe_signature(&stripe, t))],
            &stripe,
        ))
        .await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "stripe:evt_1".into())
    );

    let acme = br#"{"customer_id":"cus_9","amount":5}"#.to_vec();
    let r = rx
        .handle(post(
            "acme",
            &testkit::standard_webhooks_headers("msg_1", t, &acme),
            &acme,
        ))
        .await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "acme:msg_1".into())
    );

    let shop = br#"{"order":1}"#.to_vec();
    let h = vec![
        ("x-shopify-hmac-sha256", testkit::shopify_signature(&shop)),
        ("x-shopify-event-id", "se-1".to_owned()),
    ];
    let r = rx.handle(post("shop", &h, &shop)).await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "shop:se-1".into())
    );

    let order = br#"{"type":"order.paid","order":{"id":77}}"#.to_vec();
    let r = rx
        .handle(post(
            "orders",
            &[("x-signature", testkit::hmac_hex(&order))],
            &order,
        ))
        .await;
    assert_eq!(
        (r.status().as_u16(), body_json(&r)["key"].clone()),
        (200, "orders:order.paid|77".into())
    );

    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(msgs.len(), 4);
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    let acme_msg = msgs
        .iter()
        .find(|m| m.body().is_some_and(|b| b.contains("acme:msg_1")))
        .expect("acme message");
    assert_eq!(
        acme_msg
            .attributes()
            .and_then(|a| a.get(&A::MessageGroupId))
            .map(String::as_str),
        Some("acme:cus_9"),
        "per-customer group from the configured pointer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_key_gets_a_hashed_deduplication_id() {
    let aws = LocalAws::new("longkey").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let t = testkit::now_ms() / 1000;
    let id = format!("evt_{}", "z".repeat(300));
    let body = format!(r#"{{"id":"{id}"}}"#).into_bytes();
    let r = rx
        .handle(post(
            "stripe",
            &[("stripe-signature", testkit::stripe_signature(&body, t))],
            &body,
        ))
        .await;
    assert_eq!(r.status(), 200);
    let msgs = aws.receive_all(&aws.resources.queue_url).await;
    use aws_sdk_sqs::types::MessageSystemAttributeName as A;
    let dedup = msgs[0]
        .attributes()
        .and_then(|a| a.get(&A::MessageDeduplicationId))
        .cloned();
    assert_eq!(
        dedup,
        Some(inbox::key::sha256_hex(format!("stripe:{id}").as_bytes()))
    );
}
