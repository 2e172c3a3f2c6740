//! The receiver's two entries for a case: an `http::Request` through `Receiver::handle` and
//! the API Gateway event through `Receiver::handle_event`; the check of each answer.

use std::panic::AssertUnwindSafe;

use base64::Engine as _;
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{self, now_ms, TestReceiver};
use futures::FutureExt as _;
use lambda_http::{Body, RequestExt as _};

use super::case::Case;

pub(crate) const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

pub(crate) fn request(c: &Case) -> lambda_http::Request {
    let mut builder = http::Request::builder()
        .method(c.method)
        .uri(format!("https://example.com{}", c.path));
    for (name, value) in &c.headers {
        builder = builder.header(
            name.as_str(),
            http::HeaderValue::from_bytes(value.as_bytes()).expect("a header value"),
        );
    }
    builder
        .body(Body::Binary(c.body.clone()))
        .expect("a request")
        .with_lambda_context(testkit::context(&testkit::unique("req"), now_ms() + 10_000))
}

/// The payload v2 event for `c` with this `body` field and `isBase64Encoded` flag, as API
/// Gateway writes it (`{source}` set only where the route `/webhooks/{source}` matches,
/// repeated headers joined with commas).
pub(crate) fn event_for(
    c: &Case,
    body: &str,
    is_base64: bool,
) -> lambda_runtime::LambdaEvent<aws_lambda_events::apigw::ApiGatewayV2httpRequest> {
    ApiGatewayEvent::new(c.method, &c.path)
        .headers(c.headers.iter().map(|(k, v)| (k, v)))
        .raw_body(body, is_base64)
        .lambda_event()
}

/// Checks an answer; returns a description of what was wrong, if anything.
pub(crate) fn check(
    c: &Case,
    entry: &str,
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
    let want = serde_json::json!({ "error": c.code });
    let mut wrong = Vec::new();
    if status != c.status || json != want {
        wrong.push(format!("got {status} {json}, want {} {want}", c.status));
    }
    if headers.get("content-type").map(|v| v.as_bytes()) != Some(b"application/json") {
        wrong.push("content-type is not application/json".to_owned());
    }
    if headers.contains_key("idempotent-replayed") {
        wrong.push("marked as a replay".to_owned());
    }
    if c.status == 405 && headers.get("allow").map(|v| v.as_bytes()) != Some(b"POST") {
        wrong.push("405 without Allow: POST".to_owned());
    }
    (!wrong.is_empty()).then(|| format!("{} via {entry}: {}", c.name, wrong.join("; ")))
}

pub(crate) fn event_body(resp: &aws_lambda_events::apigw::ApiGatewayV2httpResponse) -> Vec<u8> {
    match &resp.body {
        Some(Body::Text(t)) if resp.is_base64_encoded => B64.decode(t).unwrap_or_default(),
        Some(Body::Text(t)) => t.as_bytes().to_vec(),
        Some(Body::Binary(b)) => b.clone(),
        _ => Vec::new(),
    }
}

/// Runs one case through both entries; returns what went wrong (a panic included).
pub(crate) async fn run(rx: &TestReceiver, c: &Case) -> Vec<String> {
    let mut wrong = Vec::new();
    match AssertUnwindSafe(rx.handle(request(c))).catch_unwind().await {
        Ok(resp) => wrong.extend(check(
            c,
            "handle",
            resp.status().as_u16(),
            resp.headers(),
            resp.body().as_ref(),
        )),
        Err(_) => wrong.push(format!("{} via handle: PANICKED", c.name)),
    }
    let event = event_for(c, &B64.encode(&c.body), true);
    match AssertUnwindSafe(rx.handle_event(event))
        .catch_unwind()
        .await
    {
        Ok(Ok(resp)) => wrong.extend(check(
            c,
            "handle_event",
            u16::try_from(resp.status_code).unwrap_or(0),
            &resp.headers,
            &event_body(&resp),
        )),
        Ok(Err(never)) => match never {},
        Err(_) => wrong.push(format!("{} via handle_event: PANICKED", c.name)),
    }
    wrong
}
