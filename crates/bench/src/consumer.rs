//! The consumer's run: the consumer binary, with the bench stack's environment (the
//! template's defaults, `FORWARD_URL` the local [`ForwardServer`]), processing everything the
//! receiver put on the queue, fed by the driver playing the event source mapping
//! ([`Mapping`]): one poller per concurrent invocation the mapping allows
//! (`ScalingConfig.MaximumConcurrency`), each with its own consumer process, Runtime API and
//! proxy lane, receiving a batch, invoking, deleting what did not fail, until every message
//! the queue held is deleted.
//!
//! Each invocation's duration on AWS is modelled as its time less the time during which moto
//! itself was answering one of its calls (the injected round trips stay in): calls the
//! consumer makes concurrently (its FIFO groups run side by side) overlap, so the receiver's
//! sum of waits would count them twice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use aws_lambda_events::sqs::SqsBatchResponse;

use crate::aws::Aws;
use crate::forward::ForwardServer;
use crate::function::Function;
use crate::mapping::Mapping;
use crate::options::Options;
use crate::procfs::sched_secs;
use crate::proxy::{calls_since, rounds, union_ms, Calls, Proxy};
use crate::runtime::{Emulator, Outcome};

/// The template's consumer `Timeout`: each invocation's deadline.
const CONSUMER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a drain may take before the bench gives up on it.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

/// One consumer invocation's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct InvocationFigures {
    pub records: usize,
    /// From handing the event to the Runtime API to the answer.
    pub wall_ms: f64,
    /// Of that, the time moto itself was answering at least one of its calls.
    pub moto_ms: f64,
    /// CPU time of the process (schedstat).
    pub cpu_ms: f64,
    /// Its sequential round trips to AWS.
    pub rounds: u64,
}

impl InvocationFigures {
    /// The modelled time on AWS: the wall time less moto's own answering.
    pub fn modelled_ms(&self) -> f64 {
        (self.wall_ms - self.moto_ms).max(0.0)
    }

    /// Lambda's billed duration at a memory size that gives `1 / stretch` of a vCPU.
    pub fn billed_ms(&self, stretch: f64) -> f64 {
        (self.modelled_ms() + self.cpu_ms * (stretch - 1.0).max(0.0)).ceil()
    }
}

/// What the consumer's run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerRun {
    /// Consumer processes (pollers), each one cold start.
    pub processes: usize,
    pub batch_size: i32,
    /// The AWS calls of their inits.
    pub init_calls: Calls,
    /// The consumer's calls during its invocations.
    pub calls: Calls,
    /// The event source mapping's SQS requests (ReceiveMessage, DeleteMessageBatch).
    pub mapping_calls: Calls,
    pub invocations: Vec<InvocationFigures>,
    /// Messages on the queue when the drain began (all deleted at its end).
    pub messages: u64,
    /// Forwards the local system of record received.
    pub forwards: u64,
    /// The largest ledger item after the drain, bytes as DynamoDB bills them.
    pub largest_item_bytes: usize,
    pub wall: Duration,
}

impl ConsumerRun {
    /// The records it processed.
    pub fn records(&self) -> usize {
        self.invocations.iter().map(|i| i.records).sum()
    }
}

/// What a drain needs: the consumer, its queue and table, the mapping's settings.
pub struct ConsumerSetup<'a> {
    pub function: &'a Function,
    pub queue_url: &'a str,
    pub table: &'a str,
    /// The mapping's `BatchSize`.
    pub batch_size: i32,
    /// The mapping's `MaximumConcurrency`: pollers, and consumer processes.
    pub pollers: usize,
    pub upstream: &'a str,
    pub forward: &'a ForwardServer,
    pub o: &'a Options,
}

/// The pollers' shared progress.
struct Progress {
    expected: u64,
    deleted: AtomicU64,
    until: Instant,
}

