//! AWS calls per path, counted exactly at the SDK layer (the `Faults` interceptor on the
//! real clients) against the local AWS API server. Every path's whole tally is compared, so
//! an extra call of any operation (a read before a write, a fallback GetItem, a retry) fails.
//!
//! - receiver, first delivery: PutItem (claim) + SendMessage, two sequential round trips
//! - receiver, duplicate of a key the consumer has taken (final): one PutItem (the refused
//!   claim carries the old item, `ALL_OLD`)
//! - receiver, duplicate behind a live claim (RECEIVED, not yet taken): PutItem + its own
//!   SendMessage with the same deduplication id (one message on the queue)
//! - receiver, warm duplicate of a key it answered (replay cache): no call at all
//! - consumer, per event: UpdateItem (take) + UpdateItem (complete), and one side effect
//! - consumer, an already completed event: one UpdateItem (the refused take), no side effect
//! - and the clients' connections: DynamoDB and SQS share one pool (one connection between them)
//!
//! The bridge plays the event source mapping: its SQS calls (receive, delete) are Lambda's,
//! not the function's, so it gets clients of its own and is counted apart.

use std::collections::BTreeMap;

use devstack::bridge::Bridge;
use devstack::faults::{self, Faults};
use devstack::testkit::{self, post, LocalAws, SystemOfRecord, TestConsumer};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::receiver::ReceiverSettings;

use crate::support::drain;

/// The consumer on a DynamoDB client of its own, counted by the returned `Faults`. It has
/// no SQS client at all: the event source mapping receives and deletes.
fn consumer(aws: &LocalAws, sor: &SystemOfRecord) -> (TestConsumer, Faults) {
    let counted = Faults::new();
    let ledger = DynamoLedger::new(
        faults::dynamo_client(&aws.sdk, &counted),
        &aws.resources.table,
    );
    let (cx, _) = testkit::consumer_on(ledger, testkit::forwarder(sor.url()));
    (cx, counted)
}

/// The bridge on an SQS client of its own, counted by the returned `Faults`.
async fn counted_bridge(aws: &LocalAws) -> (Bridge, Faults) {
    let counted = Faults::new();
    let b = Bridge::new(
        faults::sqs_client(&aws.sdk, &counted),
        &aws.resources.queue_url,
    )
    .await
    .expect("bridge");
    (b, counted)
}

fn tally(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(op, n)| ((*op).to_owned(), *n))
        .collect()
}

