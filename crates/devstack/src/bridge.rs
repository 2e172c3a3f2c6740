//! Dev only: a stand-in for the SQS event source mapping. Receives up to a batch of messages,
//! hands them to the consumer as an `SqsEvent`, deletes what was not reported failed, and leaves
//! the rest to their visibility, as Lambda's mapping does with ReportBatchItemFailures.
//!
//! As SQS and the mapping do:
//! - **receive counts**: every record carries the queue's own `ApproximateReceiveCount` (and
//!   the other system attributes), and the queue's redrive policy moves a message received
//!   `maxReceiveCount` times;
//! - **changed visibility**: a message whose visibility the consumer changed (a throttle's
//!   delay) comes back when the consumer said, even with [`Bridge::retry_failed_now`], which
//!   only shortens the queue's own visibility timeout for the other failed messages;
//! - **the mapping's state**: given one ([`Bridge::with_mapping`], an event source mapping
//!   moto holds), nothing is received while it is not `Enabled` (paused), and a batch is at
//!   most its `BatchSize`.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Mutex, PoisonError};

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::error::SdkError;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use inbox::queue::QueueError;
use inbox::redelivery::Redelivery;

/// The most messages one ReceiveMessage returns (SQS's limit).
const SQS_MAX_BATCH: i32 = 10;

/// Receipt handles whose visibility a consumer changed ([`Watched`]), for the bridges of this
/// process to leave alone.
static DELAYED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn delayed(handle: &str) -> bool {
    DELAYED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .is_some_and(|set| set.remove(handle))
}

fn note_delayed(handle: &str) {
    DELAYED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashSet::new)
        .insert(handle.to_owned());
}

/// A consumer's [`Redelivery`] that tells the bridges which messages it delayed, so that
/// [`Bridge::retry_failed_now`] does not undo the delay (SQS would not).
#[derive(Clone, Debug)]
pub struct Watched<R>(pub R);

impl<R: Redelivery> Redelivery for Watched<R> {
    async fn delay(&self, message: &SqsMessage, seconds: u32) -> Result<(), QueueError> {
        self.0.delay(message, seconds).await?;
        if let Some(handle) = message.receipt_handle.as_deref() {
            note_delayed(handle);
        }
        Ok(())
    }
    async fn dead_letter(&self, message: &SqsMessage) -> Result<(), QueueError> {
        self.0.dead_letter(message).await
    }
    fn dead_letters(&self) -> bool {
        self.0.dead_letters()
    }
    async fn resend(&self, message: &SqsMessage) -> Result<(), QueueError> {
        self.0.resend(message).await
    }
}

/// One queue, as the mapping sees it.
#[derive(Clone, Debug)]
pub struct Bridge {
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    queue_arn: String,
    /// The event source mapping whose state and batch size this bridge follows.
    mapping: Option<(aws_sdk_lambda::Client, String)>,
    /// Seconds a received message stays invisible (the queue's own timeout when `None`).
    pub visibility_timeout: Option<i32>,
    /// Make failed messages visible again at once instead of after the visibility timeout
    /// (tests and the demo, so redelivery does not wait); a message the consumer delayed
    /// keeps its delay.
    pub retry_failed_now: bool,
}

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub received: usize,
    pub deleted: usize,
    pub failed: usize,
    /// Messages already deleted through a later receive of theirs when this round settled
    /// (`ReceiptHandleIsInvalid`): the event source mapping drops such a settle, and so does
    /// the bridge.
    pub gone: usize,
}

/// Whether a settle call took effect: `Ok(false)` where its receipt handle is stale
/// (`stale`: the message was already deleted through a later receive), the error otherwise.
fn took_effect<T, E, R>(
    result: Result<T, SdkError<E, R>>,
    stale: impl Fn(&E) -> bool,
) -> anyhow::Result<bool>
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(&stale) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The mapping's settings the bridge follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingState {
    /// `Enabled`, `Disabled`, ...
    pub state: String,
    pub batch_size: i32,
}

impl MappingState {
    pub fn enabled(&self) -> bool {
        self.state == "Enabled"
    }
}

impl Bridge {
    /// The mapping of the queue at `queue_url` (its ARN goes into each record's
    /// `eventSourceARN`).
    pub async fn new(sqs: aws_sdk_sqs::Client, queue_url: &str) -> anyhow::Result<Bridge> {
        let queue_arn = inbox::queue::SqsQueue::new(sqs.clone(), queue_url)
            .arn()
            .await?;
        Ok(Bridge {
            sqs,
            queue_url: queue_url.to_owned(),
            queue_arn,
            mapping: None,
            visibility_timeout: None,
            retry_failed_now: false,
        })
    }

    /// Follows the event source mapping `uuid` (in the Lambda service `lambda` reaches): its
    /// state (nothing is received unless `Enabled`) and its batch size.
    pub fn with_mapping(mut self, lambda: aws_sdk_lambda::Client, uuid: &str) -> Bridge {
        self.mapping = Some((lambda, uuid.to_owned()));
        self
    }

    /// The mapping's state and batch size now; `None` without a mapping.
    pub async fn mapping_state(&self) -> anyhow::Result<Option<MappingState>> {
        let Some((lambda, uuid)) = &self.mapping else {
            return Ok(None);
        };
        let out = lambda.get_event_source_mapping().uuid(uuid).send().await?;
        Ok(Some(MappingState {
            state: out.state().unwrap_or("Unknown").to_owned(),
            batch_size: out.batch_size().unwrap_or(SQS_MAX_BATCH),
        }))
    }

    /// Up to a batch of visible messages; none while the mapping is not enabled.
    pub async fn receive(&self) -> anyhow::Result<Vec<Message>> {
        let batch = match self.mapping_state().await? {
            Some(m) if !m.enabled() => return Ok(Vec::new()),
            Some(m) => m.batch_size.clamp(1, SQS_MAX_BATCH),
            None => SQS_MAX_BATCH,
        };
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(batch)
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

    /// Deletes what the consumer did not report failed; with [`Bridge::retry_failed_now`],
    /// makes the other failed ones visible again, except those the consumer delayed.
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
            // Taken from the registry either way: a receipt handle is good for one receive.
            let consumer_delayed = delayed(handle);
            if failed.contains(id) {
                round.failed += 1;
                if self.retry_failed_now && !consumer_delayed {
                    let changed = self
                        .sqs
                        .change_message_visibility()
                        .queue_url(&self.queue_url)
                        .receipt_handle(handle)
                        .visibility_timeout(0)
                        .send()
                        .await;
                    if !took_effect(changed, |e| e.is_receipt_handle_is_invalid())? {
                        round.gone += 1;
                    }
                }
            } else {
                let deleted = self
                    .sqs
                    .delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(handle)
                    .send()
                    .await;
                if took_effect(deleted, |e| e.is_receipt_handle_is_invalid())? {
                    round.deleted += 1;
                } else {
                    round.gone += 1;
                }
            }
        }
        Ok(round)
    }

    /// Pumps until the queue has nothing visible, invoking `invoke` on each round's event;
    /// an error after 100 rounds.
    pub async fn drain<F, Fut>(&self, invoke: F) -> anyhow::Result<()>
    where
        F: Fn(SqsEvent) -> Fut,
        Fut: Future<Output = anyhow::Result<SqsBatchResponse>>,
    {
        for _ in 0..100 {
            if self.pump_once(&invoke).await?.is_none() {
                return Ok(());
            }
        }
        anyhow::bail!("the queue did not drain in 100 rounds")
    }

    /// One round: receive, invoke, settle. `None` when the queue had nothing visible (or the
    /// mapping is paused).
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
