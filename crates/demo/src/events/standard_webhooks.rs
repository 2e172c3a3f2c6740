//! Standard Webhooks samples (source `acme`, grouped by customer): an event, its retry signed
//! again, a tampered customer, a stale timestamp. Signed with timestamps: they go stale.

use super::request::{post, push, tampered};
use super::{Expected, Sample, EXPIRED_BY_S};
use devstack::senders::Sender as _;
use devstack::testkit;

pub fn samples(out: &mut Vec<Sample>, now: i64) {
    const ID: &str = "msg_2ZdemoInboxInvoice0001";
    let body = br#"{"type":"invoice.paid","customer_id":"cus_A","data":{"invoice":"in_1001","amount":4200}}"#;
    let headers = |id: &str, t: i64, signed: &[u8]| {
        let mut h = testkit::standard_webhooks().headers(id, t, signed);
        h.push(("user-agent", "Acme-Webhooks/2.1".to_owned()));
        h
    };
    let key = format!("acme:{ID}");
    push(
        out,
        "acme-first",
        post("acme", headers(ID, now - 2, body), body, "ac-first", now),
        Expected::accepted(&key),
        "Standard Webhooks (`webhook-id`/`-timestamp`/`-signature`, `whsec_` secret), grouped by `/customer_id`",
        true,
    );
    push(
        out,
        "acme-duplicate",
        post("acme", headers(ID, now, body), body, "ac-dup", now),
        Expected::replayed(&key),
        "the sender's retry: same `webhook-id`, new timestamp and signature",
        true,
    );
    let bad_id = "msg_2ZdemoInboxInvoice0002";
    let tampered = tampered(body, "cus_A", "cus_B");
    push(
        out,
        "acme-bad-signature",
        post("acme", headers(bad_id, now, body), &tampered, "ac-bad", now),
        Expected::error(401, "invalid_signature"),
        "customer changed after signing",
        true,
    );
    let old_id = "msg_2ZdemoInboxInvoice0003";
    push(
        out,
        "acme-expired",
        post(
            "acme",
            headers(old_id, now - EXPIRED_BY_S, body),
            body,
            "ac-old",
            now,
        ),
        Expected::error(401, "invalid_signature"),
        "correctly signed 10 minutes before sending: refused",
        true,
    );
}
