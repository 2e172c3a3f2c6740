//! The queue message: a JSON envelope around the raw body, sent to SQS FIFO with the key as
//! `MessageDeduplicationId` (the operation, not the delivery) and the configured group, both
//! made SQS-safe by [`Outgoing::new`] (the rule is [`crate::fifo`]'s).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::fifo;

/// The envelope's version.
pub const ENVELOPE_VERSION: u32 = 1;

/// SQS's largest message (the template's `MaximumMessageSize`): an envelope longer than this
/// carries a [`BodyRef`] to the body in the payload bucket instead of the body.
pub const SQS_MAX_MESSAGE_BYTES: usize = 1_048_576;

/// The longest replay id (`inbox-ops replay`), letters, digits, `-` and `_`.
pub const MAX_REPLAY_ID_LEN: usize = 64;

/// The longest envelope the receiver sends with the body in it: SQS's limit less room for a
/// replay's `"replay_id"` field, so that a replay of the archived envelope fits too.
pub const MAX_INLINE_ENVELOPE_BYTES: usize = SQS_MAX_MESSAGE_BYTES - 128;

/// Where the body is when the envelope does not carry it (docs/design.md §12): an object
/// of the payload bucket holding the raw body, its SHA-256 and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyRef {
    /// The object key, relative to the bucket (`payloads/<source>/<sha256 of key>/<sha256>`).
    pub s3_key: String,
    pub sha256: String,
    pub size: u64,
}

/// What travels on the queue.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Envelope {
    pub v: u32,
    pub key: String,
    pub source: String,
    /// Epoch milliseconds of the first receipt. Bookkeeping only: never part of an id.
    pub received_at: i64,
    pub payload_sha256: String,
    /// The source's signature, id and content-type headers, lowercase names.
    pub headers: BTreeMap<String, String>,
    /// The raw body: as is where it is text SQS carries ([`sqs_can_carry`]), else base64 with
    /// `body_encoding: "base64"`. Empty (absent on the wire) where `body_ref` points to it.
    #[serde(default)]
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_encoding: Option<String>,
    /// The body in the payload bucket, when the envelope with the body would not fit the queue.
    #[serde(default)]
    pub body_ref: Option<BodyRef>,
    /// Set by `inbox-ops replay`: the side effect runs once more for this replay id, even
    /// where the key is COMPLETED (docs/design.md §12).
    #[serde(default)]
    pub replay_id: Option<String>,
    /// The event's type where the source says where it is (docs/design.md §5); absent
    /// otherwise. Input like the rest: routing reads it only after the envelope is admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// Set by `inbox-ops replay --destination`: the replay runs for this destination only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Where the event sat in a signed batch (docs/design.md §14); absent for a request of
    /// one event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchPlace>,
    /// The event's trace context as the receiver left it (W3C `traceparent`: the trace id and
    /// the receiver's span; docs/operations.md, "Traces"). Input like the rest: the consumer
    /// reads it with [`crate::trace::TraceContext::parse`] and starts a new trace where it
    /// does not read (a log line, never a refusal). Absent in envelopes of before issue 39.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// An event of a batch: the SHA-256 of the whole signed body its bytes were cut from, its
/// position there (from 0) and the number of events (docs/design.md §14).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchPlace {
    pub sha256: String,
    pub index: usize,
    pub count: usize,
}

/// An event's part of its envelope, borrowed: what every envelope of the event carries,
/// whether its body travels inline or in the payload bucket (docs/design.md §5).
#[derive(Clone, Copy, Debug)]
pub struct EventParts<'a> {
    pub key: &'a str,
    pub source: &'a str,
    /// Epoch milliseconds of the receipt.
    pub received_at: i64,
    pub payload_sha256: &'a str,
    pub headers: &'a BTreeMap<String, String>,
    pub event_type: Option<&'a str>,
    /// Where it sat in a signed batch (§14); `None` for a request of one event.
    pub batch: Option<&'a BatchPlace>,
    /// The trace context the consumer continues (`traceparent`).
    pub traceparent: Option<&'a str>,
}

