//! What became of a message, or of one of its destinations, as the log line and the metrics
//! say it: one table ([`Recorded::row`]) from each thing the consumer records to its
//! `outcome` (docs/operations.md, "Logs"), its level and the metrics it counts
//! (docs/operations.md, "Metrics"). Every consumer site records through [`record`], so a log
//! line and its count cannot drift apart.
//! ([`super::Consumer::record`] is [`write`] to the consumer's metrics.)

use std::fmt::Display;

use tracing::field::display;
use tracing::{info, warn};

use crate::metrics::{Metric, Metrics, UNKNOWN_SOURCE_DIMENSION};
use crate::outcome::LogOutcome;

/// Something the consumer records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Recorded {
    /// The side effect ran and the item is COMPLETED.
    Completed,
    /// A replay's side effect ran and its id is recorded.
    ReplayCompleted,
    /// An event that nothing takes and no `FORWARD_URL` receives: completed, gone nowhere.
    Unrouted,
    /// The item was COMPLETED already: acknowledged without a side effect.
    Duplicate,
    /// Another invocation holds the item's lease.
    Busy,
    /// A real failure, written as FAILED (or a replay given back).
    Failed,
    /// A real failure whose item's lease was lost before it could be written.
    FailedLeaseLost,
    /// A real failure the ledger could not write.
    FailedUnwritten,
    /// The side effect ran but the lease was lost before complete.
    LeaseLost,
    /// The downstream throttled: the item deferred.
    Throttled,
    /// The downstream throttled, and the item's lease was lost before the deferral.
    ThrottledLeaseLost,
    /// The downstream throttled, and the ledger could not write the deferral.
    ThrottledUnwritten,
    /// Taken just as another group was throttled: given back unrun.
    Held,
    /// Held, and the item's lease was lost before it was given back.
    HeldLeaseLost,
    /// Held, and the ledger could not write the deferral.
    HeldUnwritten,
    /// A ledger or store call failed around the side effect (the take, complete, a replay's
    /// check, a body of an at-most-once replay): the message comes back.
    StoreFailed,
    /// A message that cannot be read, or that the archive did not take: it comes back.
    Unreadable,
    /// An envelope whose parts disagree: refused.
    Refused,
    /// A refusal whose note on the item could not be written.
    RefusalUnnoted,
    /// Copied to the dead-letter queue.
    DeadLettered,
    /// An at-most-once event whose side effect failed (or whose body was unreadable).
    DroppedFailed,
    /// An at-most-once event whose side effect was throttled.
    DroppedThrottled,
}

/// The level of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Info,
    Warn,
}

impl Recorded {
    /// The table: the log line's `outcome` and level, and what is counted.
    fn row(self) -> (LogOutcome, Level, &'static [Metric]) {
        use Level::{Info, Warn};
        use LogOutcome as O;
        use Metric as M;
        match self {
            Recorded::Completed => (O::Completed, Info, &[M::Completed]),
            Recorded::ReplayCompleted => (O::Completed, Info, &[M::ReplayCompleted]),
            Recorded::Unrouted => (O::Completed, Warn, &[M::Unrouted]),
            Recorded::Duplicate => (O::Duplicate, Info, &[M::DuplicateDelivery]),
            Recorded::Busy => (O::Busy, Info, &[]),
            Recorded::Failed => (O::Failed, Warn, &[M::Failed]),
            Recorded::FailedLeaseLost => (O::LeaseLost, Warn, &[M::Failed, M::LeaseLost]),
            Recorded::FailedUnwritten => (O::Failed, Warn, &[M::Failed]),
            Recorded::LeaseLost => (O::LeaseLost, Warn, &[M::LeaseLost]),
            Recorded::Throttled => (O::Throttled, Info, &[M::Throttled]),
            Recorded::ThrottledLeaseLost => (O::LeaseLost, Warn, &[M::Throttled, M::LeaseLost]),
            Recorded::ThrottledUnwritten => (O::Throttled, Warn, &[M::Throttled]),
            Recorded::Held => (O::Held, Info, &[]),
            Recorded::HeldLeaseLost => (O::LeaseLost, Warn, &[M::LeaseLost]),
            Recorded::HeldUnwritten => (O::Throttled, Warn, &[]),
            Recorded::StoreFailed | Recorded::Unreadable => (O::Failed, Warn, &[]),
            Recorded::Refused => (O::Refused, Warn, &[M::Refused]),
            Recorded::RefusalUnnoted => (O::Refused, Warn, &[]),
            Recorded::DeadLettered => (O::DeadLettered, Warn, &[M::DeadLettered]),
            Recorded::DroppedFailed => (O::Dropped, Warn, &[M::Failed]),
            Recorded::DroppedThrottled => (O::Dropped, Warn, &[M::Throttled]),
        }
    }

