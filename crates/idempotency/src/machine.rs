//! The state machine, in one place: each transition's DynamoDB condition expression beside the
//! in-memory predicate that mirrors it.
//!
//! ```text
//!  (absent/expired) --claim--> PROCESSING --complete--> COMPLETED   (replayed until it expires)
//!                                 |    \--release--> (absent)
//!                                 |     \--fail--> FAILED --claim--> PROCESSING
//!                                 \--lease ran out--claim--> PROCESSING
//! ```
//!
//! One claim, one conditional write, takes a key in every state it may be taken in: absent,
//! expired, abandoned (its lease ran out) or FAILED, the last two for the same payload only.
//!
//! The [`crate::dynamodb`] store sends the `*_CONDITION` and `*_UPDATE` constants; the
//! [`crate::memory`] store evaluates the predicates and writes the twins beside them. Both are
//! written against the [`Lease`] part of a record only, so that a layer on top with records
//! of its own (more statuses, more attributes) runs them too, adding its own conditions and
//! attributes around them. An item past `expires_at` counts as absent in every
//! condition: DynamoDB's TTL deletes expired items lazily, often days later.
//!
//! Placeholders: `:now_s` epoch seconds, `:now_ms` epoch milliseconds, `:me` the caller's
//! lease owner, `:held` the status its claim wrote, `:sha` the caller's payload hash; `#status` and `#result` stand for `status`
//! and `result` (DynamoDB reserved words).
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
    /// call's claim takes the key over.
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
    /// the owner of the failed call (kept for the operator: [`HOLDER_CONDITION`] wants
    /// PROCESSING, so it gives that call nothing).
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
}

/// The lease part of a record, as stored: what the conditions of [`crate::machine`] read and
/// its shared transitions write. [`Record`] implements it; a layer on top of this library
/// that keeps more in its records (other statuses, other attributes) implements it for its
/// own, and then runs its records through the same predicates and writes
/// ([`crate::memory::Table`], [`crate::dynamodb::Table`]).
pub trait Lease {
    /// The stored `status` value (compared as DynamoDB compares it).
    fn status(&self) -> &str;
    /// `expires_at`, epoch seconds.
    fn expires_at(&self) -> i64;
    /// `payload_sha256`.
    fn payload_sha256(&self) -> &str;
    /// `lease_until`, epoch milliseconds.
    fn lease_until(&self) -> Option<i64>;
    /// `lease_owner`.
    fn lease_owner(&self) -> Option<&str>;
    /// Sets `status` to one of this library's.
    fn set_status(&mut self, status: Status);
    /// Sets or removes `lease_until`.
    fn set_lease_until(&mut self, until: Option<i64>);
    /// Sets or removes `lease_owner`.
    fn set_lease_owner(&mut self, owner: Option<String>);
    /// Sets `expires_at`.
    fn set_expires_at(&mut self, expires_at: i64);
    /// Adds one to `attempts`; the count after it.
    fn count_attempt(&mut self) -> u32;
    /// Sets or removes `completed_at`.
    fn set_completed_at(&mut self, at: Option<i64>);
    /// Sets or removes `last_error`.
    fn set_last_error(&mut self, error: Option<String>);

    /// Past `expires_at`: absent, whether or not DynamoDB has deleted it yet.
    fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at() < now_ms.div_euclid(1000)
    }
}

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
    fn set_status(&mut self, status: Status) {
        self.status = status;
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

/// The stand-in for a record deleted between a refused claim and the read that stands in
/// for `ALL_OLD` (a server that does not return it): expired, so the caller's next claim takes
/// the key.
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

/// What a claim found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key is ours: run.
    Claimed,
    /// The key is held or done: the record as it was, from the same call (`ALL_OLD`).
    Exists(Box<Record>),
}

// The fragments every condition and update here is made of, as macros so that the constants
// below are `concat!`ed from them at compile time (a layer on top reads them as `pub const`s).
macro_rules! absent {
    () => {
        "attribute_not_exists(pk) OR expires_at < :now_s"
    };
}
macro_rules! abandoned {
    () => {
        "#status = :processing AND lease_until < :now_ms"
    };
}
macro_rules! holder {
    () => {
        "#status = :held AND lease_owner = :me"
    };
}
macro_rules! lease_set {
    () => {
        "#status = :processing, lease_until = :lease, lease_owner = :me, expires_at = :exp, \
         attempts = if_not_exists(attempts, :zero) + :one"
    };
}

/// Absent or expired: the key is free. The claim's first two cases, and on its own the
/// condition of a claim that takes nothing over ([`Takeover::Never`]).
pub const ABSENT_CONDITION: &str = absent!();

