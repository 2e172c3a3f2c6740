//! One trace per event (docs/operations.md, "Traces"), against a local OTLP/HTTP collector:
//! the real receiver and consumer on a local stack export their spans to a loopback server
//! that takes OTLP/HTTP JSON at `/v1/traces`, and two HTTP destinations record the
//! `traceparent` each forward carries.
//!
//! - a sender's valid `traceparent` is continued: its trace id is the ledger item's
//!   `trace_id`, and one trace holds the receiver's span (under the sender's), the consumer's,
//!   its take, both destinations' calls, their settles and the completion; each forward's
//!   `traceparent` is that trace, under its own `inbox.deliver` span;
//! - a sender's invalid `traceparent` (and none at all) starts a new trace, whole just the same;
//! - the spans' names are the ones docs/operations.md lists.
//!
//! The exporter is process-wide (and read from the environment): the test runs in a process of
//! its own ([`in_its_own_process`]).

use std::collections::{BTreeMap, BTreeSet};

use devstack::testkit::{github_headers, post, LocalAws};
use inbox::destination::{Adapter, Targets};
use inbox::forward::HttpForwarder;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::receiver::ReceiverSettings;
use inbox::route::Routes;
use inbox::trace::names;
use serde_json::Value;

use crate::support::downstream::{Downstream, Seen};
use crate::support::{bridge, drain};

#[test]
fn in_its_own_process() {
    crate::support::in_own_process("traces::", 1);
}

/// One exported span, as OTLP/HTTP JSON writes it.
#[derive(Clone, Debug)]
struct Exported {
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    attributes: BTreeMap<String, String>,
}

/// Every span the collector was sent.
fn exported(collector: &Downstream) -> Vec<Exported> {
    let mut out = Vec::new();
    for request in collector.seen() {
        assert_eq!(request.path, "/v1/traces", "OTLP/HTTP's traces path");
        assert_eq!(
            request.headers.get("content-type").map(String::as_str),
            Some("application/json")
        );
        let export: Value = serde_json::from_slice(&request.body).expect("OTLP JSON");
        for resource in export["resourceSpans"].as_array().expect("resourceSpans") {
            for scope in resource["scopeSpans"].as_array().expect("scopeSpans") {
                for span in scope["spans"].as_array().expect("spans") {
                    let text = |field: &str| span[field].as_str().unwrap_or_default().to_owned();
                    let attributes = span["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|kv| {
                            let value = &kv["value"];
                            let shown = value["stringValue"]
                                .as_str()
                                .map(str::to_owned)
                                .unwrap_or_else(|| value.to_string());
                            (kv["key"].as_str().unwrap_or_default().to_owned(), shown)
                        })
                        .collect();
                    out.push(Exported {
                        trace_id: text("traceId"),
                        span_id: text("spanId"),
                        parent: text("parentSpanId"),
                        name: text("name"),
                        attributes,
                    });
                }
            }
        }
    }
    out
}

/// The span names docs/operations.md lists in its "Traces" section (its table's first column).
fn documented_span_names() -> BTreeSet<String> {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md"),
    )
    .expect("docs/operations.md");
    let start = page.find("\n## Traces").expect("a Traces section");
    let section = &page[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `inbox."))
        .filter_map(|l| l.split('`').next())
        .map(|rest| format!("inbox.{rest}"))
        .collect()
}

