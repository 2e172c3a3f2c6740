//! The call: claim, run, complete (or release, or record the failure), replay.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tracing::{debug, info, warn};

use crate::cache::{Cached, ResultCache};
use crate::key::{payload_sha256, Key};
use crate::machine::{decide, expires_at, lease_until_ms, Claim, ClaimOutcome, Found};
use crate::store::{Store, StoreError};

/// The lease of a call without a deadline: 60 s.
pub const FALLBACK_LEASE_MS: i64 = 60_000;

/// How long a key is remembered by default: one day.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// When the caller's invocation ends: its lease runs to it, so that a call whose invocation
/// timed out never leaves its key held past that moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deadline {
    deadline_ms: Option<i64>,
    request_id: Option<String>,
}

impl Deadline {
    /// A deadline at `epoch_ms` (epoch milliseconds).
    pub fn at_epoch_ms(epoch_ms: i64) -> Deadline {
        Deadline {
            deadline_ms: Some(epoch_ms).filter(|d| *d > 0),
            request_id: None,
        }
    }

    /// No deadline (outside Lambda): the lease runs [`Idempotency::fallback_lease`].
    pub fn none() -> Deadline {
        Deadline::default()
    }

    /// With the invocation's request id, which then starts each lease owner (for logs).
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Deadline {
        self.request_id = Some(request_id.into()).filter(|id| !id.is_empty());
        self
    }

    /// The deadline in epoch milliseconds, if any.
    pub fn epoch_ms(&self) -> Option<i64> {
        self.deadline_ms
    }
}

#[cfg(feature = "lambda")]
#[cfg_attr(docsrs, doc(cfg(feature = "lambda")))]
impl From<&lambda_runtime::Context> for Deadline {
    /// The invocation's deadline and request id (a hand-built context without a deadline
    /// gives none).
    fn from(context: &lambda_runtime::Context) -> Deadline {
        let deadline = i64::try_from(context.deadline).unwrap_or(0);
        Deadline::at_epoch_ms(deadline).with_request_id(context.request_id.clone())
    }
}

/// What to do with a key whose call failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// Delete the claim (guarded on the caller's own lease): the next call runs anew.
    #[default]
    Release,
    /// Keep the record as FAILED with the error as `last_error`; the next call's claim takes
    /// it over.
    Record,
}

/// What a call returned: the result, and whether it was replayed from the first call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<R> {
    /// The result: this call's, or the first call's when replayed.
    pub value: R,
    /// `true` when the function did not run and the stored result was returned.
    pub replayed: bool,
}

/// Why a call did not return a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error<E> {
    /// The key was first used with another payload: a different operation under one key.
    #[error("idempotency key {key} was first used with another payload")]
    PayloadMismatch {
        /// The key.
        key: String,
    },
    /// Another call holds the key and may still be running: retry after `retry_after`.
    #[error("idempotency key {key} is in flight; retry after {retry_after:?}")]
    InFlight {
        /// The key.
        key: String,
        /// Until the holder's lease runs out (at least one second).
        retry_after: Duration,
    },
    /// The store did not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The result could not be stored as JSON, or the stored one could not be read back.
    #[error("idempotency key {key}: result (de)serialisation: {source}")]
    Result {
        /// The key.
        key: String,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The function failed; its claim was released or its failure recorded.
    #[error("the idempotent function failed: {0}")]
    Handler(E),
}

/// An idempotency configuration over a store: retention, fallback lease, failure policy,
/// optional in-process cache and key prefix. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Idempotency<S> {
    store: S,
    retention_s: u64,
    fallback_lease_ms: i64,
    on_failure: OnFailure,
    cache: Option<ResultCache>,
    prefix: String,
    clock: Clock,
}

/// The clock (epoch milliseconds), replaceable for tests.
#[derive(Clone)]
struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

impl Clock {
    fn now_ms(&self) -> i64 {
        (self.0)()
    }
}

/// Epoch milliseconds now, from the system clock.
pub fn system_now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A lease owner unique to this call: the request id (where known) and a per-process nonce
/// and counter, so that two calls of one invocation (two records of a batch) never share one.
fn new_owner(deadline: &Deadline) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static NONCE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let nonce = NONCE.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::UNIX_EPOCH
                .elapsed()
                .unwrap_or_default()
                .as_nanos(),
        );
        h.write_u32(std::process::id());
        h.finish()
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let id = deadline.request_id.as_deref().unwrap_or("call");
    format!("{id}:{nonce:016x}:{n}")
}

impl<S: Store> Idempotency<S> {
    /// Over `store`, with the defaults: [`DEFAULT_RETENTION`], [`FALLBACK_LEASE_MS`],
    /// [`OnFailure::Release`], no cache, no prefix.
    pub fn new(store: S) -> Self {
        Idempotency {
            store,
            retention_s: DEFAULT_RETENTION.as_secs(),
            fallback_lease_ms: FALLBACK_LEASE_MS,
            on_failure: OnFailure::Release,
            cache: None,
            prefix: String::new(),
            clock: Clock(Arc::new(system_now_ms)),
        }
    }

