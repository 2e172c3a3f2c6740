//! The consumer's CPU work before any I/O: planning a 10-message batch into FIFO groups
//! (`inbox::fifo::plan`), and reading the envelopes back; and a whole invocation of 10 events on
//! the in-memory ledger with a side effect that does nothing (`handle_batch_10`).
//!
//! `cargo bench -p bench --bench consumer`.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use inbox::fifo::plan;
use inbox::queue::Envelope;

/// Ten messages; message `i` is in group `group_of(i)` (none: a standard queue).
fn batch(group_of: impl Fn(usize) -> Option<String>) -> Vec<SqsMessage> {
    (0..10)
        .map(|i| {
            let mut m = SqsMessage::default();
            m.message_id = Some(format!("059f36b4-87a3-44ab-83d2-66197175{i:04}"));
            m.receipt_handle = Some(format!("AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a{i}"));
            let key = format!("acme:msg_{i:06}");
            let env = Envelope::new(
                &key,
                "acme",
                1_700_000_000_000,
                "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                BTreeMap::from([("webhook-id".to_owned(), format!("msg_{i:06}"))]),
                format!(r#"{{"customer_id":"cus_{}","n":{i}}}"#, i % 3).as_bytes(),
            );
            m.body = Some(env.to_json());
            for (k, v) in [
                ("ApproximateReceiveCount", "1".to_owned()),
                ("SentTimestamp", "1700000000000".to_owned()),
                ("SequenceNumber", format!("1886{i:016}")),
                ("MessageDeduplicationId", key.clone()),
            ] {
                m.attributes.insert(k.to_owned(), v);
            }
            if let Some(g) = group_of(i) {
                m.attributes.insert("MessageGroupId".to_owned(), g);
            }
            m
        })
        .collect()
}

fn planning(c: &mut Criterion) {
    let cases = [
        (
            "fifo_10_groups",
            batch(|i| Some(format!("acme:msg_{i:06}"))),
        ),
        (
            "fifo_3_groups",
            batch(|i| Some(format!("acme:cus_{}", i % 3))),
        ),
        ("fifo_1_group", batch(|_| Some("acme:cus_0".to_owned()))),
        ("standard_queue", batch(|_| None)),
    ];
    let mut group = c.benchmark_group("consumer/plan_10");
    group.throughput(Throughput::Elements(10));
    for (name, messages) in &cases {
        group.bench_function(*name, |b| b.iter(|| plan(black_box(messages))));
    }
    group.finish();

    let mut group = c.benchmark_group("consumer/parse_envelopes_10");
    group.throughput(Throughput::Elements(10));
    let (_, messages) = &cases[0];
    group.bench_function("small_bodies", |b| {
        b.iter(|| {
            black_box(messages)
                .iter()
                .map(|m| {
                    let env = Envelope::parse(m.body.as_deref().expect("body")).expect("envelope");
                    env.body_bytes().expect("body").len()
                })
                .sum::<usize>()
        })
    });
    group.finish();
}

/// The side effect that does nothing: the consumer's own work alone.
struct Noop;

impl inbox::Processor for Noop {
    async fn process(&self, _job: &inbox::Job) -> Result<(), inbox::ProcessError> {
        Ok(())
    }
}

const BENCH_SOURCES: &str = r#"{"acme": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "header", "name": "webhook-id"}}}"#;

/// Ten events as the receiver queues them (each its own group), their bodies' hashes true.
fn claimed_batch() -> (Vec<SqsMessage>, Vec<Envelope>) {
    let mut messages = batch(|i| Some(format!("acme:msg_{i:06}")));
    let mut envelopes = Vec::new();
    for m in &mut messages {
        let env = Envelope::parse(m.body.as_deref().expect("body")).expect("envelope");
        let body = env.body_bytes().expect("body");
        let env = Envelope::new(
            &env.key,
            &env.source,
            env.received_at,
            &inbox::key::payload_sha256(&body, &[]),
            env.headers.clone(),
            &body,
        );
        m.body = Some(env.to_json());
        envelopes.push(env);
    }
    (messages, envelopes)
}

/// A whole invocation: 10 events taken, run (a side effect that does nothing) and completed on
/// the in-memory ledger, each claimed beforehand (untimed), as the receiver leaves them.
fn handling(c: &mut Criterion) {
    use inbox::ledger::LedgerStore as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let specs = inbox::SourceSpecs::parse(BENCH_SOURCES).expect("sources");
    let (messages, envelopes) = claimed_batch();
    let mut group = c.benchmark_group("consumer/handle_batch_10");
    group.throughput(Throughput::Elements(10));
    group.bench_function("noop_side_effect", |b| {
        b.iter_batched(
            || {
                let ledger = inbox::MemoryLedger::new();
                let now = inbox::clock::Clock::now_ms(&inbox::clock::SystemClock);
                for env in &envelopes {
                    rt.block_on(ledger.claim(&env.accepted_claim(now - 1, 72)))
                        .expect("claimed");
                }
                let (metrics, _) = inbox::metrics::Metrics::memory("consumer");
                inbox::consumer::Consumer::new(
                    specs.clone(),
                    ledger,
                    Noop,
                    inbox::clock::SystemClock,
                    inbox::consumer::ConsumerSettings::default(),
                    metrics,
                )
            },
            |cx| {
                let answer = rt.block_on(cx.handle_batch(&messages, "req", None));
                assert!(
                    answer.batch_item_failures.is_empty(),
                    "every event completes"
                );
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = planning, handling
);
criterion_main!(benches);
