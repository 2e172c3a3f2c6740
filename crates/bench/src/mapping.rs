//! The SQS event source mapping, played by the driver as Lambda's mapping does with
//! `ReportBatchItemFailures`: ReceiveMessage of up to a batch from the queue, the records as
//! an `SqsEvent` (aws_lambda_events), and DeleteMessageBatch of the records the consumer did
//! not report in `batchItemFailures`. Its SQS requests go through a counting proxy of their
//! own, one lane per poller, so that they are counted and priced as the mapping's requests
//! are billed (to the account, as SQS requests).

use std::collections::HashSet;

use anyhow::{Context, Result};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};

use crate::proxy::Proxy;

/// One queue as the mapping sees it, with an SQS client per poller.
pub struct Mapping {
    clients: Vec<aws_sdk_sqs::Client>,
    queue_url: String,
    queue_arn: String,
    region: String,
    /// Most records per batch (the mapping's `BatchSize`, at most SQS's 10).
    pub batch_size: i32,
}

impl Mapping {
    /// The mapping of `queue_url` (whose ARN is `queue_arn`), its requests on `proxy`'s lanes.
    pub fn new(
        sdk: &aws_config::SdkConfig,
        proxy: &Proxy,
        queue_url: &str,
        queue_arn: &str,
        batch_size: i32,
    ) -> Mapping {
        let clients = (0..proxy.lanes())
            .map(|lane| {
                let conf = aws_sdk_sqs::config::Builder::from(sdk)
                    .endpoint_url(proxy.endpoint(lane))
                    .build();
                aws_sdk_sqs::Client::from_conf(conf)
            })
            .collect();
        Mapping {
            clients,
            queue_url: queue_url.to_owned(),
            queue_arn: queue_arn.to_owned(),
            region: queue_arn
                .split(':')
                .nth(3)
                .unwrap_or("us-east-1")
                .to_owned(),
            batch_size: batch_size.clamp(1, 10),
        }
    }

    fn client(&self, lane: usize) -> &aws_sdk_sqs::Client {
        &self.clients[lane % self.clients.len()]
    }

    /// Up to a batch of visible messages, with their system attributes.
    pub async fn receive(&self, lane: usize) -> Result<Vec<Message>> {
        let out = self
            .client(lane)
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(self.batch_size)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .context("the mapping's ReceiveMessage")?;
        Ok(out.messages.unwrap_or_default())
    }

    /// The event Lambda builds from these messages.
    pub fn event(&self, messages: &[Message]) -> SqsEvent {
        let mut event = SqsEvent::default();
        event.records = messages.iter().map(|m| self.record(m)).collect();
        event
    }

    /// One message as an event record.
    fn record(&self, m: &Message) -> SqsMessage {
        let mut r = SqsMessage::default();
        r.message_id = m.message_id.clone();
        r.receipt_handle = m.receipt_handle.clone();
        r.body = m.body.clone();
        r.md5_of_body = m.md5_of_body.clone();
        if let Some(attributes) = m.attributes() {
            r.attributes = attributes
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                .collect();
        }
        r.event_source = Some("aws:sqs".to_owned());
        r.event_source_arn = Some(self.queue_arn.clone());
        r.aws_region = Some(self.region.clone());
        r
    }

    /// Deletes, in one DeleteMessageBatch, the messages `response` did not report failed;
    /// how many were deleted.
    pub async fn delete(
        &self,
        lane: usize,
        messages: &[Message],
        response: &SqsBatchResponse,
    ) -> Result<usize> {
        let failed: HashSet<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        let mut entries = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if failed.contains(m.message_id().unwrap_or_default()) {
                continue;
            }
            entries.push(
                DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .build()?,
            );
        }
        if entries.is_empty() {
            return Ok(0);
        }
        let n = entries.len();
        let out = self
            .client(lane)
            .delete_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .context("the mapping's DeleteMessageBatch")?;
        if let Some(f) = out.failed().first() {
            anyhow::bail!(
                "DeleteMessageBatch refused {} of {n}, e.g. {f:?}",
                out.failed().len()
            );
        }
        Ok(n)
    }
}
