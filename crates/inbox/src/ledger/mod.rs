//! The ledger: one item per key, moved through its states by conditional writes only.
//!
//! ```text
//!  (absent/expired) --claim--> RECEIVED ----------------take--> PROCESSING --complete--> COMPLETED
//!                                 |  \--release--> (absent)          |  \--fail--> FAILED --take--> ...
//!                                 |                                   \--defer--> QUEUED --take--> ...
//!                                 \--(a duplicate, same body) sent again, still RECEIVED
//!  COMPLETED --replay take--> PROCESSING --complete replay--> COMPLETED (+ replay id)
//!                                  \--give back (a failed or throttled replay)--> COMPLETED
//! ```
//!
//! **Only accepted events are work** (docs/design.md §5): the take of an event's item requires
//! the item, unexpired and holding the envelope's body hash, and a replay's take an id that
//! `inbox-ops replay` recorded on it ([`REQUEST_REPLAY_CONDITION`]). Whatever else reaches
//! the queue (a forged dead letter redriven, a planted archive object replayed) is refused.
//! An (event, destination) pair's item is made by its first take, after the event's item
//! admitted the message ([`TakeItem`]).
//!
//! A **replay** (`inbox-ops replay`, docs/design.md §12) takes the key once more for one
//! replay id, whatever its status, COMPLETED included (but never from under a live lease),
//! and its completion records the id in the item's `replays` set, so that a second delivery of
//! the same replay finds it and does nothing; ordinary redeliveries still meet COMPLETED. A
//! replay that fails or is throttled gives a key that had completed back as COMPLETED, and
//! while a replay holds it (or died holding it) an ordinary take finds `completed_at` and
//! does nothing: a replay never makes the original run again.
//! The receiver's path is claim, then send: the item stays RECEIVED until the consumer's take
//! (which accepts RECEIVED). A duplicate that finds a RECEIVED claim sends the event itself
//! under the same deduplication id, after marking the item ([`MARK_RESENT_CONDITION`]): a
//! marked item is never released, so no event on the queue loses its item. QUEUED is a deferred item's
//! status.
//!
//! `fail` is a real failure and counts in `failures`, on which the consumer's dead-letter
//! decision rests; `defer` is a throttled try (the system of record asked to be called later):
//! the item goes back to QUEUED and counts in no failure.
//!
//! The ledger is a layer on the `lambda-idempotency` library, not a second state machine
//! (docs/design.md §4, "On the library"): the claim, release, take, complete and fail are the
//! library's transitions (`lambda_idempotency::machine`, its `dynamodb` and `memory` tables)
//! with the ledger's attributes and conditions added, and every write goes through the
//! library's conditional-write layer. What is the webhook's own (mark resent, replays, defer,
//! the refusal's note, the body guard, the hook secret) is written here, on the same layer.
//!
//! Every transition is written here twice, side by side: as the DynamoDB condition
//! expression the [`dynamo`] adapter sends, and as the predicate the in-memory adapter
//! ([`memory`]) evaluates, composed of the library's where the rule is the library's. The same transition tests run against both adapters, so the two
//! cannot drift apart. An item past `expires_at` counts as absent in every condition:
//! DynamoDB's TTL deletes lazily, often days later, and nothing here deletes by age.
//!
//! Beside the event items, a source with a replay guard keeps one body guard item per body
//! hash (`#guard:<source>:<sha256>`, [`guard_key`]): the first event key that brought the body,
//! for the guard's window. A `#` never starts an event key (a source name holds none).
//!
//! Units: `expires_at` is epoch seconds (the TTL attribute); `lease_until`, `received_at`
//! and `completed_at` are epoch milliseconds.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::LazyLock;

use lambda_idempotency::machine::{
    self as lib, ABANDONED_CONDITION, ABSENT_CONDITION, HOLDER_CONDITION, LIVE_CONDITION,
};

pub mod dynamo;
mod hook_secret;
mod library;
pub mod memory;
pub use hook_secret::{
    hook_secret_key, keep_hook_secret_allowed, open_handshake_allowed, KEEP_HOOK_SECRET_CONDITION,
    OPEN_HANDSHAKE_CONDITION,
};

