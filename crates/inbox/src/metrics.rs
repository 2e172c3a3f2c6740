//! Metrics as CloudWatch Embedded Metric Format: one JSON line on stdout per count, which
//! Lambda ships to CloudWatch Logs and CloudWatch turns into metrics. No API calls.

use std::io::Write;
use std::sync::{Arc, Mutex};

use crate::clock::{Clock, SystemClock};

/// The metrics' source dimension for requests to a source that is not configured.
pub const UNKNOWN_SOURCE_DIMENSION: &str = "(unknown)";

/// The one namespace.
pub const NAMESPACE: &str = "WebhookInbox";

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Accepted,
    Replayed,
    SignatureRejected,
    PayloadMismatch,
    Released,
    Rejected,
    Completed,
    Failed,
    DuplicateDelivery,
    LeaseLost,
    Throttled,
    DeadLettered,
    /// A replay's side effect completed (`inbox-ops replay`).
    ReplayCompleted,
    /// A message whose envelope's parts disagree, refused before any effect.
    Refused,
    /// An event that no destination takes and no `FORWARD_URL` receives: completed, gone
    /// nowhere (docs/routing.md).
    Unrouted,
    /// A request to a pending source whose secret is not stored yet, answered 503.
    SourcePending,
    /// A destination's circuit breaker opened (or opened again after a failed probe).
    BreakerOpened,
    /// A destination's circuit breaker closed (its probe succeeded, or an operator closed it).
    BreakerClosed,
    /// A message held by a breaker near its queue's bound, sent to the queue again as a fresh
    /// message rather than dead-lettered.
    HeldResent,
    /// A destination's call deferred by its `max_per_second` (docs/routing.md): also
    /// counted `Throttled`, as every deferral.
    RateLimited,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Accepted => "Accepted",
            Metric::Replayed => "Replayed",
            Metric::SignatureRejected => "SignatureRejected",
            Metric::PayloadMismatch => "PayloadMismatch",
            Metric::Released => "Released",
            Metric::Rejected => "Rejected",
            Metric::Completed => "Completed",
            Metric::Failed => "Failed",
            Metric::DuplicateDelivery => "DuplicateDelivery",
            Metric::LeaseLost => "LeaseLost",
            Metric::Throttled => "Throttled",
            Metric::DeadLettered => "DeadLettered",
            Metric::ReplayCompleted => "ReplayCompleted",
            Metric::Refused => "Refused",
            Metric::Unrouted => "Unrouted",
            Metric::SourcePending => "SourcePending",
            Metric::BreakerOpened => "BreakerOpened",
            Metric::BreakerClosed => "BreakerClosed",
            Metric::HeldResent => "HeldResent",
            Metric::RateLimited => "RateLimited",
        }
    }
}

#[derive(Clone, Debug)]
enum Sink {
    Stdout,
    Memory(Arc<Mutex<Vec<String>>>),
}

/// Where a function's counts go, with its `function` dimension.
#[derive(Clone, Debug)]
pub struct Metrics {
    function: &'static str,
    sink: Sink,
}

impl Metrics {
    /// Lines on stdout, as Lambda expects.
    pub fn stdout(function: &'static str) -> Self {
        Self {
            function,
            sink: Sink::Stdout,
        }
    }

