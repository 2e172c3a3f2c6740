//! The driver's command line (clap derive): workload size, the binaries under test, the zips
//! to measure and where to write the report.

use std::time::Duration;

use crate::classify::Service;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;

/// `make bench`: the receiver against a minimal Python receiver built on Powertools
/// idempotency (bench/powertools_handler.py), on one moto server, under one workload, and
/// the consumer processing what the receiver queued; then the init durations of the binaries
/// and the release zips' sizes.
///
/// The functions run as processes polling a Runtime API emulator, one invocation at a time
/// per process, one process per concurrent request; their AWS calls go through a counting
/// proxy that classifies and prices each, their CPU is read from /proc.
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
    /// Latency the proxy adds to every S3 call, milliseconds: S3's performance guidelines put
    /// the median latency of small requests "in the tens of milliseconds" (an assumption
    /// within that range; see BENCHMARKS.md).
    #[arg(long, default_value_t = 30)]
    pub s3_ms: u64,
    /// Latency the proxy adds to every Secrets Manager, Firehose and EventBridge call,
    /// milliseconds (no published figure: an assumption, as SQS's).
    #[arg(long, default_value_t = 15)]
    pub other_ms: u64,
    /// Run the consumer between the first deliveries and the duplicates instead of after the
    /// duplicates: duplicates that arrive after the event was processed (their keys
    /// COMPLETED), as a sender's retries usually do. Without it every duplicate finds its key
    /// still RECEIVED. Either way the consumer processes everything the receiver put on the
    /// queue. The peer has no consumer; its items are final after its own write.
    #[arg(long)]
    pub settle_before_duplicates: bool,
    /// The archive on or off: ARCHIVE_BODIES of every function whose stack environment has
    /// it (the receiver here; the consumer once it archives). Default: the template's.
    #[arg(long, value_enum)]
    pub archive: Option<Switch>,
    /// Days the bill keeps what the functions wrote to S3 in Standard storage (the archive).
    #[arg(long, default_value_t = 7.0)]
    pub storage_days: f64,
    /// Cold starts of each function per million webhooks, for the calls a cold start makes
    /// (the consumer's Secrets Manager read): an assumption, see BENCHMARKS.md.
    #[arg(long, default_value_t = 1000.0)]
    pub cold_starts_per_million: f64,
    /// Milliseconds the local system of record (the consumer's FORWARD_URL) waits before its
    /// 200: the forward's round trip, part of the consumer's billed duration.
    #[arg(long, default_value_t = 0)]
    pub forward_ms: u64,
    /// Lambda memory size the bill is computed at, MB (0: the template's `MemorySize`).
    #[arg(long, default_value_t = 0)]
    pub memory_mb: u64,
    /// Route every event to this many destinations (docs/routing.md), each an EventBridge bus
    /// on moto (`Destinations` and `DestinationBusArns` of the stack); 0, the template's
    /// default: none, every event forwarded to FORWARD_URL.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=16))]
    pub destinations: u8,
}

impl Options {
    /// The command line, checked: `deliveries >= events > 0` and `concurrency > 0`.
    pub fn parse_checked() -> Result<Options> {
        let o = Options::parse();
        if o.events == 0 || o.deliveries < o.events || o.concurrency == 0 {
            bail!("need deliveries >= events > 0 and concurrency > 0");
        }
        if !(o.storage_days >= 0.0 && o.cold_starts_per_million >= 0.0) {
            bail!("need --storage-days and --cold-starts-per-million >= 0");
        }
        Ok(o)
    }
}

impl Options {
    /// The latency the proxy adds, by service.
    pub fn latency(&self) -> Latency {
        let ms = std::time::Duration::from_millis;
        Latency {
            dynamodb: ms(self.dynamodb_ms),
            sqs: ms(self.sqs_ms),
            s3: ms(self.s3_ms),
            other: ms(self.other_ms),
        }
    }
}

/// The latency the proxy adds to each call, by service.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    pub dynamodb: Duration,
    pub sqs: Duration,
    pub s3: Duration,
    /// Secrets Manager, Firehose, EventBridge.
    pub other: Duration,
}

impl Latency {
    /// The round trip added to a call of `service`.
    pub fn of(&self, service: Service) -> Duration {
        match service {
            Service::DynamoDb => self.dynamodb,
            Service::Sqs => self.sqs,
            Service::S3 => self.s3,
            Service::SecretsManager | Service::Firehose | Service::EventBridge => self.other,
        }
    }
}

/// On or off.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    /// `true` or `false`, as an environment variable takes it.
    pub fn env_value(self) -> &'static str {
        match self {
            Switch::On => "true",
            Switch::Off => "false",
        }
    }
}

fn parse_zip(v: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = v.split_once('=').ok_or("--zip NAME=PATH")?;
    Ok((name.to_owned(), path.into()))
}