/// The in-memory twin of [`ABSENT_CONDITION`].
pub fn absent<R: Lease>(existing: Option<&R>, now_ms: i64) -> bool {
    existing.is_none_or(|r| r.is_expired(now_ms))
}

/// Present and unexpired: the negation of [`ABSENT_CONDITION`], for a transition that needs
/// the record to be there (DynamoDB's `UpdateItem` would otherwise create it).
pub const LIVE_CONDITION: &str = "attribute_exists(pk) AND expires_at >= :now_s";

/// The in-memory twin of [`LIVE_CONDITION`].
pub fn live<R: Lease>(existing: Option<&R>, now_ms: i64) -> bool {
    !absent(existing, now_ms)
}

/// Abandoned: PROCESSING under a lease that ran out (its invocation timed out or died).
pub const ABANDONED_CONDITION: &str = abandoned!();

/// The in-memory twin of [`ABANDONED_CONDITION`].
pub fn abandoned<R: Lease>(r: &R, now_ms: i64) -> bool {
    r.status() == Status::Processing.as_str() && r.lease_until().is_some_and(|u| u < now_ms)
}

/// Which records a claim takes over besides an absent or expired one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Takeover {
    /// This payload's record, abandoned ([`ABANDONED_CONDITION`]) or FAILED: the library's
    /// own claim ([`CLAIM_CONDITION`]).
    #[default]
    AbandonedOrFailed,
    /// None: only an absent or expired key is claimed ([`ABSENT_CONDITION`]), whatever the
    /// record's lease. For a layer whose claimed record is picked up by a later transition of
    /// its own (a queue's consumer) and must not be rewritten under it.
    Never,
}

impl Takeover {
    /// The claim's DynamoDB condition.
    pub fn condition(self) -> &'static str {
        match self {
            Takeover::AbandonedOrFailed => CLAIM_CONDITION,
            Takeover::Never => ABSENT_CONDITION,
        }
    }

    /// The claim's in-memory predicate, the twin of [`Takeover::condition`].
    pub fn allows<R: Lease>(self, existing: Option<&R>, payload_sha256: &str, now_ms: i64) -> bool {
        match self {
            Takeover::AbandonedOrFailed => claim_allowed(existing, payload_sha256, now_ms),
            Takeover::Never => absent(existing, now_ms),
        }
    }
}

/// Claim (UpdateItem with `ReturnValuesOnConditionCheckFailure=ALL_OLD`), in one call: the
/// key is absent or expired, or it holds this payload's record and that record was abandoned
/// (PROCESSING with a lease that ran out: its invocation timed out or died) or FAILED. A
/// refusal hands back the old record in the same call: a duplicate costs one round trip, and
/// so does the claim that takes over a timed-out call's key.
///
/// No guard on the old owner is needed: the condition is evaluated on the item as it is when
/// the write lands, so of two callers taking over one abandoned record the second finds the
/// first's live lease and is refused. A completed, unexpired record and a live lease are never
/// claimed, and another payload under the key is refused unless the record has expired.
pub const CLAIM_CONDITION: &str = concat!(
    absent!(),
    " OR (payload_sha256 = :sha AND ((",
    abandoned!(),
    ") OR #status = :failed))"
);

/// The in-memory twin of [`CLAIM_CONDITION`].
pub fn claim_allowed<R: Lease>(existing: Option<&R>, payload_sha256: &str, now_ms: i64) -> bool {
    absent(existing, now_ms)
        || existing.is_some_and(|r| {
            r.payload_sha256() == payload_sha256
                && (abandoned(r, now_ms) || r.status() == Status::Failed.as_str())
        })
}

/// What taking a lease SETs: PROCESSING under the caller's lease owner until `:lease`,
/// `expires_at` renewed, `attempts` counted on (1 where there is none). The start of
/// [`CLAIM_UPDATE`]; a layer's own take of a record ([`crate::dynamodb::take_lease`]) sets
/// this and what it adds.
pub const LEASE_SET: &str = lease_set!();

/// The in-memory twin of [`LEASE_SET`]: `attempts` after it.
pub fn take_lease<R: Lease>(r: &mut R, claim: &Claim) -> u32 {
    r.set_status(Status::Processing);
    r.set_lease_until(Some(claim.lease_until_ms));
    r.set_lease_owner(Some(claim.owner.clone()));
    r.set_expires_at(claim.expires_at);
    r.count_attempt()
}