    /// Lines kept in memory, for tests; the handle reads them.
    pub fn memory(function: &'static str) -> (Self, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                function,
                sink: Sink::Memory(lines.clone()),
            },
            lines,
        )
    }

    /// The EMF line for one count.
    ///
    /// Written out directly: one line per request, so not through `json!`, which builds a
    /// tree of maps and arrays first. The text is what `json!` would give (keys sorted).
    pub fn line(&self, source: &str, metric: Metric, timestamp_ms: i64) -> String {
        let name = metric.name();
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        format!(
            concat!(
                r#"{{"{name}":1,"_aws":{{"CloudWatchMetrics":[{{"Dimensions":[["source","function"]],"#,
                r#""Metrics":[{{"Name":"{name}","Unit":"Count"}}],"Namespace":"{namespace}"}}],"#,
                r#""Timestamp":{ts}}},"function":{function},"source":{source}}}"#
            ),
            name = name,
            namespace = NAMESPACE,
            ts = timestamp_ms,
            function = quoted(self.function),
            source = quoted(source),
        )
    }

    /// Counts one.
    /// The line of a count for one destination (docs/routing.md): dimensions `source`,
    /// `function` and `destination`.
    pub fn destination_line(
        &self,
        source: &str,
        destination: &str,
        metric: Metric,
        timestamp_ms: i64,
    ) -> String {
        let name = metric.name();
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        format!(
            concat!(
                r#"{{"{name}":1,"_aws":{{"CloudWatchMetrics":[{{"Dimensions":[["source","function","destination"]],"#,
                r#""Metrics":[{{"Name":"{name}","Unit":"Count"}}],"Namespace":"{namespace}"}}],"#,
                r#""Timestamp":{ts}}},"function":{function},"source":{source},"destination":{destination}}}"#
            ),
            name = name,
            namespace = NAMESPACE,
            ts = timestamp_ms,
            function = quoted(self.function),
            source = quoted(source),
            destination = quoted(destination),
        )
    }

    /// The line of a count for a destination as a whole, of no one source (its breaker,
    /// docs/routing.md): dimensions `function` and `destination`.
    pub fn breaker_line(&self, destination: &str, metric: Metric, timestamp_ms: i64) -> String {
        let name = metric.name();
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        format!(
            concat!(
                r#"{{"{name}":1,"_aws":{{"CloudWatchMetrics":[{{"Dimensions":[["function","destination"]],"#,
                r#""Metrics":[{{"Name":"{name}","Unit":"Count"}}],"Namespace":"{namespace}"}}],"#,
                r#""Timestamp":{ts}}},"destination":{destination},"function":{function}}}"#
            ),
            name = name,
            namespace = NAMESPACE,
            ts = timestamp_ms,
            function = quoted(self.function),
            destination = quoted(destination),
        )
    }

    /// Counts one for a destination's breaker (dimensions `function`, `destination`).
    pub fn count_breaker(&self, destination: &str, metric: Metric) {
        let line = self.breaker_line(destination, metric, SystemClock.now_ms());
        self.emit(line);
    }

    /// Counts one for a destination (docs/routing.md).
    pub fn count_destination(&self, source: &str, destination: &str, metric: Metric) {
        let line = self.destination_line(source, destination, metric, SystemClock.now_ms());
        self.emit(line);
    }

    pub fn count(&self, source: &str, metric: Metric) {
        let line = self.line(source, metric, SystemClock.now_ms());
        self.emit(line);
    }

    /// Counts one event accepted with its type: `AcceptedByType`, dimensions source, function
    /// and `event_type`. Only for a source that lists the types it counts
    /// (`event_type.metric_types`), so the dimension's values stay bounded: any other type is
    /// counted as `other`.
    pub fn count_event_type(&self, source: &str, event_type: &str) {
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let line = format!(
            concat!(
                r#"{{"AcceptedByType":1,"_aws":{{"CloudWatchMetrics":[{{"Dimensions":[["source","function","event_type"]],"#,
                r#""Metrics":[{{"Name":"AcceptedByType","Unit":"Count"}}],"Namespace":"{namespace}"}}],"#,
                r#""Timestamp":{ts}}},"event_type":{event_type},"function":{function},"source":{source}}}"#
            ),
            namespace = NAMESPACE,
            ts = SystemClock.now_ms(),
            event_type = quoted(event_type),
            function = quoted(self.function),
            source = quoted(source),
        );
        self.emit(line);
    }

    fn emit(&self, line: String) {
        match &self.sink {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
            Sink::Memory(lines) => match lines.lock() {
                Ok(mut l) => l.push(line),
                Err(p) => p.into_inner().push(line),
            },
        }
    }
}

/// Sums the EMF lines by metric name and source, for tests and the demo.
pub fn tally(lines: &[String], source: &str, metric: Metric) -> u64 {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("source").and_then(|s| s.as_str()) == Some(source))
        .filter_map(|v| v.get(metric.name()).and_then(|n| n.as_u64()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emf_line_is_what_json_would_write() {
        let (m, _) = Metrics::memory("receiver");
        let all = [
            Metric::Accepted,
            Metric::Replayed,
            Metric::SignatureRejected,
            Metric::PayloadMismatch,
            Metric::Released,
            Metric::Rejected,
            Metric::Completed,
            Metric::Failed,
            Metric::DuplicateDelivery,
            Metric::LeaseLost,
            Metric::Throttled,
            Metric::DeadLettered,
        ];
        for metric in all {
            for source in ["stripe", "(unknown)", "we\"ird\\"] {
                let expected = serde_json::json!({
                    "_aws": {
                        "Timestamp": 1_700_000_000_123_i64,
                        "CloudWatchMetrics": [{
                            "Namespace": NAMESPACE,
                            "Dimensions": [["source", "function"]],
                            "Metrics": [{"Name": metric.name(), "Unit": "Count"}]
                        }]
                    },
                    "source": source,
                    "function": "receiver",
                    metric.name(): 1
                })
                .to_string();
                assert_eq!(m.line(source, metric, 1_700_000_000_123), expected);
            }
        }
    }

    #[test]
    fn emf_line_has_namespace_dimensions_and_value() {
        let (m, lines) = Metrics::memory("receiver");
        m.count("stripe", Metric::Accepted);
        m.count("stripe", Metric::Accepted);
        m.count("github", Metric::Replayed);
        let lines = lines.lock().unwrap().clone();
        let v: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Namespace"], NAMESPACE);
        assert_eq!(
            v["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0][1],
            "function"
        );
        assert_eq!(v["function"], "receiver");
        assert_eq!(tally(&lines, "stripe", Metric::Accepted), 2);
        assert_eq!(tally(&lines, "github", Metric::Replayed), 1);
        assert_eq!(tally(&lines, "github", Metric::Accepted), 0);
    }

    #[test]
    fn a_breaker_line_is_what_json_would_write() {
        let (m, _) = Metrics::memory("consumer");
        for metric in [
            Metric::BreakerOpened,
            Metric::BreakerClosed,
            Metric::HeldResent,
        ] {
            for destination in ["billing", "we\"ird\\"] {
                let expected = serde_json::json!({
                    "_aws": {
                        "Timestamp": 1_700_000_000_123_i64,
                        "CloudWatchMetrics": [{
                            "Namespace": NAMESPACE,
                            "Dimensions": [["function", "destination"]],
                            "Metrics": [{"Name": metric.name(), "Unit": "Count"}]
                        }]
                    },
                    "destination": destination,
                    "function": "consumer",
                    metric.name(): 1
                })
                .to_string();
                assert_eq!(
                    m.breaker_line(destination, metric, 1_700_000_000_123),
                    expected
                );
            }
        }
    }
}
