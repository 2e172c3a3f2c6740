//! The transition rules as plain predicates, case by case, at their boundaries (a lease or an
//! `expires_at` one unit either side of now), with the in-memory adapter standing on them.
//! The same rules as DynamoDB conditions are `tests/ledger_transitions.rs`' (moto); these run
//! without it, so that mutation testing (`make mutants`) sees every rule fail when changed.

use super::*;

/// Now: epoch milliseconds, on a whole second.
const NOW: i64 = 1_700_000_000_000;
const NOW_S: i64 = NOW / 1000;

fn item(status: Status) -> Record {
    Record {
        key: "s:k".into(),
        source: "s".into(),
        status,
        expires_at: NOW_S + 3600,
        lease_until: None,
        lease_owner: None,
        payload_sha256: "h".into(),
        response_status: Some(200),
        response_body: Some("{}".into()),
        attempts: 0,
        failures: 0,
        last_error: None,
        received_at: NOW,
        completed_at: None,
        archived_at: None,
        replays: Default::default(),
    }
}

fn leased(status: Status, owner: &str, until: i64) -> Record {
    Record {
        lease_until: Some(until),
        lease_owner: Some(owner.into()),
        ..item(status)
    }
}

fn expired(status: Status) -> Record {
    Record {
        expires_at: NOW_S - 1,
        ..item(status)
    }
}

const ALL: [Status; 5] = [
    Status::Received,
    Status::Queued,
    Status::Processing,
    Status::Completed,
    Status::Failed,
];

#[test]
fn expires_at_is_epoch_seconds_retention_ahead() {
    assert_eq!(expires_at(1_700_000_000_999, 1), 1_700_000_000 + 3600);
    assert_eq!(expires_at(1_700_000_000_000, 2), 1_700_000_000 + 7200);
    assert_eq!(expires_at(-1, 0), -1);
    // A retention too long for i64 saturates far into the future, never wraps or shrinks.
    assert!(expires_at(0, u64::MAX) > expires_at(0, 1_000_000_000));
}

#[test]
fn statuses_read_back_as_written() {
    let names = ["RECEIVED", "QUEUED", "PROCESSING", "COMPLETED", "FAILED"];
    for (status, name) in ALL.into_iter().zip(names) {
        assert_eq!(status.as_str(), name);
        assert_eq!(Status::parse(name), Some(status));
    }
    assert_eq!(Status::parse("received"), None);
    assert_eq!(Status::parse(""), None);
}

#[test]
fn expiry_is_strictly_after_expires_at_in_seconds() {
    let r = item(Status::Completed);
    let at = r.expires_at * 1000;
    assert!(!r.is_expired(at), "the last second still counts");
    assert!(!r.is_expired(at + 999));
    assert!(r.is_expired(at + 1000));
    assert!(!r.is_expired(at - 1000));
    // Negative milliseconds round down, not towards zero.
    let early = Record {
        expires_at: -1,
        ..item(Status::Completed)
    };
    assert!(!early.is_expired(-1));
    assert!(early.is_expired(1000));
}

#[test]
fn leases_run_out_strictly_after_lease_until() {
    let r = leased(Status::Processing, "me", NOW);
    assert!(!r.lease_ran_out(NOW));
    assert!(r.lease_ran_out(NOW + 1));
    assert!(!r.lease_ran_out(NOW - 1));
    assert!(
        !item(Status::Processing).lease_ran_out(NOW),
        "no lease: nothing runs out"
    );
    assert!(r.owned_by("me"));
    assert!(!r.owned_by("you"));
    assert!(!item(Status::Processing).owned_by("me"));
}

#[test]
fn claim_takes_absent_or_expired_only() {
    assert!(claim_allowed(None, NOW));
    for status in ALL {
        assert!(
            claim_allowed(Some(&expired(status)), NOW),
            "{status:?} expired"
        );
        assert!(!claim_allowed(Some(&item(status)), NOW), "{status:?}");
        let run_out = leased(status, "x", NOW - 1);
        assert!(
            !claim_allowed(Some(&run_out), NOW),
            "{status:?} with its lease run out: it may be on the queue already"
        );
        assert!(
            !claim_allowed(Some(&leased(status, "x", NOW)), NOW),
            "{status:?} live"
        );
    }
}

#[test]
fn release_only_our_own_received_claim() {
    assert!(!release_allowed(None, "me"));
    for status in ALL {
        assert_eq!(
            release_allowed(Some(&leased(status, "me", NOW)), "me"),
            status == Status::Received,
            "{status:?}"
        );
        assert!(!release_allowed(Some(&leased(status, "you", NOW)), "me"));
    }
}

