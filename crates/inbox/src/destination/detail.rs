//! What an EventBridge `Detail`, a Lambda payload and an SQS message carry (docs/routing.md):
//! the event's key beside its body, so that the receiving side can apply it once; a body too
//! big for the target goes as a pointer to the payload bucket.

use serde_json::{json, Map, Value};

use crate::consumer::{Job, ProcessError};
use crate::key::sha256_hex;
use crate::store::{payload_key, ObjectStore, S3Store};

/// The `Detail` (EventBridge) or payload (Lambda) of an event: `idempotency_key`, `source`,
/// `event_type`, `replay_id` on a replay, and the body: `body` (the JSON itself), or
/// `body_text` (a body that is not JSON), or `body_base64` (not UTF-8).
pub fn detail(job: &Job) -> Value {
    let mut out = head(job);
    match serde_json::from_slice::<Value>(&job.body) {
        Ok(v) => out.insert("body".into(), v),
        Err(_) => match std::str::from_utf8(&job.body) {
            Ok(text) => out.insert("body_text".into(), Value::String(text.to_owned())),
            Err(_) => out.insert(
                "body_base64".into(),
                Value::String(base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    &job.body,
                )),
            ),
        },
    };
    Value::Object(out)
}

fn head(job: &Job) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("idempotency_key".into(), Value::String(job.key.clone()));
    out.insert("source".into(), Value::String(job.source.clone()));
    out.insert(
        "event_type".into(),
        job.event_type.clone().map_or(Value::Null, Value::String),
    );
    if let Some(rid) = &job.replay_id {
        out.insert("replay_id".into(), Value::String(rid.clone()));
    }
    out
}

/// The body as a pointer: written to the payload bucket where the receiver would have put it
/// (the same object for the same event: a repeat writes the same bytes), and `body_ref`
/// naming its bucket, object key, SHA-256 and size.
pub async fn pointer(job: &Job, store: Option<&S3Store>) -> Result<Value, ProcessError> {
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
    out.insert(
        "body_ref".into(),
        json!({"bucket": store.bucket(), "s3_key": s3_key, "sha256": sha, "size": job.body.len()}),
    );
    Ok(Value::Object(out))
}

/// `detail(job)` as text where it fits `limit` bytes, else the pointer's.
pub async fn fitted(
    job: &Job,
    limit: usize,
    store: Option<&S3Store>,
) -> Result<String, ProcessError> {
    let text = detail(job).to_string();
    if text.len() <= limit {
        return Ok(text);
    }
    Ok(pointer(job, store).await?.to_string())
}
