//! The bill per million webhooks, from what a run measured, at the list prices of [`prices`],
//! by line ([`Line`]), for each function alike:
//!
//! - one front-door request and one Lambda request per delivery (the receiver, the peer); one
//!   Lambda request per batch (the consumer);
//! - Lambda's billed duration, modelled because moto on this machine answers in hundreds of
//!   milliseconds where AWS answers in a few: the receiver's and the peer's is what the
//!   function itself took plus the injected same-region round trip of each call
//!   ([`crate::phases::Phase::billed_ms`]), the consumer's each invocation's time less the
//!   time moto itself was answering it ([`crate::consumer::InvocationFigures::billed_ms`]); below
//!   1769 MB (one vCPU) the CPU time measured on a whole core is stretched by
//!   `1769 / memory`; rounded up to the millisecond;
//! - every AWS call the proxy counted, on its line ([`crate::price::line_of`]) by its metered
//!   quantity ([`crate::meter`]): DynamoDB writes x the write units of the largest item the
//!   run left in the table; S3 storage for `--storage-days` of what was written;
//! - the calls a cold start makes (measured per process, from its start to its first poll),
//!   for `--cold-starts-per-million` cold starts of each function per million webhooks.

use std::collections::BTreeMap;
use std::path::Path;

use crate::consumer::ConsumerRun;
use crate::options::Options;
use crate::phases::Run;
use crate::proxy::{calls_sum, Calls};

use crate::price::{prices, Line};
use prices::*;

/// One function's bill per million webhooks (deliveries: first ones and duplicates), USD, by
/// line; a line the function has no use of is absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bill {
    pub lines: BTreeMap<Line, f64>,
}

impl Bill {
    /// The receiver's (or the peer's) bill, from its run.
    pub fn receiver(run: &Run, o: &Options) -> Bill {
        let deliveries = (run.first.deliveries + run.duplicates.deliveries).max(1) as f64;
        let per_million = 1e6 / deliveries;
        let stretch = stretch(o.memory_mb);
        let latency = o.latency();
        let billed_secs = (run.first.billed_ms(&latency, stretch)
            + run.duplicates.billed_ms(&latency, stretch))
            / 1000.0;
        let mut b = Bill::default();
        b.add(Line::FrontDoor, deliveries * HTTP_API_REQUEST * per_million);
        b.add(
            Line::LambdaRequests,
            deliveries * LAMBDA_REQUEST * per_million,
        );
        b.add(
            Line::LambdaDuration,
            billed_secs * gb(o.memory_mb) * LAMBDA_ARM64_GB_SECOND * per_million,
        );
        let calls = calls_sum([&run.first.calls, &run.duplicates.calls]);
        b.add_calls(&calls, run.largest_item_bytes, per_million, o.storage_days);
        b.add_cold_starts(&run.init_calls, run.processes, run.largest_item_bytes, o);
        b
    }

    /// The consumer's bill, with its event source mapping's SQS requests, for the `webhooks`
    /// the receiver's run delivered.
    pub fn consumer(c: &ConsumerRun, webhooks: u64, o: &Options) -> Bill {
        let per_million = 1e6 / webhooks.max(1) as f64;
        let stretch = stretch(o.memory_mb);
        let billed_secs: f64 = c
            .invocations
            .iter()
            .map(|i| i.billed_ms(stretch))
            .sum::<f64>()
            / 1000.0;
        let mut b = Bill::default();
        b.add(
            Line::LambdaRequests,
            c.invocations.len() as f64 * LAMBDA_REQUEST * per_million,
        );
        b.add(
            Line::LambdaDuration,
            billed_secs * gb(o.memory_mb) * LAMBDA_ARM64_GB_SECOND * per_million,
        );
        let calls = calls_sum([&c.calls, &c.mapping_calls]);
        b.add_calls(&calls, c.largest_item_bytes, per_million, o.storage_days);
        b.add_cold_starts(&c.init_calls, c.processes, c.largest_item_bytes, o);
        b
    }

    /// `calls` alone on their lines, per million of `webhooks` (a share of a bill).
    pub fn of_calls(calls: &Calls, item_bytes: usize, webhooks: u64, o: &Options) -> Bill {
        let mut b = Bill::default();
        b.add_calls(
            calls,
            item_bytes,
            1e6 / webhooks.max(1) as f64,
            o.storage_days,
        );
        b
    }

