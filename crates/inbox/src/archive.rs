//! The replay archive (docs/design.md §12): every accepted event's envelope, kept in the
//! payload bucket for `inbox-ops replay` and `lookup --body`, written off the sender's path.
//!
//! The consumer puts each batch's envelopes, one JSON line per event, on a Kinesis Data
//! Firehose delivery stream ([`FirehoseArchive`], one `PutRecordBatch` per SQS batch) before
//! any of them runs; Firehose buffers them into a few objects per quarter hour under
//! `archive/<yyyy>/<mm>/<dd>/<hh>/` (UTC, [`archive_hour_prefix`]), the hour of the oldest
//! record of each object. The take records when the event was archived (the ledger item's
//! `archived_at`), so a key's envelope is found by listing [`archive_hours`] around that time
//! and reading their lines ([`envelopes_in`]).
//!
//! A port, [`Archive`], with the Firehose adapter and an in-memory twin ([`MemoryArchive`]),
//! which writes one object per call under the same layout into any [`PayloadBucket`], as
//! Firehose does (with no buffering).

use std::future::Future;
use std::sync::Arc;

use crate::bucket::PayloadBucket;
use crate::clock::Clock;
use crate::queue::{Envelope, EnvelopeError};

/// An archive call that did not succeed as a whole (no answer, a refusal).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("archive unavailable: {0}")]
pub struct ArchiveError(pub String);

/// The archive's port: puts lines (each one event's envelope, one line of JSON) and says, per
/// line, whether it was taken.
pub trait Archive: Send + Sync + 'static {
    /// `Ok(taken)`, one flag per line in order (a partial failure leaves some false);
    /// `Err` where nothing was taken.
    fn put(&self, lines: &[String])
        -> impl Future<Output = Result<Vec<bool>, ArchiveError>> + Send;
}

impl<T: Archive> Archive for Arc<T> {
    fn put(
        &self,
        lines: &[String],
    ) -> impl Future<Output = Result<Vec<bool>, ArchiveError>> + Send {
        (**self).put(lines)
    }
}

/// A stream or none (`ARCHIVE_STREAM` unset): `None` behaves as [`NoArchive`].
impl<T: Archive> Archive for Option<T> {
    async fn put(&self, lines: &[String]) -> Result<Vec<bool>, ArchiveError> {
        match self {
            Some(a) => a.put(lines).await,
            None => NoArchive.put(lines).await,
        }
    }
}

/// No archive: every call fails. A consumer whose sources archive nothing never calls it;
/// start-up refuses an archiving configuration without a stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoArchive;

impl Archive for NoArchive {
    async fn put(&self, _lines: &[String]) -> Result<Vec<bool>, ArchiveError> {
        Err(ArchiveError("no ARCHIVE_STREAM configured".into()))
    }
}

/// A Firehose delivery stream (`ARCHIVE_STREAM`) to the payload bucket.
#[derive(Clone, Debug)]
pub struct FirehoseArchive {
    client: aws_sdk_firehose::Client,
    stream: String,
}

impl FirehoseArchive {
    pub fn new(client: aws_sdk_firehose::Client, stream: impl Into<String>) -> Self {
        Self {
            client,
            stream: stream.into(),
        }
    }
}

