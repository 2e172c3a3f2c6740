//! The shared fixtures: the clock, bodies and secrets the tests sign with, the two custom
//! `hmac-sha256` specs, every signing scheme with a good and a wrong secret, and a verifier.

use inbox::signature::{Encoding, HmacSpec, Scheme, Verifier};

pub(crate) const NOW: i64 = 1_700_000_000;
pub(crate) const TOLERANCE: u64 = 300;
pub(crate) const ID: &str = "msg_2bVa0y2yKq1lVY0Hq5ZgnS3yTwQ";
pub(crate) const BODY: &[u8] = br#"{"id":"evt_1","amount":100,"currency":"eur"}"#;
/// Not UTF-8 (lone continuation bytes, an invalid sequence) and containing NUL.
pub(crate) const BINARY_BODY: &[u8] = &[0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80, b'.', 0x0a];

pub(crate) const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub(crate) const SW_OTHER: &str = "whsec_YSBkaWZmZXJlbnQgMjQtYnl0ZSBrZXkhIQ==";
pub(crate) const STRIPE_SECRET: &str = "whsec_2fa1b7bd5b0b0e6b2bfa2b6d8c2b4f3a";
pub(crate) const STRIPE_OTHER: &str = "whsec_00000000000000000000000000000000";
pub(crate) const RAW_SECRET: &str = "It's a Secret to Everybody";
pub(crate) const RAW_OTHER: &str = "It's a Secret to Nobody";

pub(crate) fn verifier(scheme: &Scheme, secrets: &[&str]) -> Verifier {
    Verifier::new(
        scheme.clone(),
        secrets.iter().map(|s| (*s).to_owned()).collect(),
        TOLERANCE,
    )
    .expect("valid test secrets")
}

pub(crate) fn hex_spec() -> Scheme {
    Scheme::HmacSha256(HmacSpec {
        header: "X-Acme-Signature".to_owned(),
        encoding: Encoding::Hex,
        prefix: "sha256=".to_owned(),
    })
}

pub(crate) fn base64_spec() -> Scheme {
    Scheme::HmacSha256(HmacSpec {
        header: "x-signature".to_owned(),
        encoding: Encoding::Base64,
        prefix: String::new(),
    })
}

/// Every signing scheme with a valid secret and a different valid secret.
pub(crate) fn signing_schemes() -> Vec<(Scheme, &'static str, &'static str)> {
    vec![
        (Scheme::StandardWebhooks, SW_SECRET, SW_OTHER),
        (Scheme::Stripe, STRIPE_SECRET, STRIPE_OTHER),
        (Scheme::Github, RAW_SECRET, RAW_OTHER),
        (Scheme::Shopify, RAW_SECRET, RAW_OTHER),
        (hex_spec(), RAW_SECRET, RAW_OTHER),
        (base64_spec(), RAW_SECRET, RAW_OTHER),
    ]
}
