//! Scenarios of a replay's transitions: take a replay, complete a replay.

use inbox::ledger::{LedgerStore, Status, TakeOutcome, TakeRefusal};

use super::run::{take_at, Obs, Run, SHA};
use super::T;

pub async fn a_replay_runs_a_completed_key_once_per_replay_id<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    r.completed().await;
    assert!(r.request_replay(SHA, "rp-1", T + 2500).await);
    assert!(r.request_replay(SHA, "rp-2", T + 2500).await);
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

/// A replay runs only on an accepted event's item that records its id: absent, or present
/// without the id, it is refused and writes nothing.
pub async fn a_replay_of_an_absent_or_unrecorded_key_is_refused<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    assert_eq!(
        r.take_replay(&take_at("r1", T, 60_000), "rp-1").await,
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert_eq!(r.get().await, None);
    let done = r.completed().await;
    assert_eq!(
        r.take_replay(&take_at("r1", T + 3000, 60_000), "rp-1")
            .await,
        TakeOutcome::Refused(TakeRefusal::ReplayNotRecorded)
    );
    assert_eq!(r.get().await, Some(done));
    r.trace
}

/// `inbox-ops replay` records an id only on an item that holds the archived envelope's body.
pub async fn a_replay_is_recorded_only_on_its_events_body<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    assert!(!r.request_replay(SHA, "rp-1", T).await, "absent");
    r.completed().await;
    assert!(!r.request_replay("sha-planted", "rp-1", T + 3000).await);
    assert!(r.request_replay(SHA, "rp-1", T + 3000).await);
    assert!(
        r.request_replay(SHA, "rp-1", T + 3001).await,
        "again: a set"
    );
    let item = r.get().await.expect("item");
    assert_eq!(item.replay_requests.iter().collect::<Vec<_>>(), ["rp-1"]);
    r.trace
}

/// A replay that fails or is throttled leaves a key that had completed COMPLETED,
/// and a late ordinary copy of the original, arriving while a replay holds the key or after
/// one died holding it, still does nothing.
pub async fn a_replay_that_does_not_complete_leaves_the_key_completed<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let before = r.completed().await;
    assert!(r.request_replay(SHA, "rp-1", T + 2500).await);
    // A failed replay: COMPLETED again, its failure counted, the lease gone, no replay id.
    assert!(matches!(
        r.take_replay(&take_at("r1", T + 3000, 60_000), "rp-1")
            .await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(
        r.take(&take_at("c2", T + 3100, 60_000)).await,
        TakeOutcome::Completed,
        "an ordinary copy meets a key a replay holds as done"
    );
    assert_eq!(
        r.give_back_replay("r2", "boom", true).await,
        None,
        "only with the lease"
    );
    assert_eq!(r.give_back_replay("r1", "boom", true).await, Some(1));
    let after = r.get().await.expect("kept");
    assert_eq!(after.status, Status::Completed);
    assert_eq!(after.completed_at, before.completed_at);
    assert_eq!((after.lease_owner, after.lease_until), (None, None));
    assert_eq!(after.last_error.as_deref(), Some("boom"));
    assert!(after.replays.is_empty());
    assert_eq!(
        r.take(&take_at("c3", T + 4000, 60_000)).await,
        TakeOutcome::Completed
    );
    // A throttled replay: COMPLETED again, no failure counted.
    assert!(matches!(
        r.take_replay(&take_at("r3", T + 5000, 60_000), "rp-1")
            .await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(r.give_back_replay("r3", "429", false).await, Some(1));
    assert_eq!(r.get().await.expect("kept").status, Status::Completed);
    // A replay that died holding the key: once its lease ran out, an ordinary copy still
    // does nothing, and the replay's own redelivery runs it.
    assert!(matches!(
        r.take_replay(&take_at("r4", T + 6000, 1000), "rp-1").await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(
        r.take(&take_at("c4", T + 8000, 60_000)).await,
        TakeOutcome::Completed
    );
    assert!(matches!(
        r.take_replay(&take_at("r5", T + 8000, 60_000), "rp-1")
            .await,
        TakeOutcome::Taken { .. }
    ));
    assert!(r.complete_replay("r5", "rp-1", T + 9000).await);
    assert_eq!(r.get().await.expect("kept").replays.len(), 1);
    r.trace
}

/// A replay of a key that never completed gives nothing back: it fails as a take does.
pub async fn a_replay_of_a_key_that_never_completed_is_not_given_back<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    r.failed().await;
    assert!(r.request_replay(SHA, "rp-1", T + 2500).await);
    assert!(matches!(
        r.take_replay(&take_at("r1", T + 3000, 60_000), "rp-1")
            .await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(r.give_back_replay("r1", "boom", true).await, None);
    assert_eq!(r.failures("r1", "boom", T + 3500).await, Some(2));
    assert_eq!(r.get().await.expect("kept").status, Status::Failed);
    r.trace
}
