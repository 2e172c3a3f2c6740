//! The in-memory store: the predicates of [`crate::machine`] over a map. For tests, local runs
//! and a single process; records live as long as the store.
//!
//! [`MemoryStore`] is built on [`Table`], public for a layer on top of this library whose
//! records hold more than a [`Record`]: [`Table::write_if`] evaluates a predicate and makes
//! the write it admits under one lock, as DynamoDB evaluates a condition on the item the write
//! finds; the shared transitions ([`Table::take_lease`], [`Table::complete`], [`Table::fail`],
//! [`Table::release`]) are the in-memory twins of [`crate::dynamodb`]'s, with room for what
//! the layer writes and requires beside them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::machine::{self, held_by, Claim, ClaimOutcome, Lease, Record, Status, Takeover};
use crate::store::{Store, StoreError};

/// Records of type `R` by key in a map behind one mutex. Cloning shares the same records.
#[derive(Debug)]
pub struct Table<R> {
    records: Arc<Mutex<HashMap<String, R>>>,
}

impl<R> Clone for Table<R> {
    fn clone(&self) -> Self {
        Table {
            records: Arc::clone(&self.records),
        }
    }
}

impl<R> Default for Table<R> {
    fn default() -> Self {
        Table {
            records: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl<R: Clone> Table<R> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Under the lock, the whole map (for what no transition does: tests, a TTL sweep).
    pub fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, R>) -> T) -> T {
        f(&mut self.lock())
    }

    /// The conditional write, under one lock: where `allowed` admits the record of `key` as
    /// it is (`None`: absent), `write` changes it (leaving `None` deletes it, `Some` puts
    /// it) and its answer comes back; otherwise nothing is written and the record as it was
    /// comes back as `Err` (DynamoDB's `ALL_OLD`).
    pub fn write_if<T>(
        &self,
        key: &str,
        allowed: impl FnOnce(Option<&R>) -> bool,
        write: impl FnOnce(&mut Option<R>) -> T,
    ) -> Result<T, Option<R>> {
        let mut records = self.lock();
        if !allowed(records.get(key)) {
            return Err(records.get(key).cloned());
        }
        let mut slot = records.remove(key);
        let answer = write(&mut slot);
        if let Some(record) = slot {
            records.insert(key.to_owned(), record);
        }
        Ok(answer)
    }

    /// The record of `key`, if any (expired ones included).
    pub fn get(&self, key: &str) -> Option<R> {
        self.lock().get(key).cloned()
    }

