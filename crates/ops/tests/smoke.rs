//! `inbox-ops smoke` against the local stack: the binary, run as an operator runs it after a
//! deploy, sends a signed event and its duplicate to the receiver served over HTTP the way API
//! Gateway serves it (devstack's front door in front of the receiver built from the stack's
//! function configuration, its secrets read from moto's Secrets Manager), and exits 0 only for
//! an acceptance and its replay.

use std::process::Output;

use devstack::testkit::{self, FrontDoor, LocalAws};
use inbox::receiver::ReceiverSettings;

/// `inbox-ops smoke --url <url> --source <source>` with `env` set, on the moto server the test
/// process points at (its `AWS_*` variables are inherited).
async fn smoke(url: &str, source: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"));
    cmd.args(["smoke", "--url", url, "--source", source]);
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().await.expect("inbox-ops runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_passes_for_every_scheme_through_secrets_manager() {
    let aws = LocalAws::new("smoke").await;
    let (receiver, _) = aws.receiver(ReceiverSettings::default()).await;
    let door = FrontDoor::start(receiver).await.expect("the front door");
    let sources = &aws.stack.receiver.environment["WEBHOOK_SOURCES"];
    assert!(
        sources.contains("secretsmanager:") && !sources.contains("env:"),
        "the stack's sources read Secrets Manager: {sources}"
    );

    let schemes = ["github", "stripe", "acme", "shop", "orders"];
    for source in schemes {
        let out = smoke(&door.webhook_url(), source, &[("WEBHOOK_SOURCES", sources)]).await;
        let said = text(&out);
        assert!(out.status.success(), "smoke {source}: {said}");
        assert!(said.contains("(Idempotent-Replayed: true)"), "{said}");
        assert!(said.contains("ok: accepted once"), "{said}");
    }

    // Each event once: one ledger item and one message per smoke run.
    let items = aws.ledger_items().await;
    assert_eq!(items.len(), schemes.len(), "{items:?}");
    assert!(items.iter().all(|r| r.key.contains("smoke-")), "{items:?}");
    assert_eq!(
        aws.queue_counts(&aws.resources.queue_url).await,
        (schemes.len() as u64, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_fails_when_the_receiver_refuses_the_event() {
    let aws = LocalAws::new("smoke-refused").await;
    let (receiver, _) = aws.receiver(ReceiverSettings::default()).await;
    let door = FrontDoor::start(receiver).await.expect("the front door");

    // Signed with another secret than the receiver's: 401, and the smoke test says so.
    let wrong = r#"{"github": {"signature": {"scheme": "github", "secrets": ["env:SMOKE_WRONG_SECRET"]},
                    "key": {"from": "header", "name": "X-GitHub-Delivery"}}}"#;
    let out = smoke(
        &door.webhook_url(),
        "github",
        &[
            ("WEBHOOK_SOURCES", wrong),
            ("SMOKE_WRONG_SECRET", "not-the-receivers-secret"),
        ],
    )
    .await;
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("401") && said.contains("FAILED"), "{said}");

    // A source the configuration does not have: an error, exit 1.
    let sources = &aws.stack.receiver.environment["WEBHOOK_SOURCES"];
    let out = smoke(&door.webhook_url(), "nope", &[("WEBHOOK_SOURCES", sources)]).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("no source \"nope\""), "{}", text(&out));

    // Nothing reached the ledger or the queue.
    assert!(aws.ledger_items().await.is_empty());
    assert_eq!(aws.queue_counts(&aws.resources.queue_url).await, (0, 0));
}

