//! The consumer's samples: SQS FIFO batches whose bodies are envelopes built as the receiver
//! builds them (two groups side by side, a late duplicate, a body that is not an envelope).

use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::config::SourceSpecs;
use inbox::fifo::sqs_id;
use inbox::queue::Envelope;
use serde_json::{json, Value};

use super::{Expected, Function, Sample, FIXED_EPOCH_S, QUEUE_ARN};
use devstack::senders::{GitHub, Sender as _, Shopify, Stripe};
use devstack::testkit::{self, TEST_SECRET};

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
    let json = inbox::key::fields(body, &spec.key, &spec.group).ok();
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
    let headers = testkit::standard_webhooks().headers(id, FIXED_EPOCH_S, &body);
    message(specs, "acme", &headers, &body, mid)
}

#[allow(clippy::too_many_lines, reason = "one sample per case, listed")]
pub fn samples(out: &mut Vec<Sample>, specs: &SourceSpecs) {
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
    let headers = GitHub::new(TEST_SECRET).headers(
        "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b10",
        FIXED_EPOCH_S,
        body,
    );
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
        Stripe::new(TEST_SECRET).signature(FIXED_EPOCH_S, stripe_body),
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
            Shopify::new(TEST_SECRET).signature(shop_body),
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

/// Claims the key of each message of a consumer sample (an SQS event) as the receiver that
/// accepted its event would have ([`devstack::testkit::accept`]): these samples stand for
/// messages a receiver enqueued, and the consumer takes nothing else (docs/design.md §5).
pub async fn accept_sample(
    ledger: &impl inbox::ledger::LedgerStore,
    event: &Value,
) -> anyhow::Result<usize> {
    let records = event
        .get("Records")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    testkit::accept(
        ledger,
        records
            .iter()
            .filter_map(|r| r.get("body").and_then(Value::as_str)),
    )
    .await
}
