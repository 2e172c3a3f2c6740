//! Batches split into their events (docs/design.md §14), end to end on moto: each event its
//! own key, ledger item and queue message; a retry a duplicate for every event taken; an
//! overlapping batch queues only its new events; a failed send releases the claims of the
//! events not on the queue, and the retry accepts all; a batch over its maximum is refused with
//! nothing claimed; Auth0's JSON Lines.

use std::collections::BTreeSet;

use base64::Engine as _;
use devstack::faults::When;
use devstack::local_stack::Secret;
use devstack::senders::hmac_sha256;
use devstack::testkit::{self, github_headers, post, LocalAws};
use inbox::metrics::{tally, Metric};
use inbox::queue::Envelope;
use inbox::receiver::ReceiverSettings;
use serde_json::{json, Value};

use super::{body_json, replayed};

const HUBSPOT_SECRET: &str = "0b9f8a3e-7c1d-4e2f-9a6b-5d4c3b2a1f0e";
const AUTH0_TOKEN: &str = "Bearer auth0-log-stream-token-for-the-batch-tests";
const HUBSPOT_URL: &str = "https://example.com/webhooks/hubspot";

const SOURCES: &str = r#"{
  "hubspot": {"preset": "hubspot", "signature": {"secrets": ["secretsmanager:batches/hubspot"]},
              "public_url": "https://example.com/webhooks/hubspot"},
  "auth0": {"preset": "auth0", "signature": {"secrets": ["secretsmanager:batches/auth0"]}},
  "few": {"signature": {"scheme": "github", "secrets": ["secretsmanager:batches/few"]},
          "batch": {"format": "json_array", "at": "/events", "max_events": 3},
          "key": {"from": "json", "pointers": ["/id"]},
          "event_type": {"from": "json", "pointer": "/type"}},
  "strict": {"signature": {"scheme": "github", "secrets": ["secretsmanager:batches/few"]},
             "batch": {"format": "json_array"}, "key": {"from": "json", "pointers": ["/id"]},
             "on_payload_mismatch": "reject"}
}"#;

async fn stack(label: &str) -> LocalAws {
    LocalAws::with_sources(
        label,
        SOURCES,
        &[
            Secret::new("batches/hubspot", HUBSPOT_SECRET),
            Secret::new("batches/auth0", AUTH0_TOKEN),
            Secret::new("batches/few", testkit::TEST_SECRET),
        ],
    )
    .await
}

/// A HubSpot event as HubSpot's payload reference shows one; `attempt` is its
/// `attemptNumber`, which HubSpot changes on every attempt.
fn hubspot_event(event_id: u64, attempt: u32) -> Value {
    json!({"eventId": event_id, "subscriptionId": 2761183, "portalId": 62515, "appId": 1160452,
           "occurredAt": 1714572000000u64 + event_id, "subscriptionType": "contact.propertyChange",
           "attemptNumber": attempt, "objectId": 123, "propertyName": "lifecyclestage",
           "propertyValue": "lead", "changeSource": "CRM"})
}

fn hubspot_key(event_id: u64) -> String {
    format!(
        "hubspot:62515|2761183|{event_id}|{}",
        1714572000000u64 + event_id
    )
}

/// A batch of these events, signed as HubSpot's v3 signature: base64 HMAC-SHA256 of
/// method, URL, body and the millisecond timestamp.
fn hubspot_batch(ids: &[u64], attempt: u32) -> (Vec<u8>, lambda_http::Request) {
    let events: Vec<Value> = ids.iter().map(|&id| hubspot_event(id, attempt)).collect();
    let body = serde_json::to_vec(&events).expect("JSON");
    let ts = testkit::now_ms().to_string();
    let mac = hmac_sha256(
        HUBSPOT_SECRET.as_bytes(),
        &[b"POST", HUBSPOT_URL.as_bytes(), &body, ts.as_bytes()],
    );
    let headers = vec![
        ("content-type", "application/json".to_owned()),
        (
            "x-hubspot-signature-v3",
            base64::engine::general_purpose::STANDARD.encode(mac),
        ),
        ("x-hubspot-request-timestamp", ts),
    ];
    let req = post("hubspot", &headers, &body);
    (body, req)
}

async fn queued(aws: &LocalAws) -> Vec<Envelope> {
    aws.receive_all(&aws.resources.queue_url)
        .await
        .iter()
        .map(|m| Envelope::parse(m.body().expect("body")).expect("an envelope"))
        .collect()
}

