//! The ledger the real handlers get: the `MemoryLedger` behind the ledger port, one yield per
//! call, with injected failures before a call (nothing written) and after it (the answer lost),
//! and the mutants that plant a wrong answer for the self-test.

use std::sync::Arc;

use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::{
    BodyGuard, Claim, ClaimOutcome, GuardOutcome, LedgerStore, Record, StoreError, Take,
    TakeOutcome,
};

use crate::faults::{Fault, Mutant};
use crate::world::{lock, step, Shared, HELD_REASON};
use rand::Rng;
/// The `MemoryLedger`, one yield per call, with injected failures before and after a call.
#[derive(Clone)]
pub(crate) struct SimLedger {
    pub(crate) inner: Arc<MemoryLedger>,
    pub(crate) world: Shared,
}

impl SimLedger {
    pub(crate) fn fault(&self, op: &'static str, key: &str) -> Fault {
        let mut w = lock(&self.world);
        w.called(op);
        let (before, after) = (w.rates.ledger_before, w.rates.ledger_after);
        let f = w.roll(before, after);
        if f == Fault::Before {
            w.log(format!(
                "  ledger {op} {key}: store error (nothing written)"
            ));
        }
        f
    }

    pub(crate) fn answer<T: std::fmt::Debug>(
        &self,
        op: &str,
        who: &str,
        f: Fault,
        out: T,
    ) -> Result<T, StoreError> {
        let mut w = lock(&self.world);
        if f == Fault::After {
            w.log(format!(
                "  ledger {op} {who} -> {out:?}, answer lost (store error)"
            ));
            Err(StoreError::Unavailable("injected: answer lost".into()))
        } else {
            w.log(format!("  ledger {op} {who} -> {out:?}"));
            Ok(out)
        }
    }
}

pub(crate) fn injected() -> StoreError {
    StoreError::Unavailable("injected: store error".into())
}