impl Archive for FirehoseArchive {
    async fn put(&self, lines: &[String]) -> Result<Vec<bool>, ArchiveError> {
        let records = lines
            .iter()
            .map(|line| {
                aws_sdk_firehose::types::Record::builder()
                    .data(aws_sdk_firehose::primitives::Blob::new(line_bytes(line)))
                    .build()
                    .map_err(|e| ArchiveError(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let out = self
            .client
            .put_record_batch()
            .delivery_stream_name(&self.stream)
            .set_records(Some(records))
            .send()
            .await
            .map_err(|e| {
                ArchiveError(aws_sdk_firehose::error::DisplayErrorContext(e).to_string())
            })?;
        let answers = out.request_responses();
        if answers.len() != lines.len() {
            return Err(ArchiveError(format!(
                "{} answers for {} records",
                answers.len(),
                lines.len()
            )));
        }
        Ok(answers.iter().map(|a| a.error_code().is_none()).collect())
    }
}

/// A line as Firehose stores it: the envelope and a newline (Firehose concatenates records).
fn line_bytes(line: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    bytes
}

/// The in-memory twin: each call one object of the lines under the hour of the clock's now,
/// as Firehose writes them, into `store`.
#[derive(Debug)]
pub struct MemoryArchive<S, C> {
    store: S,
    clock: C,
    calls: std::sync::atomic::AtomicU64,
}

impl<S: PayloadBucket, C: Clock> MemoryArchive<S, C> {
    pub fn new(store: S, clock: C) -> Self {
        Self {
            store,
            clock,
            calls: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl<S: PayloadBucket, C: Clock + 'static> Archive for MemoryArchive<S, C> {
    async fn put(&self, lines: &[String]) -> Result<Vec<bool>, ArchiveError> {
        let now = self.clock.now_ms();
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let object = format!("{}memory-{now:013}-{n:06}", archive_hour_prefix(now));
        let bytes: Vec<u8> = lines.iter().flat_map(|l| line_bytes(l)).collect();
        self.store
            .put(&object, bytes)
            .await
            .map_err(|e| ArchiveError(e.to_string()))?;
        Ok(vec![true; lines.len()])
    }
}

/// The archive's hour of `at_ms`: `archive/<yyyy>/<mm>/<dd>/<hh>/` (UTC), the prefix the
/// delivery stream writes under (template.yaml, `ArchiveStream`).
pub fn archive_hour_prefix(at_ms: i64) -> String {
    let ts = jiff::Timestamp::from_millisecond(at_ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let t = ts.to_zoned(jiff::tz::TimeZone::UTC);
    format!(
        "archive/{:04}/{:02}/{:02}/{:02}/",
        t.year(),
        t.month(),
        t.day(),
        t.hour()
    )
}

/// An envelope too big for a Firehose record (1,000 KiB), kept as an object of its own under
/// the same hour: `archive/<yyyy>/<mm>/<dd>/<hh>/large-<sha256 of the line>`.
pub fn large_object_key(archived_at_ms: i64, line: &str) -> String {
    format!(
        "{}large-{}",
        archive_hour_prefix(archived_at_ms),
        crate::key::sha256_hex(line.as_bytes())
    )
}

/// Where an event archived at `archived_at_ms` can be: its hour, the hour before (an object
/// is filed under its oldest record's hour, up to the stream's 15-minute buffer earlier), and
/// the hour after (the consumer's clock against Firehose's).
pub fn archive_hours(archived_at_ms: i64) -> [String; 3] {
    const HOUR_MS: i64 = 3_600_000;
    [
        archive_hour_prefix(archived_at_ms - HOUR_MS),
        archive_hour_prefix(archived_at_ms),
        archive_hour_prefix(archived_at_ms + HOUR_MS),
    ]
}

/// The envelopes of an archive object, one per non-empty line, in order; a line that is not
/// an envelope is an `Err` of its own (the rest still read).
pub fn envelopes_in(bytes: &[u8]) -> impl Iterator<Item = Result<Envelope, EnvelopeError>> + '_ {
    bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| {
            std::str::from_utf8(line)
                .map_err(|e| EnvelopeError::Json(e.to_string()))
                .and_then(Envelope::parse)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::MemoryBucket;
    use crate::clock::ManualClock;
    use std::collections::BTreeMap;

    #[test]
    fn the_archive_is_filed_by_hour_and_searched_an_hour_either_side() {
        // 2026-12-03T13:59:59.999Z and the next hour.
        let t = 1_796_306_399_999;
        assert_eq!(archive_hour_prefix(t), "archive/2026/12/03/13/");
        assert_eq!(archive_hour_prefix(t + 1), "archive/2026/12/03/14/");
        assert_eq!(
            archive_hours(t + 1),
            [
                "archive/2026/12/03/13/",
                "archive/2026/12/03/14/",
                "archive/2026/12/03/15/"
            ]
        );
    }

    #[tokio::test]
    async fn the_memory_archive_writes_lines_that_read_back_as_envelopes() {
        let store = Arc::new(MemoryBucket::new());
        let clock = ManualClock::at_ms(1_796_306_399_999);
        let archive = MemoryArchive::new(store.clone(), clock);
        let a = Envelope::new("s:1", "s", 1, "h", BTreeMap::new(), b"{\"a\":\"x\ny\"}");
        let b = Envelope::new("s:2", "s", 2, "h", BTreeMap::new(), b"two");
        let taken = archive.put(&[a.to_json(), b.to_json()]).await.unwrap();
        assert_eq!(taken, [true, true]);
        let keys = store.keys();
        assert_eq!(keys.len(), 1);
        assert!(keys[0].starts_with("archive/2026/12/03/13/"), "{keys:?}");
        let bytes = store.get(&keys[0]).await.unwrap().unwrap();
        assert_eq!(
            bytes.iter().filter(|b| **b == b'\n').count(),
            2,
            "one line each"
        );
        let read: Vec<_> = envelopes_in(&bytes).map(Result::unwrap).collect();
        assert_eq!(read, [a, b]);
        let mut bad = bytes.clone();
        bad.extend_from_slice(b"not json\n\n");
        assert_eq!(envelopes_in(&bad).filter(Result::is_err).count(), 1);
        assert_eq!(
            NoArchive.put(&["x".into()]).await.unwrap_err().to_string(),
            ArchiveError("no ARCHIVE_STREAM configured".into()).to_string()
        );
    }
}
