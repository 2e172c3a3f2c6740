//! The trace context without an exporter, and the export path with one installed.
//!
//! The exporter is process-wide state, so the test that installs it runs alone in a child
//! process of this test binary (`export_in_its_own_process`), against a loopback OTLP/HTTP
//! collector. What it proves: the spans reach the collector over OTLP/HTTP JSON at
//! `/v1/traces` once per flush, under their parent's trace, with their names, attributes and
//! error status, at most `MAX_BUFFERED_SPANS` between two flushes, and nothing is sent when
//! nothing ended.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::*;
use crate::consumer::{Outcome, ProcessError};

#[test]
fn without_an_exporter_a_span_continues_its_parent_s_trace_with_a_new_id() {
    let sender = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        .expect("valid");
    let span = start(names::RECEIVE, Kind::Server, Some(&sender));
    assert!(!exporting());
    assert_eq!(span.context().trace_id(), sender.trace_id());
    assert_ne!(span.context().span_id_bytes(), sender.span_id_bytes());
    assert!(
        !span.context().is_sampled(),
        "the sender's decision is kept"
    );
    let child = child(names::TAKE, Kind::Internal, Some(span.context())).expect("a child");
    assert_eq!(child.context().trace_id(), sender.trace_id());
    assert!(super::child(names::TAKE, Kind::Internal, None).is_none());
    assert_eq!(
        format!("{span:?}"),
        format!("Span {{ context: {:?}, recording: false }}", span.context())
    );
    assert!(!span.is_recording());
}