/// Where an item is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Received,
    Queued,
    Processing,
    Completed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Received => "RECEIVED",
            Status::Queued => "QUEUED",
            Status::Processing => "PROCESSING",
            Status::Completed => "COMPLETED",
            Status::Failed => "FAILED",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        Some(match text {
            "RECEIVED" => Status::Received,
            "QUEUED" => Status::Queued,
            "PROCESSING" => Status::Processing,
            "COMPLETED" => Status::Completed,
            "FAILED" => Status::Failed,
            _ => return None,
        })
    }
}

/// One ledger item, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: String,
    pub source: String,
    pub status: Status,
    /// Epoch seconds; the TTL attribute.
    pub expires_at: i64,
    /// Epoch milliseconds, while RECEIVED or PROCESSING.
    pub lease_until: Option<i64>,
    pub lease_owner: Option<String>,
    pub payload_sha256: String,
    /// The receiver's answer to the first delivery, replayed to duplicates: what the claim
    /// (or a take that found no item) stored. `None` only on an item written without it.
    pub response_status: Option<u16>,
    pub response_body: Option<String>,
    pub attempts: u32,
    /// Real failures so far (`fail`), not throttled tries (`defer`): what the dead-letter
    /// decision counts. 0 on an item written without it.
    pub failures: u32,
    pub last_error: Option<String>,
    /// Epoch milliseconds.
    pub received_at: i64,
    /// Epoch milliseconds.
    pub completed_at: Option<i64>,
    /// Epoch milliseconds: when the consumer first put the event in the archive (the first
    /// take after it), where the archive holds it ([`crate::archive::archive_hours`]).
    pub archived_at: Option<i64>,
    /// The replay ids whose side effect completed (a string set; absent means none).
    pub replays: BTreeSet<String>,
    /// The replay ids `inbox-ops replay` recorded before sending them ([`REQUEST_REPLAY_CONDITION`]):
    /// a replay's take runs only an id recorded here (a string set; absent means none).
    pub replay_requests: BTreeSet<String>,
    /// The request id of a duplicate delivery that sent the event behind this claim while the
    /// claimant's lease was live ([`MARK_RESENT_CONDITION`]): the claimant may no longer
    /// release it, since the event is on the queue.
    pub resent_by: Option<String>,
}

impl Record {
    /// Past `expires_at`: absent, whether or not DynamoDB has deleted it yet.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at < now_ms.div_euclid(1000)
    }
}

/// The `expires_at` (epoch seconds) of an item written at `now_ms` for a source that
/// remembers its keys `retention_hours`.
pub fn expires_at(now_ms: i64, retention_hours: u64) -> i64 {
    let retention_secs =
        i64::try_from(retention_hours.saturating_mul(3600)).unwrap_or(i64::MAX / 2);
    now_ms.div_euclid(1000) + retention_secs
}

/// A ledger call that did not get an answer (a DynamoDB error, not a failed condition).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
    #[error("ledger item unreadable: {0}")]
    Corrupt(String),
}

/// The receiver's claim on a key.
#[derive(Clone, Debug)]
pub struct Claim {
    pub key: String,
    pub source: String,
    pub payload_sha256: String,
    pub owner: String,
    pub now_ms: i64,
    pub lease_until_ms: i64,
    pub expires_at: i64,
    /// The receiver's answer, stored to be replayed to duplicates (the ledger does not read it).
    pub response_status: u16,
    pub response_body: String,
    /// The event's type, stored as the item's `event_type` for the operator (no transition
    /// reads it).
    pub event_type: Option<String>,
    /// The event's trace id (32 hex digits), stored as the item's `trace_id` for the operator
    /// (`inbox-ops lookup`, `why`, the console); no transition reads it, and the claim's
    /// condition is unchanged.
    pub trace_id: Option<String>,
}

/// What a claim found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key is ours (it was absent, expired, or an abandoned claim).
    Claimed,
    /// Someone holds it: the item as it was (one round trip, via `ALL_OLD`).
    Exists(Box<Record>),
}

