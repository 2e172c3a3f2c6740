//! `WEBHOOK_SOURCES` as a whole: the example from the documentation parses, every error
//! names its source and field, retention is checked against the queue's.

use super::*;
use crate::signature::{Encoding, HmacSpec, Scheme};

fn err(json: &str) -> String {
    SourceSpecs::parse(json).unwrap_err().to_string()
}

#[test]
fn parses_the_design_example() {
    let specs = SourceSpecs::parse(
        r#"{
          "stripe": {"signature": {"scheme": "stripe", "secrets": ["env:STRIPE_WEBHOOK_SECRET"], "tolerance_seconds": 300},
                     "key": {"from": "json", "pointers": ["/id"]}, "group": {"from": "key"},
                     "delivery": "effectively_once", "retention_hours": 168},
          "github": {"signature": {"scheme": "github", "secrets": ["env:GITHUB_WEBHOOK_SECRET"]},
                     "key": {"from": "header", "name": "X-GitHub-Delivery"}},
          "acme": {"signature": {"scheme": "standard-webhooks", "secrets": ["env:ACME_WEBHOOK_SECRET"]},
                   "key": {"from": "header", "name": "webhook-id"},
                   "group": {"from": "json", "pointers": ["/customer_id"]}}
        }"#,
    )
    .unwrap();
    let stripe = specs.get("stripe").unwrap();
    assert_eq!(stripe.key, KeySpec::Json(vec!["/id".into()]));
    assert_eq!(stripe.scheme, Scheme::Stripe);
    let github = specs.get("github").unwrap();
    assert_eq!(
        github.key,
        KeySpec::Header(http::HeaderName::from_static("x-github-delivery"))
    );
    assert_eq!(github.delivery, Delivery::EffectivelyOnce);
    assert_eq!(github.retention_hours, DEFAULT_RETENTION_HOURS);
    assert_eq!(github.tolerance_seconds, DEFAULT_TOLERANCE_SECONDS);
    let acme = specs.get("acme").unwrap();
    assert_eq!(acme.group, GroupSpec::Json(vec!["/customer_id".into()]));
    assert_eq!(acme.on_payload_mismatch, OnPayloadMismatch::Accept);
}

