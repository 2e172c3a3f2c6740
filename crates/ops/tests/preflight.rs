//! `inbox-ops preflight` as an operator runs it before `sam deploy`: the binary, against the
//! repository's template.yaml and a samconfig.toml (the committed one, or one written here),
//! its secrets on moto's Secrets Manager (reached through the inherited `AWS_ENDPOINT_URL`).
//!
//! - the committed samconfig.toml is refused for its placeholders;
//! - real values, with their secrets created, pass; so does an empty `SecretArns` when the
//!   secrets are the stack's own (`<stack>/...`);
//! - a missing secret, a secret invalid for its scheme (its value never printed), a secret
//!   the receiver may not read and an `env:` reference are each refused, by name.

use std::path::{Path, PathBuf};

use devstack::testkit::unique;

// `inbox-ops init` and the samconfig.toml `sam deploy --guided` saves, through the SAM CLI's code.
#[path = "preflight/destroy.rs"]
mod destroy;
#[path = "preflight/init.rs"]
mod init;
#[path = "preflight/receive.rs"]
mod receive;
#[path = "preflight/rehearsal.rs"]
mod rehearsal;
#[path = "preflight/sam.rs"]
mod sam;

/// The outcome of one run: exit code, stdout, stderr.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Both streams.
    fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The problem lines (`  - Parameter: ...`) that start with `subject`.
    fn problems_of(&self, subject: &str) -> Vec<&str> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("  - "))
            .filter(|l| l.starts_with(&format!("{subject}: ")))
            .collect()
    }
}

