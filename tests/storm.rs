//! A retry storm, end to end against the local AWS API server: 1000 deliveries of 100 events
//! (each event delivered 10 times, interleaved) sent 64 at a time through the receiver, while
//! the consumer runs concurrently behind the bridge (several pumps, as the event source
//! mapping runs several batches at once). Exactly 100 side effects; every delivery answered
//! 200 (a duplicate behind a live claim sends the event itself: no 503), or a
//! 500 and then 200 on the sender's retry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, LocalAws, SystemOfRecord, TestReceiver};
use futures::StreamExt as _;
use inbox::ledger::Status;
use inbox::receiver::ReceiverSettings;

const EVENTS: u32 = 100;
const DELIVERIES: u32 = 1000;
const CONCURRENCY: usize = 64;
/// Batches the mapping runs at once.
const PUMPS: usize = 4;

fn body(event: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{event}}}"#).into_bytes()
}

/// One delivery as a sender makes it: retried on 503 (and, were it ever to come, 5xx) with
/// bounded backoff. Returns the statuses it saw.
async fn deliver(rx: &TestReceiver, event: u32) -> Vec<u16> {
    let id = format!("storm-{event}");
    let key = format!("github:{id}");
    let body = body(event);
    let mut seen = Vec::new();
    let mut pause = Duration::from_millis(10);
    for _ in 0..30 {
        let resp = rx
            .handle(post("github", &github_headers(&id, &body), &body))
            .await;
        let status = resp.status().as_u16();
        seen.push(status);
        let json: serde_json::Value =
            serde_json::from_slice(resp.body().as_ref()).expect("JSON body");
        match status {
            200 => {
                assert_eq!(json, serde_json::json!({"status": "accepted", "key": key}));
                return seen;
            }
            503 => panic!("{key}: a 503, outside the contract: {json}"),
            _ if status >= 500 => {}
            _ => panic!("{key}: unexpected {status} {json}"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
    panic!("{key}: the sender gave up after {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_deliveries_of_a_hundred_events_give_a_hundred_side_effects() {
    let aws = LocalAws::new("storm").await;
    let sor = SystemOfRecord::start();
    // The deployed defaults: a duplicate waits up to 1 s behind an in-flight first delivery.
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let cx = aws.consumer(testkit::forwarder(sor.url())).0;
    let mut b = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    b.retry_failed_now = true;
    let started = Instant::now();
    let senders_done = AtomicBool::new(false);

    // Delivery i is of event (i * 37) mod 100: each event 10 times, spread over the storm.
    let senders = async {
        let answers: Vec<(u32, Vec<u16>)> = futures::stream::iter(0..DELIVERIES)
            .map(|i| {
                let event = (i * 37) % EVENTS;
                let rx = &rx;
                async move { (event, deliver(rx, event).await) }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        senders_done.store(true, Ordering::SeqCst);
        answers
    };
    let cx = &cx;
    let pump = || async {
        let mut rounds = 0u32;
        let give_up = Instant::now() + Duration::from_secs(120);
        loop {
            let round = b
                .pump_once(|e| testkit::consume(cx, e))
                .await
                .expect("pump");
            match round {
                Some(_) => rounds += 1,
                None => {
                    if senders_done.load(Ordering::SeqCst) && sor.applied().len() == EVENTS as usize
                    {
                        return rounds;
                    }
                    assert!(Instant::now() < give_up, "the storm did not drain");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    };
    let pumps = futures::future::join_all((0..PUMPS).map(|_| pump()));
    let (answers, rounds) = tokio::join!(senders, pumps);
    let elapsed = started.elapsed();

    // Every delivery: 200 at once (no 5xx is injected here).
    assert_eq!(answers.len(), DELIVERIES as usize);
    let mut retried = 0;
    for (event, seen) in &answers {
        let (last, before) = seen.split_last().expect("an answer");
        assert_eq!(*last, 200, "event {event}: {seen:?}");
        assert!(before.is_empty(), "event {event}: {seen:?}");
        retried += usize::from(!before.is_empty());
    }

    // Exactly one side effect per event, each under its own key.
    let calls = sor.calls();
    assert_eq!(calls.len(), EVENTS as usize);
    assert!(calls.values().all(|n| *n == 1), "{calls:?}");
    assert_eq!(sor.applied(), calls);
    assert!((0..EVENTS).all(|e| calls.contains_key(&format!("github:storm-{e}"))));

    let items = aws.ledger_items().await;
    assert_eq!(items.len(), EVENTS as usize);
    assert!(items
        .iter()
        .all(|i| i.status == Status::Completed && i.attempts == 1));
    assert_eq!(aws.queue_counts(&aws.resources.queue_url).await, (0, 0));
    assert_eq!(aws.queue_counts(&aws.resources.dlq_url).await, (0, 0));
    eprintln!(
        "storm: {DELIVERIES} deliveries of {EVENTS} events at {CONCURRENCY} concurrency, \
         {PUMPS} pumps ({} batches): {} side effects, {retried} deliveries answered 5xx \
         before 200, in {elapsed:.1?}; calls {:?}",
        rounds.iter().sum::<u32>(),
        calls.values().sum::<u64>(),
        aws.faults.all_calls()
    );
}
