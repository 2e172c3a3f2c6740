//! The report: the workload line, the figures table (one column per function, the ratio
//! ours/peer), each run's details, the init durations and the zip sizes, as markdown.

use std::time::Duration;

use crate::bill::{memory_sizes, prices, Bill};
use crate::init::median_ms;
use crate::options::Options;
use crate::phases::Run;

/// One row of the figures table: its label, its value for a run, its decimals.
type Row = (&'static str, fn(&Run) -> f64, usize);

/// The figures table's rows, in order.
const ROWS: &[Row] = &[
    (
        "events per second (all deliveries; moto-bound)",
        |r| delivered(r) as f64 / (r.first.wall + r.duplicates.wall).as_secs_f64(),
        0,
    ),
    (
        "answer time p50, first deliveries, ms",
        |r| r.first.time_ms(50.0),
        1,
    ),
    (
        "answer time p99, first deliveries, ms",
        |r| r.first.time_ms(99.0),
        1,
    ),
    (
        "mean answer time less the wait on AWS, first deliveries, ms",
        |r| r.first.own_ms(),
        2,
    ),
    (
        "answer time p50, duplicates, ms",
        |r| r.duplicates.time_ms(50.0),
        1,
    ),
    (
        "answer time p99, duplicates, ms",
        |r| r.duplicates.time_ms(99.0),
        1,
    ),
    (
        "mean answer time less the wait on AWS, duplicates, ms",
        |r| r.duplicates.own_ms(),
        2,
    ),
    (
        "CPU seconds per 1000 events (all deliveries)",
        |r| (r.first.cpu_secs + r.duplicates.cpu_secs) * 1000.0 / delivered(r) as f64,
        3,
    ),
    (
        "CPU seconds per 1000 first deliveries",
        |r| r.first.cpu_secs * 1000.0 / r.first.deliveries as f64,
        3,
    ),
    (
        "CPU seconds per 1000 duplicates",
        |r| r.duplicates.cpu_secs * 1000.0 / r.duplicates.deliveries.max(1) as f64,
        3,
    ),
    (
        "CPU seconds per 1000 forged deliveries (401, no AWS call)",
        |r| r.forged.cpu_secs * 1000.0 / r.forged.deliveries.max(1) as f64,
        3,
    ),
    (
        "CPU seconds per 1000 events, schedstat (ns-exact, live threads)",
        |r| (r.first.sched_secs + r.duplicates.sched_secs) * 1000.0 / delivered(r) as f64,
        3,
    ),
    (
        "AWS calls per event (all deliveries)",
        |r| (r.first.calls_total() + r.duplicates.calls_total()) as f64 / delivered(r) as f64,
        2,
    ),
    (
        "AWS calls per first delivery",
        |r| r.first.calls_total() as f64 / r.first.deliveries as f64,
        2,
    ),
    (
        "AWS calls per duplicate",
        |r| r.duplicates.calls_total() as f64 / r.duplicates.deliveries.max(1) as f64,
        2,
    ),
    (
        "duplicates stopped before the queue",
        |r| r.duplicates.deliveries.saturating_sub(r.duplicates.sends()) as f64,
        0,
    ),
    (
        "new TCP connections to AWS during the run",
        |r| (r.first.connections + r.duplicates.connections) as f64,
        0,
    ),
    (
        "TCP connections to the Runtime API (all processes, whole run)",
        |r| r.runtime_connections as f64,
        0,
    ),
    (
        "init CPU seconds per process",
        |r| r.init_cpu_secs / r.processes as f64,
        3,
    ),
    (
        "peak RSS per process, MiB",
        |r| r.peak_rss_kib as f64 / 1024.0,
        1,
    ),
];

/// First deliveries and duplicates (the forged ones aside).
fn delivered(r: &Run) -> u64 {
    r.first.deliveries + r.duplicates.deliveries
}

/// The whole report.
pub fn report(
    o: &Options,
    runs: &[Run],
    inits: &[(String, Vec<Duration>)],
    zips: &[(String, u64, u64)],
) -> String {
    let mut s = String::new();
    push(&mut s, workload(o));
    figures(&mut s, runs);
    push(&mut s, String::new());
    for r in runs {
        push(&mut s, details(r));
    }
    push(&mut s, String::new());
    bill_table(&mut s, o, runs);
    push(&mut s, String::new());
    goals(&mut s, o, runs);
    if !inits.is_empty() {
        push(&mut s, String::new());
        init_table(&mut s, o.init_runs, inits);
    }
    if !zips.is_empty() {
        push(&mut s, String::new());
        zip_table(&mut s, o.zip_note.as_deref(), zips);
    }
    s
}

/// Appends `line` and a newline.
fn push(s: &mut String, line: String) {
    s.push_str(&line);
    s.push('\n');
}

/// `ours / peer` with three decimals, a dash if the peer's figure is zero.
fn ratio(ours: f64, peer: f64) -> String {
    if peer == 0.0 {
        "—".into()
    } else {
        format!("{:.3}", ours / peer)
    }
}

/// The paragraph that states the workload.
fn workload(o: &Options) -> String {
    format!(
        "Workload: {} deliveries of {} events ({} first deliveries, then {} duplicates), {} concurrent, \
         {}-byte Standard Webhooks bodies; {} execution environments (processes) per function; one moto server; \
         {} ms added to every DynamoDB call and {} ms to every SQS call (same-region round trips){}.\n",
        o.deliveries,
        o.events,
        o.events,
        o.deliveries - o.events,
        o.concurrency,
        o.body_bytes,
        o.concurrency,
        o.dynamodb_ms,
        o.sqs_ms,
        if o.settle_before_duplicates {
            "; the receiver's ledger items marked COMPLETED before the duplicates (as its consumer leaves them)"
        } else {
            "; no consumer runs: the duplicates find the receiver's items as the first deliveries left them"
        }
    )
}

/// One row of the bill table: its label, its value in a bill.
type BillRow = (&'static str, fn(&Bill) -> f64);

/// The bill per million webhooks, by service, at the list prices of [`prices`]; and what the
/// receiver's duration would cost at other memory sizes.
fn bill_table(s: &mut String, o: &Options, runs: &[Run]) {
    push(
        s,
        format!(
            "Bill per million webhooks of this workload, USD (us-east-1 list prices of {}; Lambda arm64 at {} MB, billed duration = own time + injected round trips, CPU stretched by 1769/MB; \
             DynamoDB on-demand; SQS FIFO):\n",
            prices::PRICES_AS_OF,
            o.memory_mb
        ),
    );
    push(
        s,
        format!(
            "| service | {} | ratio ours/peer |",
            runs.iter().map(|r| r.name).collect::<Vec<_>>().join(" | ")
        ),
    );
    push(s, format!("| --- |{} --- |", " ---: |".repeat(runs.len())));
    let bills: Vec<Bill> = runs
        .iter()
        .map(|r| Bill::of(r, o.memory_mb, &o.latency()))
        .collect();
    let rows: [BillRow; 8] = [
        ("API Gateway HTTP API requests (the front door)", |b| {
            b.front_door
        }),
        ("Lambda requests", |b| b.lambda_requests),
        ("Lambda duration (billed ms x memory)", |b| {
            b.lambda_duration
        }),
        ("DynamoDB write and read units", |b| b.dynamodb),
        ("SQS requests (64 KiB chunks)", |b| b.sqs),
        ("**total**", Bill::total),
        (
            "**controllable** (all but the front door)",
            Bill::controllable,
        ),
        ("total behind a function URL (no door charge)", |b| {
            b.with_function_url()
        }),
    ];
    for (label, f) in rows {
        let values: Vec<f64> = bills.iter().map(f).collect();
        let cells: Vec<String> = values.iter().map(|v| format!("{v:.4}")).collect();
        let r = if values.len() == 2 {
            ratio(values[0], values[1])
        } else {
            "—".into()
        };
        push(s, format!("| {label} | {} | {r} |", cells.join(" | ")));
    }
    push(s, String::new());
    for r in runs {
        let rows = memory_sizes(r, &o.latency(), &[128, 256, 512, 1024, 1769]);
        let cells: Vec<String> = rows
            .iter()
            .map(|(mb, ms, usd)| format!("{mb} MB: {ms:.0} ms, {usd:.4}"))
            .collect();
        push(
            s,
            format!(
                "- {} duration at other memory sizes (mean billed ms per invocation, USD per million): {}",
                r.name,
                cells.join("; ")
            ),
        );
    }
}

/// The goals, as figures from this run.
fn goals(s: &mut String, o: &Options, runs: &[Run]) {
    let two_trips = (o.dynamodb_ms + o.sqs_ms) as f64;
    for r in runs {
        push(
            s,
            format!(
                "- {}: first delivery p50 {:.1} ms ({:+.1} ms from two injected round trips, {two_trips:.0} ms, \
                 moto's own answer time included); mean answer time less the wait on AWS {:.2} ms (goal: under 1 ms); \
                 AWS calls per duplicate {:.2}",
                r.name,
                r.first.time_ms(50.0),
                r.first.time_ms(50.0) - two_trips,
                r.first.own_ms(),
                r.duplicates.calls_total() as f64 / r.duplicates.deliveries.max(1) as f64,
            ),
        );
    }
    if let [ours, peer] = runs {
        let (a, b) = (
            Bill::of(ours, o.memory_mb, &o.latency()).controllable(),
            Bill::of(peer, o.memory_mb, &o.latency()).controllable(),
        );
        push(
            s,
            format!(
                "- controllable bill, ours/peer: {} (goal: at most 0.7)",
                ratio(a, b)
            ),
        );
    }
}

/// The figures table: a column per run, the ratio of the first to the second.
fn figures(s: &mut String, runs: &[Run]) {
    push(
        s,
        format!(
            "| figure | {} | ratio ours/peer |",
            runs.iter().map(|r| r.name).collect::<Vec<_>>().join(" | ")
        ),
    );
    push(s, format!("| --- |{} --- |", " ---: |".repeat(runs.len())));
    for (label, f, digits) in ROWS {
        let values: Vec<f64> = runs.iter().map(f).collect();
        let cells: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
        let r = if values.len() == 2 {
            ratio(values[0], values[1])
        } else {
            "—".into()
        };
        push(s, format!("| {label} | {} | {r} |", cells.join(" | ")));
    }
}

/// One run's calls by operation, answers, what it left in AWS and its wall times.
fn details(r: &Run) -> String {
    format!(
        "- {}: {} first deliveries made calls {:?}; {} duplicates {:?}; {} forged {:?} ({} answered 401); \
         answers: {} accepted, {} replayed (marked), {} other; \
         {} ledger items, {} messages on its queue; wall {:.2} s + {:.2} s",
        r.name,
        r.first.deliveries,
        r.first.calls,
        r.duplicates.deliveries,
        r.duplicates.calls,
        r.forged.deliveries,
        r.forged.calls,
        r.forged.answers.unauthorized,
        r.first.answers.ok_first + r.duplicates.answers.ok_first,
        r.first.answers.ok_replayed + r.duplicates.answers.ok_replayed,
        r.first.answers.other + r.duplicates.answers.other,
        r.items,
        r.messages,
        r.first.wall.as_secs_f64(),
        r.duplicates.wall.as_secs_f64()
    )
}

/// The init durations: median, min and max per function.
fn init_table(s: &mut String, starts: usize, inits: &[(String, Vec<Duration>)]) {
    push(
        s,
        format!(
            "Init duration (process start to the first Runtime API poll), {starts} starts each:\n"
        ),
    );
    push(s, "| function | median ms | min ms | max ms |".into());
    push(s, "| --- | ---: | ---: | ---: |".into());
    for (name, d) in inits {
        let (med, min, max) = median_ms(d);
        push(s, format!("| {name} | {med:.1} | {min:.1} | {max:.1} |"));
    }
}

/// The zips' sizes, packed and unpacked.
fn zip_table(s: &mut String, note: Option<&str>, zips: &[(String, u64, u64)]) {
    if let Some(note) = note {
        push(s, format!("Release zips ({note}):\n"));
    } else {
        push(s, "Release zips:\n".into());
    }
    push(
        s,
        "| function | zip bytes | zip MiB | unzipped bootstrap MiB |".into(),
    );
    push(s, "| --- | ---: | ---: | ---: |".into());
    for (name, zip, unpacked) in zips {
        push(
            s,
            format!(
                "| {name} | {zip} | {:.2} | {:.2} |",
                *zip as f64 / 1048576.0,
                *unpacked as f64 / 1048576.0
            ),
        );
    }
}

#[cfg(test)]
mod tests;
