//! Requests to the receiver as the tests make them: `POST /webhooks/<source>` as lambda_http
//! hands it over, in an invocation with its own context, signed with the test secrets by
//! [`crate::senders`].

use lambda_http::{Body, Request, RequestExt};

use super::{unique, TEST_SECRET, TEST_WHSEC};
use crate::senders::{self, Sender as _};

/// A Lambda context with its own request id and a deadline `lease_ms` from now.
pub fn context(request_id: &str, deadline_ms: i64) -> lambda_runtime::Context {
    let mut ctx = lambda_runtime::Context::default();
    ctx.request_id = request_id.to_owned();
    ctx.deadline = u64::try_from(deadline_ms).unwrap_or(0);
    ctx
}

/// Epoch milliseconds now.
pub fn now_ms() -> i64 {
    inbox::clock::Clock::now_ms(&inbox::clock::SystemClock)
}

/// `POST /webhooks/<source>` as API Gateway hands it to the function, with a fresh request id.
pub fn post(source: &str, headers: &[(&str, String)], body: &[u8]) -> Request {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri(format!("https://example.com/webhooks/{source}"));
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    let req = builder
        .body(Body::Binary(body.to_vec()))
        .expect("a valid test request");
    req.with_lambda_context(context(&unique("req"), now_ms() + 10_000))
}

/// [`post`] from an invocation whose deadline (the receiver's lease) is `deadline_ms`.
pub fn post_with_deadline(
    source: &str,
    headers: &[(&str, String)],
    body: &[u8],
    deadline_ms: i64,
) -> Request {
    post(source, headers, body).with_lambda_context(context(&unique("req"), deadline_ms))
}

/// `X-Hub-Signature-256` for a body, as GitHub computes it with [`TEST_SECRET`].
pub fn github_signature(body: &[u8]) -> String {
    senders::GitHub::new(TEST_SECRET).signature(body)
}

/// Headers of a GitHub `push` delivery signed with [`TEST_SECRET`].
pub fn github_headers(delivery: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    senders::GitHub::new(TEST_SECRET).headers(delivery, 0, body)
}

/// `Stripe-Signature` for a body at `t` (epoch seconds), with [`TEST_SECRET`].
pub fn stripe_signature(body: &[u8], t: i64) -> String {
    senders::Stripe::new(TEST_SECRET).signature(t, body)
}

/// The Standard Webhooks sender of the `acme` source (secret [`TEST_WHSEC`]).
pub fn standard_webhooks() -> senders::StandardWebhooks {
    senders::StandardWebhooks::new(TEST_WHSEC).expect("TEST_WHSEC is whsec_ and base64")
}

/// Standard Webhooks headers for a body, signed with [`TEST_WHSEC`].
pub fn standard_webhooks_headers(id: &str, t: i64, body: &[u8]) -> Vec<(&'static str, String)> {
    standard_webhooks().headers(id, t, body)
}

/// `X-Shopify-Hmac-Sha256` for a body, with [`TEST_SECRET`].
pub fn shopify_signature(body: &[u8]) -> String {
    senders::Shopify::new(TEST_SECRET).signature(body)
}

/// Hex HMAC-SHA256 of a body with [`TEST_SECRET`] (the `orders` source's `X-Signature`).
pub fn hmac_hex(body: &[u8]) -> String {
    senders::HmacHex::new(TEST_SECRET, "x-signature").signature(body)
}
