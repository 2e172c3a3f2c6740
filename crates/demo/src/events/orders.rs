//! Generic `hmac-sha256` samples (source `orders`, composite key): an order, its duplicate, a
//! tampered total, no order id, a body that is not JSON.

use super::request::{post, push, tampered};
use super::{Expected, Sample, FIXED_EPOCH_S};
use devstack::senders::HmacHex;
use devstack::testkit::TEST_SECRET;

pub fn samples(out: &mut Vec<Sample>) {
    let t = FIXED_EPOCH_S;
    let body = br#"{"type":"order.created","order":{"id":"ord_1001","total":"42.00"}}"#;
    let headers = |signed: &[u8]| {
        vec![
            (
                "x-signature",
                HmacHex::new(TEST_SECRET, "x-signature").signature(signed),
            ),
            ("content-type", "application/json".to_owned()),
            ("user-agent", "orders-service/3.4".to_owned()),
        ]
    };
    let key = "orders:order.created|ord_1001";
    push(
        out,
        "orders-first",
        post("orders", headers(body), body, "or-first", t),
        Expected::accepted(key),
        "generic `hmac-sha256` (hex in `X-Signature`), composite key `/type` + `/order/id`",
        false,
    );
    push(
        out,
        "orders-duplicate",
        post("orders", headers(body), body, "or-dup", t),
        Expected::replayed(key),
        "the same business event again",
        false,
    );
    let tampered = tampered(body, "42.00", "0.42");
    push(
        out,
        "orders-bad-signature",
        post("orders", headers(body), &tampered, "or-bad", t),
        Expected::error(401, "invalid_signature"),
        "total changed after signing",
        false,
    );
    let no_order = br#"{"type":"order.created","order":{"total":"42.00"}}"#;
    push(
        out,
        "orders-missing-key",
        post("orders", headers(no_order), no_order, "or-nokey", t),
        Expected::error(400, "missing_idempotency_key"),
        "signed, but no `/order/id`",
        false,
    );
    let not_json = b"type=order.created&order=ord_1001";
    push(
        out,
        "orders-malformed-body",
        post("orders", headers(not_json), not_json, "or-notjson", t),
        Expected::error(400, "malformed_body"),
        "signed, but not JSON where the key pointers need JSON",
        false,
    );
}
