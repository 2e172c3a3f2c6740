//! One function's run: its processes started on their own Runtime API and counting proxy,
//! then three measured phases (first deliveries, duplicates, forged deliveries), each with
//! its wall time, CPU, AWS calls, new connections and answers; then what it left in AWS.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::aws::Aws;
use crate::function::Function;
use crate::options::Options;
use crate::procfs::{clock_ticks, cpu_secs, peak_rss_kib, sched_secs};
use crate::proxy::{Latency, Proxy};
use crate::runtime::Emulator;
use crate::workload::{self, Answers};

/// One phase's figures.
pub struct Phase {
    pub deliveries: u64,
    pub wall: Duration,
    /// utime + stime of the processes.
    pub cpu_secs: f64,
    /// schedstat of the processes' live threads.
    pub sched_secs: f64,
    /// AWS calls by operation.
    pub calls: BTreeMap<String, u64>,
    /// Their billing units by operation ([`crate::proxy::units`]).
    pub units: BTreeMap<String, f64>,
    /// Each delivery's answer time, milliseconds, sorted.
    pub times_ms: Vec<f64>,
    /// Milliseconds the function waited on AWS calls in all (added latency and moto's own
    /// answer time), as the proxy saw them.
    pub aws_wait_ms: f64,
    /// New TCP connections to AWS.
    pub connections: u64,
    pub answers: Answers,
}

impl Phase {
    pub fn calls_total(&self) -> u64 {
        self.calls.values().sum()
    }
    pub fn sends(&self) -> u64 {
        self.calls.get("SendMessage").copied().unwrap_or(0)
    }
    /// The `p`th percentile of the answer times, milliseconds.
    pub fn time_ms(&self, p: f64) -> f64 {
        crate::workload::percentile(&self.times_ms, p)
    }
    /// The mean answer time less the mean time waiting on AWS: what the function itself
    /// adds to the sender's wait (its calls are sequential), milliseconds.
    pub fn own_ms(&self) -> f64 {
        let n = self.deliveries.max(1) as f64;
        self.times_ms.iter().sum::<f64>() / n - self.aws_wait_ms / n
    }
    /// The mean time an invocation would take on AWS, milliseconds: what the function itself
    /// adds ([`Self::own_ms`]) plus the injected round trip of each of its calls (moto's own
    /// answer time, and its queueing on this machine, left out).
    pub fn modelled_ms(&self, latency: &Latency) -> f64 {
        let injected: f64 = self
            .calls
            .iter()
            .map(|(op, n)| {
                let trip = if matches!(
                    op.as_str(),
                    "PutItem" | "UpdateItem" | "DeleteItem" | "GetItem"
                ) {
                    latency.dynamodb
                } else {
                    latency.sqs
                };
                *n as f64 * trip.as_secs_f64() * 1000.0
            })
            .sum();
        self.own_ms().max(0.0) + injected / self.deliveries.max(1) as f64
    }

    /// Lambda's billed duration of the phase at a memory size that gives the function
    /// `1 / stretch` of a vCPU: each invocation's modelled time ([`Self::modelled_ms`]) with
    /// its CPU time (the phase's mean per invocation, measured on a whole core) stretched,
    /// rounded up to the millisecond.
    pub fn billed_ms(&self, latency: &Latency, stretch: f64) -> f64 {
        let cpu_ms = self.cpu_secs * 1000.0 / self.deliveries.max(1) as f64;
        let extra = cpu_ms * (stretch - 1.0).max(0.0);
        (self.modelled_ms(latency) + extra).ceil() * self.deliveries as f64
    }
}

/// One function's figures.
pub struct Run {
    pub name: &'static str,
    pub processes: usize,
    pub runtime_connections: u64,
    pub init_cpu_secs: f64,
    pub first: Phase,
    pub duplicates: Phase,
    /// Deliveries whose body was changed after signing: the floor, no AWS call.
    pub forged: Phase,
    pub peak_rss_kib: u64,
    /// Ledger items in the function's table afterwards.
    pub items: usize,
    /// The largest of them, bytes as DynamoDB bills them.
    pub largest_item_bytes: usize,
    /// Messages on the function's queue afterwards.
    pub messages: u64,
}

