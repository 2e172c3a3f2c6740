//! The natural key of each `aws_lambda_events` type: what the event *is*, the same on every
//! redelivery of it, so that a handler writes one line.
//!
//! | event | key |
//! | --- | --- |
//! | EventBridge | `eventbridge:<id>` |
//! | EventBridge Scheduler / a scheduled rule | `schedule:<schedule ARN>@<scheduled time>` ([`scheduled_key`]) |
//! | SNS | `sns:<MessageId>` |
//! | S3 notification | `s3:<event name>:<bucket>/<object key>@<version id, else sequencer>` |
//! | DynamoDB stream record | `ddbstream:<eventID>` |
//! | SQS message | `sqs:<messageId>` |
//!
//! A schedule's key is the time it was *scheduled* for, not when it ran: a retried run has
//! the same one, the next run another.
//!
//! ```
//! use aws_lambda_events::sns::SnsRecord;
//! use lambda_idempotency::events::NaturalKey;
//!
//! let mut record = SnsRecord::default();
//! record.sns.message_id = "95df01b4-ee98-5cb9-9903-4c221d41eb5e".into();
//! assert_eq!(
//!     record.natural_key().unwrap().as_str(),
//!     "sns:95df01b4-ee98-5cb9-9903-4c221d41eb5e"
//! );
//! ```

use aws_lambda_events::dynamodb::EventRecord;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::s3::S3EventRecord;
use aws_lambda_events::sns::{SnsMessage, SnsRecord};
use aws_lambda_events::sqs::SqsMessage;

use crate::{Key, KeyError};

/// An event that names itself: its key for [`crate::Idempotency::run`].
pub trait NaturalKey {
    /// The event's own identity, the same on each redelivery of it.
    fn natural_key(&self) -> Result<Key, KeyError>;
}

fn present(value: Option<&str>, what: &str) -> Result<String, KeyError> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v.to_owned()),
        _ => Err(KeyError::Missing(what.to_owned())),
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned> NaturalKey for EventBridgeEvent<T> {
    fn natural_key(&self) -> Result<Key, KeyError> {
        let id = present(self.id.as_deref(), "the EventBridge event's id")?;
        Key::new(format!("eventbridge:{id}"))
    }
}

/// The key of a scheduled run (an EventBridge scheduled rule's event, or an EventBridge
/// Scheduler target given the event envelope): the schedule (the first of `resources`) and
/// the time it was scheduled for (`time`).
pub fn scheduled_key<T: serde::Serialize + serde::de::DeserializeOwned>(
    event: &EventBridgeEvent<T>,
) -> Result<Key, KeyError> {
    let schedule = present(
        event
            .resources
            .as_ref()
            .and_then(|r| r.first())
            .map(String::as_str),
        "the schedule (resources[0])",
    )?;
    let time = event
        .time
        .ok_or_else(|| KeyError::Missing("the scheduled time (time)".to_owned()))?;
    Key::new(format!("schedule:{schedule}@{}", time.to_rfc3339()))
}

/// The key of an EventBridge Scheduler run whose target input carries the schedule's ARN and
/// its `<aws.scheduler.scheduled-time>` (the scheduled time, not the time it ran).
pub fn scheduler_key(schedule_arn: &str, scheduled_time: &str) -> Result<Key, KeyError> {
    let schedule = present(Some(schedule_arn), "the schedule's ARN")?;
    let time = present(Some(scheduled_time), "the scheduled time")?;
    Key::new(format!("schedule:{schedule}@{time}"))
}

impl NaturalKey for SnsMessage {
    fn natural_key(&self) -> Result<Key, KeyError> {
        let id = present(Some(&self.message_id), "the SNS MessageId")?;
        Key::new(format!("sns:{id}"))
    }
}

impl NaturalKey for SnsRecord {
    fn natural_key(&self) -> Result<Key, KeyError> {
        self.sns.natural_key()
    }
}

impl NaturalKey for S3EventRecord {
    fn natural_key(&self) -> Result<Key, KeyError> {
        let bucket = present(self.s3.bucket.name.as_deref(), "the S3 bucket's name")?;
        let object = present(self.s3.object.key.as_deref(), "the S3 object's key")?;
        let version = self
            .s3
            .object
            .version_id
            .as_deref()
            .filter(|v| !v.is_empty())
            .or(self.s3.object.sequencer.as_deref());
        let version = present(version, "the S3 object's version id or sequencer")?;
        let name = self.event_name.as_deref().unwrap_or("s3");
        Key::new(format!("s3:{name}:{bucket}/{object}@{version}"))
    }
}

impl NaturalKey for EventRecord {
    fn natural_key(&self) -> Result<Key, KeyError> {
        let id = present(Some(&self.event_id), "the stream record's eventID")?;
        Key::new(format!("ddbstream:{id}"))
    }
}

impl NaturalKey for SqsMessage {
    fn natural_key(&self) -> Result<Key, KeyError> {
        let id = present(self.message_id.as_deref(), "the SQS messageId")?;
        Key::new(format!("sqs:{id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_names_itself() {
        let mut eb: EventBridgeEvent = EventBridgeEvent::default();
        assert_eq!(
            eb.natural_key(),
            Err(KeyError::Missing("the EventBridge event's id".into()))
        );
        eb.id = Some("53dc4d37".into());
        assert_eq!(
            eb.natural_key().map(|k| k.to_string()),
            Ok("eventbridge:53dc4d37".into())
        );

        let mut s3 = S3EventRecord::default();
        s3.event_name = Some("ObjectCreated:Put".into());
        s3.s3.bucket.name = Some("b".into());
        s3.s3.object.key = Some("a/b.txt".into());
        s3.s3.object.sequencer = Some("0055AED6DCD90281E5".into());
        assert_eq!(
            s3.natural_key().map(|k| k.to_string()),
            Ok("s3:ObjectCreated:Put:b/a/b.txt@0055AED6DCD90281E5".into())
        );
        s3.s3.object.version_id = Some("v1".into());
        assert_eq!(
            s3.natural_key().map(|k| k.to_string()),
            Ok("s3:ObjectCreated:Put:b/a/b.txt@v1".into())
        );

        let mut ddb = EventRecord::default();
        ddb.event_id = "c4ca4238".into();
        assert_eq!(
            ddb.natural_key().map(|k| k.to_string()),
            Ok("ddbstream:c4ca4238".into())
        );

        let mut sqs = SqsMessage::default();
        assert_eq!(
            sqs.natural_key(),
            Err(KeyError::Missing("the SQS messageId".into()))
        );
        sqs.message_id = Some("m-1".into());
        assert_eq!(
            sqs.natural_key().map(|k| k.to_string()),
            Ok("sqs:m-1".into())
        );
    }

    #[test]
    fn a_schedule_is_keyed_by_its_scheduled_time() {
        let event: EventBridgeEvent = serde_json::from_str(
            r#"{"version":"0","id":"run-1","detail-type":"Scheduled Event","source":"aws.events",
                "account":"123456789012","time":"2026-12-06T10:00:00Z","region":"us-east-1",
                "resources":["arn:aws:events:us-east-1:123456789012:rule/nightly"],"detail":{}}"#,
        )
        .expect("a scheduled event");
        assert_eq!(
            scheduled_key(&event).map(|k| k.to_string()),
            Ok("schedule:arn:aws:events:us-east-1:123456789012:rule/nightly@2026-12-06T10:00:00+00:00".into())
        );
        assert_eq!(
            scheduler_key("arn:aws:scheduler:::schedule/default/x", ""),
            Err(KeyError::Missing("the scheduled time".into()))
        );
    }
}
