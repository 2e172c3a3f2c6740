//! An SQS queue as a destination: one `SendMessage` per event, the body as sent (base64 where
//! SQS cannot carry it, or a pointer where it is too big), the key and the event in message
//! attributes. On a FIFO queue the group is the key and the deduplication id the key and the
//! destination (a replay's with its id): SQS drops a repeat within five minutes.

use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::MessageAttributeValue;
use base64::Engine as _;

use super::{aws_error, detail};
use crate::bucket::S3Bucket;
use crate::consumer::{Job, Outcome, ProcessError};
use crate::fifo::sqs_id;
use crate::queue::sqs_can_carry;

/// The largest body sent as is: SQS's 256 KiB, less room for the attributes.
pub const MAX_SQS_BODY_BYTES: usize = 256 * 1024 - 4096;

/// The FIFO deduplication id of an event's message to `destination`.
pub fn dedup_id(key: &str, destination: &str, replay_id: Option<&str>) -> String {
    match replay_id {
        Some(rid) => sqs_id(&format!("{key}#{destination}#replay:{rid}")),
        None => sqs_id(&format!("{key}#{destination}")),
    }
}

#[derive(Clone, Debug)]
pub struct QueueTarget {
    client: aws_sdk_sqs::Client,
    name: String,
    url: String,
    fifo: bool,
    store: Option<S3Bucket>,
}

fn attribute(value: &str) -> Option<MessageAttributeValue> {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .ok()
}

impl QueueTarget {
    pub fn new(
        client: aws_sdk_sqs::Client,
        name: String,
        url: String,
        fifo: bool,
        store: Option<S3Bucket>,
    ) -> Self {
        Self {
            client,
            name,
            url,
            fifo,
            store,
        }
    }

    /// The body and its `body_encoding` attribute (`base64`, `body_ref`), if any.
    async fn body(&self, job: &Job) -> Result<(String, Option<&'static str>), ProcessError> {
        let (text, encoding) = match std::str::from_utf8(&job.body) {
            Ok(t) if t.chars().all(sqs_can_carry) && !t.is_empty() => (t.to_owned(), None),
            _ => (
                base64::engine::general_purpose::STANDARD.encode(&job.body),
                Some("base64"),
            ),
        };
        if text.len() <= MAX_SQS_BODY_BYTES {
            return Ok((text, encoding));
        }
        let pointer = detail::pointer(job, self.store.as_ref()).await?;
        Ok((pointer, Some("body_ref")))
    }

    pub async fn deliver(&self, job: &Job) -> Outcome {
        let (body, encoding) = match self.body(job).await {
            Ok(b) => b,
            Err(e) => return Outcome::Failed(e),
        };
        let traceparent = job
            .trace
            .as_ref()
            .map(crate::trace::TraceContext::traceparent);
        let mut send = self
            .client
            .send_message()
            .queue_url(&self.url)
            .message_body(body);
        let attributes = [
            ("idempotency_key", Some(job.key.as_str())),
            ("source", Some(job.source.as_str())),
            ("event_type", job.event_type.as_deref()),
            ("replay_id", job.replay_id.as_deref()),
            ("body_encoding", encoding),
            (crate::trace::TRACEPARENT, traceparent.as_deref()),
        ];
        for (name, value) in attributes {
            if let Some(v) = value.and_then(attribute) {
                send = send.message_attributes(name, v);
            }
        }
        if self.fifo {
            send = send
                .message_group_id(sqs_id(&job.key))
                .message_deduplication_id(dedup_id(&job.key, &self.name, job.replay_id.as_deref()));
        }
        let xray = job
            .trace
            .as_ref()
            .map(crate::trace::TraceContext::xray_header);
        if let Some(header) = crate::queue::aws_trace_header(xray.as_deref()) {
            send = send.message_system_attributes(
                aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader,
                header,
            );
        }
        match send.send().await {
            Ok(_) => Outcome::Done,
            Err(e) => aws_error::outcome("SendMessage", e.code(), &e.to_string()),
        }
    }
}
