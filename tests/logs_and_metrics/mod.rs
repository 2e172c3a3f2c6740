//! Operating it, end to end against the local AWS API server:
//!
//! - the logs: the binaries' own subscriber (`init_default_subscriber`, with
//!   `AWS_LAMBDA_LOG_FORMAT=JSON`) writing to a buffer; a known scenario through the real
//!   receiver and consumer, each invocation inside the span the Lambda runtime opens for it;
//!   every outcome line names its source, key and the invocation's request id, and no line
//!   holds a secret, a signature or a body;
//! - the EMF metrics of that scenario, counted exactly;
//! - a throttled forward and a dead letter the consumer moves: their lines and counts.
//!
//! The dead-letter tools (`inbox-ops why|redrive|lookup`) are tested in `crates/ops/tests`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::types::MessageSystemAttributeName as Sys;
use devstack::bridge::Bridge;
use devstack::faults::When;
use devstack::testkit::apigw::ApiGatewayEvent;
use devstack::testkit::{
    self, github_headers, LocalAws, SystemOfRecord, TestReceiver, TEST_SECRET, TEST_WHSEC,
};
use inbox::clock::SystemClock;
use inbox::consumer::{Consumer, ConsumerSettings, Processor};
use inbox::forward::HttpForwarder;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{Claim, LedgerStore as _};
use inbox::metrics::{tally, Metric, Metrics};
use inbox::receiver::{accepted_response, ReceiverSettings};
use inbox::redelivery::SqsRedelivery;
use lambda_runtime::layers::trace::request_span;
use lambda_runtime::tracing::subscriber::fmt::MakeWriter;
use lambda_runtime::LambdaEvent;
use serde_json::Value;
use tracing::Instrument as _;

/// Every body in this file carries it, so a body that leaks into a log is found.
const BODY_MARKER: &str = "body-marker-7f3a";

mod outcomes;
mod throttled;

/// The tests of this module set the process's global subscriber and read every line it writes:
/// they run in a process of their own, apart from the other modules' tests and their lines.
#[test]
fn in_its_own_process() {
    crate::support::in_own_process("logs_and_metrics::", 3);
}

// --- the log buffer ---------------------------------------------------------------------------

/// Where the subscriber writes: one buffer for the process (a global subscriber).
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("log buffer").clone()).expect("UTF-8 logs")
    }
}

/// The binaries' subscriber, as Lambda configures it (template: `LogFormat: JSON`), into a buffer.
fn logs() -> &'static Buffer {
    crate::support::own_process_only();
    static LOGS: OnceLock<Buffer> = OnceLock::new();
    LOGS.get_or_init(|| {
        std::env::set_var("AWS_LAMBDA_LOG_FORMAT", "JSON");
        std::env::set_var("AWS_LAMBDA_LOG_LEVEL", "INFO");
        std::env::remove_var("RUST_LOG");
        let buffer = Buffer::default();
        lambda_runtime::tracing::init_default_subscriber_with_writer(buffer.clone());
        buffer
    })
}

/// One JSON log line.
struct Line(Value);

impl Line {
    /// A field of the event, else of its spans (innermost first).
    fn get(&self, name: &str) -> Option<&str> {
        let spans = self.0["spans"].as_array().into_iter().flatten().rev();
        std::iter::once(&self.0["fields"])
            .chain(spans)
            .find_map(|v| v.get(name).and_then(Value::as_str))
    }

    /// The Lambda runtime's span field.
    fn request_id(&self) -> Option<&str> {
        self.0["spans"]
            .as_array()?
            .iter()
            .find_map(|s| s.get("requestId").and_then(Value::as_str))
    }
}

fn parsed(text: &str) -> Vec<Line> {
    text.lines()
        .map(|l| {
            Line(
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}")),
            )
        })
        .collect()
}

/// The lines with this outcome and key, logged by this invocation.
fn outcome<'a>(
    lines: &'a [Line],
    outcome: &str,
    key: Option<&str>,
    request_id: &str,
) -> Vec<&'a Line> {
    lines
        .iter()
        .filter(|l| l.get("outcome") == Some(outcome))
        .filter(|l| l.request_id() == Some(request_id))
        .filter(|l| key.is_none() || l.get("key") == key)
        .collect()
}

// --- invocations, as the Lambda runtime makes them --------------------------------------------

fn apigw_event(source: &str, headers: &[(&str, String)], body: &[u8]) -> ApiGatewayV2httpRequest {
    ApiGatewayEvent::post(source)
        .headers(headers.iter().map(|(k, v)| (*k, v)))
        .body(body)
        .request()
}

/// One receiver invocation inside the runtime's request span; the status and the request id.
async fn post(
    rx: &TestReceiver,
    source: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (u16, String) {
    let request_id = testkit::unique("rx");
    let ctx = testkit::context(&request_id, testkit::now_ms() + 10_000);
    let span = request_span(&ctx);
    let resp = rx
        .handle_event(LambdaEvent::new(apigw_event(source, headers, body), ctx))
        .instrument(span)
        .await
        .expect("infallible");
    (
        u16::try_from(resp.status_code).expect("a status"),
        request_id,
    )
}

/// One consumer invocation inside the runtime's request span; the answer and the request id.
async fn invoke<P: Processor, W: inbox::consumer::Wired>(
    cx: &Consumer<DynamoLedger, P, SystemClock, W>,
    event: SqsEvent,
) -> (SqsBatchResponse, String) {
    let request_id = testkit::unique("cx");
    let ctx = testkit::context(&request_id, testkit::now_ms() + 30_000);
    let span = request_span(&ctx);
    let resp = cx
        .handle_event(LambdaEvent::new(event, ctx))
        .instrument(span)
        .await
        .expect("infallible");
    (resp, request_id)
}

fn failed_ids(resp: &SqsBatchResponse) -> Vec<String> {
    resp.batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

fn body(n: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{n},"note":"{BODY_MARKER}-{n}"}}"#).into_bytes()
}

/// A system of record that, while a call is in flight, lets "another invocation" take the key
/// over in the ledger, then answers 200: the consumer's side effect ran, its lease is gone.
struct LeaseThief {
    url: String,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LeaseThief {
    fn start(aws: &LocalAws) -> LeaseThief {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let port = server.server_addr().to_ip().expect("IP").port();
        let (steal_tx, mut steal_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (dynamo, table) = (aws.dynamo.clone(), aws.resources.table.clone());
        tokio::spawn(async move {
            while let Some(key) = steal_rx.recv().await {
                dynamo
                    .update_item()
                    .table_name(&table)
                    .key("pk", AttributeValue::S(key))
                    .update_expression("SET lease_owner = :other")
                    .expression_attribute_values(
                        ":other",
                        AttributeValue::S("another-invocation".into()),
                    )
                    .send()
                    .await
                    .expect("take the lease over");
                let _ = done_tx.send(());
            }
        });
        let s = server.clone();
        let thread = std::thread::spawn(move || {
            for mut request in s.incoming_requests() {
                let key = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Idempotency-Key"))
                    .map(|h| h.value.as_str().to_owned())
                    .unwrap_or_default();
                let mut sink = Vec::new();
                let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
                let _ = steal_tx.send(key);
                let _ = done_rx.recv_timeout(Duration::from_secs(10));
                let _ = request.respond(tiny_http::Response::empty(200));
            }
        });
        LeaseThief {
            url: format!("http://127.0.0.1:{port}/events"),
            server,
            thread: Some(thread),
        }
    }
}

impl Drop for LeaseThief {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
