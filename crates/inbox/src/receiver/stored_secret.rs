//! A source's secrets as a warm instance keeps them: read at cold start, and read again from
//! Secrets Manager, without a redeploy or a cold start, when
//!
//! - the source is `pending` and its secret was not stored yet (or not valid): at most every
//!   [`SECRET_RETRY_MS`], on a request; until then the request is 503 `source_pending`;
//! - a signature did not match and the copy is older than [`SECRET_RETRY_MS`]: a secret
//!   stored again in place (rotation) is found on the first request it signs; a storm of bad
//!   signatures makes at most one `GetSecretValue` per source every [`SECRET_RETRY_MS`];
//! - the copy is older than [`SECRET_MAX_AGE_MS`], on the next request: a secret replaced
//!   because it leaked stops verifying within that time even where no request fails.
//!
//! After a read finds other values, the previous secret still verifies for
//! [`PREVIOUS_SECRET_MS`] (a delivery signed just before the sender switched). Only sources
//! with a `secretsmanager:` secret are read again (an `env:` value is fixed at deploy), and only
//! where the receiver was given a resolver ([`super::Receiver::with_secret_resolver`], as the
//! deployed function is). A read is stamped before it is made, so concurrent requests make one.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::{info, warn};

use crate::config::{
    secret_values, secrets_digest, verifier_from, SecretRef, SecretResolver, Source,
    SOURCE_PENDING_CODE,
};
use crate::signature::{Inbound, SignatureError, Verifier};

use super::answer::Rejection;

/// A pending source, or one whose signature did not match, reads its secret again at most
/// this often (per instance): five seconds.
pub const SECRET_RETRY_MS: i64 = 5_000;
/// A verifying source's copy is read again on the first request after this age: five minutes.
pub const SECRET_MAX_AGE_MS: i64 = 300_000;
/// How long the previous secret still verifies after a read found a new one: five minutes.
pub const PREVIOUS_SECRET_MS: i64 = 300_000;

/// Reads a source's secret values (an object-safe [`SecretResolver`]).
pub trait ReadSecrets: Send + Sync {
    fn read<'a>(
        &'a self,
        references: &'a [SecretRef],
    ) -> Pin<Box<dyn Future<Output = Result<Vec<String>, String>> + Send + 'a>>;
}

impl<R: SecretResolver + Send + Sync> ReadSecrets for R {
    fn read<'a>(
        &'a self,
        references: &'a [SecretRef],
    ) -> Pin<Box<dyn Future<Output = Result<Vec<String>, String>> + Send + 'a>> {
        Box::pin(secret_values(references, self))
    }
}

/// One source's secrets as this instance holds them.
struct Held {
    /// `None`: a pending source, not stored yet.
    verifier: Option<Verifier>,
    /// [`secrets_digest`] of the values held (empty: none).
    digest: String,
    /// The verifier of the values before the last change, and until when it verifies.
    previous: Option<(Verifier, i64)>,
    /// When the values were last read, or a read last tried.
    read_at: i64,
}

/// Every re-readable source's [`Held`], and the resolver that reads them again.
#[derive(Default)]
pub(super) struct StoredSecrets {
    reader: Option<Arc<dyn ReadSecrets>>,
    held: Mutex<HashMap<String, Held>>,
}

/// Why a read is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Pending,
    Mismatch,
    Age,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Pending => "pending",
            Reason::Mismatch => "signature_mismatch",
            Reason::Age => "max_age",
        }
    }
}

