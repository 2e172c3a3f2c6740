//! The receiver's ledger side: the claim of a first delivery and its send, the answer to a
//! duplicate (the stored answer replayed; the stored event sent again behind a RECEIVED claim;
//! a changed body refused or taken as configured), the body guard, the release of a claim
//! after a failed send, and the warm instance's replay cache.

use http::HeaderValue;
use lambda_http::{Body, Response};
use tracing::{info, warn};

use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::config::{OnPayloadMismatch, Source};
use crate::lease;
use crate::ledger::{
    self, BodyGuard, Claim, ClaimOutcome, GuardOutcome, LedgerStore, Record, Status,
};
use crate::metrics::Metric;
use crate::outcome::LogOutcome;
use crate::queue::Queue;
use crate::replay_cache::Seen;

use super::answer::stored_response;
use super::payload::{Carry, Event};
use super::preset_rules;
use super::request::Caller;
use super::{Receiver, Rejection, REPLAYED_HEADER, SENT_BEHIND_A_CLAIM};

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// The key is ours: send, and answer 200 once the event is on the queue. The item stays
    /// RECEIVED until the consumer takes it (take accepts RECEIVED): no third call on the
    /// sender's path. A failed send releases the claim before the 500.
    pub(super) async fn accept_first(
        &self,
        event: &Event<'_>,
        carry: Carry,
        inv: &Caller,
    ) -> Result<Response<Body>, Rejection> {
        let (name, key) = (event.source.spec.name.as_str(), event.key.as_str());
        if let Err(e) = self.send(event, carry, event.measured_at).await {
            self.release_claim(name, key, inv).await;
            return Err(Rejection::Internal(e));
        }
        let (status, accepted) = preset_rules::accepted_answer(event.source, key, event.body);
        self.remember(
            key,
            event.body_sha256.clone(),
            status,
            accepted.clone(),
            event.measured_at,
        );
        self.metrics.count(name, Metric::Accepted);
        self.count_event_type(event);
        info!(source = name, key, outcome = LogOutcome::Accepted.as_str());
        Ok(stored_response(status, accepted))
    }

    /// Someone holds the key: the mismatch rule, then the first answer. While the item is
    /// RECEIVED (the event on the queue waiting, or its first delivery between its claim and
    /// its send, or died before or after it) and the body is the stored one, the stored event
    /// is sent first, with the same deduplication id (SQS keeps one message per id for five
    /// minutes; beyond that the consumer's take keeps one side effect) and the first receipt
    /// time; a changed body never reaches the queue or the archive. A failed send is a 500
    /// with nothing to release: the claim is not ours. The item is marked first
    /// ([`Self::mark_resent`]), so that the claimant cannot release it under the event.
    pub(super) async fn answer_duplicate(
        &self,
        event: &Event<'_>,
        carry: Carry,
        existing: &Record,
        inv: &Caller,
    ) -> Result<Response<Body>, Rejection> {
        let (source, key) = (event.source, event.key.as_str());
        let (status, accepted) = preset_rules::accepted_answer(source, key, event.body);
        let seen = Seen {
            payload_sha256: existing.payload_sha256.clone(),
            response_status: existing.response_status.unwrap_or(status),
            response_body: existing.response_body.clone().unwrap_or(accepted),
        };
        self.check_payload(source, key, &event.body_sha256, &seen)?;
        if existing.status == Status::Received
            && existing.payload_sha256 == event.body_sha256
            && self.mark_resent(event, inv).await?
        {
            self.send(event, carry, existing.received_at)
                .await
                .map_err(Rejection::Internal)?;
            info!(source = %source.spec.name, key, "{SENT_BEHIND_A_CLAIM}");
        }
        let resp = self.replay(source, key, &seen, existing.status.as_str());
        self.remember(
            key,
            seen.payload_sha256,
            seen.response_status,
            seen.response_body,
            event.measured_at,
        );
        Ok(resp)
    }

    /// Before a duplicate sends the stored event behind a RECEIVED claim, it marks the item
    /// resent (docs/design.md §4, "mark resent"): the claimant, whose own send may yet fail,
    /// can then no longer release an item whose event this send puts on the queue. Whatever the
    /// lease says: a claimant paused between its clock read and its release's write cannot be
    /// told by time alone. `Ok(true)`: send; `Ok(false)`: the item moved on (taken), nothing to
    /// send. A claim released meanwhile is a 500: the sender's retry claims the key anew.
    pub(super) async fn mark_resent(
        &self,
        event: &Event<'_>,
        inv: &Caller,
    ) -> Result<bool, Rejection> {
        let now = self.clock.now_ms();
        match self
            .ledger
            .mark_resent(&event.key, &inv.request_id, &event.body_sha256, now)
            .await
        {
            Ok(None) => Ok(true),
            Ok(Some(Some(moved))) if moved.status != Status::Received => Ok(false),
            Ok(Some(_)) => Err(Rejection::Internal(
                "the first delivery's claim was released meanwhile: retry".into(),
            )),
            Err(e) => Err(Rejection::Internal(e.to_string())),
        }
    }

    /// `AcceptedByType`, where the source lists the types it counts (a bounded dimension).
    pub(super) fn count_event_type(&self, event: &Event<'_>) {
        let listed = &event.source.spec.event_type_metrics;
        if listed.is_empty() {
            return;
        }
        let counted = match &event.event_type {
            Some(t) if listed.contains(t) => t.as_str(),
            _ => "other",
        };
        self.metrics
            .count_event_type(&event.source.spec.name, counted);
    }

    /// Gives back a claim this invocation made (the send failed, or the body guard refused):
    /// logged and counted `Released`; a failed release leaves the item RECEIVED under our
    /// lease, which the next delivery of the key recovers.
    pub(super) async fn release_claim(&self, source: &str, key: &str, inv: &Caller) {
        match self
            .ledger
            .release(key, &inv.request_id, self.clock.now_ms())
            .await
        {
            Ok(released) => info!(
                source,
                key,
                released,
                outcome = LogOutcome::Released.as_str()
            ),
            Err(re) => {
                warn!(source, key, error = %re, outcome = LogOutcome::ReleaseFailed.as_str())
            }
        }
        self.metrics.count(source, Metric::Released);
    }

    /// The replay guard of a body-only source: the body must be new within the window, or
    /// have come under this same key (the sender's retry). Beside the claim; a replay (or a
    /// failed call) releases the claim the invocation made, so a replay keeps nothing.
    pub(super) async fn guard_body(
        &self,
        source: &str,
        key: &str,
        body_sha256: &str,
        window_seconds: u64,
    ) -> Result<(), Rejection> {
        let now = self.clock.now_ms();
        let window = i64::try_from(window_seconds).unwrap_or(i64::MAX / 2);
        let guard = BodyGuard {
            key: ledger::guard_key(source, body_sha256),
            event_key: key.to_owned(),
            expires_at: now.div_euclid(1000).saturating_add(window),
        };
        match self.ledger.guard_body(&guard, now).await {
            Ok(GuardOutcome::Fresh) => Ok(()),
            Ok(GuardOutcome::Replayed) => Err(Rejection::ReplayedBody),
            Err(e) => Err(Rejection::Internal(e.to_string())),
        }
    }

    /// Puts a key whose event is on the queue in the replay cache.
    pub(super) fn remember(
        &self,
        key: &str,
        payload_sha256: String,
        status: u16,
        body: String,
        now: i64,
    ) {
        self.cache.put(
            key,
            Seen {
                payload_sha256,
                response_status: status,
                response_body: body,
            },
            now,
        );
    }

    /// Claims the key, once. `Ok(None)`: ours; `Ok(Some(record))`: someone holds it.
    pub(super) async fn claim(
        &self,
        event: &Event<'_>,
        inv: &Caller,
        response_status: u16,
        response_body: &str,
    ) -> Result<Option<Record>, Rejection> {
        let (source, key) = (event.source, event.key.as_str());
        let now = self.clock.now_ms();
        let claim = Claim {
            key: key.to_owned(),
            source: source.spec.name.clone(),
            payload_sha256: event.body_sha256.clone(),
            owner: inv.request_id.clone(),
            now_ms: now,
            lease_until_ms: lease::lease_until_ms(now, inv.deadline_ms),
            expires_at: ledger::expires_at(now, source.spec.retention_hours),
            response_status,
            response_body: response_body.to_owned(),
            event_type: event.event_type.clone(),
            trace_id: Some(event.trace.trace_id()),
        };
        match self.ledger.claim(&claim).await {
            Err(e) => {
                // The claim may have been applied with its answer lost: release it (only if it
                // is ours) before the 500, or the sender's retries would meet our own live
                // claim (and send behind it) until its lease ran out.
                match self
                    .ledger
                    .release(key, &inv.request_id, self.clock.now_ms())
                    .await
                {
                    Ok(true) => {
                        self.metrics.count(&source.spec.name, Metric::Released);
                        info!(source = %source.spec.name, key, outcome = LogOutcome::Released.as_str(), "claim failed")
                    }
                    Ok(false) => {}
                    Err(re) => {
                        warn!(source = %source.spec.name, key, error = %re, outcome = LogOutcome::ReleaseFailed.as_str(), "claim failed")
                    }
                }
                Err(Rejection::Internal(e.to_string()))
            }
            Ok(ClaimOutcome::Claimed) => Ok(None),
            Ok(ClaimOutcome::Exists(existing)) => Ok(Some(*existing)),
        }
    }

    /// The payload-mismatch rule: a duplicate whose body hash differs from the first
    /// delivery's is counted, and refused where the source says so.
    pub(super) fn check_payload(
        &self,
        source: &Source,
        key: &str,
        body_sha256: &str,
        seen: &Seen,
    ) -> Result<(), Rejection> {
        if !seen.payload_sha256.is_empty() && seen.payload_sha256 != body_sha256 {
            let name = source.spec.name.as_str();
            self.metrics.count(name, Metric::PayloadMismatch);
            warn!(source = name, key = %key, "same key, different payload");
            if source.spec.on_payload_mismatch == OnPayloadMismatch::Reject {
                return Err(Rejection::PayloadMismatch);
            }
        }
        Ok(())
    }

    /// The first answer again, marked replayed (after [`Self::check_payload`]); `status`
    /// says where it was found (the item's status, or `cache`).
    pub(super) fn replay(
        &self,
        source: &Source,
        key: &str,
        seen: &Seen,
        status: &str,
    ) -> Response<Body> {
        let name = source.spec.name.as_str();
        self.metrics.count(name, Metric::Replayed);
        info!(source = name, key = %key, status, outcome = LogOutcome::Replayed.as_str());
        let mut resp = stored_response(seen.response_status, seen.response_body.clone());
        resp.headers_mut()
            .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
        resp
    }
}
