//! The state machine, in one place: each transition's DynamoDB condition expression beside the
//! in-memory predicate that mirrors it.
//!
//! ```text
//!  (absent/expired) --claim--> PROCESSING --complete--> COMPLETED   (replayed until it expires)
//!                                 |    \--release--> (absent)
//!                                 |     \--fail--> FAILED --reclaim--> PROCESSING
//!                                 \--lease ran out--reclaim--> PROCESSING
//! ```
//!
//! The [`crate::dynamodb`] store sends the `*_CONDITION` constants; the [`crate::memory`] store
//! evaluates the `*_allowed` predicates. An item past `expires_at` counts as absent in every
//! condition: DynamoDB's TTL deletes expired items lazily, often days later.
//!
//! Placeholders: `:now_s` epoch seconds, `:now_ms` epoch milliseconds, `:me` the caller's
//! lease owner, `:old_owner` the owner of the record being re-claimed; `#status` stands for
//! `status` (a DynamoDB reserved word).
//!
//! Units: `expires_at` is epoch **seconds** (DynamoDB's TTL wants seconds); every other time
//! (`lease_until`, `received_at`, `completed_at`) is epoch **milliseconds**.

use std::fmt;

/// Where a record is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Claimed: a call holds the key until its lease (`lease_until`) runs out.
    Processing,
    /// Done: the first result is stored and replayed to every duplicate.
    Completed,
    /// The call failed and its failure was recorded ([`crate::OnFailure::Record`]); the next
    /// call re-claims the key.
    Failed,
}

impl Status {
    /// The stored value of the `status` attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Processing => "PROCESSING",
            Status::Completed => "COMPLETED",
            Status::Failed => "FAILED",
        }
    }

    /// The status a stored `status` attribute names, if any.
    pub fn parse(text: &str) -> Option<Status> {
        Some(match text {
            "PROCESSING" => Status::Processing,
            "COMPLETED" => Status::Completed,
            "FAILED" => Status::Failed,
            _ => return None,
        })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One record, as stored: one item per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The key (`pk`).
    pub key: String,
    /// `status`.
    pub status: Status,
    /// `expires_at`: epoch **seconds**, the table's TTL attribute.
    pub expires_at: i64,
    /// `lease_until`: epoch milliseconds, while [`Status::Processing`].
    pub lease_until: Option<i64>,
    /// `lease_owner`: the holder while [`Status::Processing`]; on a [`Status::Failed`] record,
    /// the owner of the failed call (what its re-claim is guarded on).
    pub lease_owner: Option<String>,
    /// `payload_sha256`: SHA-256 hex of the first call's payload.
    pub payload_sha256: String,
    /// `result`: the first call's result (JSON), once [`Status::Completed`].
    pub result: Option<String>,
    /// `attempts`: claims so far, the first one included.
    pub attempts: u32,
    /// `last_error`: why the last call failed ([`Status::Failed`]).
    pub last_error: Option<String>,
    /// `received_at`: epoch milliseconds of the first claim.
    pub received_at: i64,
    /// `completed_at`: epoch milliseconds.
    pub completed_at: Option<i64>,
}

impl Record {
    /// Past `expires_at`: absent, whether or not DynamoDB has deleted it yet.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at < now_ms.div_euclid(1000)
    }

    /// A [`Status::Processing`] record whose lease ran out: its holder is gone.
    pub fn lease_ran_out(&self, now_ms: i64) -> bool {
        self.status == Status::Processing && self.lease_until.is_some_and(|until| until < now_ms)
    }

    fn owned_by(&self, owner: &str) -> bool {
        self.lease_owner.as_deref() == Some(owner)
    }
}

/// A call's claim on a key: the record it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The key (`pk`).
    pub key: String,
    /// This call's lease owner, unique per call.
    pub owner: String,
    /// SHA-256 hex of this call's payload.
    pub payload_sha256: String,
    /// Epoch milliseconds.
    pub now_ms: i64,
    /// Epoch milliseconds: the invocation's deadline, or a fallback lease.
    pub lease_until_ms: i64,
    /// Epoch seconds: now plus the retention.
    pub expires_at: i64,
}

impl Claim {
    /// The record this claim writes; `attempts` counts the claims so far.
    pub fn record(&self, attempts: u32, received_at: i64) -> Record {
        Record {
            key: self.key.clone(),
            status: Status::Processing,
            expires_at: self.expires_at,
            lease_until: Some(self.lease_until_ms),
            lease_owner: Some(self.owner.clone()),
            payload_sha256: self.payload_sha256.clone(),
            result: None,
            attempts,
            last_error: None,
            received_at,
            completed_at: None,
        }
    }
}

/// The stand-in for a record deleted between a claim and its re-claim (a refused re-claim
/// that found nothing): expired, so the caller's next claim takes the key.
pub fn gone(key: &str, now_ms: i64) -> Record {
    Record {
        key: key.to_owned(),
        status: Status::Processing,
        expires_at: i64::MIN,
        lease_until: None,
        lease_owner: None,
        payload_sha256: String::new(),
        result: None,
        attempts: 0,
        last_error: None,
        received_at: now_ms,
        completed_at: None,
    }
}