/// A message that cannot be read back.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvelopeError {
    #[error("not an envelope: {0}")]
    Json(String),
    #[error("unsupported envelope version {0}")]
    Version(u32),
    #[error("body_encoding `{0}` is not known")]
    Encoding(String),
    #[error("the base64 body does not decode")]
    Base64,
    #[error("the body is in the payload bucket: {0}")]
    InBucket(String),
}

impl Envelope {
    /// The claim a receiver that accepted this envelope's event made (docs/design.md §4), its
    /// lease run out at `now_ms`: what the consumer's take requires of the ledger (§5). For
    /// fixtures and tools that stand for a receiver: the demo's consumer samples, tests that
    /// put an envelope on a queue themselves.
    pub fn accepted_claim(&self, now_ms: i64, retention_hours: u64) -> crate::ledger::Claim {
        let (response_status, response_body) = crate::answer::accepted_response(&self.key);
        crate::ledger::Claim {
            key: self.key.clone(),
            source: self.source.clone(),
            payload_sha256: self.payload_sha256.clone(),
            owner: "receiver-standing-in".to_owned(),
            now_ms,
            lease_until_ms: now_ms,
            expires_at: crate::ledger::expires_at(now_ms, retention_hours),
            response_status,
            response_body,
            event_type: self.event_type.clone(),
            trace_id: self.trace_id(),
        }
    }

    /// The event's trace id (32 hex digits), where its `traceparent` reads as W3C: what the
    /// claim stores, and what `inbox-ops why` shows of a dead letter (the envelope keeps it
    /// through the dead-letter queue and a redrive).
    pub fn trace_id(&self) -> Option<String> {
        self.traceparent
            .as_deref()
            .and_then(|t| crate::trace::TraceContext::parse(t).ok())
            .map(|cx| cx.trace_id())
    }

    pub fn new(
        key: &str,
        source: &str,
        received_at: i64,
        payload_sha256: &str,
        headers: BTreeMap<String, String>,
        body: &[u8],
    ) -> Self {
        let (body, body_encoding) = encode_body(body);
        Self {
            v: ENVELOPE_VERSION,
            key: key.to_owned(),
            source: source.to_owned(),
            received_at,
            payload_sha256: payload_sha256.to_owned(),
            headers,
            body: body.into_owned(),
            body_encoding: body_encoding.map(str::to_owned),
            body_ref: None,
            replay_id: None,
            event_type: None,
            destination: None,
            batch: None,
            traceparent: None,
        }
    }

    /// The same envelope carrying the event's type.
    pub fn with_event_type(self, event_type: Option<String>) -> Self {
        Self { event_type, ..self }
    }

    pub fn to_json(&self) -> String {
        Wire {
            v: self.v,
            body: self.body_ref.is_none().then_some(Cow::Borrowed(&self.body)),
            body_encoding: self.body_encoding.as_deref(),
            body_ref: self.body_ref.as_ref(),
            replay_id: self.replay_id.as_deref(),
            destination: self.destination.as_deref(),
            ..Wire::event(&EventParts {
                key: &self.key,
                source: &self.source,
                received_at: self.received_at,
                payload_sha256: &self.payload_sha256,
                headers: &self.headers,
                event_type: self.event_type.as_deref(),
                batch: self.batch.as_ref(),
                traceparent: self.traceparent.as_deref(),
            })
        }
        .to_json()
    }

    /// The JSON of an envelope whose body is in the payload bucket, at `body_ref`.
    pub fn json_with_ref(
        key: &str,
        source: &str,
        received_at: i64,
        payload_sha256: &str,
        headers: &BTreeMap<String, String>,
        event_type: Option<&str>,
        body_ref: &BodyRef,
    ) -> String {
        let event = EventParts {
            key,
            source,
            received_at,
            payload_sha256,
            headers,
            event_type,
            batch: None,
            traceparent: None,
        };
        Self::event_json_with_ref(&event, body_ref)
    }

