//! What one call is billed by, from its request (and its answer's size): the quantity of its
//! price line ([`crate::price::Line`]), in that line's unit, and for S3 the bytes it stored.
//!
//! - DynamoDB: a write (PutItem, UpdateItem, DeleteItem) counts 1, which the bill multiplies
//!   by the write units of the largest item the run left in the table (one per started KiB; a
//!   write refused by its condition is billed too); a GetItem counts one read unit if strongly
//!   consistent, half one otherwise (items under 4 KiB).
//! - SQS: one request per started 64 KiB chunk of the larger of the request and the answer (a
//!   ReceiveMessage's payload is in its answer; the JSON around it makes this an upper bound).
//! - S3: one request; a PutObject or UploadPart also stores its body's bytes
//!   (`x-amz-decoded-content-length` where the SDK sends the body aws-chunked).
//! - Secrets Manager: one API call.
//! - Firehose: the bytes ingested, each record of a PutRecordBatch (or the PutRecord's one)
//!   rounded up to the next 5 KB (5,120 bytes), its `Data` base64-decoded; no per-request charge.
//! - EventBridge: one event per started 64 KB chunk of each PutEvents entry, sized as
//!   EventBridge sizes an entry (`Time` 14 bytes where given, `Source`, `DetailType`, `Detail`
//!   and each of `Resources` in UTF-8 bytes).

use base64::Engine as _;
use http::Request;
use hyper::body::Bytes;
use serde_json::Value;

use crate::classify::{Op, Service};

/// Bytes in an SQS billing chunk (64 KiB).
pub const SQS_CHUNK_BYTES: usize = 64 * 1024;
/// Firehose rounds each record up to a multiple of 5 KB.
pub const FIREHOSE_RECORD_STEP_BYTES: usize = 5 * 1024;
/// Bytes in an EventBridge billing chunk (64 KB).
pub const EVENTBRIDGE_CHUNK_BYTES: usize = 64 * 1024;

/// A call's billing quantity and the bytes it stored.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantity {
    pub units: f64,
    pub stored_bytes: f64,
}

/// The quantity of `op`'s call `req`, whose answer had `response_len` bytes of body; why not
/// where the request cannot be read for it.
pub fn meter(op: &Op, req: &Request<Bytes>, response_len: usize) -> Result<Quantity, String> {
    let units = |u: f64| Quantity {
        units: u,
        stored_bytes: 0.0,
    };
    let body = req.body();
    Ok(match op.service {
        Service::DynamoDb => match op.name.as_str() {
            "GetItem" => {
                let v: Value =
                    serde_json::from_slice(body).map_err(|e| format!("GetItem body: {e}"))?;
                units(if v["ConsistentRead"] == Value::Bool(true) {
                    1.0
                } else {
                    0.5
                })
            }
            _ => units(1.0),
        },
        Service::Sqs => units(
            body.len()
                .max(response_len)
                .max(1)
                .div_ceil(SQS_CHUNK_BYTES) as f64,
        ),
        Service::S3 => Quantity {
            units: 1.0,
            stored_bytes: match op.name.as_str() {
                "PutObject" | "UploadPart" => object_bytes(req) as f64,
                _ => 0.0,
            },
        },
        Service::SecretsManager => units(1.0),
        Service::Firehose => units(firehose_billed_bytes(&op.name, body)? as f64),
        Service::EventBridge => units(eventbridge_events(&op.name, body)? as f64),
    })
}

/// The object's size: `x-amz-decoded-content-length` (an aws-chunked body), else
/// `content-length`, else the body's.
fn object_bytes(req: &Request<Bytes>) -> usize {
    ["x-amz-decoded-content-length", "content-length"]
        .iter()
        .find_map(|h| req.headers().get(*h)?.to_str().ok()?.parse().ok())
        .unwrap_or(req.body().len())
}

