//! The queue's in-memory twin, beside the ledger's (`MemoryLedger`), the payload bucket's
//! (`MemoryBucket`) and the archive's (`MemoryArchive`): it keeps every message it is sent, in
//! order, for a test to read back.

use std::sync::{Arc, Mutex, MutexGuard};

use super::{Envelope, Outgoing, Queue, QueueError};

/// Keeps every message sent, in order; never fails. Clones share the messages, so a test keeps
/// one clone and hands the other to the receiver.
#[derive(Clone, Debug, Default)]
pub struct MemoryQueue {
    sent: Arc<Mutex<Vec<Outgoing>>>,
}

impl MemoryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    fn sent_guard(&self) -> MutexGuard<'_, Vec<Outgoing>> {
        self.sent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every message sent, in order.
    pub fn sent(&self) -> Vec<Outgoing> {
        self.sent_guard().clone()
    }

    /// How many messages were sent.
    pub fn len(&self) -> usize {
        self.sent_guard().len()
    }

    pub fn is_empty(&self) -> bool {
        self.sent_guard().is_empty()
    }

    /// Each message's envelope, in order. Panics on a message that is not one (the receiver
    /// sends only envelopes).
    pub fn envelopes(&self) -> Vec<Envelope> {
        self.sent_guard()
            .iter()
            .map(|m| Envelope::parse(m.body()).expect("the receiver sends envelopes"))
            .collect()
    }

    /// The envelope of the last message sent.
    pub fn last(&self) -> Option<Envelope> {
        self.envelopes().pop()
    }

    /// The envelope of the last message sent for `key` (an event of a batch is one message of
    /// several).
    pub fn last_of_key(&self, key: &str) -> Option<Envelope> {
        self.envelopes().into_iter().rev().find(|e| e.key == key)
    }

    /// The keys of the messages sent, in order, a run of messages of one key as one (one
    /// event's message sent again, a batch's events apart).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.envelopes().into_iter().map(|e| e.key).collect();
        keys.dedup();
        keys
    }

    /// Each message's `MessageDeduplicationId`, in order.
    pub fn dedup_ids(&self) -> Vec<String> {
        self.sent_guard()
            .iter()
            .map(|m| m.dedup_id().to_owned())
            .collect()
    }
}

impl Queue for MemoryQueue {
    async fn send(&self, msg: Outgoing) -> Result<(), QueueError> {
        self.sent_guard().push(msg);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_each_message_in_order_and_clones_share_them() {
        let q = MemoryQueue::new();
        let held = q.clone();
        let envelope =
            |key: &str| Envelope::new(key, "github", 1, "sha", Default::default(), b"{}").to_json();
        q.send(Outgoing::new("g", "k-1", envelope("github:k-1")))
            .await
            .expect("sent");
        q.send(Outgoing::new("g", "k-2", envelope("github:k-2")))
            .await
            .expect("sent");
        assert_eq!(held.len(), 2);
        assert_eq!(held.dedup_ids(), ["k-1", "k-2"]);
        assert_eq!(held.keys(), ["github:k-1", "github:k-2"]);
        assert_eq!(held.last().expect("a message").key, "github:k-2");
        assert_eq!(
            held.last_of_key("github:k-1").expect("k-1").key,
            "github:k-1"
        );
        assert_eq!(held.last_of_key("github:k-3"), None);
    }
}
