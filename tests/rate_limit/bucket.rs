//! Candidate B of `rate_limit`, measured and not shipped: a token bucket; and the limiter that
//! records what the limiter under test granted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::testkit::LocalAws;
use inbox::destination::rate::{Admission, RateError, RateFuture};
use inbox::destination::RateLimiter;

/// Candidate B, measured beside the fixed window and not shipped (BENCHMARKS.md): a token
/// bucket of `max` tokens refilled at `max` a second, in one item (`#bucket#<destination>`:
/// `tokens`, `at_ms`, version `v`), read (consistent `GetItem`), then written on condition
/// that `v` is still what was read; a refused write (another instance wrote first) reads and
/// tries again, at most 10 times. DynamoDB cannot compute the refill (a `min` of a product) in
/// an update expression, so a read before the write is the bucket's least.
pub struct TokenBucket {
    client: aws_sdk_dynamodb::Client,
    table: String,
    reads: AtomicU64,
    writes: AtomicU64,
    refused: AtomicU64,
    gave_up: AtomicU64,
    pub granted: AtomicU64,
}

impl TokenBucket {
    pub fn new(aws: &LocalAws) -> TokenBucket {
        TokenBucket {
            client: aws.dynamo.clone(),
            table: aws.resources.table.clone(),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            gave_up: AtomicU64::new(0),
            granted: AtomicU64::new(0),
        }
    }

    pub fn figures(&self) -> [u64; 4] {
        [
            self.reads.load(Ordering::SeqCst),
            self.writes.load(Ordering::SeqCst),
            self.refused.load(Ordering::SeqCst),
            self.gave_up.load(Ordering::SeqCst),
        ]
    }

    async fn take(&self, destination: &str, max: u32, now_ms: i64) -> Result<Admission, RateError> {
        let pk = AttributeValue::S(format!("#bucket#{destination}"));
        let num = |item: &std::collections::HashMap<String, AttributeValue>, name: &str| {
            item.get(name)
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse::<f64>().ok())
        };
        let rate = f64::from(max);
        for _ in 0..10 {
            let read = self
                .client
                .get_item()
                .table_name(&self.table)
                .key("pk", pk.clone())
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| RateError(e.to_string()))?;
            self.reads.fetch_add(1, Ordering::SeqCst);
            let item = read.item().cloned().unwrap_or_default();
            let (tokens, at, v) = (
                num(&item, "tokens").unwrap_or(rate),
                num(&item, "at_ms").unwrap_or(now_ms as f64),
                num(&item, "v"),
            );
            let elapsed = (now_ms as f64 - at).max(0.0) / 1000.0;
            let tokens = (tokens + elapsed * rate).min(rate);
            if tokens < 1.0 {
                return Ok(Admission::Denied {
                    retry_after: Duration::from_secs_f64((1.0 - tokens) / rate),
                });
            }
            let mut write = self
                .client
                .put_item()
                .table_name(&self.table)
                .item("pk", pk.clone())
                .item("tokens", AttributeValue::N((tokens - 1.0).to_string()))
                .item(
                    "at_ms",
                    AttributeValue::N(now_ms.max(at as i64).to_string()),
                )
                .item("v", AttributeValue::N((v.unwrap_or(0.0) + 1.0).to_string()));
            write = match v {
                Some(v) => write
                    .condition_expression("v = :v")
                    .expression_attribute_values(":v", AttributeValue::N(v.to_string())),
                None => write.condition_expression("attribute_not_exists(pk)"),
            };
            self.writes.fetch_add(1, Ordering::SeqCst);
            match write.send().await {
                Ok(_) => {
                    self.granted.fetch_add(1, Ordering::SeqCst);
                    return Ok(Admission::Granted);
                }
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
                {
                    self.refused.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) => return Err(RateError(e.to_string())),
            }
        }
        self.gave_up.fetch_add(1, Ordering::SeqCst);
        Err(RateError(
            "the bucket is contended: 10 writes refused".into(),
        ))
    }
}

impl RateLimiter for TokenBucket {
    fn admit<'a>(
        &'a self,
        destination: &'a str,
        max: u32,
        now_ms: i64,
    ) -> RateFuture<'a, Admission> {
        Box::pin(self.take(destination, max, now_ms))
    }

    fn count<'a>(&'a self, _: &'a str, _: i64) -> RateFuture<'a, u32> {
        Box::pin(std::future::ready(Ok(0)))
    }

    /// A bucket has no window: a grant is good when it comes.
    fn windowed(&self) -> bool {
        false
    }
}

/// A limiter that notes when it granted (the grant's epoch millisecond, as the limiter's
/// window saw it).
pub struct Recording {
    pub inner: Arc<dyn RateLimiter>,
    pub grants: Mutex<Vec<i64>>,
    pub denials: AtomicU64,
}

impl RateLimiter for Recording {
    fn admit<'a>(
        &'a self,
        destination: &'a str,
        max: u32,
        now_ms: i64,
    ) -> RateFuture<'a, Admission> {
        Box::pin(async move {
            let a = self.inner.admit(destination, max, now_ms).await;
            if a == Ok(Admission::Granted) {
                self.grants.lock().expect("grants").push(now_ms);
            } else if matches!(a, Ok(Admission::Denied { .. })) {
                self.denials.fetch_add(1, Ordering::SeqCst);
            }
            a
        })
    }

    fn count<'a>(&'a self, destination: &'a str, now_ms: i64) -> RateFuture<'a, u32> {
        self.inner.count(destination, now_ms)
    }

    fn windowed(&self) -> bool {
        self.inner.windowed()
    }
}
