//! Bad input, end to end: a corpus of malformed, unsigned, mis-signed, stale, oversized and
//! otherwise wrong requests. Each must get its documented status and JSON error (README,
//! "Receiver"), none may panic, and none may write anything: no DynamoDB or SQS call is made
//! at all (the interceptor's counts), the table scans empty and the queue is empty.
//!
//! Every case runs twice: as an `http::Request` through `Receiver::handle`, and as the API
//! Gateway (HTTP API, payload v2) JSON event Lambda hands the function, through
//! `Receiver::handle_event`. A few more cases exist only as events (the `isBase64Encoded`
//! flag).

use std::panic::AssertUnwindSafe;

use base64::Engine as _;
use devstack::testkit::{
    self, github_signature, hmac_hex, now_ms, shopify_signature, standard_webhooks_headers,
    stripe_signature, LocalAws, TestReceiver,
};
use futures::FutureExt as _;
use inbox::receiver::ReceiverSettings;
use lambda_http::{Body, RequestExt as _};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// One bad request and its documented answer.
#[derive(Clone, Debug)]
struct Case {
    name: String,
    method: &'static str,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
}

fn case(
    name: &str,
    source: &str,
    headers: Vec<(&str, String)>,
    body: &[u8],
    expect: (u16, &'static str),
) -> Case {
    Case {
        name: name.to_owned(),
        method: "POST",
        path: format!("/webhooks/{source}"),
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        body: body.to_vec(),
        status: expect.0,
        code: expect.1,
    }
}

const SIG: (u16, &str) = (401, "invalid_signature");
const MISSING: (u16, &str) = (400, "missing_idempotency_key");
const INVALID: (u16, &str) = (400, "invalid_idempotency_key");
const MALFORMED: (u16, &str) = (400, "malformed_body");
const UNKNOWN: (u16, &str) = (404, "unknown_source");
const METHOD: (u16, &str) = (405, "method_not_allowed");
const TOO_LARGE: (u16, &str) = (413, "payload_too_large");

fn gh(delivery: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    testkit::github_headers(delivery, body)
}

fn gh_sig(delivery: &str, signature: &str) -> Vec<(&'static str, String)> {
    vec![
        ("x-github-delivery", delivery.to_owned()),
        ("x-hub-signature-256", signature.to_owned()),
    ]
}

fn stripe(body: &[u8], t: i64) -> Vec<(&'static str, String)> {
    vec![("stripe-signature", stripe_signature(body, t))]
}

fn stripe_raw(value: &str) -> Vec<(&'static str, String)> {
    vec![("stripe-signature", value.to_owned())]
}

fn without(mut headers: Vec<(&'static str, String)>, name: &str) -> Vec<(&'static str, String)> {
    headers.retain(|(k, _)| *k != name);
    headers
}

fn replace(
    mut headers: Vec<(&'static str, String)>,
    name: &str,
    value: &str,
) -> Vec<(&'static str, String)> {
    for (k, v) in &mut headers {
        if *k == name {
            *v = value.to_owned();
        }
    }
    headers
}

/// `n` nested arrays: `[[[…]]]`.
fn nested_arrays(n: usize) -> Vec<u8> {
    let mut v = "[".repeat(n).into_bytes();
    v.extend("]".repeat(n).into_bytes());
    v
}

/// `{"id":"evt_deep","x":{"x":{…}}}`, `n` deep.
fn nested_objects(n: usize) -> Vec<u8> {
    let mut v = br#"{"id":"evt_deep","x":"#.to_vec();
    v.extend(r#"{"x":"#.repeat(n).into_bytes());
    v.extend(b"1");
    v.extend("}".repeat(n + 1).into_bytes());
    v
}

fn corpus() -> Vec<Case> {
    let t = now_ms() / 1000;
    let body = br#"{"action":"opened","number":1}"#.as_slice();
    let evt = br#"{"id":"evt_bad","type":"invoice.paid"}"#.as_slice();
    let acme = br#"{"customer_id":"cus_1","amount":5}"#.as_slice();
    let order = br#"{"type":"order.paid","order":{"id":7}}"#.as_slice();
    let valid_mac = github_signature(body);
    let mut cases = vec![
        // --- Signatures: bad, truncated, absent, of another scheme -------------------------
        case(
            "github: MAC of another body",
            "github",
            gh_sig("d", &github_signature(b"other")),
            body,
            SIG,
        ),
        case(
            "github: no signature header",
            "github",
            without(gh("d", body), "x-hub-signature-256"),
            body,
            SIG,
        ),
        case(
            "github: empty signature",
            "github",
            gh_sig("d", ""),
            body,
            SIG,
        ),
        case(
            "github: truncated MAC",
            "github",
            gh_sig("d", &valid_mac[..40]),
            body,
            SIG,
        ),
        case(
            "github: MAC one hex digit short",
            "github",
            gh_sig("d", &valid_mac[..valid_mac.len() - 1]),
            body,
            SIG,
        ),
        case(
            "github: MAC with a byte appended",
            "github",
            gh_sig("d", &format!("{valid_mac}00")),
            body,
            SIG,
        ),
        case(
            "github: sha1= prefix",
            "github",
            gh_sig("d", &valid_mac.replacen("sha256=", "sha1=", 1)),
            body,
            SIG,
        ),
        case(
            "github: no prefix",
            "github",
            gh_sig("d", &valid_mac["sha256=".len()..]),
            body,
            SIG,
        ),
        case(
            "github: non-hex MAC",
            "github",
            gh_sig("d", &format!("sha256={}", "zz".repeat(32))),
            body,
            SIG,
        ),
        case(
            "github: MAC under another secret",
            "github",
            gh_sig("d", &format!("sha256={}", hex::encode([7u8; 32]))),
            body,
            SIG,
        ),
        case(
            "github: signature header twice",
            "github",
            {
                let mut h = gh("d", body);
                h.push(("x-hub-signature-256", github_signature(b"other")));
                h
            },
            body,
            SIG,
        ),
        case(
            "github: body changed after signing",
            "github",
            gh("d", body),
            br#"{"action":"closed","number":1}"#,
            SIG,
        ),
        case(
            "github: Stripe scheme sent",
            "github",
            {
                let mut h = stripe(body, t);
                h.push(("x-github-delivery", "d".to_owned()));
                h
            },
            body,
            SIG,
        ),
        case(
            "stripe: GitHub scheme sent",
            "stripe",
            gh("d", evt),
            evt,
            SIG,
        ),
        case(
            "shop: Standard Webhooks scheme sent",
            "shop",
            standard_webhooks_headers("m", t, body),
            body,
            SIG,
        ),
        case(
            "stripe: timestamp 330 s in the past",
            "stripe",
            stripe(evt, t - 330),
            evt,
            SIG,
        ),
        case(
            "stripe: timestamp 330 s in the future",
            "stripe",
            stripe(evt, t + 330),
            evt,
            SIG,
        ),
        case("stripe: timestamp 0", "stripe", stripe(evt, 0), evt, SIG),
        case(
            "stripe: timestamp in the year 5000",
            "stripe",
            stripe(evt, 95_617_584_000),
            evt,
            SIG,
        ),
        case(
            "stripe: timestamp overflows i64",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen(
                &format!("t={t}"),
                "t=99999999999999999999999",
                1,
            )),
            evt,
            SIG,
        ),
        case(
            "stripe: negative timestamp",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen(&format!("t={t}"), "t=-5", 1)),
            evt,
            SIG,
        ),
        case(
            "stripe: signed at another timestamp",
            "stripe",
            stripe_raw(&stripe_signature(evt, t - 10).replacen(
                &format!("t={}", t - 10),
                &format!("t={t}"),
                1,
            )),
            evt,
            SIG,
        ),
        case(
            "stripe: no t=",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen(&format!("t={t},"), "", 1)),
            evt,
            SIG,
        ),
        case(
            "stripe: no v1=",
            "stripe",
            stripe_raw(&format!("t={t}")),
            evt,
            SIG,
        ),
        case(
            "stripe: only v0=",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen("v1=", "v0=", 1)),
            evt,
            SIG,
        ),
        case(
            "stripe: truncated v1=",
            "stripe",
            stripe_raw(&stripe_signature(evt, t)[..30]),
            evt,
            SIG,
        ),
        case(
            "stripe: garbage header",
            "stripe",
            stripe_raw("nonsense"),
            evt,
            SIG,
        ),
        case("stripe: empty header", "stripe", stripe_raw(""), evt, SIG),
        case("stripe: no header", "stripe", vec![], evt, SIG),
        case(
            "acme: v2 signature only",
            "acme",
            {
                let h = standard_webhooks_headers("m-1", t, acme);
                let sig = h
                    .iter()
                    .find(|(k, _)| *k == "webhook-signature")
                    .map(|(_, v)| v.replacen("v1,", "v2,", 1))
                    .unwrap_or_default();
                replace(h, "webhook-signature", &sig)
            },
            acme,
            SIG,
        ),
        case(
            "acme: no webhook-timestamp",
            "acme",
            without(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-timestamp",
            ),
            acme,
            SIG,
        ),
        case(
            "acme: no webhook-id",
            "acme",
            without(standard_webhooks_headers("m-1", t, acme), "webhook-id"),
            acme,
            SIG,
        ),
        case(
            "acme: no webhook-signature",
            "acme",
            without(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-signature",
            ),
            acme,
            SIG,
        ),
        case(
            "acme: timestamp 10 min in the past",
            "acme",
            standard_webhooks_headers("m-1", t - 600, acme),
            acme,
            SIG,
        ),
        case(
            "acme: timestamp 10 min in the future",
            "acme",
            standard_webhooks_headers("m-1", t + 600, acme),
            acme,
            SIG,
        ),
        case(
            "acme: signature not base64",
            "acme",
            replace(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-signature",
                "v1,***",
            ),
            acme,
            SIG,
        ),
        case(
            "acme: truncated signature",
            "acme",
            {
                let h = standard_webhooks_headers("m-1", t, acme);
                let sig = h
                    .iter()
                    .find(|(k, _)| *k == "webhook-signature")
                    .map(|(_, v)| v[..20].to_owned())
                    .unwrap_or_default();
                replace(h, "webhook-signature", &sig)
            },
            acme,
            SIG,
        ),
        case(
            "acme: webhook-id changed after signing",
            "acme",
            replace(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-id",
                "m-2",
            ),
            acme,
            SIG,
        ),
        case(
            "shop: MAC of another body",
            "shop",
            vec![
                ("x-shopify-hmac-sha256", shopify_signature(b"other")),
                ("x-shopify-event-id", "s".to_owned()),
            ],
            body,
            SIG,
        ),
        case(
            "shop: hex MAC where base64 is declared",
            "shop",
            vec![
                ("x-shopify-hmac-sha256", hmac_hex(body)),
                ("x-shopify-event-id", "s".to_owned()),
            ],
            body,
            SIG,
        ),
        case("orders: no signature header", "orders", vec![], order, SIG),
        case(
            "orders: base64 MAC where hex is declared",
            "orders",
            vec![("x-signature", shopify_signature(order))],
            order,
            SIG,
        ),
        case(
            "github: empty body, no signature",
            "github",
            vec![("x-github-delivery", "d".to_owned())],
            b"",
            SIG,
        ),
        // --- The idempotency key: absent or unusable (signatures valid) --------------------
        case(
            "github: no X-GitHub-Delivery",
            "github",
            without(gh("d", body), "x-github-delivery"),
            body,
            MISSING,
        ),
        case(
            "github: empty X-GitHub-Delivery",
            "github",
            replace(gh("d", body), "x-github-delivery", ""),
            body,
            MISSING,
        ),
        case(
            "github: blank X-GitHub-Delivery",
            "github",
            replace(gh("d", body), "x-github-delivery", "   "),
            body,
            MISSING,
        ),
        case(
            "github: key over 1 KiB",
            "github",
            gh(&"k".repeat(1025), body),
            body,
            INVALID,
        ),
        case(
            "github: key with a tab inside",
            "github",
            gh("a\tb", body),
            body,
            INVALID,
        ),
        case(
            "github: key not ASCII",
            "github",
            gh("caf\u{e9}", body),
            body,
            INVALID,
        ),
        case(
            "orders: composite key part absent",
            "orders",
            vec![("x-signature", hmac_hex(br#"{"type":"t"}"#))],
            br#"{"type":"t"}"#,
            MISSING,
        ),
        case(
            "orders: composite key part an object",
            "orders",
            vec![(
                "x-signature",
                hmac_hex(br#"{"type":"t","order":{"id":{}}}"#),
            )],
            br#"{"type":"t","order":{"id":{}}}"#,
            INVALID,
        ),
    ];
    // Stripe: signed correctly, keyed from `/id`; the body is what is wrong.
    for (name, stripe_body, expect) in [
        ("/id absent", &br#"{"type":"x"}"#[..], MISSING),
        ("/id null", &br#"{"id":null}"#[..], MISSING),
        ("/id empty", &br#"{"id":""}"#[..], MISSING),
        ("/id an object", &br#"{"id":{"a":1}}"#[..], INVALID),
        ("/id an array", &br#"{"id":[1]}"#[..], INVALID),
        ("/id with NUL", &br#"{"id":"a\u0000b"}"#[..], INVALID),
        ("/id with a newline", &br#"{"id":"a\nb"}"#[..], INVALID),
        ("/id with DEL", &br#"{"id":"a\u007fb"}"#[..], INVALID),
        (
            "/id with a C1 control",
            &br#"{"id":"a\u0085b"}"#[..],
            INVALID,
        ),
        ("top-level array", &b"[1,2]"[..], MISSING),
        ("top-level string", &br#""evt_1""#[..], MISSING),
    ] {
        cases.push(case(
            &format!("stripe: {name}"),
            "stripe",
            stripe(stripe_body, t),
            stripe_body,
            expect,
        ));
    }
    let long_id = format!(r#"{{"id":"{}"}}"#, "e".repeat(1025)).into_bytes();
    cases.push(case(
        "stripe: /id over 1 KiB",
        "stripe",
        stripe(&long_id, t),
        &long_id,
        INVALID,
    ));
    let long_composite = format!(
        r#"{{"type":"{}","order":{{"id":"{}"}}}}"#,
        "t".repeat(600),
        "o".repeat(600)
    )
    .into_bytes();
    cases.push(case(
        "orders: composite key over 1 KiB",
        "orders",
        vec![("x-signature", hmac_hex(&long_composite))],
        &long_composite,
        INVALID,
    ));

    // --- Bodies that are not the JSON a key pointer needs (signatures valid) -------------
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("not JSON", b"not json".to_vec()),
        ("empty body", Vec::new()),
        ("truncated JSON", br#"{"id":"evt_1""#.to_vec()),
        ("10k nested arrays", nested_arrays(10_000)),
        (
            "10k nested objects under a valid /id",
            nested_objects(10_000),
        ),
        ("invalid UTF-8", b"\xff\xfe{\"id\":\"evt_1\"}".to_vec()),
        (
            "invalid UTF-8 inside a string",
            b"{\"id\":\"evt_\xc3\x28\"}".to_vec(),
        ),
        ("NaN", br#"{"id":NaN}"#.to_vec()),
        ("trailing garbage", br#"{"id":"evt_1"} x"#.to_vec()),
        ("UTF-16 BOM", b"\xfe\xff\x00{".to_vec()),
    ];
    for (name, b) in bodies {
        cases.push(case(
            &format!("stripe: {name}"),
            "stripe",
            stripe(&b, t),
            &b,
            MALFORMED,
        ));
    }

    // --- Size: checked before anything else about the body ------------------------------
    let over = vec![b'x'; 262_145];
    cases.push(case(
        "github: 256 KiB + 1, signed",
        "github",
        gh("d", &over),
        &over,
        TOO_LARGE,
    ));
    let huge = vec![b'{'; 4 * 1024 * 1024];
    cases.push(case(
        "stripe: 4 MiB, unsigned",
        "stripe",
        vec![],
        &huge,
        TOO_LARGE,
    ));
    cases.push(case(
        "acme: 4 MiB, signed",
        "acme",
        standard_webhooks_headers("m-1", t, &huge),
        &huge,
        TOO_LARGE,
    ));

    // --- Sources and paths ----------------------------------------------------------------
    for (name, path) in [
        ("unknown source", "/webhooks/nobody"),
        ("source in the wrong case", "/webhooks/GitHub"),
        ("empty source", "/webhooks/"),
        ("no source", "/webhooks"),
        ("extra segment", "/webhooks/github/extra"),
        ("another prefix", "/hooks/github"),
        ("encoded traversal", "/webhooks/..%2Fgithub"),
        ("encoded NUL", "/webhooks/github%00"),
    ] {
        let mut c = case(
            &format!("path: {name}"),
            "github",
            gh("d", body),
            body,
            UNKNOWN,
        );
        c.path = path.to_owned();
        cases.push(c);
    }

    // --- Methods: answered before anything else -------------------------------------------
    for method in [
        "GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PURGE",
    ] {
        let mut c = case(
            &format!("method {method}"),
            "github",
            gh("d", body),
            body,
            METHOD,
        );
        c.method = method;
        cases.push(c);
    }
    let mut c = case("method GET, unknown source", "nobody", vec![], b"", METHOD);
    c.method = "GET";
    cases.push(c);
    cases
}

fn request(c: &Case) -> lambda_http::Request {
    let mut builder = http::Request::builder()
        .method(c.method)
        .uri(format!("https://example.com{}", c.path));
    for (name, value) in &c.headers {
        builder = builder.header(
            name.as_str(),
            http::HeaderValue::from_bytes(value.as_bytes()).expect("a header value"),
        );
    }
    builder
        .body(Body::Binary(c.body.clone()))
        .expect("a request")
        .with_lambda_context(testkit::context(&testkit::unique("req"), now_ms() + 10_000))
}

/// The payload v2 event for `c`: the body base64-encoded (so its bytes arrive exactly),
/// `{source}` set only where API Gateway's route `/webhooks/{source}` would match.
fn event_for(
    c: &Case,
    body: &str,
    is_base64: bool,
) -> lambda_runtime::LambdaEvent<aws_lambda_events::apigw::ApiGatewayV2httpRequest> {
    let mut headers = serde_json::Map::new();
    for (k, v) in &c.headers {
        // API Gateway joins repeated headers with commas.
        let joined = match headers.get(k) {
            Some(serde_json::Value::String(old)) => format!("{old},{v}"),
            _ => v.clone(),
        };
        headers.insert(k.clone(), serde_json::Value::String(joined));
    }
    let source = c
        .path
        .strip_prefix("/webhooks/")
        .filter(|s| !s.is_empty() && !s.contains('/'));
    let event = serde_json::json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": c.path,
        "rawQueryString": "",
        "headers": headers,
        "pathParameters": source.map(|s| serde_json::json!({"source": s})),
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "example.com", "domainPrefix": "example",
            "http": {"method": c.method, "path": c.path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test"},
            "requestId": "r", "routeKey": "POST /webhooks/{source}", "stage": "$default", "time": "02/Dec/2026:10:00:00 +0000", "timeEpoch": 0
        },
        "body": body,
        "isBase64Encoded": is_base64
    });
    lambda_runtime::LambdaEvent::new(
        serde_json::from_value(event).expect("a v2 event"),
        testkit::context(&testkit::unique("req"), now_ms() + 10_000),
    )
}

/// Checks an answer; returns a description of what was wrong, if anything.
fn check(
    c: &Case,
    entry: &str,
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
    let want = serde_json::json!({ "error": c.code });
    let mut wrong = Vec::new();
    if status != c.status || json != want {
        wrong.push(format!("got {status} {json}, want {} {want}", c.status));
    }
    if headers.get("content-type").map(|v| v.as_bytes()) != Some(b"application/json") {
        wrong.push("content-type is not application/json".to_owned());
    }
    if headers.contains_key("idempotent-replayed") {
        wrong.push("marked as a replay".to_owned());
    }
    if c.status == 405 && headers.get("allow").map(|v| v.as_bytes()) != Some(b"POST") {
        wrong.push("405 without Allow: POST".to_owned());
    }
    (!wrong.is_empty()).then(|| format!("{} via {entry}: {}", c.name, wrong.join("; ")))
}

fn event_body(resp: &aws_lambda_events::apigw::ApiGatewayV2httpResponse) -> Vec<u8> {
    match &resp.body {
        Some(Body::Text(t)) if resp.is_base64_encoded => B64.decode(t).unwrap_or_default(),
        Some(Body::Text(t)) => t.as_bytes().to_vec(),
        Some(Body::Binary(b)) => b.clone(),
        _ => Vec::new(),
    }
}

/// Runs one case through both entries; returns what went wrong (a panic included).
async fn run(rx: &TestReceiver, c: &Case) -> Vec<String> {
    let mut wrong = Vec::new();
    match AssertUnwindSafe(rx.handle(request(c))).catch_unwind().await {
        Ok(resp) => wrong.extend(check(
            c,
            "handle",
            resp.status().as_u16(),
            resp.headers(),
            resp.body().as_ref(),
        )),
        Err(_) => wrong.push(format!("{} via handle: PANICKED", c.name)),
    }
    let event = event_for(c, &B64.encode(&c.body), true);
    match AssertUnwindSafe(rx.handle_event(event))
        .catch_unwind()
        .await
    {
        Ok(Ok(resp)) => wrong.extend(check(
            c,
            "handle_event",
            u16::try_from(resp.status_code).unwrap_or(0),
            &resp.headers,
            &event_body(&resp),
        )),
        Ok(Err(never)) => match never {},
        Err(_) => wrong.push(format!("{} via handle_event: PANICKED", c.name)),
    }
    wrong
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_gets_its_documented_answer_and_writes_nothing() {
    let aws = LocalAws::new("bad-corpus").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let started = std::time::Instant::now();
    let cases = corpus();
    assert!(cases.len() >= 50, "a corpus of {}", cases.len());
    let mut wrong = Vec::new();
    for c in &cases {
        wrong.extend(run(&rx, c).await);
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // Not one call to DynamoDB or SQS, so not one write.
    assert_eq!(aws.faults.all_calls(), Default::default());
    assert!(aws.ledger_items().await.is_empty(), "no ledger item");
    assert!(
        aws.receive_all(&aws.resources.queue_url).await.is_empty(),
        "no queue message"
    );
    eprintln!(
        "bad input: {} requests, each through handle and handle_event ({} answers) in {:.1?}",
        cases.len(),
        2 * cases.len(),
        started.elapsed()
    );
}

/// The `isBase64Encoded` flag, only expressible as an API Gateway event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_base64_flag_is_a_400_or_a_401_never_a_panic_nor_a_write() {
    let aws = LocalAws::new("bad-b64").await;
    let rx = aws.receiver(ReceiverSettings::default()).await.0;
    let t = now_ms() / 1000;
    let evt = br#"{"id":"evt_b64"}"#.to_vec();
    let encoded = B64.encode(&evt);
    let signed = |body: &[u8]| case("", "stripe", stripe(body, t), body, MALFORMED);
    let with = |name: &str, c: Case, expect: (u16, &'static str)| Case {
        name: name.to_owned(),
        status: expect.0,
        code: expect.1,
        ..c
    };
    let events = vec![
        // Flagged base64, but not base64.
        (
            with("true on raw JSON", signed(&evt), MALFORMED),
            String::from_utf8(evt.clone()).expect("utf-8"),
            true,
        ),
        (
            with("true on garbage", signed(&evt), MALFORMED),
            "***not base64***".to_owned(),
            true,
        ),
        (
            with("true on truncated base64", signed(&evt), MALFORMED),
            encoded[..encoded.len() - 3].to_owned(),
            true,
        ),
        (
            with("true on base64 with whitespace", signed(&evt), MALFORMED),
            format!("{} {}", &encoded[..8], &encoded[8..]),
            true,
        ),
        // Base64 sent unflagged: the signature is over the raw bytes, not their encoding.
        (
            with("false on a base64 body", signed(&evt), SIG),
            encoded.clone(),
            false,
        ),
        // Flagged and decodable, but the sender signed the encoded text.
        (
            with(
                "true, signed over the encoding",
                signed(encoded.as_bytes()),
                SIG,
            ),
            encoded.clone(),
            true,
        ),
        // Decodes to something that is not JSON.
        (
            with(
                "true on base64 of invalid UTF-8",
                signed(b"\xff\xfe\xfd"),
                MALFORMED,
            ),
            B64.encode(b"\xff\xfe\xfd"),
            true,
        ),
        // Decodes to over the limit.
        (
            with(
                "true on base64 of 300 KB",
                case("", "github", vec![], b"", TOO_LARGE),
                TOO_LARGE,
            ),
            B64.encode(vec![b'a'; 300_000]),
            true,
        ),
    ];
    let mut wrong = Vec::new();
    for (c, body, flag) in &events {
        match AssertUnwindSafe(rx.handle_event(event_for(c, body, *flag)))
            .catch_unwind()
            .await
        {
            Ok(Ok(resp)) => wrong.extend(check(
                c,
                "handle_event",
                u16::try_from(resp.status_code).unwrap_or(0),
                &resp.headers,
                &event_body(&resp),
            )),
            Ok(Err(never)) => match never {},
            Err(_) => wrong.push(format!("{}: PANICKED", c.name)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(aws.faults.all_calls(), Default::default());
    assert!(aws.ledger_items().await.is_empty());
    assert!(aws.receive_all(&aws.resources.queue_url).await.is_empty());
    eprintln!("bad input: {} base64-flag events", events.len());
}

/// serde_json stops at its recursion limit (128) with an error: no stack overflow, at any
/// depth tried.
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [129, 1_000, 10_000, 100_000] {
        assert!(
            inbox::key::parse_json(&nested_arrays(depth)).is_err(),
            "{depth} arrays"
        );
        assert!(
            inbox::key::parse_json(&nested_objects(depth)).is_err(),
            "{depth} objects"
        );
    }
    assert!(inbox::key::parse_json(&nested_arrays(100)).is_ok());
}