/// The README's smoke test after a deploy with the template's defaults: the default source
/// (github, with its 72-hour body guard) and its secret in Secrets Manager. Run twice, as a
/// user runs it again: each run is a new delivery with a new body, accepted, never the guard's
/// 409 `replayed_body`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smoke_test_on_the_default_source_can_be_run_again() {
    let template = devstack::cloudformation::Translated::project().expect("template.yaml");
    let sources = template
        .parameter("WebhookSources")
        .expect("WebhookSources")["Default"]
        .as_str()
        .expect("a default")
        .to_owned();
    assert!(sources.contains("replay_guard_seconds"), "{sources}");
    // The other tests' github secret, on the same moto: this one's put must not change the
    // secret under a test running beside it.
    let secret = devstack::local_stack::Secret::new("webhook-inbox/github", testkit::TEST_SECRET);
    let aws = LocalAws::with_sources("smoke-default", &sources, &[secret]).await;
    let (receiver, _) = aws.receiver(ReceiverSettings::default()).await;
    let door = FrontDoor::start(receiver).await.expect("the front door");
    for run in 1..=2 {
        let out = smoke(
            &door.webhook_url(),
            "github",
            &[("WEBHOOK_SOURCES", &sources)],
        )
        .await;
        let said = text(&out);
        assert!(out.status.success(), "run {run}: {said}");
        assert!(said.contains("ok: accepted once"), "run {run}: {said}");
        assert!(!said.contains("replayed_body"), "run {run}: {said}");
    }
}

/// Without `--sources` or `WEBHOOK_SOURCES`, smoke tests what is deployed: the sources are the
/// stack's `WebhookSources` parameter (`DescribeStacks` of `--stack`, here the stack created
/// from template.yaml on moto's CloudFormation), not the template's default, which has neither
/// `acme` nor `stripe`. (Not `github`: another test here puts its own `webhook-inbox/github`
/// secret on the same moto.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_reads_the_sources_of_the_deployed_stack() {
    let aws = LocalAws::new("smoke-stack").await;
    let (receiver, _) = aws.receiver(ReceiverSettings::default()).await;
    let door = FrontDoor::start(receiver).await.expect("the front door");
    let template = devstack::cloudformation::Translated::project().expect("template.yaml");
    let default = template
        .parameter("WebhookSources")
        .expect("WebhookSources")["Default"]
        .as_str()
        .expect("a default")
        .to_owned();
    assert!(
        !default.contains("\"acme\"") && !default.contains("\"stripe\""),
        "{default}"
    );

    let run = |source: &'static str, stack: String| {
        let url = door.webhook_url();
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
                .args([
                    "smoke", "--url", &url, "--stack", &stack, "--source", source,
                ])
                .env_remove("WEBHOOK_SOURCES")
                .output()
                .await
                .expect("inbox-ops runs");
            (out.status.success(), text(&out))
        }
    };
    for source in ["acme", "stripe"] {
        let (ok, said) = run(source, aws.stack.name.clone()).await;
        assert!(ok, "smoke {source}: {said}");
        assert!(
            said.contains(&format!(
                "sources from the WebhookSources parameter of stack {}",
                aws.stack.name
            )),
            "{said}"
        );
        assert!(said.contains("ok: accepted once"), "{said}");
    }
    assert_eq!(aws.ledger_items().await.len(), 2);

    // A stack that does not exist: said, and nothing sent.
    let (ok, said) = run("acme", "no-such-stack".to_owned()).await;
    assert!(!ok, "{said}");
    assert!(
        said.contains("no --sources FILE, no WEBHOOK_SOURCES") && said.contains("no-such-stack"),
        "{said}"
    );
    assert_eq!(aws.ledger_items().await.len(), 2);
}

/// A public key the sources below take for Ed25519 (hex) and ECDSA P-256 (base64 DER): valid
/// points, whose private keys smoke does not have, as with Discord's and SendGrid's.
const ED25519_PUBLIC_HEX: &str = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8";
const P256_PUBLIC_DER_B64: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEPteijsZI7c5dW34lL2sqr7tEg1EUoks8qo9xD2SZO8JXEaNM3JIpCAtjnwmXf+t8qR7M4WSb/qithccrIGrefg==";

