//! What the consumer asks of its queue besides the batch answer (docs/design.md §6):
//!
//! - **delay**: a message comes back after a given time instead of the queue's visibility
//!   timeout (`ChangeMessageVisibility`), when the system of record asked to be called later
//!   (429 or 503 with `Retry-After`);
//! - **dead-letter**: a copy of a message goes to the dead-letter queue (same body, group and
//!   deduplication id, as SQS's own move keeps them), after its key failed `MAX_FAILURES` times
//!   for real; the consumer then reports it done and the mapping deletes it. The queue's own
//!   `maxReceiveCount` stays as a high safety net, because SQS counts every receive, throttled
//!   or not.
//!
//! [`SqsRedelivery`] does both on SQS; [`NoRedelivery`] does neither (a consumer without a
//! queue: tests, examples), so a delayed message comes back after the visibility timeout and
//! only `maxReceiveCount` dead-letters.

use std::future::Future;

use aws_lambda_events::sqs::SqsMessage;

use crate::queue::QueueError;

/// SQS refuses a visibility beyond 12 hours counted from the receive, which came before this
/// invocation (by up to a batching window and a function timeout): a delay is cut to 11 h 30.
pub const MAX_DELAY_SECONDS: u32 = 41_400;

/// The consumer's port to its queue, beyond the batch answer.
pub trait Redelivery: Send + Sync + 'static {
    /// `message` becomes visible again `seconds` from now (at most [`MAX_DELAY_SECONDS`]).
    fn delay(
        &self,
        message: &SqsMessage,
        seconds: u32,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// A copy of `message` on the dead-letter queue. Only called when
    /// [`Redelivery::dead_letters`] is true.
    fn dead_letter(
        &self,
        message: &SqsMessage,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Whether [`Redelivery::dead_letter`] has a dead-letter queue to send to; without one the
    /// consumer leaves dead-lettering to the queue's `maxReceiveCount`.
    fn dead_letters(&self) -> bool;

    /// `message` sent to the queue again as a fresh message (the same body and group; a
    /// deduplication id of its own), for a message a destination's breaker held near the
    /// queue's retention or `maxReceiveCount` (docs/routing.md#breakers). The default: no
    /// queue to send to.
    fn resend(&self, message: &SqsMessage) -> impl Future<Output = Result<(), QueueError>> + Send {
        let _ = message;
        async { Err(QueueError("no queue to send to again".into())) }
    }
}

impl<T: Redelivery> Redelivery for std::sync::Arc<T> {
    fn delay(
        &self,
        message: &SqsMessage,
        seconds: u32,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).delay(message, seconds)
    }
    fn dead_letter(
        &self,
        message: &SqsMessage,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).dead_letter(message)
    }
    fn dead_letters(&self) -> bool {
        (**self).dead_letters()
    }
    fn resend(&self, message: &SqsMessage) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).resend(message)
    }
}

/// No queue: a delay fails (the message comes back after the visibility timeout) and nothing
/// is dead-lettered by the consumer.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRedelivery;

impl Redelivery for NoRedelivery {
    async fn delay(&self, _message: &SqsMessage, _seconds: u32) -> Result<(), QueueError> {
        Err(QueueError("no queue to change a visibility on".into()))
    }
    async fn dead_letter(&self, _message: &SqsMessage) -> Result<(), QueueError> {
        Err(QueueError("no dead-letter queue".into()))
    }
    fn dead_letters(&self) -> bool {
        false
    }
}

/// The webhook queue (`QUEUE_URL`) and its dead-letter queue (`DLQ_URL`) on SQS.
#[derive(Clone, Debug)]
pub struct SqsRedelivery {
    client: aws_sdk_sqs::Client,
    queue_url: String,
    dlq_url: Option<String>,
}

impl SqsRedelivery {
    /// Delays on `queue_url`; dead-letters to `dlq_url` where given (FIFO when it ends in
    /// `.fifo`).
    pub fn new(
        client: aws_sdk_sqs::Client,
        queue_url: impl Into<String>,
        dlq_url: Option<String>,
    ) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
            dlq_url: dlq_url.filter(|u| !u.is_empty()),
        }
    }
}

