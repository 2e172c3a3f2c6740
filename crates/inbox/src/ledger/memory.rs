//! The in-memory ledger: DynamoDB's conditional semantics as this project uses them, for unit
//! tests and the deterministic simulation. Each write checks the same predicate that sits
//! beside its DynamoDB condition in [`super`], atomically under one lock.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{
    claim_allowed, defer_allowed, finish_allowed, give_back_replay_allowed, guard_body_allowed,
    keep_hook_secret_allowed, mark_resent_allowed, note_refusal_allowed, open_handshake_allowed,
    refused_replay_take, refused_take, release_allowed, replay_complete_allowed,
    request_replay_allowed, take_allowed_for, BodyGuard, Claim, ClaimOutcome, GuardOutcome,
    LedgerStore, Record, Status, StoreError, Take, TakeOutcome,
};

#[derive(Default)]
pub struct MemoryLedger {
    items: Mutex<HashMap<String, Record>>,
    guards: Mutex<HashMap<String, BodyGuard>>,
    hook_secrets: Mutex<HashMap<String, String>>,
    /// The handshake windows operators opened, by source: until when (epoch seconds).
    handshake_windows: Mutex<HashMap<String, i64>>,
}

/// The items and guards; of the kept handshake secrets only the sources that have one.
impl std::fmt::Debug for MemoryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept: Vec<String> = match self.hook_secrets.lock() {
            Ok(secrets) => secrets.keys().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().keys().cloned().collect(),
        };
        f.debug_struct("MemoryLedger")
            .field("items", &self.items)
            .field("guards", &self.guards)
            .field("hook_secrets_kept_for", &kept)
            .finish()
    }
}

impl MemoryLedger {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Record>) -> T) -> T {
        let mut items = match self.items.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut items)
    }

    /// What an operator's `delete-item` of `#hook-secret:<source>` does (docs/providers.md,
    /// "asana"): the kept secret and any window gone.
    pub fn forget_hook_secret(&self, source: &str) {
        match self.hook_secrets.lock() {
            Ok(mut m) => m.remove(source),
            Err(poisoned) => poisoned.into_inner().remove(source),
        };
        match self.handshake_windows.lock() {
            Ok(mut m) => m.remove(source),
            Err(poisoned) => poisoned.into_inner().remove(source),
        };
    }

    /// Every item, for assertions.
    pub fn snapshot(&self) -> Vec<Record> {
        self.with(|items| items.values().cloned().collect())
    }

    /// What DynamoDB's TTL sweeper does, some time after `expires_at`: deletes expired items.
    pub fn sweep_expired(&self, now_ms: i64) -> usize {
        self.with(|items| {
            let before = items.len();
            items.retain(|_, r| !r.is_expired(now_ms));
            before - items.len()
        })
    }
}

impl MemoryLedger {
    /// The body guard items, for assertions.
    pub fn guards(&self) -> Vec<BodyGuard> {
        let guards = match self.guards.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        guards.values().cloned().collect()
    }

    /// The write of a take (and of a replay's take): PROCESSING under a new lease, the
    /// attributes of an absent item filled in.
    /// `forget_completion`: an ordinary take removes `completed_at` (it only takes a key that
    /// never completed, or a forgotten one); a replay's take keeps it.
    fn taken(
        items: &mut HashMap<String, Record>,
        t: &Take,
        forget_completion: bool,
    ) -> TakeOutcome {
        let r = items.entry(t.key.clone()).or_insert_with(|| Record {
            key: t.key.clone(),
            source: t.source.clone(),
            status: Status::Processing,
            expires_at: t.expires_at,
            lease_until: None,
            lease_owner: None,
            payload_sha256: t.payload_sha256.clone(),
            response_status: Some(t.response_status),
            response_body: Some(t.response_body.clone()),
            attempts: 0,
            failures: 0,
            last_error: None,
            // Absent (0) on a pair's item: not in the index of events (`Take::indexed`).
            received_at: if t.indexed() { t.now_ms } else { 0 },
            completed_at: None,
            archived_at: None,
            replays: Default::default(),
            replay_requests: Default::default(),
            resent_by: None,
        });
        if r.archived_at.is_none() {
            r.archived_at = t.archived_at;
        }
        r.status = Status::Processing;
        r.lease_until = Some(t.lease_until_ms);
        r.lease_owner = Some(t.owner.clone());
        r.expires_at = t.expires_at;
        r.attempts += 1;
        if forget_completion {
            r.completed_at = None;
        }
        TakeOutcome::Taken {
            attempts: r.attempts,
        }
    }
}