/// The consumer's take of a key.
#[derive(Clone, Debug)]
pub struct Take {
    pub key: String,
    pub source: String,
    pub payload_sha256: String,
    pub owner: String,
    pub now_ms: i64,
    pub lease_until_ms: i64,
    pub expires_at: i64,
    /// The receiver's answer, stored only where the take creates the item (the claim's is
    /// gone: expired or never written), so that a duplicate arriving later is answered as
    /// the first delivery was.
    pub response_status: u16,
    pub response_body: String,
    /// When this batch put the event in the archive, where it did: kept as the item's
    /// `archived_at` unless it has one already.
    pub archived_at: Option<i64>,
    /// Which item the take is of: an event's (which the receiver's claim made) or an (event,
    /// destination) pair's (which its first take makes).
    pub item: TakeItem,
}

/// Which item a [`Take`] is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakeItem {
    /// The event's own item: it exists only because a receiver accepted the event (its claim),
    /// so its take requires it, unexpired and holding the envelope's `payload_sha256`
    /// ([`TAKE_CONDITION`]). It is in the ledger's index of events.
    Event,
    /// An (event, destination) pair's item: made by its first take, which runs only after the
    /// event's own item admitted the message ([`PAIR_TAKE_CONDITION`]). Never in the index of
    /// events (no `received_at`), nor paying a write for it.
    Pair,
}

impl Take {
    /// Whether an item this take creates gets `received_at` (now), the sort key of the
    /// ledger's index of events (`by-source-received`): only an event's.
    pub fn indexed(&self) -> bool {
        self.item == TakeItem::Event
    }
}

/// What a take found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TakeOutcome {
    /// Ours to run; `attempts` counts this one.
    Taken { attempts: u32 },
    /// Done already: acknowledge, no side effect.
    Completed,
    /// Someone else holds a live lease (or the item changed under us): do not run.
    Busy { lease_until: Option<i64> },
    /// The message is not an accepted event's (or not a recorded replay of one): refuse it,
    /// no side effect (docs/design.md §5).
    Refused(TakeRefusal),
}

/// Why the ledger refused to take an event's item for a message: what the consumer refuses
/// and dead-letters (docs/design.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TakeRefusal {
    /// No unexpired item holds the key: no receiver accepted this event (or it is older than
    /// the ledger's retention, which outlives every message of an accepted event).
    #[error("refused: no ledger item holds this key (no receiver accepted it)")]
    NotAccepted,
    /// The item holds another body's hash: this is not the event the receiver accepted.
    #[error("refused: payload_sha256 is not the ledger item's")]
    PayloadDiffers,
    /// A replay whose id `inbox-ops replay` did not record on the event's item.
    #[error("refused: this replay id was not recorded on the key's item by inbox-ops replay")]
    ReplayNotRecorded,
}

// ---------------------------------------------------------------------------------------
// The transitions. Each: the DynamoDB condition, then the same rule as a predicate.
// Placeholders: :now_s (epoch seconds), :now_ms, :me (the lease owner), :held (the status
// the holder's claim or take wrote), statuses by name. `#status` stands for `status`, a
// DynamoDB reserved word. The library's (`lambda_idempotency::machine`) are used where the
// rule is the library's: absent or expired, live, abandoned, the holder.
// ---------------------------------------------------------------------------------------

/// Claim (receiver, PutItem): the key is free or expired, nothing else. An item that exists
/// is never claimed anew, whatever its lease: a RECEIVED item whose claimant's lease ran out
/// may well be on the queue already (its answer given, the consumer not there yet), and a new
/// claim would rewrite its body hash and receipt time under it. A duplicate that
/// finds it sends the stored event again instead, only with the stored body (the receiver),
/// which also recovers a claimant that died before its send.
/// The library's claim that takes nothing over (`Takeover::Never`), writing RECEIVED.
pub const CLAIM_CONDITION: &str = ABSENT_CONDITION;

pub fn claim_allowed(existing: Option<&Record>, now_ms: i64) -> bool {
    lib::Takeover::Never.allows(existing, "", now_ms)
}

/// Release (receiver, DeleteItem): only our own claim, only before it was queued, only while
/// our lease is live (a duplicate that finds it run out sends without a mark), and only
/// where no duplicate delivery sent the event behind it ([`MARK_RESENT_CONDITION`]): that
/// event is on the queue, and its message needs the item (a take of an absent item refuses).
/// It is the library's release ([`HOLDER_CONDITION`], `:held` RECEIVED) and [`RELEASE_GUARD`].
pub static RELEASE_CONDITION: LazyLock<String> =
    LazyLock::new(|| format!("{HOLDER_CONDITION} AND {RELEASE_GUARD}"));

