//! Properties: verify never panics and rejects junk headers; sign then verify round-trips,
//! and one flipped body bit is a mismatch.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::signature::{Scheme, SignatureError};
use proptest::prelude::*;

use crate::fixtures::{signing_schemes, verifier};
use crate::signer::sign;

/// A header value of arbitrary bytes (those `http` accepts).
fn any_header_value() -> impl Strategy<Value = HeaderValue> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..80).prop_filter_map(
            "not a header value",
            |bytes| HeaderValue::from_bytes(&bytes).ok()
        ),
        "[ -~]{0,120}".prop_map(|s| HeaderValue::from_str(&s).expect("printable ascii")),
        // Near-misses of the real formats, to get past the first parser checks.
        "t=[0-9]{0,30},v1=[0-9a-fA-F]{0,70}(,v[0-9]=[0-9a-f]{0,64}){0,3}"
            .prop_map(|s| HeaderValue::from_str(&s).expect("ascii")),
        "(v1,[A-Za-z0-9+/]{0,48}={0,2} ?){0,4}"
            .prop_map(|s| HeaderValue::from_str(&s).expect("ascii")),
        "(sha256=)?[0-9a-f]{0,66}".prop_map(|s| HeaderValue::from_str(&s).expect("ascii")),
        "[0-9]{0,25}".prop_map(|s| HeaderValue::from_str(&s).expect("ascii")),
    ]
}

fn any_signing_scheme() -> impl Strategy<Value = (Scheme, &'static str)> {
    (0..signing_schemes().len()).prop_map(|i| {
        let (scheme, secret, _) = signing_schemes().swap_remove(i);
        (scheme, secret)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn verify_never_panics_and_rejects_junk(
        (scheme, secret) in any_signing_scheme(),
        values in proptest::collection::vec(proptest::option::of(any_header_value()), 3),
        body in proptest::collection::vec(any::<u8>(), 0..256),
        now in any::<i64>(),
    ) {
        let v = verifier(&scheme, &[secret]);
        let mut headers = HeaderMap::new();
        for (name, value) in scheme.header_names().iter().zip(values) {
            if let Some(value) = value {
                headers.insert(HeaderName::from_bytes(name.as_bytes()).expect("name"), value);
            }
        }
        let refused = v.verify(&headers, &body, now);
        prop_assert!(
            matches!(
                refused,
                Err(SignatureError::MissingHeader(_)
                    | SignatureError::Malformed(_)
                    | SignatureError::Mismatch
                    | SignatureError::TimestampOutOfTolerance)
            ),
            "{:?}",
            refused
        );
    }

    #[test]
    fn sign_then_verify_round_trips(
        (scheme, _) in any_signing_scheme(),
        key in proptest::collection::vec(any::<u8>(), 1..64),
        raw_secret in "[!-~][ -~]{0,40}[!-~]",
        body in proptest::collection::vec(any::<u8>(), 0..512),
        timestamp in 0i64..4_000_000_000,
        skew in -300i64..=300,
        flip in any::<proptest::sample::Index>(),
    ) {
        let secret = if scheme == Scheme::StandardWebhooks {
            format!("whsec_{}", B64.encode(&key))
        } else {
            raw_secret
        };
        let v = verifier(&scheme, &[&secret]);
        let signed = sign(&scheme, &secret, timestamp, &body);
        prop_assert_eq!(v.verify(&signed, &body, timestamp + skew), Ok(()));

        let mut tampered = body.clone();
        if tampered.is_empty() {
            tampered.push(0);
        } else {
            let at = flip.index(tampered.len());
            tampered[at] ^= 0x01;
        }
        prop_assert_eq!(
            v.verify(&signed, &tampered, timestamp + skew),
            Err(SignatureError::Mismatch)
        );
    }
}
