//! The same accept/reject behaviour, scheme by scheme: right and wrong secrets, rotation,
//! tampered bodies and MACs, binary bodies; and the `none` scheme.

use http::{HeaderMap, HeaderName};
use inbox::signature::{Scheme, SignatureError, Verifier};

use crate::fixtures::{
    base64_spec, hex_spec, verifier, BINARY_BODY, BODY, NOW, RAW_OTHER, RAW_SECRET, STRIPE_OTHER,
    STRIPE_SECRET, SW_OTHER, SW_SECRET, TOLERANCE,
};
use crate::signer::{header_text, sign, sign_with, signature_header, with_header};

#[allow(
    clippy::too_many_lines,
    reason = "the behaviour every scheme shares, one check after another"
)]
fn check_common_behaviour(scheme: &Scheme, secret: &str, other: &str) {
    let name = scheme.name();
    let good = verifier(scheme, &[secret]);
    let signed = sign(scheme, secret, NOW, BODY);
    let sig_header = signature_header(scheme);

    // Valid.
    assert_eq!(good.verify(&signed, BODY, NOW), Ok(()), "{name}: valid");

    // Wrong secret, either way round.
    assert_eq!(
        verifier(scheme, &[other]).verify(&signed, BODY, NOW),
        Err(SignatureError::Mismatch),
        "{name}: verifier has the wrong secret"
    );
    let by_other = sign(scheme, other, NOW, BODY);
    assert_eq!(
        good.verify(&by_other, BODY, NOW),
        Err(SignatureError::Mismatch),
        "{name}: signed with the wrong secret"
    );

    // Tampered body.
    let mut flipped = BODY.to_vec();
    flipped[7] ^= 0x01;
    let mut appended = BODY.to_vec();
    appended.push(b' ');
    for tampered in [
        flipped,
        appended,
        BODY[..BODY.len() - 1].to_vec(),
        Vec::new(),
    ] {
        assert_eq!(
            good.verify(&signed, &tampered, NOW),
            Err(SignatureError::Mismatch),
            "{name}: tampered body {:?}",
            String::from_utf8_lossy(&tampered)
        );
    }

    // Missing or empty headers, one at a time.
    for header in scheme.header_names() {
        let mut missing = signed.clone();
        missing.remove(header.as_str());
        assert_eq!(
            good.verify(&missing, BODY, NOW),
            Err(SignatureError::MissingHeader(header.clone())),
            "{name}: without {header}"
        );
        let empty = with_header(&signed, &header, b"");
        assert_eq!(
            good.verify(&empty, BODY, NOW),
            Err(SignatureError::MissingHeader(header.clone())),
            "{name}: empty {header}"
        );
    }
    assert_eq!(
        good.verify(&HeaderMap::new(), BODY, NOW),
        Err(SignatureError::MissingHeader(
            scheme.header_names()[0].clone()
        )),
        "{name}: no headers at all"
    );

    // Non-ASCII and duplicated signature headers are malformed, not a panic or a match.
    let non_ascii = with_header(&signed, &sig_header, "é=✓,v1,sha256=".as_bytes());
    assert!(
        matches!(
            good.verify(&non_ascii, BODY, NOW),
            Err(SignatureError::Malformed(_))
        ),
        "{name}: non-ASCII header value"
    );
    let mut duplicated = signed.clone();
    let value = signed[sig_header.as_str()].clone();
    duplicated.append(
        HeaderName::from_bytes(sig_header.as_bytes()).expect("valid name"),
        value,
    );
    assert!(
        matches!(
            good.verify(&duplicated, BODY, NOW),
            Err(SignatureError::Malformed(_))
        ),
        "{name}: duplicated header"
    );

    // Rotation: either listed secret matches.
    let rotating = verifier(scheme, &[other, secret]);
    assert_eq!(
        rotating.verify(&signed, BODY, NOW),
        Ok(()),
        "{name}: second secret"
    );
    assert_eq!(
        rotating.verify(&by_other, BODY, NOW),
        Ok(()),
        "{name}: first secret"
    );
    let third = sign(scheme, "whsec_dGhpcmQgc2VjcmV0IGtleQ==", NOW, BODY);
    assert_eq!(
        rotating.verify(&third, BODY, NOW),
        Err(SignatureError::Mismatch),
        "{name}: an unlisted secret"
    );

    // Truncated, extended or corrupted MACs, properly encoded: a mismatch, never a match.
    for keep in 1..32 {
        let truncated = sign_with(scheme, secret, NOW, BODY, &|mac| mac[..keep].to_vec());
        assert_eq!(
            good.verify(&truncated, BODY, NOW),
            Err(SignatureError::Mismatch),
            "{name}: MAC truncated to {keep} bytes"
        );
    }
    let extended = sign_with(scheme, secret, NOW, BODY, &|mut mac| {
        mac.push(0);
        mac
    });
    assert_eq!(
        good.verify(&extended, BODY, NOW),
        Err(SignatureError::Mismatch),
        "{name}: +1 byte"
    );
    let corrupted = sign_with(scheme, secret, NOW, BODY, &|mut mac| {
        mac[31] ^= 0x80;
        mac
    });
    assert_eq!(
        good.verify(&corrupted, BODY, NOW),
        Err(SignatureError::Mismatch),
        "{name}: bit flip"
    );

    // Truncated header text at every length: rejected without panicking (dropping only
    // base64 padding is the same signature).
    let full = header_text(&signed, &sig_header);
    let unpadded = full.trim_end_matches('=');
    for cut in 0..full.len() {
        let truncated = with_header(&signed, &sig_header, &full.as_bytes()[..cut]);
        let result = good.verify(&truncated, BODY, NOW);
        if cut == unpadded.len() && cut < full.len() {
            assert_eq!(result, Ok(()), "{name}: unpadded base64");
            continue;
        }
        assert!(
            matches!(
                result,
                Err(SignatureError::Mismatch
                    | SignatureError::Malformed(_)
                    | SignatureError::MissingHeader(_))
            ),
            "{name}: header cut to {:?} gave {result:?}",
            &full[..cut]
        );
    }

    // Bodies that are not UTF-8.
    let binary = sign(scheme, secret, NOW, BINARY_BODY);
    assert_eq!(
        good.verify(&binary, BINARY_BODY, NOW),
        Ok(()),
        "{name}: binary body"
    );
    let mut tampered = BINARY_BODY.to_vec();
    tampered[0] = 0xfe;
    assert_eq!(
        good.verify(&binary, &tampered, NOW),
        Err(SignatureError::Mismatch),
        "{name}: tampered binary body"
    );
}

