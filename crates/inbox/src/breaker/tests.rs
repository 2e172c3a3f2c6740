//! Every transition of the breaker, its conditions, and racing consumers on the memory board.

use super::*;

const COOL: i64 = 60_000;

fn rule(failures: u32) -> Rule {
    Rule {
        failures,
        cool_down: Duration::from_millis(COOL as u64),
    }
}

fn at(state: State, version: u64) -> Breaker {
    Breaker { state, version }
}

fn open(opened_at_ms: i64, version: u64) -> Breaker {
    at(State::Open { opened_at_ms }, version)
}

fn half_open(owner: &str, until: i64, version: u64) -> Breaker {
    at(
        State::HalfOpen {
            opened_at_ms: 0,
            probe_owner: owner.into(),
            probe_until_ms: until,
        },
        version,
    )
}

fn closed(failures: u32, version: u64) -> Breaker {
    at(State::Closed { failures }, version)
}

#[test]
fn defaults_are_five_failures_and_sixty_seconds() {
    assert_eq!(
        Rule::default(),
        Rule {
            failures: 5,
            cool_down: Duration::from_secs(60)
        }
    );
    assert_eq!(Breaker::default(), closed(0, 0));
}

#[test]
fn consecutive_failures_count_then_open_at_the_rule() {
    let r = rule(3);
    let t1 = closed(0, 0)
        .observe(&r, 10, "a", Observed::Failure)
        .unwrap();
    assert_eq!((t1.change, t1.to.clone()), (Change::Counted, closed(1, 1)));
    assert_eq!(t1.condition(), Condition::Absent);
    let t2 = t1.to.observe(&r, 11, "b", Observed::Failure).unwrap();
    assert_eq!((t2.change, t2.to.clone()), (Change::Counted, closed(2, 2)));
    assert_eq!(t2.condition(), Condition::Version(1));
    let t3 = t2.to.observe(&r, 12, "c", Observed::Failure).unwrap();
    assert_eq!((t3.change, t3.to), (Change::Opened, open(12, 3)));
}

#[test]
fn a_rule_of_one_opens_at_the_first_failure_and_zero_is_read_as_one() {
    let t = closed(0, 0)
        .observe(&rule(1), 5, "a", Observed::Failure)
        .unwrap();
    assert_eq!(t.change, Change::Opened);
    let t = closed(0, 0)
        .observe(&rule(0), 5, "a", Observed::Failure)
        .unwrap();
    assert_eq!(t.change, Change::Opened);
}

#[test]
fn a_success_resets_a_count_and_writes_nothing_when_there_is_none() {
    let t = closed(4, 9)
        .observe(&rule(5), 1, "a", Observed::Success)
        .unwrap();
    assert_eq!((t.change, t.to), (Change::Reset, closed(0, 10)));
    assert_eq!(
        closed(0, 9).observe(&rule(5), 1, "a", Observed::Success),
        None
    );
}

#[test]
fn a_throttle_never_counts() {
    for b in [closed(0, 0), closed(4, 3), open(0, 4)] {
        assert_eq!(b.observe(&rule(5), 1, "a", Observed::Other), None, "{b:?}");
    }
}

#[test]
fn an_open_breaker_holds_within_the_cool_down_then_offers_one_claim() {
    let b = open(1_000, 5);
    assert_eq!(b.gate(&rule(5), 1_000 + COOL - 1, "a", 99), Gate::Hold);
    assert!(b.holds(&rule(5), 1_000 + COOL - 1, "a"));
    let Gate::Claim(t) = b.gate(&rule(5), 1_000 + COOL, "a", 500_000) else {
        panic!("no claim at the end of the cool-down");
    };
    assert_eq!(t.change, Change::ProbeClaimed);
    assert_eq!(t.condition(), Condition::Version(5));
    assert_eq!(
        t.to,
        at(
            State::HalfOpen {
                opened_at_ms: 1_000,
                probe_owner: "a".into(),
                probe_until_ms: 500_000
            },
            6
        )
    );
}

#[test]
fn a_half_open_breaker_passes_its_probe_and_holds_every_other_call() {
    let b = half_open("a", 100, 6);
    assert_eq!(b.gate(&rule(5), 50, "a", 0), Gate::Pass);
    assert_eq!(b.gate(&rule(5), 50, "b", 0), Gate::Hold);
    assert_eq!(b.gate(&rule(5), 100, "b", 0), Gate::Hold);
}

#[test]
fn a_probe_past_its_deadline_may_be_claimed_by_another() {
    let b = half_open("a", 100, 6);
    let Gate::Claim(t) = b.gate(&rule(5), 101, "b", 900) else {
        panic!("an expired probe is not claimable");
    };
    assert_eq!(t.condition(), Condition::Version(6));
    assert_eq!(t.to, half_open("b", 900, 7));
}

#[test]
fn the_probe_closes_reopens_or_is_given_back() {
    let b = half_open("a", 100, 6);
    let r = rule(5);
    let ok = b.observe(&r, 70, "a", Observed::Success).unwrap();
    assert_eq!((ok.change, ok.to), (Change::Closed, closed(0, 7)));
    let bad = b.observe(&r, 70, "a", Observed::Failure).unwrap();
    assert_eq!((bad.change, bad.to), (Change::Reopened, open(70, 7)));
    let other = b.observe(&r, 70, "a", Observed::Other).unwrap();
    assert_eq!(
        (other.change, other.to),
        (Change::ProbeReleased, open(0, 7))
    );
    // Another consumer's outcome (computed from an older breaker) changes nothing.
    for o in [Observed::Success, Observed::Failure, Observed::Other] {
        assert_eq!(b.observe(&r, 70, "b", o), None);
    }
}

