//! `batch`: a source whose body carries several events (docs/design.md §14). Each event is
//! split out and keyed, claimed and queued on its own; the source's key, event-type and
//! group pointers are read in each event.

use serde::Deserialize;

use super::spec::{BatchFormat, BatchSpec, Delivery, KeySpec};
use super::{field_error, ConfigError};
use crate::signature::Scheme;

/// The most events a source may allow in one request: Segment's largest batch (Webhooks
/// (Actions): a default of 1,000, at most 4,000). A request is claimed and sent within one
/// invocation, so this bounds its work.
pub const MAX_BATCH_EVENTS: usize = 4000;

/// `max_events` where a source sets none.
pub const DEFAULT_MAX_EVENTS: usize = 100;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBatch {
    format: String,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    max_events: Option<u64>,
    /// `request` (the default) or `each_event`: where the signature is.
    #[serde(default)]
    signed: Option<String>,
}

/// `batch`, checked with what it constrains: a per-event key (not a header), no replay guard,
/// the ledger.
pub(super) fn parse_batch(
    name: &str,
    raw: Option<RawBatch>,
    key: &KeySpec,
    scheme: &Scheme,
    delivery: Delivery,
    replay_guard: Option<u64>,
) -> Result<Option<BatchSpec>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let format = match (raw.format.as_str(), raw.at) {
        ("json_array", at) => {
            let at = at.unwrap_or_default();
            if !at.is_empty() && !at.starts_with('/') {
                return Err(field_error(
                    name,
                    "batch.at",
                    format!("`{at}` is not a JSON pointer (\"\" for the body itself, or starting with '/')"),
                ));
            }
            BatchFormat::JsonArray { at }
        }
        ("json_lines", None) => BatchFormat::JsonLines,
        ("json_lines", Some(_)) => {
            return Err(field_error(
                name,
                "batch.at",
                "only goes with `json_array` (JSON Lines are the body's values)",
            ))
        }
        (other, _) => {
            return Err(field_error(
                name,
                "batch.format",
                format!("unknown `{other}` (json_array, json_lines)"),
            ))
        }
    };
    let max_events = match raw.max_events {
        None => DEFAULT_MAX_EVENTS,
        Some(n) if n >= 1 && n <= MAX_BATCH_EVENTS as u64 => n as usize,
        Some(n) => {
            return Err(field_error(
                name,
                "batch.max_events",
                format!("{n} is not between 1 and {MAX_BATCH_EVENTS}"),
            ))
        }
    };
    let signed_each_event = parse_signed(name, raw.signed.as_deref(), &format, scheme)?;
    let problem = if matches!(key, KeySpec::Header(_) | KeySpec::Form(_)) {
        Some("a batch's events are keyed in each event: `key` must be `from: json` or `payload_sha256`")
    } else if replay_guard.is_some() {
        Some("not with `replay_guard_seconds`: each event's key comes from the signed body, so a resent body is a duplicate of each event")
    } else if delivery == Delivery::AtMostOnce {
        Some("needs the ledger: not with `at_most_once`")
    } else {
        None
    };
    match problem {
        Some(message) => Err(field_error(name, "batch", message)),
        None => Ok(Some(BatchSpec {
            format,
            max_events,
            signed_each_event,
        })),
    }
}

/// `batch.signed`: `request` (the default) or `each_event`, which needs a `json_array` and a
/// scheme that reads its signature (or token) in the body, so in each event.
fn parse_signed(
    name: &str,
    signed: Option<&str>,
    format: &BatchFormat,
    scheme: &Scheme,
) -> Result<bool, ConfigError> {
    let each_event = match (signed, format) {
        (None | Some("request"), _) => false,
        (Some("each_event"), BatchFormat::JsonArray { .. }) => true,
        (Some("each_event"), BatchFormat::JsonLines) => return Err(field_error(
            name,
            "batch.signed",
            "`each_event` goes with `json_array` (the array whose elements carry their signature)",
        )),
        (Some(other), _) => {
            return Err(field_error(
                name,
                "batch.signed",
                format!("unknown `{other}` (request, each_event)"),
            ))
        }
    };
    if each_event && scheme.pointers().is_empty() {
        return Err(field_error(
            name,
            "batch.signed",
            "`each_event` needs the signature (or token) in each event: a `pointer`, not a header",
        ));
    }
    Ok(each_event)
}