/// The one span of `trace` named `name` (for a destination: with that `inbox.destination`).
fn one<'a>(
    spans: &'a [Exported],
    trace: &str,
    name: &str,
    destination: Option<&str>,
) -> &'a Exported {
    let found: Vec<&Exported> = spans
        .iter()
        .filter(|s| s.trace_id == trace && s.name == name)
        .filter(|s| {
            destination.is_none_or(|d| {
                s.attributes.get("inbox.destination").map(String::as_str) == Some(d)
            })
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {name} {destination:?} in {trace}: {spans:#?}"
    );
    found[0]
}

/// The `traceparent` of the forward of `key` a system of record saw (exactly one forward).
fn forwarded_traceparent(sor: &Downstream, key: &str) -> String {
    let forwards: Vec<Seen> = sor
        .seen()
        .into_iter()
        .filter(|s| s.headers.get("idempotency-key").map(String::as_str) == Some(key))
        .collect();
    assert_eq!(forwards.len(), 1, "{key} forwarded once");
    forwards[0]
        .headers
        .get("traceparent")
        .cloned()
        .unwrap_or_else(|| panic!("the forward of {key} carries a traceparent"))
}

/// The whole trace of one event: the receiver's span (under `sender_span` where the sender's
/// trace was continued, a root otherwise), the consumer's under it, its take, each
/// destination's call and settle, the completion; and each forward under its call's span.
fn check_event_trace(
    spans: &[Exported],
    trace: &str,
    sender_span: Option<&str>,
    key: &str,
    sors: &[(&str, &Downstream)],
) {
    let receive = one(spans, trace, names::RECEIVE, None);
    assert_eq!(
        receive.parent,
        sender_span.unwrap_or_default(),
        "{key}: the receiver's parent"
    );
    assert_eq!(
        receive.attributes.get("inbox.source").map(String::as_str),
        Some("github")
    );
    let consume = one(spans, trace, names::CONSUME, None);
    assert_eq!(
        consume.parent, receive.span_id,
        "{key}: consume under receive"
    );
    assert_eq!(
        consume.attributes.get("inbox.key").map(String::as_str),
        Some(key)
    );
    for name in [names::TAKE, names::COMPLETE] {
        assert_eq!(
            one(spans, trace, name, None).parent,
            consume.span_id,
            "{key}: {name}"
        );
    }
    let settles = spans
        .iter()
        .filter(|s| s.trace_id == trace && s.name == names::SETTLE && s.parent == consume.span_id)
        .count();
    assert_eq!(settles, sors.len(), "{key}: a settle per destination");
    for (destination, sor) in sors {
        let deliver = one(spans, trace, names::DELIVER, Some(destination));
        assert_eq!(
            deliver.parent, consume.span_id,
            "{key}: {destination}'s call"
        );
        assert_eq!(
            deliver.attributes.get("inbox.outcome").map(String::as_str),
            Some("done")
        );
        assert_eq!(
            forwarded_traceparent(sor, key),
            format!("00-{trace}-{}-01", deliver.span_id),
            "{key}: {destination}'s forward is under its call's span"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "installs the process-wide exporter: run by traces::in_its_own_process"]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: set up, deliver three ways, read the one trace of each"
)]
async fn one_trace_per_event_from_the_sender_through_both_destinations() {
    crate::support::own_process_only();
    let collector = Downstream::start(|_, _| (200, Vec::new()));
    // The process's environment: this test runs alone in its process.
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.base);
    std::env::set_var("OTEL_EXPORTER_OTLP_TIMEOUT", "5000");
    assert!(inbox::trace::install_from_env("inbox-e2e").expect("the exporter"));

    let aws = LocalAws::new("traces").await;
    let answer_200 = || Downstream::start(|_, _| (200, Vec::new()));
    let (ledger_sor, crm_sor) = (answer_200(), answer_200());
    let specs = inbox::SourceSpecs::parse(
        aws.stack
            .consumer
            .environment
            .get("WEBHOOK_SOURCES")
            .expect("WEBHOOK_SOURCES"),
    )
    .expect("the stack's sources");
    let routes = Routes::parse(
        r#"{"ledger": {"target": "https://ledger.example/in", "sources": ["github"]},
            "crm": {"target": "https://crm.example/in", "sources": ["github"]}}"#,
        &specs,
    )
    .expect("routes");
    let http = |url: String| {
        Adapter::Http(
            HttpForwarder::new(url, std::time::Duration::from_secs(5)).expect("a forwarder"),
        )
    };
    let targets = Targets::new(
        BTreeMap::from([
            ("ledger".to_owned(), http(format!("{}/in", ledger_sor.base))),
            ("crm".to_owned(), http(format!("{}/in", crm_sor.base))),
        ]),
        None,
    );
    let (cx, _) = aws.consumer(devstack::testkit::forwarder(
        devstack::testkit::UNUSED_FORWARD_URL,
    ));
    let cx = cx.with_destinations(routes, targets);
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;

    let sender_trace = "0af7651916cd43dd8448eb211c80319c";
    let sender_span = "b7ad6b7169203331";
    let cases = [
        (
            "t-continued",
            Some(format!("00-{sender_trace}-{sender_span}-01")),
        ),
        // Uppercase hex: not W3C, so not taken.
        (
            "t-invalid",
            Some(format!(
                "00-{}-{sender_span}-01",
                sender_trace.to_uppercase()
            )),
        ),
        ("t-none", None),
    ];
    for (id, traceparent) in &cases {
        let body = format!(r#"{{"n":"{id}"}}"#);
        let mut headers = github_headers(id, body.as_bytes());
        if let Some(tp) = traceparent {
            headers.push(("traceparent", tp.clone()));
        }
        let answer = rx.handle(post("github", &headers, body.as_bytes())).await;
        assert_eq!(answer.status(), 200, "{id}");
    }
    // On the queue: the envelope's traceparent, and X-Ray's form of it as AWSTraceHeader.
    let queued = aws
        .sqs
        .receive_message()
        .queue_url(&aws.resources.queue_url)
        .max_number_of_messages(10)
        .visibility_timeout(0)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::AwsTraceHeader,
        )
        .send()
        .await
        .expect("receive the queued messages");
    assert_eq!(queued.messages().len(), cases.len(), "{queued:?}");
    for m in queued.messages() {
        let env = inbox::queue::Envelope::parse(m.body().expect("a body")).expect("an envelope");
        let cx =
            inbox::trace::TraceContext::parse(env.traceparent.as_deref().expect("traceparent"))
                .expect("the envelope's traceparent is W3C");
        let header = m
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::AwsTraceHeader))
            .unwrap_or_else(|| panic!("{}: AWSTraceHeader", env.key));
        assert_eq!(
            header,
            &cx.xray_header(),
            "{}: the same trace, X-Ray's form",
            env.key
        );
    }
    let b = bridge(&aws).await;
    let cx = &cx;
    drain(&b, |e| async move {
        Ok(cx.handle_batch(&e.records, "req", None).await)
    })
    .await;

    let spans = exported(&collector);
    let sors = [("ledger", &ledger_sor), ("crm", &crm_sor)];
    let mut traces = BTreeSet::new();
    for (id, _) in &cases {
        let key = format!("github:{id}");
        let item = aws
            .ledger()
            .get(&key)
            .await
            .expect("get")
            .expect("the event's item");
        assert_eq!(item.status, Status::Completed, "{key}");
        let stored = aws
            .dynamo
            .get_item()
            .table_name(&aws.resources.table)
            .key(
                "pk",
                aws_sdk_dynamodb::types::AttributeValue::S(key.clone()),
            )
            .send()
            .await
            .expect("get the item")
            .item()
            .and_then(|i| i.get("trace_id"))
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_else(|| panic!("{key}: the item keeps its trace_id"));
        let continued = *id == "t-continued";
        if continued {
            assert_eq!(stored, sender_trace, "the sender's trace is continued");
        } else {
            assert_ne!(stored, sender_trace.to_lowercase(), "{key}: a new trace");
            assert_eq!(stored.len(), 32, "{key}: a W3C trace id");
        }
        check_event_trace(
            &spans,
            &stored,
            continued.then_some(sender_span),
            &key,
            &sors,
        );
        traces.insert(stored);
    }
    assert_eq!(traces.len(), 3, "one trace per event");
    let seen_names: BTreeSet<String> = spans.iter().map(|s| s.name.clone()).collect();
    assert_eq!(
        seen_names,
        documented_span_names(),
        "the spans exported are the ones docs/operations.md lists"
    );
}
