//! The transition scenarios (`scenarios/`) on the memory store. The workspace's `e2e` test
//! `idempotency_library` runs the same scenarios on DynamoDB (moto and dynalite) and requires
//! the same traces.
#![cfg(feature = "memory")]

mod scenarios;

use lambda_idempotency::memory::MemoryStore;

macro_rules! on_memory {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let trace = scenarios::$name(&MemoryStore::new()).await;
            assert!(trace.len() > 1, "{trace:?}");
        }
    )*};
}

on_memory!(
    first_call,
    duplicate_after_completion,
    duplicate_while_in_flight,
    failure_then_retry,
    failure_recorded_then_retry,
    timeout_then_retry,
    changed_payload,
    expired_counts_as_absent,
    lock_not_held_is_left_alone,
);
