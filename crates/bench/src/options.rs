//! The driver's command line (clap derive): workload size, the binaries under test, the zips
//! to measure and where to write the report.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;

/// `make bench`: the receiver against a minimal Python receiver built on Powertools
/// idempotency (bench/powertools_handler.py), on one moto server, under one workload; then
/// the init durations of the binaries and the release zips' sizes.
///
/// Both functions run as processes polling a Runtime API emulator, one invocation at a time
/// per process, one process per concurrent request; their AWS calls go through a counting
/// proxy, their CPU is read from /proc.
#[derive(Parser, Debug, Clone)]
#[command(name = "bench")]
pub struct Options {
    /// Deliveries in all: the first delivery of every event, then duplicates.
    #[arg(long, default_value_t = 2000)]
    pub deliveries: usize,
    /// Distinct events (first deliveries).
    #[arg(long, default_value_t = 1000)]
    pub events: usize,
    /// Concurrent deliveries, and processes per function.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Size of each webhook body, bytes.
    #[arg(long, default_value_t = 2048)]
    pub body_bytes: usize,
    /// Starts per function for the init duration (0 skips it).
    #[arg(long, default_value_t = 20)]
    pub init_runs: usize,
    /// The receiver binary.
    #[arg(long, default_value = "target/release/receiver")]
    pub receiver: PathBuf,
    /// The consumer binary.
    #[arg(long, default_value = "target/release/consumer")]
    pub consumer: PathBuf,
    /// A release zip to measure, NAME=PATH (repeatable).
    #[arg(long = "zip", value_name = "NAME=PATH", value_parser = parse_zip)]
    pub zips: Vec<(String, PathBuf)>,
    /// How the zips were built (printed above their table).
    #[arg(long)]
    pub zip_note: Option<String>,
    /// Also write the report to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Measure the receiver only, without the Powertools peer.
    #[arg(long)]
    pub skip_peer: bool,
    /// Latency the proxy adds to every DynamoDB call, milliseconds: a same-region round trip
    /// (DynamoDB's published "single-digit millisecond"; see BENCHMARKS.md).
    #[arg(long, default_value_t = 5)]
    pub dynamodb_ms: u64,
    /// Latency the proxy adds to every SQS call, milliseconds (see BENCHMARKS.md).
    #[arg(long, default_value_t = 15)]
    pub sqs_ms: u64,
    /// Between the first deliveries and the duplicates, mark every item of the receiver's
    /// ledger COMPLETED directly on moto (not through the proxy, not counted), as the consumer
    /// leaves them: duplicates that arrive after the event was processed, as a sender's
    /// retries usually do. Without it no consumer runs and every duplicate finds its key still
    /// RECEIVED. The peer has no consumer; its items are final after its own write.
    #[arg(long)]
    pub settle_before_duplicates: bool,
    /// Lambda memory size the bill is computed at, MB (0: the template's `MemorySize`).
    #[arg(long, default_value_t = 0)]
    pub memory_mb: u64,
}

impl Options {
    /// The command line, checked: `deliveries >= events > 0` and `concurrency > 0`.
    pub fn parse_checked() -> Result<Options> {
        let o = Options::parse();
        if o.events == 0 || o.deliveries < o.events || o.concurrency == 0 {
            bail!("need deliveries >= events > 0 and concurrency > 0");
        }
        Ok(o)
    }
}

impl Options {
    /// The latency the proxy adds, by service.
    pub fn latency(&self) -> crate::proxy::Latency {
        crate::proxy::Latency {
            dynamodb: std::time::Duration::from_millis(self.dynamodb_ms),
            sqs: std::time::Duration::from_millis(self.sqs_ms),
        }
    }
}

fn parse_zip(v: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = v.split_once('=').ok_or("--zip NAME=PATH")?;
    Ok((name.to_owned(), path.into()))
}
