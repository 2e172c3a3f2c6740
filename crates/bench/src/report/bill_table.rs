//! The bill per million webhooks by line: a column per function (the receiver, its consumer
//! with its event source mapping, ours in total, the peer), the ratio of ours to the peer's,
//! the controllable part, the archive's share, and what the receiver's duration would cost at
//! other memory sizes.

use super::{push, ratio, webhooks};
use crate::bill::{memory_sizes, Bill};
use crate::options::Options;
use crate::phases::Run;
use crate::price::{prices, Line};
use crate::proxy::{calls_sum, Calls};

/// The table's columns: a name and a bill, `None` where the function has none.
struct Columns {
    columns: Vec<(String, Option<Bill>)>,
    /// Ours in total: the receiver's with its consumer's, where it has one.
    ours: Bill,
    peer: Option<Bill>,
}

impl Columns {
    /// The receiver, its consumer, ours in total, the peer.
    fn of(o: &Options, runs: &[Run]) -> Option<Columns> {
        let ours = runs.first()?;
        let receiver = Bill::receiver(ours, o);
        let mut columns = vec![(ours.name.to_owned(), Some(receiver.clone()))];
        let mut total = receiver.clone();
        if let Some(c) = &ours.consumer {
            let consumer = Bill::consumer(c, webhooks(ours), o);
            total = Bill::sum([&receiver, &consumer]);
            columns.push((
                "consumer (and its event source mapping)".into(),
                Some(consumer),
            ));
            columns.push(("**ours: receiver + consumer**".into(), Some(total.clone())));
        }
        let peer = runs.get(1).map(|p| Bill::receiver(p, o));
        if let Some(p) = runs.get(1) {
            columns.push((format!("{} (no consumer)", p.name), peer.clone()));
        }
        Some(Columns {
            columns,
            ours: total,
            peer,
        })
    }

    /// One row: `f` of each column's bill, and of ours over the peer's.
    fn row(&self, s: &mut String, label: &str, f: &dyn Fn(&Bill) -> Option<f64>) {
        let cells: Vec<String> = self
            .columns
            .iter()
            .map(|(_, b)| match b.as_ref().and_then(f) {
                Some(v) => format!("{v:.4}"),
                None => "—".into(),
            })
            .collect();
        let r = match (f(&self.ours), self.peer.as_ref().and_then(f)) {
            (Some(a), Some(b)) => ratio(a, b),
            _ => "—".into(),
        };
        push(s, format!("| {label} | {} | {r} |", cells.join(" | ")));
    }

    /// Whether any column has `line`.
    fn has(&self, line: Line) -> bool {
        self.columns
            .iter()
            .any(|(_, b)| b.as_ref().is_some_and(|b| b.lines.contains_key(&line)))
    }
}

/// The bill table and the lines under it.
pub(super) fn bill_table(s: &mut String, o: &Options, runs: &[Run]) {
    let (Some(ours), Some(table)) = (runs.first(), Columns::of(o, runs)) else {
        return;
    };
    push(s, header(o));
    let names: Vec<&str> = table.columns.iter().map(|(n, _)| n.as_str()).collect();
    push(
        s,
        format!("| line | {} | ratio ours/peer |", names.join(" | ")),
    );
    push(s, format!("| --- |{} --- |", " ---: |".repeat(names.len())));
    for line in Line::ALL.into_iter().filter(|l| table.has(*l)) {
        table.row(s, &line_label(line, o), &|b: &Bill| {
            b.lines.get(&line).copied()
        });
    }
    table.row(s, "**total**", &|b: &Bill| Some(b.total()));
    table.row(
        s,
        "**controllable** (all but the front door)",
        &|b: &Bill| Some(b.controllable()),
    );
    table.row(
        s,
        "total behind a function URL (no door charge)",
        &|b: &Bill| Some(b.with_function_url()),
    );
    push(s, String::new());
    if let Some(p) = &table.peer {
        push(
            s,
            format!(
                "- controllable, receiver/peer (like for like): {}; ours with the consumer/peer: {} \
                 (the peer has no consumer: bench/powertools_handler.py only receives)",
                ratio(Bill::receiver(ours, o).controllable(), p.controllable()),
                ratio(table.ours.controllable(), p.controllable())
            ),
        );
    }
    push(s, archive_share(ours, o, &table.ours));
    for r in runs {
        push(s, memory_row(r, o));
    }
}

/// What the bill assumes, above the table.
fn header(o: &Options) -> String {
    format!(
        "Bill per million webhooks of this workload, USD (us-east-1 list prices: crates/bench/src/price/prices.rs, \
         read {} and {}; Lambda arm64 at {} MB, billed duration modelled (own time + injected round trips, CPU stretched by 1769/MB); \
         DynamoDB on-demand; SQS FIFO; S3 Standard, what was written kept {} days; {} cold starts of each function per million webhooks):\n",
        prices::PRICES_AS_OF,
        prices::ADDED_PRICES_CHECKED,
        o.memory_mb,
        o.storage_days,
        o.cold_starts_per_million
    )
}

/// A line's label, with what it assumes.
fn line_label(line: Line, o: &Options) -> String {
    match line {
        Line::S3Storage => format!(
            "S3 Standard storage ({} days of what was written)",
            o.storage_days
        ),
        Line::SecretsManager => format!(
            "Secrets Manager API calls ({} cold starts per million)",
            o.cold_starts_per_million
        ),
        _ => line.label().to_owned(),
    }
}

/// The archive's share of ours: the S3 calls under `archive/` with their storage, and
/// Firehose.
fn archive_share(ours: &Run, o: &Options, total: &Bill) -> String {
    let mut sets: Vec<&Calls> = vec![&ours.first.calls, &ours.duplicates.calls];
    if let Some(c) = &ours.consumer {
        sets.push(&c.calls);
    }
    let archive: Calls = calls_sum(sets)
        .into_iter()
        .filter(|(op, _)| op.is_archive())
        .collect();
    let usd = Bill::of_calls(&archive, ours.largest_item_bytes, webhooks(ours), o).total();
    let share = if total.controllable() > 0.0 {
        usd / total.controllable() * 100.0
    } else {
        0.0
    };
    let what: Vec<String> = archive.keys().map(|op| op.label()).collect();
    if what.is_empty() {
        return "- the archive's share of ours: none, no archive call in this run (ARCHIVE_BODIES off, \
                or a build that does not archive)"
            .into();
    }
    format!(
        "- the archive's share of ours: {usd:.4} USD per million ({share:.1}% of the controllable bill): {} \
         with their storage (the Lambda duration of its round trips not included: compare a run with --archive off)",
        what.join(", ")
    )
}

/// The receiver's (or peer's) duration at other memory sizes.
fn memory_row(r: &Run, o: &Options) -> String {
    let rows = memory_sizes(r, o, &[128, 256, 512, 1024, 1769]);
    let cells: Vec<String> = rows
        .iter()
        .map(|(mb, ms, usd)| format!("{mb} MB: {ms:.0} ms, {usd:.4}"))
        .collect();
    format!(
        "- {} duration at other memory sizes (mean billed ms per invocation, USD per million): {}",
        r.name,
        cells.join("; ")
    )
}
