//! Runs transitions on one adapter and records what each answered and each read saw.

use inbox::ledger::{
    Claim, ClaimOutcome, GuardOutcome, LedgerStore, Record, Status, Take, TakeItem, TakeOutcome,
};
use inbox::receiver::accepted_response;

use super::{HOUR_S, K, LEASE_MS, T};

/// One observation: a transition's answer or a read. (A test trace: the record read stays
/// inline, boxing it would only add noise.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Obs {
    Claim(ClaimOutcome),
    Take(TakeOutcome),
    Done(bool),
    /// A fail's answer: the key's real failures now, or `None` (refused).
    Failed(Option<u32>),
    Get(Option<Record>),
    Guard(GuardOutcome),
    /// A kept handshake secret read back.
    Secret(Option<String>),
}

/// Runs transitions on one adapter and keeps everything it saw.
pub struct Run<'a, L> {
    ledger: &'a L,
    pub trace: Vec<(String, Obs)>,
}

pub fn claim_at(owner: &str, now_ms: i64) -> Claim {
    let (response_status, response_body) = accepted_response(K);
    Claim {
        key: K.to_owned(),
        source: "github".to_owned(),
        payload_sha256: SHA.to_owned(),
        owner: owner.to_owned(),
        now_ms,
        lease_until_ms: now_ms + LEASE_MS,
        expires_at: now_ms.div_euclid(1000) + HOUR_S,
        response_status,
        response_body,
        event_type: None,
        trace_id: None,
    }
}

/// The body hash of the event the scenarios' receiver `rx` accepted ([`claim_at`]`("rx", …)`):
/// what every message of that event carries.
pub const SHA: &str = "sha-rx";

pub fn take_at(owner: &str, now_ms: i64, lease_ms: i64) -> Take {
    Take {
        key: K.to_owned(),
        source: "github".to_owned(),
        payload_sha256: SHA.to_owned(),
        owner: owner.to_owned(),
        now_ms,
        lease_until_ms: now_ms + lease_ms,
        expires_at: now_ms.div_euclid(1000) + 2 * HOUR_S,
        response_status: 200,
        response_body: accepted_response(K).1,
        archived_at: None,
        item: TakeItem::Event,
    }
}

impl<'a, L: LedgerStore> Run<'a, L> {
    pub fn new(ledger: &'a L) -> Self {
        Self {
            ledger,
            trace: Vec::new(),
        }
    }

    pub fn note(&mut self, what: String, obs: Obs) {
        self.trace.push((what, obs));
    }

    pub async fn claim(&mut self, c: &Claim) -> ClaimOutcome {
        let out = self.ledger.claim(c).await.expect("claim answered");
        self.note(
            format!("claim by {} at {}", c.owner, c.now_ms),
            Obs::Claim(out.clone()),
        );
        out
    }

    pub async fn release(&mut self, owner: &str) -> bool {
        self.release_at(owner, T).await
    }

    pub async fn release_at(&mut self, owner: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .release(K, owner, now_ms)
            .await
            .expect("release answered");
        self.note(format!("release by {owner} at {now_ms}"), Obs::Done(out));
        out
    }

    /// A duplicate's mark before its send behind a live claim: `Ok(None)` marked, else the
    /// item as it was (shown as its status, `None` absent).
    pub async fn mark_resent(
        &mut self,
        owner: &str,
        sha: &str,
        now_ms: i64,
    ) -> Option<Option<Status>> {
        let out = self
            .ledger
            .mark_resent(K, owner, sha, now_ms)
            .await
            .expect("mark answered");
        let shown = out.as_ref().map(|old| old.as_ref().map(|r| r.status));
        self.note(
            format!("mark resent by {owner} at {now_ms}: {shown:?}"),
            Obs::Done(out.is_none()),
        );
        shown
    }

    /// `inbox-ops replay` records `rid` on the item for a body hash.
    pub async fn request_replay(&mut self, sha: &str, rid: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .request_replay(K, sha, rid, now_ms)
            .await
            .expect("request answered");
        self.note(format!("request replay {rid} at {now_ms}"), Obs::Done(out));
        out
    }

    pub async fn take(&mut self, t: &Take) -> TakeOutcome {
        let out = self.ledger.take(t).await.expect("take answered");
        self.note(
            format!("take by {} at {}", t.owner, t.now_ms),
            Obs::Take(out.clone()),
        );
        out
    }

    pub async fn complete(&mut self, owner: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .complete(K, owner, now_ms)
            .await
            .expect("complete answered");
        self.note(format!("complete by {owner} at {now_ms}"), Obs::Done(out));
        out
    }

    pub async fn fail(&mut self, owner: &str, error: &str, now_ms: i64) -> bool {
        self.failures(owner, error, now_ms).await.is_some()
    }