    /// [`Self::json_with_ref`] of an event's parts (of a batch, where `event.batch` says).
    pub fn event_json_with_ref(event: &EventParts<'_>, body_ref: &BodyRef) -> String {
        Wire {
            body_ref: Some(body_ref),
            ..Wire::event(event)
        }
        .to_json()
    }

    /// The JSON of `Envelope::new(..)` written straight from borrowed parts: the body is
    /// copied once, into the JSON, instead of into an owned envelope first (up to 1 MiB per
    /// request on the receiver's path; larger bodies go to the bucket). Same text as `Envelope::new(..).to_json()`.
    pub fn json_of(
        key: &str,
        source: &str,
        received_at: i64,
        payload_sha256: &str,
        headers: &BTreeMap<String, String>,
        event_type: Option<&str>,
        body: &[u8],
    ) -> String {
        let event = EventParts {
            key,
            source,
            received_at,
            payload_sha256,
            headers,
            event_type,
            batch: None,
            traceparent: None,
        };
        Self::event_json(&event, body)
    }

    /// [`Self::json_of`] of an event's parts (of a batch, where `event.batch` says).
    pub fn event_json(event: &EventParts<'_>, body: &[u8]) -> String {
        let (body, body_encoding) = encode_body(body);
        Wire {
            body: Some(body),
            body_encoding,
            ..Wire::event(event)
        }
        .to_json()
    }

    pub fn parse(text: &str) -> Result<Self, EnvelopeError> {
        let env: Envelope =
            serde_json::from_str(text).map_err(|e| EnvelopeError::Json(e.to_string()))?;
        if env.v != ENVELOPE_VERSION {
            return Err(EnvelopeError::Version(env.v));
        }
        if let Some(enc) = env.body_encoding.as_deref() {
            if enc != "base64" {
                return Err(EnvelopeError::Encoding(enc.to_owned()));
            }
        }
        Ok(env)
    }

    /// The raw body, exactly as received, where the envelope carries it (an envelope with a
    /// [`BodyRef`] is [`EnvelopeError::InBucket`]: the consumer reads the object instead).
    pub fn body_bytes(&self) -> Result<Vec<u8>, EnvelopeError> {
        if let Some(r) = &self.body_ref {
            return Err(EnvelopeError::InBucket(r.s3_key.clone()));
        }
        match self.body_encoding.as_deref() {
            None => Ok(self.body.as_bytes().to_vec()),
            Some(_) => base64::engine::general_purpose::STANDARD
                .decode(&self.body)
                .map_err(|_| EnvelopeError::Base64),
        }
    }
}

