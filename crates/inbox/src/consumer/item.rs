//! The item transitions of the consumer, each written once for every destination: take,
//! complete, fail, defer and hold (a replay's take, complete and give-back among them). They
//! are the ledger's transitions ([`crate::ledger`], built on `lambda-idempotency`'s); here
//! only which one, on which item, and what it is recorded as ([`super::record`]).
//!
//! The default destination's item is the event's own; a named destination's is the pair's
//! ([`destination_key`]). Both move by the same conditional writes.

use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;

use super::breaking::observed;
use super::dispatch::{held_back, PAUSED_WAIT};
use super::invocation::{Invocation, Verdict};
use super::record::{Fields, Recorded};
use super::Wired;
use super::{Consumer, Destinations, Job, Outcome, ProcessError, Processor, Refusal};
use crate::breaker::Observed;
use crate::clock::Clock;
use crate::ledger::{LedgerStore, StoreError, Take, TakeItem, TakeOutcome};
use crate::route::destination_key;

/// One destination of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dest<'r> {
    /// The default destination (`FORWARD_URL`, or the user's [`Processor`]); its item is the
    /// event's own, keyed `<key>`.
    Default,
    /// A destination of `WEBHOOK_DESTINATIONS`; its item is the pair's, `<key> to:<name>`.
    Named(&'r str),
}

impl<'r> Dest<'r> {
    /// The destination's name, as the metrics' `destination` dimension and the log's field.
    fn name(self) -> Option<&'r str> {
        match self {
            Dest::Default => None,
            Dest::Named(name) => Some(name),
        }
    }

    /// The item that keeps what this destination came to for the event `key`.
    fn item(self, key: &str) -> String {
        match self {
            Dest::Default => key.to_owned(),
            Dest::Named(name) => destination_key(key, name),
        }
    }

    /// How a pending reason names it.
    fn label(self) -> &'r str {
        self.name().unwrap_or("forward")
    }
}

/// What one destination of an event came to in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Leg {
    /// Applied, now or before.
    Done,
    /// Still to apply: comes back after `wait` (a throttle, a pause) or the visibility timeout;
    /// `failures` where this run was a real failure (the item's count now); `held` where the
    /// default destination was not run behind another group's throttle.
    Pending {
        wait: Option<Duration>,
        failures: Option<u32>,
        reason: String,
        held: bool,
    },
}

impl Leg {
    /// Why it is still to apply, where it is.
    pub(super) fn reason(&self) -> Option<&str> {
        match self {
            Leg::Done => None,
            Leg::Pending { reason, .. } => Some(reason),
        }
    }
}

fn pending(reason: String) -> Leg {
    Leg::Pending {
        wait: None,
        failures: None,
        reason,
        held: false,
    }
}

impl<L: LedgerStore, P: Processor, C: Clock, W: Wired> Consumer<L, P, C, W> {
    /// The line's fields of an event's job, for a destination (`None`: the default one, or
    /// the event's own item).
    pub(super) fn fields<'a>(&self, job: &'a Job, destination: Option<&'a str>) -> Fields<'a> {
        Fields::default()
            .source(job.source.as_str())
            .key(job.key.as_str())
            .destination(destination)
    }

    /// Records `what` ([`super::record`]): its log line and its metrics, from the one table.
    pub(super) fn record(&self, what: Recorded, fields: Fields<'_>) {
        super::record::write(&self.metrics, what, &fields);
    }

    /// The take of the event's item (a replay's own where the message is a replay): the
    /// attempt number where the key is ours to run, else what the message comes to without a
    /// side effect.
    pub(super) async fn take_event(
        &self,
        msg: &SqsMessage,
        take: &Take,
        replay_id: Option<&str>,
    ) -> Result<u32, Verdict> {
        let (key, source) = (take.key.as_str(), take.source.as_str());
        let base = Fields::default().source(source).key(key);
        match self.take_item(take, replay_id).await {
            Ok(TakeOutcome::Taken { attempts }) => Ok(attempts),
            Err(e) => {
                self.record(Recorded::StoreFailed, base.error(&e).message("take failed"));
                Err(Verdict::Failed)
            }
            Ok(TakeOutcome::Completed) => {
                self.record(
                    Recorded::Duplicate,
                    base.replay_id(replay_id)
                        .message("already completed: acknowledged without side effect"),
                );
                Err(Verdict::Done)
            }
            Ok(TakeOutcome::Busy { lease_until }) => {
                self.record(
                    Recorded::Busy,
                    base.lease_until(lease_until)
                        .message("another consumer holds the lease"),
                );
                Err(Verdict::Failed)
            }
            Ok(TakeOutcome::Refused(why)) => {
                Err(self.refuse_key(msg, source, key, &Refusal::from(why)).await)
            }
        }
    }