/// Where a function's run stores its ledger and queue.
pub struct Store<'a> {
    pub table: &'a str,
    pub queue_url: &'a str,
    /// Whether `--settle-before-duplicates` applies (the receiver's ledger, not the peer's).
    pub settle: bool,
}

/// The processes of one function and what measures them.
struct Bench<'a> {
    emu: Emulator,
    proxy: Proxy,
    pids: Vec<u32>,
    ticks: f64,
    o: &'a Options,
}

/// Runs `f` with `o.concurrency` processes, its AWS calls through a counting proxy in front
/// of `upstream`, and counts what it left in `store`.
pub async fn run_function(
    f: &Function,
    o: &Options,
    upstream: &str,
    store: Store<'_>,
    aws: &Aws,
) -> Result<Run> {
    let proxy = Proxy::start(upstream, o.latency()).await?;
    let emu = Emulator::start().await?;
    let f = f.with_endpoint(&proxy.endpoint());
    let mut children = Vec::new();
    for _ in 0..o.concurrency {
        children.push(f.spawn(&emu.address())?);
    }
    let pids: Vec<u32> = children.iter().filter_map(|c| c.id()).collect();
    emu.wait_for_polls(pids.len() as u64, Duration::from_secs(120))
        .await
        .with_context(|| format!("{}: waiting for init", f.name))?;
    let bench = Bench {
        emu,
        proxy,
        pids,
        ticks: clock_ticks() as f64,
        o,
    };
    let init_cpu = cpu_secs(&bench.pids, bench.ticks)?;

    let [firsts, dups, forged] = workload::phases(o);
    let first = bench.phase(firsts).await?;
    if o.settle_before_duplicates && store.settle {
        aws.complete_all(store.table).await?;
    }
    let duplicates = bench.phase(dups).await?;
    let forged = bench.phase(forged).await?;

    let peak = bench
        .pids
        .iter()
        .map(|p| peak_rss_kib(*p))
        .max()
        .unwrap_or(0);
    drop(children);
    let (items, largest_item_bytes) = aws.count_items(store.table).await?;
    Ok(Run {
        name: f.name,
        processes: bench.pids.len(),
        runtime_connections: bench.emu.connections.load(Ordering::SeqCst),
        init_cpu_secs: init_cpu,
        first,
        duplicates,
        forged,
        peak_rss_kib: peak,
        items,
        largest_item_bytes,
        messages: aws.count_messages(store.queue_url).await?,
    })
}

impl Bench<'_> {
    /// Delivers `indexes` and measures what that cost.
    async fn phase(&self, indexes: Vec<usize>) -> Result<Phase> {
        let (calls0, conns0) = self.proxy.snapshot();
        let cpu0 = cpu_secs(&self.pids, self.ticks)?;
        let sched0 = sched_secs(&self.pids);
        let started = Instant::now();
        let n = indexes.len() as u64;
        let (answers, times_ms) = workload::deliver(&self.emu, indexes, self.o).await?;
        let wall = started.elapsed();
        let cpu1 = cpu_secs(&self.pids, self.ticks)?;
        let sched1 = sched_secs(&self.pids);
        let (calls1, conns1) = self.proxy.snapshot();
        Ok(Phase {
            deliveries: n,
            wall,
            cpu_secs: cpu1 - cpu0,
            sched_secs: sched1 - sched0,
            calls: diff(&calls1.count, &calls0.count),
            units: calls1
                .units
                .iter()
                .map(|(k, v)| (k.clone(), v - calls0.units.get(k).copied().unwrap_or(0.0)))
                .filter(|(_, v)| *v > 0.0)
                .collect(),
            times_ms,
            aws_wait_ms: calls1.wait_ms.values().sum::<f64>()
                - calls0.wait_ms.values().sum::<f64>(),
            connections: conns1 - conns0,
            answers,
        })
    }
}

/// The counts that grew from `before` to `after`, by how much.
fn diff(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect()
}
