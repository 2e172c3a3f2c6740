//! One function's run: its processes started on their own Runtime API, each with its own lane
//! of a counting proxy, then three measured phases (first deliveries, duplicates, forged
//! deliveries), each with its wall time, CPU, AWS calls, sequential round trips, new
//! connections and answers; the consumer run where the function has one; then what it left in
//! AWS.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::aws::Aws;
use crate::classify::Service;
use crate::consumer::{ConsumerRun, ConsumerSetup};
use crate::function::Function;
use crate::options::Latency;
use crate::options::Options;
use crate::procfs::{clock_ticks, cpu_secs, peak_rss_kib, sched_secs};
use crate::proxy::{calls_since, rounds, Calls, Proxy};
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
    /// AWS calls by kind, with their billing quantities and waits.
    pub calls: Calls,
    /// Sequential round trips to AWS in all: calls made one after another (overlapping
    /// calls of one invocation count once).
    pub rounds: u64,
    /// Each delivery's answer time, milliseconds, sorted.
    pub times_ms: Vec<f64>,
    /// New TCP connections to AWS.
    pub connections: u64,
    pub answers: Answers,
}

impl Phase {
    pub fn calls_total(&self) -> u64 {
        self.calls.values().map(|m| m.count).sum()
    }
    /// SQS SendMessage calls.
    pub fn sends(&self) -> u64 {
        self.calls
            .iter()
            .filter(|(op, _)| op.service == Service::Sqs && op.name == "SendMessage")
            .map(|(_, m)| m.count)
            .sum()
    }
    /// Milliseconds the function waited on AWS calls in all (added latency and moto's own
    /// answer time), as the proxy saw them.
    pub fn aws_wait_ms(&self) -> f64 {
        self.calls.values().map(|m| m.wait_ms).sum()
    }
    /// The `p`th percentile of the answer times, milliseconds.
    pub fn time_ms(&self, p: f64) -> f64 {
        crate::workload::percentile(&self.times_ms, p)
    }
    /// The mean answer time less the mean time waiting on AWS: what the function itself
    /// adds to the sender's wait (its calls are sequential), milliseconds.
    pub fn own_ms(&self) -> f64 {
        let n = self.deliveries.max(1) as f64;
        self.times_ms.iter().sum::<f64>() / n - self.aws_wait_ms() / n
    }
    /// The mean time an invocation would take on AWS, milliseconds: what the function itself
    /// adds ([`Self::own_ms`]) plus the injected round trip of each of its calls (moto's own
    /// answer time, and its queueing on this machine, left out).
    pub fn modelled_ms(&self, latency: &Latency) -> f64 {
        let injected: f64 = self
            .calls
            .iter()
            .map(|(op, m)| m.count as f64 * latency.of(op.service).as_secs_f64() * 1000.0)
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
    /// The AWS calls of all its processes' inits (cold starts), before the first delivery.
    pub init_calls: Calls,
    pub first: Phase,
    pub duplicates: Phase,
    /// Deliveries whose body was changed after signing: the floor, no AWS call.
    pub forged: Phase,
    pub peak_rss_kib: u64,
    /// Ledger items in the function's table afterwards.
    pub items: usize,
    /// The largest of them, bytes as DynamoDB bills them.
    pub largest_item_bytes: usize,
    /// Messages the function put on its queue (counted before its consumer took them).
    pub messages: u64,
    /// Its consumer's run; `None` for the peer, which has none.
    pub consumer: Option<ConsumerRun>,
}

/// Where a function's run stores its ledger and queue, and the consumer that processes it.
pub struct Store<'a> {
    pub table: &'a str,
    pub queue_url: &'a str,
    pub consumer: Option<&'a ConsumerSetup<'a>>,
}

/// The processes of one function and what measures them.
struct Bench<'a> {
    emu: Emulator,
    proxy: Proxy,
    pids: Vec<u32>,
    ticks: f64,
    o: &'a Options,
}

/// Runs `f` with `o.concurrency` processes, each on its own lane of a counting proxy in front
/// of `upstream`; its consumer, where it has one, after the first deliveries
/// (`--settle-before-duplicates`) or after the duplicates; and counts what it left in `store`.
pub async fn run_function(
    f: &Function,
    o: &Options,
    upstream: &str,
    store: Store<'_>,
    aws: &Aws,
) -> Result<Run> {
    let proxy = Proxy::start(upstream, o.latency(), o.concurrency).await?;
    let emu = Emulator::start().await?;
    let mut children = Vec::new();
    for lane in 0..o.concurrency {
        children.push(
            f.with_endpoint(&proxy.endpoint(lane))
                .spawn(&emu.address())?,
        );
    }
    let pids: Vec<u32> = children.iter().filter_map(|c| c.id()).collect();
    emu.wait_for_polls(pids.len() as u64, Duration::from_secs(120))
        .await
        .with_context(|| format!("{}: waiting for init", f.name))?;
    proxy.check(f.name)?;
    let bench = Bench {
        emu,
        proxy,
        pids,
        ticks: clock_ticks() as f64,
        o,
    };
    let init_cpu = cpu_secs(&bench.pids, bench.ticks)?;
    let init_calls = bench.proxy.snapshot().0;

    let [firsts, dups, forged] = workload::phases(o);
    let mut messages = 0;
    let mut consumer = None;
    let first = bench.phase(firsts, f.name).await?;
    if let (true, Some(c)) = (o.settle_before_duplicates, store.consumer) {
        messages += aws.count_messages(store.queue_url).await?;
        consumer = Some(c.drain(aws).await?);
    }
    let duplicates = bench.phase(dups, f.name).await?;
    let forged = bench.phase(forged, f.name).await?;
    if let (None, Some(c)) = (&consumer, store.consumer) {
        messages += aws.count_messages(store.queue_url).await?;
        consumer = Some(c.drain(aws).await?);
    }

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
        init_calls,
        first,
        duplicates,
        forged,
        peak_rss_kib: peak,
        items,
        largest_item_bytes,
        messages: messages + aws.count_messages(store.queue_url).await?,
        consumer,
    })
}

impl Bench<'_> {
    /// Delivers `indexes` and measures what that cost; fails where a call could not be billed.
    async fn phase(&self, indexes: Vec<usize>, name: &str) -> Result<Phase> {
        let (calls0, conns0) = self.proxy.snapshot();
        let cpu0 = cpu_secs(&self.pids, self.ticks)?;
        let sched0 = sched_secs(&self.pids);
        let started = Instant::now();
        let n = indexes.len() as u64;
        let (answers, times_ms) = workload::deliver(&self.emu, indexes, self.o).await?;
        let ended = Instant::now();
        let cpu1 = cpu_secs(&self.pids, self.ticks)?;
        let sched1 = sched_secs(&self.pids);
        let (calls1, conns1) = self.proxy.snapshot();
        self.proxy.check(name)?;
        let rounds = (0..self.proxy.lanes())
            .map(|lane| rounds(&self.proxy.spans(lane, started, ended)))
            .sum();
        Ok(Phase {
            deliveries: n,
            wall: ended - started,
            cpu_secs: cpu1 - cpu0,
            sched_secs: sched1 - sched0,
            calls: calls_since(&calls1, &calls0),
            rounds,
            times_ms,
            connections: conns1 - conns0,
            answers,
        })
    }
}