#[test]
fn standard_webhooks_behaviour() {
    check_common_behaviour(&Scheme::StandardWebhooks, SW_SECRET, SW_OTHER);
}

#[test]
fn stripe_behaviour() {
    check_common_behaviour(&Scheme::Stripe, STRIPE_SECRET, STRIPE_OTHER);
}

#[test]
fn github_behaviour() {
    check_common_behaviour(&Scheme::Github, RAW_SECRET, RAW_OTHER);
}

#[test]
fn shopify_behaviour() {
    check_common_behaviour(&Scheme::Shopify, RAW_SECRET, RAW_OTHER);
}

#[test]
fn hmac_sha256_hex_with_prefix_behaviour() {
    check_common_behaviour(&hex_spec(), RAW_SECRET, RAW_OTHER);
}

#[test]
fn hmac_sha256_base64_behaviour() {
    check_common_behaviour(&base64_spec(), RAW_SECRET, RAW_OTHER);
}

#[test]
fn none_scheme_accepts_anything_and_takes_no_secrets() {
    let none = Verifier::new(Scheme::None, Vec::new(), TOLERANCE).expect("no secrets");
    assert_eq!(
        none.verify(&HeaderMap::new(), BINARY_BODY, i64::MIN),
        Ok(())
    );
    let garbage = with_header(&HeaderMap::new(), "webhook-signature", b"v1,???");
    assert_eq!(none.verify(&garbage, b"", NOW), Ok(()));
    let err = Verifier::new(Scheme::None, vec!["s".to_owned()], TOLERANCE)
        .expect_err("none with a secret");
    assert!(err.contains("none"), "{err}");
}
