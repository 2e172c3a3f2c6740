//! What one source declares, every field checked: [`SourceSpec`] and the choices it is made
//! of (where the key and the FIFO group come from, the delivery semantics, the answer to a
//! changed payload).

use crate::signature::Scheme;

use super::secrets::SecretRef;

/// Where a source's key comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySpec {
    /// A request header, such as `X-GitHub-Delivery` or `webhook-id`.
    Header(http::HeaderName),
    /// One or more JSON pointers into the body; several make a composite business key.
    Json(Vec<String>),
    /// SHA-256 of the raw body. Only where declared: never a fallback.
    PayloadSha256,
}

impl KeySpec {
    pub fn needs_json(&self) -> bool {
        matches!(self, KeySpec::Json(_))
    }
    pub fn describe(&self) -> String {
        match self {
            KeySpec::Header(name) => format!("header {name}"),
            KeySpec::Json(pointers) => format!("body {}", pointers.join(" + ")),
            KeySpec::PayloadSha256 => "SHA-256 of the raw body".to_owned(),
        }
    }
}

/// What sets the FIFO `MessageGroupId` (the rule: [`crate::fifo`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupSpec {
    /// The key itself: per-event order, full parallelism.
    Key,
    /// Values from the body (per-customer order, say).
    Json(Vec<String>),
}

/// The delivery semantics a source declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    EffectivelyOnce,
    /// Skips the ledger. Must be written out; the audit lists it.
    AtMostOnce,
}

/// What to do with a duplicate whose body hash differs from the first delivery's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnPayloadMismatch {
    /// Replay as a duplicate, count it (senders do vary payloads between retries).
    Accept,
    /// Answer 422 `payload_mismatch`.
    Reject,
}

/// One source, every field checked, secrets not yet read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpec {
    pub name: String,
    pub scheme: Scheme,
    pub secrets: Vec<SecretRef>,
    pub tolerance_seconds: u64,
    pub key: KeySpec,
    pub group: GroupSpec,
    pub delivery: Delivery,
    pub retention_hours: u64,
    pub on_payload_mismatch: OnPayloadMismatch,
    /// `replay_guard_seconds`: for a body-only scheme, how long a body brought by one event
    /// key is refused under any other (a captured request resent under fresh delivery ids).
    pub replay_guard_seconds: Option<u64>,
    /// `archive`: whether the receiver archives this source's envelopes for replay;
    /// `None` follows `ARCHIVE_BODIES` (docs/design.md §12).
    pub archive: Option<bool>,
}

impl SourceSpec {
    /// The header names the queue envelope carries along: the scheme's, the key's, and the content type.
    pub fn envelope_headers(&self) -> Vec<String> {
        let mut names = self.scheme.header_names();
        if let KeySpec::Header(name) = &self.key {
            names.push(name.as_str().to_owned());
        }
        names.push("content-type".to_owned());
        names.sort();
        names.dedup();
        names
    }
}
