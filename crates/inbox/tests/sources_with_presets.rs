//! The rules around presets that the providers' own requests do not reach: what start-up
//! refuses, what a handshake refuses, which methods a source admits, and the bounded
//! per-type count.

use std::collections::HashMap;

use http::Request;
use inbox::clock::SystemClock;
use inbox::config::{SecretRef, SecretResolver};
use inbox::ledger::memory::MemoryLedger;
use inbox::metrics::Metrics;
use inbox::queue::{Outgoing, Queue, QueueError};
use inbox::receiver::{Receiver, ReceiverSettings};
use inbox::SourceSpecs;
use lambda_http::Body;

struct Secrets;

impl SecretResolver for Secrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        let values = HashMap::from([
            ("S", "a-secret-of-enough-bytes"),
            ("V", "my-verify-token-0123"),
        ]);
        let (SecretRef::Env(name) | SecretRef::SecretsManager(name)) = reference;
        values
            .get(name.as_str())
            .map(|v| (*v).to_owned())
            .ok_or_else(|| format!("{name} unset"))
    }
}

struct Nowhere;

impl Queue for Nowhere {
    async fn send(&self, _msg: Outgoing) -> Result<(), QueueError> {
        Ok(())
    }
}

fn refused(config: &str) -> String {
    match SourceSpecs::parse(config) {
        Ok(_) => panic!("accepted: {config}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn start_up_names_what_a_preset_source_lacks_or_adds_wrongly() {
    let cases = [
        (
            r#"{"s": {"preset": "twilio", "signature": {"secrets": ["env:S"]}}}"#,
            "public_url",
        ),
        (
            r#"{"s": {"preset": "twilio", "signature": {"secrets": ["env:S"]}, "public_url": "http://x.example/webhooks/s"}}"#,
            "https://",
        ),
        (
            r#"{"s": {"preset": "stripe", "signature": {"secrets": ["env:S"]}, "public_url": "https://x.example/webhooks/s"}}"#,
            "signs no URL",
        ),
        (
            r#"{"s": {"preset": "meta", "signature": {"secrets": ["env:S"]}, "verify_token": "plain"}}"#,
            "never the token itself",
        ),
        (
            r#"{"s": {"preset": "github", "signature": {"secrets": ["env:S"]}, "verify_token": "env:V"}}"#,
            "only goes with the meta handshake",
        ),
        (
            r#"{"s": {"preset": "gitlab", "signature": {"secrets": ["env:S"]}, "handshake": "zoom"}}"#,
            "needs an HMAC scheme",
        ),
        (
            r#"{"s": {"preset": "github", "signature": {"secrets": ["env:S"]}, "handshake": "nope"}}"#,
            "unknown `nope`",
        ),
        (
            r#"{"s": {"preset": "github", "signature": {"secrets": ["env:S"], "items": ","}}}"#,
            "does not take `items`",
        ),
        (
            r#"{"s": {"preset": "stripe", "signature": {"secrets": ["env:S"]}, "event_type": {"from": "json", "name": "type"}}}"#,
            "`from: json` a `pointer`",
        ),
        (
            r#"{"s": {"preset": "github", "signature": {"secrets": ["env:S"]}, "event_type": {"from": "header", "name": "x-github-event", "metric_types": ["other"]}}}"#,
            "metric_types",
        ),
        (
            r#"{"s": {"signature": {"scheme": "hmac", "secrets": ["env:S"], "header": "x-sig", "encoding": "hex", "content": "{timestamp}.{body}"}, "key": {"from": "payload_sha256"}}}"#,
            "{timestamp}",
        ),
        (
            r#"{"s": {"preset": "twilio", "signature": {"secrets": ["env:S"]}, "public_url": "https://x.example/w/s", "key": {"from": "form"}}}"#,
            "`names`",
        ),
    ];
    for (config, wanted) in cases {
        let message = refused(config);
        assert!(message.contains(wanted), "{config}: {message}");
    }
}

async fn receiver(
    config: &str,
) -> (
    Receiver<MemoryLedger, Nowhere, SystemClock>,
    Metrics,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let sources = SourceSpecs::parse(config)
        .expect("sources")
        .resolve(&Secrets)
        .await
        .expect("resolved");
    let (metrics, lines) = Metrics::memory("receiver");
    let rx = Receiver::new(
        sources,
        MemoryLedger::new(),
        Nowhere,
        SystemClock,
        ReceiverSettings::default(),
        metrics.clone(),
    );
    (rx, metrics, lines)
}

fn request(method: &str, uri: &str, headers: &[(&str, &str)], body: &str) -> lambda_http::Request {
    let mut builder = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    builder
        .body(Body::from(body.to_owned()))
        .expect("a request")
}

#[tokio::test]
async fn get_reaches_only_a_source_whose_handshake_is_a_get_and_a_wrong_token_is_401() {
    let (rx, _, _) = receiver(
        r#"{"gh": {"preset": "github", "signature": {"secrets": ["env:S"]}},
            "fb": {"preset": "meta", "signature": {"secrets": ["env:S"]}, "verify_token": "env:V"}}"#,
    )
    .await;
    let get = |uri: &str| request("GET", uri, &[], "");
    let resp = rx.handle(get("https://h/webhooks/gh?challenge=x")).await;
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "POST");
    let resp = rx
        .handle(get("https://h/webhooks/nobody?challenge=x"))
        .await;
    assert_eq!(resp.status(), 405);
    let base = "https://h/webhooks/fb?hub.mode=subscribe&hub.challenge=42";
    let resp = rx
        .handle(get(&format!(
            "{base}&hub.verify_token=my-verify-token-0123"
        )))
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.body().to_vec(), b"42");
    // The challenge echoed, never sniffed into another type.
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    assert!(resp.headers()["content-type"]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/plain")));
    for wrong in ["other", "my-verify-token-012", "my-verify-token-01234", ""] {
        let resp = rx
            .handle(get(&format!("{base}&hub.verify_token={wrong}")))
            .await;
        assert_eq!(resp.status(), 401, "{wrong:?}");
    }
    let resp = rx
        .handle(get("https://h/webhooks/fb?hub.mode=unsubscribe&hub.challenge=42&hub.verify_token=my-verify-token-0123"))
        .await;
    assert_eq!(resp.status(), 401);
    let resp = rx
        .handle(request("PUT", "https://h/webhooks/fb", &[], ""))
        .await;
    assert_eq!(resp.status(), 405);
    assert!(rx.ledger().snapshot().is_empty());
}