    /// What a throttle (or a hold) came to, by whether it was held and how the deferral went.
    pub(super) fn deferral(held: bool, written: Result<bool, ()>) -> Recorded {
        match (held, written) {
            (false, Ok(true)) => Recorded::Throttled,
            (false, Ok(false)) => Recorded::ThrottledLeaseLost,
            (false, Err(())) => Recorded::ThrottledUnwritten,
            (true, Ok(true)) => Recorded::Held,
            (true, Ok(false)) => Recorded::HeldLeaseLost,
            (true, Err(())) => Recorded::HeldUnwritten,
        }
    }
}

/// The fields of a line; each absent one is left out of it.
#[derive(Default)]
pub(super) struct Fields<'a> {
    pub message_id: Option<&'a str>,
    /// The source; also the metrics' dimension (`(unknown)` where absent).
    pub source: Option<&'a str>,
    pub key: Option<&'a str>,
    /// A destination of `WEBHOOK_DESTINATIONS`; also the metrics' `destination` dimension.
    /// Absent for the default destination (`FORWARD_URL` or the user's `Processor`).
    pub destination: Option<&'a str>,
    pub attempts: Option<u32>,
    pub failures: Option<u32>,
    pub replay_id: Option<&'a str>,
    pub lease_until: Option<i64>,
    pub retry_after_s: Option<u64>,
    pub receives: Option<u32>,
    /// How many destinations an event went to.
    pub destinations: Option<u64>,
    /// `at_most_once` on a declared at-most-once event's line.
    pub delivery: Option<&'static str>,
    pub error: Option<&'a dyn Display>,
    pub store_error: Option<&'a dyn Display>,
    /// The line's message, where it has one.
    pub message: Option<&'a str>,
}

/// The fields, one by one: `Fields::default().source(s).key(k).error(&e)`.
macro_rules! setters {
    ($($field:ident: $ty:ty),* $(,)?) => {
        impl<'a> Fields<'a> {
            $(
                pub fn $field(self, value: impl Into<Option<$ty>>) -> Self {
                    Self { $field: value.into(), ..self }
                }
            )*
        }
    };
}

setters! {
    message_id: &'a str,
    source: &'a str,
    key: &'a str,
    destination: &'a str,
    attempts: u32,
    failures: u32,
    replay_id: &'a str,
    lease_until: i64,
    retry_after_s: u64,
    receives: u32,
    destinations: u64,
    delivery: &'static str,
    message: &'a str,
}

impl<'a> Fields<'a> {
    pub fn error(self, error: &'a dyn Display) -> Self {
        Self {
            error: Some(error),
            ..self
        }
    }

    pub fn store_error(self, error: Option<&'a dyn Display>) -> Self {
        Self {
            store_error: error,
            ..self
        }
    }
}

