//! `WEBHOOK_SOURCES` as a whole: the example from the documentation parses, every error
//! names its source and field, retention is checked against the queue's.

use super::*;
use crate::signature::{Encoding, HmacSpec, Scheme};

fn err(json: &str) -> String {
    SourceSpecs::parse(json).unwrap_err().to_string()
}

#[test]
fn parses_the_design_example() {
    let specs = SourceSpecs::parse(
        r#"{
          "stripe": {"signature": {"scheme": "stripe", "secrets": ["env:STRIPE_WEBHOOK_SECRET"], "tolerance_seconds": 300},
                     "key": {"from": "json", "pointers": ["/id"]}, "group": {"from": "key"},
                     "delivery": "effectively_once", "retention_hours": 168},
          "github": {"signature": {"scheme": "github", "secrets": ["env:GITHUB_WEBHOOK_SECRET"]},
                     "key": {"from": "header", "name": "X-GitHub-Delivery"}},
          "acme": {"signature": {"scheme": "standard-webhooks", "secrets": ["env:ACME_WEBHOOK_SECRET"]},
                   "key": {"from": "header", "name": "webhook-id"},
                   "group": {"from": "json", "pointers": ["/customer_id"]}}
        }"#,
    )
    .unwrap();
    let stripe = specs.get("stripe").unwrap();
    assert_eq!(stripe.key, KeySpec::Json(vec!["/id".into()]));
    assert_eq!(stripe.scheme, Scheme::Stripe);
    let github = specs.get("github").unwrap();
    assert_eq!(
        github.key,
        KeySpec::Header(http::HeaderName::from_static("x-github-delivery"))
    );
    assert_eq!(github.delivery, Delivery::EffectivelyOnce);
    assert_eq!(github.retention_hours, DEFAULT_RETENTION_HOURS);
    assert_eq!(github.tolerance_seconds, DEFAULT_TOLERANCE_SECONDS);
    let acme = specs.get("acme").unwrap();
    assert_eq!(acme.group, GroupSpec::Json(vec!["/customer_id".into()]));
    assert_eq!(acme.on_payload_mismatch, OnPayloadMismatch::Accept);
}

#[test]
fn errors_name_the_source_and_the_field() {
    let e = err(
        r#"{"shop": {"signature": {"scheme": "sha1", "secrets": ["env:X"]}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(
        e.contains("`shop`") && e.contains("signature.scheme"),
        "{e}"
    );
    let e = err(
        r#"{"shop": {"signature": {"scheme": "github", "secrets": ["hunter2"]}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(
        e.contains("signature.secrets") && !e.contains("hunter2"),
        "{e}"
    );
    let e = err(
        r#"{"shop": {"signature": {"scheme": "github", "secrets": []}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("signature.secrets"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none", "secrets": ["env:X"]}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("scheme `none` takes no secrets"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "json", "pointers": []}}}"#,
    );
    assert!(e.contains("key.pointers"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "json", "pointers": ["id"]}}}"#,
    );
    assert!(
        e.contains("key.pointers") && e.contains("JSON pointer"),
        "{e}"
    );
    let e = err(r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "header"}}}"#);
    assert!(e.contains("key.name"), "{e}");
    let e = err(r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "time"}}}"#);
    assert!(e.contains("key.from"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "delivery": "maybe"}}"#,
    );
    assert!(e.contains("`shop`, field `delivery`"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "retention_hours": 0}}"#,
    );
    assert!(e.contains("retention_hours"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "colour": 1}}"#,
    );
    assert!(e.contains("`shop`") && e.contains("colour"), "{e}");
    let e = err(r#"{"shop": {"key": {"from": "payload_sha256"}}}"#);
    assert!(e.contains("`shop`") && e.contains("signature"), "{e}");
    let e = err(
        r#"{"bad/name": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("`bad/name`") && e.contains("name"), "{e}");
    let e = err(
        r#"{"h": {"signature": {"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Sig"}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("signature.encoding"), "{e}");
    assert!(err("[]").contains("not a JSON object"));
    assert!(err("{}").contains("no source"));
    assert!(err("{").contains("not a JSON object"));
}

#[test]
fn retention_must_outlast_the_queue() {
    let specs = SourceSpecs::parse(
        r#"{"short": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "retention_hours": 96},
            "long": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}}}"#,
    )
    .unwrap();
    let e = specs.check_retention(345_600).unwrap_err().to_string();
    assert!(
        e.contains("`short`") && e.contains("retention_hours"),
        "{e}"
    );
    assert!(specs.check_retention(345_599).is_ok());
}

#[test]
fn hmac_scheme_and_reject_policy_parse() {
    let specs = SourceSpecs::parse(r#"{"h": {"signature": {"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Sig", "encoding": "base64", "prefix": "sha256="},
          "key": {"from": "json", "pointers": ["/type", "/data/id"]}, "on_payload_mismatch": "reject", "delivery": "at_most_once"}}"#).unwrap();
    let h = specs.get("h").unwrap();
    assert_eq!(
        h.scheme,
        Scheme::HmacSha256(HmacSpec {
            header: "x-sig".into(),
            encoding: Encoding::Base64,
            prefix: "sha256=".into()
        })
    );
    assert_eq!(h.on_payload_mismatch, OnPayloadMismatch::Reject);
    assert_eq!(h.delivery, Delivery::AtMostOnce);
    assert_eq!(
        h.key,
        KeySpec::Json(vec!["/type".into(), "/data/id".into()])
    );
}
