use super::*;

fn sources() -> SourceSpecs {
    SourceSpecs::parse(
        r#"{"stripe": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}},
            "github": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    )
    .unwrap()
}

const ROUTES: &str = r#"{
  "billing": {"target": "https://billing.example/hooks", "sources": ["stripe"],
              "event_types": ["invoice.*"], "exclude_event_types": ["invoice.upcoming"],
              "signing_secret": ["env:BILLING_SECRET"], "timeout_ms": 5000},
  "bus": {"target": "arn:aws:events:us-east-1:123456789012:event-bus/payments", "sources": ["stripe"]},
  "ci": {"target": "arn:aws:sqs:us-east-1:123456789012:ci", "sources": ["github"], "event_types": ["push"]}
}"#;

#[test]
fn the_route_of_an_event_is_its_source_and_its_type() {
    let routes = Routes::parse(ROUTES, &sources()).unwrap();
    assert!(routes.routes("stripe") && routes.routes("github"));
    assert_eq!(
        routes.destinations_for("stripe", Some("invoice.paid")),
        ["billing", "bus"]
    );
    assert_eq!(
        routes.destinations_for("stripe", Some("invoice.upcoming")),
        ["bus"]
    );
    assert_eq!(routes.destinations_for("stripe", None), ["bus"]);
    assert_eq!(routes.destinations_for("github", Some("push")), ["ci"]);
    assert!(routes.destinations_for("github", Some("issues")).is_empty());
    let billing = routes.get("billing").unwrap();
    assert_eq!(billing.timeout_ms, Some(5000));
    assert_eq!(
        billing.signing_secrets,
        [SecretRef::Env("BILLING_SECRET".into())]
    );
    assert!(!billing.unsigned);
    assert!(Routes::parse("  ", &sources()).unwrap().is_empty());
    let open = Routes::parse(
        r#"{"open": {"target": "https://open.example/in", "sources": ["stripe"], "unsigned": true}}"#,
        &sources(),
    )
    .unwrap();
    let open = open.get("open").unwrap();
    assert!(open.unsigned && open.signing_secrets.is_empty());
}

#[test]
fn a_bad_destination_stops_start_up_naming_it_and_the_field() {
    let cases = [
        (
            r#"{"b": {"target": "http://x", "sources": ["stripe"]}}"#,
            "destination `b`, field `target`",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": []}}"#,
            "field `sources`: names no source",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["shopify"]}}"#,
            "`shopify` is not in WEBHOOK_SOURCES",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "event_types": []}}"#,
            "field `event_types`",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "event_types": ["a*b"]}}"#,
            "`a*b` is not an event type",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "exclude_event_types": [""]}}"#,
            "field `exclude_event_types`",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "signing_secret": ["hunter2"]}}"#,
            "field `signing_secret`",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "timeout_ms": 0}}"#,
            "field `timeout_ms`",
        ),
        (
            r#"{"b": {"target": "arn:aws:sqs:us-east-1:123456789012:q", "sources": ["stripe"], "timeout_ms": 5}}"#,
            "only an https:// target",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "unsigned": true, "signing_secret": ["env:S"]}}"#,
            "field `unsigned`: declared unsigned and given a signing_secret",
        ),
        (
            r#"{"b": {"target": "arn:aws:sqs:us-east-1:123456789012:q", "sources": ["stripe"], "unsigned": true}}"#,
            "only an https:// target",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"], "filter": "x"}}"#,
            "unknown field `filter`",
        ),
        (
            r#"{"b c": {"target": "https://x", "sources": ["stripe"]}}"#,
            "field `name`",
        ),
        (
            r#"{"b": {"target": "https://x", "sources": ["stripe"]}, "b": {"target": "https://y", "sources": ["stripe"]}}"#,
            "declared more than once",
        ),
        (r#"["b"]"#, "not a JSON object of destinations"),
    ];
    for (json, says) in cases {
        let e = Routes::parse(json, &sources()).unwrap_err().to_string();
        assert!(
            e.starts_with("environment variable WEBHOOK_DESTINATIONS: "),
            "{e}"
        );
        assert!(e.contains(says), "{json}: {e}");
    }
}

#[test]
fn a_destination_item_is_never_an_event_item() {
    assert_eq!(
        destination_key("stripe:evt_1", "billing"),
        "stripe:evt_1 to:billing"
    );
    // Keys hold no space (docs/design.md §1): the pair reads back at the one space.
    let k = destination_key("stripe:a:b", "ci");
    assert_eq!(k.split_once(' '), Some(("stripe:a:b", "to:ci")));
}

#[test]
fn a_breaker_is_configured_per_destination_with_defaults() {
    let routes = Routes::parse(
        r#"{"a": {"target": "https://a.example/", "sources": ["github"],
                  "breaker": {"failures": 3, "cool_down_seconds": 120}},
            "b": {"target": "https://b.example/", "sources": ["github"], "breaker": {"failures": 1}},
            "c": {"target": "https://c.example/", "sources": ["github"]}}"#,
        &sources(),
    )
    .unwrap();
    let rule = |n: &str| routes.get(n).unwrap().breaker;
    let secs = std::time::Duration::from_secs;
    assert_eq!((rule("a").failures, rule("a").cool_down), (3, secs(120)));
    assert_eq!((rule("b").failures, rule("b").cool_down), (1, secs(60)));
    assert_eq!(rule("c"), crate::breaker::Rule::default());
}

#[test]
fn a_breaker_out_of_its_bounds_is_refused_naming_the_field() {
    for (breaker, field, message) in [
        (
            r#"{"failures": 0}"#,
            "breaker.failures",
            "must be between 1 and 1000",
        ),
        (
            r#"{"cool_down_seconds": 0}"#,
            "breaker.cool_down_seconds",
            "must be between 1 and 86400",
        ),
        (
            r#"{"cool_down_seconds": 86401}"#,
            "breaker.cool_down_seconds",
            "must be between 1 and 86400",
        ),
    ] {
        let json = format!(
            r#"{{"a": {{"target": "https://a.example/", "sources": ["github"], "breaker": {breaker}}}}}"#
        );
        let err = Routes::parse(&json, &sources()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("destination `a`, field `{field}`: {message}")),
            "{err}"
        );
    }
    let err = Routes::parse(
        r#"{"a": {"target": "https://a.example/", "sources": ["github"], "breaker": {"share": 0.5}}}"#,
        &sources(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("unknown field `share`"), "{err}");
}

#[test]
fn max_per_second_is_a_whole_number_of_calls_from_1_to_the_limit() {
    let read = |v: &str| {
        Routes::parse(
            &format!(
                r#"{{"b": {{"target": "arn:aws:sqs:us-east-1:123456789012:q", "sources": ["stripe"], "max_per_second": {v}}}}}"#
            ),
            &sources(),
        )
    };
    assert_eq!(read("5").unwrap().get("b").unwrap().max_per_second, Some(5));
    assert_eq!(
        read("500").unwrap().get("b").unwrap().max_per_second,
        Some(MAX_PER_SECOND_LIMIT)
    );
    assert_eq!(
        Routes::parse(ROUTES, &sources())
            .unwrap()
            .get("billing")
            .unwrap()
            .max_per_second,
        None
    );
    for bad in ["0", "-1", "2.5", "501", "4294967296", "\"5\"", "true"] {
        let e = read(bad).unwrap_err().to_string();
        assert!(
            e.ends_with(&format!(
                "destination `b`, field `max_per_second`: `{bad}` is not a whole number of calls per second from 1 to 500"
            )),
            "{bad}: {e}"
        );
    }
}
