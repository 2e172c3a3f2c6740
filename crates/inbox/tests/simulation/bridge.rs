//! The consumer behind the local bridge: a batch received from the queue model becomes a
//! consumer invocation; its batch answer deletes what succeeded (unless the bridge dies). A
//! message in flight can also be delivered again, at once, to a second invocation (what a
//! standard queue may do).

use std::collections::BTreeSet;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsMessage};
use rand::Rng;

use crate::params::{CONSUMER_TIMEOUT_MS, VISIBILITY_MS};
use crate::queue_model::Msg;
use crate::sim::{unbounded_zombies, Sim, Task, Work};

impl Sim<'_> {
    pub(crate) fn start_batch(&mut self) -> bool {
        let now = self.now();
        let (batch, moved) = self.w().queue.receive(now, 10);
        if !moved.is_empty() {
            let mut w = self.w();
            w.stats.dead_lettered += moved.len() as u64;
            w.log(format!(
                "queue: {} message(s) moved to the dead-letter queue",
                moved.len()
            ));
            // SQS counts receives, not failures: a message a breaker held must never get
            // there (the consumer sends it again before: requeue.rs, HELD_RESEND_RECEIVES).
            for m in moved {
                if w.held_events.contains(&m.key) {
                    w.violation(format!(
                        "HELD-DEAD-LETTERED: {} ({}) reached maxReceiveCount ({} receives) after its breaker held it",
                        m.id, m.key, m.receives
                    ));
                }
            }
        }
        if batch.is_empty() {
            return false;
        }
        self.launch(batch, "gets");
        true
    }

    /// A message another invocation is working on, delivered again to a new one at once.
    pub(crate) fn deliver_again(&mut self) -> bool {
        let now = self.now();
        let pick = self.rng.random_range(0..usize::MAX);
        let Some(m) = self.w().queue.deliver_again(now, pick) else {
            return false;
        };
        self.w().stats.delivered_again += 1;
        self.launch(vec![m], "gets again, while in flight,");
        true
    }

    /// A consumer invocation over `batch`.
    fn launch(&mut self, batch: Vec<Msg>, how: &str) {
        let now = self.now();
        self.invocations += 1;
        let request_id = format!("cx{}", self.invocations);
        let messages: Vec<SqsMessage> = batch
            .iter()
            .map(|m| {
                let mut msg = SqsMessage::default();
                msg.message_id = Some(m.id.clone());
                msg.receipt_handle = Some(format!("{}#{}", m.id, m.receipt));
                msg.body = Some(m.body.clone());
                msg.attributes
                    .insert("MessageGroupId".to_owned(), m.group.clone());
                msg.attributes
                    .insert("ApproximateReceiveCount".to_owned(), m.receives.to_string());
                msg
            })
            .collect();
        let deadline = now + CONSUMER_TIMEOUT_MS;
        let cx = self.cx;
        let rid = request_id.clone();
        {
            let mut w = self.w();
            w.stats.batches += 1;
            let shown: Vec<String> = batch
                .iter()
                .map(|m| format!("{}={}", m.id, m.key))
                .collect();
            w.log(format!(
                "{request_id}: consumer {how} [{}]",
                shown.join(", ")
            ));
        }
        self.tasks.push(Task {
            name: request_id,
            deadline,
            hard_stop: if unbounded_zombies() {
                i64::MAX
            } else {
                now + VISIBILITY_MS
            },
            zombie: false,
            work: Work::Consume {
                batch,
                fut: Box::pin(
                    async move { cx.handle_batch(&messages, &rid, Some(deadline)).await },
                ),
            },
        });
    }

    pub(crate) fn batch_done(&mut self, name: &str, batch: &[Msg], resp: &SqsBatchResponse) {
        let failed: BTreeSet<&str> = resp
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        self.check_batch_answer(name, batch, &failed);
        let faults_on = self.w().faults_on;
        let crash = faults_on && self.rng.random_bool(self.rates.bridge_crash);
        let mut w = self.w();
        if crash {
            w.log(format!(
                "{name}: done, failed {failed:?}; the bridge dies before deleting"
            ));
            return;
        }
        let mut deleted = Vec::new();
        for m in batch.iter().filter(|m| !failed.contains(m.id.as_str())) {
            if w.queue.delete(&m.id, m.receipt) {
                deleted.push(m.id.as_str());
            }
        }
        w.log(format!(
            "{name}: done, failed {failed:?}, deleted {deleted:?}"
        ));
    }
}
