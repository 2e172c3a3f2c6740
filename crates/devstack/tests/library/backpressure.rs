//! The consumer's backpressure and dead-letter rules on the in-memory ledger, with a queue
//! that records what it is asked (docs/design.md §6):
//!
//! - a throttled side effect defers its key (no failure counted), its message and every
//!   message of the batch not yet run come back after the `Retry-After` (at least their receive
//!   count in seconds), and nothing else starts;
//! - a key is dead-lettered by the consumer at its `MAX_FAILURES`-th real failure, throttles
//!   not counted, and the message reported done; an unreadable message after as many receives;
//! - a delay nearing the queue's retention also copies the message to the dead-letter queue.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use inbox::clock::{Clock, SystemClock};
use inbox::config::SourceSpecs;
use inbox::consumer::{Consumer, ConsumerSettings, Job, Outcome, ProcessError, Processor};
use inbox::key::sha256_hex;
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::{LedgerStore, Status};
use inbox::metrics::{tally, Metric, Metrics};
use inbox::queue::{Envelope, QueueError};
use inbox::redelivery::{NoRedelivery, Redelivery};

const SOURCES: &str = r#"{"s": {"signature": {"scheme": "none"}, "allow_unsigned": true,
    "key": {"from": "json", "pointers": ["/id"]},
    "group": {"from": "json", "pointers": ["/g"]}}}"#;

/// A queue that records the delays and dead letters it is asked for.
#[derive(Clone, Default)]
struct Recorded {
    delays: Arc<Mutex<Vec<(String, u32)>>>,
    dead: Arc<Mutex<Vec<String>>>,
}

impl Recorded {
    fn delays(&self) -> Vec<(String, u32)> {
        let mut d = self.delays.lock().unwrap().clone();
        d.sort();
        d
    }
    fn dead(&self) -> Vec<String> {
        self.dead.lock().unwrap().clone()
    }
}

impl Redelivery for Recorded {
    async fn delay(&self, m: &SqsMessage, seconds: u32) -> Result<(), QueueError> {
        let id = m.message_id.clone().unwrap_or_default();
        self.delays.lock().unwrap().push((id, seconds));
        Ok(())
    }
    async fn dead_letter(&self, m: &SqsMessage) -> Result<(), QueueError> {
        self.dead
            .lock()
            .unwrap()
            .push(m.message_id.clone().unwrap_or_default());
        Ok(())
    }
    fn dead_letters(&self) -> bool {
        true
    }
}

/// A side effect that answers from a script per key (then `Done`), recording each run.
#[derive(Clone, Default)]
struct Scripted {
    script: Arc<Mutex<BTreeMap<String, VecDeque<Outcome>>>>,
    runs: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn answer(&self, key: &str, outcomes: impl IntoIterator<Item = Outcome>) {
        self.script
            .lock()
            .unwrap()
            .entry(key.to_owned())
            .or_default()
            .extend(outcomes);
    }
    fn runs(&self) -> Vec<String> {
        self.runs.lock().unwrap().clone()
    }
}

impl Processor for Scripted {
    async fn process(&self, _job: &Job) -> Result<(), ProcessError> {
        unreachable!("the consumer calls run")
    }
    async fn run(&self, job: &Job) -> Outcome {
        self.runs.lock().unwrap().push(job.key.clone());
        let mut script = self.script.lock().unwrap();
        script
            .get_mut(&job.key)
            .and_then(VecDeque::pop_front)
            .unwrap_or(Outcome::Done)
    }
}

fn throttled(seconds: u64) -> Outcome {
    Outcome::Throttled {
        retry_after: Duration::from_secs(seconds),
        reason: ProcessError(format!("throttled: retry after {seconds} s")),
    }
}

fn failed() -> Outcome {
    Outcome::Failed(ProcessError("forward answered 500".into()))
}