/// The bytes Firehose bills a PutRecordBatch (`Records`) or PutRecord (`Record`) for: each
/// record's decoded `Data` rounded up to the next [`FIREHOSE_RECORD_STEP_BYTES`].
pub fn firehose_billed_bytes(operation: &str, body: &[u8]) -> Result<usize, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("{operation} body: {e}"))?;
    let records: Vec<&Value> = match operation {
        "PutRecordBatch" => v["Records"]
            .as_array()
            .ok_or("PutRecordBatch without Records")?
            .iter()
            .collect(),
        "PutRecord" => vec![&v["Record"]],
        _ => return Ok(0),
    };
    let mut billed = 0;
    for r in records {
        let data = r["Data"]
            .as_str()
            .ok_or(format!("{operation}: a record without Data"))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("{operation}: a record's Data is not base64: {e}"))?;
        billed +=
            bytes.len().max(1).div_ceil(FIREHOSE_RECORD_STEP_BYTES) * FIREHOSE_RECORD_STEP_BYTES;
    }
    Ok(billed)
}

/// The events EventBridge bills a PutEvents for: each entry's 64 KB chunks.
pub fn eventbridge_events(operation: &str, body: &[u8]) -> Result<usize, String> {
    if operation != "PutEvents" {
        return Ok(0);
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("PutEvents body: {e}"))?;
    let entries = v["Entries"].as_array().ok_or("PutEvents without Entries")?;
    let text = |e: &Value, k: &str| e[k].as_str().map_or(0, str::len);
    Ok(entries
        .iter()
        .map(|e| {
            let resources: usize = e["Resources"].as_array().map_or(0, |rs| {
                rs.iter().filter_map(Value::as_str).map(str::len).sum()
            });
            let time = if e.get("Time").is_some_and(|t| !t.is_null()) {
                14
            } else {
                0
            };
            let size =
                time + text(e, "Source") + text(e, "DetailType") + text(e, "Detail") + resources;
            size.max(1).div_ceil(EVENTBRIDGE_CHUNK_BYTES)
        })
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firehose_rounds_each_record_up_to_5_kb() {
        let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![b'x'; n]);
        // 1 byte, 5120 bytes and 5121 bytes: 5 KB, 5 KB and 10 KB.
        let body = format!(
            r#"{{"DeliveryStreamName":"s","Records":[{{"Data":"{}"}},{{"Data":"{}"}},{{"Data":"{}"}}]}}"#,
            b64(1),
            b64(5120),
            b64(5121)
        );
        assert_eq!(
            firehose_billed_bytes("PutRecordBatch", body.as_bytes()),
            Ok(20 * 1024)
        );
        let one = format!(
            r#"{{"DeliveryStreamName":"s","Record":{{"Data":"{}"}}}}"#,
            b64(3000)
        );
        assert_eq!(
            firehose_billed_bytes("PutRecord", one.as_bytes()),
            Ok(5 * 1024)
        );
        assert_eq!(
            firehose_billed_bytes("PutRecordBatch", b"{}"),
            Err("PutRecordBatch without Records".to_owned())
        );
        let e =
            firehose_billed_bytes("PutRecordBatch", br#"{"Records":[{"Data":"%%"}]}"#).unwrap_err();
        assert!(
            e.starts_with("PutRecordBatch: a record's Data is not base64"),
            "{e}"
        );
    }

    #[test]
    fn eventbridge_counts_64_kb_chunks_per_entry() {
        let detail = "d".repeat(65536 - 14 - 2 - 3);
        let body = serde_json::json!({"Entries": [
            // 14 + 2 + 3 + (65536 - 19) = 65536 bytes: one chunk.
            {"Time": 1, "Source": "ab", "DetailType": "cde", "Detail": detail},
            // One byte more: two.
            {"Time": 1, "Source": "ab", "DetailType": "cde", "Detail": format!("{detail}x")},
            // A small one with a resource: one.
            {"Source": "a", "DetailType": "b", "Resources": ["arn:x"]},
        ]});
        assert_eq!(
            eventbridge_events("PutEvents", body.to_string().as_bytes()),
            Ok(4)
        );
        assert_eq!(
            eventbridge_events("PutEvents", b"{}"),
            Err("PutEvents without Entries".to_owned())
        );
    }
}
