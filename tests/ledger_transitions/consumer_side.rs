//! Scenarios of the consumer's transitions (take, complete, fail, defer), and units and a
//! record's round trip.

use inbox::ledger::{
    ClaimOutcome, LedgerStore, Record, Status, Take, TakeItem, TakeOutcome, TakeRefusal,
};

use super::run::{claim_at, first_expired_ms, take_at, Obs, Run};
use super::{HOUR_S, K, LEASE_MS, T};

// --- take ------------------------------------------------------------------------------

/// Only an accepted event is work (docs/design.md §5): the take of an absent event item, or
/// of one that holds another body's hash, is refused and writes nothing.
pub async fn take_on_absent_or_another_body_is_refused<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let t = take_at("c1", T, 60_000);
    assert_eq!(
        r.take(&t).await,
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert_eq!(r.get().await, None, "nothing written");
    let received = r.received("rx").await;
    let forged = Take {
        payload_sha256: "sha-forged".to_owned(),
        ..take_at("c1", T + 5, 60_000)
    };
    assert_eq!(
        r.take(&forged).await,
        TakeOutcome::Refused(TakeRefusal::PayloadDiffers)
    );
    assert_eq!(r.get().await, Some(received), "untouched");
    r.trace
}

/// An (event, destination) pair's take (`indexed: false`) creates its item without
/// `received_at`, the sort key of the index of events: the console's list never shows it; a
/// replay's take of a pair neither.
pub async fn a_pairs_take_leaves_it_out_of_the_event_index<L: LedgerStore>(
    l: &L,
) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let t = Take {
        item: TakeItem::Pair,
        ..take_at("c1", T, 60_000)
    };
    assert_eq!(r.take(&t).await, TakeOutcome::Taken { attempts: 1 });
    let taken = r.get().await.expect("the pair's item");
    assert_eq!(taken.received_at, 0, "no received_at");
    assert_eq!(taken.status, Status::Processing);
    assert!(r.complete("c1", T + 10).await);
    let again = Take {
        item: TakeItem::Pair,
        ..take_at("c2", T + 20, 60_000)
    };
    assert_eq!(
        r.take_replay(&again, "rp-1").await,
        TakeOutcome::Taken { attempts: 2 }
    );
    assert_eq!(r.get().await.expect("item").received_at, 0);
    r.trace
}

/// An event's item past `expires_at` counts as absent: a message that outlived it is
/// refused (the retention chain keeps every accepted event's item longer than its messages).
pub async fn take_on_expired_is_refused<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let done = r.completed().await;
    let last_ms = first_expired_ms(done.expires_at) - 1;
    assert_eq!(
        r.take(&take_at("c2", last_ms, 60_000)).await,
        TakeOutcome::Completed
    );
    let now = first_expired_ms(done.expires_at);
    assert_eq!(
        r.take(&take_at("c2", now, 60_000)).await,
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert_eq!(r.get().await, Some(done), "a refused take writes nothing");
    r.trace
}

pub async fn take_on_received_and_queued<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    // RECEIVED with a live receiver lease: the message is on the queue (the receiver's send
    // may not have returned yet), so the consumer may take it.
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

    // Let it expire and start over, to take it from QUEUED (a throttled try deferred it).
    let done = r.get().await.expect("completed");
    let later = first_expired_ms(done.expires_at);
    assert_eq!(
        r.claim(&claim_at("rx2", later)).await,
        ClaimOutcome::Claimed
    );
    r.taken("c1", later + 1, 60_000, 1).await;
    assert!(r.defer("c1", "throttled", later + 2).await);
    let queued = r.get().await.expect("queued");
    assert_eq!(queued.status, Status::Queued);
    r.taken("c2", later + 5, 60_000, 2).await;
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

// --- complete / fail ---------------------------------------------------------------

pub async fn complete_and_fail_only_with_the_lease<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    assert!(!r.complete("c1", T).await, "absent");
    assert!(!r.fail("c1", "x", T).await, "absent");
    assert_eq!(r.get().await, None, "a refused finish creates nothing");
    let received = r.received("rx").await;
    // The receiver's lease is not a consumer's lease: RECEIVED cannot be finished.
    assert!(!r.complete("rx", T + 1).await);
    assert!(!r.fail("rx", "x", T + 1).await);
    assert_eq!(r.get().await, Some(received));

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
            archived_at: None,
            replays: Default::default(),
            replay_requests: Default::default(),
            resent_by: None,
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
    assert!(
        !r.defer("c1", "again", T + 2001).await,
        "QUEUED: the lease ended"
    );
    assert!(
        !r.complete("c1", T + 2001).await,
        "QUEUED cannot be finished"
    );
    assert!(
        !r.fail("c1", "x", T + 2001).await,
        "QUEUED cannot be failed"
    );
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
    r.received("rx").await;
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
    // At T + 1 hour (ms) the item is in its last second; one second later it has expired.
    let hour_later = T + HOUR_S * 1000;
    r.refused_claim("rx2", hour_later, &rec, "its last second")
        .await;
    let next = first_expired_ms(rec.expires_at);
    assert_eq!(next, hour_later + 1000);
    assert_eq!(r.claim(&claim_at("rx2", next)).await, ClaimOutcome::Claimed);
    let q = r.get().await.expect("claimed");
    assert!(
        !q.is_expired(next + 1000),
        "a seconds value compared as milliseconds would look long expired"
    );
    // The consumer: the same units.
    r.taken("c1", next + 1, 45_000, 1).await;
    let p = r.get().await.expect("processing");
    assert_eq!(p.lease_until, Some(next + 1 + 45_000));
    assert!(
        (1_000_000_000..10_000_000_000).contains(&p.expires_at),
        "{}",
        p.expires_at
    );
    assert!(r.complete("c1", next + 2).await);
    let done = r.get().await.expect("completed");
    let completed_at = done.completed_at.expect("completed_at");
    assert!((1_000_000_000_000..10_000_000_000_000).contains(&completed_at));
    r.trace
}

pub async fn a_record_round_trips_with_every_field<L: LedgerStore>(l: &L) -> Vec<(String, Obs)> {
    let mut r = Run::new(l);
    let mut c = claim_at("rx", T);
    c.key = K.to_owned();
    c.payload_sha256 =
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".to_owned();
    c.response_body = r#"{"status":"accepted","key":"github:d-1","note":"ünïcode ✓"}"#.to_owned();
    assert_eq!(r.claim(&c).await, ClaimOutcome::Claimed);
    let t = Take {
        payload_sha256: c.payload_sha256.clone(),
        ..take_at("c1", T + 100, 1000)
    };
    assert_eq!(r.take(&t).await, TakeOutcome::Taken { attempts: 1 });
    assert!(
        r.fail(
            "c1",
            "forward answered 503 Service Unavailable: \"quoted\"",
            T + 200
        )
        .await
    );
    let again = Take {
        payload_sha256: c.payload_sha256.clone(),
        ..take_at("c2", T + 300, 1000)
    };
    assert_eq!(r.take(&again).await, TakeOutcome::Taken { attempts: 2 });
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
        archived_at: None,
        replays: Default::default(),
        replay_requests: Default::default(),
        resent_by: None,
    };
    assert_eq!(r.get().await, Some(expected));
    // A refused claim hands back the same record (ALL_OLD, or the read standing in).
    match r.claim(&claim_at("rx9", T + 500)).await {
        ClaimOutcome::Exists(old) => assert_eq!(Some(*old), r.get().await),
        other => panic!("expected Exists, got {other:?}"),
    }
    r.trace
}