/// What the receiver's release requires beside the library's holder condition.
pub const RELEASE_GUARD: &str = "lease_until >= :now_ms AND attribute_not_exists(resent_by)";

/// The in-memory twin of [`RELEASE_GUARD`].
pub fn release_guard_allowed(r: &Record, now_ms: i64) -> bool {
    r.lease_until.is_some_and(|until| until >= now_ms) && r.resent_by.is_none()
}

pub fn release_allowed(existing: Option<&Record>, owner: &str, now_ms: i64) -> bool {
    lib::held_by(existing, Status::Received.as_str(), owner)
        && existing.is_some_and(|r| release_guard_allowed(r, now_ms))
}

/// Mark resent (receiver, UpdateItem `SET resent_by = :me`, with `ALL_OLD` on a refusal): a
/// duplicate delivery found the item RECEIVED and is about to send the stored event behind
/// it. The mark comes first, so the claimant, whose own send may
/// yet fail, can no longer release an item whose event is on the queue. Refused: the item is
/// gone (released: the duplicate claims anew) or moved on (taken: nothing to send).
pub const MARK_RESENT_CONDITION: &str =
    "#status = :received AND payload_sha256 = :sha AND expires_at >= :now_s";

pub fn mark_resent_allowed(existing: Option<&Record>, payload_sha256: &str, now_ms: i64) -> bool {
    existing.is_some_and(|r| {
        r.status == Status::Received && r.payload_sha256 == payload_sha256 && !r.is_expired(now_ms)
    })
}

/// Take (consumer, UpdateItem, and `completed_at` removed) of an event's item: the item
/// exists and has not expired (only a receiver's claim makes it: a message nobody accepted is
/// not work), it holds the envelope's body hash (`:sha`: the event the receiver accepted, not
/// another body under its key), it never completed, and it is RECEIVED, QUEUED or FAILED, or
/// PROCESSING whose lease ran out. COMPLETED, a live PROCESSING lease, and a key that
/// completed once (`completed_at`: a replay holds it, or gave up on it) are refused without a
/// side effect; an absent item or another hash is refused as not this event
/// ([`TakeRefusal`]). RECEIVED is the usual case (the receiver does not mark its claim queued).
///
/// Built of the library's [`LIVE_CONDITION`] and [`TAKEABLE_CONDITION`]; the write is the
/// library's lease (`lambda_idempotency::machine::LEASE_SET`) and the attributes of a take.
pub static TAKE_CONDITION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{LIVE_CONDITION} AND payload_sha256 = :sha AND {}",
        &*TAKEABLE_CONDITION
    )
});

pub fn take_allowed(existing: Option<&Record>, payload_sha256: &str, now_ms: i64) -> bool {
    lib::live(existing, now_ms)
        && existing.is_some_and(|r| r.payload_sha256 == payload_sha256 && takeable(r, now_ms))
}

/// A record a take may take: it never completed, and it is RECEIVED, QUEUED or FAILED, or
/// abandoned (the library's [`ABANDONED_CONDITION`]).
pub static TAKEABLE_CONDITION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "attribute_not_exists(completed_at) AND (#status IN (:received, :queued, :failed) \
         OR ({ABANDONED_CONDITION}))"
    )
});

/// The in-memory twin of [`TAKEABLE_CONDITION`].
pub fn takeable(r: &Record, now_ms: i64) -> bool {
    r.completed_at.is_none()
        && (matches!(r.status, Status::Received | Status::Queued | Status::Failed)
            || lib::abandoned(r, now_ms))
}

/// Take of an (event, destination) pair's item (consumer, as take): absent or expired (its
/// first take makes it, after the event's own take admitted the message), or never completed
/// and RECEIVED, QUEUED or FAILED, or PROCESSING whose lease ran out.
pub static PAIR_TAKE_CONDITION: LazyLock<String> =
    LazyLock::new(|| format!("{ABSENT_CONDITION} OR ({})", &*TAKEABLE_CONDITION));

