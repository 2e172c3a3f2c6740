//! The report: the workload line, the figures table (one column per function, the ratio
//! ours/peer), each run's details, the init durations and the zip sizes, as markdown.

use std::time::Duration;

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
         {}-byte Standard Webhooks bodies; {} execution environments (processes) per function; one moto server.\n",
        o.deliveries,
        o.events,
        o.events,
        o.deliveries - o.events,
        o.concurrency,
        o.body_bytes,
        o.concurrency
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
