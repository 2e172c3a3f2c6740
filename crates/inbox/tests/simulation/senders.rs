//! The senders: who sends what (one event per sender), a delivery as a receiver invocation,
//! and the sender's view of the answer (satisfied by a 200, else a retry within its window).

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
        let key = s.key.clone();
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
        let mut w = self.w();
        w.stats.deliveries += 1;
        w.log(format!("{request_id}: sender delivers {key} ({why})"));
    }

    /// The sender's view of one delivery: `None` when no answer reached it.
    pub(crate) fn answered(&mut self, e: usize, name: &str, resp: Option<Response<Body>>) {
        let now = self.now();
        let key = self.senders[e].key.clone();
        let mut seen = resp.map(|r| (r.status().as_u16(), r));
        if let Some((200, r)) = &seen {
            let body: serde_json::Value =
                serde_json::from_slice(r.body().as_ref()).unwrap_or_default();
            if body["key"] != key.as_str() || body["status"] != "accepted" {
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
    (0..n)
        .map(|i| {
            if rng.random_bool(0.5) {
                let body = format!(r#"{{"kind":"push","n":{i}}}"#).into_bytes();
                Sender {
                    key: format!("gh:evt-{i}"),
                    source: "gh",
                    headers: vec![
                        ("x-event-id", format!("evt-{i}")),
                        ("content-type", "application/json".to_owned()),
                    ],
                    body,
                    first_sent: None,
                    retry_at: None,
                    accepted: false,
                    satisfied: false,
                }
            } else {
                let customer = rng.random_range(0..2);
                let body = format!(r#"{{"id":"ord-{i}","customer_id":"cus-{customer}","n":{i}}}"#)
                    .into_bytes();
                Sender {
                    key: format!("shop:ord-{i}"),
                    source: "shop",
                    headers: vec![("content-type", "application/json".to_owned())],
                    body,
                    first_sent: None,
                    retry_at: None,
                    accepted: false,
                    satisfied: false,
                }
            }
        })
        .collect()
}
