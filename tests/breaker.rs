//! Circuit breakers per destination on the local AWS API server (docs/routing.md#breakers): the
//! real consumer, ledger, queue and pause board (moto evaluates the writes' conditions), a
//! destination that the test turns down, up or throttling, and a clock the test moves (no
//! cool-down is waited out).
//!
//! - a throttling destination never counts toward its breaker;
//! - a destination that fails `failures` times opens: its pairs are held (no failure counted,
//!   nothing dead-lettered, however many receives), the other destination goes on; after the
//!   cool-down two consumers race and one event is tried (its failure opens the breaker again);
//!   after the next cool-down the probe succeeds, the breaker closes and every pair completes
//!   once;
//! - consumers racing on the board agree: failures counted from one stale read are both
//!   counted, and of eight claims of the probe one wins;
//! - `resume --destination` closes an open breaker by hand;
//! - a held message near the end of the queue's retention is sent to the queue again, not to
//!   the dead-letter queue.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use devstack::testkit::LocalAws;
use inbox::archive::NoArchive;
use inbox::breaker::{apply, Breaker, BreakerBoard as _, Change, Gate, Observed, Rule, State};
use inbox::bucket::NoBucket;
use inbox::clock::{Clock as _, ManualClock, SystemClock};
use inbox::consumer::{
    Board, Consumer, ConsumerSettings, Destinations, Job, Outcome, ProcessError, Wiring,
};
use inbox::destination::pause::PauseBoard;
use inbox::forward::HttpForwarder;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::metrics::Metrics;
use inbox::queue::QueueError;
use inbox::redelivery::{Redelivery, SqsRedelivery};
use inbox::route::{destination_key, Routes};

use crate::destinations::{deliver_github, specs, unused_forward};
use crate::support::bridge;

/// `flaky` opens after three consecutive failures and tries again after a minute; `steady`
/// never fails.
const FLAKY_AND_STEADY: &str = r#"{
    "flaky": {"target": "https://flaky.example/in", "sources": ["github"],
              "breaker": {"failures": 3, "cool_down_seconds": 60}},
    "steady": {"target": "https://steady.example/in", "sources": ["github"]}}"#;

const COOL_DOWN_MS: i64 = 60_000;

/// What `flaky` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Up,
    Down,
    Throttling,
}

/// The two destinations, in memory, over the stack's real pause board: every call counted,
/// every applied call counted per (destination, key).
#[derive(Clone)]
struct TwoDestinations {
    board: PauseBoard,
    mode: Arc<Mutex<Mode>>,
    calls: Arc<Mutex<BTreeMap<(String, String), u32>>>,
    applied: Arc<Mutex<BTreeMap<(String, String), u32>>>,
}

