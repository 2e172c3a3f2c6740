//! The receiver: verify, derive the key, claim it, enqueue, answer.
//!
//! 200 means the event is durably on the queue. A first delivery makes two sequential AWS
//! calls: the claim, then the send. Any failure after the claim releases the claim first and
//! answers 500, so the sender's retry finds the key free. A duplicate that finds a live claim
//! which is not final (RECEIVED: the first delivery in flight, or one that died around its
//! send) sends the event itself, with the same deduplication id, and answers 200 only after
//! that send. A duplicate of a key this warm instance has answered already is answered from
//! memory ([`crate::replay_cache`]), with no AWS call.

use std::convert::Infallible;
use std::time::Duration;

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use base64::Engine as _;
use http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::LambdaEvent;
use tracing::{info, warn};

use crate::bucket::{NoBucket, PayloadBucket};
use crate::clock::{Clock, SystemClock};
use crate::config::{Delivery, GroupSpec, Handshake, SignatureRefusal, Source, Sources};
use crate::json_fields::Fields;
use crate::key::{self, KeyError};
use crate::ledger::LedgerStore;
use crate::log_text::{capped, MAX_LOGGED_BYTES};
use crate::metrics::{Metric, Metrics};
use crate::outcome::LogOutcome;
use crate::queue::Queue;
use crate::replay_cache::ReplayCache;
use crate::signature::{Inbound, Verifier};

mod answer;
mod batch;
mod claiming;
mod established;
mod handshake;
mod payload;
mod paypal;
mod preset_rules;
mod request;
mod sns;
mod stored_secret;

pub use crate::answer::accepted_response;
use answer::stored_response;
pub use answer::{to_apigw_v2, Rejection, EMPTY_TWIML, PENDING_RETRY_AFTER_SECONDS};
use payload::{Carry, Event};
use request::{caller, envelope_headers, source_from, source_name};
pub use stored_secret::{PREVIOUS_SECRET_MS, SECRET_MAX_AGE_MS, SECRET_RETRY_MS};

pub use crate::metrics::UNKNOWN_SOURCE_DIMENSION;

/// The log message of a duplicate that found a RECEIVED claim of the same body and sent the
/// stored event again (same deduplication id: SQS keeps one message), read by `make demo`.
pub const SENT_BEHIND_A_CLAIM: &str = "sent behind a live claim";
/// The header on a replayed response.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// The receiver's tunables (`MAX_BODY_BYTES`, `REPLAY_CACHE_KEYS`,
/// `REPLAY_CACHE_SECONDS`).
///
/// The default is a bare receiver's: no replay cache, so that every delivery reaches the
/// ledger; the Lambda function's settings come from its environment, where the cache is on
/// by default ([`crate::config::env::ReceiverEnv`]).
#[derive(Clone, Copy, Debug)]
pub struct ReceiverSettings {
    pub max_body_bytes: usize,
    /// Keys the replay cache holds at most (0: no cache).
    pub replay_cache_keys: usize,
    /// Bytes the replay cache holds at most ([`crate::replay_cache::entry_bytes`]; 0: no cache).
    pub replay_cache_bytes: usize,
    /// How long a key answered stays in the replay cache.
    pub replay_cache_max_age: Duration,
}

impl Default for ReceiverSettings {
    fn default() -> Self {
        Self {
            max_body_bytes: usize::try_from(crate::config::env::DEFAULT_MAX_BODY_BYTES)
                .unwrap_or(usize::MAX),
            replay_cache_keys: 0,
            replay_cache_bytes: usize::try_from(crate::config::env::DEFAULT_REPLAY_CACHE_BYTES)
                .unwrap_or(usize::MAX),
            replay_cache_max_age: Duration::from_secs(
                crate::config::env::DEFAULT_REPLAY_CACHE_SECONDS,
            ),
        }
    }
}

impl ReceiverSettings {
    /// These settings with a replay cache of `keys` keys (the environment's default age).
    pub fn with_replay_cache(self, keys: usize) -> Self {
        Self {
            replay_cache_keys: keys,
            ..self
        }
    }
}

