//! Where an accepted event's body travels (docs/design.md §12): in the envelope when the
//! envelope fits the queue's 1 MiB, else in the payload bucket with a pointer in the envelope;
//! the archive is the consumer's ([`crate::archive`]), off the sender's path.

use std::collections::BTreeMap;

use tracing::info;

use super::{Receiver, Rejection};
use crate::bucket::{self, BucketError, PayloadBucket};
use crate::clock::Clock;
use crate::config::Source;
use crate::fifo;
use crate::json_fields::Fields;
use crate::ledger::LedgerStore;
use crate::queue::{
    BatchPlace, BodyRef, Envelope, EventParts, Outgoing, Queue, MAX_INLINE_ENVELOPE_BYTES,
};

/// Where the body travels: in the envelope (its text, when already built to measure it) or
/// in the payload bucket.
pub(super) enum Carry {
    Inline(Option<String>),
    InBucket,
}

impl Carry {
    /// The same choice, for a second use: a measured text is copied.
    pub(super) fn again(&self) -> Carry {
        match self {
            Carry::Inline(text) => Carry::Inline(text.clone()),
            Carry::InBucket => Carry::InBucket,
        }
    }
}

/// The envelope's fields around the body, key and headers, at their longest: field names,
/// a 64-character source, a 20-character `received_at`, the 64-character SHA-256 and
/// `"body_encoding":"base64"` come to about 260 bytes; the rest is margin.
const ENVELOPE_FIXED_BYTES: usize = 512;

/// The envelope's `,"traceparent":"<55 characters>"` (docs/operations.md, "Traces").
const TRACEPARENT_FIELD_BYTES: usize = 72;

/// Whether an envelope around a body of `body_len` bytes fits the queue whatever the body,
/// key and headers hold, without building it. A body is carried as text only where SQS can
/// carry every character, and JSON escapes those into at most 2 bytes (`\"`, `\\`, `\t`,
/// `\n`, `\r`); any other body goes as base64, 4 bytes for 3 (a short one up to 8 for 1 to
/// 3); a key or header character escapes into at most 6 (`\u001f`), and each header adds 6
/// bytes of quotes, colon and comma. A body of up to about 510 KiB is therefore never
/// measured; a longer one is (the envelope is built and its length compared).
pub(super) fn envelope_surely_fits(
    body_len: usize,
    key: &str,
    headers: &BTreeMap<String, String>,
) -> bool {
    let around: usize = ENVELOPE_FIXED_BYTES
        + TRACEPARENT_FIELD_BYTES
        + 8
        + crate::config::MAX_EVENT_TYPE_BYTES * 6
        + 16
        + key.len() * 6
        + headers
            .iter()
            .map(|(k, v)| (k.len() + v.len()) * 6 + 8)
            .sum::<usize>();
    body_len.saturating_mul(2).saturating_add(around) <= MAX_INLINE_ENVELOPE_BYTES
}

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// The queue text of an accepted event: the body in the envelope, or in the bucket with
    /// a pointer in the envelope (docs/design.md §12). The object key derives from the event,
    /// so a retry writes the same object.
    pub(super) async fn envelope_text(
        &self,
        carry: Carry,
        event: &EventParts<'_>,
        body: &[u8],
    ) -> Result<String, BucketError> {
        let text = match carry {
            Carry::Inline(Some(text)) => text,
            Carry::Inline(None) => Envelope::event_json(event, body),
            Carry::InBucket => {
                let store = &self.store;
                let (source, key) = (event.source, event.key);
                let body_ref = BodyRef {
                    s3_key: bucket::payload_key(source, key, event.payload_sha256),
                    sha256: event.payload_sha256.to_owned(),
                    size: body.len() as u64,
                };
                store.put(&body_ref.s3_key, body.to_vec()).await?;
                info!(source, key, size = body.len(), object = %body_ref.s3_key, "body stored in the payload bucket");
                Envelope::event_json_with_ref(event, &body_ref)
            }
        };
        Ok(text)
    }
}

