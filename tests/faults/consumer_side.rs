//! The consumer's fault points. The receiver runs clean; faults are set after it answered.

use super::*;

/// Delivers one GitHub event cleanly (one 200) and returns its key.
async fn accepted(aws: &LocalAws, delivery: &str, n: u32) -> String {
    let rx = receiver(aws).await;
    let answers = send_github(aws, &rx, delivery, &gh_body(n)).await;
    assert_eq!(answers, ["200"]);
    aws.faults.reset_calls();
    format!("github:{delivery}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_fails_before_reaching_dynamodb() {
    let aws = LocalAws::new("f-take").await;
    let sor = SystemOfRecord::start();
    let key = accepted(&aws, "f-8", 8).await;
    aws.faults.fail("UpdateItem", When::Before, 1);

    let cx = consumer(&aws, &sor);
    let invocations = consume(&aws, &bridge(&aws).await, &cx, &key, LEASE_MS).await;
    assert!(invocations >= 2, "reported failed, delivered again");
    settled_once(&aws, &sor, &key, 1, 1).await;
    let item = aws.ledger().get(&key).await.expect("get").expect("item");
    assert_eq!(item.attempts, 1, "the failed take never reached the ledger");
    report("take fails", &["200".to_owned()], aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_applied_but_its_answer_lost_waits_for_its_lease() {
    let aws = LocalAws::new("f-take-lost").await;
    let sor = SystemOfRecord::start();
    let key = accepted(&aws, "f-9", 9).await;
    // The item is PROCESSING under a lease the invocation never knew it had: redeliveries
    // are refused until that lease runs out, then one takes over.
    aws.faults.fail("UpdateItem", When::After, 1);

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, &key, SHORT_LEASE_MS).await;
    settled_once(&aws, &sor, &key, 1, 1).await;
    let item = aws.ledger().get(&key).await.expect("get").expect("item");
    assert_eq!(item.attempts, 2);
    report(
        "take answer lost",
        &["200".to_owned()],
        aws.faults.injected(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_dies_after_take() {
    let aws = LocalAws::new("f-cx-dies").await;
    let sor = SystemOfRecord::start();
    let key = accepted(&aws, "f-10", 10).await;
    let b = bridge(&aws).await;

    // The dying invocation takes the key (its first UpdateItem), then freezes before its
    // side effect; it is dropped there.
    let process = dying(&aws, "UpdateItem");
    let doomed = consumer_with(
        &process,
        DiesWith {
            inner: testkit::forwarder(sor.url()),
            faults: process.faults.clone(),
        },
    );
    let messages = b.receive().await.expect("receive");
    assert_eq!(messages.len(), 1);
    let event = b.event(&messages);
    tokio::select! {
        biased;
        () = process.faults.frozen() => {}
        _ = invoke(&doomed, event, SHORT_LEASE_MS) => panic!("the invocation was to die"),
    }
    let item = aws.ledger().get(&key).await.expect("get").expect("item");
    assert_eq!(
        item.status,
        Status::Processing,
        "left as the dead one left it"
    );
    assert_eq!(sor.calls_for(&key), 0, "died before its side effect");
    // The mapping sees no answer; the message comes back when its visibility timeout runs
    // out, and redeliveries are refused until the dead lease runs out.
    let cx = consumer(&aws, &sor);
    consume(&aws, &b, &cx, &key, LEASE_MS).await;
    settled_once(&aws, &sor, &key, 1, 1).await;
    let item = aws.ledger().get(&key).await.expect("get").expect("item");
    assert_eq!(item.attempts, 2, "taken over once the dead lease ran out");
    report("consumer dies after take", &["200".to_owned()], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn side_effect_fails_then_succeeds_on_redelivery() {
    let aws = LocalAws::new("f-effect").await;
    let sor = SystemOfRecord::start();
    let key = accepted(&aws, "f-11", 11).await;
    sor.fail_key(&key, 1);

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, &key, LEASE_MS).await;
    // One refused call, one applied, both with the event's key.
    settled_once(&aws, &sor, &key, 2, 1).await;
    let item = aws.ledger().get(&key).await.expect("get").expect("item");
    assert_eq!(item.attempts, 2);
    report("side effect fails", &["200".to_owned()], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_fails_after_the_side_effect_succeeded() {
    let aws = LocalAws::new("f-complete").await;
    let sor = SystemOfRecord::start();
    let key = accepted(&aws, "f-12", 12).await;
    // The take (UpdateItem #1) goes through; the complete (#2) does not reach DynamoDB.
    aws.faults.fail_after("UpdateItem", When::Before, 1, 1);

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, &key, SHORT_LEASE_MS).await;
    // The side effect ran twice: the ledger never learnt of the first. Both calls carried
    // the same Idempotency-Key, so the system of record can tell the second is a repeat.
    settled_once(&aws, &sor, &key, 2, 2).await;
    report("complete fails", &["200".to_owned()], aws.faults.injected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_applied_but_its_answer_lost_is_acknowledged_as_a_duplicate() {
    let aws = LocalAws::new("f-complete-lost").await;
    let sor = SystemOfRecord::start();
    let key = accepted(&aws, "f-13", 13).await;
    aws.faults.fail_after("UpdateItem", When::After, 1, 1);

    let cx = consumer(&aws, &sor);
    let invocations = consume(&aws, &bridge(&aws).await, &cx, &key, LEASE_MS).await;
    assert!(invocations >= 2, "reported failed, delivered again");
    settled_once(&aws, &sor, &key, 1, 1).await;
    report(
        "complete answer lost",
        &["200".to_owned()],
        aws.faults.injected(),
    );
}

// ---------------------------------------------------------------------------------------
// Throttling: every DynamoDB and SQS call of the receiver, the consumer and the mapping.
// ---------------------------------------------------------------------------------------

/// Clients with the deployed retry policy (standard mode, 3 attempts) whose backoff starts
/// at 10 ms instead of 1 s, so the test takes seconds; `faults` their own.
fn fast_retry_process(aws: &LocalAws) -> LocalAws {
    let retry = aws.sdk.retry_config().expect("a retry config").clone();
    assert_eq!(retry.mode(), aws_config::retry::RetryMode::Standard);
    assert_eq!(retry.max_attempts(), 3, "the deployed retry policy");
    let sdk = aws
        .sdk
        .to_builder()
        .retry_config(retry.with_initial_backoff(Duration::from_millis(10)))
        .build();
    aws.sibling(sdk, Faults::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_throttled_twice_is_absorbed_by_the_sdk_retry() {
    let aws = LocalAws::new("f-throttle").await;
    let sor = SystemOfRecord::start();
    let throttled = fast_retry_process(&aws);
    // Every call of every operation: its first two attempts answered ThrottlingException.
    throttled.faults.throttle(EVERY_OPERATION, 2, u32::MAX);
    let rx = receiver(&throttled).await;
    let cx = consumer(&throttled, &sor);
    let b = bridge(&throttled).await;

    let events = 5;
    for n in 0..events {
        let answers = send_github(&aws, &rx, &format!("f-t{n}"), &gh_body(100 + n)).await;
        assert_eq!(
            answers,
            ["200"],
            "absorbed: the sender never saw the throttling"
        );
    }
    // The mapping through throttled clients too.
    let give_up = Instant::now() + Duration::from_secs(20);
    while sor.applied().len() < events as usize
        || aws.queue_counts(&aws.resources.queue_url).await != (0, 0)
    {
        assert!(
            Instant::now() < give_up,
            "did not drain: {:?}",
            sor.applied()
        );
        if b.pump_once(|e| invoke(&cx, e, LEASE_MS))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "pump: the mapping's calls are absorbed too: {e:?} {:?} {:?}",
                    throttled.faults.throttled(),
                    throttled.faults.all_calls()
                )
            })
            .is_none()
        {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    for n in 0..events {
        let key = format!("github:f-t{n}");
        let item = aws.ledger().get(&key).await.expect("get").expect("item");
        assert_eq!(item.status, Status::Completed);
        assert_eq!(item.attempts, 1);
        assert_eq!(sor.calls_for(&key), 1);
    }
    assert_eq!(sor.calls().len(), events as usize);

    let hits = throttled.faults.throttled();
    for op in [
        "PutItem",
        "SendMessage",
        "UpdateItem",
        "ReceiveMessage",
        "DeleteMessage",
    ] {
        let calls = throttled.faults.calls(op);
        assert!(calls > 0, "{op} was called");
        assert_eq!(hits.get(op).copied(), Some(2 * calls), "{op}: 2 per call");
    }
    eprintln!(
        "fault throttling: {} attempts throttled over {} calls: {hits:?}",
        hits.values().sum::<u64>(),
        throttled.faults.all_calls().values().sum::<u64>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_past_the_sdk_budget_is_a_500_after_release_then_the_retry_succeeds() {
    let aws = LocalAws::new("f-throttle-out").await;
    let sor = SystemOfRecord::start();
    let throttled = fast_retry_process(&aws);
    // One SendMessage throttled on all three of its attempts: the SDK gives up.
    throttled.faults.throttle("SendMessage", 3, 1);
    let rx = receiver(&throttled).await;

    let answers = send_github(&aws, &rx, "f-14", &gh_body(14)).await;
    assert_eq!(answers, ["500", "200"]);
    assert_eq!(throttled.faults.throttled().get("SendMessage"), Some(&3));

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, "github:f-14", LEASE_MS).await;
    settled_once(&aws, &sor, "github:f-14", 1, 1).await;
    report("throttled past the budget", &answers, 3);
}
