//! Scenarios of a replay's transitions: take a replay, complete a replay.

use inbox::ledger::{LedgerStore, Status, TakeOutcome};

use crate::run::{take_at, Obs, Run};
use crate::T;

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
