//! The report's text for fixed figures, byte for byte (golden.md was printed by the driver's
//! report before it was split into modules; the answer times, the bill and the goals were
//! added later, then the consumer, the calls by service and operation and the bill by line;
//! their figures checked by hand in `bill_of_fixed_figures`).

use std::path::PathBuf;
use std::time::Duration;

use super::report;
use crate::classify::{Op, Service};
use crate::consumer::{ConsumerRun, InvocationFigures};
use crate::options::Options;
use crate::phases::{Phase, Run};
use crate::price::line_of;
use crate::proxy::{Calls, Metered};
use crate::workload::Answers;

/// `count` calls of each (service, operation, S3 key prefix): one unit each (half one for a
/// GetItem), 2,400 bytes stored per S3 PutObject, 20 ms waited each.
fn calls(list: &[(Service, &str, Option<&str>, u64)]) -> Calls {
    list.iter()
        .map(|&(service, name, prefix, count)| {
            let op = Op {
                key_prefix: prefix.map(str::to_owned),
                ..Op::new(service, name)
            };
            let line = line_of(&op).expect("priced");
            let n = count as f64;
            let m = Metered {
                count,
                units: n * if name == "GetItem" { 0.5 } else { 1.0 },
                stored_bytes: if name == "PutObject" { n * 2400.0 } else { 0.0 },
                wait_ms: 20.0 * n,
                ..Metered::on(line)
            };
            (op, m)
        })
        .collect()
}

fn phase(
    n: u64,
    wall_ms: u64,
    cpu: f64,
    sched: f64,
    calls: Calls,
    connections: u64,
    a: (u64, u64, u64, u64),
) -> Phase {
    Phase {
        deliveries: n,
        wall: Duration::from_millis(wall_ms),
        cpu_secs: cpu,
        sched_secs: sched,
        // One after another.
        rounds: calls.values().map(|m| m.count).sum(),
        calls,
        // n answer times spread evenly over 5..5 + wall_ms / 100 ms.
        times_ms: (0..n)
            .map(|i| 5.0 + (i as f64) * (wall_ms as f64 / 100.0) / n as f64)
            .collect(),
        connections,
        answers: Answers {
            ok_first: a.0,
            ok_replayed: a.1,
            unauthorized: a.2,
            other: a.3,
        },
    }
}

/// A consumer that took 1,000 messages in 100 batches of 10 on 2 processes.
fn consumer() -> ConsumerRun {
    use Service::*;
    ConsumerRun {
        processes: 2,
        batch_size: 10,
        init_calls: calls(&[(SecretsManager, "GetSecretValue", None, 2)]),
        calls: calls(&[(DynamoDb, "UpdateItem", None, 2000)]),
        mapping_calls: calls(&[
            (Sqs, "ReceiveMessage", None, 110),
            (Sqs, "DeleteMessageBatch", None, 100),
        ]),
        invocations: vec![
            InvocationFigures {
                records: 10,
                wall_ms: 600.0,
                moto_ms: 580.0,
                cpu_ms: 3.0,
                rounds: 2,
            };
            100
        ],
        messages: 1000,
        forwards: 1000,
        largest_item_bytes: 430,
        wall: Duration::from_secs(2),
    }
}

fn options() -> Options {
    Options {
        deliveries: 2000,
        events: 1000,
        concurrency: 16,
        body_bytes: 2048,
        init_runs: 3,
        receiver: PathBuf::from("target/release/receiver"),
        consumer: PathBuf::from("target/release/consumer"),
        zips: Vec::new(),
        zip_note: Some("arm64, note".into()),
        out: None,
        skip_peer: false,
        dynamodb_ms: 5,
        sqs_ms: 15,
        s3_ms: 30,
        other_ms: 15,
        memory_mb: 256,
        settle_before_duplicates: false,
        archive: None,
        storage_days: 7.0,
        cold_starts_per_million: 1000.0,
        forward_ms: 0,
        destinations: 0,
    }
}

