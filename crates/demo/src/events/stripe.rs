//! Stripe samples: an event, its retry signed again, a tampered amount, a stale timestamp, no
//! `/id`. Signed with timestamps: they go stale.

use super::request::{post, push, tampered};
use super::{Expected, Sample, EXPIRED_BY_S, FIXED_EPOCH_S};
use devstack::senders::Stripe;
use devstack::testkit::TEST_SECRET;

pub fn samples(out: &mut Vec<Sample>, now: i64) {
    const EVT: &str = "evt_3QdemoInboxPaid000001";
    let body = |id: &str| {
        format!(
            r#"{{"id":"{id}","object":"event","api_version":"2024-06-20","created":{FIXED_EPOCH_S},"type":"payment_intent.succeeded","livemode":false,"data":{{"object":{{"id":"pi_3QdemoInbox0001","object":"payment_intent","amount":2000,"currency":"usd"}}}}}}"#
        )
        .into_bytes()
    };
    let headers = |signed: &[u8], t: i64| {
        vec![
            (
                "stripe-signature",
                Stripe::new(TEST_SECRET).signature(t, signed),
            ),
            ("content-type", "application/json; charset=utf-8".to_owned()),
            (
                "user-agent",
                "Stripe/1.0 (+https://stripe.com/docs/webhooks)".to_owned(),
            ),
        ]
    };
    let first = body(EVT);
    let key = format!("stripe:{EVT}");
    push(
        out,
        "stripe-first",
        post("stripe", headers(&first, now - 2), &first, "st-first", now),
        Expected::accepted(&key),
        "Stripe event (`Stripe-Signature: t=…,v1=…`), key `/id`",
        true,
    );
    push(
        out,
        "stripe-duplicate",
        post("stripe", headers(&first, now), &first, "st-dup", now),
        Expected::replayed(&key),
        "Stripe's retry: same event, signed again with a new `t`",
        true,
    );
    let other = body("evt_3QdemoInboxPaid000002");
    let tampered = tampered(&other, r#""amount":2000"#, r#""amount":1"#);
    push(
        out,
        "stripe-bad-signature",
        post("stripe", headers(&other, now), &tampered, "st-bad", now),
        Expected::error(401, "invalid_signature"),
        "amount changed after signing",
        true,
    );
    let old = body("evt_3QdemoInboxPaid000003");
    push(
        out,
        "stripe-expired",
        post(
            "stripe",
            headers(&old, now - EXPIRED_BY_S),
            &old,
            "st-old",
            now,
        ),
        Expected::error(401, "invalid_signature"),
        "correctly signed 10 minutes before sending (tolerance 300 s): a replay",
        true,
    );
    let no_id = br#"{"object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_3QdemoInbox0004"}}}"#;
    push(
        out,
        "stripe-missing-key",
        post("stripe", headers(no_id, now), no_id, "st-nokey", now),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but the body has no `/id`",
        true,
    );
}
