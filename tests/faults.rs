//! The fault matrix: one test per fault point, end to end against the local AWS API server
//! (moto) with faults injected at the SDK layer (`devstack::faults`), a sender that retries as
//! real senders do, the bridge playing the event source mapping, and a system of record that
//! counts calls per `Idempotency-Key`.
//!
//! Every test ends the same way ([`settled_once`]): the event was not lost (the system of
//! record applied it, the ledger says COMPLETED, the queue is empty), and it was not doubled
//! (one key, applied once, except where complete failed after the side effect: then twice,
//! under the same `Idempotency-Key`, which the test checks). Every answer the sender got is
//! checked against the contract as it arrives ([`check_answer`]): 200 only once the event is
//! on the queue, 500 only after the claim was released; never a 503 (since issue 15 a
//! duplicate behind a live claim sends the event itself).
//!
//! "Dies" is modelled honestly: the dying invocation has clients of its own
//! (`LocalAws::sibling`) that freeze once a given call has completed (every later call hangs
//! on a black hole, and its outbound HTTP with it); the test then drops the handler's future.
//! Nothing after that point reaches DynamoDB, SQS or the system of record, nothing is
//! released, and the sender sees a lost connection.

use std::future::Future;
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsBatchResponse;
use devstack::bridge::Bridge;
use devstack::faults::{Faults, When, EVERY_OPERATION};
use devstack::testkit::{
    self, github_headers, now_ms, post, post_with_deadline, LocalAws, SystemOfRecord,
};
use inbox::consumer::{HttpForwarder, Job, ProcessError, Processor};
use inbox::ledger::{Claim, LedgerStore as _, Status};
use inbox::receiver::ReceiverSettings;
use lambda_http::{Body, Response};

type Rx = testkit::TestReceiver;
type Cx<P> = testkit::TestConsumer<P>;

/// A consumer invocation's lease when it is meant to run out during the test.
const SHORT_LEASE_MS: i64 = 1_500;
/// A consumer invocation's lease otherwise (its deadline).
const LEASE_MS: i64 = 30_000;

/// A receiver without the replay cache, so that every delivery meets the ledger.
async fn receiver(aws: &LocalAws) -> Rx {
    aws.receiver(ReceiverSettings::default()).await.0
}

fn consumer_with<P: Processor>(aws: &LocalAws, processor: P) -> Cx<P> {
    aws.consumer(processor).0
}

fn consumer(aws: &LocalAws, sor: &SystemOfRecord) -> Cx<HttpForwarder> {
    consumer_with(aws, testkit::forwarder(sor.url()))
}

/// The mapping. A message reported failed comes back when its visibility timeout runs out:
/// 1 s here (360 s deployed, six times the consumer's timeout), so a redelivery meets a
/// live lease a bounded number of times and never reaches the queue's maxReceiveCount (5).
async fn bridge(aws: &LocalAws) -> Bridge {
    let mut b = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    b.visibility_timeout = Some(1);
    b
}

/// A process whose clients freeze once `operation` has completed (see the module comment).
fn dying(aws: &LocalAws, operation: &str) -> LocalAws {
    let process = aws.sibling(aws.sdk.clone(), Faults::new());
    process.faults.freeze_after(operation);
    process
}

/// The side effect of a process that can freeze: once its clients froze, its outbound HTTP
/// hangs too (the whole process is gone).
struct DiesWith<P> {
    inner: P,
    faults: Faults,
}

impl<P: Processor> Processor for DiesWith<P> {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        if self.faults.is_frozen() {
            std::future::pending::<()>().await;
        }
        self.inner.process(job).await
    }
}

fn gh_body(n: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{n}}}"#).into_bytes()
}

fn body_json(resp: &Response<Body>) -> serde_json::Value {
    serde_json::from_slice(resp.body().as_ref()).expect("a JSON body")
}

fn replayed(resp: &Response<Body>) -> bool {
    resp.headers()
        .get("idempotent-replayed")
        .map(|v| v.as_bytes())
        == Some(b"true")
}

