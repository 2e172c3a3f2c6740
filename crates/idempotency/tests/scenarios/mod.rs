//! The transition scenarios, written once over any [`Store`] and run on the memory store here
//! and on DynamoDB (moto and dynalite) by the workspace's `e2e` test `idempotency_library`:
//! every scenario asserts its outcomes and returns a trace (each outcome and each record read
//! back), and the traces of the three stores must be identical.
//!
//! Time is explicit: a manual clock, so that the scenarios are deterministic.

#![allow(dead_code)]

use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lambda_idempotency::machine::{Claim, ClaimOutcome};
use lambda_idempotency::{Deadline, Error, Idempotency, Key, OnFailure, Record, Status, Store};

/// 2023-11-14T22:13:20Z in epoch milliseconds.
pub const T: i64 = 1_700_000_000_000;
/// The retention in these scenarios: one hour.
pub const RETENTION_S: i64 = 3600;

/// A trace: one line per step.
pub type Trace = Vec<String>;

/// A clock the scenario moves.
#[derive(Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn at(ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(ms)))
    }
    pub fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

/// The configuration every scenario uses, on `store`, with `clock`.
pub fn idem<S: Store + Clone>(store: &S, clock: &ManualClock) -> Idempotency<S> {
    let c = clock.clone();
    Idempotency::new(store.clone())
        .retention(Duration::from_secs(RETENTION_S as u64))
        .clock(move || c.now())
}

pub fn key(k: &str) -> Key {
    Key::new(k).expect("a valid key")
}

/// A record as traced: owners (unique per call) shown only as present or not.
pub fn shown(record: Option<Record>) -> String {
    match record {
        None => "absent".to_owned(),
        Some(mut r) => {
            r.lease_owner = r.lease_owner.map(|_| "<owner>".to_owned());
            format!("{r:?}")
        }
    }
}

/// An outcome as traced.
pub fn outcome<R: std::fmt::Debug, E: std::fmt::Display>(
    result: &Result<lambda_idempotency::Outcome<R>, Error<E>>,
) -> String {
    match result {
        Ok(o) => format!("ok {:?} replayed={}", o.value, o.replayed),
        Err(Error::InFlight { retry_after, .. }) => {
            format!("in flight, retry after {retry_after:?}")
        }
        Err(Error::PayloadMismatch { .. }) => "payload mismatch".to_owned(),
        Err(Error::Handler(e)) => format!("handler failed: {e}"),
        Err(e) => format!("error: {e}"),
    }
}

async fn read<S: Store>(store: &S, k: &str, trace: &mut Trace, step: &str) -> Option<Record> {
    let record = store.get(k).await.expect("get");
    trace.push(format!("{step}: {}", shown(record.clone())));
    record
}

/// A claim made by hand (a caller whose invocation then died), with a fixed owner.
pub fn hand_claim(k: &str, owner: &str, now_ms: i64, lease_ms: i64, payload: &[u8]) -> Claim {
    Claim {
        key: k.to_owned(),
        owner: owner.to_owned(),
        payload_sha256: lambda_idempotency::payload_sha256(payload),
        now_ms,
        lease_until_ms: now_ms + lease_ms,
        expires_at: now_ms / 1000 + RETENTION_S,
    }
}

/// The first call runs and stores its result.
pub async fn first_call<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let mut trace = Trace::new();
    let r = idem
        .run(
            &key("first"),
            b"p",
            &Deadline::at_epoch_ms(T + 10_000),
            || async { Ok::<_, String>(41) },
        )
        .await;
    assert_eq!(
        r.as_ref().map(|o| (o.value, o.replayed)).ok(),
        Some((41, false))
    );
    trace.push(outcome(&r));
    let rec = read(store, "first", &mut trace, "after")
        .await
        .expect("a record");
    assert_eq!(rec.status, Status::Completed);
    assert_eq!(
        rec.expires_at,
        T / 1000 + RETENTION_S,
        "expires_at is in seconds"
    );
    assert_eq!(rec.completed_at, Some(T), "completed_at is in milliseconds");
    assert_eq!(rec.lease_owner, None);
    trace
}

/// A duplicate after completion gets the first result; the function does not run again.
pub async fn duplicate_after_completion<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let runs = AtomicU32::new(0);
    let mut trace = Trace::new();
    for (i, value) in [1, 2].into_iter().enumerate() {
        clock.set(T + i as i64 * 1000);
        let r = idem
            .run(&key("dup"), b"p", &Deadline::none(), || async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(value)
            })
            .await;
        trace.push(outcome(&r));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(trace[1], "ok 1 replayed=true");
    read(store, "dup", &mut trace, "after").await;
    trace
}

