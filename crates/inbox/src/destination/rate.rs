//! A destination's rate limit (`max_per_second`, docs/routing.md "Rate limit"), held across
//! every consumer instance: a **fixed window** of one second per destination, counted in one
//! item of the ledger's table, `pk` `#rate#<destination>#<unix second>`. Each call first adds
//! one to its window's count with a conditional `UpdateItem` (`ADD n :one`, on condition
//! `attribute_not_exists(n) OR n < :max`): one write, granted or not. A refused condition is
//! the window full: the pair is deferred, as a throttled one, until the next window. No read,
//! no retry: contention between instances is the condition itself.
//!
//! [`RateLimiter`] is the port ([`DynamoRate`] the adapter, [`MemoryRate`] for tests and the
//! simulation); [`RateLimits`] is what [`super::Targets`] asks before each call.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::clock::{Clock, SystemClock};
use crate::consumer::{Job, Outcome, ProcessError};
use crate::metrics::{Metric, Metrics};
use crate::route::Routes;

/// A window item's `pk` starts so; a `#` starts no event key.
pub const RATE_PK_PREFIX: &str = "#rate#";

/// How long a window's item is kept after its second (its `expires_at`, the table's TTL).
pub const WINDOW_KEPT_SECONDS: i64 = 3600;

/// The wait after the limiter itself could not answer (the ledger's table unreachable or
/// throttling): the pair is deferred, never called unlimited and never failed.
pub const UNREADABLE_WAIT: Duration = Duration::from_secs(1);

/// The item of `destination`'s window holding `second` (epoch seconds).
pub fn window_key(destination: &str, second: i64) -> String {
    format!("{RATE_PK_PREFIX}{destination}#{second}")
}

/// How long from `now_ms` until the next window starts (1 to 1000 ms).
pub fn until_next_window(now_ms: i64) -> Duration {
    let left = 1000 - now_ms.rem_euclid(1000);
    Duration::from_millis(u64::try_from(left).unwrap_or(1000))
}

/// What the limiter said to one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Counted in the current window: call now.
    Granted,
    /// The window is full: try again after `retry_after` (the next window).
    Denied { retry_after: Duration },
}

/// The limiter could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("rate limit unreadable: {0}")]
pub struct RateError(pub String);

/// A boxed future of the limiter (the port is object-safe, so a test or the simulation can
/// put any limiter behind [`RateLimits`]).
pub type RateFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, RateError>> + Send + 'a>>;

/// The rate limit's port: one window of one second per destination, shared by every
/// consumer instance.
pub trait RateLimiter: Send + Sync + 'static {
    /// Counts one call to `destination` in the window of `now_ms` where fewer than `max`
    /// were counted in it; else [`Admission::Denied`] until the next window.
    fn admit<'a>(
        &'a self,
        destination: &'a str,
        max: u32,
        now_ms: i64,
    ) -> RateFuture<'a, Admission>;

    /// The calls counted in `destination`'s window of `now_ms` (`inbox-ops status`).
    fn count<'a>(&'a self, destination: &'a str, now_ms: i64) -> RateFuture<'a, u32>;

    /// Whether a grant counts in the second it was asked in (a fixed window: `true`), so that
    /// one back after that second closed must not be used ([`RateLimits::check`]).
    fn windowed(&self) -> bool {
        true
    }
}

/// The limiter in memory: one count per (destination, second), shared by its clones (the
/// "instances" of a test or of the simulation). Windows more than a minute old are dropped.
#[derive(Clone, Debug, Default)]
pub struct MemoryRate(Arc<Mutex<BTreeMap<(String, i64), u32>>>);

impl MemoryRate {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every window's count of `destination`, by second (the last minute's).
    pub fn windows(&self, destination: &str) -> BTreeMap<i64, u32> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|((d, _), _)| d == destination)
            .map(|((_, s), n)| (*s, *n))
            .collect()
    }
}