/// One preset source per (source, preset, secret, …), its secret in Secrets Manager under
/// `webhook-inbox/smoke-families/<source>`; Twilio gets the `public_url` it signs.
fn family_sources(
    families: &[(&str, &str, &str, &str, bool)],
) -> (String, Vec<devstack::local_stack::Secret>) {
    let mut sources = serde_json::Map::new();
    let mut secrets = Vec::new();
    for (source, preset, secret, _, _) in families {
        let name = format!("webhook-inbox/smoke-families/{source}");
        let mut entry = serde_json::json!({"preset": preset});
        if secret.is_empty() {
            // Asana's secret comes with its handshake: none configured.
            sources.insert((*source).to_owned(), entry);
            continue;
        }
        entry["signature"] = serde_json::json!({"secrets": [format!("secretsmanager:{name}")]});
        if *preset == "twilio" {
            entry["public_url"] = serde_json::json!("https://hooks.example/webhooks/twilio");
        }
        sources.insert((*source).to_owned(), entry);
        secrets.push(devstack::local_stack::Secret::new(name, *secret));
    }
    (serde_json::Value::Object(sources).to_string(), secrets)
}

/// `inbox-ops smoke` signs every signature family a preset uses, as the preset declares it,
/// and the receiver built from the stack verifies it: one source per family (and per place a
/// family reads its timestamp or writes its signature), its secret in Secrets Manager, the
/// sources read from the deployed stack. The families whose private key only the provider
/// holds (Ed25519: Discord; ECDSA P-256: SendGrid), and a source whose secret its provider's
/// handshake establishes (Asana), are sent unsigned and pass only on the receiver's 401
/// `invalid_signature`, with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_signs_every_family_a_preset_uses() {
    let shared = "a-smoke-secret-of-enough-bytes";
    // (source, preset, its secret, the family smoke prints, signed by smoke?)
    let families: [(&str, &str, &str, &str, bool); 13] = [
        ("slack", "slack", shared, "hmac-sha256", true),
        ("linear", "linear", shared, "hmac-sha256", true),
        ("sanity", "sanity", shared, "hmac-sha256", true),
        ("mailgun", "mailgun", shared, "hmac-sha256", true),
        ("twilio", "twilio", shared, "hmac-sha1", true),
        ("intercom", "intercom", shared, "hmac-sha1", true),
        ("gitlab", "gitlab", shared, "token (header)", true),
        ("figma", "figma", shared, "token (body)", true),
        (
            "inbound",
            "postmark-inbound",
            "postmark:a-smoke-password-of-enough-bytes",
            "basic",
            true,
        ),
        (
            "clerk",
            "clerk",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "hmac-sha256",
            true,
        ),
        (
            "sendgrid",
            "sendgrid",
            P256_PUBLIC_DER_B64,
            "ecdsa-p256",
            false,
        ),
        (
            "discord",
            "discord-events",
            ED25519_PUBLIC_HEX,
            "ed25519",
            false,
        ),
        // No secret configured: Asana's is established by its handshake, so unsigned too.
        ("asana", "asana", "", "hmac-sha256", false),
    ];
    let (sources, secrets) = family_sources(&families);
    let aws = LocalAws::with_sources("smoke-families", &sources, &secrets).await;
    let (receiver, _) = aws.receiver(ReceiverSettings::default()).await;
    let door = FrontDoor::start(receiver).await.expect("the front door");

    let mut accepted = 0;
    for (source, preset, _, family, signed) in families {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
            .args([
                "smoke",
                "--url",
                &door.webhook_url(),
                "--stack",
                &aws.stack.name,
            ])
            .args(["--source", source])
            .env_remove("WEBHOOK_SOURCES")
            .output()
            .await
            .expect("inbox-ops runs");
        let said = text(&out);
        assert!(out.status.success(), "smoke {source} ({preset}): {said}");
        assert!(said.contains(&format!("family {family},")), "{said}");
        if signed {
            assert!(said.contains("(Idempotent-Replayed: true)"), "{said}");
            assert!(said.contains("ok: accepted once"), "{said}");
            accepted += 1;
        } else {
            assert!(
                said.contains(r#"401 {"error":"invalid_signature"}"#)
                    && said.contains("ok: refused unsigned"),
                "{said}"
            );
        }
        // Each signed event once; nothing for a refused one.
        assert_eq!(aws.ledger_items().await.len(), accepted, "after {source}");
    }
    assert_eq!(
        aws.queue_counts(&aws.resources.queue_url).await,
        (accepted as u64, 0)
    );
}
