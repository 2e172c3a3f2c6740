//! Where an accepted event's body travels (docs/design.md §12): in the envelope when the
//! envelope fits the queue's 1 MiB, else in the payload bucket with a pointer in the envelope;
//! and, where the source archives, the envelope itself stored under its hour of receipt.

use std::collections::BTreeMap;

use tracing::info;

use super::Receiver;
use crate::clock::Clock;
use crate::ledger::LedgerStore;
use crate::queue::{BodyRef, Envelope, Queue, MAX_INLINE_ENVELOPE_BYTES};
use crate::store::{self, ObjectStore, StoreError};

/// Where the body travels: in the envelope (its text, when already built to measure it) or
/// in the payload bucket.
pub(super) enum Carry {
    Inline(Option<String>),
    InBucket,
}

/// Whether an envelope around a body of `body_len` bytes fits the queue whatever the body
/// holds: JSON escaping writes at most 6 bytes per byte (`\u001f`), base64 4 per 3.
pub(super) fn envelope_surely_fits(
    body_len: usize,
    key: &str,
    headers: &BTreeMap<String, String>,
) -> bool {
    let around: usize = 1024
        + key.len() * 6
        + headers
            .iter()
            .map(|(k, v)| (k.len() + v.len()) * 6 + 8)
            .sum::<usize>();
    body_len.saturating_mul(6).saturating_add(around) <= MAX_INLINE_ENVELOPE_BYTES
}

impl<L: LedgerStore, Q: Queue, C: Clock, S: ObjectStore> Receiver<L, Q, C, S> {
    /// The queue text of an accepted event: the body in the envelope, or in the bucket with
    /// a pointer in the envelope; and, where the source archives, the envelope stored under
    /// the hour of receipt (docs/design.md §12). Every object key derives from the event,
    /// so a retry writes the same objects.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn envelope_text(
        &self,
        carry: Carry,
        archive: bool,
        key: &str,
        source: &str,
        now: i64,
        body_sha256: &str,
        headers: &BTreeMap<String, String>,
        body: &[u8],
    ) -> Result<String, StoreError> {
        let text = match carry {
            Carry::Inline(Some(text)) => text,
            Carry::Inline(None) => Envelope::json_of(key, source, now, body_sha256, headers, body),
            Carry::InBucket => {
                let store = &self.store;
                let body_ref = BodyRef {
                    s3_key: store::payload_key(source, key, body_sha256),
                    sha256: body_sha256.to_owned(),
                    size: body.len() as u64,
                };
                store.put(&body_ref.s3_key, body.to_vec()).await?;
                info!(source, key, size = body.len(), object = %body_ref.s3_key, "body stored in the payload bucket");
                Envelope::json_with_ref(key, source, now, body_sha256, headers, &body_ref)
            }
        };
        if archive {
            self.store
                .put(
                    &store::archive_key(source, key, now),
                    text.as_bytes().to_vec(),
                )
                .await?;
        }
        Ok(text)
    }
}
