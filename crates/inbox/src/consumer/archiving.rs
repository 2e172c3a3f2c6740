//! The batch's archive step, before any message runs: each admitted envelope of a source that
//! archives (its `archive`, else `ARCHIVE_BODIES`) is put in the archive, the whole batch in
//! one call where it fits ([`crate::archive`]). A message whose envelope was not taken fails
//! before its take and comes back; an accepted event is never run unarchived.

use aws_lambda_events::sqs::SqsMessage;
use tracing::warn;

use super::record::{Fields, Recorded};
use super::Wired;
use super::{admit, Consumer};
use crate::archive::Archive;
use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::ledger::LedgerStore;
use crate::queue::Envelope;

use super::processor::Processor;

/// Firehose's limits: 500 records and 4 MiB a call, 1,000 KiB a record.
const MAX_RECORDS_PER_CALL: usize = 500;
const MAX_BYTES_PER_CALL: usize = 4 * 1024 * 1024;
const MAX_RECORD_BYTES: usize = 1_000 * 1024;

/// What the archive step came to for one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Archived {
    /// Not archived, and not to be: unreadable, refused, a replay, or a source that does not
    /// archive (the message runs, or is refused, as it would without an archive).
    Skipped,
    /// In the archive since this time (epoch milliseconds): the take records it.
    At(i64),
    /// The archive did not take it: the message fails, before its take.
    Failed,
}

impl<L: LedgerStore, P: Processor, C: Clock, W: Wired> Consumer<L, P, C, W> {
    /// The archive step for a batch: one flag per message.
    pub(super) async fn archive_batch(&self, messages: &[SqsMessage]) -> Vec<Archived> {
        let mut marks = vec![Archived::Skipped; messages.len()];
        let lines: Vec<(usize, String)> = messages
            .iter()
            .enumerate()
            .filter_map(|(i, msg)| Some((i, self.archive_line(msg)?)))
            .collect();
        if lines.is_empty() {
            return marks;
        }
        let now = self.clock.now_ms();
        for (i, taken) in self.put_lines(&lines, now).await {
            marks[i] = if taken {
                Archived::At(now)
            } else {
                self.record(
                    Recorded::Unreadable,
                    Fields::default()
                        .message_id(messages[i].message_id.as_deref().unwrap_or_default())
                        .message("the archive did not take the envelope; the message comes back"),
                );
                Archived::Failed
            };
        }
        marks
    }

    /// The archive's line of a message: its envelope as one line of JSON, where it is an
    /// admitted envelope of an archiving source and no replay. Anything else is left to the
    /// message's own run (which refuses or fails it).
    fn archive_line(&self, msg: &SqsMessage) -> Option<String> {
        let envelope = Envelope::parse(msg.body.as_deref()?).ok()?;
        if envelope.replay_id.is_some() {
            return None;
        }
        let spec = self.sources.get(&envelope.source)?;
        if !spec.archive.unwrap_or(self.settings.archive_bodies) {
            return None;
        }
        let body = match &envelope.body_ref {
            Some(_) => Vec::new(),
            None => envelope.body_bytes().ok()?,
        };
        admit::check(&envelope, &body, &spec.attempt_fields).ok()?;
        Some(envelope.to_json())
    }

    /// Puts the lines in calls within Firehose's limits; a line too big for a record is an
    /// object of its own in the payload bucket, under the same hour. `(index, taken)` each.
    async fn put_lines(&self, lines: &[(usize, String)], now: i64) -> Vec<(usize, bool)> {
        let mut out = Vec::with_capacity(lines.len());
        let (big, small): (Vec<_>, Vec<_>) = lines
            .iter()
            .partition(|(_, line)| line.len() + 1 > MAX_RECORD_BYTES);
        for (i, line) in big {
            let object = crate::archive::large_object_key(now, line);
            let mut bytes = line.clone().into_bytes();
            bytes.push(b'\n');
            out.push((*i, self.wired().store.put(&object, bytes).await.is_ok()));
        }
        for chunk in chunks(&small) {
            let texts: Vec<String> = chunk.iter().map(|(_, l)| l.clone()).collect();
            match self.wired().archive.put(&texts).await {
                Ok(taken) => out.extend(chunk.iter().map(|(i, _)| *i).zip(taken)),
                Err(e) => {
                    warn!(error = %e, records = texts.len(), "archive call failed");
                    out.extend(chunk.iter().map(|(i, _)| (*i, false)));
                }
            }
        }
        out
    }
}

/// The lines in runs of at most [`MAX_RECORDS_PER_CALL`] records and [`MAX_BYTES_PER_CALL`]
/// bytes (each line with its newline).
fn chunks<'a>(lines: &[&'a (usize, String)]) -> Vec<Vec<&'a (usize, String)>> {
    let mut chunks: Vec<Vec<&(usize, String)>> = Vec::new();
    let mut bytes = 0;
    for line in lines {
        let size = line.1.len() + 1;
        let full = chunks
            .last()
            .is_none_or(|c| c.len() == MAX_RECORDS_PER_CALL || bytes + size > MAX_BYTES_PER_CALL);
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        if let Some(last) = chunks.last_mut() {
            last.push(line);
        }
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_stay_within_firehose_s_records_and_bytes() {
        let lines: Vec<(usize, String)> = (0..1001).map(|i| (i, "x".repeat(10))).collect();
        let refs: Vec<&(usize, String)> = lines.iter().collect();
        let sizes: Vec<usize> = chunks(&refs).iter().map(Vec::len).collect();
        assert_eq!(sizes, [500, 500, 1]);
        let big: Vec<(usize, String)> = (0..9).map(|i| (i, "y".repeat(900 * 1024))).collect();
        let refs: Vec<&(usize, String)> = big.iter().collect();
        let sizes: Vec<usize> = chunks(&refs).iter().map(Vec::len).collect();
        assert_eq!(sizes, [4, 4, 1], "4 MiB a call");
        assert!(chunks(&[]).is_empty());
    }
}
