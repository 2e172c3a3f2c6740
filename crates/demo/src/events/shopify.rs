//! Shopify samples: an order, its retry, a tampered price, no `X-Shopify-Event-Id`.

use super::request::{post, push, tampered};
use super::{Expected, Sample, FIXED_EPOCH_S};
use devstack::senders::Shopify;
use devstack::testkit::TEST_SECRET;

pub fn samples(out: &mut Vec<Sample>) {
    const EVENT_ID: &str = "98880550-7158-44d4-b7cd-2c97c8a091b5";
    let t = FIXED_EPOCH_S;
    let body = br#"{"id":820982911946154508,"email":"jon@example.com","total_price":"199.00","currency":"USD","financial_status":"paid"}"#;
    let headers = |event_id: Option<&str>, signed: &[u8]| {
        let mut h = vec![
            ("x-shopify-topic", "orders/paid".to_owned()),
            (
                "x-shopify-hmac-sha256",
                Shopify::new(TEST_SECRET).signature(signed),
            ),
            (
                "x-shopify-shop-domain",
                "demo-shop.myshopify.com".to_owned(),
            ),
            ("x-shopify-api-version", "2025-10".to_owned()),
            (
                "x-shopify-webhook-id",
                "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043".to_owned(),
            ),
            ("x-shopify-triggered-at", "2026-12-01T00:00:00Z".to_owned()),
            ("content-type", "application/json".to_owned()),
            ("user-agent", "Shopify-Captain-Hook".to_owned()),
        ];
        if let Some(id) = event_id {
            h.push(("x-shopify-event-id", id.to_owned()));
        }
        h
    };
    let key = format!("shop:{EVENT_ID}");
    push(
        out,
        "shop-first",
        post("shop", headers(Some(EVENT_ID), body), body, "sh-first", t),
        Expected::accepted(&key),
        "Shopify (`X-Shopify-Hmac-Sha256`, base64), key `X-Shopify-Event-Id`",
        false,
    );
    push(
        out,
        "shop-duplicate",
        post("shop", headers(Some(EVENT_ID), body), body, "sh-dup", t),
        Expected::replayed(&key),
        "Shopify's retry: same `X-Shopify-Event-Id`",
        false,
    );
    let tampered = tampered(body, "199.00", "1.00");
    push(
        out,
        "shop-bad-signature",
        post(
            "shop",
            headers(Some("98880550-7158-44d4-b7cd-2c97c8a091b6"), body),
            &tampered,
            "sh-bad",
            t,
        ),
        Expected::error(401, "invalid_signature"),
        "price changed after signing",
        false,
    );
    push(
        out,
        "shop-missing-key",
        post("shop", headers(None, body), body, "sh-nokey", t),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but no `X-Shopify-Event-Id`",
        false,
    );
}
