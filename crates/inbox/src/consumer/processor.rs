//! The side effect's port: a [`Job`] in, an [`Outcome`] out (docs/design.md §6).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

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
    /// Set on a replay (`inbox-ops replay`): the side effect runs again deliberately; the
    /// shipped forwarder sends it as `Webhook-Replay-Id` beside the same `Idempotency-Key`.
    pub replay_id: Option<String>,
    /// The event's type, where the envelope carries one (docs/routing.md).
    pub event_type: Option<String>,
    /// Where this call sits in the event's trace (its `inbox.deliver` span; docs/operations.md,
    /// "Traces"): the shipped forward sends it as `traceparent`, the other adapters where their
    /// target carries one. `None` where the event has no trace (a job built by hand).
    pub trace: Option<crate::trace::TraceContext>,
}

/// Why a side effect did not happen; kept as `last_error` in the ledger.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct ProcessError(pub String);

/// What one run of the side effect came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done: the key is completed.
    Done,
    /// A real failure: the key is failed with this as `last_error`, and it counts towards
    /// `MAX_FAILURES`.
    Failed(ProcessError),
    /// The downstream asked to be called later (429, 503): the message comes back after
    /// `retry_after`, no failure is counted, and nothing else starts in this invocation.
    Throttled {
        retry_after: Duration,
        reason: ProcessError,
    },
}

/// The side effect. Implement it for your own system of record; the key is stable across
/// retries, so pass it on as an idempotency key where the downstream takes one.
pub trait Processor: Send + Sync + 'static {
    fn process(&self, job: &Job) -> impl Future<Output = Result<(), ProcessError>> + Send;

    /// What the consumer calls: by default [`Processor::process`], `Ok` done and `Err` a
    /// failure. A processor that can tell throttling from failure (the shipped
    /// [`crate::forward::HttpForwarder`]) says so here with [`Outcome::Throttled`].
    fn run(&self, job: &Job) -> impl Future<Output = Outcome> + Send {
        async move {
            match self.process(job).await {
                Ok(()) => Outcome::Done,
                Err(e) => Outcome::Failed(e),
            }
        }
    }
}

impl<T: Processor> Processor for std::sync::Arc<T> {
    fn process(&self, job: &Job) -> impl Future<Output = Result<(), ProcessError>> + Send {
        (**self).process(job)
    }
    fn run(&self, job: &Job) -> impl Future<Output = Outcome> + Send {
        (**self).run(job)
    }
}

/// No processor (`FORWARD_URL` blank: no default destination). The consumer never calls it
/// then ([`crate::route::Routes::has_forward`]); were it called, every event would fail.
impl<T: Processor> Processor for Option<T> {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        match self {
            Some(p) => p.process(job).await,
            None => Err(ProcessError("no FORWARD_URL is set".into())),
        }
    }
    async fn run(&self, job: &Job) -> Outcome {
        match self {
            Some(p) => p.run(job).await,
            None => Outcome::Failed(ProcessError("no FORWARD_URL is set".into())),
        }
    }
}

/// Time kept back from the lease for completing the item after the call.
pub const LEASE_MARGIN_MS: i64 = 500;
