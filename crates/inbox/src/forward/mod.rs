//! The shipped processor, [`HttpForwarder`]: POSTs each event's raw body to `FORWARD_URL`
//! (docs/design.md §6).
//!
//! - **Headers**: `Idempotency-Key: <key>`, `X-Webhook-Source`, the original `Content-Type`,
//!   `Webhook-Replay-Id: <id>` on a replay, `traceparent` (W3C: the call's span in the event's
//!   trace, docs/operations.md "Traces"),
//!   and, with signing secrets, the Standard Webhooks `webhook-id`, `webhook-timestamp` and
//!   `webhook-signature` ([`signing`]). No `Referer`.
//! - **Success is a 2xx to the POST itself.** No redirect is followed: a 3xx is a failure with
//!   its status in `last_error` (a followed 301/302/303 turns the POST into a GET without a
//!   body, which may answer 200 while the event is lost; a 307/308 sends the body wherever the
//!   `Location` says).
//! - **Backpressure**: 429 and 503 are the system of record asking to be called later:
//!   [`Outcome::Throttled`] after its `Retry-After` ([`retry_after`]), not a failure.
//! - Anything else, no answer in time, or no time left in the lease is a failure;
//!   `last_error` says which, never the URL; a connection that could not be made says its
//!   cause (`forward failed: could not connect: invalid peer certificate: UnknownIssuer`).
//! - **Trust**: the public roots, and the test-only CA where `HTTPS_TEST_CA_FILE` names one
//!   ([`HttpForwarder::trusting`], [`crate::test_ca`]). A response body is read at most
//!   [`MAX_RESPONSE_BYTES`] (so the connection can be reused) and never kept.

use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::consumer::{Job, Outcome, ProcessError, Processor, LEASE_MARGIN_MS};
use crate::test_ca::TestCa;

pub mod retry_after;
pub mod signing;

pub use signing::ForwardSigner;

/// The header naming the replay on a forward `inbox-ops replay` asked for (beside the same
/// `Idempotency-Key`): a system of record that deduplicates by key lets a replay through by it.
pub const REPLAY_ID_HEADER: &str = "Webhook-Replay-Id";

/// The most of a response body read (and dropped) before the connection is let go.
pub const MAX_RESPONSE_BYTES: usize = 4096;

/// POSTs the original body to `FORWARD_URL`; see the module documentation.
#[derive(Clone, Debug)]
pub struct HttpForwarder {
    client: reqwest::Client,
    url: String,
    timeout: Duration,
    signer: Option<ForwardSigner>,
}

