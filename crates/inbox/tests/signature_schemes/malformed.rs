//! Malformed signature headers, scheme by scheme: each is refused as malformed, never as a
//! mismatch or a panic.

use http::HeaderMap;
use inbox::signature::{Scheme, SignatureError, Verifier};

use crate::fixtures::{
    base64_spec, hex_spec, verifier, BODY, NOW, RAW_SECRET, STRIPE_SECRET, SW_SECRET,
};
use crate::signer::{header_text, sign, with_header};

fn assert_malformed(v: &Verifier, headers: &HeaderMap, what: &str) {
    let result = v.verify(headers, BODY, NOW);
    assert!(
        matches!(result, Err(SignatureError::Malformed(_))),
        "{}: {what} gave {result:?}",
        v.scheme().name()
    );
}

#[test]
fn standard_webhooks_malformed_headers() {
    let v = verifier(&Scheme::StandardWebhooks, &[SW_SECRET]);
    let signed = sign(&Scheme::StandardWebhooks, SW_SECRET, NOW, BODY);
    let good_sig = header_text(&signed, "webhook-signature");
    let good_b64 = good_sig.trim_start_matches("v1,");
    for value in [
        "v1".to_owned(),
        good_b64.to_owned(),
        format!("v1;{good_b64}"),
        format!("v1,{good_b64}!"),
        "v1,$$$$".to_owned(),
        format!("v1,{} {good_sig}", "not base64"),
        format!("v2,{good_b64}"),
        format!("V1,{good_b64}"),
    ] {
        let headers = with_header(&signed, "webhook-signature", value.as_bytes());
        assert_malformed(&v, &headers, &format!("webhook-signature {value:?}"));
    }
    for value in [
        "abc",
        "-1700000000",
        "+1700000000",
        "1700000000.5",
        "1.7e9",
        "0x6553f100",
        "99999999999999999999999999",
        "9223372036854775808",
        "17 00000000",
    ] {
        let headers = with_header(&signed, "webhook-timestamp", value.as_bytes());
        assert_malformed(&v, &headers, &format!("webhook-timestamp {value:?}"));
    }
    // Extra spaces between entries are fine.
    let spaced = with_header(
        &signed,
        "webhook-signature",
        format!("  v1,AAAA   {good_sig} ").as_bytes(),
    );
    assert_eq!(v.verify(&spaced, BODY, NOW), Ok(()));
    // The id is part of the signed content.
    let other_id = with_header(&signed, "webhook-id", b"msg_other");
    assert_eq!(
        v.verify(&other_id, BODY, NOW),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn stripe_malformed_headers() {
    let v = verifier(&Scheme::Stripe, &[STRIPE_SECRET]);
    let signed = sign(&Scheme::Stripe, STRIPE_SECRET, NOW, BODY);
    let good = header_text(&signed, "stripe-signature");
    let mac = good.split_once(",v1=").expect("v1").1.to_owned();
    for value in [
        "garbage".to_owned(),
        format!("v1={mac}"),
        format!("t={NOW}"),
        format!("t={NOW},v0={mac}"),
        format!("t=abc,v1={mac}"),
        format!("t=,v1={mac}"),
        format!("t=-{NOW},v1={mac}"),
        format!("t=99999999999999999999999999999,v1={mac}"),
        format!("t={NOW},t={NOW},v1={mac}"),
        format!("t={NOW},v1=zz{mac}"),
        format!("t={NOW},v1={}", &mac[1..]),
        format!("t={NOW};v1={mac}"),
        format!("t={NOW},v1"),
    ] {
        let headers = with_header(&signed, "stripe-signature", value.as_bytes());
        assert_malformed(&v, &headers, &format!("stripe-signature {value:?}"));
    }
    // Stripe's real shape: several v1 (during secret rotation), a v0, unknown keys, spaces.
    let wrong = "0".repeat(64);
    for value in [
        format!("t={NOW},v1={wrong},v1={mac},v0={wrong}"),
        format!("t={NOW}, v1={mac}, future=1"),
        format!("v1={mac},t={NOW}"),
        format!("t={NOW},v1={},", mac.to_uppercase()),
    ] {
        let headers = with_header(&signed, "stripe-signature", value.as_bytes());
        assert_eq!(v.verify(&headers, BODY, NOW), Ok(()), "{value}");
    }
    // The timestamp is part of the signed content.
    let shifted = with_header(
        &signed,
        "stripe-signature",
        format!("t={},v1={mac}", NOW + 1).as_bytes(),
    );
    assert_eq!(v.verify(&shifted, BODY, NOW), Err(SignatureError::Mismatch));
}

#[test]
fn github_shopify_and_hmac_malformed_headers() {
    let github = verifier(&Scheme::Github, &[RAW_SECRET]);
    let signed = sign(&Scheme::Github, RAW_SECRET, NOW, BODY);
    let mac = header_text(&signed, "x-hub-signature-256")
        .trim_start_matches("sha256=")
        .to_owned();
    for value in [
        mac.clone(),
        format!("sha1={mac}"),
        format!("SHA256={mac}"),
        format!("sha256={mac}0"),
        format!("sha256=g{}", &mac[1..]),
    ] {
        let headers = with_header(&signed, "x-hub-signature-256", value.as_bytes());
        assert_malformed(&github, &headers, &value);
    }

    let shopify = verifier(&Scheme::Shopify, &[RAW_SECRET]);
    let signed = sign(&Scheme::Shopify, RAW_SECRET, NOW, BODY);
    let mac = header_text(&signed, "x-shopify-hmac-sha256");
    for value in [
        "***".to_owned(),
        format!("{mac}$"),
        format!("sha256={mac}"),
        "A".to_owned(),
    ] {
        let headers = with_header(&signed, "x-shopify-hmac-sha256", value.as_bytes());
        assert_malformed(&shopify, &headers, &value);
    }
    // Unpadded base64 is accepted.
    let unpadded = with_header(
        &signed,
        "x-shopify-hmac-sha256",
        mac.trim_end_matches('=').as_bytes(),
    );
    assert_eq!(shopify.verify(&unpadded, BODY, NOW), Ok(()));

    // A declared prefix must be present.
    let custom = verifier(&hex_spec(), &[RAW_SECRET]);
    let signed = sign(&hex_spec(), RAW_SECRET, NOW, BODY);
    let mac = header_text(&signed, "x-acme-signature")
        .trim_start_matches("sha256=")
        .to_owned();
    let headers = with_header(&signed, "x-acme-signature", mac.as_bytes());
    assert_malformed(&custom, &headers, "hex without the declared prefix");
    // A base64 spec does not accept hex.
    let b64 = verifier(&base64_spec(), &[RAW_SECRET]);
    let headers = with_header(&HeaderMap::new(), "x-signature", mac.as_bytes());
    assert_eq!(
        b64.verify(&headers, BODY, NOW),
        Err(SignatureError::Mismatch)
    );
}

/// A Standard Webhooks id holding `.`: the signed content `id.timestamp.body` would be
/// ambiguous (id `a.T1`, timestamp `T2`, body `B` sign `a.T1.T2.B`, as do id `a`, timestamp
/// `T1`, body `T2.B`: another id, another body, one MAC), so it is refused as malformed,
/// before any MAC, even when the MAC over it is right.
#[test]
fn standard_webhooks_id_with_a_dot_is_refused_even_correctly_signed() {
    use base64::engine::general_purpose::STANDARD as B64;
    use base64::Engine as _;

    use crate::signer::{hmac_sha256, insert, standard_webhooks_key};

    let v = verifier(&Scheme::StandardWebhooks, &[SW_SECRET]);
    let ts = NOW.to_string();
    for id in ["msg.1", ".", "msg_1.", ".msg_1", "a..b"] {
        let mac = hmac_sha256(
            &standard_webhooks_key(SW_SECRET),
            &[id.as_bytes(), b".", ts.as_bytes(), b".", BODY],
        );
        let mut headers = HeaderMap::new();
        insert(&mut headers, "webhook-id", id);
        insert(&mut headers, "webhook-timestamp", &ts);
        insert(
            &mut headers,
            "webhook-signature",
            &format!("v1,{}", B64.encode(mac)),
        );
        assert_malformed(&v, &headers, &format!("webhook-id {id:?}"));
    }
    // The same request with an id without a dot verifies: the dot alone is refused.
    let mac = hmac_sha256(
        &standard_webhooks_key(SW_SECRET),
        &[b"msg_1", b".", ts.as_bytes(), b".", BODY],
    );
    let mut headers = HeaderMap::new();
    insert(&mut headers, "webhook-id", "msg_1");
    insert(&mut headers, "webhook-timestamp", &ts);
    insert(
        &mut headers,
        "webhook-signature",
        &format!("v1,{}", B64.encode(mac)),
    );
    assert_eq!(v.verify(&headers, BODY, NOW), Ok(()));
}