/// A duplicate while the first is in flight: refused with the time left in the first's lease.
pub async fn duplicate_while_in_flight<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let mut trace = Trace::new();
    let inner_trace = std::sync::Mutex::new(String::new());
    let r = idem
        .run(
            &key("busy"),
            b"p",
            &Deadline::at_epoch_ms(T + 9_500),
            || async {
                let inner = idem
                    .run(&key("busy"), b"p", &Deadline::none(), || async {
                        Ok::<_, String>(2)
                    })
                    .await;
                *inner_trace.lock().expect("trace") = outcome(&inner);
                Ok::<_, String>(1)
            },
        )
        .await;
    let inner = inner_trace.lock().expect("trace").clone();
    assert_eq!(inner, "in flight, retry after 10s");
    trace.push(inner);
    trace.push(outcome(&r));
    read(store, "busy", &mut trace, "after").await;
    trace
}

/// A failure releases the claim (the default); the retry runs.
pub async fn failure_then_retry<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let mut trace = Trace::new();
    let r = idem
        .run(&key("fail"), b"p", &Deadline::none(), || async {
            Err::<u32, _>("boom")
        })
        .await;
    trace.push(outcome(&r));
    assert!(read(store, "fail", &mut trace, "released").await.is_none());
    let r = idem
        .run(&key("fail"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(3)
        })
        .await;
    trace.push(outcome(&r));
    read(store, "fail", &mut trace, "after").await;
    trace
}

/// A failure recorded (FAILED, `last_error`); the retry's claim takes it over (attempts 2,
/// `last_error` removed).
pub async fn failure_recorded_then_retry<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock).on_failure(OnFailure::Record);
    let mut trace = Trace::new();
    let r = idem
        .run(&key("failrec"), b"p", &Deadline::none(), || async {
            Err::<u32, _>("boom")
        })
        .await;
    trace.push(outcome(&r));
    let rec = read(store, "failrec", &mut trace, "failed")
        .await
        .expect("kept");
    assert_eq!(
        (rec.status, rec.last_error.as_deref()),
        (Status::Failed, Some("boom"))
    );
    clock.set(T + 5_000);
    let r = idem
        .run(&key("failrec"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(4)
        })
        .await;
    trace.push(outcome(&r));
    let rec = read(store, "failrec", &mut trace, "after")
        .await
        .expect("kept");
    assert_eq!((rec.status, rec.attempts), (Status::Completed, 2));
    assert_eq!(rec.last_error, None);
    trace
}

/// A call whose invocation timed out (its claim left PROCESSING): in flight until its lease
/// (the deadline) runs out, then taken over by the retry's one claim (Powertools Python #53:
/// stuck).
pub async fn timeout_then_retry<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let mut trace = Trace::new();
    let dead = hand_claim("timeout", "dead-invocation", T, 3_000, b"p");
    trace.push(format!("{:?}", store.claim(&dead).await.expect("claim")));
    clock.set(T + 2_999);
    let r = idem
        .run(&key("timeout"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(5)
        })
        .await;
    trace.push(outcome(&r));
    assert!(matches!(r, Err(Error::InFlight { .. })));
    clock.set(T + 3_001);
    let r = idem
        .run(&key("timeout"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(5)
        })
        .await;
    trace.push(outcome(&r));
    let rec = read(store, "timeout", &mut trace, "after")
        .await
        .expect("kept");
    assert_eq!(
        (rec.status, rec.attempts, rec.received_at),
        (Status::Completed, 2, T)
    );
    trace
}