impl StoredSecrets {
    /// With `reader`, each source with a `secretsmanager:` secret is read again as the module
    /// says, its copy counted as read at `now_ms`.
    pub(super) fn new<'a>(
        reader: Arc<dyn ReadSecrets>,
        sources: impl Iterator<Item = &'a Source>,
        now_ms: i64,
    ) -> Self {
        let held = sources
            .filter(|s| re_readable(s))
            .map(|s| {
                (
                    s.spec.name.clone(),
                    Held {
                        verifier: s.verifier.clone(),
                        digest: s.secrets_digest.clone(),
                        previous: None,
                        read_at: now_ms,
                    },
                )
            })
            .collect();
        StoredSecrets {
            reader: Some(reader),
            held: Mutex::new(held),
        }
    }

    /// Verifies `inbound` for `source` (a source with configured secrets): with its held
    /// copy, read again where the module says; the verifier that passed it where it is not
    /// the start-up one (`None`: `source.verifier` did). A pending source not stored yet is
    /// 503.
    pub(super) async fn verify(
        &self,
        source: &Source,
        inbound: &Inbound<'_>,
        now_ms: i64,
        now_secs: i64,
    ) -> Result<Option<Verifier>, Rejection> {
        let name = source.spec.name.as_str();
        let Some(reader) = self.reader.as_deref().filter(|_| re_readable(source)) else {
            return match &source.verifier {
                Some(verifier) => {
                    verifier.verify_request(inbound, now_secs)?;
                    Ok(None)
                }
                None => Err(pending(name, "its secret was not stored at start-up")),
            };
        };
        let (verifier, previous) = self.current(reader, source, now_ms).await?;
        let first = verifier.verify_request(inbound, now_secs);
        let Err(SignatureError::Mismatch) = first else {
            first?;
            return Ok(Some(verifier));
        };
        if let Some(previous) = previous {
            if previous.verify_request(inbound, now_secs).is_ok() {
                return Ok(Some(previous));
            }
        }
        if !self.is_due(name, now_ms, SECRET_RETRY_MS) {
            return Err(SignatureError::Mismatch.into());
        }
        match self.read(reader, source, Reason::Mismatch, now_ms).await {
            Ok(fresh) => {
                fresh.verify_request(inbound, now_secs)?;
                Ok(Some(fresh))
            }
            Err(_) => Err(SignatureError::Mismatch.into()),
        }
    }

    /// The verifier held for `source` now, for a check that signs with it (X's and Okta's
    /// `GET`): a pending source's read where due, 503 while it waits; `None` where the
    /// start-up one stands (not re-readable, or no resolver).
    pub(super) async fn held(
        &self,
        source: &Source,
        now_ms: i64,
    ) -> Result<Option<Verifier>, Rejection> {
        let name = source.spec.name.as_str();
        let Some(reader) = self.reader.as_deref().filter(|_| re_readable(source)) else {
            return match &source.verifier {
                None if source.awaiting() => {
                    Err(pending(name, "its secret was not stored at start-up"))
                }
                _ => Ok(None),
            };
        };
        self.current(reader, source, now_ms)
            .await
            .map(|(verifier, _)| Some(verifier))
    }

    /// The verifier held now and the previous one while it still verifies: a pending
    /// source's read where due (503 while it waits), an old copy read again (kept where the
    /// read fails).
    async fn current(
        &self,
        reader: &dyn ReadSecrets,
        source: &Source,
        now_ms: i64,
    ) -> Result<(Verifier, Option<Verifier>), Rejection> {
        let name = source.spec.name.as_str();
        let (held, previous, due) = self.snapshot(name, now_ms);
        let verifier = match (held, due) {
            (None, Some(_)) => self
                .read(reader, source, Reason::Pending, now_ms)
                .await
                .map_err(|why| pending(name, &why))?,
            (None, None) => return Err(pending(name, "read again within seconds")),
            (Some(held), Some(Reason::Age)) => self
                .read(reader, source, Reason::Age, now_ms)
                .await
                .unwrap_or(held),
            (Some(held), _) => held,
        };
        Ok((verifier, previous))
    }

    /// The held verifier, the previous one while it verifies, and whether a read is due now
    /// (a pending source's, or an old copy's), under the lock.
    fn snapshot(
        &self,
        name: &str,
        now_ms: i64,
    ) -> (Option<Verifier>, Option<Verifier>, Option<Reason>) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(h) = held.get_mut(name) else {
            return (None, None, None);
        };
        if h.previous
            .as_ref()
            .is_some_and(|(_, until)| *until <= now_ms)
        {
            h.previous = None;
        }
        let age = now_ms.saturating_sub(h.read_at);
        let due = match &h.verifier {
            None if age >= SECRET_RETRY_MS => Some(Reason::Pending),
            Some(_) if age >= SECRET_MAX_AGE_MS => Some(Reason::Age),
            _ => None,
        };
        if due.is_some() {
            // Stamped before the read: concurrent requests do not read too.
            h.read_at = now_ms;
        }
        (
            h.verifier.clone(),
            h.previous.as_ref().map(|(v, _)| v.clone()),
            due,
        )
    }

    /// Whether the copy is at least `min_age_ms` old; if so, stamped as read now.
    fn is_due(&self, name: &str, now_ms: i64, min_age_ms: i64) -> bool {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        match held.get_mut(name) {
            Some(h) if now_ms.saturating_sub(h.read_at) >= min_age_ms => {
                h.read_at = now_ms;
                true
            }
            _ => false,
        }
    }

    /// Reads the source's secrets: the verifier of what was read, kept (the one before it
    /// kept as previous where the values changed), or why not (logged, never a value).
    async fn read(
        &self,
        reader: &dyn ReadSecrets,
        source: &Source,
        reason: Reason,
        now_ms: i64,
    ) -> Result<Verifier, String> {
        let name = source.spec.name.as_str();
        let read = reader.read(&source.spec.secrets).await;
        let built = read.and_then(|values| {
            let digest = secrets_digest(&values);
            verifier_from(&source.spec, values).map(|v| (v, digest))
        });
        let (verifier, digest) = match built {
            Ok(built) => built,
            Err(why) => {
                warn!(
                    source = name,
                    reason = reason.as_str(),
                    error = if reason == Reason::Pending { SOURCE_PENDING_CODE } else { "secret_unreadable" },
                    why = %why,
                    "secret read again: not usable, the copy held is kept"
                );
                return Err(why);
            }
        };
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(h) = held.get_mut(name) else {
            return Ok(verifier);
        };
        if h.digest != digest {
            let was = match h.verifier.take() {
                Some(old) => {
                    h.previous = Some((old, now_ms.saturating_add(PREVIOUS_SECRET_MS)));
                    "changed"
                }
                None => "stored",
            };
            info!(
                source = name,
                reason = reason.as_str(),
                secret = was,
                "secret read again: the source verifies with it"
            );
        }
        h.verifier = Some(verifier.clone());
        h.digest = digest;
        Ok(verifier)
    }
}

