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

use crate::answer::accepted_response;
use crate::archive::{Archive, NoArchive};
use crate::bucket::{NoBucket, PayloadBucket};
use crate::clock::{Clock, SystemClock};
use crate::config::SourceSpecs;
use crate::ledger::{self, LedgerStore, Take, TakeItem};
use crate::log_text::{capped, MAX_LOGGED_BYTES};
use crate::metrics::{Metrics, UNKNOWN_SOURCE_DIMENSION};
use crate::queue::{BodyRef, Envelope};
use crate::redelivery::{NoRedelivery, Redelivery};
use crate::route::Routes;
use crate::{fifo, lease};

mod admit;
mod archiving;
mod breaking;
mod destinations;
mod dispatch;
mod invocation;
mod item;
mod processor;
mod record;
mod requeue;
pub(crate) mod spans;

use admit::Admitted;
pub use admit::Refusal;
use archiving::Archived;
pub use destinations::{Board, Destinations, NoDestinations};
use invocation::{Invocation, Verdict};
pub use processor::{Job, Outcome, ProcessError, Processor, LEASE_MARGIN_MS};
use record::{Fields, Recorded};
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

/// What a consumer is wired to besides its ledger, its default destination and its clock:
/// where it delays and dead-letters messages ([`Consumer::with_redelivery`]), the payload
/// bucket behind envelope pointers ([`Consumer::with_store`]; without one, such a message
/// fails), the archive that takes each batch's envelopes before they run
/// ([`Consumer::with_archive`]), and the named destinations ([`Consumer::with_destinations`]).
/// Each defaults to none.
pub struct Wiring<Q = NoRedelivery, S = NoBucket, A = NoArchive, D = NoDestinations> {
    redelivery: Q,
    store: S,
    archive: A,
    destinations: D,
}

/// A [`Wiring`], whatever it is wired to: what the consumer's code is generic over.
pub trait Wired: Send + Sync + 'static {
    type Redelivery: Redelivery;
    type Store: PayloadBucket;
    type Archive: Archive;
    type Destinations: Destinations;
    /// The parts, by name.
    fn parts(&self) -> &Parts<Self>;
    /// The parts, to rewire.
    fn into_parts(self) -> Parts<Self>
    where
        Self: Sized;
}

impl<Q: Redelivery, S: PayloadBucket, A: Archive, D: Destinations> Wired for Wiring<Q, S, A, D> {
    type Redelivery = Q;
    type Store = S;
    type Archive = A;
    type Destinations = D;
    fn parts(&self) -> &Self {
        self
    }
    fn into_parts(self) -> Self {
        self
    }
}

/// A wiring's parts, by name.
pub type Parts<W> = Wiring<
    <W as Wired>::Redelivery,
    <W as Wired>::Store,
    <W as Wired>::Archive,
    <W as Wired>::Destinations,
>;
/// `W` delaying and dead-lettering through `R`.
pub type WithRedelivery<W, R> =
    Wiring<R, <W as Wired>::Store, <W as Wired>::Archive, <W as Wired>::Destinations>;
/// `W` reading pointed-to bodies from `S`.
pub type WithStore<W, S> =
    Wiring<<W as Wired>::Redelivery, S, <W as Wired>::Archive, <W as Wired>::Destinations>;
/// `W` archiving through `A`.
pub type WithArchive<W, A> =
    Wiring<<W as Wired>::Redelivery, <W as Wired>::Store, A, <W as Wired>::Destinations>;
/// `W` delivering to the named destinations through `D`.
pub type WithDestinations<W, D> =
    Wiring<<W as Wired>::Redelivery, <W as Wired>::Store, <W as Wired>::Archive, D>;

/// The consumer: its sources, its ledger, its default destination `P` (`FORWARD_URL`'s
/// forwarder, or your [`Processor`]), its clock, and what else it is wired to ([`Wiring`]).
pub struct Consumer<L, P, C = SystemClock, W = Wiring> {
    sources: SourceSpecs,
    ledger: L,
    processor: P,
    clock: C,
    settings: ConsumerSettings,
    metrics: Metrics,
    /// `WEBHOOK_DESTINATIONS`: the sources it names go to their destinations through the
    /// wiring's ([`Consumer::with_destinations`]), the others to the default destination.
    routes: Routes,
    wiring: W,
}

impl<L: LedgerStore, P: Processor, C: Clock> Consumer<L, P, C> {
    /// A consumer wired to nothing else ([`Wiring`]'s defaults); see the `with_*` builders.
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
            routes: Routes::none(),
            wiring: Wiring {
                redelivery: NoRedelivery,
                store: NoBucket,
                archive: NoArchive,
                destinations: NoDestinations,
            },
        }
    }
}

impl<L: LedgerStore, P: Processor, C: Clock, W: Wired> Consumer<L, P, C, W> {
    /// The ledger this consumer takes keys in.
    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// What the consumer is wired to.
    fn wired(&self) -> &Parts<W> {
        self.wiring.parts()
    }

