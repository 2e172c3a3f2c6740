//! The destinations' adapters (docs/routing.md): the signed HTTP forward, an EventBridge bus,
//! an SQS queue, a Lambda function, each named in `WEBHOOK_DESTINATIONS`, and the pause board.
//! [`Targets`] is the consumer's [`Destinations`]: one call per (event, destination); the
//! consumer keeps each pair's state in the ledger.

use std::collections::{BTreeMap, BTreeSet};

use crate::breaker::{BreakerBoard as _, Transition, Written};
use crate::consumer::{Board, Destinations, Job, Outcome, ProcessError};
use crate::forward::HttpForwarder;

pub mod aws_error;
pub mod detail;
pub mod eventbridge;
pub mod lambda;
pub mod pause;
pub mod rate;
pub mod sqs;

pub use eventbridge::EventBus;
pub use lambda::FunctionTarget;
pub use pause::PauseBoard;
pub use rate::{DynamoRate, MemoryRate, RateLimiter, RateLimits};
pub use sqs::QueueTarget;

/// One destination's adapter.
#[derive(Clone, Debug)]
pub enum Adapter {
    Http(HttpForwarder),
    Bus(EventBus),
    Queue(QueueTarget),
    Function(FunctionTarget),
}

impl Adapter {
    async fn deliver(&self, job: &Job) -> Outcome {
        match self {
            Adapter::Http(f) => f.deliver(job).await,
            Adapter::Bus(b) => b.deliver(job).await,
            Adapter::Queue(q) => q.deliver(job).await,
            Adapter::Function(f) => f.deliver(job).await,
        }
    }
}

/// The deployed destinations, by name, and where their pauses are read.
#[derive(Clone, Debug)]
pub struct Targets {
    adapters: BTreeMap<String, Adapter>,
    pauses: Option<PauseBoard>,
    /// The destinations' `max_per_second`, asked before each call (`None`: no limit).
    rates: Option<RateLimits>,
}

impl Targets {
    /// `pauses`: `None` where nothing can be paused (tests, a consumer without a table).
    pub fn new(adapters: BTreeMap<String, Adapter>, pauses: Option<PauseBoard>) -> Self {
        Self {
            adapters,
            pauses,
            rates: None,
        }
    }

    /// The same targets, each call first counted against its destination's rate limit
    /// (docs/routing.md, "Rate limit"); `None`: no limit.
    #[must_use]
    pub fn with_rate_limits(mut self, rates: Option<RateLimits>) -> Self {
        self.rates = rates;
        self
    }

    /// The rate limits the calls are held to.
    pub fn rate_limits(&self) -> Option<&RateLimits> {
        self.rates.as_ref()
    }
}

impl Destinations for Targets {
    async fn deliver(&self, destination: &str, job: &Job) -> Outcome {
        match self.adapters.get(destination) {
            Some(a) => {
                // Over its rate: deferred as a throttle (no failure counted), never called.
                if let Some(deferred) = match &self.rates {
                    Some(rates) => rates.check(destination, job).await,
                    None => None,
                } {
                    return deferred;
                }
                a.deliver(job).await
            }
            None => Outcome::Failed(ProcessError(format!(
                "no destination `{destination}` is configured"
            ))),
        }
    }

    async fn paused(&self) -> Result<BTreeSet<String>, String> {
        match &self.pauses {
            Some(board) => board.paused().await,
            None => Ok(BTreeSet::new()),
        }
    }

    /// The breakers live on the pause board, where there is one.
    fn keeps_breakers(&self) -> bool {
        self.pauses.is_some()
    }

    async fn board(&self) -> Result<Board, String> {
        match &self.pauses {
            Some(board) => board.read().await,
            None => Ok(Board::default()),
        }
    }

    async fn write_breaker(&self, destination: &str, t: &Transition) -> Result<Written, String> {
        match &self.pauses {
            Some(board) => board.write(destination, t).await,
            None => Err("no breaker board".to_owned()),
        }
    }
}
