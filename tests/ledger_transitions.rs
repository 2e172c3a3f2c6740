//! The ledger's transitions (claim, release, mark queued, take, complete, fail, defer),
//! written once and run against both adapters: the in-memory `MemoryLedger` and the
//! `DynamoLedger` on a real AWS-API server (moto on loopback, the table made from
//! template.yaml). Every scenario asserts its expected outcomes itself and records
//! each outcome and each `get()` in a trace; the two adapters' traces must be identical, so
//! the DynamoDB condition expressions and the in-memory predicates cannot drift apart.
//!
//! Time is explicit: every call takes its `now_ms`, so the scenarios are deterministic and
//! the DynamoDB adapter's clock is whatever the scenario passes.

use devstack::testkit::LocalAws;
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::{Claim, ClaimOutcome, LedgerStore, Record, Status, Take, TakeOutcome};
use inbox::receiver::accepted_response;

/// A fixed "now": 2023-11-14T22:13:20Z, in epoch milliseconds.
const T: i64 = 1_700_000_000_000;
/// Seconds in an hour.
const HOUR_S: i64 = 3600;
/// The receiver's lease in these scenarios.
const LEASE_MS: i64 = 30_000;
/// The key every scenario works on (each DynamoDB run has its own table).
const K: &str = "github:d-1";

/// One observation: a transition's answer or a read. (A test trace: the record read stays
/// inline, boxing it would only add noise.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
enum Obs {
    Claim(ClaimOutcome),
    Take(TakeOutcome),
    Done(bool),
    /// A fail's answer: the key's real failures now, or `None` (refused).
    Failed(Option<u32>),
    Get(Option<Record>),
}

/// Runs transitions on one adapter and keeps everything it saw.
struct Run<'a, L> {
    ledger: &'a L,
    trace: Vec<(String, Obs)>,
}

fn claim_at(owner: &str, now_ms: i64) -> Claim {
    let (response_status, response_body) = accepted_response(K);
    Claim {
        key: K.to_owned(),
        source: "github".to_owned(),
        payload_sha256: format!("sha-{owner}"),
        owner: owner.to_owned(),
        now_ms,
        lease_until_ms: now_ms + LEASE_MS,
        expires_at: now_ms.div_euclid(1000) + HOUR_S,
        response_status,
        response_body,
    }
}

fn take_at(owner: &str, now_ms: i64, lease_ms: i64) -> Take {
    Take {
        key: K.to_owned(),
        source: "github".to_owned(),
        payload_sha256: format!("sha-{owner}"),
        owner: owner.to_owned(),
        now_ms,
        lease_until_ms: now_ms + lease_ms,
        expires_at: now_ms.div_euclid(1000) + 2 * HOUR_S,
        response_status: 200,
        response_body: accepted_response(K).1,
    }
}

impl<'a, L: LedgerStore> Run<'a, L> {
    fn new(ledger: &'a L) -> Self {
        Self {
            ledger,
            trace: Vec::new(),
        }
    }

    fn note(&mut self, what: String, obs: Obs) {
        self.trace.push((what, obs));
    }

    async fn claim(&mut self, c: &Claim) -> ClaimOutcome {
        let out = self.ledger.claim(c).await.expect("claim answered");
        self.note(
            format!("claim by {} at {}", c.owner, c.now_ms),
            Obs::Claim(out.clone()),
        );
        out
    }

    async fn release(&mut self, owner: &str) -> bool {
        let out = self
            .ledger
            .release(K, owner)
            .await
            .expect("release answered");
        self.note(format!("release by {owner}"), Obs::Done(out));
        out
    }

    async fn mark_queued(&mut self, owner: &str) -> bool {
        let out = self
            .ledger
            .mark_queued(K, owner)
            .await
            .expect("mark queued answered");
        self.note(format!("mark queued by {owner}"), Obs::Done(out));
        out
    }

    async fn take(&mut self, t: &Take) -> TakeOutcome {
        let out = self.ledger.take(t).await.expect("take answered");
        self.note(
            format!("take by {} at {}", t.owner, t.now_ms),
            Obs::Take(out.clone()),
        );
        out
    }

    async fn complete(&mut self, owner: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .complete(K, owner, now_ms)
            .await
            .expect("complete answered");
        self.note(format!("complete by {owner} at {now_ms}"), Obs::Done(out));
        out
    }

