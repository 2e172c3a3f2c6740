//! The senders: who sends what (one event per sender, or a batch of several: docs/design.md
//! §14), a delivery as a receiver invocation, and the sender's view of the answer (satisfied by
//! a 200, else a retry of the whole request within its window).
//!
//! A batch sender's events overlap another's (a provider's later batch repeating an event of an
//! earlier one, as HubSpot's may): an event travels in several requests, each retried whole, so
//! a receiver dying after some of a batch's claims or sends meets the retry of that batch and
//! the overlapping batch, interleaved. Every event must still be queued once, applied once.

use lambda_http::{Body, RequestExt, Response};
use rand::rngs::StdRng;
use rand::Rng;

use crate::params::{RECEIVER_TIMEOUT_MS, SENDER_WINDOW_MS};
use crate::sim::{Sender, Sim, Task, Work};

impl Sim<'_> {
    pub(crate) fn deliver(&mut self, e: usize, why: &str) {
        self.invocations += 1;
        let now = self.now();
        let request_id = format!("rx{}", self.invocations);
        let deadline = now + RECEIVER_TIMEOUT_MS;
        let s = &mut self.senders[e];
        s.first_sent.get_or_insert(now);
        s.retry_at = None;
        let mut builder = http::Request::builder()
            .method("POST")
            .uri(format!("https://inbox.example/webhooks/{}", s.source));
        for (name, value) in &s.headers {
            builder = builder.header(*name, value.as_str());
        }
        let mut ctx = lambda_runtime::Context::default();
        ctx.request_id = request_id.clone();
        ctx.deadline = u64::try_from(deadline).unwrap_or(0);
        let req = builder
            .body(Body::Binary(s.body.clone()))
            .expect("a valid request")
            .with_lambda_context(ctx);
        let key = s.keys.join(",");
        let rx = self.rx;
        self.tasks.push(Task {
            name: format!("{request_id} ({key})"),
            deadline,
            hard_stop: i64::MAX,
            zombie: false,
            work: Work::Receive {
                event: e,
                fut: Box::pin(async move { rx.handle(req).await }),
            },
        });
        let batch = self.senders[e].batch;
        let mut w = self.w();
        w.stats.deliveries += 1;
        w.stats.batch_deliveries += u64::from(batch);
        w.log(format!("{request_id}: sender delivers {key} ({why})"));
    }

    /// The sender's view of one delivery: `None` when no answer reached it.
    pub(crate) fn answered(&mut self, e: usize, name: &str, resp: Option<Response<Body>>) {
        let now = self.now();
        let key = self.senders[e].keys.join(",");
        let mut seen = resp.map(|r| (r.status().as_u16(), r));
        if let Some((200, r)) = &seen {
            let body: serde_json::Value =
                serde_json::from_slice(r.body().as_ref()).unwrap_or_default();
            // One event: its key; a batch: every event's key, in the batch's order.
            let keys_ok = if self.senders[e].batch {
                body["keys"] == serde_json::json!(self.senders[e].keys)
            } else {
                body["key"] == key.as_str()
            };
            if !keys_ok || body["status"] != "accepted" {
                self.w()
                    .violation(format!("{name}: 200 with body {body} for {key}"));
            }
            self.senders[e].accepted = true;
        }
        if let Some((status, _)) = &seen {
            if !matches!(status, 200 | 500) {
                let status = *status;
                self.w()
                    .violation(format!("{name}: unexpected status {status} for {key}"));
            }
            let status = *status;
            *self.w().stats.answers.entry(status).or_default() += 1;
            let faults_on = self.w().faults_on;
            let lost = faults_on && self.rng.random_bool(self.rates.lost_response);
            self.log(format!(
                "{name}: answered {status}{}",
                if lost { ", answer lost on the way" } else { "" }
            ));
            if lost {
                self.w().stats.lost_responses += 1;
                seen = None;
            }
        }
        match seen {
            Some((200, _)) => self.senders[e].satisfied = true,
            _ => {
                let s = &mut self.senders[e];
                if s.satisfied {
                    return;
                }
                if now - s.first_sent.unwrap_or(now) < SENDER_WINDOW_MS {
                    let at = now + self.rng.random_range(1_000..60_000);
                    self.senders[e].retry_at = Some(at);
                } else {
                    self.log(format!("sender gives up on {key}"));
                }
            }
        }
    }
}

