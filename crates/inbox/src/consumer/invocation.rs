//! One invocation's shared state: what each message of the batch came to, and whether the
//! downstream throttled (after which nothing starts).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;

/// What one message came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// May be deleted from the queue.
    Done,
    /// Reported failed; it comes back after the queue's visibility timeout.
    Failed,
    /// Throttled: reported failed, back after this wait.
    Throttled(Duration),
    /// Not run because the downstream throttled in this invocation: reported failed, back
    /// after the throttle's wait.
    Held,
}

pub(super) struct Invocation<'a> {
    pub(super) request_id: &'a str,
    pub(super) lease_until_ms: i64,
    /// The longest wait a throttle asked for in this invocation; once set, nothing starts.
    pub(super) throttled: Mutex<Option<Duration>>,
    /// What each message of the batch came to, by index (`None`: never run).
    pub(super) verdicts: Mutex<Vec<Option<Verdict>>>,
    /// The destinations that throttled in this invocation, with their waits: nothing more is
    /// sent to them in it (docs/routing.md); others go on.
    pub(super) held: Mutex<BTreeMap<String, Duration>>,
    /// The destinations an operator paused, read once for the batch (`Err`: unreadable).
    pub(super) paused: Result<BTreeSet<String>, String>,
    /// The destinations' breakers, read with the pauses and kept up to date by this
    /// invocation's own writes (`None`: no breaker is kept, [`super::Destinations::keeps_breakers`]).
    pub(super) breakers: Option<Mutex<BTreeMap<String, crate::breaker::Breaker>>>,
    /// The take owners (`<request id>:<message id>`) of the messages a destination's open
    /// breaker held: near their bound they are sent again rather than dead-lettered.
    pub(super) kept: Mutex<BTreeSet<String>>,
}

impl Invocation<'_> {
    pub(super) fn throttled(&self) -> Option<Duration> {
        *self.throttled.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn throttle(&self, wait: Duration) {
        let mut t = self.throttled.lock().unwrap_or_else(|p| p.into_inner());
        *t = Some(t.map_or(wait, |w| w.max(wait)));
    }

    /// The wait a destination asked for in this invocation, if it throttled.
    pub(super) fn held(&self, destination: &str) -> Option<Duration> {
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(destination)
            .copied()
    }

    /// A destination throttled: nothing more goes to it in this invocation.
    pub(super) fn hold(&self, destination: &str, wait: Duration) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let w = held.entry(destination.to_owned()).or_insert(wait);
        *w = (*w).max(wait);
    }

    /// The breaker of `destination` as this invocation knows it (closed where never written).
    pub(super) fn breaker(&self, destination: &str) -> Option<crate::breaker::Breaker> {
        let board = self.breakers.as_ref()?;
        let board = board.lock().unwrap_or_else(|p| p.into_inner());
        Some(board.get(destination).cloned().unwrap_or_default())
    }

    /// What the board holds for `destination` now, as a write (or a refused one) showed it;
    /// never an older version than the one known.
    pub(super) fn saw_breaker(&self, destination: &str, seen: crate::breaker::Breaker) {
        if let Some(board) = &self.breakers {
            let mut board = board.lock().unwrap_or_else(|p| p.into_inner());
            let known = board.get(destination).map_or(0, |b| b.version);
            if seen.version >= known {
                board.insert(destination.to_owned(), seen);
            }
        }
    }

    /// A message (by its take's owner) had a destination held by its breaker.
    pub(super) fn keep(&self, owner: &str) {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(owner.to_owned());
    }

    /// Whether the message of this take owner had a destination held by its breaker.
    pub(super) fn was_kept(&self, owner: &str) -> bool {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(owner)
    }

    /// Whether some message came to [`Verdict::Throttled`] (its own delay to ask for).
    pub(super) fn any_throttled(&self) -> bool {
        self.verdicts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|v| matches!(v, Some(Verdict::Throttled(_))))
    }

    pub(super) fn record(&self, index: usize, verdict: Verdict) {
        if let Some(slot) = self
            .verdicts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(index)
        {
            *slot = Some(verdict);
        }
    }

    pub(super) fn verdict(&self, index: usize) -> Option<Verdict> {
        self.verdicts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(index)
            .copied()
            .flatten()
    }
}

/// `SentTimestamp` of a message, epoch milliseconds.
pub(super) fn sent_at_ms(msg: &SqsMessage) -> Option<i64> {
    msg.attributes.get("SentTimestamp")?.parse().ok()
}

/// `ApproximateReceiveCount` of a message (1 when absent).
pub(super) fn receive_count(msg: &SqsMessage) -> u32 {
    msg.attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}
