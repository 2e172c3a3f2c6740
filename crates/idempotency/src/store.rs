//! The store's port: the transitions of [`crate::machine`], one call each.

use std::future::Future;

use crate::machine::{Claim, ClaimOutcome, Record};

/// A store call that got no answer (not a refused condition, which is an outcome).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store did not answer, or answered with an error.
    #[error("idempotency store unavailable: {0}")]
    Unavailable(String),
    /// A stored record could not be read (an attribute missing or of the wrong type).
    #[error("idempotency record unreadable: {0}")]
    Corrupt(String),
}

/// Where records live: a small port with one method per transition of [`crate::machine`].
///
/// Implemented by [`crate::memory::MemoryStore`] and [`crate::dynamodb::DynamoStore`]. Each
/// write is conditional: `Ok(false)` from [`Store::complete`], [`Store::release`] and
/// [`Store::fail`] means its condition refused it (the caller no longer holds the key), `Err`
/// means no answer. A store is shared by cloning it (both shipped stores are cheap handles).
pub trait Store: Send + Sync {
    /// [`crate::machine::CLAIM_CONDITION`]: writes the claim's record
    /// ([`crate::machine::CLAIM_UPDATE`]) where the key is absent or expired, or holds this
    /// payload's abandoned or failed record; otherwise the record found, from the same call
    /// where the store can.
    fn claim(&self, claim: &Claim)
        -> impl Future<Output = Result<ClaimOutcome, StoreError>> + Send;

    /// [`crate::machine::COMPLETE_CONDITION`]: COMPLETED with `result` (JSON).
    fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// [`crate::machine::RELEASE_CONDITION`]: deletes the caller's own claim.
    fn release(
        &self,
        key: &str,
        owner: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// [`crate::machine::FAIL_CONDITION`]: FAILED with `error` as `last_error`.
    fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// A consistent read: where a refused condition did not carry the old record (a store
    /// that does not return `ALL_OLD`), and for tests and operators.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send;
}
