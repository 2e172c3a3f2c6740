//! Bad signatures, scheme by scheme: a MAC of another body or with another secret, truncated,
//! absent, stale, of another scheme. Each is a 401 `invalid_signature`.

use devstack::testkit::{
    github_signature, hmac_hex, now_ms, shopify_signature, standard_webhooks_headers,
    stripe_signature,
};

use super::case::{
    case, gh, gh_sig, replace, stripe, stripe_raw, without, Case, ACME_BODY, GITHUB_BODY,
    ORDER_BODY, SIG, STRIPE_BODY,
};

#[allow(clippy::too_many_lines, reason = "a table of cases")]
pub(crate) fn cases() -> Vec<Case> {
    let t = now_ms() / 1000;
    let (body, evt, acme, order) = (GITHUB_BODY, STRIPE_BODY, ACME_BODY, ORDER_BODY);
    let valid_mac = github_signature(body);
    vec![
        case(
            "github: MAC of another body",
            "github",
            gh_sig("d", &github_signature(b"other")),
            body,
            SIG,
        ),
        case(
            "github: no signature header",
            "github",
            without(gh("d", body), "x-hub-signature-256"),
            body,
            SIG,
        ),
        case(
            "github: empty signature",
            "github",
            gh_sig("d", ""),
            body,
            SIG,
        ),
        case(
            "github: truncated MAC",
            "github",
            gh_sig("d", &valid_mac[..40]),
            body,
            SIG,
        ),
        case(
            "github: MAC one hex digit short",
            "github",
            gh_sig("d", &valid_mac[..valid_mac.len() - 1]),
            body,
            SIG,
        ),
        case(
            "github: MAC with a byte appended",
            "github",
            gh_sig("d", &format!("{valid_mac}00")),
            body,
            SIG,
        ),
        case(
            "github: sha1= prefix",
            "github",
            gh_sig("d", &valid_mac.replacen("sha256=", "sha1=", 1)),
            body,
            SIG,
        ),
        case(
            "github: no prefix",
            "github",
            gh_sig("d", &valid_mac["sha256=".len()..]),
            body,
            SIG,
        ),
        case(
            "github: non-hex MAC",
            "github",
            gh_sig("d", &format!("sha256={}", "zz".repeat(32))),
            body,
            SIG,
        ),
        case(
            "github: MAC under another secret",
            "github",
            gh_sig("d", &format!("sha256={}", hex::encode([7u8; 32]))),
            body,
            SIG,
        ),
        case(
            "github: signature header twice",
            "github",
            {
                let mut h = gh("d", body);
                h.push(("x-hub-signature-256", github_signature(b"other")));
                h
            },
            body,
            SIG,
        ),
        case(
            "github: body changed after signing",
            "github",
            gh("d", body),
            br#"{"action":"closed","number":1}"#,
            SIG,
        ),
        case(
            "github: Stripe scheme sent",
            "github",
            {
                let mut h = stripe(body, t);
                h.push(("x-github-delivery", "d".to_owned()));
                h
            },
            body,
            SIG,
        ),
        case(
            "stripe: GitHub scheme sent",
            "stripe",
            gh("d", evt),
            evt,
            SIG,
        ),
        case(
            "shop: Standard Webhooks scheme sent",
            "shop",
            standard_webhooks_headers("m", t, body),
            body,
            SIG,
        ),
        case(
            "stripe: timestamp 330 s in the past",
            "stripe",
            stripe(evt, t - 330),
            evt,
            SIG,
        ),
        case(
            "stripe: timestamp 330 s in the future",
            "stripe",
            stripe(evt, t + 330),
            evt,
            SIG,
        ),
        case("stripe: timestamp 0", "stripe", stripe(evt, 0), evt, SIG),
        case(
            "stripe: timestamp in the year 5000",
            "stripe",
            stripe(evt, 95_617_584_000),
            evt,
            SIG,
        ),
        case(
            "stripe: timestamp overflows i64",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen(
                &format!("t={t}"),
                "t=99999999999999999999999",
                1,
            )),
            evt,
            SIG,
        ),
        case(
            "stripe: negative timestamp",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen(&format!("t={t}"), "t=-5", 1)),
            evt,
            SIG,
        ),
        case(
            "stripe: signed at another timestamp",
            "stripe",
            stripe_raw(&stripe_signature(evt, t - 10).replacen(
                &format!("t={}", t - 10),
                &format!("t={t}"),
                1,
            )),
            evt,
            SIG,
        ),
        case(
            "stripe: no t=",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen(&format!("t={t},"), "", 1)),
            evt,
            SIG,
        ),
        case(
            "stripe: no v1=",
            "stripe",
            stripe_raw(&format!("t={t}")),
            evt,
            SIG,
        ),
        case(
            "stripe: only v0=",
            "stripe",
            stripe_raw(&stripe_signature(evt, t).replacen("v1=", "v0=", 1)),
            evt,
            SIG,
        ),
        case(
            "stripe: truncated v1=",
            "stripe",
            stripe_raw(&stripe_signature(evt, t)[..30]),
            evt,
            SIG,
        ),
        case(
            "stripe: garbage header",
            "stripe",
            stripe_raw("nonsense"),
            evt,
            SIG,
        ),
        case("stripe: empty header", "stripe", stripe_raw(""), evt, SIG),
        case("stripe: no header", "stripe", vec![], evt, SIG),
        case(
            "acme: v2 signature only",
            "acme",
            {
                let h = standard_webhooks_headers("m-1", t, acme);
                let sig = h
                    .iter()
                    .find(|(k, _)| *k == "webhook-signature")
                    .map(|(_, v)| v.replacen("v1,", "v2,", 1))
                    .unwrap_or_default();
                replace(h, "webhook-signature", &sig)
            },
            acme,
            SIG,
        ),
        case(
            "acme: no webhook-timestamp",
            "acme",
            without(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-timestamp",
            ),
            acme,
            SIG,
        ),
        case(
            "acme: no webhook-id",
            "acme",
            without(standard_webhooks_headers("m-1", t, acme), "webhook-id"),
            acme,
            SIG,
        ),
        case(
            "acme: no webhook-signature",
            "acme",
            without(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-signature",
            ),
            acme,
            SIG,
        ),
        case(
            "acme: timestamp 10 min in the past",
            "acme",
            standard_webhooks_headers("m-1", t - 600, acme),
            acme,
            SIG,
        ),
        case(
            "acme: timestamp 10 min in the future",
            "acme",
            standard_webhooks_headers("m-1", t + 600, acme),
            acme,
            SIG,
        ),
        case(
            "acme: signature not base64",
            "acme",
            replace(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-signature",
                "v1,***",
            ),
            acme,
            SIG,
        ),
        case(
            "acme: truncated signature",
            "acme",
            {
                let h = standard_webhooks_headers("m-1", t, acme);
                let sig = h
                    .iter()
                    .find(|(k, _)| *k == "webhook-signature")
                    .map(|(_, v)| v[..20].to_owned())
                    .unwrap_or_default();
                replace(h, "webhook-signature", &sig)
            },
            acme,
            SIG,
        ),
        case(
            "acme: webhook-id changed after signing",
            "acme",
            replace(
                standard_webhooks_headers("m-1", t, acme),
                "webhook-id",
                "m-2",
            ),
            acme,
            SIG,
        ),
        case(
            "shop: MAC of another body",
            "shop",
            vec![
                ("x-shopify-hmac-sha256", shopify_signature(b"other")),
                ("x-shopify-event-id", "s".to_owned()),
            ],
            body,
            SIG,
        ),
        case(
            "shop: hex MAC where base64 is declared",
            "shop",
            vec![
                ("x-shopify-hmac-sha256", hmac_hex(body)),
                ("x-shopify-event-id", "s".to_owned()),
            ],
            body,
            SIG,
        ),
        case("orders: no signature header", "orders", vec![], order, SIG),
        case(
            "orders: base64 MAC where hex is declared",
            "orders",
            vec![("x-signature", shopify_signature(order))],
            order,
            SIG,
        ),
        case(
            "github: empty body, no signature",
            "github",
            vec![("x-github-delivery", "d".to_owned())],
            b"",
            SIG,
        ),
    ]
}
