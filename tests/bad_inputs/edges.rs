//! The input edges, each signed correctly so that only the edge is wrong: numbers
//! that are not plain integers and members twice on a key or group path (400), keys holding
//! invisible, separator or noncharacter code points (400 `invalid_idempotency_key`), and a
//! Standard Webhooks id holding `.` (401: its signed content would be ambiguous).

use devstack::testkit::{hmac_hex, now_ms, standard_webhooks_headers};

use super::case::{case, gh, stripe, Case, ACME_BODY, GITHUB_BODY, INVALID, MALFORMED, SIG};

pub(crate) fn cases() -> Vec<Case> {
    let t = now_ms() / 1000;
    let mut cases = Vec::new();
    // Stripe keys on `/id`: a number keys by its text only where it is a plain integer.
    for (name, body) in [
        ("/id an exponent", r#"{"id":1e3}"#),
        ("/id a fraction", r#"{"id":1000.0}"#),
        ("/id minus zero", r#"{"id":-0}"#),
        ("/id twice, same value", r#"{"id":"evt_1","id":"evt_1"}"#),
        ("/id twice", r#"{"id":"evt_1","id":"evt_2"}"#),
        ("/id twice, escaped", r#"{"id":"evt_1","\u0069d":"evt_2"}"#),
        (
            "/id with a right-to-left override",
            "{\"id\":\"evt_\u{202E}1\"}",
        ),
        (
            "/id with an escaped zero-width space",
            r#"{"id":"evt_\u200b1"}"#,
        ),
        ("/id with a byte order mark", "{\"id\":\"\u{FEFF}evt_1\"}"),
        ("/id with a space", r#"{"id":"evt 1"}"#),
        ("/id with a no-break space", "{\"id\":\"evt\u{A0}1\"}"),
        ("/id with a line separator", r#"{"id":"evt\u20281"}"#),
        ("/id with U+FFFE", r#"{"id":"evt_\ufffe"}"#),
        ("/id with U+FFFF", "{\"id\":\"evt_\u{FFFF}\"}"),
    ] {
        let expect = if name.contains("twice") {
            MALFORMED
        } else {
            INVALID
        };
        cases.push(case(
            &format!("stripe: {name}"),
            "stripe",
            stripe(body.as_bytes(), t),
            body.as_bytes(),
            expect,
        ));
    }
    // `orders` keys on `/type` + `/order/id`: a member twice on the second path.
    let twice = br#"{"type":"order.paid","order":{"id":7},"order":{"id":8}}"#;
    cases.push(case(
        "orders: /order twice on a composite key's path",
        "orders",
        vec![("x-signature", hmac_hex(twice))],
        twice,
        MALFORMED,
    ));
    // `acme` keys on `webhook-id` and groups on `/customer_id`: a member twice on the group's
    // path is refused too, before the claim.
    let twice = br#"{"customer_id":"cus_1","customer_id":"cus_2","amount":5}"#;
    cases.push(case(
        "acme: /customer_id twice on the group's path",
        "acme",
        standard_webhooks_headers("msg_twice", t, twice),
        twice,
        MALFORMED,
    ));
    for id in ["msg.1", "msg_1.", "."] {
        cases.push(case(
            &format!("acme: webhook-id {id:?} holds a dot, correctly signed"),
            "acme",
            standard_webhooks_headers(id, t, ACME_BODY),
            ACME_BODY,
            SIG,
        ));
    }
    cases.push(case(
        "github: X-GitHub-Delivery with a space inside",
        "github",
        gh("d 1", GITHUB_BODY),
        GITHUB_BODY,
        INVALID,
    ));
    cases
}
