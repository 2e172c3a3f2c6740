//! The ledger's transitions (claim, release, take, complete, fail, defer, the
//! body guard, a replay's take and complete),
//! written once and run against three implementations: the in-memory `MemoryLedger`, and the
//! `DynamoLedger` on two independent DynamoDB servers on loopback, moto (the table made from
//! template.yaml by its CloudFormation) and dynalite (the table made with the template's key
//! schema). Every scenario asserts its expected outcomes itself and records each outcome and
//! each `get()` in a trace; the three traces must be identical, so the DynamoDB condition
//! expressions and the in-memory predicates cannot drift apart, and neither can the adapter
//! and one emulator's reading of DynamoDB.
//!
//! dynalite does not return the old item on a failed condition (moto does, as DynamoDB
//! does): there every refused claim and take goes through the adapter's fallback read, and
//! the traces show it answers the same.
//!
//! Time is explicit: every call takes its `now_ms`, so the scenarios are deterministic and
//! the DynamoDB adapter's clock is whatever the scenario passes.

mod consumer_side;
mod receiver_side;
mod replay;
mod run;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use devstack::testkit::{unique, LocalAws};
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::LedgerStore;
use run::Obs;

/// A fixed "now": 2023-11-14T22:13:20Z, in epoch milliseconds.
const T: i64 = 1_700_000_000_000;
/// Seconds in an hour.
const HOUR_S: i64 = 3600;
/// The receiver's lease in these scenarios.
const LEASE_MS: i64 = 30_000;
/// The key every scenario works on (each DynamoDB run has its own table).
const K: &str = "github:d-1";

fn assert_same_trace(backend: &str, memory: &[(String, Obs)], other: &[(String, Obs)]) {
    for (i, (m, d)) in memory.iter().zip(other).enumerate() {
        assert_eq!(m, d, "step {i}: memory and {backend} differ ({})", m.0);
    }
    assert_eq!(
        memory.len(),
        other.len(),
        "memory and {backend} ran a different number of steps"
    );
}

/// A fresh ledger table on the shared dynalite server.
async fn dynalite_ledger(label: &str) -> impl LedgerStore {
    devstack::dynalite::shared()
        .ledger(&unique(label))
        .await
        .unwrap_or_else(|e| panic!("a ledger table on dynalite: {e:#}"))
}

/// One test per scenario: on the in-memory adapter, then on DynamoDB as moto and as
/// dynalite serve it; the same trace each time.
macro_rules! on_every_backend {
    ($($module:ident :: $name:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let memory = MemoryLedger::new();
            let m = $module::$name(&memory).await;
            assert!(m.len() > 1);
            let aws = LocalAws::new("lt").await;
            let moto = $module::$name(&aws.ledger()).await;
            assert_same_trace("moto", &m, &moto);
            let dynalite = $module::$name(&dynalite_ledger("lt").await).await;
            assert_same_trace("dynalite", &m, &dynalite);
        }
    )*};
}

on_every_backend!(
    receiver_side::claim_on_absent_writes_the_whole_record,
    receiver_side::claim_on_expired_item_is_a_fresh_claim,
    receiver_side::claim_on_received_is_refused_whatever_its_lease_until_it_expires,
    receiver_side::claim_on_live_received_returns_the_old_record,
    receiver_side::claim_on_queued_processing_completed_failed_is_refused,
    receiver_side::release_only_by_the_owner_and_only_before_queued,
    receiver_side::release_after_the_consumer_took_it_is_refused,
    receiver_side::a_resent_claim_is_never_released_nor_one_whose_lease_ran_out,
    replay::a_replay_is_recorded_only_on_its_events_body,
    receiver_side::guard_body_refuses_another_key_within_the_window,
    receiver_side::a_hook_secret_is_kept_once_per_source,
    consumer_side::take_on_absent_or_another_body_is_refused,
    consumer_side::a_pairs_take_leaves_it_out_of_the_event_index,
    consumer_side::take_on_expired_is_refused,
    consumer_side::take_on_received_and_queued,
    consumer_side::take_on_failed_counts_the_attempt,
    consumer_side::take_on_processing_live_is_busy_and_run_out_is_taken_over,
    consumer_side::take_on_completed_is_acknowledged_without_a_write,
    replay::a_replay_runs_a_completed_key_once_per_replay_id,
    replay::a_replay_of_an_absent_or_unrecorded_key_is_refused,
    replay::a_replay_that_does_not_complete_leaves_the_key_completed,
    replay::a_replay_of_a_key_that_never_completed_is_not_given_back,
    consumer_side::complete_and_fail_only_with_the_lease,
    consumer_side::defer_puts_it_back_to_queued_only_with_the_lease,
    consumer_side::fail_counts_real_failures_and_defer_does_not,
    consumer_side::expires_at_is_seconds_and_leases_are_milliseconds,
    consumer_side::a_record_round_trips_with_every_field,
);

/// The trace comparison itself must notice a difference.
#[test]
fn a_differing_trace_is_caught() {
    let a = vec![("get".to_owned(), Obs::Done(true))];
    let b = vec![("get".to_owned(), Obs::Done(false))];
    let caught = std::panic::catch_unwind(|| assert_same_trace("other", &a, &b))
        .expect_err("a differing trace panics");
    let said = caught
        .downcast_ref::<String>()
        .expect("an assertion's message");
    assert!(
        said.contains("step 0: memory and other differ (get)"),
        "{said}"
    );
}

/// Why dynalite matters beside moto: a failed condition there carries no old item, though
/// asked for (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), so the scenarios' refused
/// claims and takes on it are answered by the adapter's fallback read. Should a dynalite
/// release start returning it, this fails: then the fallback read needs another witness.
#[tokio::test]
async fn dynalite_leaves_the_old_item_out_of_a_failed_condition() {
    let table = unique("old-item");
    let server = devstack::dynalite::shared();
    server.ledger(&table).await.expect("a ledger table");
    let client = server.client();
    let put = |condition: &'static str| {
        client
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S("k".into()))
            .item("status", AttributeValue::S("RECEIVED".into()))
            .condition_expression(condition)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
    };
    put("attribute_not_exists(pk)").await.expect("first put");
    match put("attribute_not_exists(pk)").await {
        Ok(_) => panic!("the second put must fail its condition"),
        Err(err) => match err.into_service_error() {
            PutItemError::ConditionalCheckFailedException(e) => {
                assert_eq!(e.item(), None, "dynalite now returns the old item")
            }
            other => panic!("expected ConditionalCheckFailedException, got {other:?}"),
        },
    }
}
