//! Construction, names, redaction: scheme names and the headers they read, bad secrets
//! refused with their position, `Debug` that never shows a secret, a verifier shared across
//! threads.

use inbox::signature::{Encoding, HmacSpec, Scheme, Verifier};

use crate::fixtures::{hex_spec, signing_schemes, verifier, RAW_SECRET, SW_SECRET, TOLERANCE};
use crate::signer::standard_webhooks_key;

#[test]
fn scheme_names_and_headers() {
    let cases = [
        (
            Scheme::StandardWebhooks,
            "standard-webhooks",
            vec!["webhook-id", "webhook-timestamp", "webhook-signature"],
        ),
        (Scheme::Stripe, "stripe", vec!["stripe-signature"]),
        (Scheme::Github, "github", vec!["x-hub-signature-256"]),
        (Scheme::Shopify, "shopify", vec!["x-shopify-hmac-sha256"]),
        (hex_spec(), "hmac-sha256", vec!["x-acme-signature"]),
        (Scheme::None, "none", vec![]),
    ];
    for (scheme, name, headers) in cases {
        assert_eq!(scheme.name(), name);
        assert_eq!(scheme.header_names(), headers, "{name}");
        if scheme != Scheme::None {
            let secret = if scheme == Scheme::StandardWebhooks {
                SW_SECRET
            } else {
                RAW_SECRET
            };
            assert_eq!(verifier(&scheme, &[secret]).scheme(), &scheme);
        }
    }
}

#[test]
fn bad_secrets_are_refused_with_their_position() {
    let secrets = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let cases: Vec<(Scheme, Vec<String>, Vec<&str>)> = vec![
        (
            Scheme::StandardWebhooks,
            secrets(&["whsec_not*base64!"]),
            vec!["secret #1", "base64", "whsec_"],
        ),
        (
            Scheme::StandardWebhooks,
            secrets(&[SW_SECRET, "whsec_%%%"]),
            vec!["secret #2", "base64"],
        ),
        (
            Scheme::StandardWebhooks,
            secrets(&["not*base64"]),
            vec!["secret #1", "base64"],
        ),
        (
            Scheme::StandardWebhooks,
            secrets(&["whsec_"]),
            vec!["secret #1", "empty"],
        ),
        (Scheme::Stripe, secrets(&[""]), vec!["secret #1", "empty"]),
        (
            Scheme::Github,
            secrets(&[RAW_SECRET, "s3cret\n"]),
            vec!["secret #2", "whitespace"],
        ),
        (
            Scheme::Stripe,
            Vec::new(),
            vec!["stripe", "at least one secret"],
        ),
        (
            Scheme::StandardWebhooks,
            Vec::new(),
            vec!["standard-webhooks", "at least one secret"],
        ),
    ];
    for (scheme, secrets, needles) in cases {
        let err = Verifier::new(scheme.clone(), secrets.clone(), TOLERANCE).expect_err(&format!(
            "{} with {} secrets",
            scheme.name(),
            secrets.len()
        ));
        for needle in needles {
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        }
        for secret in &secrets {
            let material = secret.trim_start_matches("whsec_").trim();
            if material.len() > 3 {
                assert!(!err.contains(material), "{err:?} leaks a secret");
            }
        }
    }

    let bad_header = Scheme::HmacSha256(HmacSpec {
        header: "bad header:".to_owned(),
        encoding: Encoding::Hex,
        prefix: String::new(),
    });
    let err =
        Verifier::new(bad_header, vec![RAW_SECRET.to_owned()], TOLERANCE).expect_err("bad header");
    assert!(err.contains("header"), "{err}");
}

#[test]
fn debug_output_never_shows_secrets() {
    for (scheme, secret, other) in signing_schemes() {
        let v = verifier(&scheme, &[secret, other]);
        let debug = format!("{v:?} {v:#?}");
        for material in [secret, other] {
            let stripped = material.trim_start_matches("whsec_");
            assert!(!debug.contains(stripped), "{debug} leaks a secret");
        }
        for key in [standard_webhooks_key(SW_SECRET), secret.as_bytes().to_vec()] {
            assert!(
                !debug.contains(&hex::encode(&key)),
                "{debug} leaks key bytes"
            );
        }
        assert!(
            debug.contains(&format!("{scheme:?}")),
            "{debug} should show the scheme"
        );
        assert!(
            debug.contains("2 redacted"),
            "{debug} should count the secrets"
        );
    }
}

#[test]
fn verifier_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Verifier>();
}
