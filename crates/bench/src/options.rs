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
#[derive(Parser, Debug)]
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
    /// Extra latency the proxy adds to every AWS call (a slower AWS), milliseconds.
    #[arg(long, default_value_t = 0)]
    pub aws_delay_ms: u64,
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

fn parse_zip(v: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = v.split_once('=').ok_or("--zip NAME=PATH")?;
    Ok((name.to_owned(), path.into()))
}
