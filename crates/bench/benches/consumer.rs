//! The consumer's CPU work before any I/O: planning a 10-message batch into FIFO groups
//! (`inbox::fifo::plan`), and reading the envelopes back.
//!
//! `cargo bench -p inbox --bench consumer`.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
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

criterion_group!(
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = planning
);
criterion_main!(benches);
