//! The secret a handshake establishes (Asana's `X-Hook-Secret`): kept once in the ledger
//! table (docs/providers.md, "asana"), and the verifier made from it, read once per warm
//! instance.

use tracing::info;

use crate::clock::Clock;
use crate::config::Source;
use crate::ledger::LedgerStore;
use crate::queue::Queue;
use crate::signature::{SignatureError, Verifier};
use crate::store::ObjectStore;

use super::answer::Rejection;
use super::{handshake, Checked, Receiver};

impl<L: LedgerStore, Q: Queue, C: Clock, S: ObjectStore> Receiver<L, Q, C, S> {
    /// Asana's handshake: the secret kept once (the first handshake's stays), echoed. A
    /// second handshake is answered only with the kept secret; another is a 401.
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

    /// The verifier of the secret a handshake established, read once per warm instance; no
    /// secret kept yet is a 401.
    pub(super) async fn established_verifier(
        &self,
        source: &Source,
    ) -> Result<Verifier, Rejection> {
        let name = source.spec.name.as_str();
        let cached = match self.established.lock() {
            Ok(map) => map.get(name).cloned(),
            Err(poisoned) => poisoned.into_inner().get(name).cloned(),
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
        match self.established.lock() {
            Ok(mut map) => map.insert(name.to_owned(), verifier.clone()),
            Err(poisoned) => poisoned
                .into_inner()
                .insert(name.to_owned(), verifier.clone()),
        };
        Ok(verifier)
    }
}
