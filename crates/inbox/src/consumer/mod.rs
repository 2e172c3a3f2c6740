//! The consumer: for each message, take the key (re-checking its status), run the side
//! effect, complete or fail it, and report what must come back as partial batch failures.
//!
//! The batch runs by FIFO group as [`crate::fifo`] states: groups concurrently (at most
//! `MAX_CONCURRENT_GROUPS`), each group in order, the rest of a group held back after a
//! failure. A standard queue's messages each stand alone.
//!
//! **Backpressure** (docs/design.md §6): when the side effect is throttled (the system of
//! record answered 429 or 503), the key is deferred (back to QUEUED, no failure counted), the
//! message made visible again after the `Retry-After`, and nothing else starts in this
//! invocation: every message not yet run is reported failed and comes back after the same
//! wait. A message received `n` times waits at least `n` seconds, so that throttling alone
//! takes some 35 hours to reach the template's `maxReceiveCount` (500).
//!
//! **Dead letters**: a key whose side effect failed for real `MAX_FAILURES` times (the
//! ledger's `failures`, which throttled tries do not count), or a message that cannot be read
//! after as many receives, is copied to the dead-letter queue by the consumer and reported
//! done ([`crate::redelivery`]); the queue's `maxReceiveCount` is only a safety net.

use std::convert::Infallible;
use std::sync::Mutex;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures::StreamExt;
use lambda_runtime::LambdaEvent;
use tracing::{info, warn};

use crate::answer::accepted_response;
use crate::archive::{Archive, NoArchive};
use crate::clock::{Clock, SystemClock};
use crate::config::{Delivery, SourceSpecs};
use crate::key::sha256_hex;
use crate::ledger::{self, LedgerStore, StoreError, Take, TakeOutcome};
use crate::log_text::{capped, MAX_LOGGED_BYTES};
use crate::metrics::{Metric, Metrics, UNKNOWN_SOURCE_DIMENSION};
use crate::outcome::LogOutcome;
use crate::queue::{BodyRef, Envelope};
use crate::redelivery::{NoRedelivery, Redelivery};
use crate::route::Routes;
use crate::store::{NoStore, ObjectStore};
use crate::{fifo, lease};

mod admit;
mod archiving;
mod deliver;
mod fan_out;
mod invocation;
mod processor;
mod requeue;

pub use admit::Refusal;
use archiving::Archived;
pub use deliver::{Destinations, NoDestinations};
use invocation::{Invocation, Verdict};
pub use processor::{Job, Outcome, ProcessError, Processor, LEASE_MARGIN_MS};
pub use requeue::{throttle_delay_seconds, RETENTION_MARGIN_MS};

pub use crate::defaults::DEFAULT_MAX_FAILURES;

/// The consumer's tunables (`MAX_CONCURRENT_GROUPS`, `MAX_FAILURES`, `ARCHIVE_BODIES`).
#[derive(Clone, Copy, Debug)]
pub struct ConsumerSettings {
    pub max_concurrent_groups: usize,
    /// Real failures of a key (and receives of an unreadable message) before the consumer
    /// dead-letters its message; only with a [`Redelivery`] that has a dead-letter queue.
    pub max_failures: u32,
    /// The queue's message retention (`QUEUE_RETENTION_SECONDS`): a throttled message whose
    /// delay would take it within [`RETENTION_MARGIN_MS`] of it is also copied to the
    /// dead-letter queue, so that it never expires unseen. `None`: not checked.
    pub queue_retention_seconds: Option<u64>,
    /// `ARCHIVE_BODIES`: archive every source's envelopes before they run (a source's
    /// `archive` decides for itself), through [`Consumer::with_archive`].
    pub archive_bodies: bool,
}

impl Default for ConsumerSettings {
    fn default() -> Self {
        Self {
            max_concurrent_groups: 8,
            max_failures: DEFAULT_MAX_FAILURES,
            queue_retention_seconds: None,
            archive_bodies: false,
        }
    }
}

/// The consumer, with its collaborators. The payload bucket ([`Consumer::with_store`]) is
/// where the bodies behind envelope pointers are read; without one, such a message fails.
/// The archive ([`Consumer::with_archive`]) takes each batch's envelopes before they run.
pub struct Consumer<
    L,
    P,
    C = SystemClock,
    Q = NoRedelivery,
    S = NoStore,
    A = NoArchive,
    D = NoDestinations,