pub fn pair_take_allowed(existing: Option<&Record>, now_ms: i64) -> bool {
    lib::absent(existing, now_ms) || existing.is_some_and(|r| takeable(r, now_ms))
}

/// Why an event's item refuses a message outright (before its status is looked at): absent or
/// expired, or another body's hash. `None`: it is this event's item.
pub fn not_this_event(
    existing: Option<&Record>,
    payload_sha256: &str,
    now_ms: i64,
) -> Option<TakeRefusal> {
    match existing {
        None => Some(TakeRefusal::NotAccepted),
        Some(r) if r.is_expired(now_ms) => Some(TakeRefusal::NotAccepted),
        Some(r) if r.payload_sha256 != payload_sha256 => Some(TakeRefusal::PayloadDiffers),
        Some(_) => None,
    }
}

/// Request a replay (`inbox-ops replay`, UpdateItem `ADD replay_requests :rid`) before its
/// message is sent: only on an accepted event's item, unexpired, that holds the archived
/// envelope's body hash. A replay's take runs only an id recorded so.
pub static REQUEST_REPLAY_CONDITION: LazyLock<String> =
    LazyLock::new(|| format!("{LIVE_CONDITION} AND payload_sha256 = :sha"));

pub fn request_replay_allowed(
    existing: Option<&Record>,
    payload_sha256: &str,
    now_ms: i64,
) -> bool {
    not_this_event(existing, payload_sha256, now_ms).is_none()
}

/// Complete, fail and defer (consumer, UpdateItem): only while we hold the lease, the
/// library's [`HOLDER_CONDITION`] with `:held` PROCESSING. Complete and fail are the library's
/// transitions; fail adds one to `failures` (and removes the owner); defer (a throttled try)
/// puts the item back to QUEUED and adds nothing.
pub const FINISH_CONDITION: &str = HOLDER_CONDITION;

pub fn finish_allowed(existing: Option<&Record>, owner: &str) -> bool {
    lib::holder_allowed(existing, owner)
}

/// Defer (consumer, UpdateItem: QUEUED, `last_error`, lease removed): a throttled try, only
/// while we hold the lease, as complete and fail; the next take runs it again.
pub const DEFER_CONDITION: &str = FINISH_CONDITION;

pub fn defer_allowed(existing: Option<&Record>, owner: &str) -> bool {
    finish_allowed(existing, owner)
}

/// Note a refusal (consumer, UpdateItem: `last_error` only, nothing else): a message whose
/// envelope's parts disagree (crate::consumer's admission check) names a key; where that
/// key's item exists and has not expired, its `last_error` says why the message was refused.
/// Status, lease and counts stay as they were: no transition, only a note for operators.
pub const NOTE_REFUSAL_CONDITION: &str = LIVE_CONDITION;

pub fn note_refusal_allowed(existing: Option<&Record>, now_ms: i64) -> bool {
    lib::live(existing, now_ms)
}

/// The body guard (receiver, PutItem, before the claim, only on a source with
/// `replay_guard_seconds`): the body is new within the window, or it came before under this
/// same event key (the sender's own retry). A body first brought by another key is a replay.
pub const GUARD_BODY_CONDITION: &str =
    "attribute_not_exists(pk) OR expires_at < :now_s OR event_key = :event_key";

pub fn guard_body_allowed(existing: Option<&BodyGuard>, event_key: &str, now_ms: i64) -> bool {
    match existing {
        None => true,
        Some(g) => g.expires_at < now_ms.div_euclid(1000) || g.event_key == event_key,
    }
}

/// The body guard item of a body (`body_sha256`, hex) on `source`.
pub fn guard_key(source: &str, body_sha256: &str) -> String {
    format!("#guard:{source}:{body_sha256}")
}

/// A body guard item: which event key first brought a body, until when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyGuard {
    /// [`guard_key`].
    pub key: String,
    /// The event key that brought the body.
    pub event_key: String,
    /// Epoch seconds: the receipt plus the source's `replay_guard_seconds` (the TTL).
    pub expires_at: i64,
}