/// Runs `inbox-ops preflight <args>` in `dir`, on the moto server this process started.
async fn preflight(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let endpoint = devstack::moto::shared();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"));
    cmd.arg("preflight")
        .args(args)
        .current_dir(dir)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().await.expect("run inbox-ops");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Creates secret `name` with `value` on moto; its ARN.
async fn create_secret(name: &str, value: &str) -> String {
    devstack::moto::shared();
    let sdk = inbox_ops::aws::config().await;
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
        .expect("CreateSecret on moto")
        .arn()
        .expect("an ARN")
        .to_owned()
}

/// The IAM resource for `arn` as the docs write it: the name with `-??????` for its suffix.
fn with_suffix_wildcard(arn: &str) -> String {
    let (named, _suffix) = arn.rsplit_once('-').expect("a random suffix");
    format!("{named}-??????")
}

/// A github source reading `secret`, a Standard Webhooks one reading `whsec`.
fn two_sources(github: &str, acme: &str) -> String {
    format!(
        r#"{{"github": {{"signature": {{"scheme": "github", "secrets": ["{github}"]}}, "key": {{"from": "header", "name": "X-GitHub-Delivery"}}, "replay_guard_seconds": 259200}}, "acme": {{"signature": {{"scheme": "standard-webhooks", "secrets": ["{acme}"]}}, "key": {{"from": "header", "name": "webhook-id"}}}}}}"#
    )
}

/// A directory holding a samconfig.toml for `stack` with these overrides (WebhookSources
/// single-quoted as docs/configuration.md writes it).
fn samconfig(stack: &str, secret_arns: &str, sources: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique("preflight"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = format!(
        r#"version = 0.1

[default.global.parameters]
stack_name = "{stack}"

[default.deploy.parameters]
capabilities = "CAPABILITY_IAM"
parameter_overrides = [
  "ForwardUrl=https://records.acme-corp.io/webhooks",
  "SecretArns='{secret_arns}'",
  '''WebhookSources='{sources}'''',
  "LogLevel=INFO",
]
"#
    );
    std::fs::write(dir.join("samconfig.toml"), text).expect("write samconfig.toml");
    dir
}

fn template_arg() -> String {
    workspace_root().join("template.yaml").display().to_string()
}

/// 32 random-looking bytes, base64, as a Standard Webhooks sender shows them.
const ACME_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw2m1Q3Z9xP4s=";
const GITHUB_SECRET: &str = "5f1d3c0b9a8e7d6c5b4a39281706f5e4d3c2b1a0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_committed_samconfig_is_refused_for_its_placeholders() {
    // In the workspace root, with no flags: template.yaml and samconfig.toml as committed.
    let run = preflight(&workspace_root(), &[], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert!(
        run.stdout.is_empty(),
        "nothing passed is printed: {}",
        run.stdout
    );
    // SecretArns is left empty (the stack's own `webhook-inbox/*`): nothing to replace.
    assert!(run.problems_of("SecretArns").is_empty(), "{}", run.stderr);
    let forward = run.problems_of("ForwardUrl");
    assert!(
        forward.iter().any(|l| l.contains("example.com")),
        "{}",
        run.stderr
    );
    assert!(
        forward.iter().any(|l| l.contains("replace-me")),
        "{}",
        run.stderr
    );
    // Every problem, not only the first: the default source's secret is not on moto either.
    let sources = run.problems_of("WebhookSources");
    assert!(
        sources
            .iter()
            .any(|l| l.contains("webhook-inbox/github") && l.contains("no such secret")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .starts_with("preflight: stack webhook-inbox, region us-east-1"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_values_with_their_secrets_pass() {
    let stack = unique("pf-pass");
    let github = create_secret(&format!("{stack}/github"), GITHUB_SECRET).await;
    let acme = create_secret(&format!("{stack}/acme"), ACME_SECRET).await;
    let sources = two_sources(
        &format!("secretsmanager:{stack}/github"),
        // By ARN, as the library also takes it.
        &format!("secretsmanager:{acme}"),
    );
    let listed = format!(
        "{},{}",
        with_suffix_wildcard(&github),
        with_suffix_wildcard(&acme)
    );
    let dir = samconfig(&stack, &listed, &sources);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 0, "{}", run.text());
    let out = &run.stdout;
    assert!(
        out.contains("ok: ForwardUrl is https, host records.acme-corp.io"),
        "{out}"
    );
    assert!(
        out.contains("WebhookSources parses: 2 sources (acme, github)"),
        "{out}"
    );
    for source in ["github", "acme"] {
        let name = format!("{stack}/{source}");
        assert!(
            out.contains(&format!(
                "ok: secret {name} exists and is valid for source `{source}`"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "ok: secret {name} readable by the receiver (SecretArns entry"
            )),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "ok: source `{source}` starts as the receiver's cold start"
            )),
            "{out}"
        );
    }
    for secret in [GITHUB_SECRET, ACME_SECRET] {
        assert!(
            !run.text().contains(secret),
            "a secret's value printed: {}",
            run.text()
        );
    }

    // SecretArns empty: the stack's own secrets, <stack>/*, which these are.
    let dir = samconfig(&stack, "", &sources);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert!(
        run.stdout.contains(&format!(
            "readable by the receiver (the stack's own secrets, {stack}/* in us-east-1)"
        )),
        "{}",
        run.stdout
    );
    // ... and not another stack's.
    let run = preflight(
        &dir,
        &["--template", &template_arg(), "--stack", "other-stack"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.text());
    let refused = run.problems_of("SecretArns");
    assert_eq!(refused.len(), 2, "{}", run.stderr);
    assert!(
        refused.iter().all(|l| l.contains("other-stack/*")),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_secret_is_named() {
    let stack = unique("pf-missing");
    let acme = create_secret(&format!("{stack}/acme"), ACME_SECRET).await;
    let sources = two_sources(
        &format!("secretsmanager:{stack}/github"),
        &format!("secretsmanager:{stack}/acme"),
    );
    let dir = samconfig(&stack, &with_suffix_wildcard(&acme), &sources);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let problems = run.problems_of("WebhookSources");
    assert_eq!(problems.len(), 1, "{}", run.stderr);
    assert!(
        problems[0].contains("source `github`")
            && problems[0].contains(&format!("`secretsmanager:{stack}/github`"))
            && problems[0].contains("no such secret in us-east-1"),
        "{}",
        problems[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_invalid_for_their_scheme_are_named_never_shown() {
    let stack = unique("pf-invalid");
    // Fifteen bytes: under github's 16. Not base64 after whsec_: no Standard Webhooks key.
    let short = "short-2b7e151ff";
    let not_base64 = "whsec_%%not-base64-4a1f%%";
    let github = create_secret(&format!("{stack}/github"), short).await;
    let acme = create_secret(&format!("{stack}/acme"), not_base64).await;
    let stripe = create_secret(&format!("{stack}/stripe"), "whsec_\u{2026}").await;
    let two = two_sources(
        &format!("secretsmanager:{stack}/github"),
        &format!("secretsmanager:{stack}/acme"),
    );
    let sources = format!(
        r#"{}, "stripe": {{"signature": {{"scheme": "stripe", "secrets": ["secretsmanager:{stack}/stripe"]}}, "key": {{"from": "json", "pointers": ["/id"]}}}}}}"#,
        two.strip_suffix('}').expect("an object")
    );
    let listed = [github, acme, stripe]
        .map(|a| with_suffix_wildcard(&a))
        .join(",");
    let dir = samconfig(&stack, &listed, &sources);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let problems = run.problems_of("WebhookSources");
    let of = |source: &str| {
        problems
            .iter()
            .find(|l| l.starts_with(&format!("WebhookSources: source `{source}`")))
            .unwrap_or_else(|| panic!("{source}: {}", run.stderr))
            .to_string()
    };
    let github = of("github");
    assert!(
        github.contains("secret #1 is 15 bytes; the github scheme needs at least 16"),
        "{github}"
    );
    assert!(
        github.contains(&format!("secretsmanager:{stack}/github")),
        "{github}"
    );
    let acme = of("acme");
    assert!(acme.contains("not valid base64"), "{acme}");
    let stripe = of("stripe");
    assert!(
        stripe.contains("the docs' placeholder whsec_\u{2026}"),
        "{stripe}"
    );
    let text = run.text();
    for value in [short, not_base64, "not-base64-4a1f"] {
        assert!(!text.contains(value), "a secret's value printed: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_outside_secret_arns_is_named() {
    let stack = unique("pf-outside");
    let github = create_secret(&format!("{stack}/github"), GITHUB_SECRET).await;
    let acme = create_secret(&format!("shared-{stack}/acme"), ACME_SECRET).await;
    let sources = two_sources(
        &format!("secretsmanager:{stack}/github"),
        &format!("secretsmanager:shared-{stack}/acme"),
    );
    let dir = samconfig(&stack, &with_suffix_wildcard(&github), &sources);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let refused = run.problems_of("SecretArns");
    assert_eq!(refused.len(), 1, "{}", run.stderr);
    assert!(
        refused[0].contains(&format!("secret shared-{stack}/acme ({acme})"))
            && refused[0].contains("source `acme`")
            && refused[0].contains("not matched by any SecretArns entry"),
        "{}",
        refused[0]
    );
    assert!(
        run.problems_of("WebhookSources").is_empty(),
        "{}",
        run.stderr
    );

    // Empty SecretArns: only <stack>/..., which shared-<stack>/acme is not.
    let dir = samconfig(&stack, "", &sources);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let refused = run.problems_of("SecretArns");
    assert_eq!(refused.len(), 1, "{}", run.stderr);
    assert!(
        refused[0].contains(&format!("shared-{stack}/acme"))
            && refused[0].contains(&format!("{stack}/*")),
        "{}",
        refused[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_reference_is_refused_for_a_deploy() {
    let stack = unique("pf-env");
    let acme = create_secret(&format!("{stack}/acme"), ACME_SECRET).await;
    let sources = two_sources(
        "env:PREFLIGHT_GITHUB_SECRET",
        &format!("secretsmanager:{stack}/acme"),
    );
    let dir = samconfig(&stack, &with_suffix_wildcard(&acme), &sources);
    // Set here, yet refused: the deployed receiver will not have it.
    let run = preflight(
        &dir,
        &["--template", &template_arg()],
        &[("PREFLIGHT_GITHUB_SECRET", GITHUB_SECRET)],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.text());
    let problems = run.problems_of("WebhookSources");
    assert_eq!(problems.len(), 1, "{}", run.stderr);
    assert!(
        problems[0].contains("source `github`")
            && problems[0].contains("`env:PREFLIGHT_GITHUB_SECRET`")
            && problems[0].contains("cannot be deployed"),
        "{}",
        problems[0]
    );
    assert!(!run.text().contains(GITHUB_SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_quick_start_placeholder_is_refused() {
    // The committed samconfig.toml after the README's quick start `sed`, pasted as is.
    let committed =
        std::fs::read_to_string(workspace_root().join("samconfig.toml")).expect("samconfig.toml");
    let pasted = committed.replace(
        "https://example.com/replace-me",
        "https://your-system-of-record.example/webhooks",
    );
    assert_ne!(pasted, committed, "the README's sed no longer applies");
    let dir = std::env::temp_dir().join(unique("preflight"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("samconfig.toml"), pasted).expect("write samconfig.toml");
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let forward = run.problems_of("ForwardUrl");
    assert_eq!(forward.len(), 1, "{}", run.stderr);
    assert!(
        forward[0].starts_with(
            "ForwardUrl: https://your-system-of-record.example/webhooks: its host your-system-of-record.example is a reserved placeholder name (RFC 2606): set your system of record's URL"
        ),
        "{}",
        forward[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_region_in_samconfig_or_in_an_arn_is_named() {
    let stack = unique("pf-region");
    create_secret(&format!("{stack}/github"), GITHUB_SECRET).await;
    let sources = two_sources(
        &format!("secretsmanager:{stack}/github"),
        &format!("secretsmanager:{stack}/github"),
    );
    // As `sed s/REGION/$AWS_REGION/` writes both with AWS_REGION unset.
    let dir = samconfig(
        &stack,
        &format!("arn:aws:secretsmanager::123456789012:secret:{stack}/*"),
        &sources,
    );
    let path = dir.join("samconfig.toml");
    let text = std::fs::read_to_string(&path).expect("samconfig.toml");
    std::fs::write(
        &path,
        text.replace("stack_name = ", "region = \"\"\nstack_name = "),
    )
    .expect("write samconfig.toml");
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let region = run.problems_of("region");
    assert_eq!(region.len(), 1, "{}", run.stderr);
    assert!(
        region[0].contains("empty in samconfig.toml"),
        "{}",
        region[0]
    );
    let arns = run.problems_of("SecretArns");
    assert!(
        arns.iter().any(|l| l.starts_with(&format!(
            "SecretArns: arn:aws:secretsmanager::123456789012:secret:{stack}/* has an empty region field"
        ))),
        "{}",
        run.stderr
    );
}

/// A directory holding a samconfig.toml for `stack` with the two sources (their secrets the
/// stack's own) and these further overrides, each a TOML string as written.
fn samconfig_with(stack: &str, overrides: &[String]) -> PathBuf {
    let sources = two_sources(
        &format!("secretsmanager:{stack}/github"),
        &format!("secretsmanager:{stack}/acme"),
    );
    let dir = std::env::temp_dir().join(unique("preflight"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = format!(
        "version = 0.1\n\n[default.global.parameters]\nstack_name = \"{stack}\"\n\n[default.deploy.parameters]\ncapabilities = \"CAPABILITY_IAM\"\nparameter_overrides = [\n  '''WebhookSources='{sources}'''',\n{}]\n",
        overrides
            .iter()
            .map(|o| format!("  {o},\n"))
            .collect::<String>()
    );
    std::fs::write(dir.join("samconfig.toml"), text).expect("write samconfig.toml");
    dir
}

/// `Destinations` read with the consumer's own parser: with no `ForwardUrl`, a
/// source no destination takes is refused and the types that would go nowhere are said; an
/// ARN target missing from its list and a signing secret the consumer may not read are
/// refused, each naming its parameter; a bus with no rule for its source is warned of. Fixed,
/// the same destinations pass, what no destination takes said as going to `ForwardUrl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: refused, then fixed, on the same destinations"
)]
async fn destinations_are_read_as_the_consumer_reads_them_and_checked_against_the_stack() {
    let stack = unique("pf-dest");
    create_secret(&format!("{stack}/github"), GITHUB_SECRET).await;
    create_secret(&format!("{stack}/acme"), ACME_SECRET).await;
    let billing = create_secret(&format!("{stack}/billing-forward"), ACME_SECRET).await;
    let sdk = inbox_ops::aws::config().await;
    let events = aws_sdk_eventbridge::Client::new(&sdk);
    let bus = events
        .create_event_bus()
        .name(unique("payments"))
        .send()
        .await
        .expect("CreateEventBus on moto")
        .event_bus_arn()
        .expect("an ARN")
        .to_owned();
    let destinations = format!(
        r#"'''Destinations='{{"billing": {{"target": "https://billing.acme-corp.io/in", "sources": ["github"], "event_types": ["push"], "signing_secret": ["secretsmanager:{stack}/billing-forward"]}}, "bus": {{"target": "{bus}", "sources": ["acme"]}}}}''''"#
    );

    let dir = samconfig_with(&stack, &[destinations.clone(), "\"ForwardUrl=''\"".into()]);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert_eq!(
        run.problems_of("DestinationBusArns"),
        [format!("DestinationBusArns: destination `bus`'s target {bus} is not in it: the consumer's role may not call it, so each event routed there would fail MaxFailures times and be dead-lettered; add it to DestinationBusArns")],
        "{}",
        run.stderr
    );
    let secret = run.problems_of("DestinationSecretArns");
    assert_eq!(secret.len(), 1, "{}", run.stderr);
    assert!(
        secret[0].starts_with(&format!(
            "DestinationSecretArns: destination `billing`'s signing secret {billing}: the consumer's role may not read it"
        )),
        "{}",
        secret[0]
    );
    assert!(run.problems_of("ForwardUrl").is_empty(), "{}", run.stderr);
    let warned = |text: &str| {
        run.stderr
            .lines()
            .any(|l| l.starts_with("warning: ") && l.contains(text))
    };
    assert!(
        warned("github: every type but push and events without a type go nowhere (ForwardUrl is empty)"),
        "{}",
        run.stderr
    );
    assert!(
        warned(&format!(
            "destination `bus`: bus {bus} has no enabled rule whose pattern takes source webhook-inbox.acme"
        )),
        "{}",
        run.stderr
    );

    // A destination left out of the routes: its source's every event would go nowhere.
    let only_billing = r#"'''Destinations='{"billing": {"target": "https://billing.acme-corp.io/in", "sources": ["github"]}}''''"#.to_owned();
    let dir = samconfig_with(&stack, &[only_billing, "\"ForwardUrl=''\"".into()]);
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(
        run.problems_of("ForwardUrl"),
        ["ForwardUrl: empty, and no destination takes source `acme`: its every event would go nowhere; set ForwardUrl or route `acme` in Destinations"],
        "{}",
        run.stderr
    );

    // Fixed: the ARN and the secret listed, a rule on the bus, a ForwardUrl.
    events
        .put_rule()
        .name(unique("acme-rule"))
        .event_bus_name(&bus)
        .event_pattern(r#"{"source": ["webhook-inbox.acme"]}"#)
        .send()
        .await
        .expect("PutRule on moto");
    let dir = samconfig_with(
        &stack,
        &[
            destinations,
            "\"ForwardUrl=https://records.acme-corp.io/webhooks\"".into(),
            format!("\"DestinationBusArns={bus}\""),
            format!(
                "\"DestinationSecretArns={}\"",
                with_suffix_wildcard(&billing)
            ),
        ],
    );
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 0, "{}", run.text());
    for line in [
        "ok: Destinations parses as the consumer reads it: 2 destinations".to_owned(),
        "ok: source `github`: what no destination takes (every type but push and events without a type) goes to ForwardUrl".to_owned(),
        "ok: source `acme`: every event goes to a destination".to_owned(),
        format!("ok: destination `bus`: the consumer may call {bus} (DestinationBusArns entry {bus})"),
        "ok: destination `billing`'s signing secrets exist, are whsec_ keys and are readable by the consumer".to_owned(),
        format!("ok: destination `bus`: bus {bus} has an enabled rule for source webhook-inbox.acme"),
    ] {
        assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    }
    assert!(!run.text().contains("warning:"), "{}", run.text());
    assert!(
        !run.text().contains(ACME_SECRET),
        "a secret's value printed"
    );
}

/// A Stripe source on `<stack>/stripe`, `pending` or not, beside a stored github one.
fn with_stripe(stack: &str, pending: bool) -> String {
    format!(
        r#"{{"github": {{"signature": {{"scheme": "github", "secrets": ["secretsmanager:{stack}/github"]}}, "key": {{"from": "header", "name": "X-GitHub-Delivery"}}, "replay_guard_seconds": 259200}}, "stripe": {{"preset": "stripe", "pending": {pending}, "signature": {{"secrets": ["secretsmanager:{stack}/stripe"]}}}}}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_source_passes_without_its_secret_with_a_note_and_a_plain_one_does_not() {
    let stack = unique("pf-pending");
    create_secret(&format!("{stack}/github"), GITHUB_SECRET).await;
    let note = "note: source `stripe` is pending: until its secret is stored its requests are answered 503 with Retry-After";

    // The secret does not exist: pending passes, with the note and the step to take.
    let dir = samconfig(&stack, "", &with_stripe(&stack, true));
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert!(run.stdout.contains(note), "{}", run.stdout);
    assert!(
        run.stdout.contains("inbox-ops secret set stripe"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!(
            "ok: secret {stack}/stripe of pending source `stripe` does not exist yet; once stored the receiver may read it"
        )),
        "{}",
        run.stdout
    );
    // ... but not under a name the receiver could not read once stored.
    let run = preflight(
        &dir,
        &["--template", &template_arg(), "--stack", "other-stack"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert!(
        run.problems_of("SecretArns")
            .iter()
            .any(|l| l.contains("pending source `stripe`") && l.contains("other-stack/*")),
        "{}",
        run.stderr
    );

    // The same source not pending: refused, as before, and told about `pending`.
    let dir = samconfig(&stack, "", &with_stripe(&stack, false));
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    let problems = run.problems_of("WebhookSources");
    assert_eq!(problems.len(), 1, "{}", run.stderr);
    assert!(
        problems[0].contains("source `stripe`")
            && problems[0].contains("no such secret in us-east-1")
            && problems[0].contains("\"pending\": true"),
        "{}",
        problems[0]
    );

    // Created without a value (what a console's "store a new secret" may leave): still pending.
    devstack::moto::shared();
    let sdk = inbox_ops::aws::config().await;
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(format!("{stack}/stripe"))
        .send()
        .await
        .expect("CreateSecret without a value");
    let dir = samconfig(&stack, "", &with_stripe(&stack, true));
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert!(run.stdout.contains(note), "{}", run.stdout);

    // A value stored that the receiver would not take is refused, pending or not.
    aws_sdk_secretsmanager::Client::new(&sdk)
        .put_secret_value()
        .secret_id(format!("{stack}/stripe"))
        .secret_string("whsec_short")
        .send()
        .await
        .expect("PutSecretValue");
    let run = preflight(&dir, &["--template", &template_arg()], &[]).await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert!(
        run.problems_of("WebhookSources")
            .iter()
            .any(|l| l.contains("source `stripe`") && l.contains("at least 16")),
        "{}",
        run.stderr
    );
    assert!(!run.text().contains("whsec_short"), "{}", run.text());
}