/// Writes the line and counts the metrics of `what`, from the one table.
pub(super) fn write(metrics: &Metrics, what: Recorded, f: &Fields<'_>) {
    let (outcome, level, counted) = what.row();
    let dimension = f.source.unwrap_or(UNKNOWN_SOURCE_DIMENSION);
    for metric in counted {
        match f.destination {
            Some(destination) => metrics.count_destination(dimension, destination, *metric),
            None => metrics.count(dimension, *metric),
        }
    }
    let outcome = outcome.as_str();
    let (message_id, source, key, destination) = (f.message_id, f.source, f.key, f.destination);
    let (attempts, failures, replay_id, lease_until) =
        (f.attempts, f.failures, f.replay_id, f.lease_until);
    let (retry_after_s, receives, destinations, delivery) =
        (f.retry_after_s, f.receives, f.destinations, f.delivery);
    let error = f.error.map(display);
    let store_error = f.store_error.map(display);
    macro_rules! line {
        ($mac:ident) => {
            match f.message {
                Some(message) => $mac!(
                    message_id,
                    source,
                    key,
                    destination,
                    attempts,
                    failures,
                    replay_id,
                    lease_until,
                    retry_after_s,
                    receives,
                    destinations,
                    delivery,
                    error,
                    store_error,
                    outcome,
                    "{message}"
                ),
                None => $mac!(
                    message_id,
                    source,
                    key,
                    destination,
                    attempts,
                    failures,
                    replay_id,
                    lease_until,
                    retry_after_s,
                    receives,
                    destinations,
                    delivery,
                    error,
                    store_error,
                    outcome
                ),
            }
        };
    }
    match level {
        Level::Info => line!(info),
        Level::Warn => line!(warn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Recorded; 22] = [
        Recorded::Completed,
        Recorded::ReplayCompleted,
        Recorded::Unrouted,
        Recorded::Duplicate,
        Recorded::Busy,
        Recorded::Failed,
        Recorded::FailedLeaseLost,
        Recorded::FailedUnwritten,
        Recorded::LeaseLost,
        Recorded::Throttled,
        Recorded::ThrottledLeaseLost,
        Recorded::ThrottledUnwritten,
        Recorded::Held,
        Recorded::HeldLeaseLost,
        Recorded::HeldUnwritten,
        Recorded::StoreFailed,
        Recorded::Unreadable,
        Recorded::Refused,
        Recorded::RefusalUnnoted,
        Recorded::DeadLettered,
        Recorded::DroppedFailed,
        Recorded::DroppedThrottled,
    ];

    fn counted(what: Recorded, destination: Option<&str>) -> Vec<String> {
        let (metrics, lines) = Metrics::memory("consumer");
        let fields = Fields::default()
            .source("s")
            .key("s:1")
            .destination(destination);
        write(&metrics, what, &fields);
        let lines = lines.lock().expect("lines").clone();
        lines
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("an EMF line");
                let name = v["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"]
                    .as_str()
                    .expect("a name")
                    .to_owned();
                assert_eq!(v["source"], "s");
                assert_eq!(v.get("destination").and_then(|d| d.as_str()), destination);
                name
            })
            .collect()
    }

    #[test]
    fn each_record_counts_its_row_s_metrics_under_its_dimensions() {
        for what in ALL {
            let (_, _, wanted) = what.row();
            let wanted: Vec<&str> = wanted.iter().map(|m| m.name()).collect();
            assert_eq!(counted(what, None), wanted, "{what:?}");
            assert_eq!(
                counted(what, Some("crm")),
                wanted,
                "{what:?} for a destination"
            );
        }
    }

    #[test]
    fn the_outcomes_and_counts_stay_those_the_runbook_documents() {
        // The pairs the consumer wrote by hand before the table (docs/operations.md).
        let pairs: Vec<(&str, Vec<&str>)> = ALL
            .iter()
            .map(|w| {
                let (o, _, m) = w.row();
                (o.as_str(), m.iter().map(|m| m.name()).collect())
            })
            .collect();
        assert_eq!(pairs[0], ("completed", vec!["Completed"]));
        assert_eq!(pairs[1], ("completed", vec!["ReplayCompleted"]));
        assert_eq!(pairs[2], ("completed", vec!["Unrouted"]));
        assert_eq!(pairs[3], ("duplicate", vec!["DuplicateDelivery"]));
        assert_eq!(pairs[6], ("lease_lost", vec!["Failed", "LeaseLost"]));
        assert_eq!(pairs[12], ("held", vec![]));
        assert_eq!(pairs[19], ("dead_lettered", vec!["DeadLettered"]));
        assert_eq!(pairs[21], ("dropped", vec!["Throttled"]));
    }

    #[test]
    fn a_deferral_is_held_or_throttled_by_how_it_went() {
        assert_eq!(Recorded::deferral(false, Ok(true)), Recorded::Throttled);
        assert_eq!(Recorded::deferral(true, Ok(true)), Recorded::Held);
        assert_eq!(
            Recorded::deferral(false, Ok(false)),
            Recorded::ThrottledLeaseLost
        );
        assert_eq!(Recorded::deferral(true, Err(())), Recorded::HeldUnwritten);
    }
}
