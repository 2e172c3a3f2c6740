//! The workload: signed Standard Webhooks deliveries of numbered events (some forged) as
//! API Gateway events, sent through the emulator `concurrency` at a time, and the answers
//! counted.

use std::sync::atomic::{AtomicBool, Ordering};

use devstack::testkit;
use futures::StreamExt;

use crate::options::Options;
use crate::runtime::{Emulator, Outcome};

/// The JSON body of event `i`, padded to `size` bytes; customers `cus_000`..`cus_063`.
fn event_body(i: usize, size: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"id":"evt_{i:06}","type":"invoice.paid","customer_id":"cus_{:03}","pad":""#,
        i % 64
    );
    let pad = size.saturating_sub(head.len() + 2);
    let mut out = head.into_bytes();
    out.extend(std::iter::repeat_n(b'x', pad));
    out.extend_from_slice(br#""}"#);
    out
}

/// Marks an index as a forged delivery (its body changed after signing).
const FORGED: usize = 1 << 40;

/// API Gateway's HTTP API (payload v2) event for a signed delivery of event `i`.
fn apigw_event(i: usize, size: usize) -> Vec<u8> {
    let forged = i & FORGED != 0;
    let i = i & !FORGED;
    let mut body = event_body(i, size);
    let id = format!("msg_{i:06}");
    let t = testkit::now_ms() / 1000;
    let mut headers: serde_json::Map<String, serde_json::Value> =
        testkit::standard_webhooks_headers(&id, t, &body)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v)))
            .collect();
    if forged {
        // Changed after signing: both functions must answer 401 without touching AWS.
        if let Some(last) = body.iter_mut().rev().find(|b| **b == b'x') {
            *last = b'y';
        }
    }
    headers.insert("user-agent".into(), "Svix-Webhooks/1.0".into());
    headers.insert("content-length".into(), body.len().to_string().into());
    serde_json::json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": "/webhooks/acme",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench", "domainName": "bench.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "bench", "requestId": format!("req-{i}"), "routeKey": "POST /webhooks/{source}",
            "stage": "$default", "time": "01/Jan/2026:00:00:00 +0000", "timeEpoch": testkit::now_ms(),
            "http": {"method": "POST", "path": "/webhooks/acme", "protocol": "HTTP/1.1",
                     "sourceIp": "192.0.2.1", "userAgent": "Svix-Webhooks/1.0"}
        },
        "pathParameters": {"source": "acme"},
        "body": String::from_utf8(body).expect("ASCII body"),
        "isBase64Encoded": false
    })
    .to_string()
    .into_bytes()
}

/// The three phases' deliveries, as event indexes: every event once; then the duplicates
/// (`deliveries - events`, round robin over the events); then up to 500 forged deliveries.
pub fn phases(o: &Options) -> [Vec<usize>; 3] {
    let firsts: Vec<usize> = (0..o.events).collect();
    let dups: Vec<usize> = (o.events..o.deliveries).map(|d| d % o.events).collect();
    let forged: Vec<usize> = (0..o.events.min(500)).map(|i| i | FORGED).collect();
    [firsts, dups, forged]
}

/// The functions' answers to one phase, by kind.
#[derive(Default, Clone, Copy)]
pub struct Answers {
    /// 200, first acceptance.
    pub ok_first: u64,
    /// 200 marked `idempotent-replayed: true`.
    pub ok_replayed: u64,
    /// 401.
    pub unauthorized: u64,
    /// Anything else, failed invocations included.
    pub other: u64,
}

impl Answers {
    /// Counts (status, replayed) answers.
    fn count(answers: impl IntoIterator<Item = (u16, bool)>) -> Answers {
        let mut a = Answers::default();
        for (status, replayed) in answers {
            match (status, replayed) {
                (200, false) => a.ok_first += 1,
                (200, true) => a.ok_replayed += 1,
                (401, _) => a.unauthorized += 1,
                _ => a.other += 1,
            }
        }
        a
    }
}

/// Whether a failed invocation was reported already (only the first one is).
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Sends `indexes` through the emulator, `concurrency` at a time.
pub async fn deliver(emu: &Emulator, indexes: Vec<usize>, o: &Options) -> Answers {
    let answers: Vec<(u16, bool)> = futures::stream::iter(indexes)
        .map(|i| async move { answer(emu.invoke(apigw_event(i, o.body_bytes)).await) })
        .buffer_unordered(o.concurrency)
        .collect()
        .await;
    Answers::count(answers)
}

/// (status code, marked replayed) of an invocation's outcome; (0, false) if it failed, the
/// first failure printed.
fn answer(outcome: anyhow::Result<Outcome>) -> (u16, bool) {
    match outcome {
        Ok(Outcome::Response(body)) => {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let status = v["statusCode"].as_u64().unwrap_or(0) as u16;
            let replayed = v["headers"]["idempotent-replayed"] == "true";
            (status, replayed)
        }
        Ok(Outcome::Error(body)) => {
            if !REPORTED.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "bench: an invocation failed: {}",
                    String::from_utf8_lossy(&body)
                );
            }
            (0, false)
        }
        Err(e) => {
            if !REPORTED.swap(true, Ordering::Relaxed) {
                eprintln!("bench: an invocation failed: {e:#}");
            }
            (0, false)
        }
    }
}