async fn ledger_keys(aws: &LocalAws) -> BTreeSet<String> {
    aws.ledger_items()
        .await
        .into_iter()
        .map(|r| r.key)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_split_into_its_events_each_claimed_and_queued_with_its_own_bytes() {
    let aws = stack("batch-split").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let (body, req) = hubspot_batch(&[1, 2, 3], 0);
    let resp = rx.handle(req).await;

    assert_eq!(resp.status(), 200, "{:?}", resp.body());
    assert!(!replayed(&resp));
    let keys: Vec<String> = [1, 2, 3].map(hubspot_key).to_vec();
    assert_eq!(
        body_json(&resp),
        json!({"status": "accepted", "keys": keys})
    );
    // One claim per event, the sends in one SendMessageBatch: two round trips.
    assert_eq!(aws.faults.calls("PutItem"), 3);
    assert_eq!(aws.faults.calls("SendMessageBatch"), 1);
    assert_eq!(aws.faults.calls("SendMessage"), 0);

    let items = aws.ledger_items().await;
    assert_eq!(items.len(), 3);
    let text = std::str::from_utf8(&body).expect("UTF-8");
    let mut envelopes = queued(&aws).await;
    envelopes.sort_by_key(|e| e.batch.as_ref().map(|b| b.index));
    assert_eq!(envelopes.len(), 3);
    for (i, env) in envelopes.iter().enumerate() {
        assert_eq!(env.key, keys[i]);
        // The event's bytes exactly as they sit in the signed body, never re-serialised.
        let own = env.body_bytes().expect("inline");
        let own_text = std::str::from_utf8(&own).expect("UTF-8");
        assert!(text.contains(own_text), "{own_text}");
        assert_eq!(
            serde_json::from_slice::<Value>(&own).expect("JSON"),
            hubspot_event(i as u64 + 1, 0)
        );
        // Its payload hash leaves out `attemptNumber` (the preset's `attempt_fields`): the
        // member and one comma taken out of the bytes as sent.
        let counter = r#""attemptNumber":0,"#;
        assert!(own_text.contains(counter), "{own_text}");
        assert_eq!(
            env.payload_sha256,
            inbox::key::sha256_hex(own_text.replacen(counter, "", 1).as_bytes())
        );
        assert_eq!(env.event_type.as_deref(), Some("contact.propertyChange"));
        let place = env.batch.as_ref().expect("a batch place");
        assert_eq!(
            (place.sha256.as_str(), place.index, place.count),
            (inbox::key::sha256_hex(&body).as_str(), i, 3)
        );
        let item = items.iter().find(|r| r.key == env.key).expect("its item");
        assert_eq!(item.payload_sha256, env.payload_sha256);
    }
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "hubspot", Metric::Accepted), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_is_a_duplicate_for_every_event_and_an_overlapping_batch_queues_only_its_new_events(
) {
    let aws = stack("batch-retry").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let (_, first) = hubspot_batch(&[10, 11, 12], 0);
    let first = rx.handle(first).await;
    assert_eq!(first.status(), 200);
    assert_eq!(queued(&aws).await.len(), 3);

    // HubSpot's retry: the same events, attemptNumber 1 (other bytes, same keys, the same
    // payload: `attemptNumber` is out of the hash). No consumer has taken them, so each item
    // is still RECEIVED: each duplicate is sent behind its claim, under its first send's
    // deduplication id, which the FIFO queue drops (nothing new on the queue).
    aws.faults.reset_calls();
    let (_, retry) = hubspot_batch(&[10, 11, 12], 1);
    let retry = rx.handle(retry).await;
    assert_eq!(retry.status(), 200);
    assert!(replayed(&retry), "every event a duplicate");
    assert_eq!(body_json(&retry), body_json(&first));
    assert_eq!(aws.faults.calls("PutItem"), 3);
    assert_eq!(aws.faults.calls("SendMessageBatch"), 1, "sent behind");
    assert!(queued(&aws).await.is_empty());

    // A later batch overlapping it: 12 again (a third attempt), 13 and 14 new.
    let (_, overlap) = hubspot_batch(&[12, 13, 14], 2);
    let overlap = rx.handle(overlap).await;
    assert_eq!(overlap.status(), 200);
    assert!(!replayed(&overlap));
    let sent: BTreeSet<String> = queued(&aws).await.into_iter().map(|e| e.key).collect();
    assert_eq!(sent, BTreeSet::from([hubspot_key(13), hubspot_key(14)]));
    assert_eq!(
        ledger_keys(&aws).await,
        [10, 11, 12, 13, 14].map(hubspot_key).into_iter().collect()
    );
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "hubspot", Metric::Accepted), 5);
    assert_eq!(tally(&lines, "hubspot", Metric::Replayed), 4);
    // attemptNumber changed the bytes of each duplicate, not its payload.
    assert_eq!(tally(&lines, "hubspot", Metric::PayloadMismatch), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_send_releases_the_claims_of_the_unsent_events_and_the_retry_accepts_all() {
    let aws = stack("batch-fail").await;
    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    // 12 events: two SendMessageBatch calls (10 + 2), sent at once; one of them fails.
    let ids: Vec<u64> = (100..112).collect();
    aws.faults.fail("SendMessageBatch", When::Before, 1);
    let (_, req) = hubspot_batch(&ids, 0);
    let resp = rx.handle(req).await;
    assert_eq!(resp.status(), 500);
    assert_eq!(body_json(&resp), json!({"error": "internal"}));
    assert_eq!(aws.faults.calls("SendMessageBatch"), 2);
    // What stays claimed is exactly what is on the queue: the other call's events.
    let on_queue: BTreeSet<String> = queued(&aws).await.into_iter().map(|e| e.key).collect();
    let kept = ledger_keys(&aws).await;
    assert_eq!(kept, on_queue);
    assert!(kept.len() == 2 || kept.len() == 10, "{kept:?}");
    let released = 12 - kept.len() as u64;
    let tallied = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&tallied, "hubspot", Metric::Released), released);
    assert_eq!(tally(&tallied, "hubspot", Metric::Accepted), 0);

    // HubSpot retries (attemptNumber 1): the released events are claimed and sent anew, the
    // queued ones are duplicates; every event is on the queue once.
    let (_, retry) = hubspot_batch(&ids, 1);
    let retry = rx.handle(retry).await;
    assert_eq!(retry.status(), 200);
    let resent: BTreeSet<String> = queued(&aws).await.into_iter().map(|e| e.key).collect();
    assert_eq!(resent.len() as u64, released);
    assert!(resent.is_disjoint(&on_queue));
    let all: BTreeSet<String> = ids.iter().map(|&id| hubspot_key(id)).collect();
    assert_eq!(ledger_keys(&aws).await, all);
    assert_eq!(
        resent.union(&on_queue).cloned().collect::<BTreeSet<_>>(),
        all
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_its_maximum_is_refused_with_nothing_claimed_or_sent() {
    let aws = stack("batch-max").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let events = |n: usize| -> Vec<u8> {
        let events: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("e-{i}"), "type": "t"}))
            .collect();
        serde_json::to_vec(&json!({"events": events})).expect("JSON")
    };
    let over = events(4);
    let resp = rx
        .handle(post("few", &github_headers("d-over", &over), &over))
        .await;
    assert_eq!(resp.status(), 413);
    assert_eq!(body_json(&resp), json!({"error": "too_many_events"}));
    assert!(
        aws.faults.all_calls().is_empty(),
        "{:?}",
        aws.faults.all_calls()
    );
    assert!(aws.ledger_items().await.is_empty());

    let at_most = events(3);
    let resp = rx
        .handle(post("few", &github_headers("d-ok", &at_most), &at_most))
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        ledger_keys(&aws).await,
        ["few:e-0", "few:e-1", "few:e-2"]
            .map(str::to_owned)
            .into_iter()
            .collect()
    );
    // One event whose key is missing refuses the whole batch, nothing written.
    let missing = br#"{"events":[{"id":"e-9","type":"t"},{"type":"t"}]}"#;
    let resp = rx
        .handle(post("few", &github_headers("d-missing", missing), missing))
        .await;
    assert_eq!(resp.status(), 400);
    assert_eq!(
        body_json(&resp),
        json!({"error": "missing_idempotency_key"})
    );
    assert_eq!(aws.ledger_items().await.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth0_json_lines_are_split_into_their_log_events_and_the_array_format_is_the_same_events()
{
    let aws = stack("batch-auth0").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let line = |id: &str, t: &str| {
        format!(r#"{{"log_id":"{id}","data":{{"type":"{t}","log_id":"{id}"}}}}"#)
    };
    let lines = format!("{}\n{}\n", line("9001", "s"), line("9002", "f"));
    let headers = vec![
        ("authorization", AUTH0_TOKEN.to_owned()),
        ("content-type", "application/json".to_owned()),
    ];
    let resp = rx.handle(post("auth0", &headers, lines.as_bytes())).await;
    assert_eq!(resp.status(), 200, "{:?}", resp.body());
    let mut sent: Vec<(String, Option<String>)> = queued(&aws)
        .await
        .into_iter()
        .map(|e| (e.key, e.event_type))
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        vec![
            ("auth0:9001".to_owned(), Some("s".to_owned())),
            ("auth0:9002".to_owned(), Some("f".to_owned()))
        ]
    );
    // The same log events in Auth0's JSON array format: duplicates, one of them new.
    let array = format!(
        "[{},{},{}]",
        line("9001", "s"),
        line("9002", "f"),
        line("9003", "s")
    );
    let resp = rx.handle(post("auth0", &headers, array.as_bytes())).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        body_json(&resp)["keys"],
        json!(["auth0:9001", "auth0:9002", "auth0:9003"])
    );
    assert_eq!(
        ledger_keys(&aws).await,
        ["auth0:9001", "auth0:9002", "auth0:9003"]
            .map(str::to_owned)
            .into_iter()
            .collect()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_claim_releases_the_requests_other_claims_and_the_retry_accepts_all() {
    let aws = stack("batch-claim").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    // A claim that never reached DynamoDB, then one applied with its answer lost.
    for (when, ids) in [
        (When::Before, [200u64, 201, 202]),
        (When::After, [300, 301, 302]),
    ] {
        aws.faults.fail("PutItem", when, 1);
        let (_, req) = hubspot_batch(&ids, 0);
        let resp = rx.handle(req).await;
        assert_eq!(resp.status(), 500, "{when:?}");
        assert_eq!(
            aws.faults.calls("SendMessageBatch"),
            0,
            "{when:?}: nothing sent"
        );
        let keys: BTreeSet<String> = ids.iter().map(|&id| hubspot_key(id)).collect();
        assert!(
            ledger_keys(&aws).await.is_disjoint(&keys),
            "{when:?}: every claim released"
        );
        let (_, retry) = hubspot_batch(&ids, 1);
        assert_eq!(rx.handle(retry).await.status(), 200, "{when:?}");
        assert!(ledger_keys(&aws).await.is_superset(&keys), "{when:?}");
        let sent: BTreeSet<String> = queued(&aws).await.into_iter().map(|e| e.key).collect();
        assert_eq!(sent, keys, "{when:?}");
        aws.faults.reset_calls();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_payload_mismatch_in_a_batch_releases_the_new_events_claims() {
    let aws = stack("batch-422").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let first = br#"[{"id":"a","v":1}]"#;
    let resp = rx
        .handle(post("strict", &github_headers("s-1", first), first))
        .await;
    assert_eq!(resp.status(), 200);
    // `a` with other bytes beside a new `b`: 422, and `b` is not kept.
    let changed = br#"[{"id":"a","v":2},{"id":"b","v":1}]"#;
    let resp = rx
        .handle(post("strict", &github_headers("s-2", changed), changed))
        .await;
    assert_eq!(resp.status(), 422);
    assert_eq!(body_json(&resp), json!({"error": "payload_mismatch"}));
    assert_eq!(
        ledger_keys(&aws).await,
        BTreeSet::from(["strict:a".to_owned()])
    );
    let sent: Vec<String> = queued(&aws).await.into_iter().map(|e| e.key).collect();
    assert_eq!(sent, ["strict:a"]);
    // One key twice in one batch with two bodies: refused before any claim.
    aws.faults.reset_calls();
    let twice = br#"[{"id":"c","v":1},{"id":"c","v":2}]"#;
    let resp = rx
        .handle(post("strict", &github_headers("s-3", twice), twice))
        .await;
    assert_eq!(resp.status(), 422);
    assert!(
        aws.faults.all_calls().is_empty(),
        "{:?}",
        aws.faults.all_calls()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_partly_claimed_by_a_receiver_that_died_is_queued_whole_by_the_retry() {
    let aws = stack("batch-died").await;
    let body =
        br#"{"events":[{"id":"d-0","type":"t"},{"id":"d-1","type":"t"},{"id":"d-2","type":"t"}]}"#;
    // A receiver whose process freezes once one claim has been applied: its other calls never
    // answer, and it never sends. Dropped there, as an invocation that died.
    let dying = aws.sibling(aws.sdk.clone(), devstack::faults::Faults::new());
    dying.faults.freeze_after("PutItem");
    let (dead, _) = dying.receiver(ReceiverSettings::default()).await;
    let request = post("few", &github_headers("d-died", body), body);
    tokio::select! {
        _ = dead.handle(request) => panic!("the frozen receiver answered"),
        () = dying.faults.frozen() => {}
    }
    drop(dead);
    let claimed = ledger_keys(&aws).await;
    // One claim at least (the claims were in flight together: others may have landed too).
    assert!(!claimed.is_empty(), "{claimed:?}");
    assert!(queued(&aws).await.is_empty(), "nothing sent");

    // The sender's retry, same bytes: the dead claims are sent behind (marked, same
    // deduplication ids), the rest claimed and sent; 200 once all three are on the queue.
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let resp = rx
        .handle(post("few", &github_headers("d-died", body), body))
        .await;
    assert_eq!(resp.status(), 200);
    let all: BTreeSet<String> = ["few:d-0", "few:d-1", "few:d-2"]
        .map(str::to_owned)
        .into_iter()
        .collect();
    let sent: BTreeSet<String> = queued(&aws).await.into_iter().map(|e| e.key).collect();
    assert_eq!(sent, all);
    assert_eq!(ledger_keys(&aws).await, all);
    // A mark per dead claim: those seen above, and any of its claims that were in flight
    // when it froze and landed after.
    let marks = aws.faults.calls("UpdateItem") as usize;
    assert!((claimed.len()..=3).contains(&marks), "{marks} marks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_of_a_batch_is_forwarded_once_as_its_own_bytes_under_its_own_key() {
    let aws = stack("batch-forward").await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let (body, req) = hubspot_batch(&[40, 41, 42], 0);
    assert_eq!(rx.handle(req).await.status(), 200);
    let sor = testkit::SystemOfRecord::start();
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    let bridge = devstack::bridge::Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    for _ in 0..20 {
        let round = bridge
            .pump_once(|event| testkit::consume(&cx, event))
            .await
            .expect("pump");
        if round.is_none() {
            break;
        }
    }
    let text = std::str::from_utf8(&body).expect("UTF-8");
    let mut delivered = sor.deliveries();
    delivered.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(
        delivered.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
        [40, 41, 42].map(hubspot_key)
    );
    for (d, id) in delivered.iter().zip([40u64, 41, 42]) {
        let own = std::str::from_utf8(&d.body).expect("UTF-8");
        assert!(text.contains(own), "{own}: not a slice of the signed batch");
        assert_eq!(
            serde_json::from_str::<Value>(own).expect("JSON"),
            hubspot_event(id, 0)
        );
    }
    for item in aws.ledger_items().await {
        assert_eq!(
            item.status,
            inbox::ledger::Status::Completed,
            "{}",
            item.key
        );
    }
}

/// `attemptNumber` is left out of each event's payload hash (the preset's
/// `attempt_fields`). A HubSpot batch whose receiver died after its claims, before its send,
/// is retried with `attemptNumber` 2: the dead claims are the same payload, so each is sent
/// behind (no payload mismatch), the rest claimed and sent; every event queued once and
/// delivered once, as the retry's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hubspot_batch_whose_receiver_died_after_its_claims_is_delivered_whole_by_the_next_attempt(
) {
    let aws = stack("batch-attempt").await;
    let ids = [50u64, 51, 52];
    let dying = aws.sibling(aws.sdk.clone(), devstack::faults::Faults::new());
    dying.faults.freeze_after("PutItem");
    let (dead, _) = dying.receiver(ReceiverSettings::default()).await;
    let (_, first) = hubspot_batch(&ids, 1);
    tokio::select! {
        _ = dead.handle(first) => panic!("the frozen receiver answered"),
        () = dying.faults.frozen() => {}
    }
    drop(dead);
    let claimed = ledger_keys(&aws).await;
    assert!(!claimed.is_empty(), "{claimed:?}");
    let all: BTreeSet<String> = ids.iter().map(|&id| hubspot_key(id)).collect();
    assert!(claimed.is_subset(&all), "{claimed:?}");

    let (rx, lines) = aws.receiver(ReceiverSettings::default()).await;
    let (body, retry) = hubspot_batch(&ids, 2);
    assert_eq!(rx.handle(retry).await.status(), 200);
    let lines = lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "hubspot", Metric::PayloadMismatch), 0);

    let sor = testkit::SystemOfRecord::start();
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    let bridge = devstack::bridge::Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    for _ in 0..20 {
        let round = bridge
            .pump_once(|event| testkit::consume(&cx, event))
            .await
            .expect("pump");
        if round.is_none() {
            break;
        }
    }
    let text = std::str::from_utf8(&body).expect("UTF-8");
    let mut delivered = sor.deliveries();
    delivered.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(
        delivered.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
        ids.map(hubspot_key),
        "each event delivered once"
    );
    for (d, id) in delivered.iter().zip(ids) {
        let own = std::str::from_utf8(&d.body).expect("UTF-8");
        assert!(
            text.contains(own),
            "{own}: not a slice of the retry's batch"
        );
        assert_eq!(
            serde_json::from_str::<Value>(own).expect("JSON"),
            hubspot_event(id, 2)
        );
    }
    for item in aws.ledger_items().await {
        assert_eq!(
            item.status,
            inbox::ledger::Status::Completed,
            "{}",
            item.key
        );
    }
}
