use serde_json::{json, Value};

use super::*;

/// The template's queue: four days on the queue, six in the dead-letter queue.
pub(super) const QUEUE: QueueFacts = QueueFacts {
    retention_seconds: 345_600,
    dlq_retention_seconds: 518_400,
    max_receive_count: 500,
    max_failures: 5,
    visibility_timeout: 360,
    payload_bucket: true,
};

fn spec(entry: &str) -> SourceSpec {
    SourceSpecs::parse(&format!(r#"{{"s": {entry}}}"#))
        .expect("test entry parses")
        .get("s")
        .expect("source s")
        .clone()
}

const SIGNED: &str =
    r#""signature": {"scheme": "github", "secrets": ["env:X"]}, "replay_guard_seconds": 3600"#;

#[test]
fn a_signed_header_keyed_source_with_a_week_has_no_flag() {
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "header", "name": "X-GitHub-Delivery"}}}}"#
    ));
    assert_eq!(flags(&s, &QUEUE), vec![]);
}

#[test]
fn a_preset_and_what_the_source_set_over_it_are_shown_and_weaker_schemes_flagged() {
    let s = spec(
        r#"{"preset": "stripe", "signature": {"secrets": ["env:X"], "tolerance_seconds": 60}}"#,
    );
    assert_eq!(
        signature_text(&s),
        "preset stripe (overridden: signature.tolerance_seconds): stripe (±60 s)"
    );
    let gitlab = spec(r#"{"preset": "gitlab", "signature": {"secrets": ["env:X"]}}"#);
    assert_eq!(signature_text(&gitlab), "preset gitlab: token");
    assert_eq!(flags(&gitlab, &QUEUE), vec![Flag::SecretInRequest]);
    let mailgun = spec(r#"{"preset": "mailgun", "signature": {"secrets": ["env:X"]}}"#);
    assert_eq!(flags(&mailgun, &QUEUE), vec![Flag::BodyNotSigned]);
}

#[test]
fn unsigned_source_is_flagged() {
    let s = spec(
        r#"{"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "json", "pointers": ["/id"]}}"#,
    );
    assert_eq!(flags(&s, &QUEUE), vec![Flag::Unsigned]);
}

#[test]
fn payload_hash_key_is_flagged() {
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "payload_sha256"}}}}"#
    ));
    assert_eq!(flags(&s, &QUEUE), vec![Flag::PayloadHashKey]);
}

#[test]
fn retention_under_a_day_is_flagged_and_not_over_the_queue_too() {
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "json", "pointers": ["/id"]}}, "retention_hours": 23}}"#
    ));
    assert_eq!(
        flags(&s, &QUEUE),
        vec![Flag::ShortRetention, Flag::RetentionUnderChain]
    );
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "json", "pointers": ["/id"]}}, "retention_hours": 24}}"#
    ));
    assert!(!flags(&s, &QUEUE).contains(&Flag::ShortRetention));
}

#[test]
fn retention_an_hour_short_of_the_chain_is_flagged_the_chain_itself_is_not() {
    // 4 d on the queue + 6 d in the dead-letter queue + 1 d to redrive = 264 h.
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "json", "pointers": ["/id"]}}, "retention_hours": 263}}"#
    ));
    assert_eq!(flags(&s, &QUEUE), vec![Flag::RetentionUnderChain]);
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "json", "pointers": ["/id"]}}, "retention_hours": 264}}"#
    ));
    assert_eq!(flags(&s, &QUEUE), vec![]);
    let longer_queue = QueueFacts {
        retention_seconds: 14 * 86_400,
        ..QUEUE
    };
    assert_eq!(flags(&s, &longer_queue), vec![Flag::RetentionUnderChain]);
}

#[test]
fn no_payload_bucket_flags_every_source_and_the_template_has_one() {
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "json", "pointers": ["/id"]}}}}"#
    ));
    assert_eq!(flags(&s, &QUEUE), vec![]);
    let no_bucket = QueueFacts {
        payload_bucket: false,
        ..QUEUE
    };
    assert_eq!(flags(&s, &no_bucket), vec![Flag::LargeBodiesRefused]);
    let template = Template::load(&template_path()).expect("template.yaml");
    assert!(QueueFacts::from_template(&template).payload_bucket);
}