/// A character SQS accepts in a message body: `#x9 | #xA | #xD | #x20-#xD7FF |
/// #xE000-#xFFFD | #x10000-#x10FFFF` (its documented set). It refuses a message holding any
/// other, such as U+FFFE, U+FFFF or U+0001, on every retry.
pub fn sqs_can_carry(c: char) -> bool {
    matches!(u32::from(c), 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// The body as the envelope carries it: the text where it is UTF-8 of characters SQS carries,
/// else base64 (and the encoding's name). (JSON escapes the controls below U+0020 but not
/// U+FFFE or U+FFFF: only base64 carries those.)
fn encode_body(body: &[u8]) -> (Cow<'_, str>, Option<&'static str>) {
    match std::str::from_utf8(body) {
        Ok(text) if text.chars().all(sqs_can_carry) => (Cow::Borrowed(text), None),
        _ => (
            Cow::Owned(base64::engine::general_purpose::STANDARD.encode(body)),
            Some("base64"),
        ),
    }
}

/// `Envelope`'s fields, in its order, borrowed: the one writer of the queue text, for an
/// owned envelope and for the receiver's borrowed parts alike.
#[derive(Serialize)]
struct Wire<'a> {
    v: u32,
    key: &'a str,
    source: &'a str,
    received_at: i64,
    payload_sha256: &'a str,
    headers: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_encoding: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_ref: Option<&'a BodyRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch: Option<&'a BatchPlace>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traceparent: Option<&'a str>,
}

impl<'a> Wire<'a> {
    /// The event's part of an envelope, the one place its fields are filled in; the body, its
    /// pointer and a replay id are added where there is one.
    fn event(event: &EventParts<'a>) -> Wire<'a> {
        Wire {
            v: ENVELOPE_VERSION,
            key: event.key,
            source: event.source,
            received_at: event.received_at,
            payload_sha256: event.payload_sha256,
            headers: event.headers,
            body: None,
            body_encoding: None,
            body_ref: None,
            replay_id: None,
            event_type: event.event_type,
            destination: None,
            batch: event.batch,
            traceparent: event.traceparent,
        }
    }

    fn to_json(&self) -> String {
        // Sized up front: growing a 1 MiB string by doubling copies it a score of times.
        let body_len = self.body.as_ref().map_or(0, |b| b.len());
        let room = body_len + body_len / 16 + self.key.len() * 2 + 512;
        let mut out = Vec::with_capacity(room);
        // Serializing plain strings and maps into a Vec cannot fail, and writes UTF-8.
        match serde_json::to_writer(&mut out, self) {
            Ok(()) => String::from_utf8(out).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }
}

/// One message to send. Built only by [`Outgoing::new`], so its ids are always ones SQS
/// accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    group_id: String,
    dedup_id: String,
    body: String,
    /// X-Ray's form of the envelope's trace context, sent as the `AWSTraceHeader` system
    /// attribute (docs/operations.md, "Traces"); the envelope's `traceparent` is what the
    /// consumer reads.
    trace_header: Option<String>,
}

impl Outgoing {
    /// A message of FIFO group `group` deduplicated by `dedup` (an event's key): each id is
    /// made SQS-safe by [`fifo::sqs_id`] (the value itself where SQS takes it, else its
    /// SHA-256), so the same values always give the same ids.
    pub fn new(group: &str, dedup: &str, body: String) -> Self {
        Self {
            group_id: fifo::sqs_id(group),
            dedup_id: fifo::sqs_id(dedup),
            body,
            trace_header: None,
        }
    }

    /// The same message carrying `trace`'s X-Ray header as its `AWSTraceHeader`.
    pub fn with_trace(self, trace: Option<&crate::trace::TraceContext>) -> Self {
        Self {
            trace_header: trace.map(crate::trace::TraceContext::xray_header),
            ..self
        }
    }

    /// The `AWSTraceHeader` system attribute, where the message carries one.
    pub fn trace_header(&self) -> Option<&str> {
        self.trace_header.as_deref()
    }

    /// The `MessageGroupId` (FIFO queues only).
    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    /// The `MessageDeduplicationId` (FIFO queues only).
    pub fn dedup_id(&self) -> &str {
        &self.dedup_id
    }

    /// The message body: the envelope's JSON.
    pub fn body(&self) -> &str {
        &self.body
    }
}

/// A failed send.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("queue unavailable: {0}")]
pub struct QueueError(pub String);

/// The queue's port. It takes the message by value: the body (an envelope of up to 1 MiB)
/// moves into the request instead of being copied.
pub trait Queue: Send + Sync + 'static {
    fn send(&self, msg: Outgoing) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Sends the events of one request (docs/design.md §14): one result per message, in
    /// order. Messages sharing a FIFO group go in the order given. By default each is
    /// [`Queue::send`], concurrently, a group's messages one after another; [`SqsQueue`]
    /// sends SendMessageBatch calls.
    fn send_batch(
        &self,
        msgs: Vec<Outgoing>,
    ) -> impl Future<Output = Vec<Result<(), QueueError>>> + Send {
        sending::one_by_one(self, msgs)
    }
}

impl<T: Queue> Queue for std::sync::Arc<T> {
    fn send(&self, msg: Outgoing) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).send(msg)
    }
    fn send_batch(
        &self,
        msgs: Vec<Outgoing>,
    ) -> impl Future<Output = Vec<Result<(), QueueError>>> + Send {
        (**self).send_batch(msgs)
    }
}

