//! What an EventBridge `Detail` and a Lambda payload carry (docs/routing.md): the event's key
//! beside its body, so that the receiving side can apply it once; a body too big for the
//! target goes as a pointer to the payload bucket (an SQS message's too).
//!
//! The body is the text the sender signed, written in place ([`JsonText`]): never parsed into
//! values and written again, which would turn an integer beyond 64 bits into a float and keep
//! only the last of two members of one name. The rest of the object is assembled around it.

use serde_json::{json, Value};

use crate::bucket::{payload_key, PayloadBucket, S3Bucket};
use crate::consumer::{Job, ProcessError};
use crate::json_text::JsonText;
use crate::key::sha256_hex;

/// What a target takes of a JSON body inside its own JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carries {
    /// Any JSON (a Lambda payload).
    AnyJson,
    /// JSON whose integers are signed 64-bit (EventBridge's `PutEvents` documents that range
    /// for integers): a body with an integer outside it goes as `body_text`.
    Int64Json,
}

/// The `Detail` (EventBridge) or payload (Lambda) of an event, as text: `idempotency_key`,
/// `source`, `event_type`, `replay_id` on a replay, and the body: `body`, the JSON text
/// itself as sent; or `body_text`, the body as a JSON string (a body that is not JSON, or
/// JSON the target cannot carry as sent, see [`Carries`]); or `body_base64` (not UTF-8).
pub fn detail(job: &Job, carries: Carries) -> String {
    let mut out = head(job);
    match JsonText::parse(&job.body) {
        Some(text) if carries == Carries::AnyJson || text.integers_fit_i64() => {
            member(&mut out, "body", text.as_str());
        }
        _ => match std::str::from_utf8(&job.body) {
            Ok(text) => member(&mut out, "body_text", &string(text)),
            Err(_) => member(
                &mut out,
                "body_base64",
                &string(&base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    &job.body,
                )),
            ),
        },
    }
    out.push('}');
    out
}

/// The object's opening and its members before the body's.
fn head(job: &Job) -> String {
    let mut out = String::from("{");
    member(&mut out, "idempotency_key", &string(&job.key));
    member(&mut out, "source", &string(&job.source));
    let event_type = job.event_type.as_deref().map_or(Value::Null, Value::from);
    member(&mut out, "event_type", &event_type.to_string());
    if let Some(rid) = &job.replay_id {
        member(&mut out, "replay_id", &string(rid));
    }
    out
}

/// Appends `"name":json` to an object being written (`name` is one of this module's names,
/// needing no escape; `json` is JSON text).
fn member(out: &mut String, name: &str, json: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
    out.push_str(json);
}

/// `text` as a JSON string.
fn string(text: &str) -> String {
    Value::from(text).to_string()
}

/// The body as a pointer, as text: written to the payload bucket where the receiver would
/// have put it (the same object for the same event: a repeat writes the same bytes), and
/// `body_ref` naming its bucket, object key, SHA-256 and size.
pub async fn pointer(job: &Job, store: Option<&S3Bucket>) -> Result<String, ProcessError> {
    let Some(store) = store else {
        return Err(ProcessError(
            "body too large for the destination and no PAYLOAD_BUCKET to point to".into(),
        ));
    };
    let sha = sha256_hex(&job.body);
    let s3_key = payload_key(&job.source, &job.key, &sha);
    store
        .put(&s3_key, job.body.to_vec())
        .await
        .map_err(|e| ProcessError(format!("payload put failed: {e}")))?;
    let mut out = head(job);
    let body_ref =
        json!({"bucket": store.bucket(), "s3_key": s3_key, "sha256": sha, "size": job.body.len()});
    member(&mut out, "body_ref", &body_ref.to_string());
    out.push('}');
    Ok(out)
}

/// `detail(job, carries)` where it fits `limit` bytes, else the pointer's.
pub async fn fitted(
    job: &Job,
    limit: usize,
    carries: Carries,
    store: Option<&S3Bucket>,
) -> Result<String, ProcessError> {
    let text = detail(job, carries);
    if text.len() <= limit {
        return Ok(text);
    }
    pointer(job, store).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body a general parser would change: an integer beyond 64 bits, a name given twice.
    const SIGNED: &str = r#"{"id":123456789012345678901234,"amount":1,"amount":1000}"#;

    fn job(body: &[u8]) -> Job {
        Job {
            key: "stripe:evt_1".into(),
            source: "stripe".into(),
            body: bytes::Bytes::copy_from_slice(body),
            headers: Default::default(),
            attempt: 1,
            lease_until_ms: 0,
            replay_id: None,
            event_type: Some("invoice.paid".into()),
            trace: None,
        }
    }

    #[test]
    fn a_lambda_payload_holds_the_signed_bytes_in_place() {
        let payload = detail(&job(SIGNED.as_bytes()), Carries::AnyJson);
        assert_eq!(
            payload,
            format!(
                r#"{{"idempotency_key":"stripe:evt_1","source":"stripe","event_type":"invoice.paid","body":{SIGNED}}}"#
            )
        );
        // Whitespace inside the body is the sender's too; around it, it is no part of the value.
        let spaced = "\n { \"a\" : 1 ,\"a\":2 } \n";
        let payload = detail(&job(spaced.as_bytes()), Carries::AnyJson);
        assert!(
            payload.ends_with(r#","body":{ "a" : 1 ,"a":2 }}"#),
            "{payload}"
        );
    }

    #[test]
    fn an_eventbridge_detail_holds_the_signed_bytes_in_place_or_as_a_string() {
        // Within EventBridge's integers: the JSON itself, a repeated name kept as sent.
        let fits = r#"{"id":9223372036854775807,"amount":1,"amount":1000,"price":1.50}"#;
        let detail_text = detail(&job(fits.as_bytes()), Carries::Int64Json);
        assert!(
            detail_text.ends_with(&format!(r#","body":{fits}}}"#)),
            "{detail_text}"
        );
        // Beyond them: the exact text, as a JSON string (never 1.2345678901234567e+23).
        let mut j = job(SIGNED.as_bytes());
        j.replay_id = Some("rp-1".into());
        j.event_type = None;
        let detail_text = detail(&j, Carries::Int64Json);
        assert_eq!(
            detail_text,
            r#"{"idempotency_key":"stripe:evt_1","source":"stripe","event_type":null,"replay_id":"rp-1","body_text":"{\"id\":123456789012345678901234,\"amount\":1,\"amount\":1000}"}"#
        );
        let parsed: Value = serde_json::from_str(&detail_text).expect("the Detail is JSON");
        assert_eq!(parsed["body_text"], SIGNED);
    }

    #[test]
    fn text_is_a_string_and_other_bytes_base64_and_every_detail_an_object() {
        for (body, member, value) in [
            (&b"a=1&b=%20"[..], "body_text", Value::from("a=1&b=%20")),
            (b"\xff\x00", "body_base64", Value::from("/wA=")),
            (b"[1,2]", "body", json!([1, 2])),
            (b"\"s\"", "body", json!("s")),
            (b"17", "body", json!(17)),
        ] {
            for carries in [Carries::AnyJson, Carries::Int64Json] {
                let text = detail(&job(body), carries);
                let parsed: Value = serde_json::from_str(&text).expect("JSON");
                assert!(parsed.is_object(), "{text}");
                assert_eq!(parsed[member], value, "{text}");
                assert_eq!(parsed["idempotency_key"], "stripe:evt_1");
            }
        }
    }
}
