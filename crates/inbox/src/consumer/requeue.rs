//! What comes back when: after a throttle, the messages of the batch delayed to the
//! downstream's `Retry-After` (at least their receive count in seconds); after `MAX_FAILURES`
//! real failures, or as many receives of an unreadable message, the message copied to the
//! dead-letter queue and reported done (docs/design.md §6).

use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use tracing::warn;

use super::invocation::{receive_count, sent_at_ms, Invocation, Verdict};
use super::record::{Fields, Recorded};
use super::Wired;
use super::{Consumer, Processor};
use crate::clock::Clock;
use crate::ledger::LedgerStore;
use crate::metrics::UNKNOWN_SOURCE_DIMENSION;
use crate::redelivery::{Redelivery, MAX_DELAY_SECONDS};

/// How close to the end of the queue's retention a delayed message may come back: nearer, a
/// copy goes to the dead-letter queue (it must still be received before SQS deletes it).
pub const RETENTION_MARGIN_MS: i64 = 3_600_000;

/// The receives after which a message a breaker held is sent to the queue again as a fresh
/// message: well below the template's `maxReceiveCount` (500), so that SQS never moves a
/// held message to the dead-letter queue itself (docs/routing.md#breakers).
pub const HELD_RESEND_RECEIVES: u32 = 400;

/// The seconds a throttled or held message waits: the throttle's wait, and at least as many
/// seconds as the message has been received, so that throttling alone reaches the template's
/// `maxReceiveCount` of 500 only after 1 + 2 + ... + 500 s, about 35 hours.
pub fn throttle_delay_seconds(wait: Duration, receives: u32) -> u32 {
    let wait =
        u32::try_from(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).unwrap_or(u32::MAX);
    wait.max(receives).clamp(1, MAX_DELAY_SECONDS)
}

