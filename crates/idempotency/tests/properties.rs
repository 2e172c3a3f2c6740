//! Property tests of the state machine on the memory store: random sequences of calls
//! (succeeding or failing, with or without a deadline), clock moves and abandoned claims (an
//! invocation that died holding its key) on one key, checked step by step against a model
//! of the rules: at most one run per key until it expires, the first result to every
//! duplicate, another payload always refused, a live lease never overtaken, an abandoned or
//! failed record taken over by the next claim of its payload, an expired one absent.
#![cfg(feature = "memory")]

mod scenarios;

use std::time::Duration;

use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::{Deadline, Error, OnFailure, Status, Store};
use proptest::prelude::*;
use scenarios::{hand_claim, key, ManualClock, T};

const RETENTION_S: i64 = 100;
const FALLBACK_MS: i64 = 60_000;

#[derive(Clone, Debug)]
enum Op {
    Call {
        payload: u8,
        fails: bool,
        lease_ms: i64,
    },
    Advance {
        ms: i64,
    },
    Abandon {
        payload: u8,
        lease_ms: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..2, any::<bool>(), 0i64..5_000)
            .prop_map(|(payload, fails, lease_ms)| Op::Call { payload, fails, lease_ms }),
        3 => prop_oneof![0i64..5_000, 50_000i64..150_000].prop_map(|ms| Op::Advance { ms }),
        1 => (0u8..2, 1i64..5_000).prop_map(|(payload, lease_ms)| Op::Abandon { payload, lease_ms }),
    ]
}

#[derive(Clone, Debug, PartialEq)]
enum State {
    Processing { lease_until: i64 },
    Completed { value: u32 },
    Failed,
}

#[derive(Clone, Debug)]
struct Model {
    payload: u8,
    state: State,
    expires_at_s: i64,
}

/// What the model says a call does: its traced outcome and the model after it.
fn expected(
    model: Option<Model>,
    now: i64,
    payload: u8,
    fails: bool,
    value: u32,
    record: bool,
) -> (String, Option<Model>) {
    let live = model.filter(|m| m.expires_at_s >= now.div_euclid(1000));
    let runs = match &live {
        None => true,
        Some(m) if m.payload != payload => return ("payload mismatch".into(), live),
        Some(m) => match m.state {
            State::Completed { value } => return (format!("ok {value} replayed=true"), live),
            State::Processing { lease_until } if lease_until >= now => {
                let secs = u64::try_from(lease_until - now)
                    .unwrap_or(0)
                    .div_ceil(1000)
                    .max(1);
                return (
                    format!("in flight, retry after {:?}", Duration::from_secs(secs)),
                    live,
                );
            }
            _ => true,
        },
    };
    debug_assert!(runs);
    let expires_at_s = now.div_euclid(1000) + RETENTION_S;
    if fails {
        let after = record.then_some(Model {
            payload,
            state: State::Failed,
            expires_at_s,
        });
        ("handler failed: boom".into(), after)
    } else {
        let after = Model {
            payload,
            state: State::Completed { value },
            expires_at_s,
        };
        (format!("ok {value} replayed=false"), Some(after))
    }
}

/// The store under test, its clock and the model beside it.
struct Harness {
    store: MemoryStore,
    clock: ManualClock,
    idem: lambda_idempotency::Idempotency<MemoryStore>,
    model: Option<Model>,
    record: bool,
    /// Successful runs since the key was last absent: never more than one.
    runs: u32,
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

impl Harness {
    fn new(record: bool) -> Harness {
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        let c = clock.clone();
        let idem = lambda_idempotency::Idempotency::new(store.clone())
            .retention(Duration::from_secs(RETENTION_S as u64))
            .fallback_lease(Duration::from_millis(FALLBACK_MS as u64))
            .on_failure(if record {
                OnFailure::Record
            } else {
                OnFailure::Release
            })
            .clock(move || c.now());
        Harness {
            store,
            clock,
            idem,
            model: None,
            record,
            runs: 0,
        }
    }

