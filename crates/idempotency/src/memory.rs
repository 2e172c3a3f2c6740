//! The in-memory store: the predicates of [`crate::machine`] over a map. For tests, local runs
//! and a single process; records live as long as the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::machine::{claim_allowed, claimed, holder_allowed, Claim, ClaimOutcome, Record, Status};
use crate::store::{Store, StoreError};

/// Records in a map behind a mutex. Cloning shares the same records.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    records: Arc<Mutex<HashMap<String, Record>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record, expired ones included (for tests).
    pub fn records(&self) -> Vec<Record> {
        let mut all: Vec<Record> = self.lock().values().cloned().collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// Writes a record as it is, no condition (for tests that set up a state).
    pub fn put(&self, record: Record) {
        self.lock().insert(record.key.clone(), record);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        // A panic while holding the lock cannot leave a record half-written (each write is
        // one insert or remove), so a poisoned lock is still consistent.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The record of `key` where `owner` holds its lease ([`holder_allowed`]): what complete and
/// fail may write.
fn held<'a>(
    records: &'a mut HashMap<String, Record>,
    key: &str,
    owner: &str,
) -> Option<&'a mut Record> {
    records
        .get_mut(key)
        .filter(|r| holder_allowed(Some(r), owner))
}

impl Store for MemoryStore {
    async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        let mut records = self.lock();
        let existing = records.get(&claim.key);
        // Refused (only ever on a record): the record as it was, as `ALL_OLD` returns it.
        if let Some(found) =
            existing.filter(|r| !claim_allowed(Some(r), &claim.payload_sha256, claim.now_ms))
        {
            return Ok(ClaimOutcome::Exists(Box::new(found.clone())));
        }
        let record = claimed(claim, existing);
        records.insert(record.key.clone(), record);
        Ok(ClaimOutcome::Claimed)
    }

    async fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut records = self.lock();
        let Some(r) = held(&mut records, key, owner) else {
            return Ok(false);
        };
        r.status = Status::Completed;
        r.result = Some(result.to_owned());
        r.completed_at = Some(now_ms);
        r.lease_until = None;
        r.lease_owner = None;
        Ok(true)
    }

    async fn release(&self, key: &str, owner: &str) -> Result<bool, StoreError> {
        let mut records = self.lock();
        if !holder_allowed(records.get(key), owner) {
            return Ok(false);
        }
        records.remove(key);
        Ok(true)
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut records = self.lock();
        let Some(r) = held(&mut records, key, owner) else {
            return Ok(false);
        };
        r.status = Status::Failed;
        r.last_error = Some(error.to_owned());
        r.lease_until = None;
        Ok(true)
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.lock().get(key).cloned())
    }
}
