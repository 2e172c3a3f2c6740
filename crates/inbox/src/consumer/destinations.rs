//! The destinations' port (docs/routing.md): deliver one event to one named destination, and
//! say which destinations an operator paused.

use std::collections::BTreeSet;
use std::future::Future;

use super::processor::{Job, Outcome, ProcessError};

/// What delivers to the configured destinations, by name. The consumer keeps each pair's
/// state in the ledger; an implementation only makes the call.
pub trait Destinations: Send + Sync + 'static {
    /// One call to `destination` with the event. `Throttled` where the destination asked to
    /// be called later (429 with `Retry-After`, a throttling error).
    fn deliver(&self, destination: &str, job: &Job) -> impl Future<Output = Outcome> + Send;

    /// The destinations an operator paused (`inbox-ops pause --destination`); read once per
    /// batch. `Err`: unknown, and no routed event runs in this batch.
    fn paused(&self) -> impl Future<Output = Result<BTreeSet<String>, String>> + Send;
}

/// No destination configured: every source forwards to `FORWARD_URL`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoDestinations;

impl Destinations for NoDestinations {
    async fn deliver(&self, destination: &str, _job: &Job) -> Outcome {
        Outcome::Failed(ProcessError(format!(
            "no destination `{destination}` is configured"
        )))
    }

    async fn paused(&self) -> Result<BTreeSet<String>, String> {
        Ok(BTreeSet::new())
    }
}

impl<T: Destinations> Destinations for std::sync::Arc<T> {
    fn deliver(&self, destination: &str, job: &Job) -> impl Future<Output = Outcome> + Send {
        (**self).deliver(destination, job)
    }
    fn paused(&self) -> impl Future<Output = Result<BTreeSet<String>, String>> + Send {
        (**self).paused()
    }
}
