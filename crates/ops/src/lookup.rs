//! `inbox-ops lookup`: one ledger item, every attribute, as plain JSON (a consistent read),
//! and for a routed event each destination's item under `destinations` (docs/routing.md),
//! `trace_link` beside `trace_id` where `TRACE_LINK_FORMAT` is set ([`crate::trace_link`]);
//! with `--body`, the event's body from the archive (docs/design.md §12).

use crate::stack::DEFAULT_STACK;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::process::ExitCode;

use std::io::{IsTerminal as _, Write as _};

use anyhow::{anyhow, bail};
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine as _;
use inbox::bucket::{PayloadBucket, S3Bucket};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::LedgerStore;
use serde_json::{json, Value};

use crate::aws;

/// `lookup`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct LookupArgs {
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
    /// The key, `<source>:<value>`.
    #[arg(value_name = "KEY")]
    pub key: String,
    /// Print the event's body from the archive (PAYLOAD_BUCKET) instead of the ledger item.
    #[arg(long)]
    pub body: bool,
    /// The payload bucket [default: the stack's PayloadBucketName].
    #[arg(long, env = "PAYLOAD_BUCKET", value_name = "BUCKET", value_parser = NonEmptyStringValueParser::new())]
    pub bucket: Option<String>,
}

/// A DynamoDB attribute as plain JSON: strings, numbers, booleans, lists, maps; binary as base64.
pub fn attribute_json(value: &AttributeValue) -> Value {
    let number = |n: &str| {
        n.parse::<i64>()
            .map(Value::from)
            .or_else(|_| n.parse::<f64>().map(Value::from))
            .unwrap_or_else(|_| Value::String(n.to_owned()))
    };
    let b64 = |b: &aws_sdk_dynamodb::primitives::Blob| {
        Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_ref()))
    };
    match value {
        AttributeValue::S(s) => Value::String(s.clone()),
        AttributeValue::N(n) => number(n),
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::L(items) => Value::Array(items.iter().map(attribute_json).collect()),
        AttributeValue::M(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), attribute_json(v)))
                .collect(),
        ),
        AttributeValue::Ss(items) => json!(items),
        AttributeValue::Ns(items) => Value::Array(items.iter().map(|n| number(n)).collect()),
        AttributeValue::B(blob) => b64(blob),
        AttributeValue::Bs(blobs) => Value::Array(blobs.iter().map(b64).collect()),
        other => Value::String(format!("{other:?}")),
    }
}