    /// A take, or a replay's.
    async fn take_item(
        &self,
        take: &Take,
        replay_id: Option<&str>,
    ) -> Result<TakeOutcome, StoreError> {
        match replay_id {
            Some(rid) => self.ledger.take_replay(take, rid).await,
            None => self.ledger.take(take).await,
        }
    }

    /// One destination of an event whose item is taken: a named one skipped where it is
    /// paused or throttling in this invocation, else its pair's item taken; then the call
    /// (the default destination not started behind another group's throttle) and its item
    /// settled by what it came to.
    pub(super) async fn leg(
        &self,
        dest: Dest<'_>,
        job: &Job,
        event_take: &Take,
        inv: &Invocation<'_>,
    ) -> Leg {
        let mut call = job.clone();
        let mut span = crate::trace::deliver(dest.label(), job.trace.as_ref());
        call.trace = span.as_ref().map(|s| *s.context()).or(call.trace);
        let owner = event_take.owner.as_str();
        let outcome = match dest {
            Dest::Default => match inv.throttled() {
                Some(wait) => held_back(wait),
                None => self.processor.run(&call).await,
            },
            Dest::Named(name) => {
                if let Some(skipped) = skipped(name, inv) {
                    // Held by a pause: sent again, never dead-lettered, near the queue's bound.
                    if matches!(&inv.paused, Ok(paused) if paused.contains(name)) {
                        inv.keep(owner);
                    }
                    return skipped;
                }
                // Held where its breaker is open (docs/routing.md#breakers); else it calls,
                // perhaps as the probe.
                if let Some(held) = self.breaker_gate(name, owner, inv).await {
                    return held;
                }
                let take = Take {
                    key: dest.item(&job.key),
                    archived_at: None,
                    item: TakeItem::Pair,
                    ..event_take.clone()
                };
                let taken = match self.take_item(&take, job.replay_id.as_deref()).await {
                    Ok(TakeOutcome::Taken { attempts }) => Ok(attempts),
                    Ok(TakeOutcome::Completed) => Err(Leg::Done),
                    Ok(TakeOutcome::Busy { .. }) => Err(pending(format!("{name}: busy"))),
                    // A pair's take refuses nothing outright (the event's item admitted it).
                    Ok(TakeOutcome::Refused(why)) => Err(pending(format!("{name}: {why}"))),
                    Err(e) => Err(pending(format!("{name}: take failed: {e}"))),
                };
                call.attempt = match taken {
                    Ok(attempts) => attempts,
                    Err(leg) => {
                        // Not called: a probe of this pair is given back.
                        self.breaker_observe(name, owner, Observed::Other, inv)
                            .await;
                        return leg;
                    }
                };
                let outcome = self.wired().destinations.deliver(name, &call).await;
                self.breaker_observe(name, owner, observed(&outcome), inv)
                    .await;
                outcome
            }
        };
        super::spans::ended(span.take(), &outcome);
        let _settle = crate::trace::child(
            crate::trace::names::SETTLE,
            crate::trace::Kind::Internal,
            job.trace.as_ref(),
        );
        self.settle(dest, &call, owner, outcome, inv).await
    }

    /// What a call came to, written on the destination's item: complete, fail, or defer.
    pub(super) async fn settle(
        &self,
        dest: Dest<'_>,
        job: &Job,
        owner: &str,
        outcome: Outcome,
        inv: &Invocation<'_>,
    ) -> Leg {
        match outcome {
            Outcome::Done => self.complete(dest, job, owner).await,
            Outcome::Failed(e) => self.fail(dest, job, owner, &e).await,
            Outcome::Throttled {
                retry_after,
                reason,
            } => {
                self.defer(dest, job, owner, retry_after, &reason, inv)
                    .await
            }
        }
    }

    /// The call succeeded: COMPLETED (a replay's id recorded).
    async fn complete(&self, dest: Dest<'_>, job: &Job, owner: &str) -> Leg {
        let item = dest.item(&job.key);
        let replay_id = job.replay_id.as_deref();
        let now = self.clock.now_ms();
        let completed = match replay_id {
            Some(rid) => self.ledger.complete_replay(&item, owner, rid, now).await,
            None => self.ledger.complete(&item, owner, now).await,
        };
        let base = self
            .fields(job, dest.name())
            .attempts(job.attempt)
            .replay_id(replay_id);
        let label = dest.label();
        match completed {
            Ok(true) => {
                let what = match replay_id {
                    Some(_) => Recorded::ReplayCompleted,
                    None => Recorded::Completed,
                };
                self.record(what, base);
                Leg::Done
            }
            Ok(false) => {
                // Someone else holds the item now, and may have died. The message comes back:
                // its next take finds COMPLETED (acknowledged) or an abandoned lease (run
                // again with the same Idempotency-Key), never an item stuck in PROCESSING
                // with its message gone.
                self.record(
                    Recorded::LeaseLost,
                    base.message("side effect ran but the lease was lost before complete"),
                );
                pending(format!("{label}: lease lost after the call"))
            }
            Err(e) => {
                // Redelivery re-runs the side effect with the same Idempotency-Key.
                self.record(
                    Recorded::StoreFailed,
                    base.error(&e)
                        .message("complete failed after the side effect"),
                );
                pending(format!("{label}: complete failed: {e}"))
            }
        }
    }

