//! The path of an event with one side effect, the processor's (a source no destination
//! names): declared at-most-once, run once without the ledger; otherwise take the key, run,
//! and complete, fail (dead-lettered at `MAX_FAILURES`), defer a throttle, or give back a
//! replay. The routed path, a side effect per destination, is [`super::fan_out`].

use aws_lambda_events::sqs::SqsMessage;
use tracing::{info, warn};

use super::invocation::{Invocation, Verdict};
use super::{Consumer, Destinations, Job, Outcome, ProcessError, Processor, Refusal};
use crate::archive::Archive;
use crate::clock::Clock;
use crate::ledger::{LedgerStore, StoreError, Take, TakeOutcome};
use crate::metrics::Metric;
use crate::outcome::LogOutcome;
use crate::queue::BodyRef;
use crate::redelivery::Redelivery;
use crate::store::ObjectStore;

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
    /// Declared at-most-once: run once, never retried, no ledger; acknowledged whatever
    /// happened.
    pub(super) async fn at_most_once(
        &self,
        mut job: Job,
        body_ref: Option<&BodyRef>,
        inv: &Invocation<'_>,
    ) -> Verdict {
        if let Some(body_ref) = body_ref {
            match self.fetch_body(&job.source, body_ref).await {
                Ok(b) => job.body = b,
                Err(e) => {
                    let (key, source) = (job.key.as_str(), job.source.as_str());
                    self.metrics.count(source, Metric::Failed);
                    warn!(key, source, error = %e, outcome = LogOutcome::Dropped.as_str(), "at-most-once body unreadable");
                    return Verdict::Done;
                }
            }
        }
        let (key, source) = (job.key.as_str(), job.source.as_str());
        match self.processor.run(&job).await {
            Outcome::Done => {
                self.metrics.count(source, Metric::Completed);
                info!(
                    key,
                    source,
                    outcome = LogOutcome::Completed.as_str(),
                    delivery = "at_most_once"
                );
            }
            Outcome::Failed(e) => {
                self.metrics.count(source, Metric::Failed);
                warn!(key, source, error = %e, outcome = LogOutcome::Dropped.as_str(), "at-most-once side effect failed");
            }
            Outcome::Throttled {
                retry_after,
                reason,
            } => {
                self.metrics.count(source, Metric::Throttled);
                inv.throttle(retry_after);
                warn!(key, source, error = %reason, outcome = LogOutcome::Dropped.as_str(), "at-most-once side effect throttled");
            }
        }
        Verdict::Done
    }

    /// Take the key, run the side effect, and settle the key by what it came to.
    pub(super) async fn effectively_once(
        &self,
        msg: &SqsMessage,
        mut job: Job,
        take: Take,
        body_ref: Option<&BodyRef>,
        inv: &Invocation<'_>,
    ) -> Verdict {
        let owner = take.owner.as_str();
        match self.take_key(msg, &take, job.replay_id.as_deref()).await {
            Ok(attempts) => job.attempt = attempts,
            Err(verdict) => return verdict,
        }
        if let Some(body_ref) = body_ref {
            match self.fetch_body(&job.source, body_ref).await {
                Ok(body) => job.body = body,
                Err(e) => return self.fail(msg, &job, owner, &e).await,
            }
        }
        // Another group was throttled while this take ran: start nothing, give the key back.
        let outcome = match inv.throttled() {
            Some(wait) => Outcome::Throttled {
                retry_after: wait,
                reason: ProcessError("held back: the downstream is throttling".into()),
            },
            None => self.processor.run(&job).await,
        };
        match outcome {
            Outcome::Done => self.complete(&job, owner).await,
            Outcome::Failed(e) => self.fail(msg, &job, owner, &e).await,
            Outcome::Throttled {
                retry_after,
                reason,
            } => self.defer(&job, owner, retry_after, &reason, inv).await,
        }
    }

    /// The take (a replay's own where the message is a replay): the attempt number where the
    /// key is ours to run, else what the message comes to without a side effect.
    pub(super) async fn take_key(
        &self,
        msg: &SqsMessage,
        take: &Take,
        replay_id: Option<&str>,
    ) -> Result<u32, Verdict> {
        let (key, source) = (take.key.as_str(), take.source.as_str());
        let taken = match replay_id {
            Some(rid) => self.ledger.take_replay(take, rid).await,
            None => self.ledger.take(take).await,
        };
        match taken {
            Ok(TakeOutcome::Taken { attempts }) => Ok(attempts),
            Err(e) => {
                warn!(key, source, error = %e, outcome = LogOutcome::Failed.as_str(), "take failed");
                Err(Verdict::Failed)
            }
            Ok(TakeOutcome::Completed) => {
                self.metrics.count(source, Metric::DuplicateDelivery);
                info!(
                    key,
                    source,
                    replay_id,
                    outcome = LogOutcome::Duplicate.as_str(),
                    "already completed: acknowledged without side effect"
                );
                Err(Verdict::Done)
            }
            Ok(TakeOutcome::Busy { lease_until }) => {
                info!(
                    key,
                    source,
                    lease_until,
                    outcome = LogOutcome::Busy.as_str(),
                    "another consumer holds the lease"
                );
                Err(Verdict::Failed)
            }
            Ok(TakeOutcome::Refused(why)) => {
                Err(self.refuse_key(msg, source, key, &Refusal::from(why)).await)
            }
        }
    }

    /// A throttled try (or one held back behind another group's): back to QUEUED, no failure
    /// counted, and nothing else starts in this invocation.
    pub(super) async fn defer(
        &self,
        job: &Job,
        owner: &str,
        retry_after: std::time::Duration,
        reason: &ProcessError,
        inv: &Invocation<'_>,
    ) -> Verdict {
        let (key, source) = (job.key.as_str(), job.source.as_str());
        let held = inv.throttled().is_some();
        if !held {
            self.metrics.count(source, Metric::Throttled);
        }
        inv.throttle(retry_after);
        let deferred = match self.give_back(job, owner, reason, false).await {
            Ok(None) => {
                self.ledger
                    .defer(key, owner, &reason.0, self.clock.now_ms())
                    .await
            }
            given_back => given_back.map(|failures| failures.is_some()),
        };
        match deferred {
            Ok(true) => {
                info!(key, source, attempts = job.attempt, retry_after_s = retry_after.as_secs(), error = %reason, outcome = if held { LogOutcome::Held } else { LogOutcome::Throttled }.as_str())
            }
            Ok(false) => {
                self.metrics.count(source, Metric::LeaseLost);
                warn!(key, source, error = %reason, outcome = LogOutcome::LeaseLost.as_str());
            }
            Err(se) => {
                warn!(key, source, error = %reason, store_error = %se, outcome = LogOutcome::Throttled.as_str())
            }
        }
        if held {
            Verdict::Held
        } else {
            Verdict::Throttled(retry_after)
        }
    }

    /// The side effect ran: COMPLETED (and, for a replay, its id recorded).
    pub(super) async fn complete(&self, job: &Job, owner: &str) -> Verdict {
        let (key, source, attempts) = (job.key.as_str(), job.source.as_str(), job.attempt);
        let replay_id = job.replay_id.as_deref();
        let now = self.clock.now_ms();
        let completed = match replay_id {
            Some(rid) => self.ledger.complete_replay(key, owner, rid, now).await,
            None => self.ledger.complete(key, owner, now).await,
        };
        match completed {
            Ok(true) => {
                let metric = if replay_id.is_some() {
                    Metric::ReplayCompleted
                } else {
                    Metric::Completed
                };
                self.metrics.count(source, metric);
                info!(
                    key,
                    source,
                    attempts,
                    replay_id,
                    outcome = LogOutcome::Completed.as_str()
                );
                Verdict::Done
            }
            Ok(false) => {
                // Someone else holds the key now, and may have died. The message comes
                // back: its next take finds COMPLETED (acknowledged) or an abandoned
                // lease (run again with the same Idempotency-Key), never a key stuck
                // in PROCESSING with its message gone.
                self.metrics.count(source, Metric::LeaseLost);
                warn!(
                    key,
                    source,
                    outcome = LogOutcome::LeaseLost.as_str(),
                    "side effect ran but the lease was lost before complete"
                );
                Verdict::Failed
            }
            Err(e) => {
                // Redelivery re-runs the side effect with the same Idempotency-Key.
                warn!(key, source, error = %e, outcome = LogOutcome::Failed.as_str(), "complete failed after the side effect");
                Verdict::Failed
            }
        }
    }

    /// A replay that did not complete gives a key that had completed back as COMPLETED
    /// (`Some(failures)`); `None` where the job is no replay or its key never completed, and
    /// the ordinary fail or defer follows.
    pub(super) async fn give_back(
        &self,
        job: &Job,
        owner: &str,
        reason: &ProcessError,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        if job.replay_id.is_none() {
            return Ok(None);
        }
        self.ledger
            .give_back_replay(&job.key, owner, &reason.0, failed)
            .await
    }

    /// A real failure: FAILED with `last_error`; every `MAX_FAILURES`-th failure of the key
    /// moves the message to the dead-letter queue (so a redriven key gets as many tries again).
    pub(super) async fn fail(
        &self,
        msg: &SqsMessage,
        job: &Job,
        owner: &str,
        e: &ProcessError,
    ) -> Verdict {
        let (key, source) = (job.key.as_str(), job.source.as_str());
        self.metrics.count(source, Metric::Failed);
        let failed = match self.give_back(job, owner, e, true).await {
            Ok(None) => {
                self.ledger
                    .fail(key, owner, &e.0, self.clock.now_ms())
                    .await
            }
            given_back => given_back,
        };
        match failed {
            Ok(Some(failures)) => {
                warn!(key, source, attempts = job.attempt, failures, error = %e, outcome = LogOutcome::Failed.as_str());
                let max = self.settings.max_failures.max(1);
                if self.redelivery.dead_letters() && failures % max == 0 {
                    return self.dead_letter(msg, source, Some(key)).await;
                }
            }
            Ok(None) => {
                self.metrics.count(source, Metric::LeaseLost);
                warn!(key, source, error = %e, outcome = LogOutcome::LeaseLost.as_str());
            }
            Err(se) => {
                warn!(key, source, error = %e, store_error = %se, outcome = LogOutcome::Failed.as_str())
            }
        }
        Verdict::Failed
    }
}
