//! Timestamps: the tolerance window of the timestamped schemes (Standard Webhooks, Stripe),
//! and the schemes that ignore the clock.

use inbox::signature::{Scheme, SignatureError, Verifier};

use crate::fixtures::{
    signing_schemes, verifier, BODY, NOW, STRIPE_OTHER, STRIPE_SECRET, SW_OTHER, SW_SECRET,
    TOLERANCE,
};
use crate::signer::sign;

fn check_timestamps(scheme: &Scheme, secret: &str, other: &str) {
    let name = scheme.name();
    let good = verifier(scheme, &[secret]);
    let tolerance = i64::try_from(TOLERANCE).expect("small");
    for (offset, expected) in [
        (0, Ok(())),
        (-tolerance, Ok(())),
        (tolerance, Ok(())),
        (-tolerance - 1, Err(SignatureError::TimestampOutOfTolerance)),
        (tolerance + 1, Err(SignatureError::TimestampOutOfTolerance)),
        (-86_400, Err(SignatureError::TimestampOutOfTolerance)),
        (86_400, Err(SignatureError::TimestampOutOfTolerance)),
    ] {
        let signed = sign(scheme, secret, NOW + offset, BODY);
        assert_eq!(
            good.verify(&signed, BODY, NOW),
            expected,
            "{name}: timestamp now{offset:+}"
        );
    }

    // The MAC is checked first: stale and forged is a mismatch.
    let stale_forged = sign(scheme, other, NOW - 86_400, BODY);
    assert_eq!(
        good.verify(&stale_forged, BODY, NOW),
        Err(SignatureError::Mismatch),
        "{name}"
    );

    // Extreme clocks and timestamps do not overflow.
    let signed = sign(scheme, secret, 0, BODY);
    for now in [i64::MAX, i64::MIN, NOW] {
        assert_eq!(
            good.verify(&signed, BODY, now),
            Err(SignatureError::TimestampOutOfTolerance),
            "{name}: now = {now}"
        );
    }
    let signed = sign(scheme, secret, i64::MAX, BODY);
    assert_eq!(
        good.verify(&signed, BODY, i64::MIN),
        Err(SignatureError::TimestampOutOfTolerance),
        "{name}: i64::MAX timestamp"
    );
    let forever = Verifier::new(scheme.clone(), vec![secret.to_owned()], u64::MAX).expect("valid");
    assert_eq!(
        forever.verify(&signed, BODY, i64::MIN),
        Ok(()),
        "{name}: u64::MAX tolerance"
    );

    // Zero tolerance: only the very second.
    let strict = Verifier::new(scheme.clone(), vec![secret.to_owned()], 0).expect("valid");
    let signed = sign(scheme, secret, NOW, BODY);
    assert_eq!(
        strict.verify(&signed, BODY, NOW),
        Ok(()),
        "{name}: zero tolerance"
    );
    assert_eq!(
        strict.verify(&signed, BODY, NOW + 1),
        Err(SignatureError::TimestampOutOfTolerance),
        "{name}: zero tolerance, a second later"
    );
}

#[test]
fn standard_webhooks_timestamps() {
    check_timestamps(&Scheme::StandardWebhooks, SW_SECRET, SW_OTHER);
}

#[test]
fn stripe_timestamps() {
    check_timestamps(&Scheme::Stripe, STRIPE_SECRET, STRIPE_OTHER);
}

#[test]
fn untimestamped_schemes_ignore_the_clock() {
    for (scheme, secret, _) in signing_schemes() {
        if matches!(scheme, Scheme::StandardWebhooks | Scheme::Stripe) {
            continue;
        }
        let signed = sign(&scheme, secret, NOW, BODY);
        let good = verifier(&scheme, &[secret]);
        for now in [i64::MIN, 0, NOW - 1_000_000, i64::MAX] {
            assert_eq!(good.verify(&signed, BODY, now), Ok(()), "{}", scheme.name());
        }
    }
}
