//! Arbitrary input through the signature and key parsers, and through the whole receiver:
//! any bytes, any header values HTTP allows, repeated headers, bodies
//! signed correctly and then altered or not. Nothing panics, every answer is a row of the
//! documented table (docs/design.md §2), and a request refused writes nothing.
//!
//! Bounded: 256 cases per property by default; `PROPTEST_CASES` sets another count.

use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::clock::SystemClock;
use inbox::config::{AwsSecretResolver, GroupSpec, KeySpec, Sources};
use inbox::key;
use inbox::ledger::memory::MemoryLedger;
use inbox::metrics::Metrics;
use inbox::queue::{sqs_can_carry, Envelope, MemoryQueue};
use inbox::receiver::{Receiver, ReceiverSettings, Rejection};
use inbox::signature::{Encoding, HmacSpec, Scheme, SignatureError, Verifier};
use lambda_http::Body;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// Every (status, code) the receiver may answer (docs/design.md §2), 200 included.
const DOCUMENTED: &[(u16, &str)] = &[
    (200, "accepted"),
    (200, "replayed"),
    (400, "missing_idempotency_key"),
    (400, "invalid_idempotency_key"),
    (400, "malformed_body"),
    (400, "malformed_request"),
    (401, "invalid_signature"),
    (404, "unknown_source"),
    (405, "method_not_allowed"),
    (413, "payload_too_large"),
    (422, "payload_mismatch"),
    (409, "replayed_body"),
    (500, "internal"),
];

const SCHEME_HEADERS: &[&str] = &[
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "stripe-signature",
    "x-hub-signature-256",
    "x-github-delivery",
    "x-shopify-hmac-sha256",
    "x-shopify-event-id",
    "x-signature",
    "content-type",
];

/// Header values HTTP allows: visible ASCII, tabs, obs-text bytes; and some that look like
/// what the schemes expect.
fn header_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..80),
        "[ -~]{0,40}".prop_map(String::into_bytes),
        "(t=[0-9]{1,12},)?(v1=[0-9a-f]{0,64},?){0,3}".prop_map(String::into_bytes),
        "(v[0-9],[A-Za-z0-9+/=]{0,48} ?){0,3}".prop_map(String::into_bytes),
        "sha256=[0-9a-fA-F]{0,70}".prop_map(String::into_bytes),
        "[0-9]{0,25}".prop_map(String::into_bytes),
    ]
}

fn extra_headers() -> impl Strategy<Value = Vec<(&'static str, Vec<u8>)>> {
    prop::collection::vec((prop::sample::select(SCHEME_HEADERS), header_value()), 0..4)
}

/// Bodies: arbitrary bytes, and JSON-ish text around the edges keys care about (numbers as
/// sent, duplicated members, escapes, invisible and non-characters, nesting).
fn body() -> impl Strategy<Value = Vec<u8>> {
    let value = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        "-?[0-9]{1,30}(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
        "\"([a-z_0-9 |\\\\.]|\\\\u[0-9a-fA-F]{4}|\\\\[nt\"/]|\u{202E}|\u{200B}|\u{FEFF}|\u{FFFE}|\u{FFFF}){0,12}\"",
        Just("{\"id\":{}}".to_owned()),
        Just("[1,[2,[3]]]".to_owned()),
    ];
    let member = (
        prop::sample::select(&["id", "type", "customer_id", "order", "\\u0069d", "x"][..]),
        value,
    )
        .prop_map(|(name, value)| format!("\"{name}\":{value}"));
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        prop::collection::vec(member, 0..5)
            .prop_map(|m| format!("{{{}}}", m.join(",")).into_bytes()),
        (
            prop::collection::vec("[a-z0-9]{1,8}", 0..3),
            "[a-z0-9_]{1,10}"
        )
            .prop_map(|(customers, id)| {
                let mut members = vec![format!("\"id\":\"{id}\""), "\"type\":\"t\"".to_owned()];
                members.extend(customers.iter().map(|c| format!("\"customer_id\":\"{c}\"")));
                members.push(format!("\"order\":{{\"id\":\"{id}\"}}"));
                format!("{{{}}}", members.join(",")).into_bytes()
            }),
    ]
}

fn verifiers() -> Vec<Verifier> {
    let raw = "a-secret-of-enough-bytes".to_owned();
    let whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned();
    vec![
        Verifier::new(Scheme::StandardWebhooks, vec![whsec], 300).unwrap(),
        Verifier::new(Scheme::Stripe, vec![raw.clone()], 300).unwrap(),
        Verifier::new(Scheme::Github, vec![raw.clone()], 300).unwrap(),
        Verifier::new(Scheme::Shopify, vec![raw.clone()], 300).unwrap(),
        Verifier::new(
            Scheme::HmacSha256(HmacSpec {
                header: "x-signature".into(),
                encoding: Encoding::Hex,
                prefix: "sha256=".into(),
            }),
            vec![raw.clone()],
            300,
        )
        .unwrap(),
        Verifier::new(
            Scheme::HmacSha256(HmacSpec {
                header: "x-signature".into(),
                encoding: Encoding::Base64,
                prefix: String::new(),
            }),
            vec![raw],
            300,
        )
        .unwrap(),
    ]
}

