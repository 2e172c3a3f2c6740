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
//! on the queue, 500 only after the claim was released; never a 503 (a duplicate behind a
//! live claim sends the event itself).
//!
//! "Dies" is modelled honestly: the dying invocation has clients of its own
//! (`LocalAws::sibling`) that freeze once a given call has completed (every later call hangs
//! on a black hole, and its outbound HTTP with it); the test then drops the handler's future.
//! Nothing after that point reaches DynamoDB, SQS or the system of record, nothing is
//! released, and the sender sees a lost connection.
//!
//! `batches` runs the matrix for a request of several events (docs/design.md §14): a claim
//! failing, a send's answer lost, the receiver dying after some claims or after one of its
//! SendMessageBatch calls; the sender retries the whole batch, and every event is applied once.

use std::future::Future;
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsBatchResponse;
use devstack::bridge::Bridge;
use devstack::faults::{Faults, When, EVERY_OPERATION};
use devstack::testkit::{
    self, github_headers, now_ms, post, post_with_deadline, LocalAws, SystemOfRecord,
};
use inbox::consumer::{Job, ProcessError, Processor};
use inbox::forward::HttpForwarder;
use inbox::ledger::{Claim, LedgerStore as _, Status};
use inbox::receiver::ReceiverSettings;
use lambda_http::{Body, Response};

type Rx = testkit::TestReceiver;
type Cx<P> = testkit::TestConsumer<P>;

mod batches;
mod consumer_side;
mod receiver_side;

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
