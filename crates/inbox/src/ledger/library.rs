//! The ledger's items as the library's records: the lease part the library's transitions
//! read and write, a take's lease as the library's claim, the library's store errors as the
//! ledger's.

use lambda_idempotency::machine::{self as lib, Lease};

use super::{Record, Status, StoreError, Take};

/// The lease part of an item, which the library's transitions read and write (claim,
/// release, take, complete, fail run through `lambda_idempotency`; the statuses they write are
/// the library's PROCESSING, COMPLETED and FAILED, stored as the same strings).
impl Lease for Record {
    fn status(&self) -> &str {
        self.status.as_str()
    }
    fn expires_at(&self) -> i64 {
        self.expires_at
    }
    fn payload_sha256(&self) -> &str {
        &self.payload_sha256
    }
    fn lease_until(&self) -> Option<i64> {
        self.lease_until
    }
    fn lease_owner(&self) -> Option<&str> {
        self.lease_owner.as_deref()
    }
    fn set_status(&mut self, status: lib::Status) {
        self.status = match status {
            lib::Status::Processing => Status::Processing,
            lib::Status::Completed => Status::Completed,
            lib::Status::Failed => Status::Failed,
        };
    }
    fn set_lease_until(&mut self, until: Option<i64>) {
        self.lease_until = until;
    }
    fn set_lease_owner(&mut self, owner: Option<String>) {
        self.lease_owner = owner;
    }
    fn set_expires_at(&mut self, expires_at: i64) {
        self.expires_at = expires_at;
    }
    fn count_attempt(&mut self) -> u32 {
        self.attempts = self.attempts.saturating_add(1);
        self.attempts
    }
    fn set_completed_at(&mut self, at: Option<i64>) {
        self.completed_at = at;
    }
    fn set_last_error(&mut self, error: Option<String>) {
        self.last_error = error;
    }
}

impl From<lambda_idempotency::StoreError> for StoreError {
    fn from(e: lambda_idempotency::StoreError) -> Self {
        match e {
            lambda_idempotency::StoreError::Corrupt(why) => StoreError::Corrupt(why),
            lambda_idempotency::StoreError::Unavailable(why) => StoreError::Unavailable(why),
            other => StoreError::Unavailable(other.to_string()),
        }
    }
}

impl Take {
    /// The lease this take writes, as the library's transitions take it.
    pub fn lease(&self) -> lib::Claim {
        lib::Claim {
            key: self.key.clone(),
            owner: self.owner.clone(),
            payload_sha256: self.payload_sha256.clone(),
            now_ms: self.now_ms,
            lease_until_ms: self.lease_until_ms,
            expires_at: self.expires_at,
        }
    }
}