#[tokio::test]
async fn asana_keeps_the_first_secret_and_refuses_another() {
    let (rx, _, _) = receiver(r#"{"a": {"preset": "asana", "signature": {"secrets": []}}}"#).await;
    let shake = |secret: &str| {
        request(
            "POST",
            "https://h/webhooks/a",
            &[("x-hook-secret", secret)],
            "",
        )
    };
    // No secret established yet: an event cannot verify.
    let event = request(
        "POST",
        "https://h/webhooks/a",
        &[("x-hook-signature", "00")],
        "{}",
    );
    assert_eq!(rx.handle(event).await.status(), 401);
    // No window open: the first handshake is anyone's, so it is refused.
    assert_eq!(
        rx.handle(shake("early-secret-0123456789")).await.status(),
        401
    );
    let now = inbox::clock::Clock::now_secs(&SystemClock);
    let opened = inbox::ledger::LedgerStore::open_handshake(rx.ledger(), "a", now + 600).await;
    assert_eq!(opened.ok(), Some(true));
    let first = rx.handle(shake("first-secret-0123456789")).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-hook-secret"], "first-secret-0123456789");
    // The same secret again (Asana re-sending its handshake) is answered; another is not.
    assert_eq!(
        rx.handle(shake("first-secret-0123456789")).await.status(),
        200
    );
    assert_eq!(
        rx.handle(shake("stranger-secret-98765")).await.status(),
        401
    );
    assert!(rx.ledger().snapshot().is_empty(), "no event item");
}

#[tokio::test]
async fn the_per_type_count_covers_the_listed_types_and_counts_the_rest_as_other() {
    use hmac::Mac as _;
    let (rx, _, lines) = receiver(
        r#"{"gh": {"preset": "github", "signature": {"secrets": ["env:S"]},
                   "event_type": {"from": "header", "name": "x-github-event", "metric_types": ["push"]}},
            "plain": {"preset": "github", "signature": {"secrets": ["env:S"]}}}"#,
    )
    .await;
    let send = |source: &'static str, delivery: &'static str, event: &'static str| {
        let body = format!(r#"{{"d":"{delivery}"}}"#);
        let mut mac =
            hmac::Hmac::<sha2::Sha256>::new_from_slice(b"a-secret-of-enough-bytes").expect("key");
        mac.update(body.as_bytes());
        let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
        request(
            "POST",
            &format!("https://h/webhooks/{source}"),
            &[
                ("x-github-delivery", delivery),
                ("x-github-event", event),
                ("x-hub-signature-256", &signature),
            ],
            &body,
        )
    };
    for (source, delivery, event) in [
        ("gh", "d1", "push"),
        ("gh", "d2", "issues"),
        ("plain", "d3", "push"),
    ] {
        assert_eq!(rx.handle(send(source, delivery, event)).await.status(), 200);
    }
    let by_type: Vec<(String, String)> = lines
        .lock()
        .expect("lines")
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("AcceptedByType").is_some())
        .map(|v| {
            (
                v["source"].as_str().unwrap_or_default().to_owned(),
                v["event_type"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        by_type,
        [
            ("gh".to_owned(), "push".to_owned()),
            ("gh".to_owned(), "other".to_owned())
        ]
    );
}
