//! The destinations' port (docs/routing.md): deliver one event to one named destination, and
//! say which destinations an operator paused and where their breakers stand.

use std::collections::BTreeSet;
use std::future::Future;

use super::processor::{Job, Outcome, ProcessError};
pub use crate::breaker::Board;
use crate::breaker::{Transition, Written};

/// What delivers to the configured destinations, by name. The consumer keeps each pair's
/// state in the ledger; an implementation only makes the call.
pub trait Destinations: Send + Sync + 'static {
    /// One call to `destination` with the event. `Throttled` where the destination asked to
    /// be called later (429 with `Retry-After`, a throttling error).
    fn deliver(&self, destination: &str, job: &Job) -> impl Future<Output = Outcome> + Send;

    /// The destinations an operator paused (`inbox-ops pause --destination`); read once per
    /// batch. `Err`: unknown, and no routed event runs in this batch.
    fn paused(&self) -> impl Future<Output = Result<BTreeSet<String>, String>> + Send;

    /// Whether the destinations' breakers are kept ([`crate::breaker`]): `false` (the
    /// default), no breaker opens.
    fn keeps_breakers(&self) -> bool {
        false
    }

    /// The pauses and the breakers, read once per batch (one read where both live on the
    /// pause board). The default: [`Destinations::paused`], no breaker.
    fn board(&self) -> impl Future<Output = Result<Board, String>> + Send {
        async move {
            Ok(Board {
                paused: self.paused().await?,
                breakers: Default::default(),
            })
        }
    }

    /// One breaker transition, written where the board still holds `t.from`
    /// ([`crate::breaker::BreakerBoard::write`]). Only called where
    /// [`Destinations::keeps_breakers`].
    fn write_breaker(
        &self,
        destination: &str,
        t: &Transition,
    ) -> impl Future<Output = Result<Written, String>> + Send {
        let _ = (destination, t);
        async { Err("no breaker board".to_owned()) }
    }
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
    fn keeps_breakers(&self) -> bool {
        (**self).keeps_breakers()
    }
    fn board(&self) -> impl Future<Output = Result<Board, String>> + Send {
        (**self).board()
    }
    fn write_breaker(
        &self,
        destination: &str,
        t: &Transition,
    ) -> impl Future<Output = Result<Written, String>> + Send {
        (**self).write_breaker(destination, t)
    }
}