/// A verified event, its key derived, measured for the queue: what a send needs.
pub(super) struct Event<'a> {
    pub(super) source: &'a Source,
    pub(super) key: String,
    pub(super) body: &'a [u8],
    pub(super) body_sha256: String,
    /// The values at the key and group pointers, where the body was read for them.
    pub(super) json: Option<Fields>,
    pub(super) headers: BTreeMap<String, String>,
    /// The event's type, where the source says where it is.
    pub(super) event_type: Option<String>,
    /// When it was received (and measured, where a [`Carry::Inline`] holds the text).
    pub(super) measured_at: i64,
    /// Where it sat in a signed batch (docs/design.md §14); `None` for a request of one event.
    pub(super) batch: Option<BatchPlace>,
    /// The request's `inbox.receive` span: the trace the consumer continues (a batch's events
    /// share it), and its `traceparent` for the envelope.
    pub(super) trace: crate::trace::TraceContext,
    pub(super) traceparent: String,
}

impl Event<'_> {
    /// The event's part of its envelope, as received at `received_at`.
    pub(super) fn parts(&self, received_at: i64) -> EventParts<'_> {
        EventParts {
            key: &self.key,
            source: &self.source.spec.name,
            received_at,
            payload_sha256: &self.body_sha256,
            headers: &self.headers,
            event_type: self.event_type.as_deref(),
            batch: self.batch.as_ref(),
            traceparent: Some(&self.traceparent),
        }
    }
}

impl<L: LedgerStore, Q: Queue, C: Clock, S: PayloadBucket> Receiver<L, Q, C, S> {
    /// Where the event's body will travel, measured at `event.measured_at`: in the envelope
    /// or in the bucket (a body whose envelope would not fit the queue, with no bucket, is
    /// refused here, before the claim).
    pub(super) fn carry(&self, event: &Event<'_>) -> Result<Carry, Rejection> {
        // Measured (the envelope, not the body) only where it might not fit.
        if envelope_surely_fits(event.body.len(), &event.key, &event.headers) {
            return Ok(Carry::Inline(None));
        }
        let text = Envelope::event_json(&event.parts(event.measured_at), event.body);
        if text.len() <= MAX_INLINE_ENVELOPE_BYTES {
            Ok(Carry::Inline(Some(text)))
        } else if !self.store.is_configured() {
            Err(Rejection::PayloadTooLarge(
                "the envelope would not fit the queue and no PAYLOAD_BUCKET is configured",
            ))
        } else {
            Ok(Carry::InBucket)
        }
    }

    /// Puts the event on the queue as received at `received_at`: its body in the bucket
    /// first where it goes there. Built only now, so a duplicate that
    /// sends nothing never pays for the group's parse, the copy of the body into the
    /// envelope, or a write to the bucket.
    pub(super) async fn send(
        &self,
        event: &Event<'_>,
        carry: Carry,
        received_at: i64,
    ) -> Result<(), String> {
        let msg = self.outgoing(event, carry, received_at).await?;
        self.queue.send(msg).await.map_err(|e| e.to_string())
    }