#[test]
fn without_a_parent_a_new_sampled_trace_starts() {
    let (a, b) = (
        start(names::RECEIVE, Kind::Server, None),
        start(names::RECEIVE, Kind::Server, None),
    );
    assert_ne!(a.context().trace_id(), b.context().trace_id());
    assert!(a.context().is_sampled());
    assert_ne!(a.context().trace_id_bytes(), [0; 16]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let first = u64::from(u32::from_be_bytes(
        a.context().trace_id_bytes()[..4]
            .try_into()
            .expect("4 bytes"),
    ));
    assert!(
        now.abs_diff(first) <= 5,
        "X-Ray reads the first 4 bytes as the time"
    );
    assert_eq!(
        TraceContext::parse(&a.context().traceparent()),
        Ok(*a.context()),
        "a new trace's traceparent reads back"
    );
}

const OWN_PROCESS: &str = "INBOX_TRACE_EXPORT_OWN_PROCESS";

#[test]
fn export_in_its_own_process() {
    let exe = std::env::current_exe().expect("this test binary");
    let out = std::process::Command::new(exe)
        .args([
            "trace::tests::spans_reach_the_collector",
            "--exact",
            "--ignored",
            "--test-threads",
            "1",
        ])
        .env(OWN_PROCESS, "1")
        .env_remove("OTEL_SDK_DISABLED")
        // Blank: as if unset (the service name is then the code's).
        .env("OTEL_SERVICE_NAME", " ")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .env_remove("OTEL_EXPORTER_OTLP_TIMEOUT")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed; 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every request body the collector received, by path.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

fn collector() -> (String, Received) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind loopback");
    let port = server.server_addr().to_ip().expect("an IP listener").port();
    let received: Received = Arc::default();
    let log = received.clone();
    std::thread::spawn(move || {
        for mut request in server.incoming_requests() {
            let mut body = Vec::new();
            let _ = std::io::Read::read_to_end(request.as_reader(), &mut body);
            log.lock()
                .expect("log")
                .push((request.url().to_owned(), body));
            let _ = request.respond(tiny_http::Response::from_string("{}"));
        }
    });
    (format!("http://127.0.0.1:{port}"), received)
}

/// The spans of one OTLP/HTTP JSON request, each as `(trace id, name, attributes as
/// "key=value", status message)`.
fn spans_of(body: &[u8]) -> Vec<(String, String, Vec<String>, String)> {
    let v: Value = serde_json::from_slice(body).expect("OTLP JSON");
    let mut out = Vec::new();
    for rs in v["resourceSpans"].as_array().expect("resourceSpans") {
        for ss in rs["scopeSpans"].as_array().expect("scopeSpans") {
            for s in ss["spans"].as_array().expect("spans") {
                let attributes = s["attributes"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|kv| {
                                let value = &kv["value"];
                                let shown = value["stringValue"]
                                    .as_str()
                                    .map(str::to_owned)
                                    .unwrap_or_else(|| value["intValue"].to_string());
                                format!("{}={}", kv["key"].as_str().unwrap_or(""), shown)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                out.push((
                    s["traceId"].as_str().unwrap_or("").to_ascii_lowercase(),
                    s["name"].as_str().unwrap_or("").to_owned(),
                    attributes,
                    s["status"]["message"].as_str().unwrap_or("").to_owned(),
                ));
            }
        }
    }
    out
}

/// The endpoint read from the environment: the traces variable first, a blank one as unset,
/// none at all where the SDK is disabled.
fn which_endpoint_turns_export_on(endpoint: &str) {
    use super::export::endpoint_from_env;
    std::env::remove_var("OTEL_EXPORTER_OTLP_ENDPOINT");
    std::env::set_var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", " ");
    assert_eq!(endpoint_from_env(), None, "blank is unset");
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    assert_eq!(endpoint_from_env().as_deref(), Some(endpoint));
    let full = format!("{endpoint}/v1/traces");
    std::env::set_var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &full);
    assert_eq!(endpoint_from_env(), Some(full), "the traces variable first");
    std::env::set_var("OTEL_SDK_DISABLED", "TRUE");
    assert_eq!(endpoint_from_env(), None, "disabled");
    std::env::remove_var("OTEL_SDK_DISABLED");
    // The SDK reads the traces variable too, and refuses a blank one: unset it.
    std::env::remove_var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
}

/// The exporter installed for `endpoint`, once.
fn install(endpoint: &str) {
    which_endpoint_turns_export_on(endpoint);
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    assert!(!exporting());
    assert_eq!(
        install_from_env("unit").map_err(|e| e.to_string()),
        Ok(true)
    );
    assert!(exporting());
    assert_eq!(
        install_from_env("unit").ok(),
        Some(true),
        "a second call changes nothing"
    );
}

/// The `service.name` of the request's first resource.
fn service_name(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body).expect("OTLP JSON");
    v["resourceSpans"][0]["resource"]["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|kv| kv["key"] == "service.name")
        .and_then(|kv| kv["value"]["stringValue"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
#[ignore = "installs the exporter for the whole process: run by export_in_its_own_process"]
async fn spans_reach_the_collector() {
    assert!(
        std::env::var_os(OWN_PROCESS).is_some(),
        "run through export_in_its_own_process"
    );
    let (endpoint, received) = collector();
    install(&endpoint);

    // The receiver's span under a sampled sender, the consumer's under the envelope, a
    // destination's call that failed.
    let sender = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .expect("valid");
    let mut receive = start(names::RECEIVE, Kind::Server, Some(&sender));
    assert!(receive.is_recording());
    assert!(format!("{receive:?}").ends_with("recording: true }"));
    receive.attribute(attributes::SOURCE, "github");
    receive.failed("invalid_signature");
    let mut envelope = crate::queue::Envelope::new(
        "github:1",
        "github",
        1_000,
        &crate::key::payload_sha256(b"{}", &[]),
        Default::default(),
        b"{}",
    );
    envelope.traceparent = Some(receive.context().traceparent());
    receive.end();
    let consume = crate::consumer::spans::consume(&envelope);
    let deliver = deliver("crm", Some(consume.context()));
    crate::consumer::spans::ended(deliver, &Outcome::Failed(ProcessError("503".into())));
    drop(consume);
    // A sender that did not sample: carried on, not exported.
    let unsampled = TraceContext::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
        .expect("valid");
    drop(start(names::RECEIVE, Kind::Server, Some(&unsampled)));
    flush().await;

    let requests = received.lock().expect("log").clone();
    assert_eq!(requests.len(), 1, "one request per flush");
    assert_eq!(requests[0].0, "/v1/traces");
    assert_eq!(service_name(&requests[0].1), "unit");
    let mut spans = spans_of(&requests[0].1);
    spans.sort();
    let trace = sender.trace_id();
    assert_eq!(
        spans,
        vec![
            (
                trace.clone(),
                names::CONSUME.to_owned(),
                vec![
                    "inbox.source=github".to_owned(),
                    "inbox.key=github:1".to_owned()
                ],
                String::new()
            ),
            (
                trace.clone(),
                names::DELIVER.to_owned(),
                vec![
                    "inbox.destination=crm".to_owned(),
                    "inbox.outcome=failed".to_owned()
                ],
                "503".to_owned()
            ),
            (
                trace.clone(),
                names::RECEIVE.to_owned(),
                vec!["inbox.source=github".to_owned()],
                "invalid_signature".to_owned()
            ),
        ]
    );

    // Nothing ended since: nothing sent.
    flush().await;
    assert_eq!(received.lock().expect("log").len(), 1);

    past_the_buffer_spans_are_dropped(&sender, &received).await;
}

/// Past `MAX_BUFFERED_SPANS` between two flushes, the rest are dropped.
async fn past_the_buffer_spans_are_dropped(sender: &TraceContext, received: &Received) {
    let before = received.lock().expect("log").len();
    for _ in 0..=MAX_BUFFERED_SPANS {
        drop(start(names::TAKE, Kind::Internal, Some(sender)));
    }
    flush().await;
    let requests = received.lock().expect("log").clone();
    assert_eq!(requests.len(), before + 1);
    assert_eq!(spans_of(&requests[before].1).len(), MAX_BUFFERED_SPANS);
}
