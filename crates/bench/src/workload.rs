//! The workload: signed Standard Webhooks deliveries of numbered events (some forged) as
//! API Gateway events, sent through the emulator `concurrency` at a time, and the answers
//! counted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Result;
use devstack::senders::{Sender as _, StandardWebhooks};
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{self, TEST_WHSEC};
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

/// API Gateway's HTTP API (payload v2) event for a delivery of event `i`, signed by `sender`
/// (forged if `i` is marked [`FORGED`]).
fn apigw_event(sender: &StandardWebhooks, i: usize, size: usize) -> Vec<u8> {
    let forged = i & FORGED != 0;
    let i = i & !FORGED;
    let mut body = event_body(i, size);
    let id = format!("msg_{i:06}");
    let t = testkit::now_ms() / 1000;
    let headers = sender.headers(&id, t, &body);
    if forged {
        // Changed after signing: both functions must answer 401 without touching AWS.
        if let Some(last) = body.iter_mut().rev().find(|b| **b == b'x') {
            *last = b'y';
        }
    }
    // The headers the bench always sent: the sender's, its user agent and the length, none
    // that API Gateway adds itself.
    ApiGatewayEvent::post("acme")
        .route_key("POST /webhooks/{source}")
        .request_id(&format!("req-{i}"))
        .without_gateway_headers()
        .headers(headers)
        .header("user-agent", "Svix-Webhooks/1.0")
        .header("content-length", &body.len().to_string())
        .body(&body)
        .to_text()
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

/// Sends `indexes` through the emulator, `concurrency` at a time, signed with the secret
/// both functions are given ([`TEST_WHSEC`]). The answers, and each delivery's answer time in
/// milliseconds (from handing the event to the Runtime API to its answer: what the sender
/// waits for behind the front door, and what Lambda bills), sorted.
pub async fn deliver(
    emu: &Emulator,
    indexes: Vec<usize>,
    o: &Options,
) -> Result<(Answers, Vec<f64>)> {
    let sender = &StandardWebhooks::new(TEST_WHSEC)?;
    let answers: Vec<((u16, bool), f64)> = futures::stream::iter(indexes)
        .map(|i| async move {
            let event = apigw_event(sender, i, o.body_bytes);
            let started = Instant::now();
            let outcome = emu.invoke(event).await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            (answer(outcome), ms)
        })
        .buffer_unordered(o.concurrency)
        .collect()
        .await;
    let mut times: Vec<f64> = answers.iter().map(|(_, ms)| *ms).collect();
    times.sort_by(f64::total_cmp);
    Ok((Answers::count(answers.into_iter().map(|(a, _)| a)), times))
}

/// The `p`th percentile (0..=100, nearest rank) of sorted `values`; 0 if there are none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// (status code, marked replayed) of an invocation's outcome; (0, false) if it failed, the
/// first failure printed.
fn answer(outcome: Result<Outcome>) -> (u16, bool) {
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