impl RateLimiter for MemoryRate {
    fn admit<'a>(
        &'a self,
        destination: &'a str,
        max: u32,
        now_ms: i64,
    ) -> RateFuture<'a, Admission> {
        let second = now_ms.div_euclid(1000);
        let mut windows = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        windows.retain(|(_, s), _| *s >= second - 60);
        let n = windows.entry((destination.to_owned(), second)).or_insert(0);
        let admission = if *n < max {
            *n += 1;
            Admission::Granted
        } else {
            Admission::Denied {
                retry_after: until_next_window(now_ms),
            }
        };
        Box::pin(std::future::ready(Ok(admission)))
    }

    fn count<'a>(&'a self, destination: &'a str, now_ms: i64) -> RateFuture<'a, u32> {
        let n = self
            .windows(destination)
            .get(&now_ms.div_euclid(1000))
            .copied()
            .unwrap_or(0);
        Box::pin(std::future::ready(Ok(n)))
    }
}

/// The limiter on DynamoDB: the window items in the ledger's table.
#[derive(Clone, Debug)]
pub struct DynamoRate {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoRate {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    async fn admit_once(
        &self,
        destination: &str,
        max: u32,
        now_ms: i64,
    ) -> Result<Admission, RateError> {
        let second = now_ms.div_euclid(1000);
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(window_key(destination, second)))
            .update_expression("ADD n :one SET expires_at = :expires")
            .condition_expression("attribute_not_exists(n) OR n < :max")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":max", AttributeValue::N(max.to_string()))
            .expression_attribute_values(
                ":expires",
                AttributeValue::N((second + WINDOW_KEPT_SECONDS).to_string()),
            )
            .send()
            .await;
        match answer {
            Ok(_) => Ok(Admission::Granted),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(Admission::Denied {
                    retry_after: until_next_window(now_ms),
                })
            }
            Err(e) => Err(RateError(format!(
                "{}: {}",
                e.code().unwrap_or("error"),
                aws_sdk_dynamodb::error::DisplayErrorContext(&e)
            ))),
        }
    }

    async fn count_once(&self, destination: &str, now_ms: i64) -> Result<u32, RateError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(
                "pk",
                AttributeValue::S(window_key(destination, now_ms.div_euclid(1000))),
            )
            .send()
            .await
            .map_err(|e| RateError(format!("{}: {}", e.code().unwrap_or("error"), e)))?;
        Ok(out
            .item()
            .and_then(|i| i.get("n"))
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0))
    }
}

impl RateLimiter for DynamoRate {
    fn admit<'a>(
        &'a self,
        destination: &'a str,
        max: u32,
        now_ms: i64,
    ) -> RateFuture<'a, Admission> {
        Box::pin(self.admit_once(destination, max, now_ms))
    }

    fn count<'a>(&'a self, destination: &'a str, now_ms: i64) -> RateFuture<'a, u32> {
        Box::pin(self.count_once(destination, now_ms))
    }
}

/// The destinations' limits and the limiter that holds them, asked before each call.
#[derive(Clone)]
pub struct RateLimits {
    limiter: Arc<dyn RateLimiter>,
    maxima: BTreeMap<String, u32>,
    metrics: Metrics,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("maxima", &self.maxima)
            .finish_non_exhaustive()
    }
}

impl RateLimits {
    /// The `max_per_second` of each destination of `routes` that has one, held by
    /// `limiter`; a deferral counted `RateLimited` in `metrics`. `None` where no destination
    /// has a limit (no call is made).
    pub fn of(routes: &Routes, limiter: Arc<dyn RateLimiter>, metrics: Metrics) -> Option<Self> {
        let maxima: BTreeMap<String, u32> = routes
            .iter()
            .filter_map(|d| Some((d.name.clone(), d.max_per_second?)))
            .collect();
        (!maxima.is_empty()).then(|| Self {
            limiter,
            maxima,
            metrics,
            clock: Arc::new(SystemClock),
        })
    }

