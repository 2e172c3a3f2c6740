//! A request carrying several events (docs/design.md §14): split into its events, each keyed
//! in itself, all claimed concurrently, the ones to send sent together (SendMessageBatch),
//! answered 200 only when every event is queued or a duplicate. When any event fails, the
//! claims this request made for events not on the queue are released and the answer is 500.

use std::borrow::Cow;
use std::collections::HashMap;

use futures::StreamExt as _;
use http::HeaderValue;
use lambda_http::{Body, Request, Response};
use tracing::{info, warn};

use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::config::{BatchFormat, BatchSpec, OnPayloadMismatch, Source};
use crate::json_fields::{self, FieldsError, SplitError};
use crate::key;
use crate::ledger::{LedgerStore, Status};
use crate::metrics::Metric;
use crate::outcome::LogOutcome;
use crate::queue::{BatchPlace, Queue};
use crate::replay_cache::Seen;

use super::answer::stored_response;
use super::payload::{Carry, Event};
use super::preset_rules;
use super::request::{caller, envelope_headers, Caller};
use super::{derive_key, Receiver, Rejection, REPLAYED_HEADER};

/// Claims (and a duplicate's mark) in flight at once for one request: a batch of 100 is one
/// round of claims.
const CLAIMS_IN_FLIGHT: usize = 100;

/// What the claim of one event found.
enum Claimed {
    /// The key is ours: send, release on failure.
    Ours,
    /// Someone holds it: its first answer; `resend` the first receipt time where the item is
    /// RECEIVED with these bytes and this request marked it (send the stored event again).
    Duplicate {
        status: &'static str,
        resend: Option<i64>,
    },
}

