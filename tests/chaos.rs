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
//! Bounded in time: 30 events, two deliveries each, and a deadline on every wait.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsBatchResponse;
use devstack::bridge::{Bridge, Round};
use devstack::runtime::{Emulator, FunctionProcess, Outcome, Supervisor};
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{github_headers, LocalAws, SystemOfRecord};
use futures::StreamExt as _;
use inbox::ledger::{LedgerStore, Status};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn sigkilled_functions_lose_and_double_nothing() {
    let (receiver_bin, consumer_bin) = function_binaries();
    let aws = LocalAws::new("chaos").await;
    let sor = SystemOfRecord::start();
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
        env: env(&aws.stack.consumer, &[("FORWARD_URL", sor.url())]),
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
    let (rx_kills, cx_kills) = (AtomicU64::new(0), AtomicU64::new(0));
    let keys: BTreeSet<String> = (0..EVENTS).map(|e| format!("github:chaos-{e}")).collect();

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
        {
            assert!(started.elapsed() < DEADLINE, "the kills did not finish");
            tokio::time::sleep(Duration::from_millis(150 + rng.next(600))).await;
            if senders_done.load(Ordering::SeqCst)
                && rx_kills.load(Ordering::SeqCst) >= KILLS
                && cx_kills.load(Ordering::SeqCst) >= KILLS
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
    let cx_emu = &cx_emu;
    let ledger = aws.ledger();
    let ledger = &ledger;
    // Done when every key is COMPLETED in the ledger, not merely applied: a consumer killed
    // between the side effect and `complete` leaves its key PROCESSING until the lease runs
    // out, and only the message's next delivery completes it.
    let all_completed = || async {
        for key in &keys {
            if sor.applied_for(key) == 0 {
                return false;
            }
            let item = ledger.get(key).await.expect("get");
            if item.map(|i| i.status) != Some(Status::Completed) {
                return false;
            }
        }
        true
    };
    let pump = || async {
        loop {
            if senders_done.load(Ordering::SeqCst) && all_completed().await {
                return;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "not every key was COMPLETED: applied {:?}",
                sor.applied()
            );
            let round = consume_round(&bridge, cx_emu).await;
            if round.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let (answers, (), (), ()) = tokio::join!(senders, killer, pump(), pump());

    // Every delivery was answered 200 in the end; the kills showed as 502s to some.
    assert!(
        answers.iter().all(|a| a.last() == Some(&200)),
        "{answers:?}"
    );
    let rx_kills = rx_kills.load(Ordering::SeqCst);
    let cx_kills = cx_kills.load(Ordering::SeqCst);
    assert!(rx_kills >= KILLS && cx_kills >= KILLS);
    // Each kill returned once its process was replaced; no process died but those killed.
    assert_eq!(
        (receivers.restarts(), consumers.restarts()),
        (rx_kills, cx_kills),
        "restarts (receivers, consumers) against kills"
    );

    // What is left on the queue (redeliveries of completed keys) runs out without a call.
    let at_completion = sor.applied();
    while consume_round(&bridge, cx_emu).await.is_some() {
        assert!(started.elapsed() < DEADLINE, "the queue did not drain");
    }
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
    for key in &keys {
        let item = ledger.get(key).await.expect("get").expect("a ledger item");
        assert_eq!(item.status, Status::Completed, "{key}: {item:?}");
    }
    // Exactly once, for a system of record that honours the Idempotency-Key; a second call
    // of a key only where a consumer died between its side effect and `complete`.
    let extra: u64 = applied.values().map(|n| n - 1).sum();
    assert!(
        extra <= cx_kills * BATCH,
        "{extra} repeated calls for {cx_kills} consumer kills: {applied:?}"
    );
    println!(
        "chaos: {} deliveries, {} receiver and {} consumer kills ({} and {} invocations died \
         with their process), {} keys applied, {extra} repeated calls, in {:.1?}",
        answers.len(),
        rx_kills,
        cx_kills,
        receivers.failed_invocations.load(Ordering::SeqCst),
        consumers.failed_invocations.load(Ordering::SeqCst),
        applied.len(),
        started.elapsed()
    );
}