    /// The same limits read on another clock (the simulation's).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// `None` where `job` may go to `destination` now (no limit, or counted in this second's
    /// window); else the deferral: [`Outcome::Throttled`] until the next window, or, where
    /// the limiter could not answer, after [`UNREADABLE_WAIT`] (logged; never a failure).
    ///
    /// A grant that comes back after its window closed (the write outlasted the second) is
    /// not used: the call would start in the next window without being counted in it. It is
    /// deferred as a full window is, so that every call starts within the window that
    /// counted it.
    pub async fn check(&self, destination: &str, job: &Job) -> Option<Outcome> {
        let max = *self.maxima.get(destination)?;
        let asked_ms = self.clock.now_ms();
        let admitted = self.limiter.admit(destination, max, asked_ms).await;
        let deferred = |retry_after: Duration, why: String| {
            self.metrics
                .count_destination(&job.source, destination, Metric::RateLimited);
            Some(Outcome::Throttled {
                retry_after,
                reason: ProcessError(format!("{RATE_LIMITED}: {why}")),
            })
        };
        match admitted {
            Ok(Admission::Granted) => {
                let now_ms = self.clock.now_ms();
                if !self.limiter.windowed() || now_ms.div_euclid(1000) == asked_ms.div_euclid(1000)
                {
                    return None;
                }
                deferred(
                    until_next_window(now_ms),
                    "the grant came back after its second closed".into(),
                )
            }
            Ok(Admission::Denied { retry_after }) => deferred(
                retry_after,
                format!("{max} calls in this second (max_per_second)"),
            ),
            Err(e) => {
                tracing::warn!(
                    destination,
                    source = job.source,
                    key = job.key,
                    error = %e,
                    "the rate limit could not be read: the call is deferred"
                );
                Some(Outcome::Throttled {
                    retry_after: UNREADABLE_WAIT,
                    reason: ProcessError(e.to_string()),
                })
            }
        }
    }

    /// The limit of `destination`, where it has one.
    pub fn max_per_second(&self, destination: &str) -> Option<u32> {
        self.maxima.get(destination).copied()
    }
}