mod memory;
mod sending;
pub use memory::MemoryQueue;
pub(crate) use sending::aws_trace_header;
pub use sending::{group_runs, SEND_BATCH_BYTES, SEND_BATCH_ENTRIES};

/// SQS: FIFO where the URL ends in `.fifo` (group and deduplication ids set), standard
/// otherwise (neither is allowed there).
#[derive(Clone, Debug)]
pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    url: String,
    fifo: bool,
}

impl SqsQueue {
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        let url = url.into();
        let fifo = url.ends_with(".fifo");
        Self { client, url, fifo }
    }

    /// The queue's ARN (`GetQueueAttributes QueueArn`): what an event source mapping's records
    /// carry as `eventSourceARN`, and what a message move task names.
    pub async fn arn(&self) -> Result<String, QueueError> {
        let name = aws_sdk_sqs::types::QueueAttributeName::QueueArn;
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(name.clone())
            .send()
            .await
            .map_err(|e| {
                QueueError(format!(
                    "GetQueueAttributes {}: {}",
                    self.url,
                    aws_sdk_sqs::error::DisplayErrorContext(e)
                ))
            })?;
        out.attributes()
            .and_then(|a| a.get(&name))
            .cloned()
            .ok_or_else(|| QueueError(format!("no QueueArn for {}", self.url)))
    }
}

impl Queue for SqsQueue {
    async fn send(&self, msg: Outgoing) -> Result<(), QueueError> {
        let mut req = self
            .client
            .send_message()
            .queue_url(&self.url)
            .message_body(msg.body);
        if self.fifo {
            req = req
                .message_group_id(msg.group_id)
                .message_deduplication_id(msg.dedup_id);
        }
        if let Some(header) = sending::aws_trace_header(msg.trace_header.as_deref()) {
            req = req.message_system_attributes(
                aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader,
                header,
            );
        }
        req.send()
            .await
            .map(|_| ())
            .map_err(|e| QueueError(aws_sdk_sqs::error::DisplayErrorContext(e).to_string()))
    }

    /// SendMessageBatch, 10 entries and 1 MiB a call; calls sharing no group at once, calls
    /// linked by a group one after another. An entry SQS lists as failed, or every entry of
    /// a call that failed, is that message's error.
    async fn send_batch(&self, msgs: Vec<Outgoing>) -> Vec<Result<(), QueueError>> {
        self.send_calls(msgs).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_s_trace_id_is_its_traceparent_s_where_that_reads() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        let mut env = Envelope::new("github:1", "github", 1, "sha", BTreeMap::new(), b"{}");
        assert_eq!(env.trace_id(), None);
        env.traceparent = Some(format!("00-{id}-00f067aa0ba902b7-01"));
        assert_eq!(env.trace_id().as_deref(), Some(id));
        assert_eq!(env.accepted_claim(1, 1).trace_id.as_deref(), Some(id));
        env.traceparent = Some("00-garbage".into());
        assert_eq!(env.trace_id(), None);
    }

