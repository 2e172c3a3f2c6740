//! The receiver's CPU work, without I/O: signature verification per scheme, key derivation,
//! envelope building (1 KiB, 16 KiB and 256 KiB bodies), and the whole `handle` path on an
//! in-memory ledger and a queue that drops messages.
//!
//! `cargo bench -p inbox --bench receiver`. No tracing subscriber is installed, so log lines
//! cost only their level check here; metrics go to memory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use devstack::senders::{self, Sender};
use devstack::testkit::apigw::ApiGatewayEvent;
use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::clock::{Clock, SystemClock};
use inbox::config::{GroupSpec, KeySpec, SecretRef, SecretResolver, SourceSpecs, Sources};
use inbox::ledger::memory::MemoryLedger;
use inbox::metrics::{Metric, Metrics};
use inbox::queue::{Envelope, Outgoing, Queue, QueueError};
use inbox::receiver::{accepted_response, Receiver, ReceiverSettings};
use inbox::signature::{Encoding, HmacSpec, Scheme, Verifier};
use inbox::{fifo, key};
use lambda_http::{Body, Request, RequestExt};
use lambda_runtime::LambdaEvent;

const SIZES: [(usize, &str); 3] = [(1024, "1KiB"), (16 * 1024, "16KiB"), (256 * 1024, "256KiB")];
/// `whsec_` + base64 of "bench-secret-bench-secret-bench!".
const WHSEC: &str = "whsec_YmVuY2gtc2VjcmV0LWJlbmNoLXNlY3JldC1iZW5jaCE=";
const SECRET: &str = "bench-secret-bench-secret-bench!";
/// The generic `hmac-sha256` source's signature header.
const HMAC_HEADER: &str = "x-signature";