    /// An invocation claims the key and dies holding it.
    async fn abandon(&mut self, i: usize, payload: u8, lease_ms: i64) -> Result<(), TestCaseError> {
        let now = self.clock.now();
        let mut claim = hand_claim("k", &format!("dead-{i}"), now, lease_ms, &[payload]);
        claim.expires_at = now.div_euclid(1000) + RETENTION_S;
        let claimed = self.store.claim(&claim).await.map_err(fail)?;
        // The claim takes the key absent or expired, or this payload's record abandoned (its
        // lease ran out) or failed.
        let free = self.model.as_ref().is_none_or(|m| {
            m.expires_at_s < now.div_euclid(1000)
                || (m.payload == payload
                    && match m.state {
                        State::Processing { lease_until } => lease_until < now,
                        State::Failed => true,
                        State::Completed { .. } => false,
                    })
        });
        prop_assert_eq!(
            claimed == lambda_idempotency::machine::ClaimOutcome::Claimed,
            free
        );
        if free {
            let expires_at_s = now.div_euclid(1000) + RETENTION_S;
            let state = State::Processing {
                lease_until: now + lease_ms,
            };
            self.model = Some(Model {
                payload,
                state,
                expires_at_s,
            });
        }
        Ok(())
    }

    async fn call(
        &mut self,
        i: usize,
        payload: u8,
        fails: bool,
        lease_ms: i64,
    ) -> Result<(), TestCaseError> {
        let now = self.clock.now();
        let deadline = match lease_ms {
            0 => Deadline::none(),
            ms => Deadline::at_epoch_ms(now + ms),
        };
        let value = u32::try_from(i).unwrap_or(0);
        let ran = std::cell::Cell::new(false);
        let result = self
            .idem
            .run(&key("k"), &[payload], &deadline, || async {
                ran.set(true);
                if fails {
                    Err("boom")
                } else {
                    Ok(value)
                }
            })
            .await;
        let (want, after) = expected(self.model.clone(), now, payload, fails, value, self.record);
        prop_assert_eq!(scenarios::outcome(&result), want, "step {}", i);
        let replay_or_refusal = matches!(
            result,
            Err(Error::InFlight { .. } | Error::PayloadMismatch { .. })
        ) || result.as_ref().is_ok_and(|o| o.replayed);
        prop_assert_eq!(ran.get(), !replay_or_refusal, "step {}: ran", i);
        if ran.get() && !fails {
            self.runs += 1;
        }
        self.model = after;
        Ok(())
    }

    /// The store agrees with the model.
    async fn agree(&mut self) -> Result<(), TestCaseError> {
        let stored = self.store.get("k").await.map_err(fail)?;
        let now = self.clock.now();
        let live = stored.filter(|r| !r.is_expired(now));
        let live_model = self
            .model
            .clone()
            .filter(|m| m.expires_at_s >= now.div_euclid(1000));
        if live_model.is_none() {
            self.runs = 0;
        }
        prop_assert!(self.runs <= 1, "two successful runs of one live key");
        match (&live, &live_model) {
            (None, None) => {}
            (Some(r), Some(m)) => {
                prop_assert_eq!(
                    &r.payload_sha256,
                    &lambda_idempotency::payload_sha256(&[m.payload])
                );
                let status = match m.state {
                    State::Processing { .. } => Status::Processing,
                    State::Completed { .. } => Status::Completed,
                    State::Failed => Status::Failed,
                };
                prop_assert_eq!(r.status, status);
                prop_assert_eq!(r.expires_at, m.expires_at_s);
            }
            (r, m) => prop_assert!(false, "store {:?} but model {:?}", r, m),
        }
        Ok(())
    }
}

async fn check(ops: Vec<Op>, record: bool) -> Result<(), TestCaseError> {
    let mut h = Harness::new(record);
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Advance { ms } => h.clock.set(h.clock.now() + ms),
            Op::Abandon { payload, lease_ms } => h.abandon(i, payload, lease_ms).await?,
            Op::Call {
                payload,
                fails,
                lease_ms,
            } => h.call(i, payload, fails, lease_ms).await?,
        }
        h.agree().await?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_state_machine_follows_its_rules(ops in prop::collection::vec(op(), 1..40), record in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().build().map_err(|e| TestCaseError::fail(e.to_string()))?;
        rt.block_on(check(ops, record))?;
    }
}