/// What a claim (or a re-claim) found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key is ours: run.
    Claimed,
    /// The key is held or done: the record as it was, from the same call (`ALL_OLD`).
    Exists(Box<Record>),
}

/// Claim (PutItem with `ReturnValuesOnConditionCheckFailure=ALL_OLD`): the key is absent or
/// expired. A refusal hands back the old record in the same call: a duplicate costs one
/// round trip.
pub const CLAIM_CONDITION: &str = "attribute_not_exists(pk) OR expires_at < :now_s";

/// The in-memory twin of [`CLAIM_CONDITION`].
pub fn claim_allowed(existing: Option<&Record>, now_ms: i64) -> bool {
    existing.is_none_or(|r| r.is_expired(now_ms))
}

/// Re-claim (PutItem, `ALL_OLD`): the record a claim found is still the one it found, and it
/// is abandoned: PROCESSING with a lease that ran out (its invocation timed out or died), or
/// FAILED. Guarded on the old owner, so that of two callers re-claiming one record, one wins.
pub const RECLAIM_CONDITION: &str = "expires_at >= :now_s AND lease_owner = :old_owner \
     AND ((#status = :processing AND lease_until < :now_ms) OR #status = :failed)";

/// The in-memory twin of [`RECLAIM_CONDITION`].
pub fn reclaim_allowed(existing: Option<&Record>, old_owner: &str, now_ms: i64) -> bool {
    existing.is_some_and(|r| {
        !r.is_expired(now_ms)
            && r.owned_by(old_owner)
            && ((r.status == Status::Processing && r.lease_until.is_some_and(|u| u < now_ms))
                || r.status == Status::Failed)
    })
}

/// Whether a record a claim found may be re-claimed (then [`RECLAIM_CONDITION`] decides).
pub fn reclaimable(existing: &Record, now_ms: i64) -> bool {
    reclaim_allowed(
        Some(existing),
        existing.lease_owner.as_deref().unwrap_or_default(),
        now_ms,
    )
}

/// Complete (UpdateItem: COMPLETED, `result`, `completed_at`, lease removed), release
/// (DeleteItem) and fail (UpdateItem: FAILED, `last_error`, `lease_until` removed): only the
/// caller's own live claim. Never delete or overwrite a lock you do not hold: a call that ran
/// past its lease may find its key re-claimed by another, and must leave it alone.
pub const HOLDER_CONDITION: &str = "#status = :processing AND lease_owner = :me";

/// The in-memory twin of [`HOLDER_CONDITION`].
pub fn holder_allowed(existing: Option<&Record>, owner: &str) -> bool {
    existing.is_some_and(|r| r.status == Status::Processing && r.owned_by(owner))
}

/// Complete: [`HOLDER_CONDITION`].
pub const COMPLETE_CONDITION: &str = HOLDER_CONDITION;
/// Release: [`HOLDER_CONDITION`].
pub const RELEASE_CONDITION: &str = HOLDER_CONDITION;
/// Fail: [`HOLDER_CONDITION`].
pub const FAIL_CONDITION: &str = HOLDER_CONDITION;

/// What a call does about a record its claim found, given its own payload's hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// Expired or deleted since: claim again.
    Absent,
    /// Another payload under this key: refused.
    PayloadMismatch,
    /// Done: the stored result.
    Completed(Option<String>),
    /// A live claim holds it until `lease_until` (epoch ms).
    InFlight {
        /// Epoch milliseconds.
        lease_until: i64,
    },
    /// Abandoned (lease ran out) or failed: try [`RECLAIM_CONDITION`].
    Reclaim,
}

/// The one decision on a found record: the payload check first, on every path (a changed
/// payload is refused whatever the record's status), then the status.
pub fn decide(existing: &Record, payload_sha256: &str, now_ms: i64) -> Found {
    if existing.is_expired(now_ms) {
        return Found::Absent;
    }
    if existing.payload_sha256 != payload_sha256 {
        return Found::PayloadMismatch;
    }
    match existing.status {
        Status::Completed => Found::Completed(existing.result.clone()),
        _ if reclaimable(existing, now_ms) => Found::Reclaim,
        _ => Found::InFlight {
            lease_until: existing.lease_until.unwrap_or(now_ms),
        },
    }
}

/// The `expires_at` (epoch seconds) of a record written at `now_ms`, kept `retention_s`.
pub fn expires_at(now_ms: i64, retention_s: u64) -> i64 {
    let retention = i64::try_from(retention_s).unwrap_or(i64::MAX / 4);
    now_ms.div_euclid(1000).saturating_add(retention)
}

/// The lease of a call with this deadline (epoch ms): the deadline itself, or `fallback_ms`
/// from now where there is none or it has passed.
pub fn lease_until_ms(now_ms: i64, deadline_ms: Option<i64>, fallback_ms: i64) -> i64 {
    match deadline_ms {
        Some(deadline) if deadline > now_ms => deadline,
        _ => now_ms.saturating_add(fallback_ms),
    }
}
