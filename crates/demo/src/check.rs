//! `demo check-events`: every file in `events/` invoked through the emulator, each answer
//! compared with what [`events`] says it must be.

use std::time::Instant;

use anyhow::{bail, Context as _};
use serde_json::Value;

use crate::events;
use crate::stack::{Stack, StackOptions};
use devstack::testkit;

/// One line of `check-events`.
#[derive(Debug)]
pub struct Checked {
    pub file: String,
    pub expected: String,
    pub got: String,
    pub ok: bool,
}

/// Invokes every file in `events/` through the emulator, in the README's order, and compares
/// each answer with its expectation.
pub async fn check_events() -> anyhow::Result<Vec<Checked>> {
    let start = Instant::now();
    let dir = events::events_dir();
    let samples = events::generate(testkit::now_ms() / 1000);
    let mut on_disk = Vec::new();
    for s in &samples {
        let path = dir.join(&s.file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {} (run `make events`)", path.display()))?;
        let event: Value = serde_json::from_str(&text)?;
        if s.timestamped {
            let at = events::generated_at(&event).unwrap_or(0);
            let age = testkit::now_ms() / 1000 - at;
            if age > events::STALE_AFTER_S - 30 {
                bail!(
                    "{} was generated {age} s ago: its timestamp is (nearly) stale; run `make events` first",
                    s.file
                );
            }
        }
        on_disk.push(event);
    }
    let stack = Stack::build_and_start(&StackOptions::loopback("check-events")?, start, "").await?;
    let mut out = Vec::new();
    for (s, event) in samples.iter().zip(on_disk) {
        if s.function == events::Function::Consumer {
            events::accept_sample(&stack.ledger(), &event).await?;
        }
        let before: u64 = stack.sor.calls().values().sum();
        let answer = stack.watch.invoke(s.function.name(), &event).await?;
        let after: u64 = stack.sor.calls().values().sum();
        let (got, ok) = compare(&s.expected, &answer, after - before);
        out.push(Checked {
            file: s.file.clone(),
            expected: s.expected.describe(),
            got,
            ok,
        });
    }
    Ok(out)
}

/// Compares a function's answer with an expectation: (what it got, in the README's words; ok).
pub fn compare(expected: &events::Expected, answer: &Value, forwarded: u64) -> (String, bool) {
    match expected {
        events::Expected::Http { .. } => {
            let status = answer
                .get("statusCode")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let body = answer
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let replayed = answer
                .pointer("/headers/idempotent-replayed")
                .and_then(Value::as_str)
                == Some("true");
            let got = events::Expected::Http {
                status: u16::try_from(status).unwrap_or(0),
                body,
                replayed,
            };
            (got.describe(), &got == expected)
        }
        events::Expected::Batch { .. } => {
            let failures = answer
                .get("batchItemFailures")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.get("itemIdentifier").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let got = events::Expected::Batch {
                failures,
                side_effects: usize::try_from(forwarded).unwrap_or(0),
            };
            (got.describe(), &got == expected)
        }
    }
}