impl LedgerStore for SimLedger {
    /// No simulated source has a handshake: the in-memory secrets, unfaulted.
    async fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.inner.keep_hook_secret(source, secret, now_ms).await
    }
    async fn hook_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        self.inner.hook_secret(source).await
    }
    async fn open_handshake(&self, source: &str, until_s: i64) -> Result<bool, StoreError> {
        self.inner.open_handshake(source, until_s).await
    }
    /// No simulated source has a replay guard: the in-memory guard, unfaulted.
    async fn guard_body(&self, g: &BodyGuard, now_ms: i64) -> Result<GuardOutcome, StoreError> {
        self.inner.guard_body(g, now_ms).await
    }

    /// The simulated queue carries only the receiver's envelopes: nothing is ever refused.
    async fn note_refusal(&self, key: &str, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        self.inner.note_refusal(key, reason, now_ms).await
    }

    async fn claim(&self, c: &Claim) -> Result<ClaimOutcome, StoreError> {
        step().await;
        let f = self.fault("claim", &c.key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self.inner.claim(c).await?;
        let shown = match &out {
            ClaimOutcome::Claimed => "Claimed".to_owned(),
            ClaimOutcome::Exists(r) => format!("Exists({:?})", r.status),
        };
        self.answer("claim", &format!("{} by {}", c.key, c.owner), f, shown)?;
        Ok(out)
    }

    /// The receiver's mark before a duplicate's send behind a live claim, faulted as the
    /// other receiver writes.
    async fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> Result<Option<Option<Record>>, StoreError> {
        step().await;
        let f = self.fault("mark_resent", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self
            .inner
            .mark_resent(key, owner, payload_sha256, now_ms)
            .await?;
        let shown = match &out {
            None => "Marked".to_owned(),
            Some(None) => "Absent".to_owned(),
            Some(Some(r)) => format!("Refused({:?})", r.status),
        };
        self.answer("mark_resent", &format!("{key} by {owner}"), f, shown)?;
        Ok(out)
    }

    /// The simulation sends no replays: the in-memory write, unfaulted.
    async fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.inner
            .request_replay(key, payload_sha256, replay_id, now_ms)
            .await
    }

    async fn release(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        step().await;
        let f = self.fault("release", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self.inner.release(key, owner, now_ms).await?;
        self.answer("release", &format!("{key} by {owner}"), f, out)
    }

    async fn take(&self, t: &Take) -> Result<TakeOutcome, StoreError> {
        lock(&self.world).check_gate(&t.key, &t.owner);
        step().await;
        let f = self.fault("take", &t.key);
        if f == Fault::Before {
            return Err(injected());
        }
        let mut out = self.inner.take(t).await?;
        let mutant = lock(&self.world).mutant;
        if mutant == Mutant::TakeIgnoresCompleted && out == TakeOutcome::Completed {
            out = TakeOutcome::Taken { attempts: 99 };
        }
        let pair = t.key.contains(' ');
        if pair && mutant == Mutant::LegIgnoresCompleted && out == TakeOutcome::Completed {
            out = TakeOutcome::Taken { attempts: 99 };
        }
        if pair && mutant == Mutant::LegSkipsPending && matches!(out, TakeOutcome::Taken { .. }) {
            let mut w = lock(&self.world);
            if w.frng.random_bool(0.3) {
                w.log(format!("  (mutant: {} skipped)", t.key));
                out = TakeOutcome::Completed;
            }
        }
        if mutant == Mutant::TakeIgnoresLiveLease && matches!(out, TakeOutcome::Busy { .. }) {
            if let Some(r) = self.inner.get(&t.key).await? {
                let live = r.lease_until.is_some_and(|until| until >= t.now_ms);
                if r.status == inbox::ledger::Status::Processing && live {
                    out = TakeOutcome::Taken {
                        attempts: r.attempts + 1,
                    };
                }
            }
        }
        self.answer("take", &format!("{} by {}", t.key, t.owner), f, out)
    }

    async fn complete(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        step().await;
        let f = self.fault("complete", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self.inner.complete(key, owner, now_ms).await?;
        if out {
            let expires_at = self
                .inner
                .get(key)
                .await?
                .map(|r| r.expires_at)
                .unwrap_or(0);
            let mut w = lock(&self.world);
            if w.remembered_completion(key) {
                w.violation(format!(
                    "{key} COMPLETED a second time while the first is remembered"
                ));
            }
            w.completions
                .entry(key.to_owned())
                .or_default()
                .push(expires_at);
        }
        self.answer("complete", &format!("{key} by {owner}"), f, out)
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        step().await;
        let f = self.fault("fail", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self.inner.fail(key, owner, error, now_ms).await?;
        self.answer("fail", &format!("{key} by {owner}"), f, out)
    }

    async fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        step().await;
        if reason.contains(HELD_REASON) {
            // A pair of this event was held by its destination's breaker.
            let mut w = lock(&self.world);
            w.stats.held += 1;
            w.held_events.insert(key.to_owned());
        }
        let f = self.fault("defer", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self.inner.defer(key, owner, reason, now_ms).await?;
        self.answer("defer", &format!("{key} by {owner}"), f, out)
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        self.inner.get(key).await
    }

    // The simulation sends no replays; these only forward, with the same faults as take and
    // complete.
    async fn take_replay(&self, t: &Take, replay_id: &str) -> Result<TakeOutcome, StoreError> {
        step().await;
        let f = self.fault("take", &t.key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self.inner.take_replay(t, replay_id).await?;
        self.answer("take_replay", &format!("{} by {}", t.key, t.owner), f, out)
    }

    async fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        step().await;
        let f = self.fault("complete", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self
            .inner
            .complete_replay(key, owner, replay_id, now_ms)
            .await?;
        self.answer("complete_replay", &format!("{key} by {owner}"), f, out)
    }

    async fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        step().await;
        let f = self.fault("fail", key);
        if f == Fault::Before {
            return Err(injected());
        }
        let out = self
            .inner
            .give_back_replay(key, owner, error, failed)
            .await?;
        self.answer("give_back_replay", &format!("{key} by {owner}"), f, out)
    }
}
