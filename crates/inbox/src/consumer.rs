//! The consumer: for each message, take the key (re-checking its status), run the side
//! effect, complete or fail it, and report what must come back as partial batch failures.
//!
//! The batch runs by FIFO group as [`crate::fifo`] states: groups concurrently (at most
//! `MAX_CONCURRENT_GROUPS`), each group in order, the rest of a group held back after a
//! failure. A standard queue's messages each stand alone.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures::StreamExt;
use lambda_runtime::LambdaEvent;
use tracing::{info, warn};

use crate::clock::{Clock, SystemClock};
use crate::config::{Delivery, SourceSpecs};
use crate::ledger::{self, LedgerStore, Take, TakeOutcome};
use crate::metrics::{Metric, Metrics};
use crate::queue::Envelope;
use crate::receiver::accepted_response;
use crate::{fifo, lease};

/// One event handed to the side effect.
#[derive(Clone, Debug)]
pub struct Job {
    pub key: String,
    pub source: String,
    /// The raw body, exactly as the sender sent it (`Bytes`: a processor that sends it on
    /// hands over a reference, not a copy).
    pub body: bytes::Bytes,
    /// The source's signature, id and content-type headers (lowercase names).
    pub headers: BTreeMap<String, String>,
    /// 1 on the first run; counts takes.
    pub attempt: u32,
    /// Epoch milliseconds when this run's lease ends: finish well before.
    pub lease_until_ms: i64,
}

/// Why a side effect did not happen; kept as `last_error` in the ledger.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct ProcessError(pub String);

/// The side effect. Implement it for your own system of record; the key is stable across
/// retries, so pass it on as an idempotency key where the downstream takes one.
pub trait Processor: Send + Sync + 'static {
    fn process(&self, job: &Job) -> impl Future<Output = Result<(), ProcessError>> + Send;
}

impl<T: Processor> Processor for std::sync::Arc<T> {
    fn process(&self, job: &Job) -> impl Future<Output = Result<(), ProcessError>> + Send {
        (**self).process(job)
    }
}

/// The shipped processor: POSTs the original body to `FORWARD_URL` with
/// `Idempotency-Key: <key>`. 2xx is done; anything else, or no answer in time, is a failure.
#[derive(Clone, Debug)]
pub struct HttpForwarder {
    client: reqwest::Client,
    url: String,
    timeout: Duration,
}

/// Time kept back from the lease for completing the item after the call.
pub const LEASE_MARGIN_MS: i64 = 500;

impl HttpForwarder {
    /// One client, one connection pool, for the life of the process.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            client,
            url: url.into(),
            timeout,
        })
    }
}

impl Processor for HttpForwarder {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        let left = job.lease_until_ms - SystemClock.now_ms() - LEASE_MARGIN_MS;
        let left = u64::try_from(left).unwrap_or(0);
        if left == 0 {
            return Err(ProcessError("no time left in the lease".into()));
        }
        let timeout = self.timeout.min(Duration::from_millis(left));
        let content_type = job
            .headers
            .get("content-type")
            .map(String::as_str)
            .unwrap_or("application/octet-stream");
        let resp = self
            .client
            .post(&self.url)
            .header("Idempotency-Key", &job.key)
            .header("Content-Type", content_type)
            .header("X-Webhook-Source", &job.source)
            .body(job.body.clone()) // a reference count, not a copy
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| ProcessError(format!("forward failed: {}", without_url(&e))))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(ProcessError(format!("forward answered {}", resp.status())))
        }
    }
}

fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request error"
    };
    kind.to_owned()
}

/// The consumer's tunables (`MAX_CONCURRENT_GROUPS`).
#[derive(Clone, Copy, Debug)]
pub struct ConsumerSettings {
    pub max_concurrent_groups: usize,
}

impl Default for ConsumerSettings {
    fn default() -> Self {
        Self {
            max_concurrent_groups: 8,
        }
    }
}

/// The consumer, with its collaborators.
pub struct Consumer<L, P, C = SystemClock> {
    sources: SourceSpecs,
    ledger: L,
    processor: P,
    clock: C,
    settings: ConsumerSettings,
    metrics: Metrics,
}

struct Invocation<'a> {
    request_id: &'a str,
    lease_until_ms: i64,
}

impl<L: LedgerStore, P: Processor, C: Clock> Consumer<L, P, C> {
    pub fn new(
        sources: SourceSpecs,
        ledger: L,
        processor: P,
        clock: C,
        settings: ConsumerSettings,
        metrics: Metrics,
    ) -> Self {
        Self {
            sources,
            ledger,
            processor,
            clock,
            settings,
            metrics,
        }
    }

    /// Lambda's entry.
    pub async fn handle_event(
        &self,
        event: LambdaEvent<SqsEvent>,
    ) -> Result<SqsBatchResponse, Infallible> {
        let deadline = lease::deadline_ms(&event.context);
        Ok(self
            .handle_batch(&event.payload.records, &event.context.request_id, deadline)
            .await)
    }

