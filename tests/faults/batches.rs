//! The fault matrix for a batch request (docs/design.md §14): one request of several events,
//! a fault in its claims or its sends, or its receiver dying after some of them, then the
//! sender retrying the whole batch. Each case ends as the others do, per event: every event
//! on the queue once, applied once by the system of record under its own key, COMPLETED.
//! Every answer the sender gets is checked as it arrives: a 200 names every event's key and
//! comes only once each event is on the queue (or past it); after a 500, a claim is kept only
//! for an event that is on the queue.

use std::collections::BTreeSet;

use devstack::local_stack::Secret;
use inbox::ledger::Status;

use super::*;

const SOURCES: &str = r#"{
  "batch": {"signature": {"scheme": "github", "secrets": ["secretsmanager:faults/batch"]},
            "batch": {"format": "json_array", "at": "/events"},
            "key": {"from": "json", "pointers": ["/id"]},
            "event_type": {"from": "json", "pointer": "/type"}}
}"#;

async fn stack(label: &str) -> LocalAws {
    LocalAws::with_sources(
        label,
        SOURCES,
        &[Secret::new("faults/batch", testkit::TEST_SECRET)],
    )
    .await
}

/// A batch of `n` events `<label>-<i>`, and their keys in the batch's order.
fn batch(label: &str, n: usize) -> (Vec<u8>, Vec<String>) {
    let events: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"id":"{label}-{i}","type":"thing.changed","n":{i}}}"#))
        .collect();
    let body = format!(r#"{{"events":[{}]}}"#, events.join(",")).into_bytes();
    let keys = (0..n).map(|i| format!("batch:{label}-{i}")).collect();
    (body, keys)
}

/// Checks one answer to the batch against the contract, at the moment the sender gets it.
async fn check_batch_answer(aws: &LocalAws, keys: &[String], resp: &Response<Body>) {
    let on_queue: BTreeSet<String> = aws
        .peek_keys(&aws.resources.queue_url)
        .await
        .into_iter()
        .collect();
    let mut items = std::collections::BTreeMap::new();
    for key in keys {
        items.insert(key.clone(), aws.ledger().get(key).await.expect("get"));
    }
    match resp.status().as_u16() {
        200 => {
            assert_eq!(
                body_json(resp),
                serde_json::json!({"status": "accepted", "keys": keys})
            );
            for (key, item) in &items {
                let item = item
                    .as_ref()
                    .unwrap_or_else(|| panic!("200 with {key} unclaimed"));
                assert!(
                    item.status != Status::Received || on_queue.contains(key),
                    "200 only when every event is on the queue: {key} is not"
                );
            }
        }
        500 => {
            assert_eq!(body_json(resp), serde_json::json!({"error": "internal"}));
            for (key, item) in &items {
                if item.as_ref().is_some_and(|i| i.status == Status::Received) {
                    assert!(
                        on_queue.contains(key),
                        "after a 500 a claim is kept only for an event on the queue: {key}"
                    );
                }
            }
        }
        other => panic!(
            "an answer outside the contract: {other} {:?}",
            body_json(resp)
        ),
    }
}