/// A JSON body of exactly `size` bytes, with an id, a customer and padding.
fn body(size: usize, id: &str) -> Vec<u8> {
    let head = format!(r#"{{"id":"{id}","type":"invoice.paid","customer_id":"cus_42","pad":""#);
    let tail = r#""}"#;
    let pad = size.saturating_sub(head.len() + tail.len());
    let mut out = head.into_bytes();
    out.extend(std::iter::repeat_n(b'x', pad));
    out.extend_from_slice(tail.as_bytes());
    out
}

fn now_secs() -> i64 {
    SystemClock.now_secs()
}

/// The headers a sender of `scheme` would send for `body` (the scheme's and the key's), as
/// devstack's senders sign them.
fn signed_headers(scheme: &Scheme, id: &str, body: &[u8], t: i64) -> Vec<(String, String)> {
    let sender: Box<dyn Sender> = match scheme {
        Scheme::StandardWebhooks => {
            Box::new(senders::StandardWebhooks::new(WHSEC).expect("a whsec_ secret"))
        }
        Scheme::Stripe => Box::new(senders::Stripe::new(SECRET)),
        Scheme::Github => Box::new(senders::GitHub::new(SECRET)),
        Scheme::Shopify => Box::new(senders::Shopify::new(SECRET)),
        Scheme::HmacSha256(_) => Box::new(senders::HmacHex::new(SECRET, HMAC_HEADER)),
        Scheme::None => return Vec::new(),
        other => panic!(
            "the receiver bench signs the named schemes, not {}",
            other.name()
        ),
    };
    sender
        .headers(id, t, body)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn header_map(pairs: &[(String, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    map
}

fn schemes() -> Vec<(&'static str, Scheme, String)> {
    vec![
        (
            "standard-webhooks",
            Scheme::StandardWebhooks,
            WHSEC.to_owned(),
        ),
        ("stripe", Scheme::Stripe, SECRET.to_owned()),
        ("github", Scheme::Github, SECRET.to_owned()),
        ("shopify", Scheme::Shopify, SECRET.to_owned()),
        (
            "hmac-sha256",
            Scheme::HmacSha256(HmacSpec {
                header: HMAC_HEADER.to_owned(),
                encoding: Encoding::Hex,
                prefix: String::new(),
            }),
            SECRET.to_owned(),
        ),
    ]
}

fn verify(c: &mut Criterion) {
    for (name, scheme, secret) in schemes() {
        let verifier = Verifier::new(scheme.clone(), vec![secret], 300).expect("verifier");
        let mut group = c.benchmark_group(format!("verify/{name}"));
        for (size, label) in SIZES {
            let body = body(size, "evt_1");
            let t = now_secs();
            let headers = header_map(&signed_headers(&scheme, "msg_1", &body, t));
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_function(label, |b| {
                b.iter(|| {
                    verifier
                        .verify(black_box(&headers), black_box(&body), t)
                        .expect("valid")
                })
            });
        }
        group.finish();
    }
}

fn key_derivation(c: &mut Criterion) {
    let specs = [
        (
            "header",
            KeySpec::Header(HeaderName::from_static("webhook-id")),
            GroupSpec::Key,
        ),
        (
            "json_pointer",
            KeySpec::Json(vec!["/id".into()]),
            GroupSpec::Key,
        ),
        (
            "json_composite",
            KeySpec::Json(vec!["/type".into(), "/id".into()]),
            GroupSpec::Key,
        ),
        (
            "header_json_group",
            KeySpec::Header(HeaderName::from_static("webhook-id")),
            GroupSpec::Json(vec!["/customer_id".into()]),
        ),
        ("payload_sha256", KeySpec::PayloadSha256, GroupSpec::Key),
    ];
    for (name, spec, group_spec) in specs {
        let mut group = c.benchmark_group(format!("key/{name}"));
        for (size, label) in SIZES {
            let body = body(size, "evt_1");
            let headers = header_map(&[("webhook-id".to_owned(), "msg_1".to_owned())]);
            group.throughput(Throughput::Bytes(size as u64));
            // What the receiver does per request: hash the body (always: `payload_sha256`),
            // parse JSON once where a key or group pointer needs it, derive key and group.
            group.bench_function(label, |b| {
                b.iter(|| {
                    let body = black_box(body.as_slice());
                    let sha = key::sha256_hex(body);
                    let needs_json = spec.needs_json() || matches!(group_spec, GroupSpec::Json(_));
                    let json =
                        needs_json.then(|| key::fields(body, &spec, &group_spec).expect("JSON"));
                    let k = key::derive("src", &spec, &headers, json.as_ref(), &sha).expect("key");
                    let g = fifo::group(&k, &group_spec, "src", json.as_ref());
                    (k, g)
                })
            });
        }
        group.finish();
    }
}

fn envelope(c: &mut Criterion) {
    let headers: BTreeMap<String, String> = [
        ("content-type", "application/json"),
        ("webhook-id", "msg_1"),
        (
            "webhook-signature",
            "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
        ),
        ("webhook-timestamp", "1700000000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    for (kind, binary) in [("text", false), ("binary", true)] {
        let mut group = c.benchmark_group(format!("envelope/{kind}"));
        for (size, label) in SIZES {
            let mut body = body(size, "evt_1");
            if binary {
                body[10] = 0xff; // not UTF-8: the envelope carries it as base64
            }
            let sha = key::sha256_hex(&body);
            group.throughput(Throughput::Bytes(size as u64));
            // What the receiver does per first delivery: the envelope's JSON, the SQS ids.
            group.bench_function(label, |b| {
                b.iter(|| {
                    Outgoing::new(
                        "acme:cus_42",
                        "acme:msg_1",
                        Envelope::json_of(
                            "acme:msg_1",
                            "acme",
                            1_700_000_000_000,
                            &sha,
                            &headers,
                            None,
                            black_box(&body),
                        ),
                    )
                })
            });
            // The same through an owned `Envelope` first (one more copy of the body), as the
            // tools in crates/devstack build it.
            group.bench_function(format!("{label}_owned"), |b| {
                b.iter(|| {
                    let env = Envelope::new(
                        "acme:msg_1",
                        "acme",
                        1_700_000_000_000,
                        &sha,
                        headers.clone(),
                        black_box(&body),
                    );
                    Outgoing::new("acme:cus_42", "acme:msg_1", env.to_json())
                })
            });
        }
        group.finish();
    }
}

/// A queue that drops every message.
struct DropQueue;

impl Queue for DropQueue {
    async fn send(&self, msg: Outgoing) -> Result<(), QueueError> {
        black_box(msg);
        Ok(())
    }
}

struct Resolver;

impl SecretResolver for Resolver {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(name) if name == "WHSEC" => Ok(WHSEC.to_owned()),
            _ => Ok(SECRET.to_owned()),
        }
    }
}

const BENCH_SOURCES: &str = r#"{
  "acme": {"signature": {"scheme": "standard-webhooks", "secrets": ["env:WHSEC"]},
           "key": {"from": "header", "name": "webhook-id"},
           "group": {"from": "json", "pointers": ["/customer_id"]}}
}"#;

fn sources(rt: &tokio::runtime::Runtime) -> Sources {
    rt.block_on(
        SourceSpecs::parse(BENCH_SOURCES)
            .expect("sources")
            .resolve(&Resolver),
    )
    .expect("secrets")
}

static IDS: AtomicU64 = AtomicU64::new(0);

/// A fresh Standard Webhooks delivery of a 2 KiB body (a new `webhook-id`, so a new key).
fn fresh_delivery(size: usize) -> (String, Vec<u8>, Vec<(String, String)>) {
    let id = format!("msg_{:012}", IDS.fetch_add(1, Ordering::Relaxed));
    let body = body(size, &id);
    let headers = signed_headers(&Scheme::StandardWebhooks, &id, &body, now_secs());
    (id, body, headers)
}

fn context(id: &str) -> lambda_runtime::Context {
    let mut ctx = lambda_runtime::Context::default();
    ctx.request_id = format!("req-{id}");
    ctx.deadline = u64::try_from(SystemClock.now_ms() + 30_000).unwrap_or(0);
    ctx
}

fn request(id: &str, body: Vec<u8>, headers: &[(String, String)]) -> Request {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("https://abc.lambda-url.us-east-1.on.aws/webhooks/acme");
    for (k, v) in headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder
        .body(Body::Binary(body))
        .expect("request")
        .with_lambda_context(context(id))
}

/// The event API Gateway (HTTP API, payload v2) would send, as JSON text: only the sender's
/// headers (as the numbers in BENCHMARKS.md were measured), not those the gateway adds.
fn apigw_event(id: &str, body: &[u8], headers: &[(String, String)]) -> String {
    ApiGatewayEvent::post("acme")
        .headers(headers.iter().map(|(k, v)| (k, v)))
        .body(body)
        .request_id(&format!("req-{id}"))
        .without_gateway_headers()
        .to_text()
}

fn receiver_handle(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (metrics, lines) = Metrics::memory("receiver");
    let rx = Receiver::new(
        sources(&rt),
        MemoryLedger::new(),
        DropQueue,
        SystemClock,
        ReceiverSettings::default(),
        metrics,
    );
    // Between batches (untimed): forget old keys and metric lines, so memory stays flat.
    let far_future = i64::MAX / 4;
    let tidy = || {
        rx.ledger().sweep_expired(far_future);
        lines.lock().expect("lines").clear();
    };

    let mut group = c.benchmark_group("receiver");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(8));

    // First deliveries: verify, key, group, envelope, claim, enqueue, answer.
    group.bench_function("handle/standard_webhooks_2KiB/first", |b| {
        let mut n = 0_u64;
        b.iter_batched(
            || {
                n += 1;
                if n.is_multiple_of(4096) {
                    tidy();
                }
                let (id, body, headers) = fresh_delivery(2048);
                request(&id, body, &headers)
            },
            |req| {
                let resp = rt.block_on(rx.handle(req));
                debug_assert_eq!(resp.status(), 200);
                resp
            },
            BatchSize::SmallInput,
        )
    });

    // Duplicates: everything up to the claim, which finds the key and replays.
    tidy();
    let (dup_id, dup_body, dup_headers) = fresh_delivery(2048);
    let first = rt.block_on(rx.handle(request(&dup_id, dup_body.clone(), &dup_headers)));
    assert_eq!(first.status(), 200);
    group.bench_function("handle/standard_webhooks_2KiB/duplicate", |b| {
        b.iter_batched(
            || {
                lines.lock().expect("lines").clear();
                request(&dup_id, dup_body.clone(), &dup_headers)
            },
            |req| rt.block_on(rx.handle(req)),
            BatchSize::SmallInput,
        )
    });

    // The Lambda entry as the runtime drives it: the event's JSON in, the response's JSON
    // out, with lambda_http's conversion between.
    group.bench_function("handle_event_json/standard_webhooks_2KiB/first", |b| {
        let mut n = 0_u64;
        b.iter_batched(
            || {
                n += 1;
                if n.is_multiple_of(4096) {
                    tidy();
                }
                let (id, body, headers) = fresh_delivery(2048);
                (apigw_event(&id, &body, &headers), context(&id))
            },
            |(json, ctx)| {
                let payload: ApiGatewayV2httpRequest = serde_json::from_str(&json).expect("event");
                let resp = rt
                    .block_on(rx.handle_event(LambdaEvent::new(payload, ctx)))
                    .expect("infallible");
                debug_assert_eq!(resp.status_code, 200);
                serde_json::to_vec(&resp).expect("response JSON")
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// Small per-request pieces of the handle path, to see where its time goes.
fn parts(c: &mut Criterion) {
    let mut group = c.benchmark_group("parts");
    let (metrics, lines) = Metrics::memory("receiver");
    group.bench_function("metrics_line", |b| {
        b.iter(|| metrics.line(black_box("acme"), Metric::Accepted, 1_700_000_000_000))
    });
    group.bench_function("metrics_count", |b| {
        b.iter_batched(
            || lines.lock().expect("lines").clear(),
            |()| metrics.count(black_box("acme"), Metric::Accepted),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("accepted_response", |b| {
        b.iter(|| accepted_response(black_box("acme:msg_000000000001")))
    });
    let specs = SourceSpecs::parse(BENCH_SOURCES).expect("sources");
    let spec = specs.get("acme").expect("acme");
    group.bench_function("envelope_header_names", |b| {
        b.iter(|| black_box(spec).envelope_headers())
    });
    // Issue 39, export off: the request's span (two ids) and the envelope's `traceparent`
    // text; and a sender's `traceparent` read.
    group.bench_function("trace_off_span_and_traceparent", |b| {
        b.iter(|| {
            let span = inbox::trace::start(
                inbox::trace::names::RECEIVE,
                inbox::trace::Kind::Server,
                None,
            );
            black_box(span.context().traceparent())
        })
    });
    group.bench_function("traceparent_parse", |b| {
        b.iter(|| {
            inbox::trace::TraceContext::parse(black_box(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ))
        })
    });
    group.finish();
}

criterion_group!(
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = verify, key_derivation, envelope, parts, receiver_handle
);
criterion_main!(benches);
