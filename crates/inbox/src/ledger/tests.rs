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
        replay_requests: Default::default(),
        resent_by: None,
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
    // The library's rule (`abandoned`, `held_by`) on the ledger's items.
    use lambda_idempotency::machine::{abandoned, held_by};
    let r = leased(Status::Processing, "me", NOW);
    assert!(!abandoned(&r, NOW));
    assert!(abandoned(&r, NOW + 1));
    assert!(!abandoned(&r, NOW - 1));
    assert!(
        !abandoned(&item(Status::Processing), NOW),
        "no lease: nothing runs out"
    );
    assert!(
        !abandoned(&leased(Status::Received, "me", NOW), NOW + 1),
        "only a PROCESSING lease is abandoned"
    );
    assert!(held_by(Some(&r), "PROCESSING", "me"));
    assert!(!held_by(Some(&r), "PROCESSING", "you"));
    assert!(!held_by(Some(&r), "RECEIVED", "me"));
    assert!(!held_by(
        Some(&item(Status::Processing)),
        "PROCESSING",
        "me"
    ));
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
    assert!(!release_allowed(None, "me", NOW));
    for status in ALL {
        assert_eq!(
            release_allowed(Some(&leased(status, "me", NOW)), "me", NOW),
            status == Status::Received,
            "{status:?}"
        );
        assert!(!release_allowed(
            Some(&leased(status, "you", NOW)),
            "me",
            NOW
        ));
        assert!(
            !release_allowed(Some(&leased(status, "me", NOW - 1)), "me", NOW),
            "{status:?}: our lease ran out"
        );
    }
}

#[test]
fn an_events_take_needs_its_accepted_item_and_refuses_completed_and_a_live_lease() {
    assert!(!take_allowed(None, "h", NOW), "absent: nobody accepted it");
    for status in ALL {
        assert!(
            !take_allowed(Some(&expired(status)), "h", NOW),
            "{status:?} expired: absent"
        );
        assert!(
            !take_allowed(Some(&item(status)), "other", NOW),
            "{status:?} under another body's hash"
        );
        let open = matches!(status, Status::Received | Status::Queued | Status::Failed);
        assert_eq!(
            take_allowed(Some(&item(status)), "h", NOW),
            open,
            "{status:?}"
        );
        assert_eq!(
            take_allowed(Some(&leased(status, "x", NOW - 1)), "h", NOW),
            open || status == Status::Processing,
            "{status:?} with its lease run out"
        );
        assert_eq!(
            take_allowed(Some(&leased(status, "x", NOW)), "h", NOW),
            open,
            "{status:?} live"
        );
    }
}

