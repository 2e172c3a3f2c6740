//! The sample Lambda events in `events/` and what each one must get back.
//!
//! `make events` (the `make-events` binary) writes them; the checked-in files are its output.
//! Receiver events are API Gateway HTTP API (payload v2) requests for the demo sources
//! ([`TEST_SOURCES`], secrets [`crate::testkit::TEST_SECRET`] and
//! [`crate::testkit::TEST_WHSEC`]), signed the way each sender signs; consumer events are SQS
//! FIFO batches whose bodies are envelopes as the receiver writes them.
//!
//! Stripe and Standard Webhooks sign a timestamp that is stale `tolerance_seconds` (300) after
//! it was made, so the events that carry one depend on the time they were generated at;
//! everything else is fixed, and regenerating changes only those files.

use std::path::{Path, PathBuf};

use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::config::SourceSpecs;
use inbox::fifo::sqs_id;
use inbox::queue::Envelope;
use serde_json::{json, Value};

use crate::testkit::apigw::ApiGatewayEvent;
use crate::testkit::{self, TEST_SOURCES};

/// The instant of everything that does not go stale: 2026-12-01T00:00:00Z.
pub const FIXED_EPOCH_S: i64 = 1_796_083_200;
/// How old a timestamped event may be before its signature is refused (the sources' tolerance).
pub const STALE_AFTER_S: i64 = 300;
/// How far back the `*-expired` events are signed.
pub const EXPIRED_BY_S: i64 = 600;
/// The queue the SQS events claim to come from.
pub const QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:webhook-inbox-webhooks.fifo";

/// Which function an event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Receiver,
    Consumer,
}

impl Function {
    /// The binary, as `cargo lambda invoke <name>` and the emulator know it.
    pub fn name(self) -> &'static str {
        match self {
            Function::Receiver => "receiver",
            Function::Consumer => "consumer",
        }
    }
}

/// What an event must get back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The receiver's answer: status, JSON body, and whether `Idempotent-Replayed: true` is set.
    Http {
        status: u16,
        body: Value,
        replayed: bool,
    },
    /// The consumer's answer: the message ids listed in `batchItemFailures`, in batch order,
    /// and how many calls the system of record gets (its `FORWARD_URL` answering 2xx).
    Batch {
        failures: Vec<String>,
        side_effects: usize,
    },
}

impl Expected {
    fn accepted(key: &str) -> Expected {
        Expected::Http {
            status: 200,
            body: json!({"status": "accepted", "key": key}),
            replayed: false,
        }
    }

    fn replayed(key: &str) -> Expected {
        Expected::Http {
            status: 200,
            body: json!({"status": "accepted", "key": key}),
            replayed: true,
        }
    }

    fn error(status: u16, code: &str) -> Expected {
        Expected::Http {
            status,
            body: json!({ "error": code }),
            replayed: false,
        }
    }

    /// The README's wording of it (a `|` escaped for a table cell).
    pub fn describe(&self) -> String {
        match self {
            Expected::Http {
                status,
                body,
                replayed,
            } => {
                let key = body.get("key").and_then(Value::as_str);
                let code = body.get("error").and_then(Value::as_str);
                let text = match (key, code, replayed) {
                    (Some(key), _, false) => format!("`{status}` accepted, key `{key}`"),
                    (Some(key), _, true) => {
                        format!("`{status}` replayed (`Idempotent-Replayed: true`), key `{key}`")
                    }
                    (None, Some(code), _) => format!("`{status}` `{code}`"),
                    (None, None, _) => format!("`{status}` `{body}`"),
                };
                text.replace('|', "\\|")
            }
            Expected::Batch {
                failures,
                side_effects,
            } => {
                let ids: Vec<String> = failures.iter().map(|f| format!("`{f}`")).collect();
                let list = if ids.is_empty() {
                    "none".to_owned()
                } else {
                    ids.join(", ")
                };
                format!("batchItemFailures: {list}; {side_effects} forwarded to `FORWARD_URL`")
            }
        }
    }
}