    #[test]
    fn an_event_of_a_batch_carries_its_place_last_and_reads_back() {
        let place = BatchPlace {
            sha256: "b".repeat(64),
            index: 2,
            count: 3,
        };
        let headers = BTreeMap::new();
        let event = EventParts {
            key: "a:1",
            source: "a",
            received_at: 5,
            payload_sha256: "h",
            headers: &headers,
            event_type: None,
            batch: Some(&place),
            traceparent: None,
        };
        let text = Envelope::event_json(&event, b"{}");
        assert!(
            text.ends_with(&format!(
                r#","batch":{{"sha256":"{}","index":2,"count":3}}}}"#,
                "b".repeat(64)
            )),
            "{text}"
        );
        let env = Envelope::parse(&text).expect("reads back");
        assert_eq!(env.batch.as_ref(), Some(&place));
        assert_eq!(env.to_json(), text);
        // Without a place, no field: the text of an event alone is unchanged.
        assert!(
            !Envelope::json_of("a:1", "a", 5, "h", &BTreeMap::new(), None, b"{}").contains("batch")
        );
    }

    #[test]
    fn outgoing_ids_are_made_sqs_safe() {
        let msg = Outgoing::new("acme:cus_1", "acme:msg_1", "{}".to_owned());
        assert_eq!(msg.group_id(), "acme:cus_1");
        assert_eq!(msg.dedup_id(), "acme:msg_1");
        assert_eq!(msg.body(), "{}");
        let long = format!("s:{}", "x".repeat(200));
        let msg = Outgoing::new(&long, "s:a b", String::new());
        assert_eq!(msg.group_id(), crate::key::sha256_hex(long.as_bytes()));
        assert_eq!(msg.dedup_id(), crate::key::sha256_hex(b"s:a b"));
    }

