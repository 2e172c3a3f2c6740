//! An EventBridge bus as a destination: one `PutEvents` entry per event, `Source`
//! `webhook-inbox.<source>`, `DetailType` the event type (`webhook` where it has none),
//! `Detail` the key beside the body's JSON text as sent, or as a string where it holds an
//! integer beyond the 64-bit range `PutEvents` takes ([`super::detail`]). EventBridge
//! deduplicates nothing: the ledger does, and `detail.idempotency_key` lets a rule's target
//! do it too.

use aws_sdk_eventbridge::error::ProvideErrorMetadata;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use super::{aws_error, detail};
use crate::bucket::S3Bucket;
use crate::consumer::{Job, Outcome, ProcessError};

/// EventBridge's largest entry (256 KB), less room for `Source`, `DetailType` and the bus.
pub const MAX_DETAIL_BYTES: usize = 256 * 1024 - 2048;

/// The `DetailType` of an event without a type.
pub const UNTYPED_DETAIL_TYPE: &str = "webhook";

/// The `Source` of an event of `source`.
pub fn event_source(source: &str) -> String {
    format!("webhook-inbox.{source}")
}

#[derive(Clone, Debug)]
pub struct EventBus {
    client: aws_sdk_eventbridge::Client,
    arn: String,
    store: Option<S3Bucket>,
}

impl EventBus {
    pub fn new(client: aws_sdk_eventbridge::Client, arn: String, store: Option<S3Bucket>) -> Self {
        Self { client, arn, store }
    }

    pub async fn deliver(&self, job: &Job) -> Outcome {
        let detail = match detail::fitted(
            job,
            MAX_DETAIL_BYTES,
            detail::Carries::Int64Json,
            self.store.as_ref(),
        )
        .await
        {
            Ok(d) => d,
            Err(e) => return Outcome::Failed(e),
        };
        let detail_type = job.event_type.as_deref().unwrap_or(UNTYPED_DETAIL_TYPE);
        let entry = PutEventsRequestEntry::builder()
            .event_bus_name(&self.arn)
            .source(event_source(&job.source))
            .detail_type(detail_type)
            .detail(detail)
            .set_trace_header(
                job.trace
                    .as_ref()
                    .map(crate::trace::TraceContext::xray_header),
            )
            .build();
        let answer = self.client.put_events().entries(entry).send().await;
        match answer {
            Err(e) => aws_error::outcome("PutEvents", e.code(), &e.to_string()),
            Ok(out) if out.failed_entry_count() > 0 => {
                let failed = out.entries().first();
                let code = failed.and_then(|e| e.error_code());
                let message = failed.and_then(|e| e.error_message()).unwrap_or_default();
                match code {
                    Some(code) => aws_error::outcome("PutEvents", Some(code), message),
                    None => Outcome::Failed(ProcessError("PutEvents refused the entry".into())),
                }
            }
            Ok(_) => Outcome::Done,
        }
    }
}