/// What the body guard found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardOutcome {
    /// New within the window, or brought again by the same event key: go on to the claim.
    Fresh,
    /// Brought within the window by another event key: a captured request sent again.
    Replayed,
}

/// Replay take (consumer, UpdateItem, as take) of an event's item: the item is this accepted
/// event's (as [`TAKE_CONDITION`]), `inbox-ops replay` recorded the replay `:rid` on it
/// ([`REQUEST_REPLAY_CONDITION`]), the replay has not completed yet, and no live lease holds
/// the key. Any status otherwise: COMPLETED is what a replay is for.
pub static REPLAY_TAKE_CONDITION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{LIVE_CONDITION} AND payload_sha256 = :sha AND contains(replay_requests, :rid) \
         AND NOT contains(replays, :rid) AND NOT (lease_until >= :now_ms)"
    )
});

pub fn replay_take_allowed(
    existing: Option<&Record>,
    payload_sha256: &str,
    replay_id: &str,
    now_ms: i64,
) -> bool {
    not_this_event(existing, payload_sha256, now_ms).is_none()
        && existing.is_some_and(|r| {
            r.replay_requests.contains(replay_id)
                && !r.replays.contains(replay_id)
                && r.lease_until.is_none_or(|until| until < now_ms)
        })
}

/// Replay take of an (event, destination) pair's item: the replay has not completed on it yet
/// (or the item is absent or expired), and no live lease holds it. The replay is checked
/// against the event's own item first (the consumer reads it: recorded, this body).
pub static PAIR_REPLAY_TAKE_CONDITION: LazyLock<String> = LazyLock::new(|| {
    format!("({ABSENT_CONDITION} OR NOT contains(replays, :rid)) AND NOT (lease_until >= :now_ms)")
});

pub fn pair_replay_take_allowed(existing: Option<&Record>, replay_id: &str, now_ms: i64) -> bool {
    (lib::absent(existing, now_ms) || existing.is_some_and(|r| !r.replays.contains(replay_id)))
        && existing.is_none_or(|r| r.lease_until.is_none_or(|until| until < now_ms))
}

/// Whether an event's item admits a replay of `replay_id` for this body: what the consumer
/// checks of the event's item before a replay's destinations run (`None`: admitted).
pub fn replay_refusal(
    existing: Option<&Record>,
    payload_sha256: &str,
    replay_id: &str,
    now_ms: i64,
) -> Option<TakeRefusal> {
    not_this_event(existing, payload_sha256, now_ms).or_else(|| {
        existing
            .filter(|r| !r.replay_requests.contains(replay_id))
            .map(|_| TakeRefusal::ReplayNotRecorded)
    })
}

/// Replay complete (consumer, UpdateItem: COMPLETED, `completed_at`, the replay id added to
/// `replays`, lease removed): only while we hold the lease, as complete.
pub const REPLAY_COMPLETE_CONDITION: &str = FINISH_CONDITION;

pub fn replay_complete_allowed(existing: Option<&Record>, owner: &str) -> bool {
    finish_allowed(existing, owner)
}

/// Give back a replay (consumer, UpdateItem: COMPLETED again, `last_error`, lease removed; a
/// real failure adds one to `failures`): a replay of a key that had completed failed or was
/// throttled, so the key is what it was before the replay took it, and a late ordinary copy
/// still finds it done. Only while we hold the lease, and only on a key that completed once;
/// a replay of a key that never completed fails or defers as an ordinary take does.
pub static GIVE_BACK_REPLAY_CONDITION: LazyLock<String> =
    LazyLock::new(|| format!("{FINISH_CONDITION} AND {GIVE_BACK_GUARD}"));

/// What giving a replay back requires beside the library's holder condition.
pub const GIVE_BACK_GUARD: &str = "attribute_exists(completed_at)";

pub fn give_back_replay_allowed(existing: Option<&Record>, owner: &str) -> bool {
    finish_allowed(existing, owner) && existing.is_some_and(|r| r.completed_at.is_some())
}

