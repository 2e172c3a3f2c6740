//! The in-memory ledger: DynamoDB's conditional semantics as this project uses them, for unit
//! tests and the deterministic simulation. Each write checks the same predicate that sits
//! beside its DynamoDB condition in [`super`], atomically under one lock: the library's
//! memory table (`lambda_idempotency::memory::Table`), whose transitions (take, complete, fail,
//! release) the ledger's run through with its own attributes and conditions added.

use lambda_idempotency::memory::Table;

use super::{
    claim_allowed, defer_allowed, give_back_replay_allowed, guard_body_allowed,
    keep_hook_secret_allowed, mark_resent_allowed, note_refusal_allowed, open_handshake_allowed,
    refused_replay_take, refused_take, release_guard_allowed, request_replay_allowed,
    take_allowed_for, BodyGuard, Claim, ClaimOutcome, GuardOutcome, LedgerStore, Record, Status,
    StoreError, Take, TakeOutcome,
};

#[derive(Default)]
pub struct MemoryLedger {
    items: Table<Record>,
    guards: Table<BodyGuard>,
    /// The `#hook-secret:<source>` items by source: a window an operator opened, or the kept
    /// secret (one item, as on DynamoDB: keeping the secret replaces the window).
    hook_secrets: Table<HookSecret>,
}

/// A `#hook-secret:<source>` item: the window (`open_until`, epoch seconds) or the secret.
#[derive(Clone, Default)]
struct HookSecret {
    open_until: Option<i64>,
    secret: Option<String>,
}

/// The items and guards; of the kept handshake secrets only the sources that have one.
impl std::fmt::Debug for MemoryLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept: Vec<String> = self.hook_secrets.with(|m| {
            m.iter()
                .filter(|(_, h)| h.secret.is_some())
                .map(|(source, _)| source.clone())
                .collect()
        });
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

    /// What an operator's `delete-item` of `#hook-secret:<source>` does (docs/providers.md,
    /// "asana"): the kept secret and any window gone.
    pub fn forget_hook_secret(&self, source: &str) {
        self.hook_secrets.with(|m| m.remove(source));
    }

    /// Every item, for assertions.
    pub fn snapshot(&self) -> Vec<Record> {
        self.items.with(|items| items.values().cloned().collect())
    }

    /// What DynamoDB's TTL sweeper does, some time after `expires_at`: deletes expired items.
    pub fn sweep_expired(&self, now_ms: i64) -> usize {
        self.items.with(|items| {
            let before = items.len();
            items.retain(|_, r| !r.is_expired(now_ms));
            before - items.len()
        })
    }

    /// The body guard items, for assertions.
    pub fn guards(&self) -> Vec<BodyGuard> {
        self.guards
            .with(|guards| guards.values().cloned().collect())
    }

    /// The write of a take (and of a replay's take): the library's lease
    /// (`Table::take_lease`) where `allowed`, the attributes of an absent item filled in.
    /// An ordinary take removes `completed_at` (it only takes a key that never completed, or a
    /// forgotten one); a replay's take keeps it. Refused: what `refused` makes of the item as
    /// it was.
    fn take_if(
        &self,
        t: &Take,
        replay_id: Option<&str>,
        refused: impl FnOnce(Option<Record>) -> TakeOutcome,
    ) -> TakeOutcome {
        let new = || Record {
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
        };
        let also = |r: &mut Record| {
            if r.archived_at.is_none() {
                r.archived_at = t.archived_at;
            }
            if replay_id.is_none() {
                r.completed_at = None;
            }
        };
        self.items
            .take_lease(&t.lease(), |e| take_allowed_for(e, t, replay_id), new, also)
            .map_or_else(refused, |attempts| TakeOutcome::Taken { attempts })
    }
}

impl LedgerStore for MemoryLedger {
    async fn note_refusal(&self, key: &str, reason: &str, now_ms: i64) -> Result<bool, StoreError> {
        let noted = self.items.write_if(
            key,
            |e| note_refusal_allowed(e, now_ms),
            |slot| {
                if let Some(r) = slot {
                    r.last_error = Some(reason.to_owned());
                }
            },
        );
        Ok(noted.is_ok())
    }

    async fn open_handshake(&self, source: &str, until_s: i64) -> Result<bool, StoreError> {
        let opened = self.hook_secrets.write_if(
            source,
            |e| open_handshake_allowed(e.and_then(|h| h.secret.as_deref())),
            |slot| {
                *slot = Some(HookSecret {
                    open_until: Some(until_s),
                    secret: None,
                });
            },
        );
        Ok(opened.is_ok())
    }