/// One sample event.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The file name under `events/`.
    pub file: String,
    pub function: Function,
    /// The Lambda event, as `cargo lambda invoke --data-file` sends it.
    pub event: Value,
    pub expected: Expected,
    /// What it shows, for the README.
    pub shows: String,
    /// Signed with a timestamp: stale [`STALE_AFTER_S`] after it was generated.
    pub timestamped: bool,
}

impl Sample {
    /// The file's text: pretty JSON and a final newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.event).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// `events/` at the workspace root.
pub fn events_dir() -> PathBuf {
    crate::moto::workspace_root().join("events")
}

/// Every sample, generated at `now_s` (epoch seconds), in the order to invoke them: a first
/// delivery before its duplicate.
pub fn generate(now_s: i64) -> Vec<Sample> {
    let specs = SourceSpecs::parse(TEST_SOURCES).expect("the demo sources parse");
    let mut out = Vec::new();
    github(&mut out);
    stripe(&mut out, now_s);
    acme(&mut out, now_s);
    shop(&mut out);
    orders(&mut out);
    other(&mut out);
    sqs(&mut out, &specs);
    out
}

/// Writes every sample into `dir`, removing `*.json` files that are not samples any more.
pub fn write_all(dir: &Path, samples: &[Sample]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".json") && !samples.iter().any(|s| s.file == name) {
            std::fs::remove_file(&path)?;
        }
    }
    for s in samples {
        std::fs::write(dir.join(&s.file), s.text())?;
    }
    Ok(())
}

/// The README's table: file, function, what it shows, expected outcome, in invoking order.
pub fn readme_table(samples: &[Sample]) -> String {
    let mut t = String::from(
        "| `events/…` | invoke | shows | expected answer |\n| --- | --- | --- | --- |\n",
    );
    for s in samples {
        let stale = if s.timestamped { " ⏱" } else { "" };
        t.push_str(&format!(
            "| `{}`{stale} | `{}` | {} | {} |\n",
            s.file,
            s.function.name(),
            s.shows,
            s.expected.describe()
        ));
    }
    t
}

/// The generation time of timestamped files: `requestContext.timeEpoch` of one of them.
pub fn generated_at(event: &Value) -> Option<i64> {
    event
        .pointer("/requestContext/timeEpoch")
        .and_then(Value::as_i64)
        .map(|ms| ms.div_euclid(1000))
}

// ---- API Gateway HTTP API (payload v2) requests (testkit::apigw) ----