fn sqs_error<E, R>(what: &str, err: aws_sdk_sqs::error::SdkError<E, R>) -> QueueError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    QueueError(format!(
        "{what}: {}",
        aws_sdk_sqs::error::DisplayErrorContext(err)
    ))
}

impl Redelivery for SqsRedelivery {
    async fn delay(&self, message: &SqsMessage, seconds: u32) -> Result<(), QueueError> {
        let handle = message
            .receipt_handle
            .as_deref()
            .ok_or_else(|| QueueError("the message has no receipt handle".into()))?;
        let seconds = i32::try_from(seconds.min(MAX_DELAY_SECONDS)).unwrap_or(i32::MAX);
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(handle)
            .visibility_timeout(seconds)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| sqs_error("ChangeMessageVisibility", e))
    }

    async fn dead_letter(&self, message: &SqsMessage) -> Result<(), QueueError> {
        let dlq = self
            .dlq_url
            .as_deref()
            .ok_or_else(|| QueueError("no dead-letter queue".into()))?;
        let mut req = self
            .client
            .send_message()
            .queue_url(dlq)
            .message_body(message.body.clone().unwrap_or_default());
        if dlq.ends_with(".fifo") {
            let message_id = message.message_id.as_deref().unwrap_or_default();
            let attribute = |name: &str| {
                message
                    .attributes
                    .get(name)
                    .filter(|v| !v.is_empty())
                    .cloned()
                    .unwrap_or_else(|| message_id.to_owned())
            };
            req = req
                .message_group_id(attribute("MessageGroupId"))
                .message_deduplication_id(attribute("MessageDeduplicationId"));
        }
        req.send()
            .await
            .map(|_| ())
            .map_err(|e| sqs_error("SendMessage to the dead-letter queue", e))
    }

    fn dead_letters(&self) -> bool {
        self.dlq_url.is_some()
    }

    /// `SendMessage` to the webhook queue: the body; on FIFO the group, and as deduplication
    /// id `held-<the message id>` (a fresh message of its own: the original's id would be
    /// dropped as a repeat within SQS's five minutes).
    async fn resend(&self, message: &SqsMessage) -> Result<(), QueueError> {
        let mut req = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(message.body.clone().unwrap_or_default());
        if self.queue_url.ends_with(".fifo") {
            let message_id = message.message_id.as_deref().unwrap_or_default();
            let group = message
                .attributes
                .get("MessageGroupId")
                .filter(|v| !v.is_empty())
                .cloned()
                .unwrap_or_else(|| message_id.to_owned());
            req = req
                .message_group_id(group)
                .message_deduplication_id(format!("held-{message_id}"));
        }
        req.send()
            .await
            .map(|_| ())
            .map_err(|e| sqs_error("SendMessage of a held message", e))
    }
}

/// A consumer whose queue may not be configured (`QUEUE_URL` unset): `None` is
/// [`NoRedelivery`].
impl<T: Redelivery> Redelivery for Option<T> {
    async fn delay(&self, message: &SqsMessage, seconds: u32) -> Result<(), QueueError> {
        match self {
            Some(r) => r.delay(message, seconds).await,
            None => NoRedelivery.delay(message, seconds).await,
        }
    }
    async fn dead_letter(&self, message: &SqsMessage) -> Result<(), QueueError> {
        match self {
            Some(r) => r.dead_letter(message).await,
            None => NoRedelivery.dead_letter(message).await,
        }
    }
    fn dead_letters(&self) -> bool {
        self.as_ref().is_some_and(Redelivery::dead_letters)
    }
    async fn resend(&self, message: &SqsMessage) -> Result<(), QueueError> {
        match self {
            Some(r) => r.resend(message).await,
            None => NoRedelivery.resend(message).await,
        }
    }
}
