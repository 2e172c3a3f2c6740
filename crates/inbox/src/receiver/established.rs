//! The secret a handshake establishes (Asana's `X-Hook-Secret`): kept once in the ledger
//! table, and only inside a window an operator opened (`inbox-ops handshake open`;
//! docs/providers.md, "asana"), and the verifier made from it, read again by a warm instance
//! after [`ESTABLISHED_SECRET_MAX_AGE_MS`] (so a secret an operator deleted stops verifying).

use tracing::info;

use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::config::Source;
use crate::ledger::LedgerStore;
use crate::queue::Queue;
use crate::signature::{SignatureError, Verifier};

use super::answer::Rejection;
use super::{handshake, Checked, Receiver};

/// How long a warm instance trusts the established secret it read: five minutes.
pub(super) const ESTABLISHED_SECRET_MAX_AGE_MS: i64 = 300_000;

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// Asana's handshake: the secret kept once, inside the window an operator opened (the
    /// first handshake's stays), echoed. A later handshake is answered only with the kept
    /// secret; another, or one with no window open, is a 401.
    pub(super) async fn keep_hook_secret<'s, 'r>(
        &self,
        source: &Source,
        secret: &str,
    ) -> Result<Checked<'s, 'r>, Rejection> {
        let name = source.spec.name.as_str();
        let kept = self
            .ledger
            .keep_hook_secret(name, secret, self.clock.now_ms())
            .await
            .map_err(|e| Rejection::Internal(e.to_string()))?;
        if !kept {
            let stored = self
                .ledger
                .hook_secret(name)
                .await
                .map_err(|e| Rejection::Internal(e.to_string()))?
                .unwrap_or_default();
            let same: bool =
                subtle::ConstantTimeEq::ct_eq(stored.as_bytes(), secret.as_bytes()).into();
            if !same {
                return Err(Rejection::InvalidSignature(SignatureError::Mismatch));
            }
        }
        info!(source = name, kept, "handshake secret kept");
        handshake::asana_answer(secret).map(Checked::Answered)
    }

    /// The verifier of the secret a handshake established, read again once the warm
    /// instance's copy is [`ESTABLISHED_SECRET_MAX_AGE_MS`] old; no secret kept is a 401.
    pub(super) async fn established_verifier(
        &self,
        source: &Source,
    ) -> Result<Verifier, Rejection> {
        let name = source.spec.name.as_str();
        let now = self.clock.now_ms();
        let fresh = |(verifier, read_at): &(Verifier, i64)| {
            (now.saturating_sub(*read_at) < ESTABLISHED_SECRET_MAX_AGE_MS).then(|| verifier.clone())
        };
        let cached = match self.established.lock() {
            Ok(map) => map.get(name).and_then(fresh),
            Err(poisoned) => poisoned.into_inner().get(name).and_then(fresh),
        };
        if let Some(verifier) = cached {
            return Ok(verifier);
        }
        let secret = self
            .ledger
            .hook_secret(name)
            .await
            .map_err(|e| Rejection::Internal(e.to_string()))?
            .ok_or(Rejection::InvalidSignature(SignatureError::Mismatch))?;
        let verifier = source
            .verifier_with(secret)
            .map_err(|_| Rejection::InvalidSignature(SignatureError::Mismatch))?;
        let entry = (verifier.clone(), now);
        match self.established.lock() {
            Ok(mut map) => map.insert(name.to_owned(), entry),
            Err(poisoned) => poisoned.into_inner().insert(name.to_owned(), entry),
        };
        Ok(verifier)
    }
}