/// The ledger item of `key`, every attribute, as JSON (a consistent read).
pub async fn lookup(
    dynamo: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &str,
) -> anyhow::Result<Option<Value>> {
    let out = dynamo
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(key.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| {
            anyhow!(
                "GetItem on {table}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            )
        })?;
    Ok(out.item().map(item_json))
}

/// What a handshake's kept secret shows as: that it is kept, never its value.
pub const SECRET_NOT_SHOWN: &str = "(kept; never shown)";

/// A ledger item as JSON, every attribute but a handshake's kept secret (Asana's, in
/// `#hook-secret:<source>`), which shows as [`SECRET_NOT_SHOWN`]: `lookup` and the console's
/// event page show items through here (`why` reads a `Record`, which has no secret).
pub fn item_json(item: &std::collections::HashMap<String, AttributeValue>) -> Value {
    let hook_secret = item
        .get("pk")
        .and_then(|pk| pk.as_s().ok())
        .is_some_and(|pk| pk.starts_with(&inbox::ledger::hook_secret_key("")));
    Value::Object(
        item.iter()
            .map(|(k, v)| {
                let shown = if hook_secret && k == "secret" {
                    Value::String(SECRET_NOT_SHOWN.to_owned())
                } else {
                    attribute_json(v)
                };
                (k.clone(), shown)
            })
            .collect(),
    )
}

/// The items of the (event, destination) pairs of an event item (`lookup`'s answer), by
/// destination name, every attribute (`null`: not taken yet); `None` where `routes` sends
/// the item's source to no destination.
pub async fn destination_items(
    dynamo: &aws_sdk_dynamodb::Client,
    table: &str,
    routes: &inbox::route::Routes,
    key: &str,
    item: &Value,
) -> anyhow::Result<Option<Value>> {
    let source = item["source"].as_str().unwrap_or_default();
    if !routes.routes(source) {
        return Ok(None);
    }
    let mut out = serde_json::Map::new();
    for name in routes.destinations_for(source, item["event_type"].as_str()) {
        let pair = lookup(dynamo, table, &inbox::route::destination_key(key, name)).await?;
        out.insert(name.to_owned(), pair.unwrap_or(Value::Null));
    }
    Ok(Some(Value::Object(out)))
}

/// The body of `key` as the archive holds it (following the envelope's pointer into the
/// payload bucket where the body did not fit the queue), checked against its payload hash
/// (`attempt_fields`: its source's, [`envelope_body`]).
pub async fn archived_body(
    store: &impl PayloadBucket,
    ledger: &impl LedgerStore,
    key: &str,
    attempt_fields: &[String],
) -> anyhow::Result<Vec<u8>> {
    let envelope = crate::replay::archived_envelope(store, ledger, key)
        .await?
        .envelope;
    envelope_body(store, &envelope, attempt_fields).await
}

/// The body of an archived envelope (inline, or behind its pointer into the payload bucket),
/// checked against its payload hash: its SHA-256 with the source's `attempt_fields` left out
/// (`inbox::key::payload_sha256`, docs/design.md §2).
pub async fn envelope_body(
    store: &impl PayloadBucket,
    envelope: &inbox::queue::Envelope,
    attempt_fields: &[String],
) -> anyhow::Result<Vec<u8>> {
    let body = match &envelope.body_ref {
        None => envelope.body_bytes()?,
        Some(r) => store
            .get(&r.s3_key)
            .await?
            .ok_or_else(|| anyhow!("payload missing: {}", store.url(&r.s3_key)))?,
    };
    if inbox::key::payload_sha256(&body, attempt_fields) != envelope.payload_sha256 {
        bail!(
            "the archived body of `{}` does not match its payload_sha256",
            envelope.key
        );
    }
    Ok(body)
}

/// Where an event of a batch came from (docs/design.md §14), for `lookup --body`'s stderr.
pub fn batch_note(place: &inbox::queue::BatchPlace) -> String {
    format!(
        "event {} of {} (counted from 0) of a signed batch whose SHA-256 is {}: the body is that event's bytes as sent; the carried signature headers verify the whole batch, not this body",
        place.index, place.count, place.sha256
    )
}

/// The body as a terminal may show it: every control character other than newline and tab
/// (C0, DEL, C1, so no escape sequence reaches the terminal) and every byte that is not UTF-8
/// is written as `\xNN` (a C1 character by its code point, `\u{NN}`); the rest is unchanged.
pub fn escape_for_terminal(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    for chunk in body.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() && c != '\n' && c != '\t' {
                let code = u32::from(c);
                let escaped = if code < 0x80 {
                    format!("\\x{code:02x}")
                } else {
                    format!("\\u{{{code:x}}}")
                };
                out.extend_from_slice(escaped.as_bytes());
            } else {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        for byte in chunk.invalid() {
            out.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
        }
    }
    out
}

/// What `lookup --body` writes: escaped (see [`escape_for_terminal`]) when stdout is a
/// terminal, the archived bytes as they are when it is piped or redirected.
pub fn body_output(body: &[u8], stdout_is_terminal: bool) -> std::borrow::Cow<'_, [u8]> {
    if stdout_is_terminal {
        std::borrow::Cow::Owned(escape_for_terminal(body))
    } else {
        std::borrow::Cow::Borrowed(body)
    }
}