/// How a deferral by the rate limit starts its reason (`last_error`, the log's `error`).
pub const RATE_LIMITED: &str = "rate limited";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_one_second_and_the_wait_reaches_the_next() {
        assert_eq!(window_key("crm", 1_700_000_000), "#rate#crm#1700000000");
        assert_eq!(until_next_window(1_700_000_000_000), Duration::from_secs(1));
        assert_eq!(
            until_next_window(1_700_000_000_999),
            Duration::from_millis(1)
        );
        assert_eq!(
            until_next_window(1_700_000_000_250),
            Duration::from_millis(750)
        );
    }

    #[tokio::test]
    async fn memory_grants_max_a_window_then_denies_until_the_next() {
        let rate = MemoryRate::new();
        let other = rate.clone();
        let t = 1_700_000_000_400;
        for i in 0..3 {
            let by = if i % 2 == 0 { &rate } else { &other };
            assert_eq!(by.admit("crm", 3, t + i).await, Ok(Admission::Granted));
        }
        assert_eq!(
            rate.admit("crm", 3, t + 10).await,
            Ok(Admission::Denied {
                retry_after: Duration::from_millis(590)
            })
        );
        // Another destination has its own window; the next second is a new window.
        assert_eq!(rate.admit("ci", 3, t).await, Ok(Admission::Granted));
        assert_eq!(rate.admit("crm", 3, t + 600).await, Ok(Admission::Granted));
        assert_eq!(rate.count("crm", t).await, Ok(3));
        assert_eq!(rate.count("crm", t + 600).await, Ok(1));
        assert_eq!(
            other.windows("crm"),
            BTreeMap::from([(1_700_000_000, 3), (1_700_000_001, 1)])
        );
    }

    #[tokio::test]
    async fn memory_drops_the_windows_older_than_a_minute() {
        let rate = MemoryRate::new();
        assert_eq!(rate.admit("crm", 3, 50_000).await, Ok(Admission::Granted));
        assert_eq!(rate.admit("crm", 3, 109_999).await, Ok(Admission::Granted));
        assert_eq!(rate.windows("crm"), BTreeMap::from([(50, 1), (109, 1)]));
        assert_eq!(rate.admit("crm", 3, 200_000).await, Ok(Admission::Granted));
        assert_eq!(rate.windows("crm"), BTreeMap::from([(200, 1)]));
    }

    /// A limiter whose table is out of reach.
    struct Unreachable;

    impl RateLimiter for Unreachable {
        fn admit<'a>(&'a self, _: &'a str, _: u32, _: i64) -> RateFuture<'a, Admission> {
            Box::pin(std::future::ready(Err(RateError(
                "ProvisionedThroughputExceededException: slow down".into(),
            ))))
        }
        fn count<'a>(&'a self, _: &'a str, _: i64) -> RateFuture<'a, u32> {
            Box::pin(std::future::ready(Err(RateError("unreachable".into()))))
        }
    }

    fn routes() -> Routes {
        let sources = crate::config::SourceSpecs::parse(
            r#"{"github": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
        )
        .expect("sources");
        Routes::parse(
            r#"{"paced": {"target": "https://127.0.0.1:9/in", "sources": ["github"], "max_per_second": 2},
                "free": {"target": "https://127.0.0.1:9/in", "sources": ["github"]}}"#,
            &sources,
        )
        .expect("routes")
    }

    fn job() -> Job {
        Job {
            key: "github:1".into(),
            source: "github".into(),
            body: bytes::Bytes::from_static(b"{}"),
            headers: BTreeMap::new(),
            attempt: 1,
            lease_until_ms: i64::MAX,
            replay_id: None,
            event_type: None,
            trace: None,
        }
    }

    #[tokio::test]
    async fn a_call_over_the_limit_is_deferred_to_the_next_window_and_counted() {
        let clock = crate::clock::ManualClock::at_ms(1_700_000_000_300);
        let (metrics, lines) = Metrics::memory("consumer");
        let rate = MemoryRate::new();
        let limits = RateLimits::of(&routes(), Arc::new(rate.clone()), metrics)
            .expect("a limit")
            .with_clock(Arc::new(clock.clone()));
        assert_eq!(limits.max_per_second("paced"), Some(2));
        assert_eq!(limits.max_per_second("free"), None);
        let shown = format!("{limits:?}");
        assert!(
            shown.starts_with("RateLimits {") && shown.contains("\"paced\": 2"),
            "{shown}"
        );
        assert_eq!(limits.check("paced", &job()).await, None);
        assert_eq!(limits.check("paced", &job()).await, None);
        assert_eq!(
            limits.check("paced", &job()).await,
            Some(Outcome::Throttled {
                retry_after: Duration::from_millis(700),
                reason: ProcessError(
                    "rate limited: 2 calls in this second (max_per_second)".into()
                ),
            })
        );
        // A destination without a limit is never counted.
        for _ in 0..5 {
            assert_eq!(limits.check("free", &job()).await, None);
        }
        assert!(rate.windows("free").is_empty());
        clock.advance_ms(700);
        assert_eq!(limits.check("paced", &job()).await, None);
        let lines = lines.lock().expect("lines").clone();
        assert_eq!(
            crate::metrics::tally(&lines, "github", Metric::RateLimited),
            1
        );
        assert!(lines[0].contains(r#""destination":"paced""#), "{lines:?}");
    }

    /// A limiter whose write outlasts the second: the clock moves while it answers.
    struct Slow(MemoryRate, crate::clock::ManualClock);

    impl RateLimiter for Slow {
        fn admit<'a>(&'a self, d: &'a str, max: u32, now_ms: i64) -> RateFuture<'a, Admission> {
            Box::pin(async move {
                let answer = self.0.admit(d, max, now_ms).await;
                self.1.advance_ms(300);
                answer
            })
        }
        fn count<'a>(&'a self, d: &'a str, now_ms: i64) -> RateFuture<'a, u32> {
            self.0.count(d, now_ms)
        }
    }

    #[tokio::test]
    async fn a_grant_back_after_its_second_closed_is_not_used() {
        let clock = crate::clock::ManualClock::at_ms(1_700_000_000_800);
        let (metrics, lines) = Metrics::memory("consumer");
        let rate = MemoryRate::new();
        let limits = RateLimits::of(
            &routes(),
            Arc::new(Slow(rate.clone(), clock.clone())),
            metrics,
        )
        .expect("a limit")
        .with_clock(Arc::new(clock.clone()));
        // Asked at .800, answered at 1.100: counted in the first second, not used.
        assert_eq!(
            limits.check("paced", &job()).await,
            Some(Outcome::Throttled {
                retry_after: Duration::from_millis(900),
                reason: ProcessError(
                    "rate limited: the grant came back after its second closed".into()
                ),
            })
        );
        // Asked at 1.100, answered at 1.400: used.
        assert_eq!(limits.check("paced", &job()).await, None);
        assert_eq!(
            rate.windows("paced"),
            BTreeMap::from([(1_700_000_000, 1), (1_700_000_001, 1)])
        );
        let lines = lines.lock().expect("lines").clone();
        assert_eq!(
            crate::metrics::tally(&lines, "github", Metric::RateLimited),
            1
        );
    }

    #[tokio::test]
    async fn an_unreadable_limit_defers_the_call_and_never_fails_it() {
        let (metrics, lines) = Metrics::memory("consumer");
        let limits = RateLimits::of(&routes(), Arc::new(Unreachable), metrics).expect("a limit");
        assert_eq!(
            limits.check("paced", &job()).await,
            Some(Outcome::Throttled {
                retry_after: UNREADABLE_WAIT,
                reason: ProcessError(
                    "rate limit unreadable: ProvisionedThroughputExceededException: slow down"
                        .into()
                ),
            })
        );
        assert!(lines.lock().expect("lines").is_empty());
    }

    #[tokio::test]
    async fn targets_call_a_limited_destination_only_within_its_rate() {
        use crate::consumer::Destinations as _;
        let forwarder =
            crate::forward::HttpForwarder::new("http://127.0.0.1:9/in", Duration::from_millis(200))
                .expect("a forwarder");
        let (metrics, _) = Metrics::memory("consumer");
        let rate = MemoryRate::new();
        let clock = crate::clock::ManualClock::at_ms(1_700_000_000_000);
        let targets = super::super::Targets::new(
            BTreeMap::from([("paced".to_owned(), super::super::Adapter::Http(forwarder))]),
            None,
        )
        .with_rate_limits(
            RateLimits::of(&routes(), Arc::new(rate.clone()), metrics)
                .map(|r| r.with_clock(Arc::new(clock))),
        );
        // Within the rate, the adapter is called (port 9 refuses: a failure); over it, not.
        let outcomes = [
            targets.deliver("paced", &job()).await,
            targets.deliver("paced", &job()).await,
            targets.deliver("paced", &job()).await,
        ];
        assert!(matches!(outcomes[0], Outcome::Failed(_)), "{outcomes:?}");
        assert!(matches!(outcomes[1], Outcome::Failed(_)), "{outcomes:?}");
        assert!(
            matches!(&outcomes[2], Outcome::Throttled { reason, .. } if reason.0.starts_with(RATE_LIMITED)),
            "{outcomes:?}"
        );
        assert_eq!(rate.windows("paced"), BTreeMap::from([(1_700_000_000, 2)]));
    }
}