#[test]
fn errors_name_the_source_and_the_field() {
    let e = err(
        r#"{"shop": {"signature": {"scheme": "sha1", "secrets": ["env:X"]}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(
        e.contains("`shop`") && e.contains("signature.scheme"),
        "{e}"
    );
    let e = err(
        r#"{"shop": {"signature": {"scheme": "github", "secrets": ["hunter2"]}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(
        e.contains("signature.secrets") && !e.contains("hunter2"),
        "{e}"
    );
    let e = err(
        r#"{"shop": {"signature": {"scheme": "github", "secrets": []}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("signature.secrets"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none", "secrets": ["env:X"]}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("scheme `none` takes no secrets"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "json", "pointers": []}}}"#,
    );
    assert!(e.contains("key.pointers"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "json", "pointers": ["id"]}}}"#,
    );
    assert!(
        e.contains("key.pointers") && e.contains("JSON pointer"),
        "{e}"
    );
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "header"}}}"#,
    );
    assert!(e.contains("key.name"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "time"}}}"#,
    );
    assert!(e.contains("key.from"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}, "delivery": "maybe"}}"#,
    );
    assert!(e.contains("`shop`, field `delivery`"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}, "retention_hours": 0}}"#,
    );
    assert!(e.contains("retention_hours"), "{e}");
    let e = err(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}, "colour": 1}}"#,
    );
    assert!(e.contains("`shop`") && e.contains("colour"), "{e}");
    let e = err(r#"{"shop": {"key": {"from": "payload_sha256"}}}"#);
    assert!(e.contains("`shop`") && e.contains("signature"), "{e}");
    let e = err(
        r#"{"bad/name": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("`bad/name`") && e.contains("name"), "{e}");
    let e = err(
        r#"{"h": {"signature": {"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Sig"}, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("signature.encoding"), "{e}");
    assert!(err("[]").contains("not a JSON object"));
    assert!(err("{}").contains("no source"));
    assert!(err("{").contains("not a JSON object"));
}

#[test]
fn retention_must_outlast_the_chain_of_queue_dead_letter_queue_and_redrive() {
    use crate::config::{retention_chain_seconds, REDRIVE_MARGIN_SECONDS};
    // The template's: 4 days on the queue, 6 on the dead-letter queue, a day's margin.
    let chain = retention_chain_seconds(345_600, Some(518_400));
    assert_eq!(chain, 345_600 + 518_400 + REDRIVE_MARGIN_SECONDS);
    assert_eq!(chain, 264 * 3600, "eleven days");
    assert_eq!(retention_chain_seconds(345_600, None), 345_600);
    assert_eq!(
        DEFAULT_RETENTION_HOURS * 3600,
        chain,
        "the default lasts the chain"
    );
    let specs = |hours: u64| {
        SourceSpecs::parse(&format!(
            r#"{{"s": {{"signature": {{"scheme": "none"}}, "allow_unsigned": true, "key": {{"from": "payload_sha256"}}, "retention_hours": {hours}}}}}"#
        ))
        .unwrap()
    };
    // The old default, a week, outlasted the queue but not a redrive on day 8 to 11.
    let e = specs(168).check_retention(chain).unwrap_err().to_string();
    assert!(e.contains("`s`") && e.contains("retention chain"), "{e}");
    let e = specs(263).check_retention(chain).unwrap_err().to_string();
    assert!(
        e.contains("263 hours does not outlast the retention chain"),
        "{e}"
    );
    assert!(specs(264).check_retention(chain).is_ok());
    // The payload bucket likewise.
    use crate::config::env::check_payload_retention;
    let e = check_payload_retention(7, chain).unwrap_err().to_string();
    assert!(e.contains("PAYLOAD_RETENTION_DAYS"), "{e}");
    let e = check_payload_retention(10, chain).unwrap_err().to_string();
    assert!(e.contains("PAYLOAD_RETENTION_DAYS"), "{e}");
    assert!(check_payload_retention(11, chain).is_ok());
}

#[test]
fn retention_must_outlast_the_queue() {
    let specs = SourceSpecs::parse(
        r#"{"short": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}, "retention_hours": 96},
            "long": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    )
    .unwrap();
    let e = specs.check_retention(345_601).unwrap_err().to_string();
    assert!(
        e.contains("`short`") && e.contains("retention_hours"),
        "{e}"
    );
    assert!(specs.check_retention(345_600).is_ok());
}

#[test]
fn hmac_scheme_and_reject_policy_parse() {
    let specs = SourceSpecs::parse(r#"{"h": {"signature": {"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Sig", "encoding": "base64", "prefix": "sha256="},
          "key": {"from": "json", "pointers": ["/type", "/data/id"]}, "on_payload_mismatch": "reject", "delivery": "at_most_once"}}"#).unwrap();
    let h = specs.get("h").unwrap();
    assert_eq!(
        h.scheme,
        Scheme::HmacSha256(HmacSpec {
            header: "x-sig".into(),
            encoding: Encoding::Base64,
            prefix: "sha256=".into()
        })
    );
    assert_eq!(h.on_payload_mismatch, OnPayloadMismatch::Reject);
    assert_eq!(h.delivery, Delivery::AtMostOnce);
    assert_eq!(
        h.key,
        KeySpec::Json(vec!["/type".into(), "/data/id".into()])
    );
}

#[test]
fn scheme_none_needs_allow_unsigned_written_out() {
    for entry in [
        r#"{"open": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}}}"#,
        r#"{"open": {"signature": {"scheme": "none"}, "allow_unsigned": false, "key": {"from": "payload_sha256"}}}"#,
    ] {
        let e = err(entry);
        assert!(
            e.contains("`open`") && e.contains("allow_unsigned") && e.contains("true"),
            "{e}"
        );
    }
    let e = err(
        r#"{"gh": {"signature": {"scheme": "github", "secrets": ["env:X"]}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(
        e.contains("`gh`")
            && e.contains("allow_unsigned")
            && e.contains("only goes with scheme `none`"),
        "{e}"
    );
    let specs = SourceSpecs::parse(
        r#"{"open": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    )
    .unwrap();
    assert_eq!(specs.get("open").unwrap().scheme, Scheme::None);
}

#[test]
fn tolerance_is_at_most_an_hour_and_only_where_a_timestamp_is_signed() {
    let entry = |scheme: &str, extra: &str, tolerance: u64| {
        format!(
            r#"{{"src": {{"signature": {{"scheme": "{scheme}", "secrets": ["env:X"]{extra}, "tolerance_seconds": {tolerance}}}, "key": {{"from": "payload_sha256"}}}}}}"#
        )
    };
    for scheme in ["stripe", "standard-webhooks"] {
        let e = err(&entry(scheme, "", 3601));
        assert!(
            e.contains("`src`")
                && e.contains("signature.tolerance_seconds")
                && e.contains("over an hour"),
            "{e}"
        );
        let specs = SourceSpecs::parse(&entry(scheme, "", 3600)).unwrap();
        assert_eq!(specs.get("src").unwrap().tolerance_seconds, 3600);
    }
    for (scheme, extra) in [
        ("github", ""),
        ("shopify", ""),
        ("hmac-sha256", r#", "header": "X-Sig", "encoding": "hex""#),
    ] {
        let e = err(&entry(scheme, extra, 300));
        assert!(
            e.contains("`src`")
                && e.contains("signature.tolerance_seconds")
                && e.contains("signs no timestamp"),
            "{e}"
        );
    }
    let e = err(
        r#"{"src": {"signature": {"scheme": "none", "tolerance_seconds": 60}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
    );
    assert!(e.contains("signs no timestamp"), "{e}");
}

#[test]
fn replay_guard_only_on_body_only_schemes_within_the_retention() {
    let entry = |signature: &str, extra: &str| {
        format!(
            r#"{{"src": {{"signature": {signature}, "key": {{"from": "header", "name": "X-Id"}}{extra}}}}}"#
        )
    };
    let github = r#"{"scheme": "github", "secrets": ["env:X"]}"#;
    let specs = SourceSpecs::parse(&entry(github, r#", "replay_guard_seconds": 86400"#)).unwrap();
    assert_eq!(specs.get("src").unwrap().replay_guard_seconds, Some(86400));
    let specs = SourceSpecs::parse(&entry(github, "")).unwrap();
    assert_eq!(specs.get("src").unwrap().replay_guard_seconds, None);
    for signature in [
        r#"{"scheme": "shopify", "secrets": ["env:X"]}"#,
        r#"{"scheme": "hmac-sha256", "secrets": ["env:X"], "header": "X-Sig", "encoding": "hex"}"#,
    ] {
        assert!(SourceSpecs::parse(&entry(signature, r#", "replay_guard_seconds": 60"#)).is_ok());
    }
    for (signature, extra, says) in [
        (
            r#"{"scheme": "stripe", "secrets": ["env:X"]}"#,
            r#", "replay_guard_seconds": 60"#,
            "sign the body alone",
        ),
        (
            r#"{"scheme": "standard-webhooks", "secrets": ["env:X"]}"#,
            r#", "replay_guard_seconds": 60"#,
            "sign the body alone",
        ),
        (
            r#"{"scheme": "none"}, "allow_unsigned": true"#,
            r#", "replay_guard_seconds": 60"#,
            "sign the body alone",
        ),
        (github, r#", "replay_guard_seconds": 0"#, "between 1"),
        (
            github,
            r#", "replay_guard_seconds": 3601, "retention_hours": 1"#,
            "between 1 and the retention (3600 s)",
        ),
        (
            github,
            r#", "replay_guard_seconds": 60, "delivery": "at_most_once""#,
            "at_most_once",
        ),
    ] {
        let e = err(&entry(signature, extra));
        assert!(
            e.contains("`src`") && e.contains("replay_guard_seconds") && e.contains(says),
            "{e}"
        );
    }
}

/// The receiver's cold start (reading the secrets) warns about every unsigned source, by
/// name, and about no other.
#[test]
fn an_unsigned_source_is_warned_about_at_cold_start() {
    use std::sync::{Arc, Mutex};

    use lambda_runtime::tracing::subscriber::fmt::MakeWriter;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    std::env::set_var("INBOX_TEST_SECRET_COLD_START", "sixteen-bytes!!!");
    let specs = SourceSpecs::parse(
        r#"{"open": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}},
            "signed": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_SECRET_COLD_START"]}, "key": {"from": "payload_sha256"}}}"#,
    )
    .unwrap();
    let buffer = Buffer::default();
    let subscriber = lambda_runtime::tracing::subscriber::fmt()
        .with_writer(buffer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(specs.resolve(&AwsSecretResolver::env_only()))
            .unwrap()
    });
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains("WARN") && lines[0].contains("`open`") && lines[0].contains("unsigned"),
        "{text}"
    );
    assert!(!text.contains("signed`"), "{text}");
}

#[test]
fn a_source_named_twice_stops_start_up() {
    let entry = r#"{"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}"#;
    let e = err(&format!(
        r#"{{"dup": {entry}, "other": {entry}, "dup": {entry}}}"#
    ));
    assert!(e.contains("`dup`") && e.contains("more than once"), "{e}");
    assert!(SourceSpecs::parse(&format!(r#"{{"dup": {entry}, "other": {entry}}}"#)).is_ok());
}

#[test]
fn a_retention_that_could_wrap_stops_start_up() {
    let entry = |hours: u64| {
        format!(
            r#"{{"long": {{"signature": {{"scheme": "none"}}, "allow_unsigned": true, "key": {{"from": "payload_sha256"}}, "retention_hours": {hours}}}}}"#
        )
    };
    // i64::MAX seconds, in hours: added to a clock reading it wraps.
    for hours in [2_562_047_788_015_215, u64::MAX, MAX_RETENTION_HOURS + 1] {
        let e = err(&entry(hours));
        assert!(
            e.contains("`long`") && e.contains("retention_hours") && e.contains("ten years"),
            "{e}"
        );
    }
    let specs = SourceSpecs::parse(&entry(MAX_RETENTION_HOURS)).unwrap();
    assert_eq!(
        specs.get("long").unwrap().retention_hours,
        MAX_RETENTION_HOURS
    );
}

#[test]
fn a_forward_timeout_of_zero_stops_start_up() {
    let e = env::check_forward_timeout_ms(0).unwrap_err().to_string();
    assert!(e.contains("FORWARD_TIMEOUT_MS"), "{e}");
    let e = env::check_forward_timeout_ms(env::MAX_FORWARD_TIMEOUT_MS + 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("FORWARD_TIMEOUT_MS"), "{e}");
    assert_eq!(env::check_forward_timeout_ms(1), Ok(1));
    assert_eq!(
        env::check_forward_timeout_ms(env::MAX_FORWARD_TIMEOUT_MS),
        Ok(env::MAX_FORWARD_TIMEOUT_MS)
    );
}

/// A resolver over fixed values, for the tests below.
struct Values(std::collections::HashMap<&'static str, &'static str>);

impl SecretResolver for Values {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        let (SecretRef::Env(name) | SecretRef::SecretsManager(name)) = reference;
        self.0
            .get(name.as_str())
            .map(|v| (*v).to_owned())
            .ok_or_else(|| format!("`{reference}` is not set"))
    }
}

fn resolve_with(
    config: &str,
    values: &[(&'static str, &'static str)],
) -> Result<Sources, ConfigError> {
    let specs = SourceSpecs::parse(config)?;
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(specs.resolve(&Values(values.iter().copied().collect())))
}

const META_AND_GITHUB: &str = r#"{
    "fb": {"preset": "meta", "signature": {"secrets": ["env:APP_SECRET"]}, "verify_token": "env:VERIFY"},
    "gh": {"preset": "github", "signature": {"secrets": ["env:GH_SECRET", "env:GH_NEXT"]}}}"#;

/// No `Debug` output of a configuration, a verifier, a signer or a ledger holding a kept
/// handshake secret shows the secret: a panic message or a debug log carries it.
#[test]
fn no_secret_or_token_in_any_debug_output() {
    let secrets = [
        ("APP_SECRET", "meta-app-secret-0123456789"),
        ("VERIFY", "the-verify-token-0123456789"),
        ("GH_SECRET", "github-secret-0123456789"),
        ("GH_NEXT", "github-next-secret-0123456789"),
    ];
    let sources = resolve_with(META_AND_GITHUB, &secrets).expect("the sources resolve");
    let fb = sources.get("fb").expect("fb");
    let gh = sources.get("gh").expect("gh");
    assert_eq!(
        fb.verify_token.as_deref(),
        Some("the-verify-token-0123456789")
    );
    let whsec_key = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        b"a forward signing key of 32 b...",
    );
    let signer =
        crate::forward::ForwardSigner::new(&[format!("whsec_{whsec_key}")]).expect("a signer");
    let forwarder = crate::forward::HttpForwarder::new(
        "https://records.example/hooks",
        std::time::Duration::from_secs(1),
    )
    .expect("a forwarder")
    .signed(signer.clone());
    let ledger = crate::ledger::memory::MemoryLedger::new();
    let kept = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(async {
            use crate::ledger::LedgerStore as _;
            ledger.open_handshake("asana", 600).await?;
            ledger
                .keep_hook_secret("asana", "asana-kept-hook-secret-0123", 0)
                .await
        })
        .expect("answered");
    assert!(kept, "kept inside the window an operator opened");
    let outputs = [
        format!("{sources:?}"),
        format!("{fb:?}"),
        format!("{gh:?}"),
        format!("{fb:#?}"),
        format!("{:?}", fb.verifier),
        format!("{:?}", gh.verifier),
        format!("{signer:?}"),
        format!("{forwarder:?}"),
        format!("{ledger:?}"),
    ];
    let mut values: Vec<&str> = secrets.iter().map(|(_, v)| *v).collect();
    values.extend([whsec_key.as_str(), "asana-kept-hook-secret-0123"]);
    for output in &outputs {
        for value in &values {
            assert!(!output.contains(value), "{value} in {output}");
        }
    }
    assert!(
        outputs[1].contains("verify_token: Some(\"<redacted>\")"),
        "{}",
        outputs[1]
    );
    assert!(
        outputs[8].contains("asana"),
        "the source that kept one is said: {}",
        outputs[8]
    );
}

/// A verify token shorter than [`MIN_VERIFY_TOKEN_CHARS`] stops start-up, naming the source
/// and the field, never the token.
#[test]
fn a_short_verify_token_stops_start_up() {
    let with = |token: &'static str| {
        resolve_with(
            META_AND_GITHUB,
            &[
                ("APP_SECRET", "meta-app-secret-0123456789"),
                ("VERIFY", token),
                ("GH_SECRET", "github-secret-0123456789"),
                ("GH_NEXT", "github-next-secret-0123456789"),
            ],
        )
    };
    for short in ["", "meatyhamhock", "fifteen-chars-x"] {
        let e = with(short).expect_err("refused").to_string();
        assert!(
            e.contains("`fb`") && e.contains("verify_token") && e.contains("at least 16"),
            "{e}"
        );
        assert!(short.is_empty() || !e.contains(short), "{e}");
    }
    assert_eq!(MIN_VERIFY_TOKEN_CHARS, 16);
    with("sixteen-chars-xy").expect("16 characters are enough");
    // Characters, not bytes: 16 of them, whatever their encoding.
    with("éééééééééééééééé").expect("16 characters");
    let e = with("ééééééééééééééé")
        .expect_err("15 characters, 30 bytes")
        .to_string();
    assert!(
        e.contains("verify_token") && e.contains("at least 16"),
        "{e}"
    );
}

#[test]
fn a_batch_is_declared_with_a_per_event_key_and_checked() {
    let specs = SourceSpecs::parse(
        r#"{"x": {"signature": {"scheme": "github", "secrets": ["env:X"]},
                  "batch": {"format": "json_array", "at": "/events", "max_events": 10},
                  "key": {"from": "json", "pointers": ["/id"]}},
            "l": {"signature": {"scheme": "github", "secrets": ["env:X"]},
                  "batch": {"format": "json_lines"}, "key": {"from": "payload_sha256"}}}"#,
    )
    .unwrap();
    assert_eq!(
        specs.get("x").unwrap().batch,
        Some(BatchSpec {
            format: BatchFormat::JsonArray {
                at: "/events".into()
            },
            max_events: 10,
            signed_each_event: false,
        })
    );
    assert_eq!(
        specs.get("l").unwrap().batch,
        Some(BatchSpec {
            format: BatchFormat::JsonLines,
            max_events: DEFAULT_MAX_EVENTS,
            signed_each_event: false,
        })
    );
}

#[test]
fn a_batch_with_a_header_key_a_replay_guard_or_out_of_range_stops_start_up() {
    let with = |batch: &str, rest: &str| {
        err(&format!(
            r#"{{"x": {{"signature": {{"scheme": "github", "secrets": ["env:X"]}}, "batch": {batch}, {rest}}}}}"#
        ))
    };
    let json_key = r#""key": {"from": "json", "pointers": ["/id"]}"#;
    for (batch, rest, field, says) in [
        (
            r#"{"format": "json_array"}"#,
            r#""key": {"from": "header", "name": "x-id"}"#,
            "`batch`",
            "keyed in each event",
        ),
        (
            r#"{"format": "json_array"}"#,
            &format!(r#"{json_key}, "replay_guard_seconds": 60"#) as &str,
            "`batch`",
            "replay_guard_seconds",
        ),
        (
            r#"{"format": "json_array"}"#,
            &format!(r#"{json_key}, "delivery": "at_most_once""#),
            "`batch`",
            "ledger",
        ),
        (
            r#"{"format": "json_array", "max_events": 0}"#,
            json_key,
            "batch.max_events",
            "between 1 and 4000",
        ),
        (
            r#"{"format": "json_array", "max_events": 4001}"#,
            json_key,
            "batch.max_events",
            "between 1 and 4000",
        ),
        (
            r#"{"format": "json_lines", "signed": "each_event"}"#,
            json_key,
            "batch.signed",
            "goes with `json_array`",
        ),
        (
            r#"{"format": "json_array", "signed": "each_event"}"#,
            json_key,
            "batch.signed",
            "a `pointer`, not a header",
        ),
        (
            r#"{"format": "json_array", "signed": "per_item"}"#,
            json_key,
            "batch.signed",
            "request, each_event",
        ),
        (
            r#"{"format": "xml"}"#,
            json_key,
            "batch.format",
            "json_array, json_lines",
        ),
        (
            r#"{"format": "json_array", "at": "events"}"#,
            json_key,
            "batch.at",
            "not a JSON pointer",
        ),
        (
            r#"{"format": "json_lines", "at": "/events"}"#,
            json_key,
            "batch.at",
            "only goes with `json_array`",
        ),
    ] {
        let e = with(batch, rest);
        assert!(e.contains(field) && e.contains(says), "{batch} {rest}: {e}");
    }
}

/// `on_invalid_signature`: 401 unless a source (Figma's preset) asks for 400; another value
/// stops start-up, naming the choices.
#[test]
fn the_refusal_of_an_invalid_signature_is_a_choice() {
    let parse = |extra: &str| {
        SourceSpecs::parse(&format!(
            r#"{{"s": {{"signature": {{"scheme": "github", "secrets": ["env:X"]}},
                       "key": {{"from": "header", "name": "x-github-delivery"}}{extra}}}}}"#
        ))
    };
    let refusal = |extra: &str| {
        parse(extra)
            .expect("parses")
            .get("s")
            .unwrap()
            .on_invalid_signature
    };
    assert_eq!(refusal(""), SignatureRefusal::Unauthorized);
    assert_eq!(
        refusal(r#", "on_invalid_signature": "bad_request""#),
        SignatureRefusal::BadRequest
    );
    let e = parse(r#", "on_invalid_signature": "teapot""#)
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("on_invalid_signature") && e.contains("unauthorized, bad_request"),
        "{e}"
    );
    let figma =
        SourceSpecs::parse(r#"{"f": {"preset": "figma", "signature": {"secrets": ["env:X"]}}}"#)
            .expect("parses");
    assert_eq!(
        figma.get("f").unwrap().on_invalid_signature,
        SignatureRefusal::BadRequest
    );
}

#[test]
fn attempt_fields_are_json_pointers_off_the_keys_path_with_a_json_or_header_key() {
    let entry = |key: &str, fields: &str| {
        format!(
            r#"{{"src": {{"signature": {{"scheme": "github", "secrets": ["env:X"]}}, "key": {key}, "attempt_fields": {fields}}}}}"#
        )
    };
    let json_key = r#"{"from": "json", "pointers": ["/event/id"]}"#;
    let specs = SourceSpecs::parse(&entry(json_key, r#"["/attempt_number"]"#)).unwrap();
    assert_eq!(
        specs.get("src").unwrap().attempt_fields,
        ["/attempt_number"]
    );
    // A header key: the body's per-attempt members leave the hash too (Linear's
    // `webhookTimestamp` beside its `Linear-Delivery` header).
    let header_key = r#"{"from": "header", "name": "Linear-Delivery"}"#;
    let specs = SourceSpecs::parse(&entry(header_key, r#"["/webhookTimestamp"]"#)).unwrap();
    assert_eq!(
        specs.get("src").unwrap().attempt_fields,
        ["/webhookTimestamp"]
    );
    for (key, fields, says) in [
        (json_key, "[]", "1 to 8 JSON pointers"),
        (
            json_key,
            r#"["attempt"]"#,
            "`attempt` is not a JSON pointer",
        ),
        (json_key, r#"["/"]"#, "`/` is not a JSON pointer"),
        (
            json_key,
            r#"["/event"]"#,
            "`/event` is on a key pointer's path",
        ),
        (
            json_key,
            r#"["/event/id"]"#,
            "`/event/id` is on a key pointer's path",
        ),
        (
            r#"{"from": "payload_sha256"}"#,
            r#"["/n"]"#,
            "only with a key read from the JSON body",
        ),
        (
            r#"{"from": "form", "names": ["MessageSid"]}"#,
            r#"["/n"]"#,
            "only with a key read from the JSON body",
        ),
    ] {
        let e = err(&entry(key, fields));
        assert!(
            e.contains("`src`") && e.contains("attempt_fields") && e.contains(says),
            "{e}"
        );
    }
    // Unset: the hash is of the body as sent.
    let specs = SourceSpecs::parse(
        r#"{"src": {"signature": {"scheme": "github", "secrets": ["env:X"]}, "key": {"from": "json", "pointers": ["/id"]}}}"#,
    )
    .unwrap();
    assert!(specs.get("src").unwrap().attempt_fields.is_empty());
}