/// The byte ranges of the body's events, as the source declares them.
fn split(spec: &BatchSpec, body: &[u8]) -> Result<Vec<(usize, usize)>, Rejection> {
    let ranges = match &spec.format {
        BatchFormat::JsonArray { at } => json_fields::array_elements(body, at),
        BatchFormat::JsonLines => json_fields::json_lines(body).map_err(SplitError::from),
    };
    ranges.map_err(|e| match e {
        SplitError::Fields(FieldsError::Duplicate(_)) => {
            Rejection::MalformedBody("a member on the batch's path appears twice")
        }
        SplitError::Fields(FieldsError::NotJson) => {
            Rejection::MalformedBody("a batch that is not JSON")
        }
        SplitError::NoArray(_) => Rejection::MalformedBody("no array where the batch is declared"),
    })
}

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// A batch: every event keyed before anything is claimed (one bad event refuses the
    /// request, nothing written), then claims, sends and the one answer.
    pub(super) async fn process_batch(
        &self,
        req: &Request,
        source: &Source,
        spec: &BatchSpec,
        body: &[u8],
        trace: &crate::trace::TraceContext,
    ) -> Result<Response<Body>, Rejection> {
        let ranges = split(spec, body)?;
        if ranges.len() > spec.max_events {
            return Err(Rejection::TooManyEvents(ranges.len()));
        }
        let parts = event_bytes(source, body, &ranges)?;
        let parts: Vec<&[u8]> = parts.iter().map(AsRef::as_ref).collect();
        let events = self.events(req, source, body, &parts, trace)?;
        let keys: Vec<&str> = events.keys.iter().map(String::as_str).collect();
        let inv = caller(req);
        // Collected first: a closure inside the stream would not be `Send` for every lifetime.
        let mut claims = Vec::with_capacity(events.events.len());
        for (event, _) in &events.events {
            claims.push(self.claim_event(event, &inv));
        }
        let mut claimed: Vec<Result<Claimed, Rejection>> = futures::stream::iter(claims)
            .buffered(CLAIMS_IN_FLIGHT)
            .collect()
            .await;
        let ours: Vec<bool> = claimed
            .iter()
            .map(|c| matches!(c, Ok(Claimed::Ours)))
            .collect();
        let ours_among = |which: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
            which.filter(|&i| ours[i]).collect()
        };
        if let Some(at) = claimed.iter().position(Result::is_err) {
            let all = ours_among(&mut (0..claimed.len()));
            self.release_events(&events.events, &all, &inv).await;
            return match claimed.swap_remove(at) {
                Err(refused) => Err(refused),
                Ok(_) => Err(Rejection::Internal("a claim failed".to_owned())),
            };
        }
        // The events to send: ours at this receipt, marked duplicates at their first.
        let mut to_send: Vec<(usize, i64)> = Vec::new();
        for (i, c) in claimed.iter().enumerate() {
            match c {
                Ok(Claimed::Ours) => to_send.push((i, events.events[i].0.measured_at)),
                Ok(Claimed::Duplicate {
                    resend: Some(at), ..
                }) => to_send.push((i, *at)),
                _ => {}
            }
        }
        let failed = self.send_events(&events.events, &to_send).await;
        if !failed.is_empty() {
            let release = ours_among(&mut failed.iter().copied());
            self.release_events(&events.events, &release, &inv).await;
            return Err(Rejection::Internal(format!(
                "{} of {} events of the batch not sent",
                failed.len(),
                events.events.len()
            )));
        }
        let mut all_duplicates = true;
        for (i, c) in claimed.into_iter().enumerate() {
            let (event, _) = &events.events[i];
            match c {
                Ok(Claimed::Ours) => {
                    all_duplicates = false;
                    self.accepted_event(event);
                }
                Ok(Claimed::Duplicate { status, .. }) => {
                    self.metrics.count(&source.spec.name, Metric::Replayed);
                    info!(source = %source.spec.name, key = %event.key, status, outcome = LogOutcome::Replayed.as_str(), batch_index = event.batch.as_ref().map_or(0, |b| b.index));
                }
                Err(_) => {}
            }
        }
        let mut resp = batch_answer(source, &keys, body);
        if all_duplicates && !events.events.is_empty() {
            resp.headers_mut()
                .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
        }
        Ok(resp)
    }

    /// Each event keyed and measured, in the batch's order; a key given twice kept once.
    fn events<'a>(
        &self,
        req: &Request,
        source: &'a Source,
        body: &[u8],
        parts: &[&'a [u8]],
        trace: &crate::trace::TraceContext,
    ) -> Result<Events<'a>, Rejection> {
        let batch_sha256 = key::sha256_hex(body);
        let now = self.clock.now_ms();
        let mut out = Events {
            keys: Vec::with_capacity(parts.len()),
            events: Vec::with_capacity(parts.len()),
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (index, &bytes) in parts.iter().enumerate() {
            let sha = key::payload_sha256(bytes, &source.spec.attempt_fields);
            let (event_key, json) = derive_key(source, req, bytes, &sha)?;
            out.keys.push(event_key.clone());
            if let Some(&first) = seen.get(&event_key) {
                if out.events[first].0.body_sha256 != sha {
                    self.metrics
                        .count(&source.spec.name, Metric::PayloadMismatch);
                    warn!(source = %source.spec.name, key = %event_key, "same key twice in one batch, different payload");
                    if source.spec.on_payload_mismatch == OnPayloadMismatch::Reject {
                        return Err(Rejection::PayloadMismatch);
                    }
                }
                continue;
            }
            let event_type = source
                .spec
                .event_type
                .as_ref()
                .and_then(|spec| crate::event_type::read(spec, req.headers(), bytes));
            let place = BatchPlace {
                sha256: batch_sha256.clone(),
                index,
                count: parts.len(),
            };
            let event = Event {
                source,
                key: event_key.clone(),
                body: bytes,
                body_sha256: sha,
                json,
                headers: envelope_headers(source, req.headers()),
                event_type,
                measured_at: now,
                batch: Some(place),
                trace: *trace,
                traceparent: trace.traceparent(),
            };
            let carry = self.carry(&event)?;
            seen.insert(event_key, out.events.len());
            out.events.push((event, carry));
        }
        Ok(out)
    }

    /// One event's claim: from the replay cache where this instance has it, else the ledger;
    /// a duplicate found RECEIVED with these bytes is marked, to be sent again.
    async fn claim_event(&self, event: &Event<'_>, inv: &Caller) -> Result<Claimed, Rejection> {
        let (source, key) = (event.source, event.key.as_str());
        if let Some(seen) = self.cache.get(key, self.clock.now_ms()) {
            self.check_payload(source, key, &event.body_sha256, &seen)?;
            return Ok(Claimed::Duplicate {
                status: "cache",
                resend: None,
            });
        }
        let (status, accepted) = preset_rules::accepted_answer(source, key, event.body);
        let Some(existing) = self.claim(event, inv, status, &accepted).await? else {
            return Ok(Claimed::Ours);
        };
        let seen = Seen {
            payload_sha256: existing.payload_sha256.clone(),
            response_status: existing.response_status.unwrap_or(status),
            response_body: existing.response_body.clone().unwrap_or(accepted),
        };
        self.check_payload(source, key, &event.body_sha256, &seen)?;
        let resend = existing.status == Status::Received
            && existing.payload_sha256 == event.body_sha256
            && self.mark_resent(event, inv).await?;
        if !resend && existing.status != Status::Received {
            // On the queue or further: answered from memory next time.
            self.remember(
                key,
                seen.payload_sha256,
                seen.response_status,
                seen.response_body,
                event.measured_at,
            );
        }
        Ok(Claimed::Duplicate {
            status: existing.status.as_str(),
            resend: resend.then_some(existing.received_at),
        })
    }

    /// Sends the events `to_send` (index, receipt time) together: their bodies to the bucket
    /// where they go there, then one [`Queue::send_batch`]. The indices of those not sent.
    async fn send_events(
        &self,
        events: &[(Event<'_>, Carry)],
        to_send: &[(usize, i64)],
    ) -> Vec<usize> {
        let built = futures::future::join_all(to_send.iter().map(|&(i, at)| async move {
            let (event, carry) = &events[i];
            (i, self.outgoing(event, carry.again(), at).await)
        }))
        .await;
        let mut failed = Vec::new();
        let mut sending = Vec::new();
        let mut msgs = Vec::new();
        for (i, msg) in built {
            match msg {
                Ok(msg) => {
                    sending.push(i);
                    msgs.push(msg);
                }
                Err(why) => {
                    warn!(source = %events[i].0.source.spec.name, key = %events[i].0.key, error = %why, "batch event not stored");
                    failed.push(i);
                }
            }
        }
        let results = if msgs.is_empty() {
            Vec::new()
        } else {
            self.queue.send_batch(msgs).await
        };
        for (i, r) in sending.into_iter().zip(results) {
            if let Err(e) = r {
                warn!(source = %events[i].0.source.spec.name, key = %events[i].0.key, error = %e, "batch event not sent");
                failed.push(i);
            }
        }
        failed
    }

    /// Releases the claims of `which` (this request's), concurrently.
    async fn release_events(&self, events: &[(Event<'_>, Carry)], which: &[usize], inv: &Caller) {
        futures::future::join_all(which.iter().map(|&i| {
            let event = &events[i].0;
            self.release_claim(&event.source.spec.name, &event.key, inv)
        }))
        .await;
    }

    /// An event of ours on the queue: remembered, counted, logged.
    fn accepted_event(&self, event: &Event<'_>) {
        let (name, key) = (event.source.spec.name.as_str(), event.key.as_str());
        let (status, accepted) = preset_rules::accepted_answer(event.source, key, event.body);
        self.remember(
            key,
            event.body_sha256.clone(),
            status,
            accepted,
            event.measured_at,
        );
        self.metrics.count(name, Metric::Accepted);
        self.count_event_type(event);
        info!(
            source = name,
            key,
            outcome = LogOutcome::Accepted.as_str(),
            batch_index = event.batch.as_ref().map_or(0, |b| b.index)
        );
    }
}

/// Each event's bytes, as sent but for a token the event carries (Graph's `clientState`,
/// where each event is signed), taken out as Figma's passcode is of its body.
fn event_bytes<'b>(
    source: &Source,
    body: &'b [u8],
    ranges: &[(usize, usize)],
) -> Result<Vec<Cow<'b, [u8]>>, Rejection> {
    ranges
        .iter()
        .map(|&(start, end)| {
            let bytes = &body[start..end];
            if source.spec.each_event_signed_at().is_some() {
                preset_rules::without_body_token(source, bytes)
            } else {
                Ok(Cow::Borrowed(bytes))
            }
        })
        .collect()
}

/// A batch's events: every element's key in order (duplicates within the batch included,
/// for the answer), and the distinct events to claim.
struct Events<'a> {
    keys: Vec<String>,
    events: Vec<(Event<'a>, Carry)>,
}

/// The answer to a batch all of whose events are queued or duplicates: the keys in the
/// batch's order, or the source's own answer where it sets another (the same on every retry).
fn batch_answer(source: &Source, keys: &[&str], body: &[u8]) -> Response<Body> {
    match source.spec.answer {
        crate::config::AcceptedAnswer::Key => stored_response(
            200,
            serde_json::json!({"status": "accepted", "keys": keys}).to_string(),
        ),
        _ => {
            let (status, answer) = preset_rules::accepted_answer(source, "", body);
            stored_response(status, answer)
        }
    }
}