    async fn fail(&mut self, owner: &str, error: &str, now_ms: i64) -> bool {
        self.failures(owner, error, now_ms).await.is_some()
    }

    /// A fail, and the key's real failures it answers with.
    async fn failures(&mut self, owner: &str, error: &str, now_ms: i64) -> Option<u32> {
        let out = self
            .ledger
            .fail(K, owner, error, now_ms)
            .await
            .expect("fail answered");
        self.note(format!("fail by {owner} at {now_ms}"), Obs::Failed(out));
        out
    }

    async fn defer(&mut self, owner: &str, reason: &str, now_ms: i64) -> bool {
        let out = self
            .ledger
            .defer(K, owner, reason, now_ms)
            .await
            .expect("defer answered");
        self.note(format!("defer by {owner} at {now_ms}"), Obs::Done(out));
        out
    }

    async fn take_replay(&mut self, t: &Take, rid: &str) -> TakeOutcome {
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

    async fn complete_replay(&mut self, owner: &str, rid: &str, now_ms: i64) -> bool {
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

    async fn get(&mut self) -> Option<Record> {
        let out = self.ledger.get(K).await.expect("get answered");
        self.note("get".to_owned(), Obs::Get(out.clone()));
        out
    }

    /// A claim by `owner` at `now_ms` that must be refused, handing back `holder`, the
    /// record as it stands (`state` names the case in a failure).
    async fn refused_claim(&mut self, owner: &str, now_ms: i64, holder: &Record, state: &str) {
        match self.claim(&claim_at(owner, now_ms)).await {
            ClaimOutcome::Exists(old) => assert_eq!(*old, *holder, "{state}"),
            other => panic!("{state}: expected the claim refused, got {other:?}"),
        }
    }

    /// A take by `owner` at `now_ms` that must succeed, as attempt number `attempts`.
    async fn taken(&mut self, owner: &str, now_ms: i64, lease_ms: i64, attempts: u32) {
        let outcome = self.take(&take_at(owner, now_ms, lease_ms)).await;
        assert_eq!(outcome, TakeOutcome::Taken { attempts }, "take by {owner}");
    }

    // Reaching a state, through the transitions only.

    /// RECEIVED, claimed by `rx` at `T`.
    async fn received(&mut self, rx: &str) -> Record {
        assert_eq!(self.claim(&claim_at(rx, T)).await, ClaimOutcome::Claimed);
        self.get().await.expect("claimed")
    }

    /// QUEUED (claimed by "rx" at `T`, marked queued).
    async fn queued(&mut self) -> Record {
        self.received("rx").await;
        assert!(self.mark_queued("rx").await);
        self.get().await.expect("queued")
    }

    /// PROCESSING, taken by `owner` at `T + 1000` with a lease of `lease_ms`.
    async fn processing(&mut self, owner: &str, lease_ms: i64) -> Record {
        self.queued().await;
        assert_eq!(
            self.take(&take_at(owner, T + 1000, lease_ms)).await,
            TakeOutcome::Taken { attempts: 1 }
        );
        self.get().await.expect("processing")
    }

    /// COMPLETED by "c1" at `T + 2000`.
    async fn completed(&mut self) -> Record {
        self.processing("c1", 60_000).await;
        assert!(self.complete("c1", T + 2000).await);
        self.get().await.expect("completed")
    }

    /// FAILED by "c1" at `T + 2000`.
    async fn failed(&mut self) -> Record {
        self.processing("c1", 60_000).await;
        assert!(self.fail("c1", "boom", T + 2000).await);
        self.get().await.expect("failed")
    }
}

/// What a successful claim writes: the whole item, nothing kept from before.
fn claimed_record(c: &Claim) -> Record {
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
        replays: Default::default(),
    }
}

/// The first epoch millisecond at which an item with this `expires_at` counts as expired.
fn first_expired_ms(expires_at: i64) -> i64 {
    (expires_at + 1) * 1000
}

/// The scenarios: each runs on whichever adapter it is given.
mod scenarios {
    use super::*;

    // --- claim -------------------------------------------------------------------------

