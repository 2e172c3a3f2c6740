//! The bill per million webhooks, from what a run measured: calls by operation and their
//! billing units (counted by the proxy), the largest ledger item (DynamoDB's write units per
//! write), the invocations' duration on AWS (what the function itself took, measured, plus
//! the injected same-region round trip of each call; moto's own answer time left out),
//! rounded up to the millisecond, at a memory size, and one front-door request per delivery; at the list prices
//! below, for both functions alike. Lambda gives a function CPU in proportion to its memory
//! (one vCPU at 1769 MB): below that, each invocation's CPU time (measured here on a whole
//! core) is stretched by `1769 / memory` in its billed duration.

use std::path::Path;

use crate::phases::Run;
use crate::proxy::Latency;

/// The list prices the bill uses: us-east-1, on-demand, no free tier, as published on the
/// AWS pricing pages for each service (read on [`PRICES_AS_OF`]).
pub mod prices {
    /// When the prices below were read from the AWS pricing pages.
    pub const PRICES_AS_OF: &str = "2025-06";
    /// API Gateway HTTP API: per request (first 300 million a month).
    pub const HTTP_API_REQUEST: f64 = 1.00 / 1e6;
    /// A Lambda function URL: no charge of its own.
    pub const FUNCTION_URL_REQUEST: f64 = 0.0;
    /// Lambda: per request.
    pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
    /// Lambda on arm64 (Graviton): per GB-second (first 7.5 billion GB-s a month).
    pub const LAMBDA_ARM64_GB_SECOND: f64 = 0.000_013_333_4;
    /// DynamoDB on-demand: per write request unit (1 KiB of item).
    pub const DYNAMODB_WRITE_UNIT: f64 = 0.625 / 1e6;
    /// DynamoDB on-demand: per read request unit (4 KiB, strongly consistent).
    pub const DYNAMODB_READ_UNIT: f64 = 0.125 / 1e6;
    /// SQS FIFO: per request (64 KiB chunk).
    pub const SQS_FIFO_REQUEST: f64 = 0.50 / 1e6;
}

use prices::*;

/// One run's bill per million webhooks (deliveries: first ones and duplicates), in USD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bill {
    /// The front door's per-request charge (API Gateway HTTP API).
    pub front_door: f64,
    pub lambda_requests: f64,
    pub lambda_duration: f64,
    pub dynamodb: f64,
    pub sqs: f64,
}

impl Bill {
    /// The bill of `run` at `memory_mb`, per million deliveries, with the round trips of
    /// `latency`.
    pub fn of(run: &Run, memory_mb: u64, latency: &Latency) -> Bill {
        let deliveries = (run.first.deliveries + run.duplicates.deliveries).max(1) as f64;
        let per_million = 1e6 / deliveries;
        let units = |op: &str| {
            [&run.first, &run.duplicates]
                .iter()
                .map(|p| p.units.get(op).copied().unwrap_or(0.0))
                .sum::<f64>()
        };
        let write_units_per_write = run.largest_item_bytes.max(1).div_ceil(1024) as f64;
        let writes = units("PutItem") + units("UpdateItem") + units("DeleteItem");
        let stretch = (FULL_VCPU_MB / memory_mb.max(1) as f64).max(1.0);
        let billed_secs = (run.first.billed_ms(latency, stretch)
            + run.duplicates.billed_ms(latency, stretch))
            / 1000.0;
        Bill {
            front_door: deliveries * HTTP_API_REQUEST * per_million,
            lambda_requests: deliveries * LAMBDA_REQUEST * per_million,
            lambda_duration: billed_secs * gb(memory_mb) * LAMBDA_ARM64_GB_SECOND * per_million,
            dynamodb: (writes * write_units_per_write * DYNAMODB_WRITE_UNIT
                + units("GetItem") * DYNAMODB_READ_UNIT)
                * per_million,
            sqs: (units("SendMessage") + units("ReceiveMessage") + units("DeleteMessage"))
                * SQS_FIFO_REQUEST
                * per_million,
        }
    }

    pub fn total(&self) -> f64 {
        self.front_door + self.controllable()
    }

    /// Everything but the front door's per-request charge (the same for any receiver).
    pub fn controllable(&self) -> f64 {
        self.lambda_requests + self.lambda_duration + self.dynamodb + self.sqs
    }

    /// The total behind a Lambda function URL (no per-request charge at the door).
    pub fn with_function_url(&self) -> f64 {
        self.controllable() + FUNCTION_URL_REQUEST * 1e6
    }
}

fn gb(memory_mb: u64) -> f64 {
    memory_mb as f64 / 1024.0
}

/// Lambda gives a function one vCPU at 1769 MB, and CPU in proportion below that.
pub const FULL_VCPU_MB: f64 = 1769.0;

/// What the function's duration would cost at other memory sizes, modelled from the run as
/// the bill models it ([`crate::phases::Phase::billed_ms`]): the injected round trips, the
/// function's own time, its CPU time stretched by `1769 / memory` where that is above 1 (the
/// share of a vCPU Lambda gives below 1769 MB). Rows: (memory MB, mean billed ms per
/// invocation, duration USD per million webhooks).
pub fn memory_sizes(run: &Run, latency: &Latency, sizes: &[u64]) -> Vec<(u64, f64, f64)> {
    let n = (run.first.deliveries + run.duplicates.deliveries).max(1) as f64;
    sizes
        .iter()
        .map(|&mb| {
            let stretch = (FULL_VCPU_MB / mb as f64).max(1.0);
            let billed_ms = (run.first.billed_ms(latency, stretch)
                + run.duplicates.billed_ms(latency, stretch))
                / n;
            (
                mb,
                billed_ms,
                billed_ms / 1000.0 * gb(mb) * LAMBDA_ARM64_GB_SECOND * 1e6,
            )
        })
        .collect()
}

/// The Globals `MemorySize` of template.yaml under `root`.
pub fn template_memory_mb(root: &Path) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(root.join("template.yaml"))?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("MemorySize:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("template.yaml has no MemorySize"))
}