> {
    sources: SourceSpecs,
    ledger: L,
    processor: P,
    clock: C,
    settings: ConsumerSettings,
    metrics: Metrics,
    redelivery: Q,
    store: S,
    archive: A,
    /// `WEBHOOK_DESTINATIONS`: the sources it names go to their destinations through
    /// `destinations` ([`Consumer::with_destinations`]), the others to the processor.
    routes: Routes,
    destinations: D,
}

impl<L: LedgerStore, P: Processor, C: Clock> Consumer<L, P, C> {
    /// A consumer without a queue of its own to change ([`NoRedelivery`]); see
    /// [`Consumer::with_redelivery`].
    pub fn new(
        sources: SourceSpecs,
        ledger: L,
        processor: P,
        clock: C,
        settings: ConsumerSettings,
        metrics: Metrics,
    ) -> Self {
        Self {
            sources,
            ledger,
            processor,
            clock,
            settings,
            metrics,
            redelivery: NoRedelivery,
            store: NoStore,
            archive: NoArchive,
            routes: Routes::none(),
            destinations: NoDestinations,
        }
    }
}

impl<
        L: LedgerStore,
        P: Processor,
        C: Clock,
        Q: Redelivery,
        S: ObjectStore,
        A: Archive,
        D: Destinations,
    > Consumer<L, P, C, Q, S, A, D>
{
    /// The same consumer delaying and dead-lettering messages through `redelivery`.
    pub fn with_redelivery<R: Redelivery>(self, redelivery: R) -> Consumer<L, P, C, R, S, A, D> {
        Consumer {
            sources: self.sources,
            ledger: self.ledger,
            processor: self.processor,
            clock: self.clock,
            settings: self.settings,
            metrics: self.metrics,
            redelivery,
            store: self.store,
            archive: self.archive,
            routes: self.routes,
            destinations: self.destinations,
        }
    }

    /// The same consumer reading bodies behind envelope pointers from `store`
    /// (`PAYLOAD_BUCKET`).
    pub fn with_store<T: ObjectStore>(self, store: T) -> Consumer<L, P, C, Q, T, A, D> {
        Consumer {
            sources: self.sources,
            ledger: self.ledger,
            processor: self.processor,
            clock: self.clock,
            settings: self.settings,
            metrics: self.metrics,
            redelivery: self.redelivery,
            store,
            archive: self.archive,
            routes: self.routes,
            destinations: self.destinations,
        }
    }

    /// The same consumer putting each batch's envelopes in `archive` before they run
    /// (`ARCHIVE_STREAM`), for the sources that archive.
    pub fn with_archive<T: Archive>(self, archive: T) -> Consumer<L, P, C, Q, S, T, D> {
        Consumer {
            sources: self.sources,
            ledger: self.ledger,
            processor: self.processor,
            clock: self.clock,
            settings: self.settings,
            metrics: self.metrics,
            redelivery: self.redelivery,
            store: self.store,
            archive,
            routes: self.routes,
            destinations: self.destinations,
        }
    }

    /// The same consumer sending the events of the sources `routes` names to their
    /// destinations through `destinations` (docs/routing.md); other sources keep the processor.
    pub fn with_destinations<T: Destinations>(
        self,
        routes: Routes,
        destinations: T,
    ) -> Consumer<L, P, C, Q, S, A, T> {
        Consumer {
            sources: self.sources,
            ledger: self.ledger,
            processor: self.processor,
            clock: self.clock,
            settings: self.settings,
            metrics: self.metrics,
            redelivery: self.redelivery,
            store: self.store,
            archive: self.archive,
            routes,
            destinations,
        }
    }

    /// The body behind a pointer, checked against its hash and size; the error is the
    /// message's `last_error` ("payload missing: s3://…").
    async fn fetch_body(&self, body_ref: &BodyRef) -> Result<bytes::Bytes, ProcessError> {
        let url = self.store.url(&body_ref.s3_key);
        match self.store.get(&body_ref.s3_key).await {
            Ok(Some(bytes)) => {
                if bytes.len() as u64 != body_ref.size || sha256_hex(&bytes) != body_ref.sha256 {
                    Err(ProcessError(format!(
                        "payload unreadable: {url} does not match its sha256 and size"
                    )))
                } else {
                    Ok(bytes.into())
                }
            }
            Ok(None) => Err(ProcessError(format!("payload missing: {url}"))),
            Err(e) => Err(ProcessError(format!("payload missing: {url}: {e}"))),
        }
    }

    /// Lambda's entry.
    pub async fn handle_event(
        &self,
        event: LambdaEvent<SqsEvent>,
    ) -> Result<SqsBatchResponse, Infallible> {
        let deadline = lease::deadline_ms(&event.context);
        Ok(self
            .handle_batch(&event.payload.records, &event.context.request_id, deadline)
            .await)
    }

    /// Runs a batch; the answer lists the message ids SQS must deliver again.
    pub async fn handle_batch(
        &self,
        messages: &[SqsMessage],
        request_id: &str,
        deadline_ms: Option<i64>,
    ) -> SqsBatchResponse {
        let paused = if self.routes.is_empty() {
            Ok(Default::default())
        } else {
            self.destinations.paused().await
        };
        let inv = Invocation {
            request_id,
            lease_until_ms: lease::lease_until_ms(self.clock.now_ms(), deadline_ms),
            throttled: Mutex::new(None),
            verdicts: Mutex::new(vec![None; messages.len()]),
            held: Mutex::new(Default::default()),
            paused,
        };
        let archived = self.archive_batch(messages).await;
        let archived = &archived;
        let groups = fifo::plan(messages);
        let inv_ref = &inv;
        let failed: Vec<Vec<usize>> = futures::stream::iter(groups)
            .map(|group| {
                fifo::run_in_order(group, move |i| async move {
                    let verdict = self.run_one(&messages[i], &archived[i], inv_ref).await;
                    inv_ref.record(i, verdict);
                    verdict == Verdict::Done
                })
            })
            .buffer_unordered(self.settings.max_concurrent_groups.max(1))
            .collect()
            .await;
        let mut failed: Vec<usize> = failed.into_iter().flatten().collect();
        failed.sort_unstable();
        if inv.throttled().is_some() || inv.any_throttled() {
            self.delay_after_throttle(messages, &failed, &inv, inv.throttled())
                .await;
        }
        let mut response = SqsBatchResponse::default();
        response.batch_item_failures = failed
            .into_iter()
            .map(|i| {
                let mut f = BatchItemFailure::default();
                f.item_identifier = messages[i].message_id.clone().unwrap_or_default();
                f
            })
            .collect();
        response
    }

    /// One message: read it, then run it at most once or through the ledger; never where
    /// the archive step did not take it.
    async fn run_one(
        &self,
        msg: &SqsMessage,
        archived: &Archived,
        inv: &Invocation<'_>,
    ) -> Verdict {
        if inv.throttled().is_some() && self.routes.is_empty() {
            return Verdict::Held;
        }
        if *archived == Archived::Failed {
            return Verdict::Failed;
        }
        let message_id = msg.message_id.as_deref().unwrap_or_default();
        let envelope = match msg.body.as_deref().map(Envelope::parse) {
            Some(Ok(env)) => env,
            Some(Err(e)) => {
                warn!(message_id, error = %e, outcome = LogOutcome::Failed.as_str(), "unparseable message");
                return self.unreadable(msg, UNKNOWN_SOURCE_DIMENSION).await;
            }
            None => {
                warn!(
                    message_id,
                    outcome = LogOutcome::Failed.as_str(),
                    "message without a body"
                );
                return self.unreadable(msg, UNKNOWN_SOURCE_DIMENSION).await;
            }
        };
        let key = envelope.key.as_str();
        let source = envelope.source.as_str();
        let Some(spec) = self.sources.get(source) else {
            warn!(
                message_id,
                source,
                key,
                outcome = LogOutcome::Failed.as_str(),
                "message of an unknown source"
            );
            return self.unreadable(msg, UNKNOWN_SOURCE_DIMENSION).await;
        };
        // A body in the bucket is read once the key is taken, so that a missing object
        // fails the key with its `last_error`.
        let body = match &envelope.body_ref {
            Some(_) => bytes::Bytes::new(),
            None => match envelope.body_bytes() {
                Ok(b) => b.into(),
                Err(e) => {
                    warn!(message_id, key, error = %e, outcome = LogOutcome::Failed.as_str(), "unreadable body");
                    return self.unreadable(msg, source).await;
                }
            },
        };
        if let Err(refusal) = admit::check(&envelope, &body) {
            return self.refuse(msg, &envelope, &refusal).await;
        }
        let job = Job {
            key: key.to_owned(),
            source: source.to_owned(),
            body,
            headers: envelope.headers.clone(),
            attempt: 1,
            lease_until_ms: inv.lease_until_ms,
            replay_id: envelope.replay_id.clone(),
            event_type: envelope.event_type.clone(),
        };
        if self.routes.routes(source) {
            return self
                .routed(msg, job, &envelope, spec.retention_hours, inv, archived)
                .await;
        }
        // A throttle of the forward holds what would go to it (routed events: per destination).
        if inv.throttled().is_some() {
            return Verdict::Held;
        }
        // A replay is a deliberate run, once per replay id, whatever the source's delivery:
        // an at-most-once source's replay goes through the ledger too (its replay take
        // creates the key's item), so that the same replay id never runs twice.
        if spec.delivery == Delivery::AtMostOnce && job.replay_id.is_none() {
            return self
                .at_most_once(job, envelope.body_ref.as_ref(), inv)
                .await;
        }
        let owner = format!("{}:{message_id}", inv.request_id);
        let take = self.take_of(&envelope, spec.retention_hours, owner, inv, archived);
        self.effectively_once(msg, job, take, envelope.body_ref.as_ref(), inv)
            .await
    }

    /// The take of an admitted envelope by `owner`, now, under the invocation's lease, with
    /// when the batch archived it.
    fn take_of(
        &self,
        envelope: &Envelope,
        retention_hours: u64,
        owner: String,
        inv: &Invocation<'_>,
        archived: &Archived,
    ) -> Take {
        let now = self.clock.now_ms();
        let (response_status, response_body) = accepted_response(&envelope.key);
        Take {
            key: envelope.key.clone(),
            source: envelope.source.clone(),
            payload_sha256: envelope.payload_sha256.clone(),
            owner,
            now_ms: now,
            lease_until_ms: inv.lease_until_ms,
            expires_at: ledger::expires_at(now, retention_hours),
            response_status,
            response_body,
            archived_at: match archived {
                Archived::At(at) => Some(*at),
                Archived::Skipped | Archived::Failed => None,
            },
            indexed: true,
        }
    }

    /// An envelope whose parts disagree ([`admit::check`]): no side effect; the reason as the
    /// key's `last_error` where its item exists (never on a body guard item); dead-lettered at
    /// once where there is a dead-letter queue, since it will never become valid.
    async fn refuse(&self, msg: &SqsMessage, envelope: &Envelope, refusal: &Refusal) -> Verdict {
        let message_id = msg.message_id.as_deref().unwrap_or_default();
        let source = envelope.source.as_str();
        let key = capped(&envelope.key, MAX_LOGGED_BYTES);
        self.metrics.count(source, Metric::Refused);
        warn!(message_id, source, key, error = %refusal, outcome = LogOutcome::Refused.as_str());
        if !envelope.key.starts_with('#') {
            let reason = refusal.to_string();
            if let Err(e) = self
                .ledger
                .note_refusal(&envelope.key, &reason, self.clock.now_ms())
                .await
            {
                warn!(message_id, source, key, error = %e, outcome = LogOutcome::Refused.as_str(), "could not note the refusal");
            }
        }
        if self.redelivery.dead_letters() {
            return self.dead_letter(msg, source, Some(key)).await;
        }
        Verdict::Failed
    }

    /// Declared at-most-once: run once, never retried, no ledger; acknowledged whatever
    /// happened.
    async fn at_most_once(
        &self,
        mut job: Job,
        body_ref: Option<&BodyRef>,
        inv: &Invocation<'_>,
    ) -> Verdict {
        if let Some(body_ref) = body_ref {
            match self.fetch_body(body_ref).await {
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
    async fn effectively_once(
        &self,
        msg: &SqsMessage,
        mut job: Job,
        take: Take,
        body_ref: Option<&BodyRef>,
        inv: &Invocation<'_>,
    ) -> Verdict {
        let owner = take.owner.as_str();
        match self.take_key(&take, job.replay_id.as_deref()).await {
            Ok(attempts) => job.attempt = attempts,
            Err(verdict) => return verdict,
        }
        if let Some(body_ref) = body_ref {
            match self.fetch_body(body_ref).await {
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
    async fn take_key(&self, take: &Take, replay_id: Option<&str>) -> Result<u32, Verdict> {
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
        }
    }

    /// A throttled try (or one held back behind another group's): back to QUEUED, no failure
    /// counted, and nothing else starts in this invocation.
    async fn defer(
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
    async fn complete(&self, job: &Job, owner: &str) -> Verdict {
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
    async fn give_back(
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
    async fn fail(&self, msg: &SqsMessage, job: &Job, owner: &str, e: &ProcessError) -> Verdict {
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