/// What a claim writes ([`CLAIM_CONDITION`] admitted it): PROCESSING under the caller's lease,
/// `attempts` counted on from the item's (1 where there is none), `received_at` kept from the
/// item's (now where there is none), and what the last holder left (`result`, `last_error`,
/// `completed_at`) removed. The item is updated in place, so an expired item DynamoDB's TTL
/// has not deleted yet keeps counting `attempts` from where it was, and keeps its
/// `received_at`.
pub const CLAIM_UPDATE: &str = concat!(
    "SET ",
    lease_set!(),
    ", payload_sha256 = :sha, received_at = if_not_exists(received_at, :now_ms) \
     REMOVE #result, last_error, completed_at"
);

/// The in-memory twin of [`CLAIM_UPDATE`]: the record a claim writes over `existing`.
pub fn claimed(claim: &Claim, existing: Option<&Record>) -> Record {
    let mut record = claim.record(existing.map_or(0, |r| r.attempts), 0);
    record.received_at = existing.map_or(claim.now_ms, |r| r.received_at);
    take_lease(&mut record, claim);
    record
}

/// Whether a record a claim found is one [`CLAIM_CONDITION`] takes over (abandoned or
/// failed, this payload's, unexpired): where a refusal did not carry the record and the read
/// that stood in found it changed since, the caller claims again.
pub fn reclaimable(existing: &Record, now_ms: i64) -> bool {
    !existing.is_expired(now_ms) && claim_allowed(Some(existing), &existing.payload_sha256, now_ms)
}

/// Complete, release and fail (and any transition of a layer on top that ends a lease): only
/// the caller's own live claim, `:held` the status its claim wrote (PROCESSING for this
/// library's) and `:me` its lease owner. Never delete or overwrite a lock you do not hold: a
/// call that ran past its lease may find its key claimed by another, and must leave it alone.
pub const HOLDER_CONDITION: &str = holder!();

/// The in-memory twin of [`HOLDER_CONDITION`], `held` the status the claim wrote.
pub fn held_by<R: Lease>(existing: Option<&R>, held: &str, owner: &str) -> bool {
    existing.is_some_and(|r| r.status() == held && r.lease_owner() == Some(owner))
}

/// [`held_by`] a PROCESSING record: what complete, release and fail of this library's own
/// claim require.
pub fn holder_allowed<R: Lease>(existing: Option<&R>, owner: &str) -> bool {
    held_by(existing, Status::Processing.as_str(), owner)
}

/// Complete: [`HOLDER_CONDITION`] (`:held` PROCESSING), and then [`COMPLETE_UPDATE`].
pub const COMPLETE_CONDITION: &str = HOLDER_CONDITION;
/// Release: [`HOLDER_CONDITION`]; the record is deleted.
pub const RELEASE_CONDITION: &str = HOLDER_CONDITION;
/// Fail: [`HOLDER_CONDITION`] (`:held` PROCESSING), and then [`FAIL_UPDATE`].
pub const FAIL_CONDITION: &str = HOLDER_CONDITION;

/// What complete SETs and REMOVEs: COMPLETED, `completed_at = :now_ms`, the lease removed.
/// This library's own complete adds `#result = :result` ([`crate::dynamodb::complete`]).
pub const COMPLETE_UPDATE: &str =
    "SET #status = :completed, completed_at = :now_ms REMOVE lease_until, lease_owner";

/// The in-memory twin of [`COMPLETE_UPDATE`].
pub fn complete<R: Lease>(r: &mut R, now_ms: i64) {
    r.set_status(Status::Completed);
    r.set_completed_at(Some(now_ms));
    r.set_lease_until(None);
    r.set_lease_owner(None);
}

/// What fail SETs and REMOVEs: FAILED, `last_error = :error`, `lease_until` removed. The owner
/// stays, for the operator: [`HOLDER_CONDITION`] wants PROCESSING, so it gives the failed call
/// nothing, and the next claim of this payload takes the record.
pub const FAIL_UPDATE: &str = "SET #status = :failed, last_error = :error REMOVE lease_until";

/// The in-memory twin of [`FAIL_UPDATE`].
pub fn fail<R: Lease>(r: &mut R, error: &str) {
    r.set_status(Status::Failed);
    r.set_last_error(Some(error.to_owned()));
    r.set_lease_until(None);
}