/// A source whose secrets a running instance can see change: one `secretsmanager:` at least.
fn re_readable(source: &Source) -> bool {
    source
        .spec
        .secrets
        .iter()
        .any(|s| matches!(s, SecretRef::SecretsManager(_)))
}

fn pending(name: &str, why: &str) -> Rejection {
    Rejection::SourcePending(format!(
        "source `{name}` has no usable secret yet ({why}); store it: inbox-ops secret set {name}"
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::config::{AwsSecretResolver, SourceSpecs};

    /// A Secrets Manager stand-in: nothing stored until a value is put; reads counted.
    #[derive(Default)]
    struct Store {
        value: Mutex<Option<String>>,
        reads: AtomicU64,
    }

    impl SecretResolver for Arc<Store> {
        async fn resolve(&self, _: &SecretRef) -> Result<String, String> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.value
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
                .ok_or_else(|| "no value stored".to_owned())
        }
    }

    /// The secret X's `GET` check signs with, for a pending X source: 503 while nothing is
    /// stored, read at most every SECRET_RETRY_MS, then the stored one.
    #[tokio::test]
    async fn the_held_secret_of_a_pending_source_is_read_at_most_every_retry_interval() {
        let sources = SourceSpecs::parse(
            r#"{"x": {"preset": "x", "pending": true, "signature": {"secrets": ["secretsmanager:webhook-inbox/x"]}}}"#,
        )
        .unwrap()
        .resolve(&AwsSecretResolver::env_only())
        .await
        .unwrap();
        let source = sources.get("x").unwrap();
        assert!(source.awaiting());
        let without = StoredSecrets::default();
        assert!(matches!(
            without.held(source, 0).await,
            Err(Rejection::SourcePending(_))
        ));
        let store = Arc::new(Store::default());
        let stored = StoredSecrets::new(Arc::new(store.clone()), sources.iter(), 0);
        let is_pending = |r: &Result<Option<Verifier>, Rejection>| matches!(r, Err(Rejection::SourcePending(why)) if why.contains("inbox-ops secret set x"));
        assert!(is_pending(&stored.held(source, 1).await));
        assert_eq!(store.reads.load(Ordering::SeqCst), 0);
        assert!(is_pending(&stored.held(source, SECRET_RETRY_MS).await));
        assert_eq!(store.reads.load(Ordering::SeqCst), 1);
        *store.value.lock().unwrap() = Some("an-x-consumer-secret-of-some-length".to_owned());
        assert!(is_pending(&stored.held(source, SECRET_RETRY_MS + 1).await));
        assert_eq!(store.reads.load(Ordering::SeqCst), 1, "within the bound");
        let held = stored.held(source, 2 * SECRET_RETRY_MS).await.unwrap();
        let mac = held.expect("the stored secret").handshake_mac(b"token");
        assert!(mac.is_some());
        assert_eq!(store.reads.load(Ordering::SeqCst), 2);
        // Held now: no read until the copy is SECRET_MAX_AGE_MS old.
        assert!(stored.held(source, 3 * SECRET_RETRY_MS).await.is_ok());
        assert_eq!(store.reads.load(Ordering::SeqCst), 2);
        assert!(stored
            .held(source, 2 * SECRET_RETRY_MS + SECRET_MAX_AGE_MS)
            .await
            .is_ok());
        assert_eq!(store.reads.load(Ordering::SeqCst), 3);
    }
}