/// The receiver, with its collaborators. The payload bucket is optional
/// ([`Receiver::with_store`]): without it, a body whose envelope would not fit the queue is 413.
pub struct Receiver<L, Q, C = SystemClock, S = NoBucket> {
    sources: Sources,
    ledger: L,
    queue: Q,
    clock: C,
    settings: ReceiverSettings,
    metrics: Metrics,
    store: S,
    cache: ReplayCache,
    /// Verifiers of the secrets handshakes established (Asana's), with when each was read
    /// (read again after [`established::ESTABLISHED_SECRET_MAX_AGE_MS`]).
    established: std::sync::Mutex<std::collections::HashMap<String, (Verifier, i64)>>,
    /// The sources' secrets as this instance holds them, read again where
    /// [`stored_secret`] says ([`Receiver::with_secret_resolver`]).
    stored: stored_secret::StoredSecrets,
    /// The keys and certificates fetched from providers (AWS SNS's), cached per instance.
    keys: crate::key_fetch::KeyFetcher,
}

/// What the checks before the key found: an event to claim (its body as kept: a token it
/// carried taken out), or a handshake already answered.
enum Checked<'s, 'r> {
    Event(&'s Source, std::borrow::Cow<'r, [u8]>),
    Answered(Response<Body>),
}

impl<L: LedgerStore, Q: Queue, C: Clock> Receiver<L, Q, C> {
    pub fn new(
        sources: Sources,
        ledger: L,
        queue: Q,
        clock: C,
        settings: ReceiverSettings,
        metrics: Metrics,
    ) -> Self {
        let max_age_ms = i64::try_from(settings.replay_cache_max_age.as_millis()).unwrap_or(0);
        Self {
            sources,
            ledger,
            queue,
            clock,
            settings,
            metrics,
            store: NoBucket,
            cache: ReplayCache::new(
                settings.replay_cache_keys,
                settings.replay_cache_bytes,
                max_age_ms,
            ),
            established: Default::default(),
            stored: Default::default(),
            keys: crate::key_fetch::KeyFetcher::default(),
        }
    }
}

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// The same receiver with a payload bucket (`PAYLOAD_BUCKET`).
    pub fn with_store<T: PayloadBucket>(self, store: T) -> Receiver<L, Q, C, T> {
        Receiver {
            sources: self.sources,
            ledger: self.ledger,
            queue: self.queue,
            clock: self.clock,
            settings: self.settings,
            metrics: self.metrics,
            store,
            cache: self.cache,
            established: self.established,
            stored: self.stored,
            keys: self.keys,
        }
    }

    /// The same receiver reading its sources' `secretsmanager:` secrets again through
    /// `resolver` without a cold start: a pending source's until it is stored, a rotated one's
    /// ([`SECRET_RETRY_MS`], [`SECRET_MAX_AGE_MS`], [`PREVIOUS_SECRET_MS`]), as the deployed function does.
    pub fn with_secret_resolver<R: crate::config::SecretResolver + Send + Sync + 'static>(
        mut self,
        resolver: R,
    ) -> Self {
        self.stored = stored_secret::StoredSecrets::new(
            std::sync::Arc::new(resolver),
            self.sources.iter(),
            self.clock.now_ms(),
        );
        self
    }

    /// The same receiver fetching provider keys through `keys` (the Lambda function's:
    /// [`crate::key_fetch::KeyFetcher::from_env`]; tests point it at a local server).
    pub fn with_key_fetcher(mut self, keys: crate::key_fetch::KeyFetcher) -> Self {
        self.keys = keys;
        self
    }

    /// The provider keys fetched (for tests).
    pub fn key_fetcher(&self) -> &crate::key_fetch::KeyFetcher {
        &self.keys
    }

    /// Whether a payload bucket is configured.
    pub fn has_store(&self) -> bool {
        self.store.is_configured()
    }

    /// The replay cache (for tests).
    pub fn replay_cache(&self) -> &ReplayCache {
        &self.cache
    }

    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// Lambda's entry: an API Gateway HTTP API (payload v2) or function URL event.
    ///
    /// A body flagged base64 that does not decode is a 400 here, and a request whose URL
    /// `lambda_http` cannot build a 400 `malformed_request` (request::into_request): its own
    /// conversion would panic on either.
    pub async fn handle_event(
        &self,
        event: LambdaEvent<ApiGatewayV2httpRequest>,
    ) -> Result<ApiGatewayV2httpResponse, Infallible> {
        let LambdaEvent { payload, context } = event;
        let bad_base64 = payload.is_base64_encoded
            && payload
                .body
                .as_deref()
                .is_some_and(|b| base64::engine::general_purpose::STANDARD.decode(b).is_err());
        let response = if bad_base64 {
            let source = source_from(
                payload.path_parameters.get("source").map(String::as_str),
                payload.raw_path.as_deref().unwrap_or_default(),
            )
            .unwrap_or_default();
            self.reject(
                &source,
                Rejection::MalformedBody("body flagged base64 does not decode"),
            )
        } else {
            let source = source_from(
                payload.path_parameters.get("source").map(String::as_str),
                payload.raw_path.as_deref().unwrap_or_default(),
            )
            .unwrap_or_default();
            match request::into_request(payload) {
                Ok(req) => self.handle(req.with_lambda_context(context)).await,
                Err(why) => self.reject(&source, Rejection::MalformedRequest(why)),
            }
        };
        Ok(to_apigw_v2(response))
    }

    /// The HTTP contract of `POST /webhooks/{source}`.
    ///
    /// Every line logged for the request sits in a `webhook` span carrying its source, its
    /// trace id and, once derived, its key (so a rejection after the claim still names the
    /// key). The request is the trace's `inbox.receive` span, under the sender's
    /// `traceparent` where one reads ([`crate::trace`]); its spans are exported before the
    /// answer where export is on.
    #[tracing::instrument(name = "webhook", skip_all, fields(source, key, event_type, trace_id))]
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let source = source_name(&req).unwrap_or_default();
        tracing::Span::current().record("source", capped(&source, MAX_LOGGED_BYTES));
        let mut span = crate::trace::start(
            crate::trace::names::RECEIVE,
            crate::trace::Kind::Server,
            request::sender_trace(req.headers()).as_ref(),
        );
        tracing::Span::current().record("trace_id", span.context().trace_id());
        if span.is_recording() {
            span.attribute(
                crate::trace::attributes::SOURCE,
                capped(&source, MAX_LOGGED_BYTES).to_owned(),
            );
        }
        let resp = match self.process(&req, &source, span.context()).await {
            Ok(resp) => resp,
            Err(rejection) => {
                span.failed(rejection.status_and_code().1);
                self.reject(&source, rejection)
            }
        };
        span.attribute(
            crate::trace::attributes::HTTP_STATUS,
            i64::from(resp.status().as_u16()),
        );
        span.end();
        crate::trace::flush().await;
        resp
    }

    /// Counts, logs (the reason, never the body) and answers a rejection.
    fn reject(&self, source: &str, rejection: Rejection) -> Response<Body> {
        let (status, code) = rejection.status_and_code();
        // The metric's source dimension only takes configured names: a path segment
        // chosen by whoever calls must not mint new CloudWatch dimensions.
        let dimension = if self.sources.get(source).is_some() {
            source
        } else {
            UNKNOWN_SOURCE_DIMENSION
        };
        let metric = match &rejection {
            Rejection::InvalidSignature(_) => Metric::SignatureRejected,
            Rejection::SourcePending(_) => Metric::SourcePending,
            _ => Metric::Rejected,
        };
        self.metrics.count(dimension, metric);
        let source = capped(source, MAX_LOGGED_BYTES);
        // A preset may ask for another status on a signature that does not verify (Figma:
        // 400, which stops its webhook); the code stays `invalid_signature`.
        let refusal = match (&rejection, self.sources.get(source)) {
            (Rejection::InvalidSignature(_), Some(configured)) => {
                configured.spec.on_invalid_signature
            }
            _ => SignatureRefusal::Unauthorized,
        };
        let status = match refusal {
            SignatureRefusal::BadRequest => http::StatusCode::BAD_REQUEST,
            SignatureRefusal::Unauthorized => status,
        };
        warn!(source, status = status.as_u16(), error = code, reason = %rejection, outcome = LogOutcome::Rejected.as_str());
        let mut resp = rejection.into_response();
        *resp.status_mut() = status;
        resp
    }

    /// The checks in their documented order (docs/design.md §2), then the claim, then the
    /// first delivery's send or a duplicate's answer.
    async fn process(
        &self,
        req: &Request,
        source_name: &str,
        trace: &crate::trace::TraceContext,
    ) -> Result<Response<Body>, Rejection> {
        let (source, body) = match self.verified(req, source_name).await? {
            Checked::Event(source, body) => (source, body),
            Checked::Answered(resp) => {
                info!(
                    source = source_name,
                    outcome = LogOutcome::Handshake.as_str()
                );
                return Ok(resp);
            }
        };
        let body: &[u8] = &body;
        if let Some(batch) = &source.spec.batch {
            return self.process_batch(req, source, batch, body, trace).await;
        }
        let body_sha256 = key::payload_sha256(body, &source.spec.attempt_fields);
        let (key, json) = derive_key(source, req, body, &body_sha256)?;
        let event_type = source
            .spec
            .event_type
            .as_ref()
            .and_then(|spec| crate::event_type::read(spec, req.headers(), body));
        if let Some(event_type) = &event_type {
            tracing::Span::current().record("event_type", capped(event_type, MAX_LOGGED_BYTES));
        }
        tracing::Span::current().record("key", key.as_str());
        let now = self.clock.now_ms();
        // A key this instance answered 200 already: its first answer, no AWS call.
        if let Some(seen) = self.cache.get(&key, now) {
            self.check_payload(source, &key, &body_sha256, &seen)?;
            return Ok(self.replay(source, &key, &seen, "cache"));
        }
        let event = Event {
            source,
            key,
            body,
            body_sha256,
            json,
            headers: envelope_headers(source, req.headers()),
            event_type,
            measured_at: now,
            batch: None,
            trace: *trace,
            traceparent: trace.traceparent(),
        };
        let carry = self.carry(&event)?;
        if source.spec.delivery == Delivery::AtMostOnce {
            return self.accept_at_most_once(&event, carry).await;
        }
        let inv = caller(req);
        let (status, accepted) = preset_rules::accepted_answer(source, &event.key, body);
        let claim = self.claim(&event, &inv, status, &accepted);
        // A body-only source's guard and the claim are two items: written side by side, one
        // round trip for both. A guard that refuses (or fails) undoes a claim we made.
        let claimed = match source.spec.replay_guard_seconds {
            None => claim.await?,
            Some(window) => {
                let guard = self.guard_body(source_name, &event.key, &event.body_sha256, window);
                let (guarded, claimed) = futures::join!(guard, claim);
                if let Err(refused) = guarded {
                    if let Ok(None) = claimed {
                        self.release_claim(source_name, &event.key, &inv).await;
                    }
                    return Err(refused);
                }
                claimed?
            }
        };
        match claimed {
            None => self.accept_first(&event, carry, &inv).await,
            Some(existing) => self.answer_duplicate(&event, carry, &existing, &inv).await,
        }
    }

    /// Method, source, body size, signature and the body's shape, in that order: a forged
    /// request costs no AWS call (Asana's handshake and its established secret aside: one
    /// item). The source and the body as kept (a token it carried taken out), or the answer of
    /// a handshake or of a request the preset answers without a claim.
    async fn verified<'s, 'r>(
        &'s self,
        req: &'r Request,
        source_name: &str,
    ) -> Result<Checked<'s, 'r>, Rejection> {
        let source = self.sources.get(source_name);
        if req.method() != Method::POST {
            return match source.and_then(|s| handshake::get_handshake(s).map(|h| (s, h))) {
                Some((source, h)) if req.method() == Method::GET => {
                    // X's and Okta's checks sign with the source's secret: the one held now.
                    let held = if matches!(h, Handshake::X | Handshake::Okta) {
                        self.stored.held(source, self.clock.now_ms()).await?
                    } else {
                        None
                    };
                    let verifier = held.as_ref().or(source.verifier.as_ref());
                    handshake::answer_get(source, verifier, h, req, self.clock.now_secs())
                        .map(Checked::Answered)
                }
                _ => Err(Rejection::MethodNotAllowed),
            };
        }
        let source = source.ok_or(Rejection::UnknownSource)?;
        let body: &[u8] = req.body().as_ref();
        if body.len() > self.settings.max_body_bytes {
            return Err(Rejection::PayloadTooLarge("over MAX_BODY_BYTES"));
        }
        if source.spec.scheme == crate::signature::Scheme::AwsSns {
            return self.sns_verified(source, body).await;
        }
        if source.spec.scheme == crate::signature::Scheme::Paypal {
            return self.paypal_verified(source, req.headers(), body).await;
        }
        if let Some(resp) = preset_rules::woocommerce_ping(source, req) {
            return Ok(Checked::Answered(resp));
        }
        if let Some(answer) = handshake::graph_validation(source, req) {
            return answer.map(Checked::Answered);
        }
        if let Some(secret) = handshake::asana_secret(source, req) {
            return self.keep_hook_secret(source, &secret).await;
        }
        let inbound = Inbound {
            method: req.method().as_str(),
            headers: req.headers(),
            body,
            query: req.uri().query(),
            public_url: source.spec.public_url.as_deref(),
        };
        let now = self.clock.now_secs();
        // No verifier and no secret configured: the secret a handshake established (Asana's).
        let held = if source.verifier.is_none() && source.spec.secrets.is_empty() {
            let verifier = self.established_verifier(source).await?;
            verifier.verify_request(&inbound, now)?;
            Some(verifier)
        } else {
            self.stored
                .verify(source, &inbound, self.clock.now_ms(), now)
                .await?
        };
        let verifier = held.as_ref().or(source.verifier.as_ref());
        if let Some(resp) = handshake::answer_signed_post(source, verifier, req, body)? {
            return Ok(Checked::Answered(resp));
        }
        if let Some(resp) = preset_rules::answered_unclaimed(source, body) {
            return Ok(Checked::Answered(resp));
        }
        preset_rules::check_body(source, body)?;
        Ok(Checked::Event(
            source,
            preset_rules::without_body_token(source, body)?,
        ))
    }

    /// Declared at-most-once: no ledger; the queue's five-minute window is all there is.
    async fn accept_at_most_once(
        &self,
        event: &Event<'_>,
        carry: Carry,
    ) -> Result<Response<Body>, Rejection> {
        let name = event.source.spec.name.as_str();
        self.send(event, carry, event.measured_at)
            .await
            .map_err(Rejection::Internal)?;
        self.metrics.count(name, Metric::Accepted);
        info!(source = name, key = %event.key, outcome = LogOutcome::Accepted.as_str(), delivery = "at_most_once");
        let (status, answer) = preset_rules::accepted_answer(event.source, &event.key, event.body);
        Ok(stored_response(status, answer))
    }
}

/// The key, from the sender's identifier. The body is read once, where a key or group
/// pointer needs it: the values at those pointers, numbers as sent, a member twice on their
/// paths refused. Where only the group needs it and the body is not JSON, the key is the
/// group (crate::fifo).
fn derive_key(
    source: &Source,
    req: &Request,
    body: &[u8],
    body_sha256: &str,
) -> Result<(String, Option<Fields>), Rejection> {
    let spec = &source.spec;
    let json = if spec.key.needs_json()
        || spec.key.needs_form()
        || matches!(spec.group, GroupSpec::Json(_))
    {
        match key::fields(body, &spec.key, &spec.group) {
            Ok(fields) => Some(fields),
            Err(KeyError::NotJson) if !spec.key.needs_json() => None,
            Err(e) => return Err(e.into()),
        }
    } else {
        None
    };
    let key = key::derive(
        &spec.name,
        &spec.key,
        req.headers(),
        json.as_ref(),
        body_sha256,
    )?;
    Ok((key, json))
}
