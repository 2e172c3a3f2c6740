//! Requests signed correctly whose idempotency key or body is wrong: the key absent, empty,
//! too long or not a string (400 `missing_idempotency_key` / `invalid_idempotency_key`),
//! bodies that are not the JSON a key pointer needs (400 `malformed_body`), and bodies over the
//! size limit (413, checked before anything else about the body).

use devstack::testkit::{hmac_hex, now_ms, standard_webhooks_headers};

use super::case::{
    case, gh, nested_arrays, nested_objects, replace, stripe, without, Case, GITHUB_BODY, INVALID,
    MALFORMED, MISSING, TOO_LARGE,
};

#[allow(clippy::too_many_lines, reason = "a table of cases")]
pub(crate) fn cases() -> Vec<Case> {
    let t = now_ms() / 1000;
    let body = GITHUB_BODY;
    let mut cases = vec![
        case(
            "github: no X-GitHub-Delivery",
            "github",
            without(gh("d", body), "x-github-delivery"),
            body,
            MISSING,
        ),
        case(
            "github: empty X-GitHub-Delivery",
            "github",
            replace(gh("d", body), "x-github-delivery", ""),
            body,
            MISSING,
        ),
        case(
            "github: blank X-GitHub-Delivery",
            "github",
            replace(gh("d", body), "x-github-delivery", "   "),
            body,
            MISSING,
        ),
        case(
            "github: key over 1 KiB",
            "github",
            gh(&"k".repeat(1025), body),
            body,
            INVALID,
        ),
        case(
            "github: key with a tab inside",
            "github",
            gh("a\tb", body),
            body,
            INVALID,
        ),
        case(
            "github: key not ASCII",
            "github",
            gh("caf\u{e9}", body),
            body,
            INVALID,
        ),
        case(
            "orders: composite key part absent",
            "orders",
            vec![("x-signature", hmac_hex(br#"{"type":"t"}"#))],
            br#"{"type":"t"}"#,
            MISSING,
        ),
        case(
            "orders: composite key part an object",
            "orders",
            vec![(
                "x-signature",
                hmac_hex(br#"{"type":"t","order":{"id":{}}}"#),
            )],
            br#"{"type":"t","order":{"id":{}}}"#,
            INVALID,
        ),
    ];
    // Stripe: signed correctly, keyed from `/id`; the body is what is wrong.
    for (name, stripe_body, expect) in [
        ("/id absent", &br#"{"type":"x"}"#[..], MISSING),
        ("/id null", &br#"{"id":null}"#[..], MISSING),
        ("/id empty", &br#"{"id":""}"#[..], MISSING),
        ("/id an object", &br#"{"id":{"a":1}}"#[..], INVALID),
        ("/id an array", &br#"{"id":[1]}"#[..], INVALID),
        ("/id with NUL", &br#"{"id":"a\u0000b"}"#[..], INVALID),
        ("/id with a newline", &br#"{"id":"a\nb"}"#[..], INVALID),
        ("/id with DEL", &br#"{"id":"a\u007fb"}"#[..], INVALID),
        (
            "/id with a C1 control",
            &br#"{"id":"a\u0085b"}"#[..],
            INVALID,
        ),
        ("top-level array", &b"[1,2]"[..], MISSING),
        ("top-level string", &br#""evt_1""#[..], MISSING),
    ] {
        cases.push(case(
            &format!("stripe: {name}"),
            "stripe",
            stripe(stripe_body, t),
            stripe_body,
            expect,
        ));
    }
    let long_id = format!(r#"{{"id":"{}"}}"#, "e".repeat(1025)).into_bytes();
    cases.push(case(
        "stripe: /id over 1 KiB",
        "stripe",
        stripe(&long_id, t),
        &long_id,
        INVALID,
    ));
    let long_composite = format!(
        r#"{{"type":"{}","order":{{"id":"{}"}}}}"#,
        "t".repeat(600),
        "o".repeat(600)
    )
    .into_bytes();
    cases.push(case(
        "orders: composite key over 1 KiB",
        "orders",
        vec![("x-signature", hmac_hex(&long_composite))],
        &long_composite,
        INVALID,
    ));

    // --- Bodies that are not the JSON a key pointer needs (signatures valid) -------------
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("not JSON", b"not json".to_vec()),
        ("empty body", Vec::new()),
        ("truncated JSON", br#"{"id":"evt_1""#.to_vec()),
        ("10k nested arrays", nested_arrays(10_000)),
        (
            "10k nested objects under a valid /id",
            nested_objects(10_000),
        ),
        ("invalid UTF-8", b"\xff\xfe{\"id\":\"evt_1\"}".to_vec()),
        (
            "invalid UTF-8 inside a string",
            b"{\"id\":\"evt_\xc3\x28\"}".to_vec(),
        ),
        ("NaN", br#"{"id":NaN}"#.to_vec()),
        ("trailing garbage", br#"{"id":"evt_1"} x"#.to_vec()),
        ("UTF-16 BOM", b"\xfe\xff\x00{".to_vec()),
    ];
    for (name, b) in bodies {
        cases.push(case(
            &format!("stripe: {name}"),
            "stripe",
            stripe(&b, t),
            &b,
            MALFORMED,
        ));
    }

    // --- Size: checked before anything else about the body ------------------------------
    // MAX_BODY_BYTES (the platform's limit, docs/design.md §12) + 1.
    let max = usize::try_from(inbox::config::env::DEFAULT_MAX_BODY_BYTES).expect("fits");
    let over = vec![b'x'; max + 1];
    cases.push(case(
        "github: MAX_BODY_BYTES + 1, signed",
        "github",
        gh("d", &over),
        &over,
        TOO_LARGE,
    ));
    let huge = vec![b'{'; 7 * 1024 * 1024];
    cases.push(case(
        "stripe: 7 MiB, unsigned",
        "stripe",
        vec![],
        &huge,
        TOO_LARGE,
    ));
    cases.push(case(
        "acme: 7 MiB, signed",
        "acme",
        standard_webhooks_headers("m-1", t, &huge),
        &huge,
        TOO_LARGE,
    ));

    cases
}
