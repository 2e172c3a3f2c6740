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

#[test]
fn a_fifo_queue_is_known_by_its_arn_too() {
    let mut m = message("m1", None, "{}");
    m.event_source_arn = Some("arn:aws:sqs:us-east-1:123456789012:orders.fifo".into());
    assert!(is_fifo(std::slice::from_ref(&m)));
    m.event_source_arn = Some("arn:aws:sqs:us-east-1:123456789012:orders".into());
    assert!(!is_fifo(&[m]));
}

/// A record in flight elsewhere, or reusing its key with another payload, is reported
/// failed; a FIFO queue known only by its ARN keeps its (single, unnamed) group in order.
#[tokio::test]
async fn records_in_flight_or_changed_are_reported_failed() {
    let idem = Idempotency::new(MemoryStore::new());
    let records = vec![
        message("m1", None, r#"{"op":"1"}"#),
        message("m2", None, r#"{"op":"1","other":"payload"}"#),
    ];
    // m1 runs; m2 runs concurrently under the same key: in flight or changed, failed.
    assert_eq!(failed(&idem, event(records)).await, ["m2"]);
    let mut fifo: Vec<SqsMessage> = ["f1", "f2", "f3"]
        .iter()
        .map(|id| {
            let body = if *id == "f2" {
                r#"{"op":"f2","fail":true}"#.to_owned()
            } else {
                format!(r#"{{"op":"{id}"}}"#)
            };
            message(id, None, &body)
        })
        .collect();
    for m in &mut fifo {
        m.event_source_arn = Some("arn:aws:sqs:us-east-1:123456789012:q.fifo".into());
    }
    assert_eq!(
        failed(&idem, event(fifo)).await,
        ["f2", "f3"],
        "f3 never ran"
    );
}

/// The natural key of each event type, and what a missing identity is.
#[cfg(feature = "events")]
mod natural_keys {
    use aws_lambda_events::dynamodb::EventRecord;
    use aws_lambda_events::s3::S3EventRecord;
    use aws_lambda_events::sns::{SnsMessage, SnsRecord};
    use lambda_idempotency::events::{scheduler_key, NaturalKey};
    use lambda_idempotency::KeyError;

    #[test]
    fn each_event_type_names_itself_or_says_what_is_missing() {
        let mut sns = SnsRecord::default();
        assert!(matches!(sns.natural_key(), Err(KeyError::Missing(m)) if m.contains("MessageId")));
        sns.sns.message_id = "95df01b4".into();
        assert_eq!(
            sns.natural_key().map(|k| k.to_string()),
            Ok("sns:95df01b4".into())
        );
        let mut message = SnsMessage::default();
        message.message_id = " ".into();
        assert!(matches!(message.natural_key(), Err(KeyError::Missing(_))));

        assert_eq!(
            scheduler_key(
                "arn:aws:scheduler:us-east-1:1:schedule/default/x",
                "2026-12-06T10:00:00Z"
            )
            .map(|k| k.to_string()),
            Ok(
                "schedule:arn:aws:scheduler:us-east-1:1:schedule/default/x@2026-12-06T10:00:00Z"
                    .into()
            )
        );
        assert!(matches!(
            scheduler_key("", "2026-12-06T10:00:00Z"),
            Err(KeyError::Missing(_))
        ));

        let mut s3 = S3EventRecord::default();
        s3.s3.bucket.name = Some("b".into());
        s3.s3.object.key = Some("k".into());
        assert!(matches!(s3.natural_key(), Err(KeyError::Missing(m)) if m.contains("sequencer")));
        // An empty version id (an unversioned bucket) falls back to the sequencer.
        s3.s3.object.version_id = Some(String::new());
        s3.s3.object.sequencer = Some("0A1B".into());
        assert_eq!(
            s3.natural_key().map(|k| k.to_string()),
            Ok("s3:s3:b/k@0A1B".into())
        );

        let ddb = EventRecord::default();
        assert!(matches!(ddb.natural_key(), Err(KeyError::Missing(m)) if m.contains("eventID")));
    }
}
