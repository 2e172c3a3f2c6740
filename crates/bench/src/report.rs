//! The report: the workload line, the figures table (one column per function, the ratio
//! ours/peer), each run's details, the calls by service and operation ([`calls_table`]), the
//! bill by line ([`bill_table`]), the goals, the init durations and the zip sizes, as markdown.

use std::time::Duration;

use crate::bill::Bill;
use crate::init::median_ms;
use crate::options::Options;
use crate::phases::Run;
use crate::proxy::Calls;

mod bill_table;
mod calls_table;

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
        "sequential AWS round trips per first delivery (calls one after another before the answer)",
        |r| r.first.rounds as f64 / r.first.deliveries.max(1) as f64,
        2,
    ),
    (
        "sequential AWS round trips per duplicate",
        |r| r.duplicates.rounds as f64 / r.duplicates.deliveries.max(1) as f64,
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
        if let Some(c) = &r.consumer {
            push(&mut s, consumer_details(c));
        }
    }
    push(&mut s, String::new());
    calls_table::calls_table(&mut s, runs);
    push(&mut s, String::new());
    bill_table::bill_table(&mut s, o, runs);
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
pub(super) fn push(s: &mut String, line: String) {
    s.push_str(&line);
    s.push('\n');
}

/// `ours / peer` with three decimals, a dash if the peer's figure is zero.
pub(super) fn ratio(ours: f64, peer: f64) -> String {
    if peer == 0.0 {
        "—".into()
    } else {
        format!("{:.3}", ours / peer)
    }
}

/// The paragraph that states the workload.
fn workload(o: &Options) -> String {
    let routed = match o.destinations {
        0 => String::new(),
        n => format!(
            "Every event routed to {n} destination(s), each an EventBridge bus (one PutEvents entry per \
             (event, destination), the ledger item of each pair), instead of the forward.\n"
        ),
    };
    routed + &format!(
        "Workload: {} deliveries of {} events ({} first deliveries, then {} duplicates), {} concurrent, \
         {}-byte Standard Webhooks bodies; {} execution environments (processes) per function; one moto server; \
         {} ms added to every DynamoDB call, {} ms to every SQS call, {} ms to every S3 call and {} ms to every \
         other AWS call (same-region round trips); archive {}; {}.\n",
        o.deliveries,
        o.events,
        o.events,
        o.deliveries - o.events,
        o.concurrency,
        o.body_bytes,
        o.concurrency,
        o.dynamodb_ms,
        o.sqs_ms,
        o.s3_ms,
        o.other_ms,
        match o.archive {
            Some(a) => format!("{} (ARCHIVE_BODIES={})", if a.env_value() == "true" { "on" } else { "off" }, a.env_value()),
            None => "as the template's default".into(),
        },
        if o.settle_before_duplicates {
            "the consumer processed the queue between the first deliveries and the duplicates (which find their keys COMPLETED)"
        } else {
            "the consumer processed the queue after the duplicates (which find the receiver's items as the first deliveries left them)"
        }
    )
}

/// The goals, as figures from this run.
fn goals(s: &mut String, o: &Options, runs: &[Run]) {
    let latency = o.latency();
    for r in runs {
        let n = r.first.deliveries.max(1) as f64;
        let injected: f64 = r
            .first
            .calls
            .iter()
            .map(|(op, m)| m.count as f64 * latency.of(op.service).as_secs_f64() * 1000.0)
            .sum::<f64>()
            / n;
        push(
            s,
            format!(
                "- {}: first delivery p50 {:.1} ms ({:+.1} ms from its {:.2} sequential round trips' injected {injected:.0} ms, \
                 moto's own answer time included); mean answer time less the wait on AWS {:.2} ms (goal: under 1 ms); \
                 AWS calls per duplicate {:.2}",
                r.name,
                r.first.time_ms(50.0),
                r.first.time_ms(50.0) - injected,
                r.first.rounds as f64 / n,
                r.first.own_ms(),
                r.duplicates.calls_total() as f64 / r.duplicates.deliveries.max(1) as f64,
            ),
        );
    }
    if let [ours, peer] = runs {
        let receiver = Bill::receiver(ours, o).controllable();
        let peer_bill = Bill::receiver(peer, o).controllable();
        let mut line = format!(
            "- controllable bill, receiver/peer: {} (goal: at most 0.7)",
            ratio(receiver, peer_bill)
        );
        if let Some(c) = &ours.consumer {
            let consumer = Bill::consumer(c, webhooks(ours), o).controllable();
            line += &format!(
                "; ours with the consumer/peer: {} (the peer has no consumer)",
                ratio(receiver + consumer, peer_bill)
            );
        }
        push(s, line);
    }
}

/// The deliveries a run's bill is per (first deliveries and duplicates).
pub(super) fn webhooks(r: &Run) -> u64 {
    r.first.deliveries + r.duplicates.deliveries
}

/// `DynamoDB PutItem 1000, SQS SendMessage 1000`.
fn call_counts(calls: &Calls) -> String {
    let parts: Vec<String> = calls
        .iter()
        .map(|(op, m)| format!("{} {}", op.label(), m.count))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// The consumer's run in one line.
fn consumer_details(c: &crate::consumer::ConsumerRun) -> String {
    let n = c.invocations.len().max(1) as f64;
    let mean = |f: fn(&crate::consumer::InvocationFigures) -> f64| {
        c.invocations.iter().map(f).sum::<f64>() / n
    };
    format!(
        "- consumer: {} pollers and processes (the mapping's MaximumConcurrency), batches of up to {}; \
         {} messages in {} invocations ({:.2} records each), {} forwards received; per invocation: \
         wall {:.1} ms, of it moto answering {:.1} ms, modelled {:.1} ms, CPU {:.2} ms, {:.2} sequential round trips; \
         its calls: {}; the mapping's: {}; at its cold starts: {}; wall {:.2} s",
        c.processes,
        c.batch_size,
        c.messages,
        c.invocations.len(),
        c.records() as f64 / n,
        c.forwards,
        mean(|i| i.wall_ms),
        mean(|i| i.moto_ms),
        mean(crate::consumer::InvocationFigures::modelled_ms),
        mean(|i| i.cpu_ms),
        mean(|i| i.rounds as f64),
        call_counts(&c.calls),
        call_counts(&c.mapping_calls),
        call_counts(&c.init_calls),
        c.wall.as_secs_f64()
    )
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
        "- {}: {} first deliveries made calls {}; {} duplicates {}; {} forged {} ({} answered 401); \
         its cold starts {}; answers: {} accepted, {} replayed (marked), {} other; \
         {} ledger items, {} messages put on its queue; wall {:.2} s + {:.2} s",
        r.name,
        r.first.deliveries,
        call_counts(&r.first.calls),
        r.duplicates.deliveries,
        call_counts(&r.duplicates.calls),
        r.forged.deliveries,
        call_counts(&r.forged.calls),
        r.forged.answers.unauthorized,
        call_counts(&r.init_calls),
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
