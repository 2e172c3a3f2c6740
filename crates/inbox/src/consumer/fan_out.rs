//! The routed path (docs/routing.md, docs/design.md §13): an event of a source that
//! destinations name goes to each destination its filter admits, each (event, destination)
//! pair applied once, on its own. An event that none takes, where no `FORWARD_URL` is set,
//! runs here with no pair: taken, completed, and counted `Unrouted`.
//!
//! Each pair has its own ledger item ([`destination_key`]), moved by the same conditional
//! transitions as an event's item (take, complete, fail, defer; a replay's take, complete and
//! give-back), so a pair that completed is never run again, whatever happens to the others.
//! The event's own item is taken first, as on the forward's path: it holds the event while its
//! destinations run (a second delivery of it is busy, or acknowledged once it completed), and
//! completes once every destination has. A destination that fails counts its own failures
//! (`MAX_FAILURES` each: the message is dead-lettered at a destination's multiple of it); one
//! that throttles, or that an operator paused, is deferred alone: the others run, and the
//! message comes back after its wait for the ones left.

use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use tracing::{info, warn};

use super::archiving::Archived;
use super::invocation::{Invocation, Verdict};
use super::{Consumer, Destinations, Job, Outcome, ProcessError, Processor, Refusal};
use crate::archive::Archive;
use crate::clock::Clock;
use crate::ledger::{self, LedgerStore, Take, TakeItem, TakeOutcome};
use crate::metrics::Metric;
use crate::outcome::LogOutcome;
use crate::queue::Envelope;
use crate::redelivery::Redelivery;
use crate::route::destination_key;
use crate::store::ObjectStore;

/// How long a message waits for a paused destination before it is tried again (each time at
/// least its receive count in seconds, as a throttled one).
pub const PAUSED_WAIT: Duration = Duration::from_secs(300);

/// What one (event, destination) pair came to in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Leg {
    /// Applied, now or before.
    Done,
    /// Still to apply: comes back after `wait` (a throttle, a pause) or the visibility timeout;
    /// `failures` where this run was a real failure (the pair's count now).
    Pending {
        wait: Option<Duration>,
        failures: Option<u32>,
        reason: String,
    },
}

fn pending(reason: impl Into<String>) -> Leg {
    Leg::Pending {
        wait: None,
        failures: None,
        reason: reason.into(),
    }
}