#[test]
fn take_refuses_completed_and_a_live_processing_lease_only() {
    assert!(take_allowed(None, NOW));
    for status in ALL {
        assert!(
            take_allowed(Some(&expired(status)), NOW),
            "{status:?} expired"
        );
        let open = matches!(status, Status::Received | Status::Queued | Status::Failed);
        assert_eq!(take_allowed(Some(&item(status)), NOW), open, "{status:?}");
        assert_eq!(
            take_allowed(Some(&leased(status, "x", NOW - 1)), NOW),
            open || status == Status::Processing,
            "{status:?} with its lease run out"
        );
        assert_eq!(
            take_allowed(Some(&leased(status, "x", NOW)), NOW),
            open,
            "{status:?} live"
        );
    }
}

#[test]
fn finish_and_defer_only_while_we_hold_the_processing_lease() {
    for allowed in [finish_allowed, defer_allowed] {
        assert!(!allowed(None, "me"));
        for status in ALL {
            assert_eq!(
                allowed(Some(&leased(status, "me", NOW)), "me"),
                status == Status::Processing,
                "{status:?}"
            );
            assert!(!allowed(Some(&leased(status, "you", NOW)), "me"));
        }
    }
}

#[test]
fn a_refused_take_is_completed_only_for_a_live_completed_item() {
    assert_eq!(
        refused_take(None, NOW),
        TakeOutcome::Busy { lease_until: None }
    );
    assert_eq!(
        refused_take(Some(item(Status::Completed)), NOW),
        TakeOutcome::Completed
    );
    assert_eq!(
        refused_take(Some(expired(Status::Completed)), NOW),
        TakeOutcome::Busy { lease_until: None }
    );
    assert_eq!(
        refused_take(Some(leased(Status::Processing, "x", NOW + 5)), NOW),
        TakeOutcome::Busy {
            lease_until: Some(NOW + 5)
        }
    );
}

#[test]
fn the_body_guard_passes_new_expired_or_same_key_bodies_only() {
    let guard = |event_key: &str, expires_at: i64| BodyGuard {
        key: guard_key("s", "h"),
        event_key: event_key.into(),
        expires_at,
    };
    assert_eq!(guard_key("s", "h"), "#guard:s:h");
    assert!(guard_body_allowed(None, "s:a", NOW));
    assert!(guard_body_allowed(Some(&guard("s:a", NOW_S)), "s:a", NOW));
    assert!(!guard_body_allowed(Some(&guard("s:a", NOW_S)), "s:b", NOW));
    assert!(!guard_body_allowed(
        Some(&guard("s:a", NOW_S)),
        "s:b",
        NOW + 999
    ));
    assert!(guard_body_allowed(
        Some(&guard("s:a", NOW_S)),
        "s:b",
        NOW + 1000
    ));
    assert!(guard_body_allowed(
        Some(&guard("s:a", NOW_S - 1)),
        "s:b",
        NOW
    ));
}

fn completed_once(status: Status) -> Record {
    Record {
        completed_at: Some(NOW - 10),
        ..item(status)
    }
}

#[test]
fn an_ordinary_take_refuses_a_key_that_completed_once() {
    for status in [Status::Received, Status::Queued, Status::Failed] {
        assert!(
            !take_allowed(Some(&completed_once(status)), NOW),
            "{status:?}"
        );
    }
    let abandoned = Record {
        lease_until: Some(NOW - 1),
        lease_owner: Some("replay".into()),
        ..completed_once(Status::Processing)
    };
    assert!(!take_allowed(Some(&abandoned), NOW), "an abandoned replay");
    assert_eq!(refused_take(Some(abandoned), NOW), TakeOutcome::Completed);
    let forgotten = Record {
        expires_at: NOW_S - 1,
        ..completed_once(Status::Failed)
    };
    assert!(take_allowed(Some(&forgotten), NOW), "expired: absent");
}

#[test]
fn a_refusal_is_noted_only_on_a_live_item() {
    assert!(!note_refusal_allowed(None, NOW));
    for status in ALL {
        assert!(note_refusal_allowed(Some(&item(status)), NOW), "{status:?}");
        assert!(
            !note_refusal_allowed(Some(&expired(status)), NOW),
            "{status:?}"
        );
    }
}