/// What a refused replay take means: not this event's or not recorded (refuse), this replay
/// done already (acknowledge), else busy. `event`: the take was of the event's own item.
pub fn refused_replay_take(existing: Option<Record>, take: &Take, replay_id: &str) -> TakeOutcome {
    if take.item == TakeItem::Event {
        if let Some(why) = replay_refusal(
            existing.as_ref(),
            &take.payload_sha256,
            replay_id,
            take.now_ms,
        ) {
            return TakeOutcome::Refused(why);
        }
    }
    match existing {
        Some(r) if r.replays.contains(replay_id) && !r.is_expired(take.now_ms) => {
            TakeOutcome::Completed
        }
        Some(r) => TakeOutcome::Busy {
            lease_until: r.lease_until,
        },
        None => TakeOutcome::Busy { lease_until: None },
    }
}

/// What a refused take means for the message: not this event's (refuse), done already
/// (acknowledge), else busy.
pub fn refused_take(existing: Option<Record>, take: &Take) -> TakeOutcome {
    if take.item == TakeItem::Event {
        if let Some(why) = not_this_event(existing.as_ref(), &take.payload_sha256, take.now_ms) {
            return TakeOutcome::Refused(why);
        }
    }
    match existing {
        Some(r)
            if !r.is_expired(take.now_ms)
                && (r.status == Status::Completed || r.completed_at.is_some()) =>
        {
            TakeOutcome::Completed
        }
        Some(r) => TakeOutcome::Busy {
            lease_until: r.lease_until,
        },
        None => TakeOutcome::Busy { lease_until: None },
    }
}

/// Whether a take under its condition is allowed on `existing`: the event's item or a pair's,
/// ordinary or a replay's. The in-memory twin of the condition the DynamoDB adapter picks.
pub fn take_allowed_for(existing: Option<&Record>, take: &Take, replay_id: Option<&str>) -> bool {
    match (take.item, replay_id) {
        (TakeItem::Event, None) => take_allowed(existing, &take.payload_sha256, take.now_ms),
        (TakeItem::Pair, None) => pair_take_allowed(existing, take.now_ms),
        (TakeItem::Event, Some(rid)) => {
            replay_take_allowed(existing, &take.payload_sha256, rid, take.now_ms)
        }
        (TakeItem::Pair, Some(rid)) => pair_replay_take_allowed(existing, rid, take.now_ms),
    }
}

/// The DynamoDB condition of a take: the twin of [`take_allowed_for`].
pub fn take_condition(item: TakeItem, replay: bool) -> &'static str {
    match (item, replay) {
        (TakeItem::Event, false) => &TAKE_CONDITION,
        (TakeItem::Pair, false) => &PAIR_TAKE_CONDITION,
        (TakeItem::Event, true) => &REPLAY_TAKE_CONDITION,
        (TakeItem::Pair, true) => &PAIR_REPLAY_TAKE_CONDITION,
    }
}

