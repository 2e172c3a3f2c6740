//! Scenarios of the receiver's transitions: claim, release, the body guard and a handshake's
//! kept secret.

use inbox::ledger::{
    guard_key, BodyGuard, ClaimOutcome, GuardOutcome, LedgerStore, Record, Status, TakeOutcome,
};
use inbox::receiver::accepted_response;

use super::run::{claim_at, claimed_record, first_expired_ms, take_at, Obs, Run, SHA};
use super::{HOUR_S, K, LEASE_MS, T};

// --- claim -------------------------------------------------------------------------

pub async fn claim_on_absent_writes_the_whole_record<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
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
        archived_at: None,
        replays: Default::default(),
        replay_requests: Default::default(),
        resent_by: None,
    };
    assert_eq!(r.get().await, Some(expected));
    r.trace
}

pub async fn claim_on_expired_item_is_a_fresh_claim<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
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

pub async fn claim_on_received_is_refused_whatever_its_lease_until_it_expires<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let first = r.received("dead").await;
    // Live or run out, a RECEIVED item may already be on the queue: never claimed anew.
    r.refused_claim("rx2", T + LEASE_MS, &first, "lease still live")
        .await;
    r.refused_claim("rx2", T + LEASE_MS + 1, &first, "lease ran out")
        .await;
    let last_ms = first_expired_ms(first.expires_at) - 1;
    r.refused_claim("rx2", last_ms, &first, "an hour on, not yet expired")
        .await;
    let now = first_expired_ms(first.expires_at);
    assert_eq!(r.get().await, Some(first), "a refused claim writes nothing");
    // Only past expires_at is it absent, and claimed as a first delivery.
    assert_eq!(r.claim(&claim_at("rx2", now)).await, ClaimOutcome::Claimed);
    assert_eq!(r.get().await, Some(claimed_record(&claim_at("rx2", now))));
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
    // PROCESSING, live lease and run-out lease alike.
    let t = take_at("c1", T + 1000, 5000);
    assert_eq!(r.take(&t).await, TakeOutcome::Taken { attempts: 2 });
    let processing = r.get().await.expect("processing");
    for now in [T + 2000, T + 1000 + 5000 + 1] {
        r.refused_claim("rx2", now, &processing, "PROCESSING").await;
    }
    assert!(r.fail("c1", "boom", T + 3000).await);
    let failed = r.get().await.expect("failed");
    r.refused_claim("rx2", T + 4000, &failed, "FAILED").await;
    r.taken("c2", T + 5000, 5000, 3).await;
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

/// A duplicate marks a live RECEIVED claim before it sends the event behind it; the claimant
/// may then no longer release it, nor release once its own lease ran out (docs/design.md §4).
pub async fn a_resent_claim_is_never_released_nor_one_whose_lease_ran_out<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    assert_eq!(r.mark_resent("dup", SHA, T).await, Some(None), "absent");
    r.received("rx").await;
    assert_eq!(
        r.mark_resent("dup", "sha-other", T + 1).await,
        Some(Some(Status::Received)),
        "another body is never sent"
    );
    assert!(
        !r.release_at("rx", T + LEASE_MS + 1).await,
        "its lease ran out"
    );
    assert_eq!(r.mark_resent("dup", SHA, T + 2).await, None, "marked");
    assert!(!r.release_at("rx", T + 3).await, "resent: kept");
    let kept = r.get().await.expect("kept");
    assert_eq!(kept.resent_by.as_deref(), Some("dup"));
    r.taken("c1", T + 5, 60_000, 1).await;
    assert_eq!(
        r.mark_resent("dup2", SHA, T + 6).await,
        Some(Some(Status::Processing)),
        "taken: nothing to send"
    );
    r.trace
}

// --- guard body ------------------------------------------------------------------

/// The body guard: new, or again under the same event key, passes (and writes); under
/// another key within the window it is a replay (and writes nothing); past the window
/// it is new again. The guard item leaves the event item alone.
pub async fn guard_body_refuses_another_key_within_the_window<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let g = |event_key: &str, now_ms: i64| BodyGuard {
        key: guard_key("github", "abc"),
        event_key: event_key.to_owned(),
        expires_at: now_ms.div_euclid(1000) + 60,
    };
    for (who, now, expect) in [
        ("github:d-1", T, GuardOutcome::Fresh),
        ("github:d-1", T + 1_000, GuardOutcome::Fresh),
        ("github:d-2", T + 2_000, GuardOutcome::Replayed),
        // The first write at T+1s holds until T+61s, inclusive.
        ("github:d-3", T + 61_999, GuardOutcome::Replayed),
        ("github:d-4", T + 62_000, GuardOutcome::Fresh),
        ("github:d-1", T + 63_000, GuardOutcome::Replayed),
        ("github:d-4", T + 64_000, GuardOutcome::Fresh),
    ] {
        let out = l
            .guard_body(&g(who, now), now)
            .await
            .expect("guard answered");
        assert_eq!(out, expect, "{who} at {now}");
        r.note(format!("guard by {who} at {now}"), Obs::Guard(out));
    }
    assert_eq!(guard_key("github", "abc"), "#guard:github:abc");
    assert_eq!(r.get().await, None, "no event item written");
    r.trace
}

/// A handshake's secret (Asana's) is kept only inside a window an operator opened
/// (`OPEN_HANDSHAKE_CONDITION`), and once per source: a second keep, whatever its secret, is
/// refused and the first stays (`KEEP_HOOK_SECRET_CONDITION`), a window is not opened over
/// it; another source's is apart.
pub async fn a_hook_secret_is_kept_once_per_source<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let secs = |ms: i64| ms.div_euclid(1000);
    for (source, until, expect) in [
        ("asana", secs(T) + 600, true),
        ("other", secs(T) + 1, true),
        ("late", secs(T) - 1, true),
    ] {
        let opened = l
            .open_handshake(source, until)
            .await
            .expect("open answered");
        assert_eq!(opened, expect, "open {source}");
        r.note(format!("open {source} until {until}"), Obs::Done(opened));
    }
    for (source, secret, now, expect) in [
        ("none", "zero", T, false),
        ("late", "zero", T, false),
        ("asana", "first", T, true),
        ("asana", "second", T + 1_000, false),
        ("asana", "first", T + 2_000, false),
        ("other", "third", T + 3_000, false),
        ("other", "third", T + 500, true),
    ] {
        let kept = l
            .keep_hook_secret(source, secret, now)
            .await
            .expect("keep answered");
        assert_eq!(kept, expect, "{source} {secret} at {now}");
        r.note(format!("keep {source} {secret} at {now}"), Obs::Done(kept));
    }
    for (source, expect) in [
        ("asana", Some("first")),
        ("other", Some("third")),
        ("none", None),
        ("late", None),
    ] {
        let secret = l.hook_secret(source).await.expect("read answered");
        assert_eq!(secret.as_deref(), expect, "{source}");
        r.note(format!("secret of {source}"), Obs::Secret(secret));
    }
    let reopened = l
        .open_handshake("asana", secs(T) + 900)
        .await
        .expect("open answered");
    assert!(!reopened, "a window opened over a kept secret");
    r.note("open asana again".to_owned(), Obs::Done(reopened));
    assert_eq!(r.get().await, None, "no event item written");
    r.trace
}