#[test]
fn a_replay_takes_any_status_once_per_id_and_never_under_a_live_lease() {
    let with_replay = |r: Record| Record {
        replays: ["rp".to_owned()].into(),
        ..r
    };
    assert!(replay_take_allowed(None, "rp", NOW));
    for status in ALL {
        assert!(
            replay_take_allowed(Some(&item(status)), "rp", NOW),
            "{status:?}"
        );
        assert!(!replay_take_allowed(
            Some(&with_replay(item(status))),
            "rp",
            NOW
        ));
        assert!(replay_take_allowed(
            Some(&with_replay(item(status))),
            "other",
            NOW
        ));
        assert!(replay_take_allowed(
            Some(&with_replay(expired(status))),
            "rp",
            NOW
        ));
        assert!(!replay_take_allowed(
            Some(&leased(status, "x", NOW)),
            "rp",
            NOW
        ));
        assert!(!replay_take_allowed(
            Some(&leased(status, "x", NOW + 1)),
            "rp",
            NOW
        ));
        assert!(replay_take_allowed(
            Some(&leased(status, "x", NOW - 1)),
            "rp",
            NOW
        ));
    }
    let done = with_replay(leased(Status::Completed, "x", NOW + 7));
    assert_eq!(
        refused_replay_take(Some(done.clone()), "rp", NOW),
        TakeOutcome::Completed
    );
    assert_eq!(
        refused_replay_take(Some(done.clone()), "other", NOW),
        TakeOutcome::Busy {
            lease_until: Some(NOW + 7)
        }
    );
    let gone = Record {
        expires_at: NOW_S - 1,
        ..done
    };
    assert_eq!(
        refused_replay_take(Some(gone), "rp", NOW),
        TakeOutcome::Busy {
            lease_until: Some(NOW + 7)
        }
    );
    assert_eq!(
        refused_replay_take(None, "rp", NOW),
        TakeOutcome::Busy { lease_until: None }
    );
}

#[test]
fn a_replay_is_given_back_only_by_its_holder_on_a_key_that_completed_once() {
    let held = |status, owner: &str, completed_at| Record {
        completed_at,
        ..leased(status, owner, NOW + 1000)
    };
    assert!(!give_back_replay_allowed(None, "me"));
    for status in ALL {
        assert_eq!(
            give_back_replay_allowed(Some(&held(status, "me", Some(NOW - 10))), "me"),
            status == Status::Processing,
            "{status:?}"
        );
        assert!(!give_back_replay_allowed(
            Some(&held(status, "you", Some(NOW - 10))),
            "me"
        ));
        assert!(!give_back_replay_allowed(
            Some(&held(status, "me", None)),
            "me"
        ));
    }
}

fn take_by(owner: &str) -> Take {
    Take {
        key: "s:k".into(),
        source: "s".into(),
        payload_sha256: "h".into(),
        owner: owner.into(),
        now_ms: NOW,
        lease_until_ms: NOW + 60_000,
        expires_at: NOW_S + 3600,
        response_status: 200,
        response_body: "{}".into(),
        archived_at: None,
        indexed: true,
    }
}

#[tokio::test]
async fn the_memory_ledger_notes_a_refusal_on_a_live_item_only() {
    let ledger = memory::MemoryLedger::new();
    assert!(!ledger.note_refusal("s:k", "forged", NOW).await.unwrap());
    assert!(
        ledger.snapshot().is_empty(),
        "no item written for an absent key"
    );
    ledger.take(&take_by("c1")).await.unwrap();
    assert!(ledger.note_refusal("s:k", "forged", NOW).await.unwrap());
    let r = ledger.get("s:k").await.unwrap().unwrap();
    assert_eq!(r.last_error.as_deref(), Some("forged"));
    assert_eq!(r.status, Status::Processing, "a note changes nothing else");
}

#[tokio::test]
async fn the_memory_ledger_gives_a_completed_key_back_after_its_replay_failed() {
    let ledger = memory::MemoryLedger::new();
    ledger.take(&take_by("c1")).await.unwrap();
    assert!(ledger.complete("s:k", "c1", NOW).await.unwrap());
    let replay = |owner: &'static str, id: &'static str| {
        let ledger = &ledger;
        async move { ledger.take_replay(&take_by(owner), id).await.unwrap() }
    };
    assert!(matches!(
        replay("c2", "r1").await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(
        ledger
            .give_back_replay("s:k", "c3", "boom", true)
            .await
            .unwrap(),
        None,
        "only the replay's holder gives it back"
    );
    assert_eq!(
        ledger
            .give_back_replay("s:k", "c2", "boom", true)
            .await
            .unwrap(),
        Some(1)
    );
    let r = ledger.get("s:k").await.unwrap().unwrap();
    assert_eq!(r.status, Status::Completed);
    assert_eq!(r.last_error.as_deref(), Some("boom"));
    assert_eq!((r.lease_owner, r.lease_until, r.failures), (None, None, 1));
    assert_eq!(
        ledger
            .give_back_replay("s:k", "c2", "boom", true)
            .await
            .unwrap(),
        None,
        "given back once"
    );
    assert!(matches!(
        replay("c2", "r2").await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(
        ledger
            .give_back_replay("s:k", "c2", "throttled", false)
            .await
            .unwrap(),
        Some(1),
        "a throttled replay counts no failure"
    );
    assert!(matches!(
        replay("c2", "r3").await,
        TakeOutcome::Taken { .. }
    ));
    assert_eq!(
        ledger
            .give_back_replay("s:k", "c2", "boom", true)
            .await
            .unwrap(),
        Some(2)
    );
}