impl TwoDestinations {
    fn new(aws: &LocalAws) -> Self {
        TwoDestinations {
            board: PauseBoard::new(aws.dynamo.clone(), &aws.resources.table),
            mode: Arc::new(Mutex::new(Mode::Up)),
            calls: Arc::default(),
            applied: Arc::default(),
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().expect("mode") = mode;
    }

    fn calls(&self, destination: &str) -> u32 {
        let calls = self.calls.lock().expect("calls");
        calls
            .iter()
            .filter(|((d, _), _)| d == destination)
            .map(|(_, n)| n)
            .sum()
    }

    fn applied(&self, destination: &str, key: &str) -> u32 {
        let applied = self.applied.lock().expect("applied");
        applied
            .get(&(destination.to_owned(), key.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    async fn breaker(&self, destination: &str) -> Breaker {
        self.board
            .breakers()
            .await
            .expect("the board reads")
            .remove(destination)
            .unwrap_or_default()
    }
}

impl Destinations for TwoDestinations {
    async fn deliver(&self, destination: &str, job: &Job) -> Outcome {
        let pair = (destination.to_owned(), job.key.clone());
        *self
            .calls
            .lock()
            .expect("calls")
            .entry(pair.clone())
            .or_default() += 1;
        let mode = *self.mode.lock().expect("mode");
        match (destination, mode) {
            ("flaky", Mode::Down) => Outcome::Failed(ProcessError("flaky answered 503".into())),
            ("flaky", Mode::Throttling) => Outcome::Throttled {
                retry_after: Duration::from_secs(1),
                reason: ProcessError("flaky answered 429".into()),
            },
            _ => {
                *self
                    .applied
                    .lock()
                    .expect("applied")
                    .entry(pair)
                    .or_default() += 1;
                Outcome::Done
            }
        }
    }

    async fn paused(&self) -> Result<std::collections::BTreeSet<String>, String> {
        self.board.paused().await
    }

    fn keeps_breakers(&self) -> bool {
        true
    }

    async fn board(&self) -> Result<Board, String> {
        self.board.read().await
    }

    async fn write_breaker(
        &self,
        destination: &str,
        t: &inbox::breaker::Transition,
    ) -> Result<inbox::breaker::Written, String> {
        self.board.write(destination, t).await
    }
}

/// The stack's queues, a delay refused (so that the bridge shows a held message again at once,
/// as the queue would after its delay) and dead letters really sent.
#[derive(Clone)]
struct NoDelay(SqsRedelivery);

impl Redelivery for NoDelay {
    async fn delay(&self, _message: &SqsMessage, _seconds: u32) -> Result<(), QueueError> {
        Err(QueueError(
            "the test shows a delayed message again at once".into(),
        ))
    }
    async fn dead_letter(&self, message: &SqsMessage) -> Result<(), QueueError> {
        self.0.dead_letter(message).await
    }
    fn dead_letters(&self) -> bool {
        self.0.dead_letters()
    }
    async fn resend(&self, message: &SqsMessage) -> Result<(), QueueError> {
        self.0.resend(message).await
    }
}

type BreakerConsumer<R> = Consumer<
    DynamoLedger,
    HttpForwarder,
    ManualClock,
    inbox::consumer::WithRedelivery<
        Wiring<inbox::redelivery::NoRedelivery, NoBucket, NoArchive, TwoDestinations>,
        R,
    >,
>;

fn redelivery(aws: &LocalAws) -> SqsRedelivery {
    SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    )
}

/// The consumer over the stack's sources with `flaky` and `steady`, on `clock`; its metric
/// lines.
fn consumer<R: Redelivery>(
    aws: &LocalAws,
    targets: &TwoDestinations,
    clock: &ManualClock,
    settings: ConsumerSettings,
    redelivery: R,
) -> (BreakerConsumer<R>, devstack::testkit::MetricLines) {
    let specs = specs(aws);
    let routes = Routes::parse(FLAKY_AND_STEADY, &specs).expect("routes");
    let (metrics, lines) = Metrics::memory("consumer");
    let cx = Consumer::new(
        specs,
        aws.ledger(),
        unused_forward(),
        clock.clone(),
        settings,
        metrics,
    )
    .with_destinations(routes, targets.clone())
    .with_redelivery(redelivery);
    (cx, lines)
}

/// Dead-lettering at a pair's tenth real failure: more receives than that while held must
/// dead-letter nothing.
fn settings() -> ConsumerSettings {
    ConsumerSettings {
        max_failures: 10,
        ..ConsumerSettings::default()
    }
}

/// How many lines count `metric` for `destination`.
fn counted(lines: &devstack::testkit::MetricLines, metric: &str, destination: &str) -> usize {
    lines
        .lock()
        .expect("lines")
        .iter()
        .filter(|l| {
            l.contains(&format!(r#""{metric}":1"#))
                && l.contains(&format!(r#""destination":"{destination}""#))
        })
        .count()
}

async fn dead_letters(aws: &LocalAws) -> usize {
    aws.receive_all(&aws.resources.dlq_url).await.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario read top to bottom: throttled, opened, held, probed twice, closed"
)]
async fn a_failing_destination_opens_holds_its_pairs_and_closes_after_one_probe() {
    let aws = LocalAws::new("breaker").await;
    let targets = TwoDestinations::new(&aws);
    let clock = ManualClock::at_ms(SystemClock.now_ms());
    let (cx, lines) = consumer(
        &aws,
        &targets,
        &clock,
        settings(),
        NoDelay(redelivery(&aws)),
    );
    let (cx2, lines2) = consumer(
        &aws,
        &targets,
        &clock,
        settings(),
        NoDelay(redelivery(&aws)),
    );
    let (cx, cx2) = (&cx, &cx2);
    let ids = ["b-1", "b-2", "b-3", "b-4", "b-5", "b-6"];
    deliver_github(&aws, &ids).await;
    let b = bridge(&aws).await;
    let round = |n: usize| {
        let b = &b;
        async move {
            b.pump_once(|e| async move {
                Ok(cx.handle_batch(&e.records, &format!("req-{n}"), None).await)
            })
            .await
            .expect("pump")
        }
    };

    // Throttling never counts: nothing is written to the board.
    targets.set(Mode::Throttling);
    round(0).await.expect("a round");
    assert!(targets.calls("flaky") >= 1);
    assert_eq!(targets.breaker("flaky").await, Breaker::default());

    // Down: the third consecutive failure opens it; `steady` goes on.
    targets.set(Mode::Down);
    let mut n = 1;
    while matches!(targets.breaker("flaky").await.state, State::Closed { .. }) {
        round(n).await.expect("messages wait while it is closed");
        n += 1;
        assert!(n < 10, "the breaker never opened");
    }
    let opened = targets.breaker("flaky").await;
    assert!(matches!(opened.state, State::Open { .. }), "{opened:?}");
    assert_eq!(counted(&lines, "BreakerOpened", "flaky"), 1);
    let calls_when_opened = targets.calls("flaky");
    assert!(calls_when_opened >= 3, "{calls_when_opened}");

    // Held: more rounds than MAX_FAILURES, no call, no failure counted, nothing dead-lettered.
    for _ in 0..12 {
        round(n).await.expect("the held messages come back");
        n += 1;
    }
    assert_eq!(
        targets.calls("flaky"),
        calls_when_opened,
        "held, not called"
    );
    assert_eq!(
        targets.breaker("flaky").await,
        opened,
        "nothing written while held"
    );
    for id in ids {
        let key = format!("github:{id}");
        assert_eq!(
            targets.applied("steady", &key),
            1,
            "steady goes on for {key}"
        );
        if let Some(pair) = aws
            .ledger()
            .get(&destination_key(&key, "flaky"))
            .await
            .expect("get")
        {
            assert!(pair.failures < 10, "{key}: {} failures", pair.failures);
        }
        let event = aws
            .ledger()
            .get(&key)
            .await
            .expect("get")
            .expect("the event");
        assert_ne!(event.status, Status::Completed, "{key} waits for flaky");
    }
    assert_eq!(
        dead_letters(&aws).await,
        0,
        "nothing dead-lettered for being held"
    );

    // The cool-down over: two consumers race, one event is tried; it fails, and the breaker
    // opens again from now.
    clock.advance_ms(COOL_DOWN_MS);
    let probe_round = |n: usize| {
        let b = &b;
        async move {
            let one = b.pump_once(|e| async move {
                Ok(cx.handle_batch(&e.records, &format!("req-{n}"), None).await)
            });
            let two = b.pump_once(|e| async move {
                Ok(cx2
                    .handle_batch(&e.records, &format!("req2-{n}"), None)
                    .await)
            });
            let (one, two) = tokio::join!(one, two);
            one.expect("pump");
            two.expect("pump");
        }
    };
    probe_round(n).await;
    n += 1;
    assert_eq!(targets.calls("flaky"), calls_when_opened + 1, "one probe");
    let reopened = targets.breaker("flaky").await;
    assert_eq!(
        reopened.state,
        State::Open {
            opened_at_ms: clock.now_ms()
        }
    );
    assert_eq!(
        counted(&lines, "BreakerOpened", "flaky") + counted(&lines2, "BreakerOpened", "flaky"),
        2
    );
    round(n).await.expect("held again");
    n += 1;
    assert_eq!(targets.calls("flaky"), calls_when_opened + 1, "held again");

    // Recovered: after the next cool-down the probe succeeds, the breaker closes, and every
    // pair completes once.
    targets.set(Mode::Up);
    clock.advance_ms(COOL_DOWN_MS);
    probe_round(n).await;
    n += 1;
    assert_eq!(
        targets.breaker("flaky").await.state,
        State::Closed { failures: 0 }
    );
    assert_eq!(
        counted(&lines, "BreakerClosed", "flaky") + counted(&lines2, "BreakerClosed", "flaky"),
        1
    );
    while round(n).await.is_some() {
        n += 1;
        assert!(n < 60, "the queue did not drain");
    }
    for id in ids {
        let key = format!("github:{id}");
        assert_eq!(
            targets.applied("flaky", &key),
            1,
            "flaky applied {key} once"
        );
        assert_eq!(
            targets.applied("steady", &key),
            1,
            "steady applied {key} once"
        );
        let event = aws
            .ledger()
            .get(&key)
            .await
            .expect("get")
            .expect("the event");
        assert_eq!(event.status, Status::Completed, "{key}");
    }
    assert_eq!(dead_letters(&aws).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_racing_on_the_board_agree_through_its_conditions() {
    let aws = LocalAws::new("breaker-race").await;
    let board = PauseBoard::new(aws.dynamo.clone(), &aws.resources.table);
    let rule = Rule {
        failures: 2,
        cool_down: Duration::from_secs(60),
    };
    // Two consumers read the same closed breaker and both fail: both failures count.
    let seen = Breaker::default();
    let fail = |b: &Breaker| b.observe(&rule, 1_000, "x", Observed::Failure);
    let (first, _) = apply(&board, "d", seen.clone(), fail).await.expect("write");
    assert_eq!(first.map(|t| t.change), Some(Change::Counted));
    let (second, now) = apply(&board, "d", seen, fail).await.expect("write");
    assert_eq!(second.map(|t| t.change), Some(Change::Opened));
    assert_eq!(
        now.state,
        State::Open {
            opened_at_ms: 1_000
        }
    );
    // Eight consumers race for the probe from the same read: one claims it.
    let seen = board
        .breakers()
        .await
        .expect("read")
        .remove("d")
        .expect("written");
    let claims = (0..8).map(|i| {
        let (board, seen) = (board.clone(), seen.clone());
        tokio::spawn(async move {
            let owner = format!("req-{i}:m");
            apply(&board, "d", seen, |b| {
                match b.gate(&rule, 61_000, &owner, 90_000) {
                    Gate::Claim(t) => Some(t),
                    Gate::Pass | Gate::Hold => None,
                }
            })
            .await
            .expect("write")
            .0
        })
    });
    let mut won = 0;
    for claim in futures::future::join_all(claims).await {
        won += usize::from(claim.expect("the task").is_some());
    }
    assert_eq!(won, 1, "one probe");
    // The pauses stand beside the breakers on the one item, read by one call.
    board.set("d", true).await.expect("pause");
    let read = board.read().await.expect("read");
    assert!(read.paused.contains("d"));
    assert!(matches!(read.breakers["d"].state, State::HalfOpen { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_destination_closes_its_breaker_by_hand() {
    let aws = LocalAws::new("breaker-resume").await;
    let board = PauseBoard::new(aws.dynamo.clone(), &aws.resources.table);
    let rule = Rule {
        failures: 1,
        cool_down: Duration::from_secs(3_600),
    };
    apply(&board, "flaky", Breaker::default(), |b| {
        b.observe(&rule, 5, "x", Observed::Failure)
    })
    .await
    .expect("opened");
    let out = inbox_ops::destination_pause::switch(&board, "flaky", false)
        .await
        .expect("resume");
    assert_eq!(
        out,
        "breaker: destination flaky closed (it was open)\npaused destinations: none\n"
    );
    let b = board
        .breakers()
        .await
        .expect("read")
        .remove("flaky")
        .expect("written");
    assert_eq!(b.state, State::Closed { failures: 0 });
    // Twice is once: nothing more to close.
    let out = inbox_ops::destination_pause::switch(&board, "flaky", false)
        .await
        .expect("resume");
    assert_eq!(out, "paused destinations: none\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_message_near_the_queue_s_retention_is_sent_again_not_dead_lettered() {
    let aws = LocalAws::new("breaker-bound").await;
    let targets = TwoDestinations::new(&aws);
    let clock = ManualClock::at_ms(SystemClock.now_ms());
    // The queue said to keep messages an hour: a held message's wait brings it within the
    // margin of its end at once.
    let near = ConsumerSettings {
        queue_retention_seconds: Some(3_600),
        ..settings()
    };
    let (cx, lines) = consumer(&aws, &targets, &clock, near, redelivery(&aws));
    let rule = Rule {
        failures: 1,
        cool_down: Duration::from_secs(60),
    };
    apply(&targets.board, "flaky", Breaker::default(), |b| {
        b.observe(&rule, clock.now_ms(), "x", Observed::Failure)
    })
    .await
    .expect("opened");
    deliver_github(&aws, &["n-1"]).await;
    let first = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(first.len(), 1);
    let b = bridge(&aws).await;
    // What the bridge received first goes back, so that the consumer gets it through the bridge.
    for m in &first {
        aws.sqs
            .change_message_visibility()
            .queue_url(&aws.resources.queue_url)
            .receipt_handle(m.receipt_handle().unwrap_or_default())
            .visibility_timeout(0)
            .send()
            .await
            .expect("visible again");
    }
    let cx = &cx;
    let round = b
        .pump_once(|e| async move { Ok(cx.handle_batch(&e.records, "req-1", None).await) })
        .await
        .expect("pump")
        .expect("a round");
    assert_eq!((round.received, round.deleted), (1, 1), "{round:?}");
    let again = aws.receive_all(&aws.resources.queue_url).await;
    assert_eq!(again.len(), 1, "sent again as a fresh message");
    assert_eq!(again[0].body(), first[0].body());
    assert_ne!(again[0].message_id(), first[0].message_id());
    assert_eq!(dead_letters(&aws).await, 0);
    assert_eq!(targets.calls("flaky"), 0);
    assert_eq!(targets.applied("steady", "github:n-1"), 1);
    let resent = lines
        .lock()
        .expect("lines")
        .iter()
        .filter(|l| l.contains(r#""HeldResent":1"#) && l.contains(r#""source":"github""#))
        .count();
    assert_eq!(resent, 1);
}