    /// The event's message as received at `received_at`: its body in the bucket first where
    /// it goes there.
    pub(super) async fn outgoing(
        &self,
        event: &Event<'_>,
        carry: Carry,
        received_at: i64,
    ) -> Result<Outgoing, String> {
        let name = event.source.spec.name.as_str();
        let carry = match carry {
            // The measured text holds the time it was measured at: reused only for that time.
            Carry::Inline(Some(_)) if received_at != event.measured_at => Carry::Inline(None),
            other => other,
        };
        let text = self
            .envelope_text(carry, &event.parts(received_at), event.body)
            .await
            .map_err(|e| e.to_string())?;
        let group = fifo::group(
            &event.key,
            &event.source.spec.group,
            name,
            event.json.as_ref(),
        );
        Ok(Outgoing::new(&group, &event.key, text).with_trace(Some(&event.trace)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::Envelope;

    /// The costliest key and headers for their length: every character a control that JSON
    /// writes as `\u00XX` (names too, unique by pairs of them).
    fn worst_key_and_headers() -> (String, BTreeMap<String, String>) {
        // (Not \b, \t, \n, \f or \r, which JSON writes in 2 bytes.)
        let six: Vec<char> = (1..0x20u8)
            .filter(|c| ![8, 9, 10, 12, 13].contains(c))
            .map(char::from)
            .collect();
        let control = |i: u32| six[i as usize % six.len()];
        let key: String = (0..500).map(control).collect();
        let headers = (0..100)
            .map(|i| {
                let name: String = [control(i / 26), control(i)].into_iter().collect();
                (name, (0..40).map(control).collect())
            })
            .collect();
        (key, headers)
    }

    /// The longest body the estimate lets through with this key and headers.
    fn longest_passed(key: &str, headers: &BTreeMap<String, String>) -> usize {
        let (mut fits, mut not) = (0, MAX_INLINE_ENVELOPE_BYTES);
        while not - fits > 1 {
            let mid = (fits + not) / 2;
            if envelope_surely_fits(mid, key, headers) {
                fits = mid;
            } else {
                not = mid;
            }
        }
        assert!(envelope_surely_fits(fits, key, headers));
        fits
    }

    fn envelope_len(body: &[u8], key: &str, headers: &BTreeMap<String, String>) -> usize {
        let source = "s".repeat(64);
        let sha = "0".repeat(64);
        let event_type = "\u{1f}".repeat(crate::config::MAX_EVENT_TYPE_BYTES);
        Envelope::json_of(
            key,
            &source,
            i64::MIN,
            &sha,
            headers,
            Some(&event_type),
            body,
        )
        .len()
    }

    #[test]
    fn an_envelope_the_estimate_passes_fits_whatever_the_body_holds() {
        let (key, headers) = worst_key_and_headers();
        let n = longest_passed(&key, &headers);
        let bodies: [Vec<u8>; 5] = [
            vec![b'"'; n],                                         // text, 2 bytes a byte
            b"\\\n\r\t".repeat(n / 4 + 1)[..n].to_vec(),           // text, 2 bytes a byte
            vec![1; n],                                            // a control SQS refuses: base64
            vec![0xff; n],                                         // not UTF-8: base64
            "\u{ffff}".repeat(n / 3 + 1).as_bytes()[..n].to_vec(), // U+FFFF: base64
        ];
        for body in &bodies {
            let len = envelope_len(body, &key, &headers);
            assert!(
                len <= MAX_INLINE_ENVELOPE_BYTES,
                "{len} bytes for a body of {n} starting {:?}",
                &body[..4]
            );
        }
        // The fields around them, at their longest (an event type of 256 control characters,
        // escaped six for one), within the fixed allowance and the event type's.
        assert!(
            envelope_len(&[0xff], "", &BTreeMap::new())
                <= ENVELOPE_FIXED_BYTES + crate::config::MAX_EVENT_TYPE_BYTES * 6 + 16
        );
    }

    #[test]
    fn the_estimate_wastes_little_of_the_queue_on_the_costliest_text() {
        // Of the worst case the estimate allows for, at most half a KiB is margin: a body
        // larger by 300 bytes would not fit at all.
        let (key, headers) = worst_key_and_headers();
        let n = longest_passed(&key, &headers);
        let len = envelope_len(&vec![b'"'; n], &key, &headers);
        let waste = MAX_INLINE_ENVELOPE_BYTES - len;
        assert!(
            waste < 600,
            "{waste} bytes unused at the estimate's largest body"
        );
        assert!(envelope_len(&vec![b'"'; n + 300], &key, &headers) > MAX_INLINE_ENVELOPE_BYTES);
    }

    #[test]
    fn an_ordinary_event_up_to_500_kib_is_never_measured() {
        let headers = BTreeMap::from([
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "x-github-delivery".to_owned(),
                "0b989ba4-242f-11e5-81e1-c7b6ead1ee95".to_owned(),
            ),
            ("x-github-event".to_owned(), "push".to_owned()),
            (
                "x-hub-signature-256".to_owned(),
                format!("sha256={}", "a".repeat(64)),
            ),
        ]);
        let key = "github:0b989ba4-242f-11e5-81e1-c7b6ead1ee95";
        assert!(envelope_surely_fits(500 * 1024, key, &headers));
        assert!(!envelope_surely_fits(
            MAX_INLINE_ENVELOPE_BYTES / 2,
            key,
            &headers
        ));
    }
}
