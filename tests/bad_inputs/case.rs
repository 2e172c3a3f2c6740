//! One bad request and its documented answer: the `Case` type, the answers by error code, the
//! sample bodies the corpus signs, and the header and body helpers it builds cases with.

use devstack::testkit::{self, stripe_signature};

/// One bad request and its documented answer.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) method: &'static str,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) status: u16,
    pub(crate) code: &'static str,
}

pub(crate) fn case(
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

pub(crate) const SIG: (u16, &str) = (401, "invalid_signature");
pub(crate) const MISSING: (u16, &str) = (400, "missing_idempotency_key");
pub(crate) const INVALID: (u16, &str) = (400, "invalid_idempotency_key");
pub(crate) const MALFORMED: (u16, &str) = (400, "malformed_body");
pub(crate) const UNKNOWN: (u16, &str) = (404, "unknown_source");
pub(crate) const METHOD: (u16, &str) = (405, "method_not_allowed");
pub(crate) const TOO_LARGE: (u16, &str) = (413, "payload_too_large");

/// The bodies the corpus signs: a GitHub push, a Stripe event, an `acme` (Standard Webhooks)
/// payment and an `orders` (generic HMAC) order.
pub(crate) const GITHUB_BODY: &[u8] = br#"{"action":"opened","number":1}"#;
pub(crate) const STRIPE_BODY: &[u8] = br#"{"id":"evt_bad","type":"invoice.paid"}"#;
pub(crate) const ACME_BODY: &[u8] = br#"{"customer_id":"cus_1","amount":5}"#;
pub(crate) const ORDER_BODY: &[u8] = br#"{"type":"order.paid","order":{"id":7}}"#;

pub(crate) fn gh(delivery: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    testkit::github_headers(delivery, body)
}

pub(crate) fn gh_sig(delivery: &str, signature: &str) -> Vec<(&'static str, String)> {
    vec![
        ("x-github-delivery", delivery.to_owned()),
        ("x-hub-signature-256", signature.to_owned()),
    ]
}

pub(crate) fn stripe(body: &[u8], t: i64) -> Vec<(&'static str, String)> {
    vec![("stripe-signature", stripe_signature(body, t))]
}

pub(crate) fn stripe_raw(value: &str) -> Vec<(&'static str, String)> {
    vec![("stripe-signature", value.to_owned())]
}

pub(crate) fn without(
    mut headers: Vec<(&'static str, String)>,
    name: &str,
) -> Vec<(&'static str, String)> {
    headers.retain(|(k, _)| *k != name);
    headers
}

pub(crate) fn replace(
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
pub(crate) fn nested_arrays(n: usize) -> Vec<u8> {
    let mut v = "[".repeat(n).into_bytes();
    v.extend("]".repeat(n).into_bytes());
    v
}

/// `{"id":"evt_deep","x":{"x":{…}}}`, `n` deep.
pub(crate) fn nested_objects(n: usize) -> Vec<u8> {
    let mut v = br#"{"id":"evt_deep","x":"#.to_vec();
    v.extend(r#"{"x":"#.repeat(n).into_bytes());
    v.extend(b"1");
    v.extend("}".repeat(n + 1).into_bytes());
    v
}