    pub async fn claim_on_absent_writes_the_whole_record<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        assert_eq!(r.get().await, None);
        let c = claim_at("rx", T);
        assert_eq!(r.claim(&c).await, ClaimOutcome::Claimed);
        assert_eq!(r.get().await, Some(claimed_record(&c)));
        let expected = Record {
            key: K.to_owned(),
            source: "github".to_owned(),
            status: Status::Received,
            expires_at: T / 1000 + HOUR_S,
            lease_until: Some(T + LEASE_MS),
            lease_owner: Some("rx".to_owned()),
            payload_sha256: "sha-rx".to_owned(),
            response_status: Some(200),
            response_body: Some(accepted_response(K).1),
            attempts: 0,
            failures: 0,
            last_error: None,
            received_at: T,
            completed_at: None,
            replays: Default::default(),
        };
        assert_eq!(r.get().await, Some(expected));
        r.trace
    }

    pub async fn claim_on_expired_item_is_a_fresh_claim<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let done = r.completed().await;
        // The last second of its life: still there, a duplicate.
        let last_ms = first_expired_ms(done.expires_at) - 1;
        r.refused_claim("rx2", last_ms, &done, "not yet expired")
            .await;
        // One millisecond later it is past expires_at: absent, although not deleted.
        let now = first_expired_ms(done.expires_at);
        assert_eq!(r.claim(&claim_at("rx2", now)).await, ClaimOutcome::Claimed);
        let fresh = claimed_record(&claim_at("rx2", now));
        assert_eq!(fresh.attempts, 0);
        assert_eq!(fresh.completed_at, None, "nothing of the old life is kept");
        assert_eq!(r.get().await, Some(fresh));
        r.trace
    }

    pub async fn claim_takes_over_a_received_claim_whose_lease_ran_out<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let first = r.received("dead").await;
        // The lease's last millisecond: still live.
        r.refused_claim("rx2", T + LEASE_MS, &first, "lease still live")
            .await;
        let now = T + LEASE_MS + 1;
        assert_eq!(r.claim(&claim_at("rx2", now)).await, ClaimOutcome::Claimed);
        let taken = r.get().await.expect("claimed");
        assert_eq!(taken.status, Status::Received);
        assert_eq!(taken.lease_owner.as_deref(), Some("rx2"));
        assert_eq!(taken.lease_until, Some(now + LEASE_MS));
        assert_eq!(taken.received_at, now);
        // The dead invocation has lost it: it can neither release nor mark queued.
        assert!(!r.release("dead").await);
        assert!(!r.mark_queued("dead").await);
        assert_eq!(r.get().await, Some(taken));
        r.trace
    }

    pub async fn claim_on_live_received_returns_the_old_record<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let first = r.received("rx").await;
        r.refused_claim("rx2", T + 5, &first, "live RECEIVED").await;
        assert_eq!(r.get().await, Some(first), "a refused claim writes nothing");
        r.trace
    }

    pub async fn claim_on_queued_processing_completed_failed_is_refused<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        // QUEUED has no lease: long after the claim's lease, still a duplicate.
        let queued = r.queued().await;
        assert_eq!(queued.lease_until, None);
        r.refused_claim("rx2", T + 10 * LEASE_MS, &queued, "QUEUED")
            .await;
        // PROCESSING, live lease and run-out lease alike: the claim condition only takes
        // over RECEIVED.
        let t = take_at("c1", T + 1000, 5000);
        assert_eq!(r.take(&t).await, TakeOutcome::Taken { attempts: 1 });
        let processing = r.get().await.expect("processing");
        for now in [T + 2000, T + 1000 + 5000 + 1] {
            r.refused_claim("rx2", now, &processing, "PROCESSING").await;
        }
        assert!(r.fail("c1", "boom", T + 3000).await);
        let failed = r.get().await.expect("failed");
        r.refused_claim("rx2", T + 4000, &failed, "FAILED").await;
        r.taken("c2", T + 5000, 5000, 2).await;
        assert!(r.complete("c2", T + 6000).await);
        let completed = r.get().await.expect("completed");
        match r.claim(&claim_at("rx2", T + 7000)).await {
            ClaimOutcome::Exists(old) => {
                assert_eq!(*old, completed);
                assert_eq!(old.response_status, Some(200));
                assert_eq!(old.response_body, Some(accepted_response(K).1));
            }
            other => panic!("COMPLETED: expected Exists, got {other:?}"),
        }
        assert_eq!(r.get().await, Some(completed));
        r.trace
    }

    // --- release -----------------------------------------------------------------------

    pub async fn release_only_by_the_owner_and_only_before_queued<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        assert!(!r.release("rx").await, "nothing to release");
        let first = r.received("rx").await;
        assert!(!r.release("other").await, "not the owner");
        assert_eq!(r.get().await, Some(first));
        assert!(r.release("rx").await);
        assert_eq!(r.get().await, None, "released: the key is free");
        assert!(!r.release("rx").await, "twice");
        // Free again: the sender's retry claims it as a first delivery.
        assert_eq!(
            r.claim(&claim_at("rx2", T + 10)).await,
            ClaimOutcome::Claimed
        );
        assert!(r.mark_queued("rx2").await);
        let queued = r.get().await.expect("queued");
        assert!(
            !r.release("rx2").await,
            "after mark queued: not even the owner"
        );
        assert_eq!(r.get().await, Some(queued));
        r.trace
    }

    pub async fn release_after_the_consumer_took_it_is_refused<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        r.received("rx").await;
        r.taken("c1", T + 5, 60_000, 1).await;
        let processing = r.get().await.expect("processing");
        assert!(!r.release("rx").await);
        assert_eq!(r.get().await, Some(processing));
        r.trace
    }

    // --- mark queued ---------------------------------------------------------------------

    pub async fn mark_queued_by_owner_clears_the_lease<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        assert!(!r.mark_queued("rx").await, "absent");
        assert_eq!(r.get().await, None, "a refused mark queued creates nothing");
        let first = r.received("rx").await;
        assert!(!r.mark_queued("other").await, "not the owner");
        assert_eq!(r.get().await, Some(first.clone()));
        assert!(r.mark_queued("rx").await);
        let queued = r.get().await.expect("queued");
        assert_eq!(
            queued,
            Record {
                status: Status::Queued,
                lease_until: None,
                lease_owner: None,
                ..first
            }
        );
        assert!(!r.mark_queued("rx").await, "twice");
        assert_eq!(r.get().await, Some(queued));
        r.trace
    }

    pub async fn mark_queued_after_the_consumer_took_it_is_refused<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        r.received("rx").await;
        // The message got to the consumer before the receiver marked it.
        r.taken("c1", T + 5, 60_000, 1).await;
        let processing = r.get().await.expect("processing");
        assert!(!r.mark_queued("rx").await);
        assert_eq!(r.get().await, Some(processing));
        assert!(r.complete("c1", T + 10).await);
        let done = r.get().await.expect("completed");
        assert!(!r.mark_queued("rx").await);
        assert_eq!(r.get().await, Some(done));
        r.trace
    }

    // --- take ------------------------------------------------------------------------------

    pub async fn take_on_absent_creates_the_record<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let t = take_at("c1", T, 60_000);
        assert_eq!(r.take(&t).await, TakeOutcome::Taken { attempts: 1 });
        let (response_status, response_body) = accepted_response(K);
        assert_eq!(
            r.get().await,
            Some(Record {
                key: K.to_owned(),
                source: "github".to_owned(),
                status: Status::Processing,
                expires_at: T / 1000 + 2 * HOUR_S,
                lease_until: Some(T + 60_000),
                lease_owner: Some("c1".to_owned()),
                payload_sha256: "sha-c1".to_owned(),
                response_status: Some(response_status),
                response_body: Some(response_body),
                attempts: 1,
                failures: 0,
                last_error: None,
                received_at: T,
                completed_at: None,
                replays: Default::default(),
            })
        );
        r.trace
    }

    pub async fn take_on_expired_completed_runs_again<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let done = r.completed().await;
        let last_ms = first_expired_ms(done.expires_at) - 1;
        assert_eq!(
            r.take(&take_at("c2", last_ms, 60_000)).await,
            TakeOutcome::Completed
        );
        assert_eq!(
            r.get().await,
            Some(done.clone()),
            "a refused take writes nothing"
        );
        let now = first_expired_ms(done.expires_at);
        let out = r.take(&take_at("c2", now, 60_000)).await;
        assert!(matches!(out, TakeOutcome::Taken { .. }), "{out:?}");
        // The take updates the expired item in place (only a claim replaces a whole item), so
        // both adapters keep its old bookkeeping (attempts counts on, completed_at stays);
        // the trace comparison holds them to the same record.
        let taken = r.get().await.expect("taken");
        assert_eq!(taken.status, Status::Processing);
        assert_eq!(taken.lease_owner.as_deref(), Some("c2"));
        assert_eq!(taken.lease_until, Some(now + 60_000));
        assert_eq!(
            taken.expires_at,
            now / 1000 + 2 * HOUR_S,
            "the take renews expires_at"
        );
        r.trace
    }

    pub async fn take_on_received_and_queued<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        // RECEIVED with a live receiver lease: the message is on the queue (mark queued
        // failed or has not happened yet), so the consumer may take it.
        let received = r.received("rx").await;
        let t = take_at("c1", T + 5, 60_000);
        assert_eq!(r.take(&t).await, TakeOutcome::Taken { attempts: 1 });
        assert_eq!(
            r.get().await,
            Some(Record {
                status: Status::Processing,
                lease_until: Some(T + 5 + 60_000),
                lease_owner: Some("c1".to_owned()),
                expires_at: (T + 5) / 1000 + 2 * HOUR_S,
                attempts: 1,
                ..received
            })
        );
        assert!(r.complete("c1", T + 10).await);

        // Let it expire and start over, to take it from QUEUED.
        let done = r.get().await.expect("completed");
        let later = first_expired_ms(done.expires_at);
        assert_eq!(
            r.claim(&claim_at("rx2", later)).await,
            ClaimOutcome::Claimed
        );
        assert!(r.mark_queued("rx2").await);
        let queued = r.get().await.expect("queued");
        assert_eq!(queued.status, Status::Queued);
        r.taken("c2", later + 5, 60_000, 1).await;
        let taken = r.get().await.expect("taken");
        assert_eq!(taken.status, Status::Processing);
        assert_eq!(taken.lease_owner.as_deref(), Some("c2"));
        assert_eq!(taken.received_at, queued.received_at, "bookkeeping kept");
        assert_eq!(taken.payload_sha256, queued.payload_sha256);
        r.trace
    }

    pub async fn take_on_failed_counts_the_attempt<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let failed = r.failed().await;
        assert_eq!(failed.last_error.as_deref(), Some("boom"));
        assert_eq!(failed.lease_owner, None);
        r.taken("c2", T + 3000, 60_000, 2).await;
        let again = r.get().await.expect("taken");
        assert_eq!(again.status, Status::Processing);
        assert_eq!(again.attempts, 2);
        assert_eq!(again.lease_owner.as_deref(), Some("c2"));
        assert_eq!(
            again.last_error.as_deref(),
            Some("boom"),
            "kept until overwritten"
        );
        r.trace
    }

    pub async fn take_on_processing_live_is_busy_and_run_out_is_taken_over<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let p = r.processing("c1", 5000).await;
        let until = T + 1000 + 5000;
        assert_eq!(p.lease_until, Some(until));
        for now in [T + 1001, until] {
            assert_eq!(
                r.take(&take_at("c2", now, 60_000)).await,
                TakeOutcome::Busy {
                    lease_until: Some(until)
                }
            );
        }
        assert_eq!(r.get().await, Some(p.clone()), "a busy take writes nothing");
        // One millisecond past the lease: taken over, attempts counted.
        r.taken("c2", until + 1, 60_000, 2).await;
        let over = r.get().await.expect("taken over");
        assert_eq!(over.lease_owner.as_deref(), Some("c2"));
        assert_eq!(over.lease_until, Some(until + 1 + 60_000));
        assert_eq!(over.attempts, 2);
        r.trace
    }

    pub async fn take_on_completed_is_acknowledged_without_a_write<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let done = r.completed().await;
        assert_eq!(done.completed_at, Some(T + 2000));
        assert_eq!(
            r.take(&take_at("c2", T + 3000, 60_000)).await,
            TakeOutcome::Completed
        );
        assert_eq!(
            r.take(&take_at("c1", T + 3000, 60_000)).await,
            TakeOutcome::Completed
        );
        assert_eq!(r.get().await, Some(done));
        r.trace
    }

    // --- replay --------------------------------------------------------------------------

    pub async fn a_replay_runs_a_completed_key_once_per_replay_id<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        r.completed().await;
        // The replay takes the COMPLETED key; a second delivery of it meets the live lease.
        assert_eq!(
            r.take_replay(&take_at("r1", T + 3000, 60_000), "rp-1")
                .await,
            TakeOutcome::Taken { attempts: 2 }
        );
        assert!(matches!(
            r.take_replay(&take_at("r2", T + 3500, 60_000), "rp-1")
                .await,
            TakeOutcome::Busy { .. }
        ));
        // Its completion needs the lease, and records the id.
        assert!(!r.complete_replay("r2", "rp-1", T + 4000).await);
        assert!(r.complete_replay("r1", "rp-1", T + 4000).await);
        let done = r.get().await.expect("completed");
        assert_eq!(done.status, Status::Completed);
        assert_eq!(done.replays.iter().collect::<Vec<_>>(), ["rp-1"]);
        assert_eq!(done.completed_at, Some(T + 4000));
        // A second delivery of the same replay does nothing; the original's still does nothing.
        assert_eq!(
            r.take_replay(&take_at("r3", T + 5000, 60_000), "rp-1")
                .await,
            TakeOutcome::Completed
        );
        assert_eq!(
            r.take(&take_at("c3", T + 5000, 60_000)).await,
            TakeOutcome::Completed
        );
        // Another replay runs again, and both ids are kept.
        assert_eq!(
            r.take_replay(&take_at("r4", T + 6000, 60_000), "rp-2")
                .await,
            TakeOutcome::Taken { attempts: 3 }
        );
        assert!(r.fail("r4", "boom", T + 6500).await);
        assert_eq!(
            r.take_replay(&take_at("r5", T + 7000, 60_000), "rp-2")
                .await,
            TakeOutcome::Taken { attempts: 4 }
        );
        assert!(r.complete_replay("r5", "rp-2", T + 8000).await);
        let done = r.get().await.expect("completed");
        assert_eq!(done.replays.iter().collect::<Vec<_>>(), ["rp-1", "rp-2"]);
        assert_eq!(done.failures, 1);
        r.trace
    }

    pub async fn a_replay_of_an_absent_key_creates_it<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        assert_eq!(
            r.take_replay(&take_at("r1", T, 60_000), "rp-1").await,
            TakeOutcome::Taken { attempts: 1 }
        );
        assert!(r.complete_replay("r1", "rp-1", T + 1000).await);
        let done = r.get().await.expect("created");
        assert_eq!(done.status, Status::Completed);
        assert!(done.replays.contains("rp-1"));
        r.trace
    }

    // --- complete / fail ---------------------------------------------------------------

    pub async fn complete_and_fail_only_with_the_lease<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        assert!(!r.complete("c1", T).await, "absent");
        assert!(!r.fail("c1", "x", T).await, "absent");
        assert_eq!(r.get().await, None, "a refused finish creates nothing");
        let received = r.received("rx").await;
        // The receiver's lease is not a consumer's lease: RECEIVED cannot be finished.
        assert!(!r.complete("rx", T + 1).await);
        assert!(!r.fail("rx", "x", T + 1).await);
        assert_eq!(r.get().await, Some(received));
        assert!(r.mark_queued("rx").await);
        assert!(!r.complete("rx", T + 2).await, "QUEUED cannot be finished");

        r.taken("c1", T + 1000, 5000, 1).await;
        assert!(!r.complete("c2", T + 1500).await, "not the owner");
        assert!(!r.fail("c2", "x", T + 1500).await, "not the owner");
        // c1's lease runs out and c2 takes over; c1 has lost it.
        r.taken("c2", T + 6001, 60_000, 2).await;
        let c2 = r.get().await.expect("c2's");
        assert!(!r.complete("c1", T + 6002).await, "lost lease");
        assert!(!r.fail("c1", "late", T + 6002).await, "lost lease");
        assert_eq!(r.get().await, Some(c2.clone()), "the loser wrote nothing");

        assert!(r.fail("c2", "downstream 500", T + 7000).await);
        let failed = r.get().await.expect("failed");
        assert_eq!(
            failed,
            Record {
                status: Status::Failed,
                lease_until: None,
                lease_owner: None,
                last_error: Some("downstream 500".to_owned()),
                failures: 1,
                ..c2
            }
        );
        assert!(
            !r.complete("c2", T + 7001).await,
            "FAILED: the lease ended with the fail"
        );

        r.taken("c3", T + 8000, 60_000, 3).await;
        let p = r.get().await.expect("processing");
        assert!(r.complete("c3", T + 9000).await);
        let done = r.get().await.expect("completed");
        assert_eq!(
            done,
            Record {
                status: Status::Completed,
                lease_until: None,
                lease_owner: None,
                completed_at: Some(T + 9000),
                replays: Default::default(),
                ..p
            }
        );
        assert!(!r.complete("c3", T + 9001).await, "twice");
        assert!(!r.fail("c3", "after", T + 9001).await, "after complete");
        assert_eq!(r.get().await, Some(done));
        r.trace
    }

    // --- defer: a throttled try ------------------------------------------------------------

    pub async fn defer_puts_it_back_to_queued_only_with_the_lease<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        assert!(!r.defer("c1", "throttled", T).await, "absent");
        assert_eq!(r.get().await, None, "a refused defer creates nothing");
        let received = r.received("rx").await;
        assert!(!r.defer("rx", "throttled", T + 1).await, "RECEIVED");
        assert_eq!(r.get().await, Some(received));
        assert!(r.mark_queued("rx").await);
        assert!(!r.defer("rx", "throttled", T + 2).await, "QUEUED");

        r.taken("c1", T + 1000, 5000, 1).await;
        assert!(!r.defer("c2", "throttled", T + 1500).await, "not the owner");
        let p = r.get().await.expect("processing");
        assert!(r.defer("c1", "throttled: retry after 5 s", T + 2000).await);
        let deferred = r.get().await.expect("deferred");
        assert_eq!(
            deferred,
            Record {
                status: Status::Queued,
                lease_until: None,
                lease_owner: None,
                last_error: Some("throttled: retry after 5 s".to_owned()),
                ..p
            },
            "back to QUEUED, no failure counted"
        );
        assert!(!r.defer("c1", "again", T + 2001).await, "the lease ended");
        assert!(!r.complete("c1", T + 2001).await, "the lease ended");
        // A duplicate delivery still replays: QUEUED is not claimable.
        r.refused_claim("rx2", T + 2002, &deferred, "deferred")
            .await;
        // The next take runs it again.
        r.taken("c2", T + 7000, 60_000, 2).await;
        assert!(r.complete("c2", T + 8000).await);
        let done = r.get().await.expect("completed");
        assert_eq!((done.attempts, done.failures), (2, 0));
        assert!(!r.defer("c2", "late", T + 8001).await, "after complete");
        r.trace
    }

    pub async fn fail_counts_real_failures_and_defer_does_not<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        r.queued().await;
        let mut now = T + 1000;
        let mut attempts = 0;
        for (n, throttle) in [(1, false), (1, true), (2, false), (2, true), (3, false)] {
            attempts += 1;
            r.taken("c1", now, 60_000, attempts).await;
            if throttle {
                assert!(r.defer("c1", "throttled", now + 1).await);
            } else {
                assert_eq!(r.failures("c1", "boom", now + 1).await, Some(n));
            }
            assert_eq!(r.get().await.expect("item").failures, n);
            now += 1000;
        }
        assert_eq!(r.failures("c1", "no lease", now).await, None, "refused");
        let item = r.get().await.expect("item");
        assert_eq!(
            (item.status, item.attempts, item.failures),
            (Status::Failed, 5, 3)
        );
        r.trace
    }

    // --- units and round trip ----------------------------------------------------------

    pub async fn expires_at_is_seconds_and_leases_are_milliseconds<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let rec = r.received("rx").await;
        // Seconds: ten digits in this century; milliseconds: thirteen.
        assert!(
            (1_000_000_000..10_000_000_000).contains(&rec.expires_at),
            "{}",
            rec.expires_at
        );
        let lease = rec.lease_until.expect("a lease");
        assert!(
            (1_000_000_000_000..10_000_000_000_000).contains(&lease),
            "{lease}"
        );
        assert!((1_000_000_000_000..10_000_000_000_000).contains(&rec.received_at));
        assert_eq!(rec.expires_at, T / 1000 + HOUR_S);
        assert_eq!(lease, T + LEASE_MS);
        // The two units in conditions: an hour of seconds is not an hour of milliseconds.
        // At T + 1 hour (ms) the item is not expired and the lease (ms) has run out.
        let hour_later = T + HOUR_S * 1000;
        assert_eq!(
            r.claim(&claim_at("rx2", hour_later)).await,
            ClaimOutcome::Claimed
        );
        assert!(r.mark_queued("rx2").await);
        let q = r.get().await.expect("queued");
        assert!(
            !q.is_expired(hour_later + 1000),
            "a seconds value compared as milliseconds would look long expired"
        );
        // The consumer: the same units.
        r.taken("c1", hour_later + 1, 45_000, 1).await;
        let p = r.get().await.expect("processing");
        assert_eq!(p.lease_until, Some(hour_later + 1 + 45_000));
        assert!(
            (1_000_000_000..10_000_000_000).contains(&p.expires_at),
            "{}",
            p.expires_at
        );
        assert!(r.complete("c1", hour_later + 2).await);
        let done = r.get().await.expect("completed");
        let completed_at = done.completed_at.expect("completed_at");
        assert!((1_000_000_000_000..10_000_000_000_000).contains(&completed_at));
        r.trace
    }

    pub async fn a_record_round_trips_with_every_field<L: LedgerStore>(
        l: &L,
    ) -> Vec<(String, Obs)> {
        let mut r = Run::new(l);
        let mut c = claim_at("rx", T);
        c.key = K.to_owned();
        c.payload_sha256 =
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".to_owned();
        c.response_body =
            r#"{"status":"accepted","key":"github:d-1","note":"ünïcode ✓"}"#.to_owned();
        assert_eq!(r.claim(&c).await, ClaimOutcome::Claimed);
        assert!(r.mark_queued("rx").await);
        r.taken("c1", T + 100, 1000, 1).await;
        assert!(
            r.fail(
                "c1",
                "forward answered 503 Service Unavailable: \"quoted\"",
                T + 200
            )
            .await
        );
        r.taken("c2", T + 300, 1000, 2).await;
        assert!(r.complete("c2", T + 400).await);
        let expected = Record {
            key: K.to_owned(),
            source: "github".to_owned(),
            status: Status::Completed,
            expires_at: (T + 300) / 1000 + 2 * HOUR_S,
            lease_until: None,
            lease_owner: None,
            payload_sha256: c.payload_sha256.clone(),
            response_status: Some(200),
            response_body: Some(c.response_body.clone()),
            attempts: 2,
            failures: 1,
            last_error: Some("forward answered 503 Service Unavailable: \"quoted\"".to_owned()),
            received_at: T,
            completed_at: Some(T + 400),
            replays: Default::default(),
        };
        assert_eq!(r.get().await, Some(expected));
        // A refused claim hands back the same record (ALL_OLD, or the read standing in).
        match r.claim(&claim_at("rx9", T + 500)).await {
            ClaimOutcome::Exists(old) => assert_eq!(Some(*old), r.get().await),
            other => panic!("expected Exists, got {other:?}"),
        }
        r.trace
    }
}