    async fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let now_s = now_ms.div_euclid(1000);
        let kept = self.hook_secrets.write_if(
            source,
            |e| {
                let kept = e.and_then(|h| h.secret.as_deref());
                keep_hook_secret_allowed(kept, e.and_then(|h| h.open_until), now_s)
            },
            // The item is replaced whole: the window goes with it.
            |slot| {
                *slot = Some(HookSecret {
                    open_until: None,
                    secret: Some(secret.to_owned()),
                });
            },
        );
        Ok(kept.is_ok())
    }

    async fn hook_secret(&self, source: &str) -> Result<Option<String>, StoreError> {
        Ok(self.hook_secrets.get(source).and_then(|h| h.secret))
    }

    async fn guard_body(&self, g: &BodyGuard, now_ms: i64) -> Result<GuardOutcome, StoreError> {
        let guarded = self.guards.write_if(
            &g.key,
            |e| guard_body_allowed(e, &g.event_key, now_ms),
            |slot| *slot = Some(g.clone()),
        );
        Ok(match guarded {
            Ok(()) => GuardOutcome::Fresh,
            Err(_) => GuardOutcome::Replayed,
        })
    }

    /// The library's claim that takes nothing over (`CLAIM_CONDITION`): the whole item.
    async fn claim(&self, c: &Claim) -> Result<ClaimOutcome, StoreError> {
        let record = Record {
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
        };
        let claimed = self.items.write_if(
            &c.key,
            |e| claim_allowed(e, c.now_ms),
            |slot| *slot = Some(record),
        );
        Ok(match claimed {
            Ok(()) => ClaimOutcome::Claimed,
            // Refused only ever on an item: the item as it was, as `ALL_OLD` returns it.
            Err(old) => match old {
                Some(old) => ClaimOutcome::Exists(Box::new(old)),
                None => return Err(StoreError::Unavailable("claimed item vanished".into())),
            },
        })
    }

    /// The library's release of a RECEIVED claim, and `RELEASE_GUARD`.
    async fn release(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self
            .items
            .release(key, owner, Status::Received.as_str(), |r| {
                release_guard_allowed(r, now_ms)
            }))
    }

    async fn take(&self, t: &Take) -> Result<TakeOutcome, StoreError> {
        Ok(self.take_if(t, None, |old| refused_take(old, t)))
    }

    async fn take_replay(&self, t: &Take, replay_id: &str) -> Result<TakeOutcome, StoreError> {
        Ok(self.take_if(t, Some(replay_id), |old| {
            refused_replay_take(old, t, replay_id)
        }))
    }

    /// The library's complete, and the replay id added to `replays`.
    async fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.items.complete(key, owner, now_ms, |r| {
            r.replays.insert(replay_id.to_owned());
        }))
    }

    /// The library's complete.
    async fn complete(&self, key: &str, owner: &str, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.items.complete(key, owner, now_ms, |_| ()))
    }

    /// The library's fail, and `failures` counted, the owner removed.
    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        Ok(self.items.fail(key, owner, error, |r| {
            r.lease_owner = None;
            r.failures = r.failures.saturating_add(1);
            r.failures
        }))
    }

    async fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        let deferred = self.items.write_if(
            key,
            |e| defer_allowed(e, owner),
            |slot| {
                if let Some(r) = slot {
                    r.status = Status::Queued;
                    r.last_error = Some(reason.to_owned());
                    r.lease_until = None;
                    r.lease_owner = None;
                }
            },
        );
        Ok(deferred.is_ok())
    }

    async fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Result<Option<u32>, StoreError> {
        let given = self.items.write_if(
            key,
            |e| give_back_replay_allowed(e, owner),
            |slot| {
                slot.as_mut().map(|r| {
                    r.status = Status::Completed;
                    r.last_error = Some(error.to_owned());
                    r.failures = r.failures.saturating_add(u32::from(failed));
                    r.lease_until = None;
                    r.lease_owner = None;
                    r.failures
                })
            },
        );
        Ok(given.ok().flatten())
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.items.get(key))
    }

    async fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> Result<Option<Option<Record>>, StoreError> {
        let marked = self.items.write_if(
            key,
            |e| mark_resent_allowed(e, payload_sha256, now_ms),
            |slot| {
                if let Some(r) = slot {
                    r.resent_by = Some(owner.to_owned());
                }
            },
        );
        Ok(marked.err())
    }

    async fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let requested = self.items.write_if(
            key,
            |e| request_replay_allowed(e, payload_sha256, now_ms),
            |slot| {
                if let Some(r) = slot {
                    r.replay_requests.insert(replay_id.to_owned());
                }
            },
        );
        Ok(requested.is_ok())
    }
}