#[test]
fn at_most_once_is_flagged_and_its_retention_is_not_compared() {
    let s = spec(
        r#"{"signature": {"scheme": "github", "secrets": ["env:X"]}, "key": {"from": "header", "name": "webhook-id"}, "delivery": "at_most_once", "retention_hours": 48}"#,
    );
    assert_eq!(flags(&s, &QUEUE), vec![Flag::AtMostOnce]);
    let a = audit_source(&s, &QUEUE);
    assert!(a.delivery.starts_with("at most once"));
    assert!(
        a.arrives_twice.contains("five minutes"),
        "{}",
        a.arrives_twice
    );
    assert!(a.on_failure.contains("dropped"), "{}", a.on_failure);
}

#[test]
fn a_body_only_scheme_without_a_replay_guard_is_flagged() {
    for signature in [
        r#"{"scheme": "github", "secrets": ["env:X"]}"#,
        r#"{"scheme": "shopify", "secrets": ["env:X"]}"#,
        r#"{"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Sig", "encoding": "hex"}"#,
    ] {
        let s = spec(&format!(
            r#"{{"signature": {signature}, "key": {{"from": "header", "name": "X-Id"}}}}"#
        ));
        assert_eq!(flags(&s, &QUEUE), vec![Flag::NoReplayGuard], "{signature}");
        let s = spec(&format!(
            r#"{{"signature": {signature}, "key": {{"from": "header", "name": "X-Id"}}, "replay_guard_seconds": 600}}"#
        ));
        assert_eq!(flags(&s, &QUEUE), vec![], "{signature}");
        // Keyed on the body's hash (woocommerce), a resent body is a duplicate: no guard needed.
        let s = spec(&format!(
            r#"{{"signature": {signature}, "key": {{"from": "payload_sha256"}}}}"#
        ));
        assert_eq!(flags(&s, &QUEUE), vec![Flag::PayloadHashKey], "{signature}");
    }
    let s = spec(
        r#"{"signature": {"scheme": "stripe", "secrets": ["env:X"]}, "key": {"from": "json", "pointers": ["/id"]}}"#,
    );
    assert_eq!(flags(&s, &QUEUE), vec![]);
}

#[test]
fn a_key_from_a_per_delivery_header_is_flagged() {
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "header", "name": "X-Request-Id"}}}}"#
    ));
    assert_eq!(flags(&s, &QUEUE), vec![Flag::PerDeliveryKey]);
}

#[test]
fn everything_at_once_in_a_stable_order() {
    let s = spec(
        r#"{"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}, "delivery": "at_most_once", "retention_hours": 1}"#,
    );
    assert_eq!(
        flags(&s, &QUEUE),
        vec![
            Flag::Unsigned,
            Flag::PayloadHashKey,
            Flag::ShortRetention,
            Flag::AtMostOnce
        ]
    );
    let codes: std::collections::BTreeSet<&str> = Flag::ALL.iter().map(|f| f.code()).collect();
    assert_eq!(codes.len(), Flag::ALL.len(), "codes are distinct");
}

#[test]
fn answers_name_the_key_the_mismatch_policy_and_the_queue() {
    let s = spec(&format!(
        r#"{{{SIGNED}, "key": {{"from": "json", "pointers": ["/type", "/data/id"]}}, "on_payload_mismatch": "reject"}}"#
    ));
    let a = audit_source(&s, &QUEUE);
    assert_eq!(a.repeat_key, "body /type + /data/id -> `s:<value>`");
    assert!(
        a.arrives_twice.contains("422 payload_mismatch"),
        "{}",
        a.arrives_twice
    );
    assert!(a.arrives_twice.contains("264 h"), "{}", a.arrives_twice);
    assert!(
        a.on_failure.contains("500") && a.on_failure.contains("after 5 real failures"),
        "{}",
        a.on_failure
    );
}

