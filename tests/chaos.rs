//! Real process death: the storm through both functions as real processes (the receiver and
//! consumer binaries) under the Lambda Runtime API emulator (`devstack::runtime`), with
//! SIGKILL sent to function processes at random moments, receiver and consumer, several times
//! each. Each killed process is replaced, as Lambda replaces an execution environment, and the
//! invocation it held fails as Lambda reports it: the sender sees a 502 and retries; the
//! consumer's batch goes back to the queue (made visible at once, where SQS would wait out the
//! visibility timeout). Then: every accepted event took effect (every key reached the system of
//! record and is COMPLETED in the ledger), nothing else did, and a key reached it more than
//! once only where a consumer died between its side effect and `complete` (bounded by the
//! consumer kills), always with the same `Idempotency-Key`.
//!
//! The same storm with two destinations (docs/routing.md) instead of the forward: a FIFO queue
//! and a standard queue on the local server. Every (event, destination) pair is COMPLETED, the
//! FIFO queue holds each event exactly once (its deduplication id is the key and the
//! destination), the standard queue each at least once and a second copy only where a
//! consumer died between its send and its record.
//!
//! The same storm while a destination's circuit breaker holds its pairs (docs/routing.md,
//! "Breakers"): `crm`'s queue does not exist yet, so every call to it fails, and its breaker
//! starts half-open with the probe of a consumer that died (as a consumer SIGKILLed while it
//! held the probe leaves it). The probe expires, another consumer claims it and fails, the
//! breaker opens; consumers are killed while it is open; then `crm` recovers (its queue is
//! made), a probe closes the breaker, and every (event, destination) pair is COMPLETED, the
//! FIFO destination holding each event once, and nothing was dead-lettered.
//!
//! Bounded in time: 30 events, two deliveries each, and a deadline on every wait.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsBatchResponse;
use devstack::bridge::{Bridge, Round};
use devstack::runtime::{Emulator, FunctionProcess, Outcome, Supervisor};
use devstack::targets;
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{github_headers, LocalAws, SystemOfRecord};
use futures::StreamExt as _;
use inbox::breaker::{Breaker, BreakerBoard as _, Change, State, Transition, Written};
use inbox::destination::PauseBoard;
use inbox::ledger::{LedgerStore, Status};
use inbox::route::destination_key;

const EVENTS: u32 = 30;
const DELIVERIES_PER_EVENT: u32 = 2;
const SENDERS: usize = 8;
/// Kills of each function, at least.
const KILLS: u64 = 4;
/// The functions' timeout here (an invocation's deadline, and the lease of a claim or take).
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(6);
/// The most messages one consumer invocation holds.
const BATCH: u64 = 10;
const DEADLINE: Duration = Duration::from_secs(240);

/// The receiver and consumer binaries: their own sources, built by cargo for this test as
/// bins of the e2e package (tests/Cargo.toml).
fn function_binaries() -> (PathBuf, PathBuf) {
    (
        PathBuf::from(env!("CARGO_BIN_EXE_chaos-receiver")),
        PathBuf::from(env!("CARGO_BIN_EXE_chaos-consumer")),
    )
}

/// A small deterministic generator (no crate needed): the kill schedule.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

fn body(event: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{event}}}"#).into_bytes()
}