fn header_map(pairs: &[(&'static str, Vec<u8>)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append(HeaderName::from_static(name), value);
        }
    }
    headers
}

proptest! {
    #![proptest_config(config())]

    /// No header set and body makes any scheme's verification panic or pass, and every
    /// refusal is one the receiver answers 401 `invalid_signature`.
    #[test]
    fn signature_verification_of_arbitrary_input(
        headers in extra_headers(),
        body in prop::collection::vec(any::<u8>(), 0..200),
        now in any::<i64>(),
    ) {
        let headers = header_map(&headers);
        for v in verifiers() {
            let result = v.verify(&headers, &body, now);
            prop_assert!(result.is_err(), "{}: {:?} verified unsigned", v.scheme().name(), headers);
            let e = result.unwrap_err();
            prop_assert!(matches!(
                e,
                SignatureError::MissingHeader(_)
                    | SignatureError::Malformed(_)
                    | SignatureError::Mismatch
                    | SignatureError::TimestampOutOfTolerance
            ));
            let status = Rejection::InvalidSignature(e).status_and_code();
            prop_assert_eq!((status.0.as_u16(), status.1), (401, "invalid_signature"));
        }
    }

    /// Key derivation over arbitrary bodies, pointers and headers: no panic, and every
    /// refusal one of the three documented 400s.
    #[test]
    fn key_derivation_of_arbitrary_input(
        body in body(),
        pointers in prop::collection::vec(
            prop_oneof![
                Just("/id".to_owned()),
                Just("/order/id".to_owned()),
                Just("/customer_id".to_owned()),
                Just("/0/1".to_owned()),
                "(/[a-z0-9~]{0,3}){0,3}",
                any::<String>(),
            ],
            1..3,
        ),
        group in prop::option::of(Just(vec!["/customer_id".to_owned()])),
        headers in extra_headers(),
    ) {
        let headers = header_map(&headers);
        let group = group.map_or(GroupSpec::Key, GroupSpec::Json);
        for spec in [
            KeySpec::Json(pointers.clone()),
            KeySpec::Header(HeaderName::from_static("webhook-id")),
            KeySpec::PayloadSha256,
        ] {
            let sha = key::sha256_hex(&body);
            let derived = key::fields(&body, &spec, &group)
                .and_then(|fields| key::derive("s", &spec, &headers, Some(&fields), &sha));
            match derived {
                Ok(k) => {
                    let value = k.strip_prefix("s:").expect("namespaced");
                    prop_assert!(!value.is_empty() && value.len() <= 1024);
                    prop_assert!(value.chars().all(|c| !c.is_control()
                        && !c.is_whitespace()
                        && !key::is_format(c)
                        && !key::is_noncharacter(c)), "{:?}", value);
                }
                Err(e) => {
                    let (status, code) = Rejection::from(e).status_and_code();
                    prop_assert_eq!(status.as_u16(), 400);
                    prop_assert!(
                        ["missing_idempotency_key", "invalid_idempotency_key", "malformed_body"]
                            .contains(&code),
                        "{}", code
                    );
                }
            }
        }
        // A body serde_json refuses is refused by the key reader too, but for a number
        // beyond f64's range, which is JSON (RFC 8259) and which the reader keeps as text.
        let refused = serde_json::from_slice::<serde_json::Value>(&body)
            .is_err_and(|e| !e.to_string().contains("number out of range"));
        if refused {
            let read = key::fields(&body, &KeySpec::Json(vec!["/id".into()]), &GroupSpec::Key);
            // Not JSON, or a member twice on the pointer's path met before the reader saw
            // where the body stops being JSON: never a key, nor a key found missing.
            prop_assert!(
                matches!(read, Err(key::KeyError::NotJson | key::KeyError::Duplicate(_))),
                "{:?}",
                read.err()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The whole receiver.
// ---------------------------------------------------------------------------------------

async fn sources() -> Sources {
    devstack::testkit::set_test_secrets();
    devstack::testkit::test_sources()
        .resolve(&AwsSecretResolver::env_only())
        .await
        .expect("the test sources resolve")
}

/// A request: signed correctly for its source over the body (or not), then altered (or not).
#[derive(Clone, Debug)]
struct Attempt {
    method: &'static str,
    source: &'static str,
    id: String,
    sign: bool,
    body: Vec<u8>,
    flip: Option<(usize, u8)>,
    extra: Vec<(&'static str, Vec<u8>)>,
}

fn attempt() -> impl Strategy<Value = Attempt> {
    (
        prop_oneof![9 => Just("POST"), 1 => Just("GET")],
        prop::sample::select(
            &[
                "github", "stripe", "acme", "shop", "strict", "orders", "nope",
            ][..],
        ),
        prop_oneof!["[A-Za-z0-9_.-]{0,12}", "[ -~]{0,12}", any::<String>()],
        prop_oneof![4 => Just(true), 1 => Just(false)],
        body(),
        prop::option::of((any::<usize>(), 1u8..=255)),
        prop_oneof![3 => Just(Vec::new()), 1 => extra_headers()],
    )
        .prop_map(|(method, source, id, sign, body, flip, extra)| Attempt {
            method,
            source,
            id,
            sign,
            body,
            flip,
            extra,
        })
}

fn signed_headers(a: &Attempt, now_s: i64) -> Vec<(&'static str, String)> {
    use devstack::testkit as t;
    let body = &a.body;
    match a.source {
        "github" | "strict" => vec![
            ("x-github-delivery", a.id.clone()),
            ("x-hub-signature-256", t::github_signature(body)),
        ],
        "stripe" => vec![("stripe-signature", t::stripe_signature(body, now_s))],
        "acme" => t::standard_webhooks_headers(&a.id, now_s, body),
        "shop" => vec![
            ("x-shopify-event-id", a.id.clone()),
            ("x-shopify-hmac-sha256", t::shopify_signature(body)),
        ],
        "orders" => vec![("x-signature", t::hmac_hex(body))],
        _ => Vec::new(),
    }
}

fn request(a: &Attempt, now_s: i64) -> lambda_http::Request {
    let mut body = a.body.clone();
    let mut headers: Vec<(&str, Vec<u8>)> = if a.sign {
        signed_headers(a, now_s)
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect()
    } else {
        Vec::new()
    };
    if let Some((at, xor)) = a.flip {
        if !body.is_empty() {
            let i = at % body.len();
            body[i] ^= xor;
        }
    }
    headers.extend(a.extra.iter().cloned());
    let mut builder = http::Request::builder()
        .method(a.method)
        .uri(format!("https://example.com/webhooks/{}", a.source));
    for (name, value) in &headers {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            builder = builder.header(*name, value);
        }
    }
    builder.body(Body::from(body)).expect("a request")
}

proptest! {
    #![proptest_config(config())]

    /// Through `Receiver::handle`: every answer is a documented row, a refusal writes
    /// nothing, an acceptance writes one ledger item and one message SQS can carry.
    #[test]
    fn the_receiver_answers_arbitrary_requests_from_its_table(attempts in prop::collection::vec(attempt(), 1..4)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let kept = MemoryQueue::new();
            let rx = Receiver::new(
                sources().await,
                MemoryLedger::new(),
                kept.clone(),
                SystemClock,
                ReceiverSettings {
                    max_body_bytes: 256,
                    ..ReceiverSettings::default()
                },
                Metrics::memory("receiver").0,
            );
            let now_s = devstack::testkit::now_ms() / 1000;
            for a in &attempts {
                let items_before = rx.ledger().snapshot().len();
                let sent_before = kept.len();
                let resp = rx.handle(request(a, now_s)).await;
                let status = resp.status().as_u16();
                let answer: serde_json::Value = serde_json::from_slice(resp.body().as_ref())
                    .map_err(|e| TestCaseError::fail(format!("not JSON: {e}")))?;
                let code = match (status, answer.get("error")) {
                    (200, None) if resp.headers().contains_key("idempotent-replayed") => "replayed".to_owned(),
                    (200, None) => "accepted".to_owned(),
                    (_, Some(code)) => code.as_str().unwrap_or_default().to_owned(),
                    _ => String::new(),
                };
                prop_assert!(
                    DOCUMENTED.contains(&(status, code.as_str())),
                    "{:?} answered {} {:?}", a, status, answer
                );
                prop_assert_ne!(status, 500, "{:?}", a);
                let items = rx.ledger().snapshot().len();
                let sent = kept.sent();
                if code == "accepted" {
                    prop_assert_eq!(items, items_before + 1);
                    prop_assert_eq!(sent.len(), sent_before + 1);
                    let text = sent[sent.len() - 1].body();
                    prop_assert!(text.chars().all(sqs_can_carry), "{}", text);
                    let envelope = Envelope::parse(text).expect("an envelope");
                    prop_assert_eq!(envelope.body_bytes().expect("decodes").len(),
                        a.body.len());
                } else {
                    prop_assert_eq!(items, items_before, "{:?}: {} wrote", a, code);
                    prop_assert_eq!(sent.len(), sent_before, "{:?}: {} sent", a, code);
                }
            }
            Ok(())
        })?;
    }
}
