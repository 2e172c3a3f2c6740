//! SQS batches on the memory store: standard queues concurrently, FIFO groups in order.
#![cfg(all(feature = "sqs", feature = "memory"))]

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::sqs::{is_fifo, process_batch};
use lambda_idempotency::{Deadline, Idempotency, Key};

fn message(id: &str, group: Option<&str>, body: &str) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(body.to_owned());
    if let Some(g) = group {
        m.attributes.insert("MessageGroupId".into(), g.into());
    }
    m
}

fn event(records: Vec<SqsMessage>) -> SqsEvent {
    let mut e = SqsEvent::default();
    e.records = records;
    e
}

async fn failed(idem: &Idempotency<MemoryStore>, e: SqsEvent) -> Vec<String> {
    let response = process_batch(
        idem,
        e,
        &Deadline::none(),
        // The key from the body (the operation), not the message id (the delivery).
        |m: &SqsMessage| Key::from_json_pointer(m.body.as_deref().unwrap_or("").as_bytes(), "/op"),
        |m: SqsMessage| async move {
            match m.body.as_deref() {
                Some(b) if b.contains("fail") => Err("failed"),
                _ => Ok(()),
            }
        },
    )
    .await;
    let mut ids: Vec<String> = response
        .batch_item_failures
        .into_iter()
        .map(|f| f.item_identifier)
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_standard_batch_reports_only_its_failed_records() {
    let idem = Idempotency::new(MemoryStore::new());
    let records = vec![
        message("m1", None, r#"{"op":"1"}"#),
        message("m2", None, r#"{"op":"2","fail":true}"#),
        message("m3", None, r#"{"op":"3"}"#),
        message("m4", None, "no key"),
        // A second send of operation 1 (another message id): done already.
        message("m5", None, r#"{"op":"1"}"#),
    ];
    assert!(!is_fifo(&records));
    assert_eq!(failed(&idem, event(records)).await, ["m2", "m4"]);
}

#[tokio::test]
async fn a_fifo_group_stops_at_its_first_failure_and_others_go_on() {
    let idem = Idempotency::new(MemoryStore::new());
    let records = vec![
        message("a1", Some("a"), r#"{"op":"a1"}"#),
        message("b1", Some("b"), r#"{"op":"b1","fail":true}"#),
        message("a2", Some("a"), r#"{"op":"a2"}"#),
        message("b2", Some("b"), r#"{"op":"b2"}"#),
        message("c1", Some("c"), r#"{"op":"c1"}"#),
    ];
    assert!(is_fifo(&records));
    assert_eq!(failed(&idem, event(records)).await, ["b1", "b2"]);
    let store = idem.store().records();
    let keys: Vec<&str> = store.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["a1", "a2", "c1"], "b2 never ran");
}