/// What a call does about a record its claim found, given its own payload's hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// Expired, or deleted since: claim again.
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
    /// Abandoned (lease ran out) or failed, found by a read after the refusal (a server
    /// without `ALL_OLD`): it changed since, claim again ([`CLAIM_CONDITION`] takes it).
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

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;
    const NOW_S: i64 = NOW / 1000;

    fn record(status: Status, lease_until: Option<i64>, expires_at: i64) -> Record {
        Record {
            key: "k".into(),
            status,
            expires_at,
            lease_until,
            lease_owner: lease_until.map(|_| "me".to_owned()),
            payload_sha256: "sha".into(),
            result: None,
            attempts: 1,
            last_error: Some("before".into()),
            received_at: NOW - 5_000,
            completed_at: None,
        }
    }

    fn claim() -> Claim {
        Claim {
            key: "k".into(),
            owner: "next".into(),
            payload_sha256: "sha".into(),
            now_ms: NOW,
            lease_until_ms: NOW + 30_000,
            expires_at: NOW_S + 3600,
        }
    }

    #[test]
    fn absent_and_live_split_at_the_ttl_second() {
        let none: Option<&Record> = None;
        assert!(absent(none, NOW));
        assert!(!live(none, NOW));
        let last_second = record(Status::Completed, None, NOW_S);
        assert!(
            live(Some(&last_second), NOW),
            "its last second still counts"
        );
        assert!(!absent(Some(&last_second), NOW));
        let expired = record(Status::Completed, None, NOW_S - 1);
        assert!(absent(Some(&expired), NOW));
        assert!(!live(Some(&expired), NOW));
    }

    #[test]
    fn abandoned_is_a_processing_lease_that_ran_out() {
        let at = |status, until| abandoned(&record(status, until, NOW_S + 60), NOW);
        assert!(at(Status::Processing, Some(NOW - 1)));
        assert!(
            !at(Status::Processing, Some(NOW)),
            "a lease runs to its last millisecond"
        );
        assert!(!at(Status::Processing, None));
        assert!(
            !at(Status::Failed, Some(NOW - 1)),
            "only PROCESSING is abandoned"
        );
    }

    #[test]
    fn a_claim_that_takes_nothing_over_takes_only_a_free_key() {
        let none: Option<&Record> = None;
        let live_until = NOW_S + 60;
        let abandoned = record(Status::Processing, Some(NOW - 1), live_until);
        let failed = record(Status::Failed, None, live_until);
        let expired = record(Status::Completed, None, NOW_S - 1);
        for takeover in [Takeover::AbandonedOrFailed, Takeover::Never] {
            assert!(takeover.allows(none, "sha", NOW));
            assert!(takeover.allows(Some(&expired), "other", NOW));
        }
        for found in [&abandoned, &failed] {
            assert!(Takeover::AbandonedOrFailed.allows(Some(found), "sha", NOW));
            assert!(!Takeover::AbandonedOrFailed.allows(Some(found), "other", NOW));
            assert!(!Takeover::Never.allows(Some(found), "sha", NOW));
        }
        assert_eq!(Takeover::Never.condition(), ABSENT_CONDITION);
        assert_eq!(Takeover::AbandonedOrFailed.condition(), CLAIM_CONDITION);
        assert!(CLAIM_CONDITION.starts_with(ABSENT_CONDITION));
        assert!(CLAIM_CONDITION.contains(ABANDONED_CONDITION));
        assert!(CLAIM_UPDATE.starts_with(&format!("SET {LEASE_SET}, ")));
    }

    #[test]
    fn held_by_wants_the_held_status_and_the_owner() {
        let held = record(Status::Processing, Some(NOW + 1), NOW_S + 60);
        assert!(held_by(Some(&held), "PROCESSING", "me"));
        assert!(holder_allowed(Some(&held), "me"));
        assert!(!held_by(Some(&held), "PROCESSING", "you"));
        assert!(!held_by(Some(&held), "FAILED", "me"));
        assert!(!holder_allowed(None::<&Record>, "me"));
    }

    #[test]
    fn the_shared_writes_move_the_lease_and_keep_the_rest() {
        let mut r = record(Status::Failed, None, NOW_S + 60);
        assert_eq!(take_lease(&mut r, &claim()), 2);
        assert_eq!(
            (
                r.status,
                r.lease_until,
                r.lease_owner.as_deref(),
                r.expires_at
            ),
            (
                Status::Processing,
                Some(NOW + 30_000),
                Some("next"),
                NOW_S + 3600
            )
        );
        assert_eq!(r.last_error.as_deref(), Some("before"), "the lease only");
        let mut done = r.clone();
        complete(&mut done, NOW + 10);
        assert_eq!(
            (
                done.status,
                done.completed_at,
                done.lease_until,
                done.lease_owner
            ),
            (Status::Completed, Some(NOW + 10), None, None)
        );
        fail(&mut r, "boom");
        assert_eq!(
            (
                r.status,
                r.last_error.as_deref(),
                r.lease_until,
                r.lease_owner.as_deref()
            ),
            (Status::Failed, Some("boom"), None, Some("next"))
        );
    }
}
