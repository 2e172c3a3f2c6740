//! `inbox-ops pause`, `status` and `resume` as an operator runs them, against a local stack's
//! event source mapping (moto's Lambda): the mapping found by `--stack`, `--function` and
//! `--uuid`; paused while the receiver keeps accepting, the waiting events counted; resumed.
//! Delivery itself (nothing while paused, each event once after) is `tests/forwarding.rs`.

use devstack::testkit::{github_headers, post, LocalAws};
use inbox::receiver::ReceiverSettings;
use serde_json::Value;

/// Runs the `inbox-ops` binary (it finds the local server through the inherited
/// `AWS_ENDPOINT_URL`): exit code, stdout, stderr.
async fn inbox_ops(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
        .args(args)
        .env_remove("QUEUE_URL")
        .output()
        .await
        .expect("run inbox-ops");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn status_json(args: &[&str]) -> Value {
    let mut all = vec!["status", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = inbox_ops(&all).await;
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("status --json ({e}): {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume_the_stacks_mapping_while_the_receiver_accepts() {
    let aws = LocalAws::new("ops-pause").await;
    let stack = aws.stack.name.clone();
    let uuid = aws.stack.event_source_mapping.uuid.clone();
    let function = aws.stack.consumer.name.clone();

    let (code, out, err) = inbox_ops(&["pause", "--stack", &stack, "--wait", "10"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("paused: event source mapping {uuid} (")),
        "{out}"
    );
    assert!(out.contains(" is Disabled\n"), "{out}");
    assert!(out.contains("the receiver keeps accepting"), "{out}");

    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    for id in ["pause-1", "pause-2"] {
        let body = format!(r#"{{"action":"opened","number":"{id}"}}"#).into_bytes();
        let resp = rx
            .handle(post("github", &github_headers(id, &body), &body))
            .await;
        assert_eq!(resp.status(), 200, "accepted while paused");
    }
    let status = status_json(&["--stack", &stack]).await;
    assert_eq!(status["paused"], true, "{status}");
    assert_eq!(status["state"], "Disabled");
    assert_eq!(status["event_source_mapping"], uuid);
    // The same queue (moto spells its URL after the endpoint, the stack after the region).
    let name = |url: &str| url.rsplit('/').next().unwrap_or_default().to_owned();
    let named = |v: &Value| name(v.as_str().unwrap_or_default());
    assert_eq!(
        named(&status["queue"]["url"]),
        name(&aws.resources.queue_url)
    );
    assert_eq!(status["queue"]["messages"]["waiting"], 2, "{status}");
    assert_eq!(
        named(&status["dead_letter_queue"]["url"]),
        name(&aws.resources.dlq_url)
    );
    let (code, text, err) = inbox_ops(&["status", "--function", &function]).await;
    assert_eq!(code, 0, "{err}");
    assert!(text.starts_with("delivery: PAUSED"), "{text}");
    assert!(text.contains("queue: 2 waiting, 0 in flight"), "{text}");

    let (code, out, err) = inbox_ops(&["resume", "--function", &function, "--wait", "10"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("resumed: event source mapping {uuid}")),
        "{out}"
    );
    assert!(out.contains(" is Enabled\n"), "{out}");
    let status = status_json(&["--uuid", &uuid]).await;
    assert_eq!(status["paused"], false, "{status}");
    assert_eq!(status["state"], "Enabled");

    let (code, _, err) = inbox_ops(&["pause", "--stack", "no-such-stack-here"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("ListStackResources no-such-stack-here"),
        "{err}"
    );
    let status = status_json(&["--uuid", &uuid]).await;
    assert_eq!(status["paused"], false, "a failed pause changed nothing");
}

/// The paused destinations on the stack's pause board, as the consumer reads them.
async fn paused_destinations(aws: &LocalAws) -> Vec<String> {
    inbox::destination::pause::PauseBoard::new(aws.dynamo.clone(), &aws.stack.table)
        .paused()
        .await
        .expect("the pause board reads")
        .into_iter()
        .collect()
}

/// `destination`'s breaker opened on the stack's pause board at 2023-11-14 22:13:20 UTC, by
/// the conditional write a consumer makes at its first failure (a rule of one).
async fn open_breaker(aws: &LocalAws, destination: &str) {
    use inbox::breaker::{apply, Breaker, Observed, Rule};
    let board = inbox::destination::pause::PauseBoard::new(aws.dynamo.clone(), &aws.stack.table);
    let rule = Rule {
        failures: 1,
        ..Rule::default()
    };
    let (opened, _) = apply(&board, destination, Breaker::default(), |b| {
        b.observe(&rule, 1_700_000_000_000, "req:m", Observed::Failure)
    })
    .await
    .expect("the board is written");
    assert!(opened.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume_one_destination_on_the_pause_board() {
    let aws = LocalAws::new("ops-pause-destination").await;
    let stack = aws.stack.name.clone();
    assert!(paused_destinations(&aws).await.is_empty());

    let (code, out, err) =
        inbox_ops(&["pause", "--destination", "billing", "--stack", &stack]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("paused: destination billing (table "),
        "{out}"
    );
    assert!(out.contains("paused destinations: billing\n"), "{out}");
    assert_eq!(paused_destinations(&aws).await, ["billing"]);
    // Twice is once; a second destination joins it; the mapping is untouched.
    for name in ["billing", "crm"] {
        let (code, _, err) = inbox_ops(&["pause", "--destination", name, "--stack", &stack]).await;
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(paused_destinations(&aws).await, ["billing", "crm"]);
    assert_eq!(status_json(&["--stack", &stack]).await["paused"], false);

    // billing's breaker opened (as a consumer writes it): `status` shows each destination's
    // pause and breaker, and `resume --destination` closes the breaker too.
    open_breaker(&aws, "billing").await;
    let status = status_json(&["--stack", &stack]).await;
    let rows = status["destinations"].as_array().expect("destinations");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {status}"))
    };
    assert_eq!(row("billing")["breaker"]["state"], "open", "{status}");
    assert_eq!(
        row("billing")["breaker"]["opened_at_ms"],
        1_700_000_000_000_i64
    );
    assert_eq!(row("crm")["paused"], true);
    assert_eq!(row("crm")["breaker"]["state"], "closed");
    let (code, text, err) = inbox_ops(&["status", "--stack", &stack]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("  billing: PAUSED, breaker OPEN since 2023-11-14 22:13:20 UTC"),
        "{text}"
    );

    let (code, out, err) = inbox_ops(&[
        "resume",
        "--destination",
        "billing",
        "--table",
        &aws.stack.table,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("paused destinations: crm\n"), "{out}");
    assert!(
        out.contains("breaker: destination billing closed (it was open)\n"),
        "{out}"
    );
    assert_eq!(paused_destinations(&aws).await, ["crm"]);
    let status = status_json(&["--stack", &stack]).await;
    let billing = status["destinations"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "billing"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(billing["breaker"]["state"], "closed", "{status}");
    assert_eq!(billing["paused"], false);

    // A name no destination can have: refused, the board unchanged.
    let (code, _, err) = inbox_ops(&["pause", "--destination", "no good", "--stack", &stack]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("a destination name is 1 to 64 letters"),
        "{err}"
    );
    assert_eq!(paused_destinations(&aws).await, ["crm"]);
}

/// `--role-arn`: `inbox-ops` acts as the stack's `OperatorRole`, assumed with STS
/// `AssumeRole` over the caller's credentials: the command runs with the role's temporary
/// credentials (moto's STS issues them; it enforces no policy, so what the role may do is
/// `tests/template_hardening/side_doors.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_role_is_assumed_with_role_arn() {
    use aws_sdk_sqs::config::ProvideCredentials as _;
    let aws = LocalAws::new("ops-role-arn").await;
    let role = "arn:aws:iam::123456789012:role/OperatorRole";
    let base = inbox_ops::aws::config_as(&inbox_ops::aws::Identity::default()).await;
    let assumed = inbox_ops::aws::config_as(&inbox_ops::aws::Identity {
        profile: None,
        role_arn: Some(role.into()),
    })
    .await;
    let key = |sdk: aws_config::SdkConfig| async move {
        sdk.credentials_provider()
            .expect("credentials")
            .provide_credentials()
            .await
            .expect("credentials resolve")
            .access_key_id()
            .to_owned()
    };
    let (base_key, role_key) = (key(base).await, key(assumed).await);
    assert_ne!(base_key, role_key, "the role's own credentials");
    assert!(
        role_key.starts_with("ASIA"),
        "temporary credentials: {role_key}"
    );

    let (code, out, err) = inbox_ops(&[
        "--role-arn",
        role,
        "pause",
        "--destination",
        "billing",
        "--table",
        &aws.stack.table,
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("paused destinations: billing\n"), "{out}");
    assert_eq!(paused_destinations(&aws).await, ["billing"]);
}