pub(crate) fn make_senders(rng: &mut StdRng, n: usize) -> Vec<Sender> {
    // Two thirds of the seeds: batches too, and half as many single events, so that a seed
    // holds about as many events as before (more messages per consumer batch would make its
    // invocations outlive their timeouts often enough to age messages out of the simulated
    // queue's short retention, which the parameters exist to prevent).
    let with_batches = rng.random_bool(2.0 / 3.0);
    let n = if with_batches { n.div_ceil(2) } else { n };
    let mut senders: Vec<Sender> = (0..n)
        .map(|i| {
            if rng.random_bool(0.5) {
                let body = format!(r#"{{"kind":"push","n":{i}}}"#).into_bytes();
                single(
                    format!("gh:evt-{i}"),
                    "gh",
                    vec![
                        ("x-event-id", format!("evt-{i}")),
                        ("content-type", "application/json".to_owned()),
                    ],
                    body,
                )
            } else {
                let customer = rng.random_range(0..2);
                let body = format!(r#"{{"id":"ord-{i}","customer_id":"cus-{customer}","n":{i}}}"#)
                    .into_bytes();
                single(
                    format!("shop:ord-{i}"),
                    "shop",
                    vec![("content-type", "application/json".to_owned())],
                    body,
                )
            }
        })
        .collect();
    if with_batches {
        senders.extend(make_batches(rng));
    }
    senders
}

fn single(
    key: String,
    source: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
) -> Sender {
    Sender {
        keys: vec![key.clone()],
        events: vec![(key, body.clone())],
        batch: false,
        source,
        headers,
        body,
        first_sent: None,
        retry_at: None,
        accepted: false,
        satisfied: false,
    }
}

/// Two or three batch requests over 3 to 5 events: the first batch a prefix, the second the
/// rest from one event before its end (so the two overlap), a third (when there is one) a
/// random pick of at least two. Events share two FIFO groups, so a batch's sends within a
/// group go in order. An event's bytes are the same in every batch that carries it.
fn make_batches(rng: &mut StdRng) -> Vec<Sender> {
    let m = rng.random_range(3..=5_usize);
    let events: Vec<(String, Vec<u8>)> = (0..m)
        .map(|j| {
            let customer = rng.random_range(0..2);
            let text = format!(r#"{{"id":"b-{j}","customer_id":"cus-{customer}","n":{j}}}"#);
            (format!("hub:b-{j}"), text.into_bytes())
        })
        .collect();
    let cut = rng.random_range(1..m);
    let mut picks: Vec<Vec<usize>> = vec![(0..cut).collect(), (cut - 1..m).collect()];
    if rng.random_bool(0.5) {
        let mut third: Vec<usize> = (0..m).filter(|_| rng.random_bool(0.5)).collect();
        if third.len() < 2 {
            third = vec![0, m - 1];
        }
        picks.push(third);
    }
    picks
        .into_iter()
        .map(|pick| {
            let chosen: Vec<(String, Vec<u8>)> = pick.iter().map(|&j| events[j].clone()).collect();
            let mut body = br#"{"events":["#.to_vec();
            for (n, (_, bytes)) in chosen.iter().enumerate() {
                if n > 0 {
                    body.push(b',');
                }
                body.extend_from_slice(bytes);
            }
            body.extend_from_slice(b"]}");
            Sender {
                keys: chosen.iter().map(|(k, _)| k.clone()).collect(),
                events: chosen,
                batch: true,
                source: "hub",
                headers: vec![("content-type", "application/json".to_owned())],
                body,
                first_sent: None,
                retry_at: None,
                accepted: false,
                satisfied: false,
            }
        })
        .collect()
}