impl<L, P, C, Q, S, A, D> Consumer<L, P, C, Q, S, A, D>
where
    L: LedgerStore,
    P: Processor,
    C: Clock,
    Q: Redelivery,
    S: ObjectStore,
    A: Archive,
    D: Destinations,
{
    /// A routed event: its destinations, each once.
    pub(super) async fn routed(
        &self,
        msg: &SqsMessage,
        mut job: Job,
        envelope: &Envelope,
        retention_hours: u64,
        inv: &Invocation<'_>,
        archived: &Archived,
    ) -> Verdict {
        let message_id = msg.message_id.as_deref().unwrap_or_default();
        let owner = format!("{}:{message_id}", inv.request_id);
        let take = self.take_of(envelope, retention_hours, owner, inv, archived);
        let mut names: Vec<&str> = self
            .routes
            .destinations_for(&job.source, job.event_type.as_deref());
        if let Some(only) = envelope.destination.as_deref() {
            names.retain(|n| *n == only);
        }
        let replay = job.replay_id.is_some();
        // A replay runs its destinations' items alone; the event's own item is the ordinary
        // delivery's, and a replay is checked against it first (recorded, this body).
        match job.replay_id.as_deref() {
            None => match self.take_key(msg, &take, None).await {
                Ok(attempts) => job.attempt = attempts,
                Err(verdict) => return verdict,
            },
            Some(rid) => {
                if let Err(verdict) = self.admit_replay(msg, &take, rid).await {
                    return verdict;
                }
            }
        }
        if let Some(body_ref) = envelope.body_ref.as_ref() {
            match self.fetch_body(&job.source, body_ref).await {
                Ok(body) => job.body = body,
                Err(e) if replay => {
                    warn!(key = job.key, error = %e, outcome = LogOutcome::Failed.as_str());
                    return Verdict::Failed;
                }
                Err(e) => return self.fail(msg, &job, &take.owner, &e).await,
            }
        }
        let legs =
            futures::future::join_all(names.iter().map(|name| self.leg(name, &job, &take, inv)))
                .await;
        self.settle(msg, &job, &take.owner, &names, &legs).await
    }

    /// A routed replay runs only where the event's own item admits it: this accepted event's
    /// body, and the replay id recorded on it by `inbox-ops replay` (one consistent read; the
    /// hash never changes and recorded ids are never removed, so nothing it decides can
    /// change before the pairs' own conditional takes).
    async fn admit_replay(&self, msg: &SqsMessage, take: &Take, rid: &str) -> Result<(), Verdict> {
        let (key, source) = (take.key.as_str(), take.source.as_str());
        match self.ledger.get(key).await {
            Err(e) => {
                warn!(key, source, error = %e, outcome = LogOutcome::Failed.as_str(), "replay check failed");
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

    /// One (event, destination) pair: skip it where it is paused or throttling in this
    /// invocation, else take its item, call the destination, and record what it came to.
    async fn leg(&self, name: &str, job: &Job, event_take: &Take, inv: &Invocation<'_>) -> Leg {
        let (key, source) = (job.key.as_str(), job.source.as_str());
        if let Some(skipped) = skipped(name, inv) {
            return skipped;
        }
        let pair = destination_key(key, name);
        let take = Take {
            key: pair.clone(),
            archived_at: None,
            item: TakeItem::Pair,
            ..event_take.clone()
        };
        let owner = take.owner.as_str();
        let taken = match job.replay_id.as_deref() {
            Some(rid) => self.ledger.take_replay(&take, rid).await,
            None => self.ledger.take(&take).await,
        };
        let attempt = match taken {
            Ok(TakeOutcome::Taken { attempts }) => attempts,
            Ok(TakeOutcome::Completed) => return Leg::Done,
            Ok(TakeOutcome::Busy { .. }) => return pending(format!("{name}: busy")),
            // A pair's take refuses nothing outright (the event's item admitted the message).
            Ok(TakeOutcome::Refused(why)) => return pending(format!("{name}: {why}")),
            Err(e) => return pending(format!("{name}: take failed: {e}")),
        };
        let mut call = job.clone();
        call.attempt = attempt;
        let outcome = self.destinations.deliver(name, &call).await;
        match outcome {
            Outcome::Done => self.complete_leg(name, &call, &pair, owner).await,
            Outcome::Failed(e) => {
                self.metrics.count_destination(source, name, Metric::Failed);
                let failures = match call.replay_id.as_deref() {
                    Some(_) => match self.ledger.give_back_replay(&pair, owner, &e.0, true).await {
                        Ok(None) => {
                            self.ledger
                                .fail(&pair, owner, &e.0, self.clock.now_ms())
                                .await
                        }
                        other => other,
                    },
                    None => {
                        self.ledger
                            .fail(&pair, owner, &e.0, self.clock.now_ms())
                            .await
                    }
                };
                warn!(key, source, destination = name, attempts = attempt, error = %e, outcome = LogOutcome::Failed.as_str());
                Leg::Pending {
                    wait: None,
                    failures: failures.ok().flatten(),
                    reason: format!("{name}: {e}"),
                }
            }
            Outcome::Throttled {
                retry_after,
                reason,
            } => {
                self.metrics
                    .count_destination(source, name, Metric::Throttled);
                inv.hold(name, retry_after);
                self.defer_leg(&call, &pair, owner, &reason).await;
                info!(key, source, destination = name, retry_after_s = retry_after.as_secs(), error = %reason, outcome = LogOutcome::Throttled.as_str());
                Leg::Pending {
                    wait: Some(retry_after),
                    failures: None,
                    reason: format!("{name}: {reason}"),
                }
            }
        }
    }

    /// A throttled call: the pair back to QUEUED (a replay's given back), no failure counted.
    async fn defer_leg(&self, job: &Job, pair: &str, owner: &str, reason: &ProcessError) {
        let now = self.clock.now_ms();
        let given_back = match job.replay_id {
            Some(_) => {
                self.ledger
                    .give_back_replay(pair, owner, &reason.0, false)
                    .await
            }
            None => Ok(None),
        };
        if let Ok(None) = given_back {
            if let Err(e) = self.ledger.defer(pair, owner, &reason.0, now).await {
                warn!(key = job.key, error = %e, "could not defer the destination");
            }
        }
    }

    /// The call succeeded: the pair COMPLETED (a replay's id recorded).
    async fn complete_leg(&self, name: &str, job: &Job, pair: &str, owner: &str) -> Leg {
        let (key, source) = (job.key.as_str(), job.source.as_str());
        let now = self.clock.now_ms();
        let completed = match job.replay_id.as_deref() {
            Some(rid) => self.ledger.complete_replay(pair, owner, rid, now).await,
            None => self.ledger.complete(pair, owner, now).await,
        };
        match completed {
            Ok(true) => {
                let metric = if job.replay_id.is_some() {
                    Metric::ReplayCompleted
                } else {
                    Metric::Completed
                };
                self.metrics.count_destination(source, name, metric);
                info!(
                    key,
                    source,
                    destination = name,
                    attempts = job.attempt,
                    outcome = LogOutcome::Completed.as_str()
                );
                Leg::Done
            }
            Ok(false) => {
                self.metrics
                    .count_destination(source, name, Metric::LeaseLost);
                warn!(
                    key,
                    source,
                    destination = name,
                    outcome = LogOutcome::LeaseLost.as_str()
                );
                pending(format!("{name}: lease lost after the call"))
            }
            Err(e) => {
                warn!(key, source, destination = name, error = %e, outcome = LogOutcome::Failed.as_str(), "complete failed after the call");
                pending(format!("{name}: complete failed: {e}"))
            }
        }
    }

    /// What the message comes to: done when every pair is; else the event's item is given
    /// back (QUEUED, `last_error` naming what is left), and the message dead-lettered at a
    /// destination's `MAX_FAILURES`-th failure, delayed by the longest wait asked, or failed.
    async fn settle(
        &self,
        msg: &SqsMessage,
        job: &Job,
        owner: &str,
        names: &[&str],
        legs: &[Leg],
    ) -> Verdict {
        let (key, source) = (job.key.as_str(), job.source.as_str());
        let left: Vec<&str> = legs
            .iter()
            .filter_map(|l| match l {
                Leg::Done => None,
                Leg::Pending { reason, .. } => Some(reason.as_str()),
            })
            .collect();
        let replay = job.replay_id.is_some();
        if left.is_empty() {
            if replay {
                return Verdict::Done;
            }
            return match self.ledger.complete(key, owner, self.clock.now_ms()).await {
                Ok(true) => {
                    self.metrics.count(source, Metric::Completed);
                    if names.is_empty() {
                        self.metrics.count(source, Metric::Unrouted);
                        warn!(
                            key,
                            source,
                            outcome = LogOutcome::Completed.as_str(),
                            "{}",
                            super::UNROUTED
                        );
                    }
                    info!(
                        key,
                        source,
                        destinations = names.len(),
                        outcome = LogOutcome::Completed.as_str()
                    );
                    Verdict::Done
                }
                Ok(false) => {
                    self.metrics.count(source, Metric::LeaseLost);
                    warn!(key, source, outcome = LogOutcome::LeaseLost.as_str());
                    Verdict::Failed
                }
                Err(e) => {
                    warn!(key, source, error = %e, outcome = LogOutcome::Failed.as_str(), "complete failed");
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
                warn!(key, source, error = %e, "could not give the event back");
            }
        }
        let max = self.settings.max_failures.max(1);
        let dead = legs
            .iter()
            .any(|l| matches!(l, Leg::Pending { failures: Some(f), .. } if f % max == 0));
        if dead && self.redelivery.dead_letters() {
            return self.dead_letter(msg, source, Some(key)).await;
        }
        let wait = legs
            .iter()
            .filter_map(|l| match l {
                Leg::Pending { wait, .. } => *wait,
                Leg::Done => None,
            })
            .max();
        let failed_now = legs
            .iter()
            .any(|l| matches!(l, Leg::Pending { wait: None, .. }));
        match wait {
            Some(wait) if !failed_now => Verdict::Throttled(wait),
            _ => Verdict::Failed,
        }
    }
}

/// A destination not called in this invocation: paused by an operator, or throttling.
fn skipped(name: &str, inv: &Invocation<'_>) -> Option<Leg> {
    match &inv.paused {
        Ok(paused) if paused.contains(name) => {
            return Some(Leg::Pending {
                wait: Some(PAUSED_WAIT),
                failures: None,
                reason: format!("{name}: paused"),
            })
        }
        Ok(_) => {}
        Err(e) => return Some(pending(format!("{name}: pauses unreadable: {e}"))),
    }
    inv.held(name).map(|wait| Leg::Pending {
        wait: Some(wait),
        failures: None,
        reason: format!("{name}: held back: the destination is throttling"),
    })
}
