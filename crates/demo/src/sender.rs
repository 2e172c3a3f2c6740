//! The senders' side of the demo: deliveries over HTTP to the receiver behind the emulator,
//! retried as real senders retry, and a count of every answer they got.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::deliveries::Delivery;

/// A lock that a panicked holder does not poison for the others.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// What the senders saw.
#[derive(Debug, Default)]
pub struct Answers {
    /// (status, `error` code or "accepted"/"replayed") -> count, every attempt.
    pub by_answer: BTreeMap<(u16, String), u64>,
    pub attempts: u64,
    pub retries: u64,
    /// Deliveries that never got a final answer (gave up after retrying).
    pub gave_up: u64,
    /// Keys of every 200 answer.
    pub accepted: BTreeSet<String>,
    pub replayed: u64,
}

/// Senders delivering to the receiver's function URL on the emulator; clones share the
/// [`Answers`].
#[derive(Clone)]
pub struct HttpSender {
    http: reqwest::Client,
    base: String,
    answers: Arc<Mutex<Answers>>,
}

impl HttpSender {
    /// Senders to the emulator at `base` (`http://host:port`).
    pub fn new(http: reqwest::Client, base: String) -> HttpSender {
        HttpSender {
            http,
            base,
            answers: Arc::default(),
        }
    }

    /// What they saw so far, taken (the count starts again from nothing).
    pub fn take_answers(&self) -> Answers {
        std::mem::take(&mut *lock(&self.answers))
    }

    fn record(&self, f: impl FnOnce(&mut Answers)) {
        f(&mut lock(&self.answers));
    }

    /// One delivery: retried on 5xx (honouring `Retry-After`) and on connection errors, with
    /// exponential backoff, up to 8 attempts; any other answer is final.
    pub async fn deliver(&self, d: &Delivery) -> Option<u16> {
        let mut backoff = Duration::from_millis(100);
        for attempt in 0..8 {
            if attempt > 0 {
                self.record(|a| a.retries += 1);
            }
            let mut req = self
                .http
                .request(
                    d.method.clone(),
                    format!("{}/lambda-url/receiver/webhooks/{}", self.base, d.source),
                )
                .body(d.body.clone());
            for (name, value) in d.headers() {
                req = req.header(name, value);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(_) => {
                    self.record(|a| {
                        a.attempts += 1;
                        *a.by_answer.entry((0, "no answer".into())).or_default() += 1;
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            let status = resp.status().as_u16();
            let replayed = resp
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v.as_bytes() == b"true");
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            let body: Value = json_of(resp).await;
            let label = match (status, replayed) {
                (200, true) => "replayed".to_owned(),
                (200, false) => "accepted".to_owned(),
                _ => body
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
            };
            let key = body.get("key").and_then(Value::as_str).map(str::to_owned);
            self.record(|a| {
                a.attempts += 1;
                *a.by_answer.entry((status, label)).or_default() += 1;
                if status == 200 {
                    if replayed {
                        a.replayed += 1;
                    }
                    if let Some(k) = key {
                        a.accepted.insert(k);
                    }
                }
            });
            if status < 500 {
                return Some(status);
            }
            let wait = retry_after
                .map(|s| Duration::from_secs(s.min(2)))
                .unwrap_or(backoff);
            tokio::time::sleep(wait).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
        self.record(|a| a.gave_up += 1);
        None
    }
}

/// A response's JSON body, or null.
async fn json_of(resp: reqwest::Response) -> Value {
    let bytes = resp.bytes().await.unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}