impl<L: LedgerStore, P: Processor, C: Clock, W: Wired> Consumer<L, P, C, W> {
    /// After a throttle: the throttled messages, and every message that did not run, come
    /// back after the wait (each at least its receive count in seconds); messages that ran
    /// and failed keep the queue's visibility timeout. A delay that fails leaves the message
    /// to the visibility timeout. A message the delay would bring back too near the end of
    /// the queue's retention is also copied to the dead-letter queue, so that it cannot
    /// expire unseen (it stays reported failed, keeping the batch answer a suffix of its
    /// group; a later run and the copy meet in the ledger).
    ///
    /// A message a destination's breaker held is never dead-lettered for it: near the end of
    /// the retention, or at [`HELD_RESEND_RECEIVES`] receives, it is sent to the queue again
    /// as a fresh message (the same body and group) and reported done; the indexes of those.
    /// Its group's later messages were not run (a FIFO group stops at its first message not
    /// done), so the answer stays a suffix of the group.
    pub(super) async fn delay_after_throttle(
        &self,
        messages: &[SqsMessage],
        failed: &[usize],
        inv: &Invocation<'_>,
        wait: Option<Duration>,
    ) -> Vec<usize> {
        let now = self.clock.now_ms();
        let delays = failed.iter().filter_map(|&i| {
            let wait = match inv.verdict(i) {
                Some(Verdict::Throttled(own)) => own,
                // Without a throttle of the forward (a destination throttled), what did not
                // run waits behind its group's head in the FIFO queue anyway.
                None | Some(Verdict::Held) => wait?,
                Some(Verdict::Failed | Verdict::Done) => return None,
            };
            let msg = &messages[i];
            let seconds = throttle_delay_seconds(wait, receive_count(msg));
            let near_expiry = sent_at_ms(msg)
                .zip(self.settings.queue_retention_seconds)
                .is_some_and(|(sent, retention)| {
                    let retention_ms = i64::try_from(retention).unwrap_or(i64::MAX / 2000) * 1000;
                    now + i64::from(seconds) * 1000 + RETENTION_MARGIN_MS
                        >= sent.saturating_add(retention_ms)
                });
            let kept = matches!(inv.verdict(i), Some(Verdict::Throttled(_)))
                && inv.was_kept(&format!(
                    "{}:{}",
                    inv.request_id,
                    msg.message_id.as_deref().unwrap_or_default()
                ));
            let resend = kept && (near_expiry || receive_count(msg) >= HELD_RESEND_RECEIVES);
            Some(async move {
                let message_id = msg.message_id.as_deref().unwrap_or_default();
                if resend {
                    match self.resend_held(msg).await {
                        Ok(()) => return Some(i),
                        Err(e) => warn!(message_id, error = %e, "could not send a held message again"),
                    }
                }
                if near_expiry && self.wired().redelivery.dead_letters() {
                    warn!(message_id, seconds, "the delay nears the queue's retention");
                    self.dead_letter(msg, UNKNOWN_SOURCE_DIMENSION, None).await;
                }
                if let Err(e) = self.wired().redelivery.delay(msg, seconds).await {
                    warn!(message_id, seconds, error = %e, "could not delay the message; it comes back after the visibility timeout");
                }
                None
            })
        });
        futures::future::join_all(delays)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// A held message sent again as a fresh one: counted `HeldResent`, its line.
    async fn resend_held(&self, msg: &SqsMessage) -> Result<(), crate::queue::QueueError> {
        self.wired().redelivery.resend(msg).await?;
        let source = msg
            .body
            .as_deref()
            .and_then(|b| crate::queue::Envelope::parse(b).ok())
            .map(|e| e.source);
        let source = source.as_deref().unwrap_or(UNKNOWN_SOURCE_DIMENSION);
        self.metrics
            .count(source, crate::metrics::Metric::HeldResent);
        tracing::info!(
            message_id = msg.message_id.as_deref().unwrap_or_default(),
            source,
            receives = receive_count(msg),
            "a held message nears the queue's bound: sent again as a fresh message, nothing dead-lettered"
        );
        Ok(())
    }

    /// A message the consumer cannot read: reported failed, and dead-lettered once it has
    /// been received `MAX_FAILURES` times (it never will be readable).
    pub(super) async fn unreadable(&self, msg: &SqsMessage, source: &str) -> Verdict {
        if self.wired().redelivery.dead_letters()
            && receive_count(msg) >= self.settings.max_failures
        {
            return self.dead_letter(msg, source, None).await;
        }
        Verdict::Failed
    }

    /// Copies the message to the dead-letter queue and reports it done; on a failed send,
    /// reported failed (it comes back and is tried again).
    pub(super) async fn dead_letter(
        &self,
        msg: &SqsMessage,
        source: &str,
        key: Option<&str>,
    ) -> Verdict {
        let written = self.wired().redelivery.dead_letter(msg).await;
        let fields = Fields::default()
            .message_id(msg.message_id.as_deref().unwrap_or_default())
            .source(source)
            .key(key.unwrap_or_default());
        match written {
            Ok(()) => {
                self.record(
                    Recorded::DeadLettered,
                    fields
                        .receives(receive_count(msg))
                        .message("moved to the dead-letter queue"),
                );
                Verdict::Done
            }
            Err(e) => {
                self.record(
                    Recorded::StoreFailed,
                    fields.error(&e).message("could not dead-letter"),
                );
                Verdict::Failed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_the_wait_and_at_least_the_receive_count() {
        let s = Duration::from_secs;
        assert_eq!(throttle_delay_seconds(s(5), 1), 5);
        assert_eq!(throttle_delay_seconds(Duration::from_millis(4200), 1), 5);
        assert_eq!(throttle_delay_seconds(s(5), 40), 40);
        assert_eq!(throttle_delay_seconds(Duration::ZERO, 0), 1);
        assert_eq!(throttle_delay_seconds(s(12 * 3600), 1), MAX_DELAY_SECONDS);
        // Throttled on every receive, a message reaches the template's maxReceiveCount (500)
        // only after 1 + 2 + ... + 500 seconds, about 35 hours.
        let total: u64 = (1..=500)
            .map(|n| u64::from(throttle_delay_seconds(s(1), n)))
            .sum();
        assert!(total > 34 * 3600, "{total}");
    }
}