    #[test]
    fn envelope_round_trips_text_and_binary_bodies() {
        let headers = BTreeMap::from([("webhook-id".to_owned(), "msg_1".to_owned())]);
        let text = Envelope::new("a:1", "a", 5, "h", headers.clone(), br#"{"x":1}"#);
        assert_eq!(text.body_encoding, None);
        let back = Envelope::parse(&text.to_json()).unwrap();
        assert_eq!(back, text);
        assert_eq!(back.body_bytes().unwrap(), br#"{"x":1}"#);

        let binary = Envelope::new("a:1", "a", 5, "h", headers, &[0xff, 0x00, 0x80]);
        assert_eq!(binary.body_encoding.as_deref(), Some("base64"));
        let back = Envelope::parse(&binary.to_json()).unwrap();
        assert_eq!(back.body_bytes().unwrap(), vec![0xff, 0x00, 0x80]);
    }

    #[test]
    fn json_of_writes_what_to_json_writes() {
        let headers = BTreeMap::from([
            ("content-type".to_owned(), "application/json".to_owned()),
            ("webhook-id".to_owned(), "msg_\"1\"".to_owned()),
        ]);
        for body in [
            &br#"{"x":"caf\u00e9 \\ \n"}"#[..],
            "caf\u{e9}".as_bytes(),
            &[0xff, 0x00, 0x80],
            b"",
        ] {
            let owned = Envelope::new("a:1", "a", 5, "h", headers.clone(), body).to_json();
            assert_eq!(
                Envelope::json_of("a:1", "a", 5, "h", &headers, None, body),
                owned
            );
        }
    }

    #[test]
    fn the_queue_text_is_the_documented_envelope() {
        let headers = BTreeMap::from([("webhook-id".to_owned(), "msg_1".to_owned())]);
        assert_eq!(
            Envelope::json_of("a:msg_1", "a", 5, "h", &headers, None, br#"{"x":1}"#),
            r#"{"v":1,"key":"a:msg_1","source":"a","received_at":5,"payload_sha256":"h","headers":{"webhook-id":"msg_1"},"body":"{\"x\":1}"}"#
        );
        assert_eq!(
            Envelope::json_of("a:msg_1", "a", 5, "h", &headers, None, &[0xff, 0x00]),
            r#"{"v":1,"key":"a:msg_1","source":"a","received_at":5,"payload_sha256":"h","headers":{"webhook-id":"msg_1"},"body":"/wA=","body_encoding":"base64"}"#
        );
    }

    #[test]
    fn a_pointer_envelope_round_trips_without_a_body() {
        let headers = BTreeMap::from([("webhook-id".to_owned(), "msg_1".to_owned())]);
        let r = BodyRef {
            s3_key: "payloads/a/k/h".into(),
            sha256: "h".into(),
            size: 3,
        };
        let text = Envelope::json_with_ref("a:msg_1", "a", 5, "h", &headers, None, &r);
        assert_eq!(
            text,
            r#"{"v":1,"key":"a:msg_1","source":"a","received_at":5,"payload_sha256":"h","headers":{"webhook-id":"msg_1"},"body_ref":{"s3_key":"payloads/a/k/h","sha256":"h","size":3}}"#
        );
        let back = Envelope::parse(&text).unwrap();
        assert_eq!(back.body_ref.as_ref(), Some(&r));
        assert_eq!(back.to_json(), text);
        assert_eq!(
            back.body_bytes(),
            Err(EnvelopeError::InBucket("payloads/a/k/h".into()))
        );
        let mut replay = Envelope::parse(&text).unwrap();
        replay.replay_id = Some("rp-1".into());
        assert!(replay.to_json().ends_with(r#","replay_id":"rp-1"}"#));
        assert_eq!(Envelope::parse(&replay.to_json()).unwrap(), replay);
    }

    #[test]
    fn bad_envelopes_are_errors() {
        assert!(matches!(
            Envelope::parse("nope"),
            Err(EnvelopeError::Json(_))
        ));
        let mut e = Envelope::new("a:1", "a", 5, "h", BTreeMap::new(), b"x");
        e.v = 2;
        assert_eq!(
            Envelope::parse(&e.to_json()),
            Err(EnvelopeError::Version(2))
        );
        e.v = 1;
        e.body_encoding = Some("rot13".into());
        assert!(matches!(
            Envelope::parse(&e.to_json()),
            Err(EnvelopeError::Encoding(_))
        ));
        e.body_encoding = Some("base64".into());
        e.body = "%%%".into();
        assert_eq!(
            Envelope::parse(&e.to_json()).unwrap().body_bytes(),
            Err(EnvelopeError::Base64)
        );
    }

    #[test]
    fn bodies_sqs_cannot_carry_as_text_travel_base64() {
        let headers = BTreeMap::from([("webhook-id".to_owned(), "msg_1".to_owned())]);
        for body in [
            "{\"a\":\"\u{FFFE}\"}",
            "{\"a\":\"\u{FFFF}\"}",
            "x\u{1}y",
            "x\u{1F}",
            "\u{10FFFF}\u{FFFF}",
        ] {
            let text = Envelope::json_of("a:1", "a", 5, "h", &headers, None, body.as_bytes());
            assert!(text.chars().all(sqs_can_carry), "{body:?}: {text}");
            let back = Envelope::parse(&text).unwrap();
            assert_eq!(back.body_encoding.as_deref(), Some("base64"));
            assert_eq!(back.body_bytes().unwrap(), body.as_bytes());
        }
        // What SQS carries stays text, the envelope as it was.
        for body in [
            "caf\u{e9} \u{FFFD} \u{10000}\t\r\n",
            "{\"a\":\"\u{D7FF}\u{E000}\"}",
        ] {
            let env = Envelope::new("a:1", "a", 5, "h", headers.clone(), body.as_bytes());
            assert_eq!(env.body_encoding, None, "{body:?}");
            assert!(env.to_json().chars().all(sqs_can_carry));
        }
    }

    #[test]
    fn sqs_set_is_the_documented_one() {
        for c in [
            '\u{0}', '\u{1}', '\u{8}', '\u{B}', '\u{1F}', '\u{FFFE}', '\u{FFFF}',
        ] {
            assert!(!sqs_can_carry(c), "{c:?}");
        }
        for c in [
            '\t',
            '\n',
            '\r',
            ' ',
            '\u{7F}',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFD}',
            '\u{10000}',
            '\u{10FFFF}',
        ] {
            assert!(sqs_can_carry(c), "{c:?}");
        }
    }
}