#[test]
fn an_open_breaker_ignores_late_outcomes() {
    for o in [Observed::Success, Observed::Failure] {
        assert_eq!(open(0, 3).observe(&rule(5), 1, "a", o), None);
    }
}

#[test]
fn an_operator_closes_any_breaker_but_a_clean_one() {
    for b in [open(0, 3), half_open("a", 9, 4), closed(2, 2)] {
        let t = b.close_by_hand().unwrap();
        assert_eq!(t.change, Change::ClosedByHand);
        assert_eq!(t.to.state, State::Closed { failures: 0 });
        assert_eq!(t.to.version, b.version + 1);
    }
    assert_eq!(closed(0, 8).close_by_hand(), None);
}

#[test]
fn the_conditions_are_dynamodb_expressions() {
    assert_eq!(Condition::Absent.expression(), "attribute_not_exists(#b)");
    assert_eq!(Condition::Version(3).expression(), "#b.version = :v");
}

#[tokio::test]
async fn the_memory_board_refuses_a_stale_write() {
    let board = MemoryBoard::default();
    let t = closed(0, 0)
        .observe(&rule(5), 1, "a", Observed::Failure)
        .unwrap();
    assert_eq!(board.write("d", &t).await.unwrap(), Written::Applied);
    // The same transition again: the breaker is no longer absent.
    assert_eq!(
        board.write("d", &t).await.unwrap(),
        Written::Stale(closed(1, 1))
    );
    let stale = closed(1, 7)
        .observe(&rule(5), 1, "a", Observed::Failure)
        .unwrap();
    assert_eq!(
        board.write("d", &stale).await.unwrap(),
        Written::Stale(closed(1, 1))
    );
    assert_eq!(board.get("d"), closed(1, 1));
    assert_eq!(board.breakers().await.unwrap().len(), 1);
}

#[tokio::test]
async fn two_consumers_that_saw_the_same_breaker_count_two_failures() {
    let board = MemoryBoard::default();
    let r = rule(2);
    let seen = board.get("d");
    let step = |b: &Breaker| b.observe(&r, 5, "a", Observed::Failure);
    let (first, _) = apply(&board, "d", seen.clone(), step).await.unwrap();
    assert_eq!(first.unwrap().change, Change::Counted);
    // The second computed from the same (now stale) breaker: recomputed, it opens.
    let (second, now) = apply(&board, "d", seen, step).await.unwrap();
    assert_eq!(second.unwrap().change, Change::Opened);
    assert_eq!(now, open(5, 2));
    assert_eq!(board.get("d"), open(5, 2));
}

#[tokio::test]
async fn of_consumers_racing_for_the_probe_one_claims_and_the_others_hold() {
    let board = MemoryBoard::default();
    let r = rule(1);
    apply(&board, "d", Breaker::default(), |b| {
        b.observe(&r, 0, "x", Observed::Failure)
    })
    .await
    .unwrap();
    let seen = board.get("d");
    let now = COOL;
    let mut claimed = Vec::new();
    for owner in ["a", "b", "c"] {
        let (t, after) = apply(&board, "d", seen.clone(), |b| {
            match b.gate(&r, now, owner, now + 1_000) {
                Gate::Claim(t) => Some(t),
                Gate::Pass | Gate::Hold => None,
            }
        })
        .await
        .unwrap();
        if t.is_some() {
            claimed.push(owner);
        } else {
            assert_eq!(after.gate(&r, now, owner, 0), Gate::Hold, "{owner}");
        }
    }
    assert_eq!(claimed, ["a"]);
    // The probe's consumer dies: past its deadline, another claims it.
    let (t, _) = apply(&board, "d", board.get("d"), |b| {
        match b.gate(&r, now + 1_001, "c", now + 9_000) {
            Gate::Claim(t) => Some(t),
            Gate::Pass | Gate::Hold => None,
        }
    })
    .await
    .unwrap();
    assert_eq!(t.map(|t| t.change), Some(Change::ProbeClaimed));
    // The first probe's late success changes nothing; the new probe's closes.
    let late = board
        .get("d")
        .observe(&r, now + 2_000, "a", Observed::Success);
    assert_eq!(late, None);
    let (t, after) = apply(&board, "d", board.get("d"), |b| {
        b.observe(&r, now + 2_000, "c", Observed::Success)
    })
    .await
    .unwrap();
    assert_eq!(t.map(|t| t.change), Some(Change::Closed));
    assert_eq!(after.state, State::Closed { failures: 0 });
}

#[tokio::test]
async fn a_step_that_loses_every_race_is_an_error() {
    /// A board on which every write finds a newer breaker.
    struct Contended;
    impl BreakerBoard for Contended {
        async fn breakers(&self) -> Result<BTreeMap<String, Breaker>, String> {
            Ok(BTreeMap::new())
        }
        async fn write(&self, _: &str, t: &Transition) -> Result<Written, String> {
            Ok(Written::Stale(closed(0, t.from.version + 1)))
        }
    }
    let err = apply(&Contended, "d", Breaker::default(), |b| {
        b.observe(&rule(9), 0, "a", Observed::Failure)
    })
    .await
    .unwrap_err();
    assert_eq!(err, "breaker of `d`: 16 writes lost to other consumers");
}