    /// The same consumer with its wiring (and routes) changed by `f`: the one place every
    /// field is listed.
    #[allow(
        clippy::type_complexity,
        reason = "the wiring's four parts, named once here"
    )]
    fn rewire<T: Wired>(
        self,
        f: impl FnOnce(
            Wiring<W::Redelivery, W::Store, W::Archive, W::Destinations>,
            Routes,
        ) -> (T, Routes),
    ) -> Consumer<L, P, C, T> {
        let Consumer {
            sources,
            ledger,
            processor,
            clock,
            settings,
            metrics,
            routes,
            wiring,
        } = self;
        let (wiring, routes) = f(wiring.into_parts(), routes);
        Consumer {
            sources,
            ledger,
            processor,
            clock,
            settings,
            metrics,
            routes,
            wiring,
        }
    }

    /// The same consumer delaying and dead-lettering messages through `redelivery`.
    pub fn with_redelivery<R: Redelivery>(
        self,
        redelivery: R,
    ) -> Consumer<L, P, C, WithRedelivery<W, R>> {
        self.rewire(|w, routes| {
            let (store, archive, destinations) = (w.store, w.archive, w.destinations);
            (
                Wiring {
                    redelivery,
                    store,
                    archive,
                    destinations,
                },
                routes,
            )
        })
    }

    /// The same consumer reading bodies behind envelope pointers from `store`
    /// (`PAYLOAD_BUCKET`).
    pub fn with_store<T: PayloadBucket>(self, store: T) -> Consumer<L, P, C, WithStore<W, T>> {
        self.rewire(|w, routes| {
            let (redelivery, archive, destinations) = (w.redelivery, w.archive, w.destinations);
            (
                Wiring {
                    redelivery,
                    store,
                    archive,
                    destinations,
                },
                routes,
            )
        })
    }

    /// The same consumer putting each batch's envelopes in `archive` before they run
    /// (`ARCHIVE_STREAM`), for the sources that archive.
    pub fn with_archive<T: Archive>(self, archive: T) -> Consumer<L, P, C, WithArchive<W, T>> {
        self.rewire(|w, routes| {
            let (redelivery, store, destinations) = (w.redelivery, w.store, w.destinations);
            (
                Wiring {
                    redelivery,
                    store,
                    archive,
                    destinations,
                },
                routes,
            )
        })
    }

    /// The same consumer sending the events of the sources `routes` names to their
    /// destinations through `destinations` (docs/routing.md); other sources keep the default
    /// destination.
    pub fn with_destinations<T: Destinations>(
        self,
        routes: Routes,
        destinations: T,
    ) -> Consumer<L, P, C, WithDestinations<W, T>> {
        self.rewire(|w, _| {
            let (redelivery, store, archive) = (w.redelivery, w.store, w.archive);
            (
                Wiring {
                    redelivery,
                    store,
                    archive,
                    destinations,
                },
                routes,
            )
        })
    }

    /// The body behind a pointer of an event of `source`, checked against its size and its
    /// payload hash ([`crate::key::payload_sha256`], the source's `attempt_fields` left out);
    /// the error is the message's `last_error` ("payload missing: s3://…").
    async fn fetch_body(
        &self,
        source: &str,
        body_ref: &BodyRef,
    ) -> Result<bytes::Bytes, ProcessError> {
        let url = self.wired().store.url(&body_ref.s3_key);
        let attempt_fields = self
            .sources
            .get(source)
            .map_or(&[][..], |s| s.attempt_fields.as_slice());
        match self.wired().store.get(&body_ref.s3_key).await {
            Ok(Some(bytes)) => {
                if bytes.len() as u64 != body_ref.size
                    || crate::key::payload_sha256(&bytes, attempt_fields) != body_ref.sha256
                {
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
        let (paused, breakers) = self.read_board().await;
        let inv = Invocation {
            request_id,
            lease_until_ms: lease::lease_until_ms(self.clock.now_ms(), deadline_ms),
            throttled: Mutex::new(None),
            verdicts: Mutex::new(vec![None; messages.len()]),
            held: Mutex::new(Default::default()),
            paused,
            breakers,
            kept: Mutex::new(Default::default()),
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
            let resent = self
                .delay_after_throttle(messages, &failed, &inv, inv.throttled())
                .await;
            failed.retain(|i| !resent.contains(i));
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
        // The batch's spans, before Lambda freezes the sandbox (nothing where export is off).
        crate::trace::flush().await;
        response
    }

    /// One message: admitted (read, checked), then dispatched to its destinations; never
    /// where the archive step did not take it.
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
        match self.admit_message(msg, inv).await {
            Ok(admitted) => self.dispatch(msg, admitted, archived, inv).await,
            Err(verdict) => verdict,
        }
    }

    /// Admission: the message read as an envelope of a known source, its parts checked
    /// (docs/design.md §5), and the job its destinations get; else what it comes to (an
    /// unreadable message fails, a refused one is dead-lettered).
    async fn admit_message(
        &self,
        msg: &SqsMessage,
        inv: &Invocation<'_>,
    ) -> Result<Admitted<'_>, Verdict> {
        let message_id = Some(msg.message_id.as_deref().unwrap_or_default());
        let unreadable = |message: &'static str, error: Option<&dyn std::fmt::Display>| {
            let fields = Fields::default().message_id(message_id).message(message);
            let fields = match error {
                Some(error) => fields.error(error),
                None => fields,
            };
            self.record(Recorded::Unreadable, fields);
        };
        let envelope = match msg.body.as_deref().map(Envelope::parse) {
            Some(Ok(env)) => env,
            Some(Err(e)) => {
                unreadable("unparseable message", Some(&e));
                return Err(self.unreadable(msg, UNKNOWN_SOURCE_DIMENSION).await);
            }
            None => {
                unreadable("message without a body", None);
                return Err(self.unreadable(msg, UNKNOWN_SOURCE_DIMENSION).await);
            }
        };
        let (key, source) = (envelope.key.as_str(), envelope.source.as_str());
        let Some(spec) = self.sources.get(source) else {
            self.record(
                Recorded::Unreadable,
                Fields::default()
                    .message_id(message_id)
                    .source(source)
                    .key(key)
                    .message("message of an unknown source"),
            );
            return Err(self.unreadable(msg, UNKNOWN_SOURCE_DIMENSION).await);
        };
        // A body in the bucket is read once the key is taken, so that a missing object
        // fails the key with its `last_error`.
        let body = match &envelope.body_ref {
            Some(_) => bytes::Bytes::new(),
            None => match envelope.body_bytes() {
                Ok(b) => b.into(),
                Err(e) => {
                    self.record(
                        Recorded::Unreadable,
                        Fields::default()
                            .message_id(message_id)
                            .key(key)
                            .error(&e)
                            .message("unreadable body"),
                    );
                    return Err(self.unreadable(msg, source).await);
                }
            },
        };
        if let Err(refusal) = self.admit(&envelope, &body, &spec.attempt_fields) {
            return Err(self.refuse(msg, &envelope, &refusal).await);
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
            trace: None,
        };
        Ok(Admitted {
            envelope,
            spec,
            job,
        })
    }

    /// What the consumer checks of an envelope before any ledger write (docs/design.md §5):
    /// its parts agree ([`admit::check`]), and a replay for one destination names one of this
    /// consumer's that takes this event.
    fn admit(
        &self,
        envelope: &Envelope,
        body: &[u8],
        attempt_fields: &[String],
    ) -> Result<(), Refusal> {
        admit::check(envelope, body, attempt_fields)?;
        if let Some(name) = envelope.destination.as_deref() {
            let takes_it = self
                .routes
                .destinations_for(&envelope.source, envelope.event_type.as_deref())
                .contains(&name);
            if !takes_it {
                return Err(Refusal::DestinationUnknown);
            }
        }
        Ok(())
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
            item: TakeItem::Event,
        }
    }

    /// An envelope whose parts disagree ([`admit::check`]): no side effect; the reason as the
    /// key's `last_error` where its item exists (never on a body guard item); dead-lettered at
    /// once where there is a dead-letter queue, since it will never become valid.
    async fn refuse(&self, msg: &SqsMessage, envelope: &Envelope, refusal: &Refusal) -> Verdict {
        self.refuse_key(msg, &envelope.source, &envelope.key, refusal)
            .await
    }

    /// [`Self::refuse`] by the message's source and key.
    async fn refuse_key(
        &self,
        msg: &SqsMessage,
        source: &str,
        full_key: &str,
        refusal: &Refusal,
    ) -> Verdict {
        let key = capped(full_key, MAX_LOGGED_BYTES);
        let fields = || {
            Fields::default()
                .message_id(msg.message_id.as_deref().unwrap_or_default())
                .source(source)
                .key(key)
        };
        self.record(Recorded::Refused, fields().error(refusal));
        // The note goes only where the item exists and has not expired, and never on a key
        // that breaks the key rules (it would be another item's: a pair's, say).
        let noted = !full_key.starts_with('#') && !matches!(refusal, Refusal::KeyBreaksRules(_));
        if noted {
            let reason = refusal.to_string();
            if let Err(e) = self
                .ledger
                .note_refusal(full_key, &reason, self.clock.now_ms())
                .await
            {
                self.record(
                    Recorded::RefusalUnnoted,
                    fields().error(&e).message("could not note the refusal"),
                );
            }
        }
        if self.wired().redelivery.dead_letters() {
            return self.dead_letter(msg, source, Some(key)).await;
        }
        Verdict::Failed
    }
}