impl LedgerStore for MemoryLedger {
    async fn note_refusal(&self, key: &str, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.with(|items| {
            let ok = note_refusal_allowed(items.get(key), now_ms);
            if let Some(r) = items.get_mut(key).filter(|_| ok) {
                r.last_error = Some(reason.to_owned());
            }
            ok
        }))
    }

    async fn open_handshake(&self, source: &str, until_s: i64) -> Result<bool, StoreError> {
        let kept = match self.hook_secrets.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut windows = match self.handshake_windows.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let open = open_handshake_allowed(kept.get(source).map(String::as_str));
        if open {
            windows.insert(source.to_owned(), until_s);
        }
        Ok(open)
    }

    async fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut kept = match self.hook_secrets.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut windows = match self.handshake_windows.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let open_until = windows.get(source).copied();
        let now_s = now_ms.div_euclid(1000);
        if keep_hook_secret_allowed(kept.get(source).map(String::as_str), open_until, now_s) {
            // The item is replaced whole: the window goes with it.
            windows.remove(source);
            kept.insert(source.to_owned(), secret.to_owned());
            Ok(true)
        } else {
            Ok(false)
        }
    }

    async fn hook_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        let kept = match self.hook_secrets.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        Ok(kept.get(source).cloned())
    }

    async fn guard_body(&self, g: &BodyGuard, now_ms: i64) -> Result<GuardOutcome, StoreError> {
        let mut guards = match self.guards.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if guard_body_allowed(guards.get(&g.key), &g.event_key, now_ms) {
            guards.insert(g.key.clone(), g.clone());
            Ok(GuardOutcome::Fresh)
        } else {
            Ok(GuardOutcome::Replayed)
        }
    }

    async fn claim(&self, c: &Claim) -> Result<ClaimOutcome, StoreError> {
        Ok(self.with(|items| {
            if let Some(existing) = items.get(&c.key) {
                if !claim_allowed(Some(existing), c.now_ms) {
                    return ClaimOutcome::Exists(Box::new(existing.clone()));
                }
            }
            items.insert(
                c.key.clone(),
                Record {
                    key: c.key.clone(),
                    source: c.source.clone(),
                    status: Status::Received,
                    expires_at: c.expires_at,
                    lease_until: Some(c.lease_until_ms),
                    lease_owner: Some(c.owner.clone()),
                    payload_sha256: c.payload_sha256.clone(),
                    response_status: Some(c.response_status),
                    response_body: Some(c.response_body.clone()),
                    attempts: 0,
                    failures: 0,
                    last_error: None,
                    received_at: c.now_ms,
                    completed_at: None,
                    archived_at: None,
                    replays: Default::default(),
                    replay_requests: Default::default(),
                    resent_by: None,
                },
            );
            ClaimOutcome::Claimed
        }))
    }

    async fn release(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.with(|items| {
            let ok = release_allowed(items.get(key), owner, now_ms);
            if ok {
                items.remove(key);
            }
            ok
        }))
    }

    async fn take(&self, t: &Take) -> Result<TakeOutcome, StoreError> {
        Ok(self.with(|items| {
            let existing = items.get(&t.key);
            if !take_allowed_for(existing, t, None) {
                return refused_take(existing.cloned(), t);
            }
            Self::taken(items, t, true)
        }))
    }

    async fn take_replay(&self, t: &Take, replay_id: &str) -> Result<TakeOutcome, StoreError> {
        Ok(self.with(|items| {
            let existing = items.get(&t.key);
            if !take_allowed_for(existing, t, Some(replay_id)) {
                return refused_replay_take(existing.cloned(), t, replay_id);
            }
            Self::taken(items, t, false)
        }))
    }

    async fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.with(|items| {
            let ok = replay_complete_allowed(items.get(key), owner);
            if let Some(r) = items.get_mut(key).filter(|_| ok) {
                r.status = Status::Completed;
                r.completed_at = Some(now_ms);
                r.lease_until = None;
                r.lease_owner = None;
                r.replays.insert(replay_id.to_owned());
            }
            ok
        }))
    }

    async fn complete(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.with(|items| {
            let ok = finish_allowed(items.get(key), owner);
            if let Some(r) = items.get_mut(key).filter(|_| ok) {
                r.status = Status::Completed;
                r.completed_at = Some(now_ms);
                r.lease_until = None;
                r.lease_owner = None;
            }
            ok
        }))
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        Ok(self.with(|items| {
            let ok = finish_allowed(items.get(key), owner);
            let r = items.get_mut(key).filter(|_| ok)?;
            r.status = Status::Failed;
            r.last_error = Some(error.to_owned());
            r.failures += 1;
            r.lease_until = None;
            r.lease_owner = None;
            Some(r.failures)
        }))
    }

    async fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.with(|items| {
            let ok = defer_allowed(items.get(key), owner);
            if let Some(r) = items.get_mut(key).filter(|_| ok) {
                r.status = Status::Queued;
                r.last_error = Some(reason.to_owned());
                r.lease_until = None;
                r.lease_owner = None;
            }
            ok
        }))
    }

    async fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        Ok(self.with(|items| {
            let ok = give_back_replay_allowed(items.get(key), owner);
            let r = items.get_mut(key).filter(|_| ok)?;
            r.status = Status::Completed;
            r.last_error = Some(error.to_owned());
            r.failures += u32::from(failed);
            r.lease_until = None;
            r.lease_owner = None;
            Some(r.failures)
        }))
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.with(|items| items.get(key).cloned()))
    }

    async fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> Result<Option<Option<Record>>, StoreError> {
        Ok(self.with(|items| {
            if !mark_resent_allowed(items.get(key), payload_sha256, now_ms) {
                return Some(items.get(key).cloned());
            }
            if let Some(r) = items.get_mut(key) {
                r.resent_by = Some(owner.to_owned());
            }
            None
        }))
    }

    async fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.with(|items| {
            let ok = request_replay_allowed(items.get(key), payload_sha256, now_ms);
            if let Some(r) = items.get_mut(key).filter(|_| ok) {
                r.replay_requests.insert(replay_id.to_owned());
            }
            ok
        }))
    }
}