fn post(
    source: &str,
    headers: Vec<(&'static str, String)>,
    body: &[u8],
    request_id: &str,
    at_s: i64,
) -> ApiGatewayEvent {
    ApiGatewayEvent::post(source)
        .headers(headers)
        .body(body)
        .request_id(request_id)
        .at_s(at_s)
}

fn push(
    out: &mut Vec<Sample>,
    file: &str,
    request: ApiGatewayEvent,
    expected: Expected,
    shows: &str,
    timestamped: bool,
) {
    out.push(Sample {
        file: format!("{file}.json"),
        function: Function::Receiver,
        event: request.to_json(),
        expected,
        shows: shows.to_owned(),
        timestamped,
    });
}

fn github(out: &mut Vec<Sample>) {
    const ID: &str = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b01";
    const ID_B64: &str = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b02";
    const ID_BAD: &str = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b03";
    let t = FIXED_EPOCH_S;
    let body = br#"{"ref":"refs/heads/main","before":"9f2c1e0d8b7a","after":"1a2b3c4d5e6f","repository":{"full_name":"acme/widgets"},"pusher":{"name":"octocat"}}"#;
    let headers = |id: &str, signed: &[u8]| {
        let mut h = testkit::github_headers(id, signed);
        h.push(("user-agent", "GitHub-Hookshot/5b4c2a1".to_owned()));
        h.push(("x-github-hook-id", "512345678".to_owned()));
        h
    };
    let key = format!("github:{ID}");
    push(
        out,
        "github-first",
        post("github", headers(ID, body), body, "gh-first", t),
        Expected::accepted(&key),
        "GitHub push (`X-Hub-Signature-256`), key `X-GitHub-Delivery`",
        false,
    );
    push(
        out,
        "github-duplicate",
        post("github", headers(ID, body), body, "gh-dup", t),
        Expected::replayed(&key),
        "the same delivery again (GitHub's \"Redeliver\"): the first answer, replayed",
        false,
    );
    let tampered = body.to_vec().replace_bytes(b"octocat", b"mallory");
    push(
        out,
        "github-bad-signature",
        post("github", headers(ID_BAD, body), &tampered, "gh-bad", t),
        Expected::error(401, "invalid_signature"),
        "body changed after signing",
        false,
    );
    let mut no_id = headers(ID, body);
    no_id.retain(|(name, _)| *name != "x-github-delivery");
    push(
        out,
        "github-missing-key",
        post("github", no_id, body, "gh-nokey", t),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but no `X-GitHub-Delivery`: never guessed",
        false,
    );
    let b64 = post("github", headers(ID_B64, body), body, "gh-b64", t).base64_body(body);
    push(
        out,
        "github-base64",
        b64,
        Expected::accepted(&format!("github:{ID_B64}")),
        "`isBase64Encoded: true`: decoded, then verified over the raw bytes",
        false,
    );
}

fn stripe(out: &mut Vec<Sample>, now: i64) {
    const EVT: &str = "evt_3QdemoInboxPaid000001";
    let body = |id: &str| {
        format!(
            r#"{{"id":"{id}","object":"event","api_version":"2024-06-20","created":{FIXED_EPOCH_S},"type":"payment_intent.succeeded","livemode":false,"data":{{"object":{{"id":"pi_3QdemoInbox0001","object":"payment_intent","amount":2000,"currency":"usd"}}}}}}"#
        )
        .into_bytes()
    };
    let headers = |signed: &[u8], t: i64| {
        vec![
            ("stripe-signature", testkit::stripe_signature(signed, t)),
            ("content-type", "application/json; charset=utf-8".to_owned()),
            (
                "user-agent",
                "Stripe/1.0 (+https://stripe.com/docs/webhooks)".to_owned(),
            ),
        ]
    };
    let first = body(EVT);
    let key = format!("stripe:{EVT}");
    push(
        out,
        "stripe-first",
        post("stripe", headers(&first, now - 2), &first, "st-first", now),
        Expected::accepted(&key),
        "Stripe event (`Stripe-Signature: t=…,v1=…`), key `/id`",
        true,
    );
    push(
        out,
        "stripe-duplicate",
        post("stripe", headers(&first, now), &first, "st-dup", now),
        Expected::replayed(&key),
        "Stripe's retry: same event, signed again with a new `t`",
        true,
    );
    let other = body("evt_3QdemoInboxPaid000002");
    let tampered = String::from_utf8_lossy(&other)
        .replace("\"amount\":2000", "\"amount\":1")
        .into_bytes();
    push(
        out,
        "stripe-bad-signature",
        post("stripe", headers(&other, now), &tampered, "st-bad", now),
        Expected::error(401, "invalid_signature"),
        "amount changed after signing",
        true,
    );
    let old = body("evt_3QdemoInboxPaid000003");
    push(
        out,
        "stripe-expired",
        post(
            "stripe",
            headers(&old, now - EXPIRED_BY_S),
            &old,
            "st-old",
            now,
        ),
        Expected::error(401, "invalid_signature"),
        "correctly signed 10 minutes before sending (tolerance 300 s): a replay",
        true,
    );
    let no_id = br#"{"object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_3QdemoInbox0004"}}}"#;
    push(
        out,
        "stripe-missing-key",
        post("stripe", headers(no_id, now), no_id, "st-nokey", now),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but the body has no `/id`",
        true,
    );
}

fn acme(out: &mut Vec<Sample>, now: i64) {
    const ID: &str = "msg_2ZdemoInboxInvoice0001";
    let body = br#"{"type":"invoice.paid","customer_id":"cus_A","data":{"invoice":"in_1001","amount":4200}}"#;
    let headers = |id: &str, t: i64, signed: &[u8]| {
        let mut h = testkit::standard_webhooks_headers(id, t, signed);
        h.push(("user-agent", "Acme-Webhooks/2.1".to_owned()));
        h
    };
    let key = format!("acme:{ID}");
    push(
        out,
        "acme-first",
        post("acme", headers(ID, now - 2, body), body, "ac-first", now),
        Expected::accepted(&key),
        "Standard Webhooks (`webhook-id`/`-timestamp`/`-signature`, `whsec_` secret), grouped by `/customer_id`",
        true,
    );
    push(
        out,
        "acme-duplicate",
        post("acme", headers(ID, now, body), body, "ac-dup", now),
        Expected::replayed(&key),
        "the sender's retry: same `webhook-id`, new timestamp and signature",
        true,
    );
    let bad_id = "msg_2ZdemoInboxInvoice0002";
    let tampered = String::from_utf8_lossy(body)
        .replace("cus_A", "cus_B")
        .into_bytes();
    push(
        out,
        "acme-bad-signature",
        post("acme", headers(bad_id, now, body), &tampered, "ac-bad", now),
        Expected::error(401, "invalid_signature"),
        "customer changed after signing",
        true,
    );
    let old_id = "msg_2ZdemoInboxInvoice0003";
    push(
        out,
        "acme-expired",
        post(
            "acme",
            headers(old_id, now - EXPIRED_BY_S, body),
            body,
            "ac-old",
            now,
        ),
        Expected::error(401, "invalid_signature"),
        "correctly signed 10 minutes before sending: refused",
        true,
    );
}

fn shop(out: &mut Vec<Sample>) {
    const EVENT_ID: &str = "98880550-7158-44d4-b7cd-2c97c8a091b5";
    let t = FIXED_EPOCH_S;
    let body = br#"{"id":820982911946154508,"email":"jon@example.com","total_price":"199.00","currency":"USD","financial_status":"paid"}"#;
    let headers = |event_id: Option<&str>, signed: &[u8]| {
        let mut h = vec![
            ("x-shopify-topic", "orders/paid".to_owned()),
            ("x-shopify-hmac-sha256", testkit::shopify_signature(signed)),
            (
                "x-shopify-shop-domain",
                "demo-shop.myshopify.com".to_owned(),
            ),
            ("x-shopify-api-version", "2025-10".to_owned()),
            (
                "x-shopify-webhook-id",
                "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043".to_owned(),
            ),
            ("x-shopify-triggered-at", "2026-12-01T00:00:00Z".to_owned()),
            ("content-type", "application/json".to_owned()),
            ("user-agent", "Shopify-Captain-Hook".to_owned()),
        ];
        if let Some(id) = event_id {
            h.push(("x-shopify-event-id", id.to_owned()));
        }
        h
    };
    let key = format!("shop:{EVENT_ID}");
    push(
        out,
        "shop-first",
        post("shop", headers(Some(EVENT_ID), body), body, "sh-first", t),
        Expected::accepted(&key),
        "Shopify (`X-Shopify-Hmac-Sha256`, base64), key `X-Shopify-Event-Id`",
        false,
    );
    push(
        out,
        "shop-duplicate",
        post("shop", headers(Some(EVENT_ID), body), body, "sh-dup", t),
        Expected::replayed(&key),
        "Shopify's retry: same `X-Shopify-Event-Id`",
        false,
    );
    let tampered = String::from_utf8_lossy(body)
        .replace("199.00", "1.00")
        .into_bytes();
    push(
        out,
        "shop-bad-signature",
        post(
            "shop",
            headers(Some("98880550-7158-44d4-b7cd-2c97c8a091b6"), body),
            &tampered,
            "sh-bad",
            t,
        ),
        Expected::error(401, "invalid_signature"),
        "price changed after signing",
        false,
    );
    push(
        out,
        "shop-missing-key",
        post("shop", headers(None, body), body, "sh-nokey", t),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but no `X-Shopify-Event-Id`",
        false,
    );
}

fn orders(out: &mut Vec<Sample>) {
    let t = FIXED_EPOCH_S;
    let body = br#"{"type":"order.created","order":{"id":"ord_1001","total":"42.00"}}"#;
    let headers = |signed: &[u8]| {
        vec![
            ("x-signature", testkit::hmac_hex(signed)),
            ("content-type", "application/json".to_owned()),
            ("user-agent", "orders-service/3.4".to_owned()),
        ]
    };
    let key = "orders:order.created|ord_1001";
    push(
        out,
        "orders-first",
        post("orders", headers(body), body, "or-first", t),
        Expected::accepted(key),
        "generic `hmac-sha256` (hex in `X-Signature`), composite key `/type` + `/order/id`",
        false,
    );
    push(
        out,
        "orders-duplicate",
        post("orders", headers(body), body, "or-dup", t),
        Expected::replayed(key),
        "the same business event again",
        false,
    );
    let tampered = String::from_utf8_lossy(body)
        .replace("42.00", "0.42")
        .into_bytes();
    push(
        out,
        "orders-bad-signature",
        post("orders", headers(body), &tampered, "or-bad", t),
        Expected::error(401, "invalid_signature"),
        "total changed after signing",
        false,
    );
    let no_order = br#"{"type":"order.created","order":{"total":"42.00"}}"#;
    push(
        out,
        "orders-missing-key",
        post("orders", headers(no_order), no_order, "or-nokey", t),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but no `/order/id`",
        false,
    );
    let not_json = b"type=order.created&order=ord_1001";
    push(
        out,
        "orders-malformed-body",
        post("orders", headers(not_json), not_json, "or-notjson", t),
        Expected::error(400, "malformed_body"),
        "signed, but not JSON where the key pointers need JSON",
        false,
    );
}

fn other(out: &mut Vec<Sample>) {
    let t = FIXED_EPOCH_S;
    let body = br#"{"zen":"Keep it logically awesome."}"#;
    let id = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b04";
    let bad = post(
        "github",
        testkit::github_headers(id, body),
        body,
        "bad-b64",
        t,
    )
    .base64_body(body);
    // The encoded body replaced by text that does not decode (its content-length stays).
    let mut event = bad.to_json();
    event["body"] = Value::String("***not base64***".to_owned());
    out.push(Sample {
        file: "bad-base64.json".to_owned(),
        function: Function::Receiver,
        event,
        expected: Expected::error(400, "malformed_body"),
        shows: "`isBase64Encoded: true` with a body that does not decode: a 400, not a panic"
            .to_owned(),
        timestamped: false,
    });
    push(
        out,
        "unknown-source",
        post(
            "gitlab",
            testkit::github_headers(id, body),
            body,
            "unknown",
            t,
        ),
        Expected::error(404, "unknown_source"),
        "a source `WEBHOOK_SOURCES` does not declare",
        false,
    );
    let get = post("github", testkit::github_headers(id, body), body, "get", t).method("GET");
    push(
        out,
        "wrong-method",
        get,
        Expected::error(405, "method_not_allowed"),
        "`GET` instead of `POST`",
        false,
    );
}

// ---- SQS events ----

/// One message: its envelope as the receiver would have sent it.
struct Message {
    message_id: String,
    key: String,
    group: String,
    dedup: String,
    body: String,
}

fn header_map(headers: &[(&'static str, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.insert(n, v);
        }
    }
    map
}

/// The envelope of an accepted request, built as the receiver builds it.
fn message(
    specs: &SourceSpecs,
    source: &str,
    headers: &[(&'static str, String)],
    body: &[u8],
    message_id: String,
) -> Message {
    let spec = specs.get(source).expect("a demo source");
    let map = header_map(headers);
    let sha = inbox::key::sha256_hex(body);
    let json = inbox::key::parse_json(body).ok();
    let key = inbox::key::derive(source, &spec.key, &map, json.as_ref(), &sha)
        .expect("the sample has a key");
    let group = inbox::fifo::group(&key, &spec.group, source, json.as_ref());
    let carried = spec
        .envelope_headers()
        .into_iter()
        .filter_map(|name| {
            let value = map.get(name.as_str())?.to_str().ok()?.to_owned();
            Some((name, value))
        })
        .collect();
    let envelope = Envelope::new(&key, source, FIXED_EPOCH_S * 1000, &sha, carried, body);
    Message {
        message_id,
        group: sqs_id(&group),
        dedup: sqs_id(&key),
        key,
        body: envelope.to_json(),
    }
}

fn record(m: &Message, seq: u64, receive_count: u32) -> Value {
    json!({
        "messageId": m.message_id,
        "receiptHandle": format!("AQEBdemo{}", m.message_id.replace('-', "")),
        "body": m.body,
        "attributes": {
            "ApproximateReceiveCount": receive_count.to_string(),
            "SentTimestamp": (FIXED_EPOCH_S * 1000 + 100).to_string(),
            "SenderId": "AROADEMO00000000000:webhook-inbox-receiver",
            "ApproximateFirstReceiveTimestamp": (FIXED_EPOCH_S * 1000 + 250).to_string(),
            "SequenceNumber": format!("188800000000{:08}", 1000 + seq),
            "MessageGroupId": m.group,
            "MessageDeduplicationId": m.dedup
        },
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1"
    })
}

fn message_id(batch: u8, n: u8) -> String {
    format!("5e9c{batch:02}00-0000-4000-8000-0000000000{n:02}")
}

fn acme_message(specs: &SourceSpecs, id: &str, customer: &str, n: u8, mid: String) -> Message {
    let body = format!(
        r#"{{"type":"invoice.paid","customer_id":"{customer}","data":{{"invoice":"in_20{n:02}"}}}}"#
    )
    .into_bytes();
    let headers = testkit::standard_webhooks_headers(id, FIXED_EPOCH_S, &body);
    message(specs, "acme", &headers, &body, mid)
}

fn sqs(out: &mut Vec<Sample>, specs: &SourceSpecs) {
    // Two FIFO groups (customers A and B of the "acme" source), interleaved as SQS hands them out.
    let batch = [
        acme_message(specs, "msg_2ZdemoQueueA1", "cus_A", 1, message_id(1, 1)),
        acme_message(specs, "msg_2ZdemoQueueB1", "cus_B", 2, message_id(1, 2)),
        acme_message(specs, "msg_2ZdemoQueueA2", "cus_A", 3, message_id(1, 3)),
        acme_message(specs, "msg_2ZdemoQueueB2", "cus_B", 4, message_id(1, 4)),
    ];
    out.push(Sample {
        file: "sqs-fifo-batch.json".to_owned(),
        function: Function::Consumer,
        event: json!({"Records": batch.iter().enumerate().map(|(i, m)| record(m, i as u64, 1)).collect::<Vec<_>>()}),
        expected: Expected::Batch {
            failures: Vec::new(),
            side_effects: batch.len(),
        },
        shows: "a FIFO batch with two groups (`acme:cus_A`, `acme:cus_B`): groups run side by side, each in order".to_owned(),
        timestamped: false,
    });

    // One event twice in a batch: a late copy sent with a new deduplication id (after the
    // queue's five-minute window), as the receiver's lease takeover or a replay tool would.
    let body = br#"{"action":"completed","check_run":{"id":4242,"conclusion":"success"}}"#;
    let headers = testkit::github_headers("6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b10", body);
    let first = message(specs, "github", &headers, body, message_id(2, 1));
    let mut late = message(specs, "github", &headers, body, message_id(2, 2));
    late.dedup = format!("{}-late", late.dedup);
    out.push(Sample {
        file: "sqs-duplicate.json".to_owned(),
        function: Function::Consumer,
        event: json!({"Records": [record(&first, 10, 1), record(&late, 11, 1)]}),
        expected: Expected::Batch {
            failures: Vec::new(),
            side_effects: 1,
        },
        shows: format!(
            "the same event (`{}`) twice: the second is acknowledged without a side effect (`DuplicateDelivery`)",
            first.key
        ),
        timestamped: false,
    });

    // An unparseable body, in a group with a later message: both come back; the other group completes.
    let stripe_body = br#"{"id":"evt_3QdemoQueue000001","object":"event","type":"charge.refunded","data":{"object":{"id":"ch_1"}}}"#;
    let stripe_headers = vec![(
        "stripe-signature",
        testkit::stripe_signature(stripe_body, FIXED_EPOCH_S),
    )];
    let ok = message(
        specs,
        "stripe",
        &stripe_headers,
        stripe_body,
        message_id(3, 1),
    );
    let shop_body = br#"{"id":820982911946154599,"total_price":"5.00"}"#;
    let shop_headers = vec![
        (
            "x-shopify-hmac-sha256",
            testkit::shopify_signature(shop_body),
        ),
        (
            "x-shopify-event-id",
            "98880550-7158-44d4-b7cd-2c97c8a09200".to_owned(),
        ),
    ];
    let later = message(specs, "shop", &shop_headers, shop_body, message_id(3, 3));
    let broken = Message {
        message_id: message_id(3, 2),
        key: String::new(),
        group: later.group.clone(),
        dedup: "not-an-envelope".to_owned(),
        body: "{\"v\":1,\"key\":\"shop:".to_owned(),
    };
    out.push(Sample {
        file: "sqs-unparseable.json".to_owned(),
        function: Function::Consumer,
        event: json!({"Records": [record(&ok, 20, 1), record(&broken, 21, 3), record(&later, 22, 1)]}),
        expected: Expected::Batch {
            failures: vec![broken.message_id.clone(), later.message_id.clone()],
            side_effects: 1,
        },
        shows: "a body that is not an envelope: reported failed (to the DLQ after `maxReceiveCount`), with the later message of its group held back; the other group completes".to_owned(),
        timestamped: false,
    });
}

// ---- helpers ----

trait ReplaceBytes {
    fn replace_bytes(self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl ReplaceBytes for Vec<u8> {
    fn replace_bytes(self, from: &[u8], to: &[u8]) -> Vec<u8> {
        String::from_utf8_lossy(&self)
            .replace(
                std::str::from_utf8(from).unwrap_or_default(),
                std::str::from_utf8(to).unwrap_or_default(),
            )
            .into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_names_are_unique() {
        let a = generate(FIXED_EPOCH_S + 50);
        let b = generate(FIXED_EPOCH_S + 50);
        assert_eq!(
            a.iter().map(Sample::text).collect::<Vec<_>>(),
            b.iter().map(Sample::text).collect::<Vec<_>>()
        );
        let mut names: Vec<&str> = a.iter().map(|s| s.file.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), a.len());
        for s in &a {
            if s.timestamped {
                assert_eq!(
                    generated_at(&s.event),
                    Some(FIXED_EPOCH_S + 50),
                    "{}",
                    s.file
                );
            }
        }
    }
}