    /// Runs a batch; the answer lists the message ids SQS must deliver again.
    pub async fn handle_batch(
        &self,
        messages: &[SqsMessage],
        request_id: &str,
        deadline_ms: Option<i64>,
    ) -> SqsBatchResponse {
        let inv = Invocation {
            request_id,
            lease_until_ms: lease::lease_until_ms(self.clock.now_ms(), deadline_ms),
        };
        let groups = fifo::plan(messages);
        let failed: Vec<Vec<usize>> = futures::stream::iter(groups)
            .map(|group| fifo::run_in_order(group, |i| self.run_one(&messages[i], &inv)))
            .buffer_unordered(self.settings.max_concurrent_groups.max(1))
            .collect()
            .await;
        let mut failed: Vec<usize> = failed.into_iter().flatten().collect();
        failed.sort_unstable();
        let mut response = SqsBatchResponse::default();
        response.batch_item_failures = failed
            .into_iter()
            .map(|i| {
                let mut f = BatchItemFailure::default();
                f.item_identifier = messages[i].message_id.clone().unwrap_or_default();
                f
            })
            .collect();
        response
    }

    /// One message; `true` when it may be deleted from the queue.
    async fn run_one(&self, msg: &SqsMessage, inv: &Invocation<'_>) -> bool {
        let message_id = msg.message_id.as_deref().unwrap_or_default();
        let envelope = match msg.body.as_deref().map(Envelope::parse) {
            Some(Ok(env)) => env,
            Some(Err(e)) => {
                warn!(message_id, error = %e, outcome = "failed", "unparseable message");
                return false;
            }
            None => {
                warn!(message_id, outcome = "failed", "message without a body");
                return false;
            }
        };
        let key = envelope.key.as_str();
        let source = envelope.source.as_str();
        let Some(spec) = self.sources.get(source) else {
            warn!(
                message_id,
                source,
                key,
                outcome = "failed",
                "message of an unknown source"
            );
            return false;
        };
        let body = match envelope.body_bytes() {
            Ok(b) => b,
            Err(e) => {
                warn!(message_id, key, error = %e, outcome = "failed", "unreadable body");
                return false;
            }
        };
        let mut job = Job {
            key: key.to_owned(),
            source: source.to_owned(),
            body: body.into(),
            headers: envelope.headers.clone(),
            attempt: 1,
            lease_until_ms: inv.lease_until_ms,
        };

        if spec.delivery == Delivery::AtMostOnce {
            // Declared at-most-once: run once, never retried, no ledger.
            match self.processor.process(&job).await {
                Ok(()) => {
                    self.metrics.count(source, Metric::Completed);
                    info!(
                        key,
                        source,
                        outcome = "completed",
                        delivery = "at_most_once"
                    );
                }
                Err(e) => {
                    self.metrics.count(source, Metric::Failed);
                    warn!(key, source, error = %e, outcome = "dropped", "at-most-once side effect failed");
                }
            }
            return true;
        }

        let owner = format!("{}:{message_id}", inv.request_id);
        let now = self.clock.now_ms();
        let (response_status, response_body) = accepted_response(key);
        let take = Take {
            key: key.to_owned(),
            source: source.to_owned(),
            payload_sha256: envelope.payload_sha256.clone(),
            owner: owner.clone(),
            now_ms: now,
            lease_until_ms: inv.lease_until_ms,
            expires_at: ledger::expires_at(now, spec.retention_hours),
            response_status,
            response_body,
        };
        match self.ledger.take(&take).await {
            Err(e) => {
                warn!(key, source, error = %e, outcome = "failed", "take failed");
                return false;
            }
            Ok(TakeOutcome::Completed) => {
                self.metrics.count(source, Metric::DuplicateDelivery);
                info!(
                    key,
                    source,
                    outcome = "duplicate",
                    "already completed: acknowledged without side effect"
                );
                return true;
            }
            Ok(TakeOutcome::Busy { lease_until }) => {
                info!(
                    key,
                    source,
                    lease_until,
                    outcome = "busy",
                    "another consumer holds the lease"
                );
                return false;
            }
            Ok(TakeOutcome::Taken { attempts }) => job.attempt = attempts,
        }

        match self.processor.process(&job).await {
            Ok(()) => match self.ledger.complete(key, &owner, self.clock.now_ms()).await {
                Ok(true) => {
                    self.metrics.count(source, Metric::Completed);
                    info!(key, source, attempts = job.attempt, outcome = "completed");
                    true
                }
                Ok(false) => {
                    // Someone else holds the key now, and may have died. The message comes
                    // back: its next take finds COMPLETED (acknowledged) or an abandoned
                    // lease (run again with the same Idempotency-Key), never a key stuck
                    // in PROCESSING with its message gone.
                    self.metrics.count(source, Metric::LeaseLost);
                    warn!(
                        key,
                        source,
                        outcome = "lease_lost",
                        "side effect ran but the lease was lost before complete"
                    );
                    false
                }
                Err(e) => {
                    // Redelivery re-runs the side effect with the same Idempotency-Key.
                    warn!(key, source, error = %e, outcome = "failed", "complete failed after the side effect");
                    false
                }
            },
            Err(e) => {
                self.metrics.count(source, Metric::Failed);
                match self
                    .ledger
                    .fail(key, &owner, &e.0, self.clock.now_ms())
                    .await
                {
                    Ok(true) => {
                        warn!(key, source, attempts = job.attempt, error = %e, outcome = "failed")
                    }
                    Ok(false) => {
                        self.metrics.count(source, Metric::LeaseLost);
                        warn!(key, source, error = %e, outcome = "lease_lost");
                    }
                    Err(se) => {
                        warn!(key, source, error = %e, store_error = %se, outcome = "failed")
                    }
                }
                false
            }
        }
    }
}