fn assert_same_trace(memory: &[(String, Obs)], dynamo: &[(String, Obs)]) {
    for (i, (m, d)) in memory.iter().zip(dynamo).enumerate() {
        assert_eq!(m, d, "step {i}: the adapters differ ({})", m.0);
    }
    assert_eq!(
        memory.len(),
        dynamo.len(),
        "the adapters ran a different number of steps"
    );
}

/// One test per scenario: on the in-memory adapter, then on DynamoDB (moto), same trace.
macro_rules! on_both_adapters {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let memory = MemoryLedger::new();
            let m = scenarios::$name(&memory).await;
            let aws = LocalAws::new("lt").await;
            let d = scenarios::$name(&aws.ledger()).await;
            assert_same_trace(&m, &d);
            assert!(m.len() > 1);
        }
    )*};
}

on_both_adapters!(
    claim_on_absent_writes_the_whole_record,
    claim_on_expired_item_is_a_fresh_claim,
    claim_takes_over_a_received_claim_whose_lease_ran_out,
    claim_on_live_received_returns_the_old_record,
    claim_on_queued_processing_completed_failed_is_refused,
    release_only_by_the_owner_and_only_before_queued,
    release_after_the_consumer_took_it_is_refused,
    mark_queued_by_owner_clears_the_lease,
    mark_queued_after_the_consumer_took_it_is_refused,
    take_on_absent_creates_the_record,
    take_on_expired_completed_runs_again,
    take_on_received_and_queued,
    take_on_failed_counts_the_attempt,
    take_on_processing_live_is_busy_and_run_out_is_taken_over,
    take_on_completed_is_acknowledged_without_a_write,
    a_replay_runs_a_completed_key_once_per_replay_id,
    a_replay_of_an_absent_key_creates_it,
    complete_and_fail_only_with_the_lease,
    defer_puts_it_back_to_queued_only_with_the_lease,
    fail_counts_real_failures_and_defer_does_not,
    expires_at_is_seconds_and_leases_are_milliseconds,
    a_record_round_trips_with_every_field,
);

/// The trace comparison itself must notice a difference.
#[test]
fn a_differing_trace_is_caught() {
    let a = vec![("get".to_owned(), Obs::Done(true))];
    let b = vec![("get".to_owned(), Obs::Done(false))];
    assert!(std::panic::catch_unwind(|| assert_same_trace(&a, &b)).is_err());
}
