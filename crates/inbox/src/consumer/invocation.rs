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
