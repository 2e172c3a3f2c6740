//! Dev only: a stand-in for the SQS event source mapping. Receives up to 10 messages, hands
//! them to the consumer as an `SqsEvent`, deletes what was not reported failed, and leaves
//! the rest to the visibility timeout, as Lambda's mapping does with ReportBatchItemFailures.

use std::collections::HashSet;
use std::future::Future;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};

/// One queue, as the mapping sees it.
#[derive(Clone, Debug)]
pub struct Bridge {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    queue_arn: String,
    /// Seconds a received message stays invisible (the queue's own timeout when `None`).
    pub visibility_timeout: Option<i32>,
    /// Make failed messages visible again at once instead of after the visibility timeout
    /// (tests and the demo, so redelivery does not wait).
    pub retry_failed_now: bool,
}

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub received: usize,
    pub deleted: usize,
    pub failed: usize,
}

impl Bridge {
    /// The mapping of the queue at `queue_url` (its ARN goes into each record's
    /// `eventSourceARN`).
    pub async fn new(sqs: aws_sdk_sqs::Client, queue_url: &str) -> anyhow::Result<Bridge> {
        let queue_arn = inbox_ops::aws::queue_arn(&sqs, queue_url).await?;
        Ok(Bridge {
            sqs,
            queue_url: queue_url.to_owned(),
            queue_arn,
            visibility_timeout: None,
            retry_failed_now: false,
        })
    }

    /// Up to 10 visible messages.
    pub async fn receive(&self) -> anyhow::Result<Vec<Message>> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .set_visibility_timeout(self.visibility_timeout)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await?;
        Ok(out.messages.unwrap_or_default())
    }

    /// The event Lambda would build from these messages.
    pub fn event(&self, messages: &[Message]) -> SqsEvent {
        let region = self
            .queue_arn
            .split(':')
            .nth(3)
            .unwrap_or("us-east-1")
            .to_owned();
        let mut event = SqsEvent::default();
        event.records = messages
            .iter()
            .map(|m| {
                let mut r = SqsMessage::default();
                r.message_id = m.message_id.clone();
                r.receipt_handle = m.receipt_handle.clone();
                r.body = m.body.clone();
                r.md5_of_body = m.md5_of_body.clone();
                r.attributes = m
                    .attributes()
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                r.event_source = Some("aws:sqs".to_owned());
                r.event_source_arn = Some(self.queue_arn.clone());
                r.aws_region = Some(region.clone());
                r
            })
            .collect();
        event
    }

    /// Deletes what the consumer did not report failed.
    pub async fn settle(
        &self,
        messages: &[Message],
        response: &SqsBatchResponse,
    ) -> anyhow::Result<Round> {
        let failed: HashSet<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        let mut round = Round {
            received: messages.len(),
            ..Round::default()
        };
        for m in messages {
            let id = m.message_id().unwrap_or_default();
            let handle = m.receipt_handle().unwrap_or_default();
            if failed.contains(id) {
                round.failed += 1;
                if self.retry_failed_now {
                    self.sqs
                        .change_message_visibility()
                        .queue_url(&self.queue_url)
                        .receipt_handle(handle)
                        .visibility_timeout(0)
                        .send()
                        .await?;
                }
            } else {
                self.sqs
                    .delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(handle)
                    .send()
                    .await?;
                round.deleted += 1;
            }
        }
        Ok(round)
    }

    /// One round: receive, invoke, settle. `None` when the queue had nothing visible.
    pub async fn pump_once<F, Fut>(&self, invoke: F) -> anyhow::Result<Option<Round>>
    where
        F: FnOnce(SqsEvent) -> Fut,
        Fut: Future<Output = anyhow::Result<SqsBatchResponse>>,
    {
        let messages = self.receive().await?;
        if messages.is_empty() {
            return Ok(None);
        }
        let response = invoke(self.event(&messages)).await?;
        Ok(Some(self.settle(&messages, &response).await?))
    }
}