fn runs() -> Vec<Run> {
    use Service::*;
    let first = |archive: bool| {
        let mut list = vec![
            (DynamoDb, "PutItem", None, 1000),
            (Sqs, "SendMessage", None, 1000),
        ];
        if archive {
            list.push((S3, "PutObject", Some("archive"), 1000));
        } else {
            list.push((DynamoDb, "UpdateItem", None, 1000));
        }
        calls(&list)
    };
    vec![
        Run {
            name: "receiver",
            processes: 16,
            runtime_connections: 17,
            init_cpu_secs: 0.16,
            init_calls: Calls::new(),
            first: phase(1000, 2345, 0.51, 0.4987, first(true), 16, (1000, 0, 0, 0)),
            duplicates: phase(
                1000,
                1234,
                0.23,
                0.2211,
                calls(&[(DynamoDb, "PutItem", None, 1000)]),
                0,
                (0, 1000, 0, 0),
            ),
            forged: phase(500, 100, 0.02, 0.019, Calls::new(), 0, (0, 0, 500, 0)),
            peak_rss_kib: 9876,
            items: 1000,
            largest_item_bytes: 430,
            messages: 1000,
            consumer: Some(consumer()),
        },
        Run {
            name: "powertools-peer",
            processes: 16,
            runtime_connections: 16,
            init_cpu_secs: 3.2,
            init_calls: Calls::new(),
            first: phase(1000, 5345, 2.51, 2.4987, first(false), 16, (1000, 0, 0, 0)),
            duplicates: phase(
                1000,
                3234,
                1.23,
                1.2211,
                calls(&[
                    (DynamoDb, "PutItem", None, 1000),
                    (DynamoDb, "GetItem", None, 3),
                ]),
                2,
                (1000, 0, 0, 0),
            ),
            forged: phase(500, 300, 0.2, 0.19, Calls::new(), 0, (0, 0, 500, 0)),
            peak_rss_kib: 65432,
            items: 1000,
            largest_item_bytes: 430,
            messages: 1000,
            consumer: None,
        },
    ]
}

#[test]
fn report_text_is_unchanged() {
    let o = options();
    let runs = runs();
    let inits = vec![
        (
            "receiver".to_string(),
            vec![
                Duration::from_micros(4900),
                Duration::from_micros(5100),
                Duration::from_micros(4700),
            ],
        ),
        (
            "consumer".to_string(),
            vec![Duration::from_micros(4000), Duration::from_micros(6000)],
        ),
    ];
    let zips = vec![
        ("receiver".to_string(), 4_750_000, 12_000_000),
        ("consumer".to_string(), 4_810_000, 12_100_000),
    ];
    let mut text = report(&o, &runs, &inits, &zips);
    // One run, no init durations, no zip note.
    let o2 = Options {
        zip_note: None,
        init_runs: 0,
        deliveries: 10,
        events: 10,
        ..o
    };
    text += &report(&o2, &runs[..1], &[], &zips);
    // BENCH_UPDATE_GOLDEN=1 writes the text as the new golden.md (review its diff).
    if std::env::var_os("BENCH_UPDATE_GOLDEN").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/report/golden.md");
        std::fs::write(path, &text).expect("golden.md");
    }
    assert_eq!(text, include_str!("golden.md"));
}

#[test]
fn bill_of_fixed_figures() {
    use crate::bill::Bill;
    use crate::price::Line;
    let runs = runs();
    let o = options();
    let b = Bill::receiver(&runs[0], &o);
    let close = |line: Line, usd: f64| {
        assert!((b.get(line) - usd).abs() < 1e-9, "{line:?}: {b:?}");
    };
    // 2000 deliveries: 1 USD per million at the door, 0.20 for Lambda's requests.
    close(Line::FrontDoor, 1.0);
    close(Line::LambdaRequests, 0.2);
    // 2000 writes of an item under 1 KiB (one unit each) at 0.625 per million units, for
    // 2000 deliveries: 0.625 per million deliveries.
    close(Line::DynamoDbWrites, 0.625);
    // 1000 sends of one chunk at 0.50 per million, for 2000 deliveries: 0.25.
    close(Line::Sqs, 0.25);
    // 1000 archive PUTs at 5 USD per million: 2.50; their 2.4 MB kept 7 days of a 30-day month
    // at 0.023 per GiB-month, times 500 for a million webhooks.
    close(Line::S3Writes, 2.5);
    close(
        Line::S3Storage,
        2.4e6 / 1073741824.0 * 7.0 / 30.0 * 0.023 * 500.0,
    );
    assert!(
        !b.lines.contains_key(&Line::SecretsManager),
        "no cold-start calls"
    );
    assert!((b.controllable() - (b.total() - 1.0)).abs() < 1e-9);

    let c = Bill::consumer(runs[0].consumer.as_ref().expect("consumer"), 2000, &o);
    let close = |line: Line, usd: f64| {
        assert!((c.get(line) - usd).abs() < 1e-9, "{line:?}: {c:?}");
    };
    assert!(!c.lines.contains_key(&Line::FrontDoor));
    // 100 invocations for 2000 webhooks: 0.01 per million.
    close(Line::LambdaRequests, 0.01);
    // Each 600 - 580 = 20 ms modelled, plus 3 ms of CPU stretched by 1769/256 (17.73 ms more),
    // billed 38 ms: 3.8 s x 0.25 GB x 0.0000133334 x 500.
    close(Line::LambdaDuration, 3.8 * 0.25 * 0.000_013_333_4 * 500.0);
    close(Line::DynamoDbWrites, 2000.0 * 0.625e-6 * 500.0);
    // 210 requests of the mapping at 0.50 per million, x 500.
    close(Line::Sqs, 210.0 * 0.5e-6 * 500.0);
    // One GetSecretValue per cold start, 1000 cold starts per million webhooks, 0.05 per 10,000.
    close(Line::SecretsManager, 1000.0 * 0.05 / 10_000.0);
}
