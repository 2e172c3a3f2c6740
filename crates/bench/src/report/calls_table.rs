//! The calls by service and operation per webhook: a column per function (the receiver, the
//! consumer, the event source mapping the driver plays, ours in total, the peer), then the
//! calls of one cold start of each function.

use std::collections::BTreeSet;

use super::{push, webhooks};
use crate::classify::Op;
use crate::phases::Run;
use crate::proxy::{calls_sum, Calls};

/// One column: its name, its calls per webhook and per cold start (`None`: no such function).
struct Column {
    name: String,
    calls: Option<(Calls, f64)>,
    cold: Option<(Calls, f64)>,
}

/// The calls table.
pub(super) fn calls_table(s: &mut String, runs: &[Run]) {
    let mut columns = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let n = webhooks(r).max(1) as f64;
        columns.push(Column {
            name: r.name.into(),
            calls: Some((calls_sum([&r.first.calls, &r.duplicates.calls]), n)),
            cold: Some((r.init_calls.clone(), r.processes.max(1) as f64)),
        });
        if i > 0 {
            continue;
        }
        let c = r.consumer.as_ref();
        columns.push(Column {
            name: "consumer".into(),
            calls: c.map(|c| (c.calls.clone(), n)),
            cold: c.map(|c| (c.init_calls.clone(), c.processes.max(1) as f64)),
        });
        columns.push(Column {
            name: "event source mapping (the driver)".into(),
            calls: c.map(|c| (c.mapping_calls.clone(), n)),
            cold: None,
        });
        let mut all = vec![&r.first.calls, &r.duplicates.calls];
        if let Some(c) = c {
            all.extend([&c.calls, &c.mapping_calls]);
        }
        columns.push(Column {
            name: "**ours in total**".into(),
            calls: Some((calls_sum(all), n)),
            cold: None,
        });
    }
    push(
        s,
        "AWS calls per webhook (first deliveries and duplicates), by service and operation; then per cold start \
         (one process's init). The peer has no consumer and no event source mapping:\n"
            .into(),
    );
    push(
        s,
        format!(
            "| call | {} |",
            columns
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    );
    push(s, format!("| --- |{}", " ---: |".repeat(columns.len())));
    rows(s, &columns, |c| c.calls.as_ref(), "");
    rows(s, &columns, |c| c.cold.as_ref(), "per cold start: ");
}

/// A row per operation any column made, `count / divisor` in each.
fn rows(
    s: &mut String,
    columns: &[Column],
    pick: fn(&Column) -> Option<&(Calls, f64)>,
    prefix: &str,
) {
    let ops: BTreeSet<&Op> = columns
        .iter()
        .filter_map(pick)
        .flat_map(|(calls, _)| calls.keys())
        .collect();
    for op in ops {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| match pick(c) {
                Some((calls, n)) => {
                    format!("{:.3}", calls.get(op).map_or(0, |m| m.count) as f64 / n)
                }
                None => "—".into(),
            })
            .collect();
        push(
            s,
            format!("| {prefix}{} | {} |", op.label(), cells.join(" | ")),
        );
    }
}
