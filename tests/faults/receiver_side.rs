//! The receiver's fault points.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_fails_before_reaching_dynamodb() {
    let aws = LocalAws::new("f-claim").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    aws.faults.fail("PutItem", When::Before, 1);

    let answers = send_github(&aws, &rx, "f-1", &gh_body(1)).await;
    assert_eq!(answers, ["500", "200"]);

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, "github:f-1", LEASE_MS).await;
    settled_once(&aws, &sor, "github:f-1", 1, 1).await;
    report("claim fails", &answers, aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_applied_but_its_answer_lost_is_released_before_the_500() {
    let aws = LocalAws::new("f-claim-lost").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    // DynamoDB wrote the claim; the receiver never heard. It cannot know whether it holds
    // the key, so it releases (conditional on being the owner) before answering 500.
    aws.faults.fail("PutItem", When::After, 1);

    let answers = send_github(&aws, &rx, "f-2", &gh_body(2)).await;
    assert_eq!(answers, ["500", "200"]);
    assert_eq!(aws.faults.calls("DeleteItem"), 1, "the release");

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, "github:f-2", LEASE_MS).await;
    settled_once(&aws, &sor, "github:f-2", 1, 1).await;
    report("claim answer lost", &answers, aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_fails_before_reaching_sqs() {
    let aws = LocalAws::new("f-send").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    aws.faults.fail("SendMessage", When::Before, 1);

    let answers = send_github(&aws, &rx, "f-3", &gh_body(3)).await;
    assert_eq!(answers, ["500", "200"]);
    assert_eq!(
        aws.peek_keys(&aws.resources.queue_url).await,
        ["github:f-3"]
    );

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, "github:f-3", LEASE_MS).await;
    settled_once(&aws, &sor, "github:f-3", 1, 1).await;
    report("send fails", &answers, aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_applied_but_its_answer_lost_is_deduplicated_by_the_key() {
    let aws = LocalAws::new("f-send-lost").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    // The message is on the queue but the receiver saw an error: it releases and answers
    // 500; the sender's retry claims again and sends again with the same deduplication id.
    aws.faults.fail("SendMessage", When::After, 1);

    let answers = send_github(&aws, &rx, "f-4", &gh_body(4)).await;
    assert_eq!(answers, ["500", "200"]);
    assert_eq!(aws.faults.calls("SendMessage"), 2);
    let on_queue = aws.peek_keys(&aws.resources.queue_url).await;
    assert!(
        on_queue.iter().all(|k| k == "github:f-4") && !on_queue.is_empty(),
        "{on_queue:?}"
    );

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, "github:f-4", LEASE_MS).await;
    settled_once(&aws, &sor, "github:f-4", 1, 1).await;
    report("send answer lost", &answers, aws.faults.injected());
}

/// The receiver dies after SendMessage completed, before its answer: the item stays RECEIVED
/// under the dead invocation's live lease, the message is on the queue. The sender, having
/// lost its connection, retries at once: its retry meets the live claim, sends the event
/// again under the same deduplication id (SQS keeps one message) and gets the first answer,
/// replayed. The consumer then takes the RECEIVED item and runs it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_dies_after_send_before_its_answer() {
    let aws = LocalAws::new("f-rx-dies").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    let key = "github:f-5";
    let body = gh_body(5);
    let process = &dying(&aws, "SendMessage");
    let doomed = receiver(process).await;

    let answers = send(&aws, key, |n| {
        let (doomed, rx, body) = (&doomed, &rx, &body);
        async move {
            let req = post_with_deadline(
                "github",
                &github_headers("f-5", body),
                body,
                now_ms() + LEASE_MS,
            );
            if n == 0 {
                // The send is the receiver's last call: the process dies with its 200
                // unsent (nothing else happens in between), so the sender sees no answer.
                let resp = doomed.handle(req).await;
                (!process.faults.is_frozen()).then_some(resp)
            } else {
                Some(rx.handle(req).await)
            }
        }
    })
    .await;
    assert_eq!(answers, ["lost", "200 replayed"]);
    let item = aws.ledger().get(key).await.expect("get").expect("item");
    assert_eq!(
        item.status,
        Status::Received,
        "left as the dead one left it"
    );
    assert_eq!(process.faults.calls("SendMessage"), 1);
    assert_eq!(process.faults.calls("DeleteItem"), 0, "nothing released");
    assert_eq!(aws.faults.calls("SendMessage"), 1, "the retry sent too");
    assert_eq!(
        aws.peek_keys(&aws.resources.queue_url).await,
        [key],
        "one message: the deduplication id is the key"
    );

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, key, LEASE_MS).await;
    settled_once(&aws, &sor, key, 1, 1).await;
    report("receiver dies after send", &answers, 0);
}