impl HttpForwarder {
    /// One client, one connection pool, for the life of the process; unsigned.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<Self, reqwest::Error> {
        Self::trusting(url, timeout, None)
    }

    /// [`HttpForwarder::new`] whose client also trusts the test-only CA
    /// (`HTTPS_TEST_CA_FILE`, [`crate::test_ca`]) where there is one.
    pub fn trusting(
        url: impl Into<String>,
        timeout: Duration,
        test_ca: Option<&TestCa>,
    ) -> Result<Self, reqwest::Error> {
        let builder = reqwest::Client::builder()
            .connect_timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .referer(false);
        let client = crate::test_ca::trusting(builder, test_ca).build()?;
        Ok(Self {
            client,
            url: url.into(),
            timeout,
            signer: None,
        })
    }

    /// Signs every forward with these keys (Standard Webhooks).
    pub fn signed(mut self, signer: ForwardSigner) -> Self {
        self.signer = Some(signer);
        self
    }

    /// Whether forwards carry a signature.
    pub fn is_signed(&self) -> bool {
        self.signer.is_some()
    }

    /// One signed POST of the event: the adapter's one call, whether it is the default
    /// destination (`FORWARD_URL`, through [`Processor`]) or a named `https://` destination
    /// ([`crate::destination::Adapter::Http`]).
    pub async fn deliver(&self, job: &Job) -> Outcome {
        let now_ms = SystemClock.now_ms();
        let left = u64::try_from(job.lease_until_ms - now_ms - LEASE_MARGIN_MS).unwrap_or(0);
        if left == 0 {
            return failed("no time left in the lease");
        }
        let timeout = self.timeout.min(Duration::from_millis(left));
        let content_type = job
            .headers
            .get("content-type")
            .map(String::as_str)
            .unwrap_or("application/octet-stream");
        let mut request = self
            .client
            .post(&self.url)
            .header("Idempotency-Key", &job.key)
            .header("Content-Type", content_type)
            .header("X-Webhook-Source", &job.source);
        if let Some(replay_id) = &job.replay_id {
            request = request.header(REPLAY_ID_HEADER, replay_id);
        }
        // The call's place in the event's trace: the system of record can join it. A header
        // beside the body; the body stays the bytes the sender signed.
        if let Some(trace) = &job.trace {
            request = request.header(crate::trace::TRACEPARENT, trace.traceparent());
        }
        if let Some(signer) = &self.signer {
            let signed = signer.sign(
                &job.key,
                job.replay_id.as_deref(),
                now_ms.div_euclid(1000),
                &job.body,
            );
            request = request
                .header("webhook-id", signed.id)
                .header("webhook-timestamp", signed.timestamp)
                .header("webhook-signature", signed.signature);
        }
        let response = request
            .body(job.body.clone()) // a reference count, not a copy
            .timeout(timeout)
            .send()
            .await;
        let mut response = match response {
            Ok(r) => r,
            Err(e) => return failed(&format!("forward failed: {}", without_url(&e))),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        drain(&mut response).await;
        if status.is_success() {
            Outcome::Done
        } else if status.is_redirection() {
            failed(&format!(
                "forward answered {status} (redirects are not followed)"
            ))
        } else if status == reqwest::StatusCode::TOO_MANY_REQUESTS
            || status == reqwest::StatusCode::SERVICE_UNAVAILABLE
        {
            let wait = retry_after::retry_after(retry_after.as_deref(), SystemClock.now_ms());
            Outcome::Throttled {
                retry_after: wait,
                reason: ProcessError(format!(
                    "throttled: forward answered {status}, retry after {} s",
                    wait.as_secs()
                )),
            }
        } else {
            failed(&format!("forward answered {status}"))
        }
    }
}

/// The forward as the default destination (`FORWARD_URL`): the consumer's [`Processor`] is
/// the default destination's port, and this is [`HttpForwarder::deliver`] behind it.
impl Processor for HttpForwarder {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        match self.deliver(job).await {
            Outcome::Done => Ok(()),
            Outcome::Failed(e) | Outcome::Throttled { reason: e, .. } => Err(e),
        }
    }

    async fn run(&self, job: &Job) -> Outcome {
        self.deliver(job).await
    }
}

fn failed(message: &str) -> Outcome {
    Outcome::Failed(ProcessError(message.to_owned()))
}

/// Reads the body up to [`MAX_RESPONSE_BYTES`] and drops it: a body read to its end lets the
/// connection go back to the pool; a longer one (or an error) closes it instead.
async fn drain(response: &mut reqwest::Response) {
    let mut read = 0;
    while read <= MAX_RESPONSE_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len(),
            Ok(None) | Err(_) => return,
        }
    }
}

/// What went wrong, never the URL: the kind, and for a connection that could not be made its
/// first cause (a refused connection, a certificate the client does not trust), which names no
/// URL (only `reqwest`'s own error does, and it is the outermost).
fn without_url(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        match root_cause(e) {
            Some(cause) => format!("could not connect: {cause}"),
            None => "could not connect".to_owned(),
        }
    } else {
        "request error".to_owned()
    }
}

/// The innermost error under `e` (its own text, not its wrappers'), where there is one.
fn root_cause(e: &reqwest::Error) -> Option<String> {
    let mut cause = std::error::Error::source(e)?;
    while let Some(next) = cause.source() {
        cause = next;
    }
    Some(cause.to_string())
}