    /// The line's amount (0 where absent).
    pub fn get(&self, line: Line) -> f64 {
        self.lines.get(&line).copied().unwrap_or(0.0)
    }

    /// The sum of several bills, line by line.
    pub fn sum<'a>(bills: impl IntoIterator<Item = &'a Bill>) -> Bill {
        let mut out = Bill::default();
        for b in bills {
            for (line, v) in &b.lines {
                out.add(*line, *v);
            }
        }
        out
    }

    /// All its lines (0, not -0, where it has none).
    pub fn total(&self) -> f64 {
        self.lines.values().fold(0.0, |a, b| a + b)
    }

    /// Everything but the front door's per-request charge (the same for any receiver).
    pub fn controllable(&self) -> f64 {
        self.total() - self.get(Line::FrontDoor)
    }

    /// The total behind a Lambda function URL (no per-request charge at the door).
    pub fn with_function_url(&self) -> f64 {
        self.controllable() + FUNCTION_URL_REQUEST * 1e6
    }

    fn add(&mut self, line: Line, usd: f64) {
        *self.lines.entry(line).or_default() += usd;
    }

    /// `calls` on their lines, scaled by `scale`; DynamoDB writes at the write units of an
    /// item of `item_bytes`, S3 storage for `storage_days`.
    fn add_calls(&mut self, calls: &Calls, item_bytes: usize, scale: f64, storage_days: f64) {
        let write_units = item_bytes.max(1).div_ceil(1024) as f64;
        for m in calls.values() {
            let usd = match m.line {
                Line::DynamoDbWrites => m.units * write_units * m.line.unit_price(),
                _ => m.units * m.line.unit_price(),
            };
            self.add(m.line, usd * scale);
            if m.stored_bytes > 0.0 {
                let gb_months = m.stored_bytes / GB * storage_days / DAYS_PER_MONTH;
                self.add(Line::S3Storage, gb_months * S3_STANDARD_GB_MONTH * scale);
            }
        }
    }

    /// The calls of `processes` cold starts (`init_calls` in all), at
    /// `--cold-starts-per-million` cold starts per million webhooks.
    fn add_cold_starts(
        &mut self,
        init_calls: &Calls,
        processes: usize,
        item_bytes: usize,
        o: &Options,
    ) {
        let per_cold_start = 1.0 / processes.max(1) as f64;
        self.add_calls(
            init_calls,
            item_bytes,
            per_cold_start * o.cold_starts_per_million,
            o.storage_days,
        );
    }
}

fn gb(memory_mb: u64) -> f64 {
    memory_mb as f64 / 1024.0
}

/// How much longer CPU work takes at `memory_mb` than on a whole vCPU.
fn stretch(memory_mb: u64) -> f64 {
    (FULL_VCPU_MB / memory_mb.max(1) as f64).max(1.0)
}

/// Lambda gives a function one vCPU at 1769 MB, and CPU in proportion below that.
pub const FULL_VCPU_MB: f64 = 1769.0;

/// What the function's duration would cost at other memory sizes, modelled from the run as
/// the bill models it ([`crate::phases::Phase::billed_ms`]): the injected round trips, the
/// function's own time, its CPU time stretched by `1769 / memory` where that is above 1 (the
/// share of a vCPU Lambda gives below 1769 MB). Rows: (memory MB, mean billed ms per
/// invocation, duration USD per million webhooks).
pub fn memory_sizes(run: &Run, o: &Options, sizes: &[u64]) -> Vec<(u64, f64, f64)> {
    let latency = o.latency();
    let n = (run.first.deliveries + run.duplicates.deliveries).max(1) as f64;
    sizes
        .iter()
        .map(|&mb| {
            let billed_ms = (run.first.billed_ms(&latency, stretch(mb))
                + run.duplicates.billed_ms(&latency, stretch(mb)))
                / n;
            (
                mb,
                billed_ms,
                billed_ms / 1000.0 * gb(mb) * LAMBDA_ARM64_GB_SECOND * 1e6,
            )
        })
        .collect()
}

/// The Globals `MemorySize` of template.yaml under `root` (read by [`stack_config::Template`]).
pub fn template_memory_mb(root: &Path) -> anyhow::Result<u64> {
    stack_config::Template::load(&root.join("template.yaml"))?
        .globals_memory_size()
        .map(u64::from)
        .ok_or_else(|| anyhow::anyhow!("template.yaml has no literal Globals MemorySize"))
}