/// Another payload under one key is refused: after completion, in flight, and after a
/// recorded failure (Powertools Java #2260: validation skipped on one path).
pub async fn changed_payload<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let mut trace = Trace::new();
    let r = idem
        .run(&key("pay"), b"one", &Deadline::none(), || async {
            Ok::<_, String>(1)
        })
        .await;
    trace.push(outcome(&r));
    let r = idem
        .run(&key("pay"), b"two", &Deadline::none(), || async {
            Ok::<_, String>(2)
        })
        .await;
    trace.push(outcome(&r));
    assert!(matches!(r, Err(Error::PayloadMismatch { .. })));
    // In flight.
    store
        .claim(&hand_claim("pay-busy", "other", T, 60_000, b"one"))
        .await
        .expect("claim");
    let r = idem
        .run(&key("pay-busy"), b"two", &Deadline::none(), || async {
            Ok::<_, String>(2)
        })
        .await;
    trace.push(outcome(&r));
    assert!(matches!(r, Err(Error::PayloadMismatch { .. })));
    // Failed and recorded, and abandoned (lease ran out): never claimed with another payload.
    let rec = idem.clone().on_failure(OnFailure::Record);
    let r = rec
        .run(&key("pay-failed"), b"one", &Deadline::none(), || async {
            Err::<u32, _>("x")
        })
        .await;
    trace.push(outcome(&r));
    clock.set(T + 61_000);
    for k in ["pay-failed", "pay-busy"] {
        let r = rec
            .run(&key(k), b"two", &Deadline::none(), || async {
                Ok::<_, String>(2)
            })
            .await;
        trace.push(outcome(&r));
        assert!(matches!(r, Err(Error::PayloadMismatch { .. })), "{k}");
    }
    read(store, "pay", &mut trace, "after").await;
    trace
}

/// An expired record counts as absent: the next call claims it, whatever its payload. The
/// claim updates the item in place, so where DynamoDB's TTL has not deleted it yet `attempts`
/// counts on (2) and `received_at` stays the first claim's, and the old result is removed.
pub async fn expired_counts_as_absent<S: Store + Clone>(store: &S) -> Trace {
    let clock = ManualClock::at(T);
    let idem = idem(store, &clock);
    let mut trace = Trace::new();
    let r = idem
        .run(&key("old"), b"one", &Deadline::none(), || async {
            Ok::<_, String>(1)
        })
        .await;
    trace.push(outcome(&r));
    // One second past `expires_at` (seconds); another payload is fine: a new operation.
    clock.set((T / 1000 + RETENTION_S + 1) * 1000);
    let r = idem
        .run(&key("old"), b"two", &Deadline::none(), || async {
            Ok::<_, String>(2)
        })
        .await;
    trace.push(outcome(&r));
    assert_eq!(trace[1], "ok 2 replayed=false");
    let rec = read(store, "old", &mut trace, "after").await.expect("kept");
    assert_eq!(
        (rec.attempts, rec.received_at, rec.result.as_deref()),
        (2, T, Some("2"))
    );
    assert_eq!(
        rec.payload_sha256,
        lambda_idempotency::payload_sha256(b"two")
    );
    trace
}

/// Never release, complete or fail a lock you do not hold (Powertools TypeScript #5675): a
/// call that ran past its lease finds its key claimed by another and leaves it alone.
pub async fn lock_not_held_is_left_alone<S: Store + Clone>(store: &S) -> Trace {
    let mut trace = Trace::new();
    let a = hand_claim("held", "a", T, 1_000, b"p");
    trace.push(format!(
        "a claims: {:?}",
        store.claim(&a).await.expect("claim")
    ));
    let b = hand_claim("held", "b", T + 2_000, 10_000, b"p");
    // a's lease ran out: b's one claim takes the key over.
    let reclaimed = store.claim(&b).await.expect("claim");
    assert_eq!(reclaimed, ClaimOutcome::Claimed);
    trace.push(format!("b claims: {reclaimed:?}"));
    // c's claim finds b's live lease: refused, b's record handed back.
    let c = hand_claim("held", "c", T + 2_001, 10_000, b"p");
    let lost = match store.claim(&c).await.expect("claim") {
        ClaimOutcome::Exists(found) => *found,
        ClaimOutcome::Claimed => panic!("a live lease was taken over"),
    };
    assert_eq!(lost.lease_until, Some(T + 12_000));
    trace.push(format!("c claims: refused, found {}", shown(Some(lost))));
    let released = store.release("held", "a").await.expect("release");
    let failed = store
        .fail("held", "a", "late", T + 3_000)
        .await
        .expect("fail");
    let completed = store
        .complete("held", "a", "1", T + 3_000)
        .await
        .expect("complete");
    assert!(!released && !failed && !completed);
    trace.push(format!(
        "a: release {released}, fail {failed}, complete {completed}"
    ));
    let rec = read(store, "held", &mut trace, "after")
        .await
        .expect("kept");
    assert_eq!((rec.lease_owner.as_deref(), rec.attempts), (Some("b"), 2));
    assert!(store
        .complete("held", "b", "\"b\"", T + 3_000)
        .await
        .expect("complete"));
    read(store, "held", &mut trace, "b completed").await;
    trace
}