impl ConsumerSetup<'_> {
    /// Starts the consumer's processes and feeds them the queue until every message on it is
    /// deleted; fails where an invocation fails or reports a failed record (the bench measures
    /// the path where everything succeeds), or where a call cannot be billed.
    pub async fn drain(&self, aws: &Aws) -> Result<ConsumerRun> {
        let expected = aws.count_messages(self.queue_url).await?;
        eprintln!(
            "bench: consumer ({expected} messages, {} pollers)",
            self.pollers
        );
        let proxy = Proxy::start(self.upstream, self.o.latency(), self.pollers).await?;
        let mapping_proxy = Proxy::start(self.upstream, self.o.latency(), self.pollers).await?;
        let sdk = inbox::app::sdk_config().await;
        let arn = aws.queue_arn(self.queue_url).await?;
        let mapping = Mapping::new(&sdk, &mapping_proxy, self.queue_url, &arn, self.batch_size);
        let mut emus = Vec::new();
        let mut children = Vec::new();
        for lane in 0..self.pollers {
            let emu = Emulator::with_timeout(CONSUMER_TIMEOUT).await?;
            let f = self.function.with_endpoint(&proxy.endpoint(lane));
            children.push(f.spawn(&emu.address())?);
            emus.push(emu);
        }
        for emu in &emus {
            emu.wait_for_polls(1, Duration::from_secs(120))
                .await
                .context("consumer: waiting for init")?;
        }
        proxy.check("consumer")?;
        let init_calls = proxy.snapshot().0;
        let forwards0 = self.forward.received();
        let started = Instant::now();
        let progress = Progress {
            expected,
            deleted: AtomicU64::new(0),
            until: started + DRAIN_LIMIT,
        };
        let pids: Vec<u32> = children.iter().filter_map(|c| c.id()).collect();
        let pollers = emus
            .iter()
            .zip(&pids)
            .enumerate()
            .map(|(lane, (emu, pid))| poll(lane, emu, *pid, &proxy, &mapping, &progress));
        let invocations: Vec<InvocationFigures> = futures::future::try_join_all(pollers)
            .await?
            .into_iter()
            .flatten()
            .collect();
        let wall = started.elapsed();
        proxy.check("consumer")?;
        mapping_proxy.check("event source mapping")?;
        drop(children);
        Ok(ConsumerRun {
            processes: self.pollers,
            batch_size: mapping.batch_size,
            calls: calls_since(&proxy.snapshot().0, &init_calls),
            init_calls,
            mapping_calls: mapping_proxy.snapshot().0,
            invocations,
            messages: expected,
            forwards: self.forward.received() - forwards0,
            largest_item_bytes: aws.count_items(self.table).await?.1,
            wall,
        })
    }
}

/// One poller: receive, invoke its process, delete, until the queue is drained.
async fn poll(
    lane: usize,
    emu: &Emulator,
    pid: u32,
    proxy: &Proxy,
    mapping: &Mapping,
    progress: &Progress,
) -> Result<Vec<InvocationFigures>> {
    let mut out = Vec::new();
    while progress.deleted.load(Ordering::SeqCst) < progress.expected {
        if Instant::now() > progress.until {
            bail!(
                "the queue did not drain within {DRAIN_LIMIT:?}: {} of {} messages deleted",
                progress.deleted.load(Ordering::SeqCst),
                progress.expected
            );
        }
        let messages = mapping.receive(lane).await?;
        if messages.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let event = serde_json::to_vec(&mapping.event(&messages))?;
        let cpu0 = sched_secs(&[pid]);
        let t0 = Instant::now();
        let outcome = emu.invoke(event).await?;
        let t1 = Instant::now();
        let cpu1 = sched_secs(&[pid]);
        let response: SqsBatchResponse = match outcome {
            Outcome::Response(body) => serde_json::from_slice(&body).with_context(|| {
                format!("the consumer's answer: {}", String::from_utf8_lossy(&body))
            })?,
            Outcome::Error(body) => bail!(
                "a consumer invocation failed: {}",
                String::from_utf8_lossy(&body)
            ),
        };
        let spans = proxy.spans(lane, t0, t1);
        let deleted = mapping.delete(lane, &messages, &response).await?;
        progress.deleted.fetch_add(deleted as u64, Ordering::SeqCst);
        if let Some(f) = response.batch_item_failures.first() {
            bail!(
                "the consumer reported {} of {} records failed (e.g. {}); the bench measures the path where all succeed",
                response.batch_item_failures.len(),
                messages.len(),
                f.item_identifier
            );
        }
        out.push(InvocationFigures {
            records: messages.len(),
            wall_ms: (t1 - t0).as_secs_f64() * 1000.0,
            moto_ms: union_ms(spans.iter().map(|s| (s.forwarded, s.end))),
            cpu_ms: (cpu1 - cpu0) * 1000.0,
            rounds: rounds(&spans),
        });
    }
    Ok(out)
}