/// Message `id` of group `group` for event `event`, received `receives` times.
fn message(id: &str, group: &str, event: &str, receives: u32) -> SqsMessage {
    let body = format!(r#"{{"id":"{event}","g":"{group}"}}"#);
    let env = Envelope::new(
        &format!("s:{event}"),
        "s",
        SystemClock.now_ms(),
        &sha256_hex(body.as_bytes()),
        BTreeMap::new(),
        body.as_bytes(),
    );
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.receipt_handle = Some(format!("rh-{id}"));
    m.body = Some(env.to_json());
    m.attributes
        .insert("MessageGroupId".into(), format!("s:{group}"));
    m.attributes
        .insert("ApproximateReceiveCount".into(), receives.to_string());
    m.attributes
        .insert("SentTimestamp".into(), SystemClock.now_ms().to_string());
    m
}

type Cx = Consumer<Arc<MemoryLedger>, Scripted, SystemClock, inbox::consumer::Wiring<Recorded>>;

fn consumer(settings: ConsumerSettings) -> (Cx, Arc<MemoryLedger>, Scripted, Recorded, Lines) {
    let (metrics, lines) = Metrics::memory("consumer");
    let ledger = Arc::new(MemoryLedger::new());
    let side_effect = Scripted::default();
    let queue = Recorded::default();
    let cx = Consumer::new(
        SourceSpecs::parse(SOURCES).unwrap(),
        ledger.clone(),
        side_effect.clone(),
        SystemClock,
        settings,
        metrics,
    )
    .with_redelivery(queue.clone());
    (cx, ledger, side_effect, queue, lines)
}

type Lines = Arc<Mutex<Vec<String>>>;

fn settings(groups: usize, max_failures: u32) -> ConsumerSettings {
    ConsumerSettings {
        max_concurrent_groups: groups,
        max_failures,
        queue_retention_seconds: Some(345_600),
        archive_bodies: false,
    }
}

async fn failed_ids(cx: &Cx, batch: &[SqsMessage]) -> Vec<String> {
    devstack::testkit::accept_messages(cx.ledger(), batch)
        .await
        .expect("accepted");
    let deadline = SystemClock.now_ms() + 30_000;
    cx.handle_batch(batch, "inv", Some(deadline))
        .await
        .batch_item_failures
        .into_iter()
        .map(|f| f.item_identifier)
        .collect()
}

fn count(lines: &Lines, metric: Metric) -> u64 {
    tally(&lines.lock().unwrap(), "s", metric)
}

#[tokio::test]
async fn a_throttle_defers_its_key_and_holds_back_the_rest_of_the_batch() {
    let (cx, ledger, side_effect, queue, lines) = consumer(settings(1, 5));
    side_effect.answer("s:a1", [throttled(5)]);
    let batch = [
        message("m1", "A", "a1", 1),
        message("m2", "A", "a2", 1),
        message("m3", "B", "b1", 3),
    ];
    assert_eq!(failed_ids(&cx, &batch).await, ["m1", "m2", "m3"]);
    assert_eq!(
        side_effect.runs(),
        ["s:a1"],
        "nothing starts after the throttle"
    );
    // Each comes back after the Retry-After, or its receive count in seconds if longer.
    assert_eq!(
        queue.delays(),
        [("m1".into(), 5), ("m2".into(), 5), ("m3".into(), 5)]
    );
    let a1 = ledger.get("s:a1").await.unwrap().expect("taken");
    assert_eq!(a1.status, Status::Queued, "deferred, not failed");
    assert_eq!((a1.attempts, a1.failures), (1, 0));
    assert_eq!(a1.last_error.as_deref(), Some("throttled: retry after 5 s"));
    assert_eq!(a1.lease_owner, None);
    let a2 = ledger.get("s:a2").await.unwrap().expect("accepted");
    assert_eq!(
        (a2.status, a2.attempts),
        (Status::Received, 0),
        "never taken"
    );
    assert_eq!(count(&lines, Metric::Throttled), 1);
    assert_eq!(count(&lines, Metric::Failed), 0);
    assert!(queue.dead().is_empty());

    // Next time the downstream accepts: it completes, once.
    assert!(failed_ids(&cx, &batch).await.is_empty());
    let a1 = ledger.get("s:a1").await.unwrap().unwrap();
    assert_eq!(
        (a1.status, a1.attempts, a1.failures),
        (Status::Completed, 2, 0)
    );
}

#[tokio::test]
async fn a_message_received_often_waits_at_least_its_receive_count() {
    let (cx, _, side_effect, queue, _) = consumer(settings(1, 5));
    side_effect.answer("s:a1", [throttled(5)]);
    assert_eq!(
        failed_ids(&cx, &[message("m1", "A", "a1", 40)]).await,
        ["m1"]
    );
    assert_eq!(queue.delays(), [("m1".into(), 40)]);
}

#[tokio::test]
async fn a_group_that_ran_before_the_throttle_keeps_its_outcome() {
    // Group B runs first and fails for real: it keeps the visibility timeout (no delay);
    // group A is then throttled.
    let (cx, ledger, side_effect, queue, _) = consumer(settings(1, 5));
    side_effect.answer("s:b1", [failed()]);
    side_effect.answer("s:a1", [throttled(7)]);
    let batch = [
        message("m1", "B", "b1", 1),
        message("m2", "A", "a1", 1),
        message("m3", "C", "c1", 1),
    ];
    assert_eq!(failed_ids(&cx, &batch).await, ["m1", "m2", "m3"]);
    assert_eq!(queue.delays(), [("m2".into(), 7), ("m3".into(), 7)]);
    let b1 = ledger.get("s:b1").await.unwrap().unwrap();
    assert_eq!((b1.status, b1.failures), (Status::Failed, 1));
}

#[tokio::test]
async fn the_max_failures_th_real_failure_dead_letters_throttles_not_counted() {
    let (cx, ledger, side_effect, queue, lines) = consumer(settings(1, 3));
    side_effect.answer(
        "s:a1",
        [
            failed(),
            throttled(1),
            failed(),
            throttled(1),
            failed(),
            failed(),
        ],
    );
    let m = [message("m1", "A", "a1", 1)];
    for run in 1..=4 {
        assert_eq!(failed_ids(&cx, &m).await, ["m1"], "run {run}");
        assert!(queue.dead().is_empty(), "run {run}");
    }
    // The fifth run is the third real failure: copied to the dead-letter queue, reported done.
    assert!(failed_ids(&cx, &m).await.is_empty());
    assert_eq!(queue.dead(), ["m1"]);
    let item = ledger.get("s:a1").await.unwrap().unwrap();
    assert_eq!(
        (item.status, item.attempts, item.failures),
        (Status::Failed, 5, 3)
    );
    assert_eq!(count(&lines, Metric::DeadLettered), 1);
    assert_eq!(count(&lines, Metric::Throttled), 2);
    assert_eq!(count(&lines, Metric::Failed), 3);

    // Redriven, it gets as many tries again: the next failure (the fourth) does not move it.
    assert_eq!(failed_ids(&cx, &m).await, ["m1"]);
    assert_eq!(queue.dead(), ["m1"]);
}

#[tokio::test]
async fn an_unreadable_message_is_dead_lettered_after_max_failures_receives() {
    let (cx, _, _, queue, _) = consumer(settings(1, 3));
    let mut bad = message("m1", "A", "a1", 2);
    bad.body = Some("not an envelope".into());
    assert_eq!(failed_ids(&cx, std::slice::from_ref(&bad)).await, ["m1"]);
    assert!(queue.dead().is_empty());
    bad.attributes
        .insert("ApproximateReceiveCount".into(), "3".into());
    assert!(failed_ids(&cx, &[bad]).await.is_empty());
    assert_eq!(queue.dead(), ["m1"]);
}

#[tokio::test]
async fn a_delay_nearing_the_retention_also_copies_to_the_dead_letter_queue() {
    // The retention is 96 h and the margin 1 h; each message is throttled for an hour.
    // Sent 94.5 h ago: the delay ends half an hour inside the margin, so a copy goes to the
    // dead-letter queue. Sent 93.5 h ago: it ends half an hour before the margin; no copy.
    for (hours_ago_x2, copied) in [(189, true), (187, false)] {
        let (cx, _, side_effect, queue, _) = consumer(settings(1, 5));
        side_effect.answer("s:a1", [throttled(3600)]);
        let mut old = message("m1", "A", "a1", 1);
        let sent = SystemClock.now_ms() - hours_ago_x2 * 1_800_000;
        old.attributes
            .insert("SentTimestamp".into(), sent.to_string());
        assert_eq!(
            failed_ids(&cx, &[old]).await,
            ["m1"],
            "still reported failed"
        );
        let expected: &[&str] = if copied { &["m1"] } else { &[] };
        assert_eq!(queue.dead(), expected, "sent {hours_ago_x2}/2 h ago");
        assert_eq!(queue.delays(), [("m1".into(), 3600)]);
    }
}

#[tokio::test]
async fn without_a_dead_letter_queue_failures_are_left_to_max_receive_count() {
    let (metrics, _) = Metrics::memory("consumer");
    let side_effect = Scripted::default();
    side_effect.answer("s:a1", [failed(), failed()]);
    let cx = Consumer::new(
        SourceSpecs::parse(SOURCES).unwrap(),
        MemoryLedger::new(),
        side_effect,
        SystemClock,
        settings(1, 1),
        metrics,
    )
    .with_redelivery(NoRedelivery);
    let m = [message("m1", "A", "a1", 1)];
    devstack::testkit::accept_messages(cx.ledger(), &m)
        .await
        .expect("accepted");
    for _ in 0..2 {
        let answer = cx.handle_batch(&m, "inv", None).await;
        assert_eq!(answer.batch_item_failures.len(), 1);
    }
}

/// No `FORWARD_URL` and no destination (docs/routing.md): an event completes with no call and
/// is counted `Unrouted` once (a second copy is a `DuplicateDelivery`); an at-most-once
/// source's event, which keeps no item, is counted too and leaves none.
#[tokio::test]
async fn without_a_forward_url_an_event_no_destination_takes_completes_uncalled_as_unrouted() {
    let sources = r#"{"s": {"signature": {"scheme": "none"}, "allow_unsigned": true,
        "key": {"from": "json", "pointers": ["/id"]}, "group": {"from": "json", "pointers": ["/g"]}},
        "once": {"signature": {"scheme": "none"}, "allow_unsigned": true, "delivery": "at_most_once",
        "key": {"from": "json", "pointers": ["/id"]}}}"#;
    let (metrics, lines) = Metrics::memory("consumer");
    let ledger = Arc::new(MemoryLedger::new());
    let side_effect = Scripted::default();
    let cx = Consumer::new(
        SourceSpecs::parse(sources).unwrap(),
        ledger.clone(),
        Some(side_effect.clone()),
        SystemClock,
        settings(2, 5),
        metrics,
    )
    .with_destinations(
        inbox::route::Routes::none().without_forward(),
        inbox::consumer::NoDestinations,
    );
    let first = message("m-1", "g", "e-1", 1);
    devstack::testkit::accept_messages(cx.ledger(), std::slice::from_ref(&first))
        .await
        .expect("accepted");
    let deadline = SystemClock.now_ms() + 30_000;
    let again = message("m-2", "g", "e-1", 1);
    for m in [&first, &again] {
        let answer = cx
            .handle_batch(std::slice::from_ref(m), "inv", Some(deadline))
            .await;
        assert!(answer.batch_item_failures.is_empty());
    }
    assert_eq!(
        ledger.get("s:e-1").await.unwrap().map(|r| r.status),
        Some(Status::Completed)
    );
    assert!(side_effect.runs().is_empty(), "nothing is called");
    assert_eq!(count(&lines, Metric::Unrouted), 1);
    assert_eq!(count(&lines, Metric::DuplicateDelivery), 1);

    let body = r#"{"id":"o-1"}"#;
    let env = Envelope::new(
        "once:o-1",
        "once",
        SystemClock.now_ms(),
        &sha256_hex(body.as_bytes()),
        BTreeMap::new(),
        body.as_bytes(),
    );
    let mut m = SqsMessage::default();
    m.message_id = Some("m-3".into());
    m.body = Some(env.to_json());
    let answer = cx
        .handle_batch(std::slice::from_ref(&m), "inv", Some(deadline))
        .await;
    assert!(answer.batch_item_failures.is_empty());
    assert!(side_effect.runs().is_empty());
    assert_eq!(tally(&lines.lock().unwrap(), "once", Metric::Unrouted), 1);
    assert!(ledger.get("once:o-1").await.unwrap().is_none(), "no item");
}