/// Runs `lookup`, printing the item (or, with `--body`, the archived body); exit code 1 when
/// there is none.
pub async fn run(args: &LookupArgs) -> anyhow::Result<ExitCode> {
    let key = &args.key;
    let sdk = aws::config().await;
    let mut stack = crate::stack::Lazy::new(&sdk, &args.stack);
    let table = &stack
        .pick(args.table.as_deref(), crate::stack::TABLE_OUTPUT, |r| {
            &r.table
        })
        .await?;
    if args.body {
        let bucket = stack
            .pick(args.bucket.as_deref(), crate::stack::BUCKET_OUTPUT, |r| {
                &r.bucket
            })
            .await?;
        let store = S3Bucket::new(inbox::bucket::s3_client(&sdk), &bucket);
        let ledger = DynamoLedger::new(aws::dynamo(&sdk), table);
        let envelope = crate::replay::archived_envelope(&store, &ledger, key)
            .await?
            .envelope;
        let fields = stack.attempt_fields(&envelope.source).await?;
        let body = envelope_body(&store, &envelope, &fields).await?;
        if let Some(place) = &envelope.batch {
            // docs/design.md §14: the body is a slice of a signed batch.
            eprintln!("{}", batch_note(place));
        }
        let stdout = std::io::stdout();
        let output = body_output(&body, stdout.is_terminal());
        stdout.lock().write_all(&output)?;
        return Ok(ExitCode::SUCCESS);
    }
    let dynamo = aws::dynamo(&sdk);
    match lookup(&dynamo, table, key).await? {
        Some(mut item) => {
            let routes = stack.routes_to_show().await;
            if let Some(states) = destination_items(&dynamo, table, &routes, key, &item).await? {
                item["destinations"] = states;
            }
            crate::trace_link::with_trace_link(
                &mut item,
                crate::trace_link::format_from_env().as_deref(),
            );
            println!("{}", crate::text::json_shown(&item));
            Ok(ExitCode::SUCCESS)
        }
        None => {
            eprintln!(
                "no item for `{}` in {table}: never claimed, or deleted by TTL after expires_at",
                crate::text::shown(key)
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_handshake_secret_is_never_shown() {
        use std::collections::HashMap;
        let item: HashMap<String, AttributeValue> = [
            (
                "pk".to_owned(),
                AttributeValue::S("#hook-secret:asana".into()),
            ),
            (
                "secret".to_owned(),
                AttributeValue::S("the-kept-secret".into()),
            ),
            ("kept_at".to_owned(), AttributeValue::N("1".into())),
        ]
        .into_iter()
        .collect();
        let shown = item_json(&item);
        assert!(!shown.to_string().contains("the-kept-secret"), "{shown}");
        assert_eq!(shown["secret"], SECRET_NOT_SHOWN);
        assert_eq!(shown["kept_at"], 1);
        // An event's attributes are shown as they are, whatever their names.
        let event: HashMap<String, AttributeValue> = [
            ("pk".to_owned(), AttributeValue::S("s:1".into())),
            ("secret".to_owned(), AttributeValue::S("x".into())),
        ]
        .into_iter()
        .collect();
        assert_eq!(item_json(&event)["secret"], "x");
    }

    #[test]
    fn attributes_become_plain_json() {
        use std::collections::HashMap;
        let map: HashMap<String, AttributeValue> = [
            ("n".to_owned(), AttributeValue::N("42".into())),
            ("f".to_owned(), AttributeValue::N("1.5".into())),
            ("s".to_owned(), AttributeValue::S("x".into())),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            attribute_json(&AttributeValue::M(map)),
            json!({"n": 42, "f": 1.5, "s": "x"})
        );
        assert_eq!(attribute_json(&AttributeValue::Bool(true)), json!(true));
        assert_eq!(
            attribute_json(&AttributeValue::L(vec![AttributeValue::Null(true)])),
            json!([null])
        );
    }
}