/// The sender of the batch, retrying the whole request on a 5xx or a lost connection (as
/// [`send`]); `attempt(n)` makes attempt `n`.
async fn send_batch<F, Fut>(aws: &LocalAws, keys: &[String], mut attempt: F) -> Vec<String>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Option<Response<Body>>>,
{
    let mut answers = Vec::new();
    for n in 0..SENDER_MAX_ATTEMPTS {
        let seen = match attempt(n).await {
            None => "lost".to_owned(),
            Some(resp) => {
                check_batch_answer(aws, keys, &resp).await;
                match (resp.status().as_u16(), replayed(&resp)) {
                    (200, true) => "200 replayed".to_owned(),
                    (status, _) => status.to_string(),
                }
            }
        };
        let retry = seen == "lost" || seen.starts_with('5');
        answers.push(seen);
        if !retry {
            return answers;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the sender gave up: {answers:?}");
}

/// The batch through `rx` every time.
async fn send_through(aws: &LocalAws, rx: &Rx, body: &[u8], keys: &[String]) -> Vec<String> {
    send_batch(aws, keys, |_| async {
        Some(
            rx.handle(post("batch", &github_headers("fb-delivery", body), body))
                .await,
        )
    })
    .await
}

/// The first attempt through a process that freezes after `operation` (dropped there: the
/// sender sees a lost connection), the retries through `rx`.
async fn send_first_through_dying(
    aws: &LocalAws,
    rx: &Rx,
    operation: &str,
    body: &[u8],
    keys: &[String],
) -> Vec<String> {
    let process = dying(aws, operation);
    let doomed = receiver(&process).await;
    let answers = send_batch(aws, keys, |n| {
        let (doomed, rx, process) = (&doomed, rx, &process);
        async move {
            let req = post("batch", &github_headers("fb-delivery", body), body);
            if n == 0 {
                // Frozen first: once it froze, whatever the process still does is lost.
                tokio::select! {
                    biased;
                    () = process.faults.frozen() => None,
                    resp = doomed.handle(req) => Some(resp),
                }
            } else {
                Some(rx.handle(req).await)
            }
        }
    })
    .await;
    assert!(process.faults.is_frozen(), "the first receiver died");
    answers
}

/// Consumes until every event is COMPLETED and the queue empty, then checks each event was
/// applied once, under its own key, and nothing else was.
async fn settled_each_once(aws: &LocalAws, sor: &SystemOfRecord, keys: &[String]) {
    let cx = consumer(aws, sor);
    let b = bridge(aws).await;
    for key in keys {
        consume(aws, &b, &cx, key, LEASE_MS).await;
    }
    let items = aws.ledger_items().await;
    assert_eq!(items.len(), keys.len(), "one ledger item per event");
    for item in &items {
        assert_eq!(item.status, Status::Completed, "{item:?}");
    }
    assert_eq!(aws.queue_counts(&aws.resources.queue_url).await, (0, 0));
    let seen: BTreeSet<String> = sor.calls().into_keys().collect();
    assert_eq!(
        seen,
        keys.iter().cloned().collect::<BTreeSet<_>>(),
        "every call carried one event's own key"
    );
    for key in keys {
        assert_eq!(
            sor.calls_for(key),
            1,
            "{key}: calls to the system of record"
        );
        assert_eq!(sor.applied_for(key), 1, "{key}: applied");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_claim_fails_is_retried_whole_and_each_event_applied_once() {
    let aws = stack("f-batch-claim").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    let (body, keys) = batch("fb-claim", 4);
    aws.faults.fail("PutItem", When::Before, 1);

    let answers = send_through(&aws, &rx, &body, &keys).await;
    assert_eq!(answers, ["500", "200"]);
    // The failed request released every claim it made (nothing of it was sent).
    assert_eq!(
        aws.faults.calls("SendMessageBatch"),
        1,
        "only the retry sent"
    );

    settled_each_once(&aws, &sor, &keys).await;
    report("batch claim fails", &answers, aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_send_answer_is_lost_is_sent_again_under_the_same_ids_and_applied_once() {
    let aws = stack("f-batch-send-lost").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    // 12 events: two SendMessageBatch calls; one lands but its answer is lost. The receiver
    // cannot know those events are queued: it releases their claims and answers 500; the
    // retry claims them anew and sends them under the same deduplication ids.
    let (body, keys) = batch("fb-send", 12);
    aws.faults.fail("SendMessageBatch", When::After, 1);

    let answers = send_through(&aws, &rx, &body, &keys).await;
    assert_eq!(answers, ["500", "200"]);
    let mut on_queue = aws.peek_keys(&aws.resources.queue_url).await;
    on_queue.sort();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(on_queue, want, "each event on the queue once");

    settled_each_once(&aws, &sor, &keys).await;
    report("batch send answer lost", &answers, aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_partly_claimed_when_its_receiver_dies_is_retried_whole_and_applied_once() {
    let aws = stack("f-batch-dies-claim").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    let (body, keys) = batch("fb-died", 5);

    let answers = send_first_through_dying(&aws, &rx, "PutItem", &body, &keys).await;
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0], "lost");
    assert!(answers[1].starts_with("200"), "{answers:?}");

    settled_each_once(&aws, &sor, &keys).await;
    report("batch receiver dies after a claim", &answers, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_partly_sent_when_its_receiver_dies_is_retried_whole_and_applied_once() {
    let aws = stack("f-batch-dies-send").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    // 12 events, two SendMessageBatch calls: the process dies once one of them has landed.
    let (body, keys) = batch("fb-half", 12);

    let answers = send_first_through_dying(&aws, &rx, "SendMessageBatch", &body, &keys).await;
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0], "lost");
    assert!(answers[1].starts_with("200"), "{answers:?}");
    let mut on_queue = aws.peek_keys(&aws.resources.queue_url).await;
    on_queue.sort();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(on_queue, want, "each event on the queue once");

    settled_each_once(&aws, &sor, &keys).await;
    report("batch receiver dies after a send", &answers, 0);
}