/// One delivery through API Gateway as a sender sees it: a dead invocation is a 502, and
/// 5xx and 503 are retried. Returns the statuses seen.
async fn deliver(emu: &Emulator, event: u32, started: Instant) -> Vec<u16> {
    let id = format!("chaos-{event}");
    let body = body(event);
    let request = ApiGatewayEvent::post("github")
        .headers(github_headers(&id, &body))
        .body(&body)
        .to_json()
        .to_string()
        .into_bytes();
    let mut seen = Vec::new();
    let mut pause = Duration::from_millis(50);
    while started.elapsed() < DEADLINE {
        let status = match emu.invoke(request.clone()).await.expect("invoked") {
            Outcome::Response(bytes) => {
                let resp: serde_json::Value =
                    serde_json::from_slice(&bytes).expect("an API Gateway response");
                resp["statusCode"].as_u64().expect("statusCode") as u16
            }
            // A function error or a dead process: API Gateway answers 502.
            Outcome::Error(_) => 502,
        };
        seen.push(status);
        match status {
            200 => return seen,
            500 | 502 | 503 => {}
            other => panic!("{id}: unexpected {other} after {seen:?}"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
    panic!("{id}: no 200 within the deadline: {seen:?}");
}

/// One round of the event source mapping: receive, invoke the consumer under the emulator,
/// settle. A consumer that died with its process fails the whole batch, which goes back.
async fn consume_round(bridge: &Bridge, cx_emu: &Emulator) -> Option<Round> {
    bridge
        .pump_once(|event| async move {
            let bytes = serde_json::to_vec(&event)?;
            Ok(match cx_emu.invoke(bytes).await? {
                Outcome::Response(b) => serde_json::from_slice::<SqsBatchResponse>(&b)?,
                // The invocation died with its process: the whole batch goes back.
                Outcome::Error(_) => {
                    let mut all_failed = SqsBatchResponse::default();
                    for r in &event.records {
                        let mut f = aws_lambda_events::sqs::BatchItemFailure::default();
                        f.item_identifier = r.message_id.clone().unwrap_or_default();
                        all_failed.batch_item_failures.push(f);
                    }
                    all_failed
                }
            })
        })
        .await
        .expect("a bridge round")
}

/// The storm's processes, queue and counts, once every event took effect.
struct Storm {
    cx_emu: Emulator,
    receivers: Supervisor,
    consumers: Supervisor,
    bridge: Bridge,
    started: Instant,
    /// The statuses each delivery saw.
    answers: Vec<Vec<u16>>,
    rx_kills: u64,
    cx_kills: u64,
}

impl Storm {
    /// What is left on the queue (redeliveries of completed keys) runs out.
    async fn drain_rest(&self) {
        while consume_round(&self.bridge, &self.cx_emu).await.is_some() {
            assert!(self.started.elapsed() < DEADLINE, "the queue did not drain");
        }
    }

    /// Every delivery was answered 200 in the end; the kills happened, each process killed
    /// was replaced, and no other died.
    fn check_answers_and_kills(&self) {
        assert!(
            self.answers.iter().all(|a| a.last() == Some(&200)),
            "{:?}",
            self.answers
        );
        assert!(self.rx_kills >= KILLS && self.cx_kills >= KILLS);
        assert_eq!(
            (self.receivers.restarts(), self.consumers.restarts()),
            (self.rx_kills, self.cx_kills),
            "restarts (receivers, consumers) against kills"
        );
    }

    fn summary(&self) -> String {
        format!(
            "{} deliveries, {} receiver and {} consumer kills ({} and {} invocations died with \
             their process), in {:.1?}",
            self.answers.len(),
            self.rx_kills,
            self.cx_kills,
            self.receivers.failed_invocations.load(Ordering::SeqCst),
            self.consumers.failed_invocations.load(Ordering::SeqCst),
            self.started.elapsed()
        )
    }
}

/// The keys the storm delivers.
fn storm_keys() -> BTreeSet<String> {
    (0..EVENTS).map(|e| format!("github:chaos-{e}")).collect()
}

/// The kills so far, receivers' and consumers' (read by a test while its storm runs).
#[derive(Default)]
struct Kills {
    rx: AtomicU64,
    cx: AtomicU64,
    /// While set, the killer goes on killing (past its `KILLS` and the senders' end).
    more: AtomicBool,
}

/// Runs the storm through both binaries on `aws`'s stack (the consumer's environment with
/// `consumer_extra` over it) while killing processes, until `done` says every event took
/// effect; `kills` counts the kills as they happen.
#[allow(
    clippy::too_many_lines,
    reason = "the storm read top to bottom: processes, senders, killer, pumps"
)]
async fn storm<F, Fut>(
    aws: &LocalAws,
    consumer_extra: &[(&str, &str)],
    done: F,
    kills: &Kills,
) -> Storm
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let (receiver_bin, consumer_bin) = function_binaries();
    let endpoint = devstack::moto::shared().to_owned();
    let env = |function: &devstack::cloudformation::Function, extra: &[(&str, &str)]| {
        let mut env: Vec<(String, String)> = function
            .environment
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("AWS_ENDPOINT_URL".into(), endpoint.clone()));
        for (k, v) in extra {
            env.push(((*k).to_owned(), (*v).to_owned()));
        }
        env
    };
    let receiver = FunctionProcess {
        name: "receiver".into(),
        program: receiver_bin,
        env: env(&aws.stack.receiver, &[]),
    };
    let consumer = FunctionProcess {
        name: "consumer".into(),
        program: consumer_bin,
        env: env(&aws.stack.consumer, consumer_extra),
    };
    let rx_emu = Emulator::with_timeout(FUNCTION_TIMEOUT)
        .await
        .expect("receiver runtime");
    let cx_emu = Emulator::with_timeout(FUNCTION_TIMEOUT)
        .await
        .expect("consumer runtime");
    let receivers = Supervisor::start(receiver, &rx_emu, 2)
        .await
        .expect("receiver processes");
    let consumers = Supervisor::start(consumer, &cx_emu, 2)
        .await
        .expect("consumer processes");
    rx_emu
        .wait_for_polls(2, Duration::from_secs(60))
        .await
        .expect("the receivers started");
    cx_emu
        .wait_for_polls(2, Duration::from_secs(60))
        .await
        .expect("the consumers started");

    let mut bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    bridge.retry_failed_now = true;
    let started = Instant::now();
    let senders_done = AtomicBool::new(false);
    let (rx_kills, cx_kills) = (&kills.rx, &kills.cx);

    let senders = async {
        let order: Vec<u32> = (0..EVENTS * DELIVERIES_PER_EVENT)
            .map(|i| (i * 7) % EVENTS)
            .collect();
        let answers: Vec<Vec<u16>> = futures::stream::iter(order)
            .map(|event| deliver(&rx_emu, event, started))
            .buffer_unordered(SENDERS)
            .collect()
            .await;
        senders_done.store(true, Ordering::SeqCst);
        answers
    };
    let killer = async {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        while rx_kills.load(Ordering::SeqCst) < KILLS
            || cx_kills.load(Ordering::SeqCst) < KILLS
            || !senders_done.load(Ordering::SeqCst)
            || kills.more.load(Ordering::SeqCst)
        {
            assert!(started.elapsed() < DEADLINE, "the kills did not finish");
            tokio::time::sleep(Duration::from_millis(150 + rng.next(600))).await;
            if senders_done.load(Ordering::SeqCst)
                && rx_kills.load(Ordering::SeqCst) >= KILLS
                && cx_kills.load(Ordering::SeqCst) >= KILLS
                && !kills.more.load(Ordering::SeqCst)
            {
                break;
            }
            let which = rng.next(2);
            let instance = rng.next(2) as usize;
            if which == 0 {
                receivers
                    .kill_one(instance)
                    .await
                    .expect("a receiver replaced");
                rx_kills.fetch_add(1, Ordering::SeqCst);
            } else {
                consumers
                    .kill_one(instance)
                    .await
                    .expect("a consumer replaced");
                cx_kills.fetch_add(1, Ordering::SeqCst);
            }
        }
    };
    let cx_emu_ref = &cx_emu;
    let (bridge_ref, done_ref, senders_done_ref) = (&bridge, &done, &senders_done);
    let pump = || async move {
        loop {
            if senders_done_ref.load(Ordering::SeqCst) && done_ref().await {
                return;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "not every event took effect in time"
            );
            let round = consume_round(bridge_ref, cx_emu_ref).await;
            if round.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let (answers, (), (), ()) = tokio::join!(senders, killer, pump(), pump());
    Storm {
        cx_emu,
        receivers,
        consumers,
        bridge,
        started,
        answers,
        rx_kills: rx_kills.load(Ordering::SeqCst),
        cx_kills: cx_kills.load(Ordering::SeqCst),
    }
}

/// Whether every key's item (and each of its pairs with `destinations`) is COMPLETED.
async fn all_completed(
    ledger: &impl LedgerStore,
    keys: &BTreeSet<String>,
    destinations: &[&str],
) -> bool {
    for key in keys {
        let items = std::iter::once(key.clone())
            .chain(destinations.iter().map(|d| destination_key(key, d)));
        for item in items {
            let found = ledger.get(&item).await.expect("get");
            if found.map(|i| i.status) != Some(Status::Completed) {
                return false;
            }
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_functions_lose_and_double_nothing() {
    let aws = LocalAws::new("chaos").await;
    let sor = SystemOfRecord::start();
    let keys = storm_keys();
    let ledger = aws.ledger();
    // Done when every key is COMPLETED in the ledger, not merely applied: a consumer killed
    // between the side effect and `complete` leaves its key PROCESSING until the lease runs
    // out, and only the message's next delivery completes it.
    let done = || async {
        keys.iter().all(|k| sor.applied_for(k) > 0) && all_completed(&ledger, &keys, &[]).await
    };
    let storm = storm(&aws, &[("FORWARD_URL", sor.url())], done, &Kills::default()).await;
    storm.check_answers_and_kills();

    // What is left on the queue (redeliveries of completed keys) runs out without a call.
    let at_completion = sor.applied();
    storm.drain_rest().await;
    let applied = sor.applied();
    assert_eq!(
        applied, at_completion,
        "calls after every key was COMPLETED"
    );

    // Nothing lost, nothing invented: exactly the accepted keys reached the system of record,
    // always under their own Idempotency-Key, and every one is COMPLETED.
    assert_eq!(
        applied.keys().cloned().collect::<BTreeSet<_>>(),
        keys,
        "the keys the system of record applied"
    );
    assert!(all_completed(&ledger, &keys, &[]).await);
    // Exactly once, for a system of record that honours the Idempotency-Key; a second call
    // of a key only where a consumer died between its side effect and `complete`.
    let extra: u64 = applied.values().map(|n| n - 1).sum();
    assert!(
        extra <= storm.cx_kills * BATCH,
        "{extra} repeated calls for {} consumer kills: {applied:?}",
        storm.cx_kills
    );
    println!(
        "chaos: {}, {} keys applied, {extra} repeated calls",
        storm.summary(),
        applied.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_functions_apply_each_destination_once() {
    let ledger_q = format!("{}.fifo", devstack::testkit::unique("chaos-ledger"));
    let crm_q = devstack::testkit::unique("chaos-crm");
    // The queues are named before the stack, which names them in Destinations.
    let aws = LocalAws::with_destinations(
        "chaos-dest",
        &serde_json::json!({
            "ledger": {"target": format!("arn:aws:sqs:us-east-1:123456789012:{ledger_q}"), "sources": ["github"]},
            "crm": {"target": format!("arn:aws:sqs:us-east-1:123456789012:{crm_q}"), "sources": ["github"]},
        })
        .to_string(),
    )
    .await;
    let (ledger_url, _) = targets::queue(&aws.sqs, &ledger_q, true)
        .await
        .expect("the ledger's queue");
    let (crm_url, _) = targets::queue(&aws.sqs, &crm_q, false)
        .await
        .expect("the CRM's queue");
    let keys = storm_keys();
    let ledger = aws.ledger();
    let destinations = ["ledger", "crm"];
    let done = || all_completed(&ledger, &keys, &destinations);
    let storm = storm(&aws, &[], done, &Kills::default()).await;
    storm.check_answers_and_kills();
    storm.drain_rest().await;
    assert!(all_completed(&ledger, &keys, &destinations).await);

    // The FIFO destination: each event exactly once (deduplicated by key and destination).
    let fifo = targets::received_by_key(&aws.sqs, &ledger_url)
        .await
        .expect("receive");
    assert_eq!(fifo.keys().cloned().collect::<BTreeSet<_>>(), keys);
    assert!(fifo.values().all(|n| *n == 1), "{fifo:?}");
    // The standard queue: each at least once, a second copy only for a consumer's death.
    let standard = targets::received_by_key(&aws.sqs, &crm_url)
        .await
        .expect("receive");
    assert_eq!(standard.keys().cloned().collect::<BTreeSet<_>>(), keys);
    let extra: u64 = standard.values().map(|n| n - 1).sum();
    assert!(
        extra <= storm.cx_kills * BATCH,
        "{extra} repeated sends for {} consumer kills: {standard:?}",
        storm.cx_kills
    );
    println!(
        "chaos with two destinations: {}, {extra} repeated sends to the standard queue",
        storm.summary()
    );
}

/// The epoch milliseconds now.
fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("milliseconds fit")
}

/// `crm`'s breaker on the board (closed, version 0, where never written).
async fn crm_breaker(board: &PauseBoard) -> Breaker {
    board
        .read()
        .await
        .expect("the pause board")
        .breakers
        .get("crm")
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario top to bottom: the dead probe, the storm, the recovery, the checks"
)]
async fn sigkilled_consumers_while_a_breaker_holds_apply_each_pair_once() {
    let ledger_q = format!("{}.fifo", devstack::testkit::unique("chaos-brk-ledger"));
    let crm_q = devstack::testkit::unique("chaos-brk-crm");
    let aws = LocalAws::with_destinations(
        "chaos-breaker",
        &serde_json::json!({
            "ledger": {"target": format!("arn:aws:sqs:us-east-1:123456789012:{ledger_q}"), "sources": ["github"]},
            "crm": {"target": format!("arn:aws:sqs:us-east-1:123456789012:{crm_q}"), "sources": ["github"],
                    "breaker": {"failures": 2, "cool_down_seconds": 1}},
        })
        .to_string(),
    )
    .await;
    let (ledger_url, _) = targets::queue(&aws.sqs, &ledger_q, true)
        .await
        .expect("the ledger's queue");
    // `crm`'s queue is not made yet: every SendMessage to it fails.
    let board = PauseBoard::new(aws.dynamo.clone(), &aws.resources.table);
    // The probe of a consumer that died: half-open, its owner gone, its lease ending soon.
    let now = now_ms();
    let dead_probe = Breaker {
        state: State::HalfOpen {
            opened_at_ms: now,
            probe_owner: "a-dead-consumer:m-0".into(),
            probe_until_ms: now + 3_000,
        },
        version: 1,
    };
    let staged = Transition {
        from: Breaker::default(),
        to: dead_probe.clone(),
        change: Change::ProbeClaimed,
    };
    assert_eq!(board.write("crm", &staged).await, Ok(Written::Applied));

    let keys = storm_keys();
    let ledger = aws.ledger();
    let destinations = ["ledger", "crm"];
    let kills = Kills::default();
    kills.more.store(true, Ordering::SeqCst);
    let healed = AtomicBool::new(false);
    let done = || async {
        healed.load(Ordering::SeqCst) && all_completed(&ledger, &keys, &destinations).await
    };
    let started = Instant::now();
    // `crm` recovers once another consumer claimed the dead probe and failed it (the breaker
    // open again, past the staged version) and two consumers were killed while it was open.
    let recover = async {
        let mut open_at_kills = None;
        let mut states = BTreeSet::new();
        loop {
            assert!(
                started.elapsed() < DEADLINE,
                "the breaker never opened: {states:?}"
            );
            let b = crm_breaker(&board).await;
            states.insert(format!("{} v{}", b.state.name(), b.version));
            if b.version > dead_probe.version && matches!(b.state, State::Open { .. }) {
                open_at_kills.get_or_insert(kills.cx.load(Ordering::SeqCst));
            }
            if open_at_kills.is_some_and(|k| kills.cx.load(Ordering::SeqCst) >= k + 2) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        targets::queue(&aws.sqs, &crm_q, false)
            .await
            .expect("the CRM's queue, at last");
        healed.store(true, Ordering::SeqCst);
        kills.more.store(false, Ordering::SeqCst);
        states
    };
    // A held pair counts no failure; MAX_FAILURES high, so that the failed probes alone never
    // dead-letter an event either: the dead-letter queue must stay empty.
    let (storm, states) = tokio::join!(
        storm(&aws, &[("MAX_FAILURES", "1000")], done, &kills),
        recover
    );
    storm.check_answers_and_kills();
    storm.drain_rest().await;
    assert!(all_completed(&ledger, &keys, &destinations).await);

    // The dead probe expired and another consumer claimed it (nothing else moves a breaker
    // from another owner's probe), the probes failed until `crm` recovered, and one closed it.
    let last = crm_breaker(&board).await;
    assert_eq!(last.state, State::Closed { failures: 0 }, "{states:?}");
    assert!(
        last.version >= dead_probe.version + 3,
        "claimed, failed, claimed again, closed: {last:?} after {states:?}"
    );
    // Every pair applied: the FIFO destination holds each event once, the standard queue
    // each at least once (a second copy only for a consumer's death between its send and
    // its record).
    let fifo = targets::received_by_key(&aws.sqs, &ledger_url)
        .await
        .expect("receive");
    assert_eq!(fifo.keys().cloned().collect::<BTreeSet<_>>(), keys);
    assert!(fifo.values().all(|n| *n == 1), "{fifo:?}");
    let crm_url = aws
        .sqs
        .get_queue_url()
        .queue_name(&crm_q)
        .send()
        .await
        .expect("the CRM's queue")
        .queue_url()
        .unwrap_or_default()
        .to_owned();
    let crm = targets::received_by_key(&aws.sqs, &crm_url)
        .await
        .expect("receive");
    assert_eq!(crm.keys().cloned().collect::<BTreeSet<_>>(), keys);
    let extra: u64 = crm.values().map(|n| n - 1).sum();
    assert!(
        extra <= storm.cx_kills * BATCH,
        "{extra} repeated sends for {} consumer kills: {crm:?}",
        storm.cx_kills
    );
    // Nothing dead-lettered: not for being held, not at all.
    let dead = targets::received_by_key(&aws.sqs, &aws.resources.dlq_url)
        .await
        .expect("receive");
    assert!(dead.is_empty(), "dead-lettered: {dead:?}");
    println!(
        "chaos with a breaker: {}, breaker states seen {states:?}, {extra} repeated sends to crm",
        storm.summary()
    );
}