/// The ledger's port: the six transitions, a replay's take, complete and give-back, the body guard, a
/// refusal's note, and a read for operators.
///
/// `Ok(false)` from release, complete and defer, and `Ok(None)` from fail, mean
/// the condition failed (the lease was lost or the item moved on); `Err` means no answer from
/// the store.
pub trait LedgerStore: Send + Sync + 'static {
    fn claim(&self, claim: &Claim)
        -> impl Future<Output = Result<ClaimOutcome, StoreError>> + Send;
    fn release(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    fn take(&self, take: &Take) -> impl Future<Output = Result<TakeOutcome, StoreError>> + Send;
    fn complete(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// A real failure: FAILED with `last_error`; `Some(failures)`, the item's real failures
    /// now, this one included.
    fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send;
    /// A throttled try: back to QUEUED with `last_error` saying why, no failure counted.
    fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// A refused message's reason as the item's `last_error`, where the item exists and has
    /// not expired ([`NOTE_REFUSAL_CONDITION`]); `Ok(false)`: no such item.
    fn note_refusal(
        &self,
        key: &str,
        reason: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The body guard ([`GUARD_BODY_CONDITION`]): writes `guard` where allowed at `now_ms`.
    fn guard_body(
        &self,
        guard: &BodyGuard,
        now_ms: i64,
    ) -> impl Future<Output = Result<GuardOutcome, StoreError>> + Send;
    /// Opens the window in which `source`'s first handshake may keep its secret, until
    /// `until_s` (epoch seconds; [`OPEN_HANDSHAKE_CONDITION`]): `false` if a secret is kept.
    fn open_handshake(
        &self,
        source: &str,
        until_s: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Keeps the secret a source's handshake established ([`KEEP_HOOK_SECRET_CONDITION`]):
    /// `true` if kept, `false` if one was kept already or no window is open.
    fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The secret a source's handshake established, if any (a consistent read).
    fn hook_secret(
        &self,
        source: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
    /// A plain read, for operators and tests; no transition depends on it.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send;
    /// Marks a RECEIVED item as resent by `owner` before a duplicate sends its event behind
    /// a RECEIVED claim ([`MARK_RESENT_CONDITION`]): `Ok(None)` marked, else the
    /// item as it was (`None` inside: absent).
    fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<Option<Record>>, StoreError>> + Send;
    /// Records a replay id on an accepted event's item before the replay is sent
    /// ([`REQUEST_REPLAY_CONDITION`]): `Ok(false)` where the item is absent, expired or holds
    /// another body's hash.
    fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The take of a replay: as [`LedgerStore::take`], under [`REPLAY_TAKE_CONDITION`];
    /// `Completed` means this replay completed already.
    fn take_replay(
        &self,
        take: &Take,
        replay_id: &str,
    ) -> impl Future<Output = Result<TakeOutcome, StoreError>> + Send;
    /// The completion of a replay: as [`LedgerStore::complete`], and the id recorded.
    fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// A replay of a key that had completed, failed (`failed`) or throttled: COMPLETED
    /// again under [`GIVE_BACK_REPLAY_CONDITION`]; `Some(failures)` as [`LedgerStore::fail`],
    /// `None` where the condition failed (the key never completed, or the lease was lost).
    fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send;
}

impl<T: LedgerStore> LedgerStore for std::sync::Arc<T> {
    fn claim(
        &self,
        claim: &Claim,
    ) -> impl Future<Output = Result<ClaimOutcome, StoreError>> + Send {
        (**self).claim(claim)
    }
    fn release(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).release(key, owner, now_ms)
    }
    fn take(&self, take: &Take) -> impl Future<Output = Result<TakeOutcome, StoreError>> + Send {
        (**self).take(take)
    }
    fn complete(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).complete(key, owner, now_ms)
    }
    fn fail(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send {
        (**self).fail(key, owner, error, now_ms)
    }
    fn defer(
        &self,
        key: &str,
        owner: &str,
        reason: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).defer(key, owner, reason, now_ms)
    }
    fn note_refusal(
        &self,
        key: &str,
        reason: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).note_refusal(key, reason, now_ms)
    }
    fn open_handshake(
        &self,
        source: &str,
        until_s: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).open_handshake(source, until_s)
    }
    fn keep_hook_secret(
        &self,
        source: &str,
        secret: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).keep_hook_secret(source, secret, now_ms)
    }
    fn hook_secret(
        &self,
        source: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send {
        (**self).hook_secret(source)
    }
    fn guard_body(
        &self,
        guard: &BodyGuard,
        now_ms: i64,
    ) -> impl Future<Output = Result<GuardOutcome, StoreError>> + Send {
        (**self).guard_body(guard, now_ms)
    }
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Record>, StoreError>> + Send {
        (**self).get(key)
    }
    fn mark_resent(
        &self,
        key: &str,
        owner: &str,
        payload_sha256: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<Option<Record>>, StoreError>> + Send {
        (**self).mark_resent(key, owner, payload_sha256, now_ms)
    }
    fn request_replay(
        &self,
        key: &str,
        payload_sha256: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).request_replay(key, payload_sha256, replay_id, now_ms)
    }
    fn take_replay(
        &self,
        take: &Take,
        replay_id: &str,
    ) -> impl Future<Output = Result<TakeOutcome, StoreError>> + Send {
        (**self).take_replay(take, replay_id)
    }
    fn complete_replay(
        &self,
        key: &str,
        owner: &str,
        replay_id: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).complete_replay(key, owner, replay_id, now_ms)
    }
    fn give_back_replay(
        &self,
        key: &str,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send {
        (**self).give_back_replay(key, owner, error, failed)
    }
}

#[cfg(test)]
mod tests;
