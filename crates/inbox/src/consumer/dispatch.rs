//! The one path of an admitted event (docs/design.md §6, §13): where its side effects go, then
//! the event's item taken, each destination run and its item settled ([`super::item`]), and
//! what the message comes to.
//!
//! Every event goes to its destinations: the ones of `WEBHOOK_DESTINATIONS` that take it, or
//! else the **default destination** (`FORWARD_URL`, or the user's [`Processor`]). The default
//! destination's item is the event's own (`<key>`, as before destinations existed), so a
//! deployed stack's items read and move as they always did; a named destination's item is the
//! pair's (`<key> to:<name>`, [`destination_key`]), and the event's own item holds the event
//! while they run and completes once every one has. An event that none takes, where no
//! `FORWARD_URL` is set, runs with no destination: taken, completed, counted `Unrouted`. A
//! declared at-most-once event runs its default destination once, without the ledger.
//!
//! A destination that fails counts its own failures (`MAX_FAILURES` each: the message is
//! dead-lettered at a multiple of it); one that throttles, or that an operator paused, is
//! deferred alone and the others run. A throttle of the default destination stops the
//! invocation: nothing else starts.

use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;

use super::admit::Admitted;
use super::archiving::Archived;
use super::invocation::{Invocation, Verdict};
use super::item::{Dest, Leg};
use super::record::{Fields, Recorded};
use super::Wired;
use super::{Consumer, Job, Outcome, ProcessError, Processor, Refusal};
use crate::clock::Clock;
use crate::config::Delivery;
use crate::ledger::{self, LedgerStore, Take};
use crate::queue::Envelope;
use crate::redelivery::Redelivery;

/// How long a message waits for a paused destination before it is tried again (each time at
/// least its receive count in seconds, as a throttled one).
pub const PAUSED_WAIT: Duration = Duration::from_secs(300);

/// What the log says of an event that no destination takes, without a `FORWARD_URL`.
const UNROUTED: &str = "no destination takes the event and no FORWARD_URL is set: it went nowhere";

/// Where an admitted event's side effects go.
#[derive(Debug, PartialEq, Eq)]
enum Plan<'r> {
    /// The default destination, throttled in this invocation already: not started.
    Held,
    /// Declared at-most-once: the default destination, once, without the ledger.
    AtMostOnce,
    /// Declared at-most-once and taken by nothing: completed, gone nowhere.
    Nowhere,
    /// Through the ledger, to the default destination (the event's own item).
    Default,
    /// Through the ledger, to these named destinations (none: completed, `Unrouted`).
    Named(Vec<&'r str>),
}

impl<L: LedgerStore, P: Processor, C: Clock, W: Wired> Consumer<L, P, C, W> {
    /// An admitted event, to its destinations.
    pub(super) async fn dispatch(
        &self,
        msg: &SqsMessage,
        admitted: Admitted<'_>,
        archived: &Archived,
        inv: &Invocation<'_>,
    ) -> Verdict {
        let Admitted {
            envelope,
            spec,
            mut job,
        } = admitted;
        // The event's run in its trace (ends as this returns): under the receiver's span.
        let consume = super::spans::consume(&envelope);
        job.trace = Some(*consume.context());
        let at_most_once = spec.delivery == Delivery::AtMostOnce && job.replay_id.is_none();
        match self.plan(&envelope, at_most_once, inv) {
            Plan::Held => Verdict::Held,
            Plan::Nowhere => {
                self.record(
                    Recorded::Unrouted,
                    self.fields(&job, None)
                        .message_id(msg.message_id.as_deref().unwrap_or_default())
                        .message(UNROUTED),
                );
                Verdict::Done
            }
            Plan::AtMostOnce => self.at_most_once(job, &envelope, inv).await,
            plan => {
                let owner = format!(
                    "{}:{}",
                    inv.request_id,
                    msg.message_id.as_deref().unwrap_or_default()
                );
                let take = self.take_of(&envelope, spec.retention_hours, owner, inv, archived);
                self.effectively_once(msg, job, &envelope, take, plan, inv)
                    .await
            }
        }
    }