    /// A real failure: FAILED with `last_error` and `failures + 1` (a replay of an item that
    /// had completed: given back as COMPLETED); the count decides the dead letter.
    async fn fail(&self, dest: Dest<'_>, job: &Job, owner: &str, e: &ProcessError) -> Leg {
        let item = dest.item(&job.key);
        let failed = match self.give_back(&item, job, owner, e, true).await {
            Ok(None) => {
                self.ledger
                    .fail(&item, owner, &e.0, self.clock.now_ms())
                    .await
            }
            given_back => given_back,
        };
        let base = self.fields(job, dest.name()).attempts(job.attempt).error(e);
        match &failed {
            Ok(Some(failures)) => {
                self.record(Recorded::Failed, base.failures(*failures));
            }
            Ok(None) => self.record(Recorded::FailedLeaseLost, base),
            Err(se) => {
                self.record(Recorded::FailedUnwritten, base.store_error(Some(se)));
            }
        }
        Leg::Pending {
            wait: None,
            failures: failed.ok().flatten(),
            reason: format!("{}: {e}", dest.label()),
            held: false,
        }
    }

    /// A throttled call (or the default destination held back behind another group's
    /// throttle): the item back to QUEUED (a replay's given back), no failure counted. A
    /// throttle of the default destination stops the invocation; of a named one, only the
    /// calls to it.
    async fn defer(
        &self,
        dest: Dest<'_>,
        job: &Job,
        owner: &str,
        retry_after: Duration,
        reason: &ProcessError,
        inv: &Invocation<'_>,
    ) -> Leg {
        let item = dest.item(&job.key);
        let held = match dest {
            Dest::Default => {
                let held = inv.throttled().is_some();
                inv.throttle(retry_after);
                held
            }
            Dest::Named(name) => {
                inv.hold(name, retry_after);
                false
            }
        };
        let deferred = match self.give_back(&item, job, owner, reason, false).await {
            Ok(None) => {
                self.ledger
                    .defer(&item, owner, &reason.0, self.clock.now_ms())
                    .await
            }
            given_back => given_back.map(|failures| failures.is_some()),
        };
        let fields = self
            .fields(job, dest.name())
            .attempts(job.attempt)
            .retry_after_s(retry_after.as_secs())
            .error(reason)
            .store_error(
                deferred
                    .as_ref()
                    .err()
                    .map(|se| se as &dyn std::fmt::Display),
            );
        let written = deferred.as_ref().map(|w| *w).map_err(|_| ());
        self.record(Recorded::deferral(held, written), fields);
        Leg::Pending {
            wait: Some(retry_after),
            failures: None,
            reason: format!("{}: {reason}", dest.label()),
            held,
        }
    }

    /// A replay that did not complete gives an item that had completed back as COMPLETED
    /// (`Some(failures)`); `None` where the job is no replay or its item never completed, and
    /// the ordinary fail or defer follows.
    async fn give_back(
        &self,
        item: &str,
        job: &Job,
        owner: &str,
        reason: &ProcessError,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        if job.replay_id.is_none() {
            return Ok(None);
        }
        self.ledger
            .give_back_replay(item, owner, &reason.0, failed)
            .await
    }
}

/// A named destination not called in this invocation: paused by an operator, or throttling.
fn skipped(name: &str, inv: &Invocation<'_>) -> Option<Leg> {
    match &inv.paused {
        Ok(paused) if paused.contains(name) => {
            return Some(Leg::Pending {
                wait: Some(PAUSED_WAIT),
                failures: None,
                reason: format!("{name}: paused"),
                held: false,
            })
        }
        Ok(_) => {}
        Err(e) => return Some(pending(format!("{name}: pauses unreadable: {e}"))),
    }
    inv.held(name).map(|wait| Leg::Pending {
        wait: Some(wait),
        failures: None,
        reason: format!("{name}: held back: the destination is throttling"),
        held: false,
    })
}