    /// A fail, and the key's real failures it answers with.
    pub async fn failures(&mut self, owner: &str, error: &str, now_ms: i64) -> Option<u32> {
        let out = self
            .ledger
            .fail(K, owner, error, now_ms)
            .await
            .expect("fail answered");
        self.note(format!("fail by {owner} at {now_ms}"), Obs::Failed(out));
        out
    }

    pub async fn defer(&mut self, owner: &str, reason: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .defer(K, owner, reason, now_ms)
            .await
            .expect("defer answered");
        self.note(format!("defer by {owner} at {now_ms}"), Obs::Done(out));
        out
    }

    pub async fn take_replay(&mut self, t: &Take, rid: &str) -> TakeOutcome {
        let out = self
            .ledger
            .take_replay(t, rid)
            .await
            .expect("replay take answered");
        self.note(
            format!("take replay {rid} by {} at {}", t.owner, t.now_ms),
            Obs::Take(out.clone()),
        );
        out
    }

    pub async fn complete_replay(&mut self, owner: &str, rid: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .complete_replay(K, owner, rid, now_ms)
            .await
            .expect("replay complete answered");
        self.note(
            format!("complete replay {rid} by {owner} at {now_ms}"),
            Obs::Done(out),
        );
        out
    }

    /// A replay's give-back, and the key's real failures it answers with.
    pub async fn give_back_replay(
        &mut self,
        owner: &str,
        error: &str,
        failed: bool,
    ) -> Option<u32> {
        let out = self
            .ledger
            .give_back_replay(K, owner, error, failed)
            .await
            .expect("give back answered");
        self.note(
            format!("give back replay by {owner}, failed {failed}"),
            Obs::Failed(out),
        );
        out
    }

    pub async fn get(&mut self) -> Option<Record> {
        let out = self.ledger.get(K).await.expect("get answered");
        self.note("get".to_owned(), Obs::Get(out.clone()));
        out
    }

    /// A claim by `owner` at `now_ms` that must be refused, handing back `holder`, the
    /// record as it stands (`state` names the case in a failure).
    pub async fn refused_claim(&mut self, owner: &str, now_ms: i64, holder: &Record, state: &str) {
        match self.claim(&claim_at(owner, now_ms)).await {
            ClaimOutcome::Exists(old) => assert_eq!(*old, *holder, "{state}"),
            other => panic!("{state}: expected the claim refused, got {other:?}"),
        }
    }

    /// A take by `owner` at `now_ms` that must succeed, as attempt number `attempts`.
    pub async fn taken(&mut self, owner: &str, now_ms: i64, lease_ms: i64, attempts: u32) {
        let outcome = self.take(&take_at(owner, now_ms, lease_ms)).await;
        assert_eq!(outcome, TakeOutcome::Taken { attempts }, "take by {owner}");
    }

    // Reaching a state, through the transitions only.

    /// RECEIVED, claimed by `rx` at `T`.
    pub async fn received(&mut self, rx: &str) -> Record {
        assert_eq!(self.claim(&claim_at(rx, T)).await, ClaimOutcome::Claimed);
        self.get().await.expect("claimed")
    }

    /// QUEUED: claimed by "rx" at `T`, taken by "c0" at `T + 500` and deferred (a throttle)
    /// at `T + 600`, one attempt counted. (QUEUED is only a deferred item's status.)
    pub async fn queued(&mut self) -> Record {
        self.received("rx").await;
        self.taken("c0", T + 500, 60_000, 1).await;
        assert!(self.defer("c0", "throttled", T + 600).await);
        self.get().await.expect("queued")
    }

    /// PROCESSING, taken by `owner` at `T + 1000` (from RECEIVED) with a lease of `lease_ms`.
    pub async fn processing(&mut self, owner: &str, lease_ms: i64) -> Record {
        self.received("rx").await;
        assert_eq!(
            self.take(&take_at(owner, T + 1000, lease_ms)).await,
            TakeOutcome::Taken { attempts: 1 }
        );
        self.get().await.expect("processing")
    }

    /// COMPLETED by "c1" at `T + 2000`.
    pub async fn completed(&mut self) -> Record {
        self.processing("c1", 60_000).await;
        assert!(self.complete("c1", T + 2000).await);
        self.get().await.expect("completed")
    }

    /// FAILED by "c1" at `T + 2000`.
    pub async fn failed(&mut self) -> Record {
        self.processing("c1", 60_000).await;
        assert!(self.fail("c1", "boom", T + 2000).await);
        self.get().await.expect("failed")
    }
}

/// What a successful claim writes: the whole item, nothing kept from before.
pub fn claimed_record(c: &Claim) -> Record {
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
    }
}

/// The first epoch millisecond at which an item with this `expires_at` counts as expired.
pub fn first_expired_ms(expires_at: i64) -> i64 {
    (expires_at + 1) * 1000
}