/// As above, but the sender retries only after the dead claim's lease ran out: the item is
/// never claimed anew (its event is on the queue); the retry, with the stored body, sends it
/// again (the queue's deduplication keeps one copy, the ledger covers any other) and gets the
/// first answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receiver_dies_after_send_and_its_lease_runs_out_first() {
    let aws = LocalAws::new("f-rx-dies-lease").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    let key = "github:f-6";
    let body = gh_body(6);
    let process = &dying(&aws, "SendMessage");
    let doomed = receiver(process).await;

    let answers = send(&aws, key, |n| {
        let (doomed, rx, body) = (&doomed, &rx, &body);
        async move {
            if n == 0 {
                let req = post_with_deadline(
                    "github",
                    &github_headers("f-6", body),
                    body,
                    now_ms() + 600,
                );
                // The send is the receiver's last call: the process dies with its 200
                // unsent (nothing else happens in between), so the sender sees no answer.
                let resp = doomed.handle(req).await;
                (!process.faults.is_frozen()).then_some(resp)
            } else {
                // A sender that retries later than the dead invocation's deadline.
                tokio::time::sleep(Duration::from_millis(700)).await;
                Some(
                    rx.handle(post("github", &github_headers("f-6", body), body))
                        .await,
                )
            }
        }
    })
    .await;
    assert_eq!(answers, ["lost", "200 replayed"], "not claimed anew");
    assert_eq!(aws.faults.calls("SendMessage"), 1, "the retry sent too");

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, key, LEASE_MS).await;
    settled_once(&aws, &sor, key, 1, 1).await;
    report("receiver dies, lease runs out", &answers, 0);
}

/// A first delivery claims, a duplicate meets its live claim and enqueues the event, then the
/// first delivery's send fails and it tries to release its claim: the duplicate marked the
/// item resent before its send (docs/design.md §4, "mark resent"), so the release is refused
/// and the item stays for the event the duplicate enqueued, which runs once (the consumer
/// takes only an event whose item exists).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_after_a_failed_send_keeps_the_event_a_duplicate_enqueued() {
    let aws = LocalAws::new("f-release").await;
    let sor = SystemOfRecord::start();
    let rx = receiver(&aws).await;
    let key = "github:f-7";
    let body = gh_body(7);
    // The first delivery's claim, as its invocation wrote it (its send still to come).
    let now = now_ms();
    let (status, accepted) = inbox::receiver::accepted_response(key);
    let claim = Claim {
        key: key.to_owned(),
        source: "github".to_owned(),
        payload_sha256: inbox::key::sha256_hex(&body),
        owner: "first".to_owned(),
        now_ms: now,
        lease_until_ms: now + LEASE_MS,
        expires_at: now / 1000 + 3600,
        response_status: status,
        response_body: accepted,
        event_type: None,
        trace_id: None,
    };
    assert!(matches!(
        aws.ledger().claim(&claim).await,
        Ok(inbox::ledger::ClaimOutcome::Claimed)
    ));

    let answers = send_github(&aws, &rx, "f-7", &body).await;
    assert_eq!(answers, ["200 replayed"], "sent behind the live claim");
    // The first delivery's send failed: its release (before its 500) is refused.
    assert_eq!(
        aws.ledger().release(key, "first", testkit::now_ms()).await,
        Ok(false)
    );
    let kept = aws.ledger().get(key).await.expect("get").expect("kept");
    assert_eq!(kept.status, inbox::ledger::Status::Received);
    assert!(kept.resent_by.is_some(), "{kept:?}");

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, key, LEASE_MS).await;
    settled_once(&aws, &sor, key, 1, 1).await;
    // A late duplicate from the sender replays.
    let again = send_github(&aws, &rx, "f-7", &body).await;
    assert_eq!(again, ["200 replayed"]);
    report("release after a duplicate's send", &answers, 0);
}
