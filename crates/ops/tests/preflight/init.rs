//! `inbox-ops init`, the binary, on moto: the samconfig.toml it writes is read alike by the SAM
//! CLI's own code and the preflight, and passes the preflight; the secrets it creates; the steps
//! it prints; a samconfig.toml saved by `sam deploy --guided` (SAM's own writer) passes too.

use std::path::{Path, PathBuf};

use devstack::testkit::unique;

use super::sam::{read_by_preflight, read_by_sam, write_as_guided};
use super::{create_secret, preflight, template_arg, Run};

/// Runs `inbox-ops <args>` in `dir` on moto, `stdin` piped in.
pub async fn ops(dir: &Path, args: &[&str], stdin: &str) -> Run {
    use tokio::io::AsyncWriteExt as _;
    let endpoint = devstack::moto::shared();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
        .args(args)
        .current_dir(dir)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run inbox-ops");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.as_bytes())
        .await
        .expect("write stdin");
    drop(input);
    let out = child.wait_with_output().await.expect("inbox-ops ends");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn temp_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(prefix));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The secret's value on moto, `None` when there is none.
async fn secret_value(name: &str) -> Option<String> {
    devstack::moto::shared();
    let sdk = inbox_ops::aws::config().await;
    aws_sdk_secretsmanager::Client::new(&sdk)
        .get_secret_value()
        .secret_id(name)
        .send()
        .await
        .ok()
        .and_then(|o| o.secret_string().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one run of init, then what it wrote, created and printed, in that order"
)]
async fn init_with_flags_writes_what_sam_and_the_preflight_read_alike_and_prints_the_steps() {
    let dir = temp_dir("init");
    let stack = unique("hooks");
    let run = ops(
        &dir,
        &[
            "init",
            "--no-input",
            "--stack",
            &stack,
            "--senders",
            "github,stripe,slack",
            "--forward-url",
            "https://records.acme-corp.io/webhooks",
            "--alarm-email",
            "ops@acme-corp.io",
        ],
        "",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.text());
    // The region found (AWS_REGION), never asked.
    let file = dir.join("samconfig.toml");
    let by_sam = read_by_sam(&file);
    assert_eq!(
        by_sam,
        read_by_preflight(&file),
        "SAM and the preflight read the same"
    );
    assert_eq!(by_sam["region"], "us-east-1");
    assert_eq!(by_sam["stack_name"], stack.as_str());
    let p = &by_sam["parameters"];
    assert_eq!(p["ForwardUrl"], "https://records.acme-corp.io/webhooks");
    assert_eq!(p["AlarmEmail"], "ops@acme-corp.io");
    assert_eq!(p["SecretArns"], "");
    let sources: serde_json::Value =
        serde_json::from_str(p["WebhookSources"].as_str().expect("a string")).expect("JSON");
    assert_eq!(
        sources["github"]["signature"]["secrets"][0],
        format!("secretsmanager:{stack}/github")
    );
    assert_eq!(sources["stripe"]["pending"], true);
    assert_eq!(sources["slack"]["pending"], true);
    // GitHub's secret is chosen by you: a random one, created; Stripe's and Slack's wait.
    let github = secret_value(&format!("{stack}/github"))
        .await
        .expect("created");
    assert_eq!(github.len(), 64, "32 random bytes, hex");
    assert!(!run.text().contains(&github), "the value is never printed");
    assert_eq!(secret_value(&format!("{stack}/stripe")).await, None);
    // The steps, in the order that works: deploy, the URL, then each sender's.
    let out = &run.stdout;
    let at = |needle: &str| {
        out.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {out}"))
    };
    assert!(at("make deploy") < at("WebhookUrl"), "{out}");
    let senders = &out[at("4. Each sender:")..];
    let at = |needle: &str| {
        senders
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {senders}"))
    };
    assert!(
        at("Workbench > Webhooks > Create new destination")
            < at(&format!("secret set stripe --stack {stack}")),
        "Stripe's secret after its endpoint: {senders}"
    );
    assert!(
        at(&format!("secret set slack --stack {stack}")) < at("Request URL"),
        "Slack's secret before its URL: {senders}"
    );
    assert!(
        out.contains(&format!("--secret-id {stack}/github")),
        "how to read back GitHub's secret: {out}"
    );
    // A second run keeps the secret, and refuses to replace a deploy's samconfig.toml.
    let again = ops(
        &dir,
        &[
            "init",
            "--no-input",
            "--stack",
            &stack,
            "--senders",
            "github",
            "--forward-url",
            "https://records.acme-corp.io/webhooks",
        ],
        "",
    )
    .await;
    assert_eq!(again.code, 1, "{}", again.text());
    assert!(again.stderr.contains("give --force"), "{}", again.stderr);
    // Stripe's secret stored meanwhile (as `secret set` stores it): kept, not pending.
    create_secret(&format!("{stack}/stripe"), super::ACME_SECRET).await;
    let forced = ops(
        &dir,
        &[
            "init",
            "--no-input",
            "--force",
            "--stack",
            &stack,
            "--senders",
            "github,stripe",
            "--forward-url",
            "https://records.acme-corp.io/webhooks",
        ],
        "",
    )
    .await;
    assert_eq!(forced.code, 0, "{}", forced.text());
    for sender in ["github", "stripe"] {
        let line = forced
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{sender} ")))
            .unwrap_or_else(|| panic!("{sender}'s secret line: {}", forced.stdout));
        assert!(line.ends_with("exists already: kept"), "{line}");
    }
    assert_eq!(secret_value(&format!("{stack}/github")).await, Some(github));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_answered_on_stdin_then_the_preflight_passes() {
    let dir = temp_dir("init-stdin");
    let stack = unique("hooks");
    // Stack, senders, ForwardUrl, alarm e-mail (Enter: none), destinations (Enter: none).
    let answers = format!("{stack}\ngithub,gitlab\nhttps://records.acme-corp.io/webhooks\n\n\n");
    let run = ops(&dir, &["init"], &answers).await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert!(
        run.stderr.contains("Senders, by preset name"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("region"),
        "the region is found: {}",
        run.stderr
    );
    let template = template_arg();
    let checked = preflight(&dir, &["--template", &template], &[]).await;
    assert_eq!(checked.code, 0, "{}", checked.text());
    assert!(
        checked
            .stdout
            .contains(&format!("stack {stack}, region us-east-1")),
        "{}",
        checked.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_samconfig_saved_by_sam_deploy_guided_passes_the_preflight() {
    let dir = temp_dir("guided");
    let stack = unique("guided");
    create_secret(&format!("{stack}/github"), super::GITHUB_SECRET).await;
    let sources = format!(
        r#"{{"github": {{"preset": "github", "signature": {{"secrets": ["secretsmanager:{stack}/github"]}}}}}}"#
    );
    // Every parameter a guided deploy would save is not needed: these, as it saves them.
    let parameters = serde_json::json!({
        "WebhookSources": sources,
        "ForwardUrl": "https://records.acme-corp.io/webhooks",
        "SecretArns": "",
        "LogLevel": "INFO",
        "AlarmEmail": "",
    });
    write_as_guided(&dir, &parameters, &stack, "us-east-1");
    let text = std::fs::read_to_string(dir.join("samconfig.toml")).expect("written");
    assert!(
        text.contains(r#"parameter_overrides = "AlarmEmail=\"\" ForwardUrl=\""#)
            && text.contains(r#" WebhookSources=\"{\\\"github\\\": "#),
        "one string, every value double-quoted, as SAM saves it: {text}"
    );
    assert_eq!(
        read_by_sam(&dir.join("samconfig.toml")),
        read_by_preflight(&dir.join("samconfig.toml"))
    );
    let template = template_arg();
    let run = preflight(&dir, &["--template", &template], &[]).await;
    assert_eq!(run.code, 0, "{}", run.text());
}