    /// Where the event goes: the named destinations that take it (a replay for one
    /// destination: that one alone); else the default destination, or nowhere without one.
    fn plan(&self, envelope: &Envelope, at_most_once: bool, inv: &Invocation<'_>) -> Plan<'_> {
        let mut names = self
            .routes
            .destinations_for(&envelope.source, envelope.event_type.as_deref());
        if !names.is_empty() || !self.routes.has_forward() {
            if names.is_empty() && at_most_once {
                return Plan::Nowhere;
            }
            if let Some(only) = envelope.destination.as_deref() {
                names.retain(|n| *n == only);
            }
            return Plan::Named(names);
        }
        if inv.throttled().is_some() {
            Plan::Held
        } else if at_most_once {
            Plan::AtMostOnce
        } else {
            Plan::Default
        }
    }

    /// Declared at-most-once: run once, never retried, no ledger; acknowledged whatever
    /// happened.
    async fn at_most_once(
        &self,
        mut job: Job,
        envelope: &Envelope,
        inv: &Invocation<'_>,
    ) -> Verdict {
        if let Some(body_ref) = &envelope.body_ref {
            match self.fetch_body(&job.source, body_ref).await {
                Ok(b) => job.body = b,
                Err(e) => {
                    self.record(
                        Recorded::DroppedFailed,
                        self.fields(&job, None)
                            .error(&e)
                            .message("at-most-once body unreadable"),
                    );
                    return Verdict::Done;
                }
            }
        }
        let base = self.fields(&job, None);
        match self.processor.run(&job).await {
            Outcome::Done => {
                self.record(Recorded::Completed, base.delivery("at_most_once"));
            }
            Outcome::Failed(e) => {
                self.record(
                    Recorded::DroppedFailed,
                    base.error(&e).message("at-most-once side effect failed"),
                );
            }
            Outcome::Throttled {
                retry_after,
                reason,
            } => {
                inv.throttle(retry_after);
                self.record(
                    Recorded::DroppedThrottled,
                    base.error(&reason)
                        .message("at-most-once side effect throttled"),
                );
            }
        }
        Verdict::Done
    }

    /// Through the ledger: the event's item taken (a routed replay: checked), its body read,
    /// its destinations run, and the message's verdict from what they came to.
    async fn effectively_once(
        &self,
        msg: &SqsMessage,
        mut job: Job,
        envelope: &Envelope,
        take: Take,
        plan: Plan<'_>,
        inv: &Invocation<'_>,
    ) -> Verdict {
        let owner = take.owner.as_str();
        let routed_replay = matches!(plan, Plan::Named(_)) && job.replay_id.is_some();
        // A routed replay runs its destinations' items alone; the event's own item is the
        // ordinary delivery's, and a replay is checked against it first (recorded, this body).
        if routed_replay {
            let rid = job.replay_id.as_deref().unwrap_or_default();
            if let Err(verdict) = self.admit_replay(msg, &take, rid).await {
                return verdict;
            }
        } else {
            let taken = {
                let _span = crate::trace::child(
                    crate::trace::names::TAKE,
                    crate::trace::Kind::Internal,
                    job.trace.as_ref(),
                );
                self.take_event(msg, &take, job.replay_id.as_deref()).await
            };
            match taken {
                Ok(attempts) => job.attempt = attempts,
                Err(verdict) => return verdict,
            }
        }
        // A body in the bucket is read once the key is taken, so that a missing object fails
        // the key with its `last_error`.
        if let Some(body_ref) = envelope.body_ref.as_ref() {
            match self.fetch_body(&job.source, body_ref).await {
                Ok(body) => job.body = body,
                Err(e) if routed_replay => {
                    self.record(Recorded::StoreFailed, self.fields(&job, None).error(&e));
                    return Verdict::Failed;
                }
                Err(e) => {
                    let leg = self
                        .settle(Dest::Default, &job, owner, Outcome::Failed(e), inv)
                        .await;
                    return self.verdict_of(msg, &job, &[leg]).await;
                }
            }
        }
        match plan {
            Plan::Named(names) => {
                let legs = futures::future::join_all(
                    names
                        .iter()
                        .map(|name| self.leg(Dest::Named(name), &job, &take, inv)),
                )
                .await;
                self.settle_event(msg, &job, owner, &names, &legs).await
            }
            _ => {
                let leg = self.leg(Dest::Default, &job, &take, inv).await;
                self.verdict_of(msg, &job, &[leg]).await
            }
        }
    }

    /// A routed replay runs only where the event's own item admits it: this accepted event's
    /// body, and the replay id recorded on it by `inbox-ops replay` (one consistent read; the
    /// hash never changes and recorded ids are never removed, so nothing it decides can
    /// change before the pairs' own conditional takes).
    async fn admit_replay(&self, msg: &SqsMessage, take: &Take, rid: &str) -> Result<(), Verdict> {
        let (key, source) = (take.key.as_str(), take.source.as_str());
        match self.ledger.get(key).await {
            Err(e) => {
                self.record(
                    Recorded::StoreFailed,
                    Fields::default()
                        .source(source)
                        .key(key)
                        .error(&e)
                        .message("replay check failed"),
                );
                Err(Verdict::Failed)
            }
            Ok(item) => {
                match ledger::replay_refusal(item.as_ref(), &take.payload_sha256, rid, take.now_ms)
                {
                    None => Ok(()),
                    Some(why) => Err(self.refuse_key(msg, source, key, &Refusal::from(why)).await),
                }
            }
        }
    }

    /// What a routed event comes to: done when every destination is (the event's item
    /// completed); else the event's item given back (QUEUED, `last_error` naming what is
    /// left) and the message's verdict from its destinations.
    async fn settle_event(
        &self,
        msg: &SqsMessage,
        job: &Job,
        owner: &str,
        names: &[&str],
        legs: &[Leg],
    ) -> Verdict {
        let key = job.key.as_str();
        let left: Vec<&str> = legs.iter().filter_map(Leg::reason).collect();
        let replay = job.replay_id.is_some();
        if left.is_empty() {
            if replay {
                return Verdict::Done;
            }
            let completed = {
                let _span = crate::trace::child(
                    crate::trace::names::COMPLETE,
                    crate::trace::Kind::Internal,
                    job.trace.as_ref(),
                );
                self.ledger.complete(key, owner, self.clock.now_ms()).await
            };
            return match completed {
                Ok(true) => {
                    if names.is_empty() {
                        self.record(Recorded::Unrouted, self.fields(job, None).message(UNROUTED));
                    }
                    self.record(
                        Recorded::Completed,
                        self.fields(job, None).destinations(names.len() as u64),
                    );
                    Verdict::Done
                }
                Ok(false) => {
                    self.record(Recorded::LeaseLost, self.fields(job, None));
                    Verdict::Failed
                }
                Err(e) => {
                    self.record(
                        Recorded::StoreFailed,
                        self.fields(job, None).error(&e).message("complete failed"),
                    );
                    Verdict::Failed
                }
            };
        }
        if !replay {
            let reason = format!("destinations pending: {}", left.join("; "));
            if let Err(e) = self
                .ledger
                .defer(key, owner, &reason, self.clock.now_ms())
                .await
            {
                tracing::warn!(key, source = job.source, error = %e, "could not give the event back");
            }
        }
        self.verdict_of(msg, job, legs).await
    }

    /// What the message comes to by what its destinations came to: dead-lettered at a
    /// destination's `MAX_FAILURES`-th failure (every multiple of it); delayed by the longest
    /// wait asked where none failed now (held behind another group's throttle where every
    /// wait was that); failed otherwise.
    async fn verdict_of(&self, msg: &SqsMessage, job: &Job, legs: &[Leg]) -> Verdict {
        let max = self.settings.max_failures.max(1);
        let dead = legs
            .iter()
            .any(|l| matches!(l, Leg::Pending { failures: Some(f), .. } if f % max == 0));
        if dead && self.wired().redelivery.dead_letters() {
            return self.dead_letter(msg, &job.source, Some(&job.key)).await;
        }
        let pending = || legs.iter().filter(|l| matches!(l, Leg::Pending { .. }));
        if pending().next().is_none() {
            return Verdict::Done;
        }
        let wait = pending()
            .filter_map(|l| match l {
                Leg::Pending { wait, .. } => *wait,
                Leg::Done => None,
            })
            .max();
        let failed_now = pending().any(|l| matches!(l, Leg::Pending { wait: None, .. }));
        let all_held = pending().all(|l| matches!(l, Leg::Pending { held: true, .. }));
        match wait {
            Some(_) if !failed_now && all_held => Verdict::Held,
            Some(wait) if !failed_now => Verdict::Throttled(wait),
            _ => Verdict::Failed,
        }
    }
}

/// Why the default destination was not run: another group throttled it in this invocation.
pub(super) fn held_back(wait: Duration) -> Outcome {
    Outcome::Throttled {
        retry_after: wait,
        reason: ProcessError("held back: the downstream is throttling".into()),
    }
}