#[test]
fn the_shipped_configuration_raises_no_flag() {
    let json = AuditArgs {
        json: true,
        ..AuditArgs::default()
    };
    let out = run(&json, None).expect("audit of template.yaml");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["origin"]
        .as_str()
        .unwrap_or_default()
        .contains(SOURCES_PARAMETER));
    let sources = v["sources"].as_array().expect("sources");
    assert!(!sources.is_empty());
    for s in sources {
        assert_eq!(s["flags"], json!([]), "{s}");
    }
    assert_eq!(
        v["forwarding"]["signed"], true,
        "the template signs forwards"
    );
    assert_eq!(v["forwarding"]["flags"], json!([]));
}

#[test]
fn unsigned_forwards_are_flagged() {
    let unsigned = AuditArgs {
        forward_signing_secret: Some(String::new()),
        ..AuditArgs::default()
    };
    let out = run(&unsigned, None).expect("audit");
    assert!(out.contains("Forwards: UNSIGNED"), "{out}");
    assert!(out.contains(&format!("FLAG {FORWARD_UNSIGNED}:")), "{out}");
    let json = run(
        &AuditArgs {
            json: true,
            ..unsigned
        },
        None,
    )
    .expect("audit");
    let v: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["forwarding"]["signed"], false);
    assert_eq!(v["forwarding"]["flags"][0]["code"], FORWARD_UNSIGNED);
}

#[test]
fn a_configuration_error_is_reported_with_its_message() {
    let bad = r#"{"shop": {"signature": {"scheme": "sha1", "secrets": ["env:X"]}, "key": {"from": "payload_sha256"}}}"#;
    let err = run(&AuditArgs::default(), Some(bad.to_owned()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("source `shop`, field `signature.scheme`"),
        "{err}"
    );
    assert!(err.contains("$WEBHOOK_SOURCES"), "{err}");
}

#[test]
fn routes_without_a_forward_url_say_what_goes_nowhere_and_flag_unsigned_destinations() {
    let dir = std::env::temp_dir().join(format!("audit-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("destinations.json");
    std::fs::write(
        &file,
        r#"{"ci": {"target": "https://ci.acme-corp.io/in", "sources": ["github"], "event_types": ["push"], "unsigned": true}}"#,
    )
    .expect("write");
    let args = AuditArgs {
        destinations_file: Some(file.clone()),
        forward_url: Some(String::new()),
        ..AuditArgs::default()
    };
    let out = run(&args, None).expect("audit");
    assert!(
        out.contains("  github: destinations ci by their filters; every type but push and events without a type go NOWHERE\n"),
        "{out}"
    );
    assert!(
        out.contains("FLAG events_go_nowhere: github: every type but push and events without a type go nowhere: no destination takes them and no FORWARD_URL is set"),
        "{out}"
    );
    assert!(
        out.contains("FLAG destination_unsigned: destination `ci`"),
        "{out}"
    );
    let v: Value =
        serde_json::from_str(&run(&AuditArgs { json: true, ..args }, None).expect("audit"))
            .expect("JSON");
    assert_eq!(v["routing"]["forward_url"], false);
    assert_eq!(v["routing"]["flags"][0]["code"], "events_go_nowhere");
    assert_eq!(v["routing"]["flags"][1]["code"], "destination_unsigned");
    // With a ForwardUrl (assumed when not given): the rest goes there, nothing goes nowhere.
    let out = run(
        &AuditArgs {
            destinations_file: Some(file),
            ..AuditArgs::default()
        },
        None,
    )
    .expect("audit");
    assert!(
        out.contains("every type but push and events without a type to FORWARD_URL"),
        "{out}"
    );
    assert!(!out.contains("events_go_nowhere"), "{out}");
}

#[test]
fn a_batch_source_is_shown_keyed_per_event() {
    let s = spec(r#"{"preset": "sendgrid", "signature": {"secrets": ["env:X"]}}"#);
    assert_eq!(
        audit_source(&s, &QUEUE).repeat_key,
        "body /sg_event_id of each event of a JSON array, at most 4000 events -> `s:<value>` per event"
    );
}