    /// How long a key is remembered (whole seconds; the record's `expires_at`). It must
    /// outlast every retry of the operation, the sender's and the queue's.
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention_s = retention.as_secs().max(1);
        self
    }

    /// The lease of a call without a deadline.
    pub fn fallback_lease(mut self, lease: Duration) -> Self {
        self.fallback_lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4);
        self
    }

    /// What a failed call leaves behind.
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_failure = on_failure;
        self
    }

    /// An in-process cache of completed results, at most `max_bytes`.
    pub fn cache_bytes(mut self, max_bytes: usize) -> Self {
        self.cache = Some(ResultCache::new(max_bytes));
        self
    }

    /// Every key stored as `<prefix>:<key>`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The clock (epoch milliseconds), [`system_now_ms`] by default; for tests.
    pub fn clock(mut self, now_ms: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        self.clock = Clock(Arc::new(now_ms));
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The cache, if one was asked for.
    pub fn result_cache(&self) -> Option<&ResultCache> {
        self.cache.as_ref()
    }

    /// Runs `f` once per key: the first call runs it and stores its result; every later call
    /// with the same payload gets that result back (`replayed`), one with another payload
    /// [`Error::PayloadMismatch`], one while the first is in flight [`Error::InFlight`].
    pub async fn run<R, E, F, Fut>(
        &self,
        key: &Key,
        payload: &[u8],
        deadline: &Deadline,
        f: F,
    ) -> Result<Outcome<R>, Error<E>>
    where
        R: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<R, E>>,
        E: std::fmt::Display,
    {
        let pk = key.prefixed(&self.prefix);
        let sha = payload_sha256(payload);
        if let Some(replayed) = self.cached(&pk, &sha)? {
            return Ok(replayed);
        }
        let claim = match self.claim_key(&pk, &sha, deadline).await {
            Ok(claim) => claim,
            Err(ClaimRefused::Replayed(outcome)) => return Ok(outcome),
            Err(ClaimRefused::Error(err)) => return Err(err),
        };
        debug!(key = %pk, owner = %claim.owner, "idempotency: claimed, running");
        match f().await {
            Ok(value) => self.finish(&claim, value).await,
            Err(err) => Err(self.failed(&claim, err).await),
        }
    }

    fn cached<R: DeserializeOwned, E>(
        &self,
        pk: &str,
        sha: &str,
    ) -> Result<Option<Outcome<R>>, Error<E>> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        match cache.get(pk, sha, self.clock.now_ms()) {
            None => Ok(None),
            Some(Cached::Mismatch) => {
                warn!(key = %pk, "idempotency: payload differs from the first call's (cache)");
                Err(Error::PayloadMismatch { key: pk.to_owned() })
            }
            Some(Cached::Hit(result)) => {
                info!(key = %pk, "idempotency: replayed from the in-process cache");
                decode(pk, &result).map(Some)
            }
        }
    }

    /// Claims the key: `Ok(claim)` to run, or the duplicate's answer as `Err`.
    async fn claim_key<R: DeserializeOwned, E>(
        &self,
        pk: &str,
        sha: &str,
        deadline: &Deadline,
    ) -> Result<Claim, ClaimRefused<R, E>> {
        let now_ms = self.clock.now_ms();
        let claim = Claim {
            key: pk.to_owned(),
            owner: new_owner(deadline),
            payload_sha256: sha.to_owned(),
            now_ms,
            lease_until_ms: lease_until_ms(now_ms, deadline.epoch_ms(), self.fallback_lease_ms),
            expires_at: expires_at(now_ms, self.retention_s),
        };
        let mut outcome = self.store.claim(&claim).await.map_err(Error::Store)?;
        // One claim takes the key in every state it may be taken in (absent, expired,
        // abandoned, failed), so a refusal that carried its record is final. Where the record
        // was read after the refusal instead (a server without `ALL_OLD`), it may have been
        // deleted or abandoned since: claim again. Three rounds at most.
        for _ in 0..3 {
            let existing = match outcome {
                ClaimOutcome::Claimed => return Ok(claim),
                ClaimOutcome::Exists(existing) => existing,
            };
            outcome = match decide(&existing, sha, now_ms) {
                Found::Absent | Found::Reclaim => {
                    info!(key = %pk, status = %existing.status, attempts = existing.attempts,
                        "idempotency: the record changed since the refusal; claiming again");
                    self.store.claim(&claim).await.map_err(Error::Store)?
                }
                found => {
                    // A result replayed from the store is kept for this instance's next
                    // duplicate too.
                    if let (Found::Completed(Some(result)), Some(cache)) = (&found, &self.cache) {
                        cache.put(pk, sha, result, existing.expires_at);
                    }
                    return Err(self.refused(pk, found, now_ms));
                }
            };
        }
        match outcome {
            ClaimOutcome::Claimed => Ok(claim),
            ClaimOutcome::Exists(existing) => {
                let retry_after = Duration::from_secs(1);
                warn!(key = %pk, status = %existing.status, "idempotency: the key keeps changing hands");
                Err(ClaimRefused::Error(Error::InFlight {
                    key: pk.to_owned(),
                    retry_after,
                }))
            }
        }
    }

    fn refused<R: DeserializeOwned, E>(
        &self,
        pk: &str,
        found: Found,
        now_ms: i64,
    ) -> ClaimRefused<R, E> {
        match found {
            Found::PayloadMismatch => {
                warn!(key = %pk, "idempotency: payload differs from the first call's");
                Error::PayloadMismatch { key: pk.to_owned() }.into()
            }
            Found::InFlight { lease_until } => {
                let ms = u64::try_from(lease_until.saturating_sub(now_ms)).unwrap_or(0);
                let retry_after = Duration::from_secs(ms.div_ceil(1000).max(1));
                info!(key = %pk, lease_until, "idempotency: in flight, not run");
                Error::InFlight {
                    key: pk.to_owned(),
                    retry_after,
                }
                .into()
            }
            Found::Completed(result) => {
                info!(key = %pk, "idempotency: completed before, result replayed");
                let result = result.unwrap_or_else(|| "null".to_owned());
                match decode(pk, &result) {
                    Ok(outcome) => ClaimRefused::Replayed(outcome),
                    Err(e) => e.into(),
                }
            }
            Found::Absent | Found::Reclaim => Error::InFlight {
                key: pk.to_owned(),
                retry_after: Duration::from_secs(1),
            }
            .into(),
        }
    }

    async fn finish<R: Serialize, E>(
        &self,
        claim: &Claim,
        value: R,
    ) -> Result<Outcome<R>, Error<E>> {
        let pk = &claim.key;
        let json = match serde_json::to_string(&value) {
            Ok(json) => json,
            Err(source) => {
                self.give_up(claim, &format!("result not serialisable: {source}"))
                    .await;
                return Err(Error::Result {
                    key: pk.clone(),
                    source,
                });
            }
        };
        let now_ms = self.clock.now_ms();
        if self.store.complete(pk, &claim.owner, &json, now_ms).await? {
            debug!(key = %pk, "idempotency: completed, result stored");
            if let Some(cache) = &self.cache {
                cache.put(pk, &claim.payload_sha256, &json, claim.expires_at);
            }
        } else {
            // The lease ran out while the function ran and another call claimed the key:
            // its record is left alone. The result is still this call's to return.
            warn!(key = %pk, owner = %claim.owner, "idempotency: lease lost before completion; result not stored");
        }
        Ok(Outcome {
            value,
            replayed: false,
        })
    }

    async fn failed<E: std::fmt::Display>(&self, claim: &Claim, err: E) -> Error<E> {
        self.give_up(claim, &err.to_string()).await;
        Error::Handler(err)
    }

    /// Releases the claim or records its failure, per [`OnFailure`]; a store error here is
    /// logged (the lease frees the key at the deadline anyway).
    async fn give_up(&self, claim: &Claim, reason: &str) {
        let pk = &claim.key;
        let done = match self.on_failure {
            OnFailure::Release => self.store.release(pk, &claim.owner).await,
            OnFailure::Record => {
                let now_ms = self.clock.now_ms();
                self.store.fail(pk, &claim.owner, reason, now_ms).await
            }
        };
        match done {
            Ok(true) => {
                info!(key = %pk, on_failure = ?self.on_failure, error = %reason, "idempotency: call failed, claim given up")
            }
            Ok(false) => {
                warn!(key = %pk, error = %reason, "idempotency: call failed after its lease was lost; record left alone")
            }
            Err(e) => {
                warn!(key = %pk, error = %reason, store_error = %e, "idempotency: call failed; giving up the claim failed too (its lease frees it)")
            }
        }
    }
}

/// A claim that did not give the key: the stored result, or an error.
enum ClaimRefused<R, E> {
    Replayed(Outcome<R>),
    Error(Error<E>),
}

impl<R, E> From<Error<E>> for ClaimRefused<R, E> {
    fn from(e: Error<E>) -> Self {
        ClaimRefused::Error(e)
    }
}

fn decode<R: DeserializeOwned, E>(pk: &str, json: &str) -> Result<Outcome<R>, Error<E>> {
    serde_json::from_str(json)
        .map(|value| Outcome {
            value,
            replayed: true,
        })
        .map_err(|source| Error::Result {
            key: pk.to_owned(),
            source,
        })
}

/// [`Idempotency::run`] with the defaults over `store`: one line around any async function.
pub async fn idempotent<S, R, E, F, Fut>(
    store: &S,
    key: &Key,
    payload: &[u8],
    deadline: &Deadline,
    f: F,
) -> Result<Outcome<R>, Error<E>>
where
    S: Store + Clone,
    R: Serialize + DeserializeOwned,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<R, E>>,
    E: std::fmt::Display,
{
    Idempotency::new(store.clone())
        .run(key, payload, deadline, f)
        .await
}
