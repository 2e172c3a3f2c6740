//! The queue: the SQS FIFO semantics that matter here (deduplication window, one message in
//! flight per group, visibility timeout and its change by the consumer, maxReceiveCount into a
//! dead-letter queue, the consumer's own dead-lettering, redrive, retention).

use std::collections::{HashMap, HashSet};

use inbox::queue::{Envelope, Outgoing};

use crate::params::DEDUP_WINDOW_MS;

#[derive(Clone, Debug)]
pub(crate) struct Msg {
    pub(crate) seq: u64,
    pub(crate) id: String,
    pub(crate) group: String,
    pub(crate) key: String,
    pub(crate) body: String,
    pub(crate) sent_at: i64,
    pub(crate) receives: u32,
    pub(crate) invisible_until: i64,
    pub(crate) receipt: u64,
    /// Moved back from the dead-letter queue by an operator.
    pub(crate) redriven: bool,
}

#[derive(Debug)]
pub(crate) struct QueueModel {
    /// The queue's visibility timeout (the template's, or a shorter one).
    pub(crate) visibility_ms: i64,
    /// The redrive policy's maxReceiveCount and the queue's retention.
    pub(crate) max_receive: u32,
    pub(crate) retention_ms: i64,
    pub(crate) main: Vec<Msg>,
    pub(crate) dlq: Vec<Msg>,
    /// (group, deduplication id) -> end of its window (DeduplicationScope: messageGroup).
    pub(crate) dedup: HashMap<(String, String), i64>,
    pub(crate) next_seq: u64,
    pub(crate) next_receipt: u64,
}

impl QueueModel {
    pub(crate) fn new(visibility_ms: i64, max_receive: u32, retention_ms: i64) -> QueueModel {
        QueueModel {
            visibility_ms,
            max_receive,
            retention_ms,
            main: Vec::new(),
            dlq: Vec::new(),
            dedup: HashMap::new(),
            next_seq: 0,
            next_receipt: 0,
        }
    }

    /// `true` if enqueued, `false` if deduplicated (SQS answers success either way).
    pub(crate) fn send(&mut self, out: &Outgoing, now: i64) -> bool {
        let id = (out.group_id().to_owned(), out.dedup_id().to_owned());
        if self.dedup.get(&id).is_some_and(|until| *until > now) {
            return false;
        }
        self.dedup.insert(id, now + DEDUP_WINDOW_MS);
        let key = Envelope::parse(out.body())
            .map(|e| e.key)
            .unwrap_or_default();
        self.next_seq += 1;
        self.main.push(Msg {
            seq: self.next_seq,
            id: format!("m{}", self.next_seq),
            group: out.group_id().to_owned(),
            key,
            body: out.body().to_owned(),
            sent_at: now,
            receives: 0,
            invisible_until: 0,
            receipt: 0,
            redriven: false,
        });
        true
    }

    /// Up to `max` messages, in order, never from a group that has one in flight. A message
    /// that has been received maxReceiveCount times moves to the dead-letter queue instead.
    pub(crate) fn receive(&mut self, now: i64, max: usize) -> (Vec<Msg>, Vec<Msg>) {
        let blocked: HashSet<String> = self
            .main
            .iter()
            .filter(|m| m.invisible_until > now)
            .map(|m| m.group.clone())
            .collect();
        let mut out = Vec::new();
        let mut moved = Vec::new();
        let mut i = 0;
        while i < self.main.len() && out.len() < max {
            let m = &self.main[i];
            if m.invisible_until > now || blocked.contains(&m.group) {
                i += 1;
                continue;
            }
            if m.receives >= self.max_receive {
                let m = self.main.remove(i);
                self.dlq.push(m.clone());
                moved.push(m);
                continue;
            }
            self.next_receipt += 1;
            let m = &mut self.main[i];
            m.receives += 1;
            m.invisible_until = now + self.visibility_ms;
            m.receipt = self.next_receipt;
            out.push(m.clone());
            i += 1;
        }
        (out, moved)
    }

    /// A message in flight (received, not yet visible again), delivered once more as it is:
    /// what a standard queue may do (at-least-once delivery), to a second consumer while the
    /// first still works on it. Same receipt, receive count unchanged.
    pub(crate) fn deliver_again(&self, now: i64, pick: usize) -> Option<Msg> {
        let in_flight: Vec<&Msg> = self
            .main
            .iter()
            .filter(|m| m.invisible_until > now)
            .collect();
        if in_flight.is_empty() {
            return None;
        }
        Some(in_flight[pick % in_flight.len()].clone())
    }

    /// Deletes with a receipt handle; a stale one (the message was received again since)
    /// fails, as on a FIFO queue.
    pub(crate) fn delete(&mut self, id: &str, receipt: u64) -> bool {
        match self
            .main
            .iter()
            .position(|m| m.id == id && m.receipt == receipt)
        {
            Some(i) => {
                self.main.remove(i);
                true
            }
            None => false,
        }
    }

    /// ChangeMessageVisibility: the message received with `receipt` stays invisible until
    /// `until`; a stale receipt (received again since, or deleted) fails.
    pub(crate) fn change_visibility(&mut self, id: &str, receipt: u64, until: i64) -> bool {
        match self
            .main
            .iter_mut()
            .find(|m| m.id == id && m.receipt == receipt)
        {
            Some(m) => {
                m.invisible_until = until;
                true
            }
            None => false,
        }
    }

    /// The consumer's SendMessage to the dead-letter queue: a copy of the message there (a
    /// new message); the original stays until the batch answer deletes it.
    pub(crate) fn copy_to_dlq(&mut self, id: &str) -> bool {
        let Some(m) = self.main.iter().find(|m| m.id == id).cloned() else {
            return false;
        };
        self.next_seq += 1;
        self.dlq.push(Msg {
            seq: self.next_seq,
            id: format!("d{}", self.next_seq),
            receives: 0,
            invisible_until: 0,
            receipt: 0,
            ..m
        });
        true
    }

    /// The consumer's SendMessage of a held message again (the same body and group, a
    /// deduplication id of its own): a new message at the queue's end.
    pub(crate) fn resend(&mut self, id: &str, now: i64) -> bool {
        let Some(m) = self.main.iter().find(|m| m.id == id).cloned() else {
            return false;
        };
        self.next_seq += 1;
        self.main.push(Msg {
            seq: self.next_seq,
            id: format!("m{}", self.next_seq),
            sent_at: now,
            receives: 0,
            invisible_until: 0,
            receipt: 0,
            ..m
        });
        true
    }

    /// An operator's redrive (a message move task): the dead-letter queue back to the main
    /// queue, at its end, as new messages.
    pub(crate) fn redrive(&mut self, now: i64) -> usize {
        let moved: Vec<Msg> = std::mem::take(&mut self.dlq);
        let n = moved.len();
        for mut m in moved {
            self.next_seq += 1;
            m.seq = self.next_seq;
            m.receives = 0;
            m.invisible_until = 0;
            m.sent_at = now;
            m.redriven = true;
            self.main.push(m);
        }
        n
    }

    /// Messages past the queue's retention: SQS deletes them.
    pub(crate) fn age_out(&mut self, now: i64) -> Vec<Msg> {
        let (old, keep): (Vec<Msg>, Vec<Msg>) = std::mem::take(&mut self.main)
            .into_iter()
            .partition(|m| m.sent_at + self.retention_ms <= now);
        self.main = keep;
        old
    }

    pub(crate) fn holds(&self, key: &str) -> bool {
        self.main.iter().chain(&self.dlq).any(|m| m.key == key)
    }
}