/// A signed request for each test source, `id` making the key.
fn delivery(source: &str, id: &str) -> lambda_http::Request {
    let t = testkit::now_ms() / 1000;
    match source {
        "github" => {
            let body = format!(r#"{{"action":"opened","id":"{id}"}}"#).into_bytes();
            post("github", &testkit::github_headers(id, &body), &body)
        }
        "stripe" => {
            let body = format!(r#"{{"id":"{id}","type":"invoice.paid"}}"#).into_bytes();
            let headers = vec![("stripe-signature", testkit::stripe_signature(&body, t))];
            post("stripe", &headers, &body)
        }
        "acme" => {
            let body = format!(r#"{{"customer_id":"c-1","event":"{id}"}}"#).into_bytes();
            post(
                "acme",
                &testkit::standard_webhooks_headers(id, t, &body),
                &body,
            )
        }
        "shop" => {
            let body = format!(r#"{{"order":"{id}"}}"#).into_bytes();
            let headers = vec![
                ("x-shopify-event-id", id.to_owned()),
                ("x-shopify-hmac-sha256", testkit::shopify_signature(&body)),
            ];
            post("shop", &headers, &body)
        }
        "orders" => {
            let body = format!(r#"{{"type":"order.paid","order":{{"id":"{id}"}}}}"#).into_bytes();
            let headers = vec![("x-signature", testkit::hmac_hex(&body))];
            post("orders", &headers, &body)
        }
        other => panic!("no delivery for source {other}"),
    }
}

const SOURCES: [&str; 5] = ["github", "stripe", "acme", "shop", "orders"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_first_delivery_is_put_item_then_send_message() {
    let aws = LocalAws::new("cc-first").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    for source in SOURCES {
        aws.faults.reset_calls();
        let resp = rx
            .handle(delivery(source, &format!("first-{source}")))
            .await;
        assert_eq!(resp.status(), 200, "{source}");
        assert_eq!(
            aws.faults.all_calls(),
            tally(&[("PutItem", 1), ("SendMessage", 1)]),
            "{source}: first delivery"
        );
    }
}

fn replayed(resp: &lambda_http::Response<lambda_http::Body>) -> bool {
    resp.headers()
        .get(inbox::receiver::REPLAYED_HEADER)
        .map(|v| v.as_bytes())
        == Some(&b"true"[..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_duplicate_behind_a_live_claim_sends_again_with_the_same_dedup_id() {
    let aws = LocalAws::new("cc-dup-live").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let (b, _) = counted_bridge(&aws).await;
    for source in SOURCES {
        let id = format!("live-{source}");
        let first = rx.handle(delivery(source, &id)).await;
        assert_eq!(first.status(), 200);
        aws.faults.reset_calls();
        let resp = rx.handle(delivery(source, &id)).await;
        assert_eq!(resp.status(), 200, "{source}");
        assert!(replayed(&resp), "{source}: replayed");
        assert_eq!(resp.body(), first.body(), "{source}: the first answer");
        // The claim found, the item marked resent (the claimant's release must not delete the
        // item of an event this send puts on the queue), the send.
        assert_eq!(
            aws.faults.all_calls(),
            tally(&[("PutItem", 1), ("UpdateItem", 1), ("SendMessage", 1)]),
            "{source}: duplicate behind a live claim"
        );
    }
    // SQS kept one message per key.
    let mut messages = 0;
    while let Some(batch) = Some(b.receive().await.expect("receive")).filter(|m| !m.is_empty()) {
        messages += batch.len();
    }
    assert_eq!(messages, SOURCES.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_duplicate_of_a_taken_key_is_one_put_item() {
    let aws = LocalAws::new("cc-dup").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let sor = SystemOfRecord::start();
    let (cx, _) = consumer(&aws, &sor);
    let (b, _) = counted_bridge(&aws).await;
    for source in SOURCES {
        let id = format!("dup-{source}");
        assert_eq!(rx.handle(delivery(source, &id)).await.status(), 200);
    }
    drain_without_failures(&b, &cx).await;
    for source in SOURCES {
        let id = format!("dup-{source}");
        for attempt in 1..=3 {
            aws.faults.reset_calls();
            let resp = rx.handle(delivery(source, &id)).await;
            assert_eq!(resp.status(), 200, "{source}");
            assert!(replayed(&resp), "{source}: replayed");
            assert_eq!(
                aws.faults.all_calls(),
                tally(&[("PutItem", 1)]),
                "{source}: duplicate #{attempt}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_warm_duplicate_is_no_call_and_a_changed_payload_is_still_refused() {
    let aws = LocalAws::new("cc-dup-warm").await;
    let rx = aws
        .receiver(ReceiverSettings::default().with_replay_cache(100))
        .await
        .0;
    for source in SOURCES {
        let id = format!("warm-{source}");
        let first = rx.handle(delivery(source, &id)).await;
        assert_eq!(first.status(), 200);
        for attempt in 1..=3 {
            aws.faults.reset_calls();
            let resp = rx.handle(delivery(source, &id)).await;
            assert_eq!(resp.status(), 200, "{source}");
            assert!(replayed(&resp), "{source}: replayed");
            assert_eq!(resp.body(), first.body(), "{source}: the first answer");
            assert_eq!(
                aws.faults.all_calls(),
                BTreeMap::new(),
                "{source}: warm duplicate #{attempt}"
            );
        }
    }
    // `strict` refuses a changed payload under the same key: answered from memory too.
    let body = br#"{"action":"opened"}"#.to_vec();
    let first = post(
        "strict",
        &testkit::github_headers("warm-strict", &body),
        &body,
    );
    assert_eq!(rx.handle(first).await.status(), 200);
    let changed = br#"{"action":"closed"}"#.to_vec();
    aws.faults.reset_calls();
    let resp = rx
        .handle(post(
            "strict",
            &testkit::github_headers("warm-strict", &changed),
            &changed,
        ))
        .await;
    assert_eq!(resp.status(), 422);
    assert_eq!(aws.faults.all_calls(), BTreeMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_requests_make_no_aws_call() {
    let aws = LocalAws::new("cc-reject").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let body = br#"{"action":"opened"}"#.to_vec();
    let mut bad = testkit::github_headers("rej-1", &body);
    bad[2].1 = testkit::github_signature(b"another body");
    let mut no_key = testkit::github_headers("rej-2", &body);
    no_key.remove(0);
    aws.faults.reset_calls();
    assert_eq!(rx.handle(post("github", &bad, &body)).await.status(), 401);
    assert_eq!(
        rx.handle(post("github", &no_key, &body)).await.status(),
        400
    );
    assert_eq!(rx.handle(post("nobody", &bad, &body)).await.status(), 404);
    assert_eq!(aws.faults.all_calls(), BTreeMap::new());
}

/// Drains the queue through `cx`, no message failing; how many rounds it took.
async fn drain_without_failures(b: &Bridge, cx: &TestConsumer) -> u64 {
    let rounds = drain(b, |e| testkit::consume(cx, e)).await;
    assert!(
        rounds.iter().all(|r| r.failed == 0),
        "no message failed: {rounds:?}"
    );
    rounds.len() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_per_event_is_two_updates_and_one_side_effect_apart_from_the_bridge() {
    let aws = LocalAws::new("cc-consumer").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let sor = SystemOfRecord::start();
    let (cx, consumer_calls) = consumer(&aws, &sor);
    let (b, bridge_calls) = counted_bridge(&aws).await;
    assert_eq!(
        bridge_calls.all_calls(),
        tally(&[("GetQueueAttributes", 1)]),
        "the bridge looks its queue up once"
    );
    bridge_calls.reset_calls();

    // 12 events of every source (60): more than one batch of 10, several FIFO groups.
    let mut keys = Vec::new();
    for source in SOURCES {
        for n in 0..12 {
            let id = format!("ev-{source}-{n}");
            let resp = rx.handle(delivery(source, &id)).await;
            assert_eq!(resp.status(), 200);
            let json: serde_json::Value =
                serde_json::from_slice(resp.body().as_ref()).expect("JSON");
            keys.push(json["key"].as_str().expect("key").to_owned());
        }
    }
    let events = keys.len() as u64;
    let rounds = drain_without_failures(&b, &cx).await;
    assert!(rounds >= events / 10, "{rounds} rounds for {events} events");

    assert_eq!(
        consumer_calls.all_calls(),
        tally(&[("UpdateItem", 2 * events)]),
        "take + complete per event, and nothing else"
    );
    let side_effects = sor.calls();
    assert_eq!(side_effects.len(), keys.len());
    assert!(keys.iter().all(|k| side_effects.get(k) == Some(&1)));
    // The mapping's calls: one receive per round plus the one that found the queue empty,
    // one delete per event.
    assert_eq!(
        bridge_calls.all_calls(),
        tally(&[("ReceiveMessage", rounds + 1), ("DeleteMessage", events)])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_duplicate_of_a_completed_event_is_one_update_and_no_side_effect() {
    let aws = LocalAws::new("cc-cdup").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let sor = SystemOfRecord::start();
    let (cx, consumer_calls) = consumer(&aws, &sor);
    let (b, bridge_calls) = counted_bridge(&aws).await;
    assert_eq!(rx.handle(delivery("github", "cdup-1")).await.status(), 200);

    // A copy of the message as the queue would deliver it again.
    let messages = b.receive().await.expect("receive");
    assert_eq!(messages.len(), 1);
    let event = b.event(&messages);
    let deadline = testkit::now_ms() + 30_000;
    let first = cx
        .handle_batch(&event.records, "inv-1", Some(deadline))
        .await;
    assert!(first.batch_item_failures.is_empty());
    assert_eq!(
        consumer_calls.all_calls(),
        tally(&[("UpdateItem", 2)]),
        "first run: take + complete"
    );

    consumer_calls.reset_calls();
    bridge_calls.reset_calls();
    let again = cx
        .handle_batch(&event.records, "inv-2", Some(deadline))
        .await;
    assert!(again.batch_item_failures.is_empty(), "acknowledged");
    assert_eq!(
        consumer_calls.all_calls(),
        tally(&[("UpdateItem", 1)]),
        "the refused take carries the old item: no read after it"
    );
    assert_eq!(sor.calls_for("github:cdup-1"), 1, "side effect ran once");
    assert_eq!(bridge_calls.all_calls(), BTreeMap::new());
}

/// An AWS-API stand-in that answers every call `{}` over keep-alive HTTP/1.1 and keeps the
/// client address of each request: one address per TCP connection. (moto itself closes each
/// connection after its answer, so it cannot show pooling.)
fn keep_alive_stub() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<std::net::SocketAddr>>>,
) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}", server.server_addr());
    let peers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = peers.clone();
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            if let (Some(peer), Ok(mut peers)) = (request.remote_addr().copied(), seen.lock()) {
                peers.push(peer);
            }
            let json = tiny_http::Header::from_bytes("content-type", "application/x-amz-json-1.0")
                .expect("a header");
            let _ = request.respond(tiny_http::Response::from_string("{}").with_header(json));
        }
    });
    (url, peers)
}

/// `inbox::app::sdk_config` hands every service client one HTTP client: DynamoDB and SQS,
/// one after the other, on the same endpoint, share one pooled connection (the SDK's default
/// is a client, and a pool, per service client: two connections here). On one thread, as the
/// binaries run: with several, a connection handed back to the pool by another thread can
/// arrive after the next call has opened a new one.
#[tokio::test(flavor = "current_thread")]
async fn the_service_clients_share_one_connection_pool() {
    devstack::moto::shared(); // region and credentials in the environment
    let (endpoint, peers) = keep_alive_stub();
    let sdk = inbox::app::sdk_config().await;
    let dynamo = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .endpoint_url(&endpoint)
            .build(),
    );
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&sdk)
            .endpoint_url(&endpoint)
            .build(),
    );
    for _ in 0..3 {
        dynamo
            .describe_table()
            .table_name("t")
            .send()
            .await
            .expect("DescribeTable");
        sqs.get_queue_attributes()
            .queue_url(format!("{endpoint}/123456789012/q"))
            .send()
            .await
            .expect("GetQueueAttributes");
    }
    let peers = peers.lock().expect("the stub's list").clone();
    assert_eq!(peers.len(), 6, "six calls answered");
    let connections: std::collections::BTreeSet<_> = peers.into_iter().collect();
    assert_eq!(
        connections.len(),
        1,
        "six calls through two clients, one connection"
    );
}

/// A batch of `n` events on a source declaring a root JSON array (docs/design.md §14): one
/// PutItem per event, all in flight at once (one round of claims), and one SendMessageBatch per
/// 10 events, sent at once (one round of sends): two sequential round trips whatever `n` up
/// to 100, against `n` requests of two each for one request per event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_batches_of_1_10_and_100_events_are_a_put_item_each_and_a_send_message_batch_per_10(
) {
    let sources = r#"{"batched": {"signature": {"scheme": "github", "secrets": ["secretsmanager:cc/batched"]},
        "batch": {"format": "json_array", "max_events": 100},
        "key": {"from": "json", "pointers": ["/id"]}}}"#;
    let aws = LocalAws::with_sources(
        "cc-batches",
        sources,
        &[devstack::local_stack::Secret::new(
            "cc/batched",
            testkit::TEST_SECRET,
        )],
    )
    .await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    for n in [1u64, 10, 100] {
        let events: Vec<serde_json::Value> = (0..n)
            .map(|i| serde_json::json!({"id": format!("b{n}-{i}"), "type": "t"}))
            .collect();
        let body = serde_json::to_vec(&events).expect("JSON");
        aws.faults.reset_calls();
        let resp = rx
            .handle(post(
                "batched",
                &testkit::github_headers(&format!("batch-{n}"), &body),
                &body,
            ))
            .await;
        assert_eq!(resp.status(), 200, "a batch of {n}");
        assert_eq!(
            aws.faults.all_calls(),
            tally(&[("PutItem", n), ("SendMessageBatch", n.div_ceil(10))]),
            "a batch of {n}"
        );
        // Its retry: a claim per event finds each RECEIVED with these bytes; each is marked
        // and sent again (the queue deduplicates), as a single event's duplicate is.
        aws.faults.reset_calls();
        let again = rx
            .handle(post(
                "batched",
                &testkit::github_headers(&format!("batch-{n}"), &body),
                &body,
            ))
            .await;
        assert_eq!(again.status(), 200);
        assert!(replayed(&again), "a batch of {n} again");
        assert_eq!(
            aws.faults.all_calls(),
            tally(&[
                ("PutItem", n),
                ("UpdateItem", n),
                ("SendMessageBatch", n.div_ceil(10))
            ]),
            "a batch of {n} again"
        );
    }
    let on_queue = aws.receive_all(&aws.resources.queue_url).await.len();
    assert_eq!(
        on_queue, 111,
        "one message per event, the resends deduplicated"
    );
}

/// The claims of a batch of 100 are in flight together, one round trip: with every answer after
/// the first lost (the process frozen right there), all 100 PutItems are still made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_a_batch_of_100_makes_its_100_claims_without_waiting_for_an_answer() {
    let sources = r#"{"batched": {"signature": {"scheme": "github", "secrets": ["secretsmanager:cc/wave"]},
        "batch": {"format": "json_array", "max_events": 100},
        "key": {"from": "json", "pointers": ["/id"]}}}"#;
    let aws = LocalAws::with_sources(
        "cc-wave",
        sources,
        &[devstack::local_stack::Secret::new(
            "cc/wave",
            testkit::TEST_SECRET,
        )],
    )
    .await;
    let process = aws.sibling(aws.sdk.clone(), Faults::new());
    process.faults.freeze_after("PutItem");
    let rx = process.receiver(ReceiverSettings::default()).await.0;
    let events: Vec<serde_json::Value> = (0..100)
        .map(|i| serde_json::json!({"id": format!("w-{i}")}))
        .collect();
    let body = serde_json::to_vec(&events).expect("JSON");
    let request = post("batched", &testkit::github_headers("wave", &body), &body);
    let handle = rx.handle(request);
    tokio::pin!(handle);
    tokio::select! {
        _ = &mut handle => panic!("the frozen receiver answered"),
        () = process.faults.frozen() => {}
    }
    // Every answer after the first is lost: claims made one after another would stop at the
    // second. Made together, all 100 are made (the last of them may reach the SDK a little
    // after the first answer on a loaded machine: poll while the handler runs on).
    let all_made = async {
        while process.faults.calls("PutItem") < 100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        _ = &mut handle => panic!("the frozen receiver answered"),
        () = all_made => {}
        () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
    }
    assert_eq!(process.faults.calls("PutItem"), 100);
    assert_eq!(process.faults.calls("SendMessageBatch"), 0);
}