/// Whether the event is durably on the queue (these tests have one event on the queue at a
/// time), or already past it (taken by the consumer). Counts, not receives: a receive counts
/// towards the queue's maxReceiveCount.
async fn on_queue_or_beyond(aws: &LocalAws, key: &str) -> bool {
    let item = aws.ledger().get(key).await.expect("get");
    if item.is_some_and(|i| matches!(i.status, Status::Processing | Status::Completed)) {
        return true;
    }
    let (visible, in_flight) = aws.queue_counts(&aws.resources.queue_url).await;
    visible + in_flight >= 1
}

/// Checks one answer against the contract, at the moment the sender gets it.
async fn check_answer(aws: &LocalAws, key: &str, resp: &Response<Body>) {
    assert_eq!(
        resp.headers().get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    match resp.status().as_u16() {
        200 => {
            assert_eq!(
                body_json(resp),
                serde_json::json!({"status": "accepted", "key": key})
            );
            assert!(
                on_queue_or_beyond(aws, key).await,
                "200 only when the event is on the queue"
            );
        }
        500 => {
            assert_eq!(body_json(resp), serde_json::json!({"error": "internal"}));
            let item = aws.ledger().get(key).await.expect("get");
            assert!(
                item.as_ref().is_none_or(|i| i.status != Status::Received),
                "500 only after the claim was released: {item:?}"
            );
        }
        other => panic!(
            "an answer outside the contract: {other} {:?}",
            body_json(resp)
        ),
    }
}

/// What the sender saw, compactly: "200", "200 replayed", "500", "lost".
async fn answer(aws: &LocalAws, key: &str, resp: Option<Response<Body>>) -> String {
    match resp {
        None => "lost".to_owned(),
        Some(resp) => {
            check_answer(aws, key, &resp).await;
            match (resp.status().as_u16(), replayed(&resp)) {
                (200, true) => "200 replayed".to_owned(),
                (status, _) => status.to_string(),
            }
        }
    }
}

const SENDER_MAX_ATTEMPTS: u32 = 60;

/// A sender as real ones are: retries on 5xx and on a lost connection, with exponential
/// backoff from 10 ms capped at 100 ms, and gives up after 60 attempts. `attempt(n)` makes
/// delivery attempt `n` (`None`: the connection was lost). Returns every answer.
async fn send<F, Fut>(aws: &LocalAws, key: &str, mut attempt: F) -> Vec<String>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Option<Response<Body>>>,
{
    let mut answers = Vec::new();
    let mut pause = Duration::from_millis(10);
    for n in 0..SENDER_MAX_ATTEMPTS {
        let seen = answer(aws, key, attempt(n).await).await;
        let retry = seen == "lost" || seen.starts_with('5');
        answers.push(seen);
        if !retry {
            return answers;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
    panic!("the sender gave up: {answers:?}");
}

/// The usual sender: the same GitHub delivery each time, through `rx`.
async fn send_github(aws: &LocalAws, rx: &Rx, delivery: &str, body: &[u8]) -> Vec<String> {
    let key = format!("github:{delivery}");
    send(aws, &key, |_| async {
        Some(
            rx.handle(post("github", &github_headers(delivery, body), body))
                .await,
        )
    })
    .await
}

/// Invokes the consumer as the mapping would, with a fresh request id and a lease of
/// `lease_ms`.
async fn invoke<P: Processor>(
    cx: &Cx<P>,
    event: aws_lambda_events::sqs::SqsEvent,
    lease_ms: i64,
) -> anyhow::Result<SqsBatchResponse> {
    Ok(cx
        .handle_batch(
            &event.records,
            &testkit::unique("inv"),
            Some(now_ms() + lease_ms),
        )
        .await)
}

/// Plays the event source mapping until `key` is COMPLETED and the queue is empty: the first
/// invocation gets `first_lease_ms`, the rest the usual lease. A round that had nothing to do
/// or only failures waits 25 ms (a busy item waits for its lease to run out). Bounded.
async fn consume<P: Processor>(
    aws: &LocalAws,
    b: &Bridge,
    cx: &Cx<P>,
    key: &str,
    first_lease_ms: i64,
) -> u32 {
    let give_up = Instant::now() + Duration::from_secs(20);
    let mut invocations = 0;
    loop {
        let lease = if invocations == 0 {
            first_lease_ms
        } else {
            LEASE_MS
        };
        let round = b.pump_once(|e| invoke(cx, e, lease)).await.expect("pump");
        match round {
            Some(r) => {
                invocations += 1;
                if r.deleted > 0 && r.failed == 0 {
                    continue;
                }
            }
            None => {
                let done = aws
                    .ledger()
                    .get(key)
                    .await
                    .expect("get")
                    .is_some_and(|i| i.status == Status::Completed);
                if done && aws.queue_counts(&aws.resources.queue_url).await == (0, 0) {
                    return invocations;
                }
            }
        }
        assert!(Instant::now() < give_up, "{key} did not settle");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Neither lost nor doubled: the ledger says COMPLETED, the queue is empty, the system of
/// record saw only this key (every call carried it as `Idempotency-Key`), applied it
/// `applied` times and was called `calls` times.
async fn settled_once(aws: &LocalAws, sor: &SystemOfRecord, key: &str, calls: u64, applied: u64) {
    let item = aws.ledger().get(key).await.expect("get").expect("an item");
    assert_eq!(item.status, Status::Completed, "{item:?}");
    assert_eq!(
        aws.queue_counts(&aws.resources.queue_url).await,
        (0, 0),
        "nothing left on the queue"
    );
    let seen = sor.calls();
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        vec![key],
        "every call carried the event's Idempotency-Key"
    );
    assert_eq!(sor.calls_for(key), calls, "calls to the system of record");
    assert_eq!(
        sor.applied_for(key),
        applied,
        "applied by the system of record"
    );
    assert!(
        aws.ledger_items().await.len() == 1,
        "one ledger item for one event"
    );
}

fn report(name: &str, answers: &[String], injected: u64) {
    eprintln!("fault {name}: sender saw {answers:?}, {injected} fault(s) injected");
}

// ---------------------------------------------------------------------------------------
// The receiver's fault points.
// ---------------------------------------------------------------------------------------

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

/// As above, but the sender retries only after the dead claim's lease ran out: the retry
/// takes the claim over, sends again (the queue's deduplication keeps one copy, the ledger
/// covers any other) and gets a first-delivery 200.
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
    assert_eq!(answers, ["lost", "200"], "taken over");

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, key, LEASE_MS).await;
    settled_once(&aws, &sor, key, 1, 1).await;
    report("receiver dies, lease runs out", &answers, 0);
}

/// A first delivery claims, a duplicate meets its live claim and enqueues the event, then the
/// first delivery's send fails and it releases its claim (the item is gone): the event the
/// duplicate enqueued must still run once, the take finding no item takes it.
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
    };
    assert!(matches!(
        aws.ledger().claim(&claim).await,
        Ok(inbox::ledger::ClaimOutcome::Claimed)
    ));

    let answers = send_github(&aws, &rx, "f-7", &body).await;
    assert_eq!(answers, ["200 replayed"], "sent behind the live claim");
    // The first delivery's send failed: it releases its claim (and answers 500).
    assert_eq!(aws.ledger().release(key, "first").await, Ok(true));
    assert_eq!(aws.ledger().get(key).await.expect("get"), None);

    let cx = consumer(&aws, &sor);
    consume(&aws, &bridge(&aws).await, &cx, key, LEASE_MS).await;
    settled_once(&aws, &sor, key, 1, 1).await;
    // A late duplicate from the sender replays.
    let again = send_github(&aws, &rx, "f-7", &body).await;
    assert_eq!(again, ["200 replayed"]);
    report("release after a duplicate's send", &answers, 0);
}

// ---------------------------------------------------------------------------------------
// The consumer's fault points. The receiver runs clean; faults are set after it answered.
// ---------------------------------------------------------------------------------------

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
