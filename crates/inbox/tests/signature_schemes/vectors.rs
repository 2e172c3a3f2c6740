//! Published test vectors: each scheme against what its sender documents or its own
//! library produced.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use http::HeaderMap;
use inbox::signature::{Scheme, SignatureError};

use crate::fixtures::{verifier, STRIPE_OTHER, STRIPE_SECRET, SW_SECRET};
use crate::signer::{hmac_sha256, insert, standard_webhooks_key, with_header};

#[test]
fn standard_webhooks_published_vector_verifies() {
    // From the Standard Webhooks / Svix reference libraries' tests.
    let mut headers = HeaderMap::new();
    insert(&mut headers, "webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek");
    insert(&mut headers, "webhook-timestamp", "1614265330");
    insert(
        &mut headers,
        "webhook-signature",
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
    let body = br#"{"test": 2432232314}"#;
    let now = 1_614_265_330;

    let with_prefix = verifier(&Scheme::StandardWebhooks, &[SW_SECRET]);
    assert_eq!(with_prefix.verify(&headers, body, now), Ok(()));
    // The whsec_ prefix is optional.
    let without_prefix = verifier(
        &Scheme::StandardWebhooks,
        &["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    );
    assert_eq!(without_prefix.verify(&headers, body, now), Ok(()));
    // One byte of the payload changed.
    assert_eq!(
        with_prefix.verify(&headers, br#"{"test": 2432232315}"#, now),
        Err(SignatureError::Mismatch)
    );

    // Several entries: other versions and non-matching v1 entries are skipped.
    for value in [
        "v1,bm9wZQ== v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        "v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        "v2,AAAA   v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    ] {
        let headers = with_header(&headers, "webhook-signature", value.as_bytes());
        assert_eq!(with_prefix.verify(&headers, body, now), Ok(()), "{value}");
    }
    // The right MAC under a version other than v1 does not count.
    let headers = with_header(
        &headers,
        "webhook-signature",
        b"v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
    assert!(matches!(
        with_prefix.verify(&headers, body, now),
        Err(SignatureError::Malformed(_))
    ));
}

#[test]
fn test_signer_reproduces_the_standard_webhooks_vector() {
    // Guards the signer every other test relies on.
    let key = standard_webhooks_key(SW_SECRET);
    let mac = hmac_sha256(
        &key,
        &[
            b"msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.",
            br#"{"test": 2432232314}"#,
        ],
    );
    assert_eq!(
        B64.encode(mac),
        "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
}

#[test]
fn github_docs_vector_verifies() {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
    let mut headers = HeaderMap::new();
    insert(
        &mut headers,
        "X-Hub-Signature-256",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    );
    let github = verifier(&Scheme::Github, &["It's a Secret to Everybody"]);
    assert_eq!(github.verify(&headers, b"Hello, World!", 0), Ok(()));
    assert_eq!(
        github.verify(&headers, b"Hello, World?", 0),
        Err(SignatureError::Mismatch)
    );
    let wrong = verifier(&Scheme::Github, &["It's a Secret to Somebody"]);
    assert_eq!(
        wrong.verify(&headers, b"Hello, World!", 0),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn stripe_vector_from_the_stripe_package_verifies() {
    // Produced by stripe==16.1.0's WebhookSignature.generate_signature_header.
    let mut headers = HeaderMap::new();
    insert(
        &mut headers,
        "Stripe-Signature",
        "t=1700000000,v1=f9375b9573c6b02071e406abbdd6956761a4a237d631b3c15c60be5e350b35ea",
    );
    let body = br#"{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}"#;
    let stripe = verifier(&Scheme::Stripe, &[STRIPE_SECRET]);
    assert_eq!(stripe.verify(&headers, body, 1_700_000_000), Ok(()));
    assert_eq!(
        verifier(&Scheme::Stripe, &[STRIPE_OTHER]).verify(&headers, body, 1_700_000_000),
        Err(SignatureError::Mismatch)
    );
    // Non-ASCII body, also from the stripe package.
    let mut headers = HeaderMap::new();
    insert(
        &mut headers,
        "Stripe-Signature",
        "t=1700000000,v1=023fe7002c6e7c46735815ffc03fbe9e4e17504be5ccd7694ae33056affd2ee9",
    );
    let stripe = verifier(&Scheme::Stripe, &["whsec_x"]);
    assert_eq!(
        stripe.verify(&headers, "héllo ✓".as_bytes(), 1_700_000_000),
        Ok(())
    );
}

#[test]
fn shopify_vector_from_python_hmac_verifies() {
    // base64(HMAC-SHA256("shpss_example", "Zoë ✓ 日本")) from Python's hmac module.
    let mut headers = HeaderMap::new();
    insert(
        &mut headers,
        "X-Shopify-Hmac-Sha256",
        "XJhhUY6JCh7yLcDir9Iggttm2lJOaKtD6mx+V6wMicQ=",
    );
    let shopify = verifier(&Scheme::Shopify, &["shpss_example"]);
    assert_eq!(shopify.verify(&headers, "Zoë ✓ 日本".as_bytes(), 0), Ok(()));
    assert_eq!(
        shopify.verify(&headers, "Zoe ✓ 日本".as_bytes(), 0),
        Err(SignatureError::Mismatch)
    );
}