#[test]
fn a_pairs_take_makes_its_item_and_refuses_completed_and_a_live_lease() {
    assert!(pair_take_allowed(None, NOW));
    for status in ALL {
        assert!(
            pair_take_allowed(Some(&expired(status)), NOW),
            "{status:?} expired"
        );
        let open = matches!(status, Status::Received | Status::Queued | Status::Failed);
        assert_eq!(
            pair_take_allowed(Some(&item(status)), NOW),
            open,
            "{status:?}"
        );
        assert_eq!(
            pair_take_allowed(Some(&leased(status, "x", NOW - 1)), NOW),
            open || status == Status::Processing,
            "{status:?} with its lease run out"
        );
        assert_eq!(
            pair_take_allowed(Some(&leased(status, "x", NOW)), NOW),
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
fn a_refused_take_is_refused_for_another_event_and_completed_only_for_a_live_completed_item() {
    let event = take_by("me");
    let pair = Take {
        item: TakeItem::Pair,
        ..take_by("me")
    };
    assert_eq!(
        refused_take(None, &event),
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert_eq!(
        refused_take(Some(expired(Status::Completed)), &event),
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    let other = Record {
        payload_sha256: "other".into(),
        ..item(Status::Completed)
    };
    assert_eq!(
        refused_take(Some(other.clone()), &event),
        TakeOutcome::Refused(TakeRefusal::PayloadDiffers)
    );
    assert_eq!(
        refused_take(Some(other), &pair),
        TakeOutcome::Completed,
        "a pair's item is judged by its status alone"
    );
    assert_eq!(
        refused_take(None, &pair),
        TakeOutcome::Busy { lease_until: None }
    );
    assert_eq!(
        refused_take(Some(item(Status::Completed)), &event),
        TakeOutcome::Completed
    );
    assert_eq!(
        refused_take(Some(expired(Status::Completed)), &pair),
        TakeOutcome::Busy { lease_until: None }
    );
    assert_eq!(
        refused_take(Some(leased(Status::Processing, "x", NOW + 5)), &event),
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
            !take_allowed(Some(&completed_once(status)), "h", NOW),
            "{status:?}"
        );
        assert!(
            !pair_take_allowed(Some(&completed_once(status)), NOW),
            "{status:?}"
        );
    }
    let abandoned = Record {
        lease_until: Some(NOW - 1),
        lease_owner: Some("replay".into()),
        ..completed_once(Status::Processing)
    };
    assert!(
        !take_allowed(Some(&abandoned), "h", NOW),
        "an abandoned replay"
    );
    assert_eq!(
        refused_take(Some(abandoned), &take_by("me")),
        TakeOutcome::Completed
    );
    let forgotten = Record {
        expires_at: NOW_S - 1,
        ..completed_once(Status::Failed)
    };
    assert!(
        !take_allowed(Some(&forgotten), "h", NOW),
        "expired: absent, refused"
    );
    assert!(
        pair_take_allowed(Some(&forgotten), NOW),
        "a pair's: made anew"
    );
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
fn a_replay_takes_any_status_once_per_recorded_id_and_never_under_a_live_lease() {
    let recorded = |r: Record| Record {
        replay_requests: ["rp".to_owned(), "other".to_owned()].into(),
        ..r
    };
    let with_replay = |r: Record| Record {
        replays: ["rp".to_owned()].into(),
        ..recorded(r)
    };
    assert!(
        !replay_take_allowed(None, "h", "rp", NOW),
        "no item: refused"
    );
    assert!(pair_replay_take_allowed(None, "rp", NOW), "a pair's: made");
    for status in ALL {
        assert!(
            replay_take_allowed(Some(&recorded(item(status))), "h", "rp", NOW),
            "{status:?}"
        );
        assert!(
            !replay_take_allowed(Some(&item(status)), "h", "rp", NOW),
            "{status:?}: not recorded"
        );
        assert!(
            !replay_take_allowed(Some(&recorded(item(status))), "x", "rp", NOW),
            "{status:?}: another body"
        );
        assert!(!replay_take_allowed(
            Some(&with_replay(item(status))),
            "h",
            "rp",
            NOW
        ));
        assert!(replay_take_allowed(
            Some(&with_replay(item(status))),
            "h",
            "other",
            NOW
        ));
        assert!(!replay_take_allowed(
            Some(&with_replay(expired(status))),
            "h",
            "rp",
            NOW
        ));
        assert!(pair_replay_take_allowed(
            Some(&with_replay(expired(status))),
            "rp",
            NOW
        ));
        assert!(!pair_replay_take_allowed(
            Some(&with_replay(item(status))),
            "rp",
            NOW
        ));
        for (until, allowed) in [(NOW, false), (NOW + 1, false), (NOW - 1, true)] {
            let held = recorded(leased(status, "x", until));
            assert_eq!(
                replay_take_allowed(Some(&held), "h", "rp", NOW),
                allowed,
                "{status:?} lease {until}"
            );
            assert_eq!(
                pair_replay_take_allowed(Some(&held), "rp", NOW),
                allowed,
                "{status:?} lease {until}"
            );
        }
    }
}

#[test]
fn a_refused_replay_take_is_refused_done_or_busy() {
    let done = Record {
        replay_requests: ["rp".to_owned(), "other".to_owned()].into(),
        replays: ["rp".to_owned()].into(),
        ..leased(Status::Completed, "x", NOW + 7)
    };
    let event = take_by("me");
    assert_eq!(
        refused_replay_take(Some(done.clone()), &event, "rp"),
        TakeOutcome::Completed
    );
    assert_eq!(
        refused_replay_take(Some(done.clone()), &event, "other"),
        TakeOutcome::Busy {
            lease_until: Some(NOW + 7)
        }
    );
    assert_eq!(
        refused_replay_take(Some(done.clone()), &event, "unrecorded"),
        TakeOutcome::Refused(TakeRefusal::ReplayNotRecorded)
    );
    let gone = Record {
        expires_at: NOW_S - 1,
        ..done
    };
    assert_eq!(
        refused_replay_take(Some(gone.clone()), &event, "rp"),
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    let pair = Take {
        item: TakeItem::Pair,
        ..take_by("me")
    };
    assert_eq!(
        refused_replay_take(Some(gone), &pair, "rp"),
        TakeOutcome::Busy {
            lease_until: Some(NOW + 7)
        }
    );
    assert_eq!(
        refused_replay_take(None, &event, "rp"),
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert_eq!(
        refused_replay_take(None, &pair, "rp"),
        TakeOutcome::Busy { lease_until: None }
    );
}

#[test]
fn a_replay_is_requested_only_on_an_accepted_items_body() {
    assert!(!request_replay_allowed(None, "h", NOW));
    for status in ALL {
        assert!(
            request_replay_allowed(Some(&item(status)), "h", NOW),
            "{status:?}"
        );
        assert!(!request_replay_allowed(Some(&item(status)), "x", NOW));
        assert!(!request_replay_allowed(Some(&expired(status)), "h", NOW));
    }
}

#[test]
fn a_resent_claim_is_never_released_and_is_marked_only_while_received() {
    for status in ALL {
        assert_eq!(
            mark_resent_allowed(Some(&item(status)), "h", NOW),
            status == Status::Received,
            "{status:?}"
        );
        assert!(!mark_resent_allowed(Some(&item(status)), "x", NOW));
        assert!(!mark_resent_allowed(Some(&expired(status)), "h", NOW));
    }
    assert!(!mark_resent_allowed(None, "h", NOW));
    let claim = leased(Status::Received, "me", NOW + 10);
    assert!(release_allowed(Some(&claim), "me", NOW));
    assert!(
        !release_allowed(Some(&claim), "me", NOW + 11),
        "the claimant's lease ran out: a duplicate may have sent it unmarked"
    );
    let resent = Record {
        resent_by: Some("dup".into()),
        ..claim
    };
    assert!(!release_allowed(Some(&resent), "me", NOW));
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
        item: TakeItem::Event,
    }
}

/// The receiver's claim of `s:k` with body `h`, its lease run out.
async fn claimed(ledger: &memory::MemoryLedger) {
    let claim = Claim {
        key: "s:k".into(),
        source: "s".into(),
        payload_sha256: "h".into(),
        owner: "rx".into(),
        now_ms: NOW,
        lease_until_ms: NOW,
        expires_at: NOW_S + 3600,
        response_status: 200,
        response_body: "{}".into(),
        event_type: None,
        trace_id: None,
    };
    assert_eq!(ledger.claim(&claim).await.unwrap(), ClaimOutcome::Claimed);
}

#[tokio::test]
async fn the_memory_ledger_refuses_a_take_nobody_accepted_and_writes_nothing() {
    let ledger = memory::MemoryLedger::new();
    assert_eq!(
        ledger.take(&take_by("c1")).await.unwrap(),
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert_eq!(
        ledger.take_replay(&take_by("c1"), "rp").await.unwrap(),
        TakeOutcome::Refused(TakeRefusal::NotAccepted)
    );
    assert!(!ledger.request_replay("s:k", "h", "rp", NOW).await.unwrap());
    assert!(ledger.snapshot().is_empty(), "no item written");
    claimed(&ledger).await;
    let forged = Take {
        payload_sha256: "forged".into(),
        ..take_by("c1")
    };
    assert_eq!(
        ledger.take(&forged).await.unwrap(),
        TakeOutcome::Refused(TakeRefusal::PayloadDiffers)
    );
    assert!(!ledger
        .request_replay("s:k", "forged", "rp", NOW)
        .await
        .unwrap());
    let r = ledger.get("s:k").await.unwrap().unwrap();
    assert_eq!((r.status, r.attempts), (Status::Received, 0), "untouched");
    assert!(r.replay_requests.is_empty());
}

#[tokio::test]
async fn the_memory_ledger_keeps_a_resent_claim_from_its_claimants_release() {
    let ledger = memory::MemoryLedger::new();
    assert_eq!(
        ledger.mark_resent("s:k", "dup", "h", NOW).await.unwrap(),
        Some(None),
        "absent"
    );
    claimed(&ledger).await;
    assert_eq!(
        ledger.mark_resent("s:k", "dup", "h", NOW).await.unwrap(),
        None
    );
    assert!(
        !ledger.release("s:k", "rx", NOW).await.unwrap(),
        "resent: kept"
    );
    let r = ledger.get("s:k").await.unwrap().unwrap();
    assert_eq!(r.resent_by.as_deref(), Some("dup"));
    ledger.take(&take_by("c1")).await.unwrap();
    assert!(matches!(
        ledger.mark_resent("s:k", "dup2", "h", NOW).await.unwrap(),
        Some(Some(Record {
            status: Status::Processing,
            ..
        }))
    ));
}

#[tokio::test]
async fn the_memory_ledger_notes_a_refusal_on_a_live_item_only() {
    let ledger = memory::MemoryLedger::new();
    assert!(!ledger.note_refusal("s:k", "forged", NOW).await.unwrap());
    assert!(
        ledger.snapshot().is_empty(),
        "no item written for an absent key"
    );
    claimed(&ledger).await;
    ledger.take(&take_by("c1")).await.unwrap();
    assert!(ledger.note_refusal("s:k", "forged", NOW).await.unwrap());
    let r = ledger.get("s:k").await.unwrap().unwrap();
    assert_eq!(r.last_error.as_deref(), Some("forged"));
    assert_eq!(r.status, Status::Processing, "a note changes nothing else");
}

#[tokio::test]
async fn the_memory_ledger_gives_a_completed_key_back_after_its_replay_failed() {
    let ledger = memory::MemoryLedger::new();
    claimed(&ledger).await;
    ledger.take(&take_by("c1")).await.unwrap();
    assert!(ledger.complete("s:k", "c1", NOW).await.unwrap());
    let replay = |owner: &'static str, id: &'static str| {
        let ledger = &ledger;
        async move {
            assert!(ledger.request_replay("s:k", "h", id, NOW).await.unwrap());
            ledger.take_replay(&take_by(owner), id).await.unwrap()
        }
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

#[test]
fn the_adapters_send_the_conditions_written_here() {
    use lambda_idempotency::dynamodb::holder;
    let release = holder("me", Status::Received.as_str()).and(RELEASE_GUARD);
    assert_eq!(release.condition(), RELEASE_CONDITION.as_str());
    let give_back = holder("me", Status::Processing.as_str()).and(GIVE_BACK_GUARD);
    assert_eq!(give_back.condition(), GIVE_BACK_REPLAY_CONDITION.as_str());
    assert_eq!(
        holder("me", Status::Processing.as_str()).condition(),
        FINISH_CONDITION
    );
    // The take's conditions keep their shape: the library's fragments, then the ledger's.
    assert!(TAKE_CONDITION.starts_with("attribute_exists(pk) AND expires_at >= :now_s AND "));
    assert!(TAKE_CONDITION.ends_with("OR (#status = :processing AND lease_until < :now_ms))"));
    assert!(PAIR_TAKE_CONDITION.starts_with("attribute_not_exists(pk) OR expires_at < :now_s OR ("));
}