    /// Writes a record as it is, no condition (for tests that set up a state).
    pub fn put(&self, key: &str, record: R) {
        self.lock().insert(key.to_owned(), record);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, R>> {
        // A panic while holding the lock cannot leave a record half-written (each write is
        // one insert or remove), so a poisoned lock is still consistent.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<R: Lease + Clone> Table<R> {
    /// The twin of [`crate::dynamodb::take_lease`]: where `allowed` admits the record (the
    /// caller's condition), [`machine::take_lease`] on it (on `new()` where there is none),
    /// then `also` (what the caller writes beside it); `attempts` after it, or the record as
    /// it was.
    pub fn take_lease(
        &self,
        claim: &Claim,
        allowed: impl FnOnce(Option<&R>) -> bool,
        new: impl FnOnce() -> R,
        also: impl FnOnce(&mut R),
    ) -> Result<u32, Option<R>> {
        self.write_if(&claim.key, allowed, |slot| {
            let r = slot.get_or_insert_with(new);
            also(r);
            machine::take_lease(r, claim)
        })
    }

    /// The twin of [`crate::dynamodb::complete`]: where `owner` holds the key's PROCESSING
    /// lease, [`machine::complete`], then `also` writes.
    pub fn complete(&self, key: &str, owner: &str, now_ms: i64, also: impl FnOnce(&mut R)) -> bool {
        self.held(key, owner, |r| {
            machine::complete(r, now_ms);
            also(r);
        })
        .is_some()
    }

    /// The twin of [`crate::dynamodb::fail`]: where `owner` holds the key's PROCESSING lease,
    /// [`machine::fail`], then `also` writes (its answer comes back).
    pub fn fail<T>(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        also: impl FnOnce(&mut R) -> T,
    ) -> Option<T> {
        self.held(key, owner, |r| {
            machine::fail(r, error);
            also(r)
        })
    }

    /// Release: deletes the record where `owner` holds it with status `held` and `also_if`
    /// admits it ([`machine::HOLDER_CONDITION`] and the caller's own conjunct).
    pub fn release(
        &self,
        key: &str,
        owner: &str,
        held: &str,
        also_if: impl FnOnce(&R) -> bool,
    ) -> bool {
        self.write_if(
            key,
            |r| held_by(r, held, owner) && r.is_some_and(also_if),
            |slot| *slot = None,
        )
        .is_ok()
    }

    /// `write` on the record `owner` holds PROCESSING.
    fn held<T>(&self, key: &str, owner: &str, write: impl FnOnce(&mut R) -> T) -> Option<T> {
        self.write_if(
            key,
            |r| held_by(r, Status::Processing.as_str(), owner),
            |slot| slot.as_mut().map(write),
        )
        .ok()
        .flatten()
    }
}

/// Records in a map behind a mutex. Cloning shares the same records.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    table: Table<Record>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record, expired ones included (for tests).
    pub fn records(&self) -> Vec<Record> {
        let mut all: Vec<Record> = self.table.with(|m| m.values().cloned().collect());
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// Writes a record as it is, no condition (for tests that set up a state).
    pub fn put(&self, record: Record) {
        self.table.put(&record.key.clone(), record);
    }
}

impl Store for MemoryStore {
    async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        let sha = &claim.payload_sha256;
        let written = self.table.write_if(
            &claim.key,
            |r| Takeover::AbandonedOrFailed.allows(r, sha, claim.now_ms),
            |slot| *slot = Some(machine::claimed(claim, slot.as_ref())),
        );
        Ok(match written {
            Ok(()) => ClaimOutcome::Claimed,
            // Refused (only ever on a record): the record as it was, as `ALL_OLD` returns it.
            Err(found) => ClaimOutcome::Exists(Box::new(
                found.unwrap_or_else(|| machine::gone(&claim.key, claim.now_ms)),
            )),
        })
    }

    async fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self
            .table
            .complete(key, owner, now_ms, |r| r.result = Some(result.to_owned())))
    }

    async fn release(&self, key: &str, owner: &str) -> Result<bool, StoreError> {
        Ok(self
            .table
            .release(key, owner, Status::Processing.as_str(), |_| true))
    }

    async fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        _now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.table.fail(key, owner, error, |_| ()).is_some())
    }

    async fn get(&self, key: &str) -> Result<Option<Record>, StoreError> {
        Ok(self.table.get(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn claim(owner: &str) -> Claim {
        Claim {
            key: "k".into(),
            owner: owner.into(),
            payload_sha256: "sha".into(),
            now_ms: NOW,
            lease_until_ms: NOW + 30_000,
            expires_at: NOW / 1000 + 3600,
        }
    }

    #[test]
    fn a_refused_write_changes_nothing_and_returns_the_record_as_it_was() {
        let table: Table<Record> = Table::new();
        let first = claim("me");
        assert_eq!(table.write_if("k", |_| false, |_| 1), Err(None));
        let taken = table.take_lease(&first, |r| r.is_none(), || first.record(0, NOW), |_| ());
        assert_eq!(taken, Ok(1));
        let before = table.get("k");
        let again = table.take_lease(&claim("you"), |r| r.is_none(), || unreachable!(), |_| ());
        assert_eq!(again, Err(before.clone()));
        assert_eq!(table.get("k"), before);
        // Leaving the slot empty deletes.
        assert_eq!(
            table.write_if("k", |r| r.is_some(), |slot| slot.take().is_some()),
            Ok(true)
        );
        assert_eq!(table.get("k"), None);
    }

    #[test]
    fn a_take_writes_what_the_caller_adds_beside_the_lease() {
        let table: Table<Record> = Table::new();
        let c = claim("me");
        let taken = table.take_lease(
            &c,
            |_| true,
            || c.record(0, NOW),
            |r| r.last_error = Some("noted".into()),
        );
        assert_eq!(taken, Ok(1));
        let r = table.get("k").expect("taken");
        assert_eq!((r.attempts, r.last_error.as_deref()), (1, Some("noted")));
        assert_eq!(
            table.take_lease(&claim("you"), |_| true, || unreachable!(), |_| ()),
            Ok(2)
        );
    }

    #[test]
    fn release_wants_the_held_status_the_owner_and_the_callers_guard() {
        let table: Table<Record> = Table::new();
        let c = claim("me");
        table.put("k", c.record(1, NOW));
        assert!(!table.release("k", "you", "PROCESSING", |_| true));
        assert!(!table.release("k", "me", "RECEIVED", |_| true));
        assert!(!table.release("k", "me", "PROCESSING", |_| false));
        assert!(table.get("k").is_some());
        assert!(table.release("k", "me", "PROCESSING", |_| true));
        assert_eq!(table.get("k"), None);
    }

    #[test]
    fn complete_and_fail_run_only_for_the_holder() {
        let table: Table<Record> = Table::new();
        table.put("k", claim("me").record(1, NOW));
        assert_eq!(table.fail("k", "you", "boom", |r| r.attempts), None);
        assert!(!table.complete("k", "you", NOW, |_| ()));
        assert_eq!(table.fail("k", "me", "boom", |r| r.attempts), Some(1));
        assert_eq!(table.get("k").map(|r| r.status), Some(Status::Failed));
        table.put("k", claim("me").record(1, NOW));
        assert!(table.complete("k", "me", NOW + 1, |r| r.result = Some("7".into())));
        let done = table.get("k").expect("completed");
        assert_eq!(
            (done.status, done.result.as_deref()),
            (Status::Completed, Some("7"))
        );
    }
}
