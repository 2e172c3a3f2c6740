//! The report's text for fixed figures, byte for byte (golden.md was printed by the driver's
//! report before it was split into modules; the answer times, the bill and the goals were
//! added with issue 15, their figures checked by hand in `bill_of_fixed_figures`).

use std::path::PathBuf;
use std::time::Duration;

use super::report;
use crate::options::Options;
use crate::phases::{Phase, Run};
use crate::workload::Answers;

fn phase(
    n: u64,
    wall_ms: u64,
    cpu: f64,
    sched: f64,
    calls: &[(&str, u64)],
    connections: u64,
    a: (u64, u64, u64, u64),
) -> Phase {
    Phase {
        deliveries: n,
        wall: Duration::from_millis(wall_ms),
        cpu_secs: cpu,
        sched_secs: sched,
        calls: calls.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        units: calls
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    *v as f64 * if *k == "GetItem" { 0.5 } else { 1.0 },
                )
            })
            .collect(),
        // n answer times spread evenly over 5..5 + wall_ms / 100 ms.
        times_ms: (0..n)
            .map(|i| 5.0 + (i as f64) * (wall_ms as f64 / 100.0) / n as f64)
            .collect(),
        // What AWS took of it: 20 ms per call.
        aws_wait_ms: 20.0 * calls.iter().map(|(_, v)| *v as f64).sum::<f64>(),
        connections,
        answers: Answers {
            ok_first: a.0,
            ok_replayed: a.1,
            unauthorized: a.2,
            other: a.3,
        },
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
        memory_mb: 256,
        settle_before_duplicates: false,
    }
}

fn runs() -> Vec<Run> {
    let first = [
        ("PutItem", 1000),
        ("SendMessage", 1000),
        ("UpdateItem", 1000),
    ];
    vec![
        Run {
            name: "receiver",
            processes: 16,
            runtime_connections: 17,
            init_cpu_secs: 0.16,
            first: phase(1000, 2345, 0.51, 0.4987, &first, 16, (1000, 0, 0, 0)),
            duplicates: phase(
                1000,
                1234,
                0.23,
                0.2211,
                &[("PutItem", 1000)],
                0,
                (0, 1000, 0, 0),
            ),
            forged: phase(500, 100, 0.02, 0.019, &[], 0, (0, 0, 500, 0)),
            peak_rss_kib: 9876,
            items: 1000,
            largest_item_bytes: 430,
            messages: 1000,
        },
        Run {
            name: "powertools-peer",
            processes: 16,
            runtime_connections: 16,
            init_cpu_secs: 3.2,
            first: phase(1000, 5345, 2.51, 2.4987, &first, 16, (1000, 0, 0, 0)),
            duplicates: phase(
                1000,
                3234,
                1.23,
                1.2211,
                &[("PutItem", 1000), ("GetItem", 3)],
                2,
                (1000, 0, 0, 0),
            ),
            forged: phase(500, 300, 0.2, 0.19, &[], 0, (0, 0, 500, 0)),
            peak_rss_kib: 65432,
            items: 1000,
            largest_item_bytes: 430,
            messages: 1000,
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
    let runs = runs();
    let b = Bill::of(&runs[0], 256, &options().latency());
    // 2000 deliveries: 1 USD per million at the door, 0.20 for Lambda's requests.
    assert!((b.front_door - 1.0).abs() < 1e-9, "{b:?}");
    assert!((b.lambda_requests - 0.2).abs() < 1e-9, "{b:?}");
    // 3000 writes of an item under 1 KiB (one unit each) at 0.625 per million units, for
    // 2000 deliveries: 0.9375 per million deliveries.
    assert!((b.dynamodb - 0.9375).abs() < 1e-9, "{b:?}");
    // 1000 sends of one chunk at 0.50 per million, for 2000 deliveries: 0.25.
    assert!((b.sqs - 0.25).abs() < 1e-9, "{b:?}");
    assert!((b.controllable() - (b.total() - 1.0)).abs() < 1e-9);
}
