//! `inbox-ops init`: a newcomer's first deploy set up in one command. It asks (or takes as
//! flags, for scripts) the stack name, the senders by preset name, the system of record's URL,
//! an alarm address and the destinations; finds the region in the AWS configuration (asking only
//! when there is none); writes samconfig.toml in the form both the SAM CLI and the preflight read
//! ([`crate::samconfig`]); creates in Secrets Manager the secret of each sender whose secret you
//! choose (a random one, as GitHub's), declares `pending` each sender that issues its secret
//! only once it knows the URL (Stripe, Slack: stored later with `inbox-ops secret set`), and
//! prints each provider's steps in the order that works ([`steps`]).

mod answers;
mod steps;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_secretsmanager::error::DisplayErrorContext;
use clap::Args;
use rand::RngCore as _;

pub use self::answers::{gather, Answers, SecretOrigin, Sender};
use stack_config::samconfig::{override_item, Samconfig};

/// The shipped samconfig.toml's placeholder, which `init` may replace without `--force`.
const SHIPPED_PLACEHOLDER: &str = "https://example.com/replace-me";

/// `init`'s arguments. Any left out is asked on standard input (unless `--no-input`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct InitArgs {
    /// The region to deploy to [default: AWS_REGION, AWS_DEFAULT_REGION or the AWS config's;
    /// asked only when none is found].
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// The stack's name [asked; Enter: webhook-inbox].
    #[arg(long, value_name = "NAME")]
    pub stack: Option<String>,
    /// The senders, by preset name (docs/providers.md), comma separated: github,stripe,slack.
    #[arg(long, value_name = "PRESETS", value_delimiter = ',')]
    pub senders: Vec<String>,
    /// Where the consumer POSTs each event (https://), or `none` (then every event must be
    /// routed to a destination).
    #[arg(long, value_name = "URL")]
    pub forward_url: Option<String>,
    /// The address the alarms notify (it must confirm SNS's e-mail), or `none`.
    #[arg(long, value_name = "ADDRESS")]
    pub alarm_email: Option<String>,
    /// The destinations (docs/routing.md), one JSON object, `@FILE`, or `none` (for later);
    /// their ARNs are listed in DestinationBusArns, DestinationQueueArns and
    /// DestinationFunctionArns.
    #[arg(long, value_name = "JSON")]
    pub destinations: Option<String>,
    /// The file to write.
    #[arg(long, value_name = "FILE", default_value = "samconfig.toml")]
    pub config: PathBuf,
    /// Replace a samconfig.toml that holds a deploy's settings already (a region, or a
    /// ForwardUrl other than the shipped placeholder).
    #[arg(long)]
    pub force: bool,
    /// Ask nothing: a value neither given nor found is an error.
    #[arg(long)]
    pub no_input: bool,
}

/// What became of a sender's secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretOutcome {
    /// Created now, a random value.
    Created,
    /// It existed already: kept as it is.
    Kept,
    /// To be stored once the sender issues it (`inbox-ops secret set`).
    Pending,
}

/// Runs `init` on the terminal: questions on stderr, answers from stdin, the steps on stdout.
pub async fn run(args: &InitArgs) -> anyhow::Result<ExitCode> {
    let found_region = crate::aws::config()
        .await
        .region()
        .map(ToString::to_string)
        .filter(|r| !r.trim().is_empty());
    let stdin = std::io::stdin();
    let answers = gather(
        args,
        found_region,
        &mut stdin.lock(),
        &mut std::io::stderr(),
    )?;
    refuse_overwrite(&args.config, args.force)?;
    let text = samconfig_text(&answers)?;
    let sdk = crate::aws::config()
        .await
        .into_builder()
        .region(aws_config::Region::new(answers.region.clone()))
        .build();
    let client = aws_sdk_secretsmanager::Client::new(&sdk);
    let outcomes = create_secrets(&client, &answers).await?;
    std::fs::write(&args.config, text)
        .with_context(|| format!("writing {}", args.config.display()))?;
    print!("{}", steps::render(&answers, &outcomes, &args.config));
    Ok(ExitCode::SUCCESS)
}

/// Refuses to replace a samconfig.toml that holds a deploy's own settings, unless `force`.
fn refuse_overwrite(path: &Path, force: bool) -> anyhow::Result<()> {
    if force || !path.exists() {
        return Ok(());
    }
    let existing = Samconfig::load(path)?;
    let forward = existing.get("ForwardUrl");
    if existing.region.is_some() || forward.is_some_and(|f| f != SHIPPED_PLACEHOLDER) {
        bail!(
            "{} holds a deploy's settings already (region {}, ForwardUrl {}): give --force to replace it, or --config another file",
            path.display(),
            existing.region.as_deref().unwrap_or("none"),
            forward.unwrap_or("none")
        );
    }
    Ok(())
}

/// The secret name of `source` in stack `stack`: `<stack>/<source>`, which the receiver may
/// read with `SecretArns` empty.
pub fn secret_name(stack: &str, source: &str) -> String {
    format!("{stack}/{source}")
}

/// `WebhookSources`: each sender as its preset and its secret, a sender that issues its secret
/// after the URL exists declared `pending`.
pub fn webhook_sources(answers: &Answers) -> serde_json::Value {
    let mut sources = serde_json::Map::new();
    for sender in &answers.senders {
        let mut entry = serde_json::json!({
            "preset": sender.preset,
            "signature": {"secrets": [format!("secretsmanager:{}", secret_name(&answers.stack, &sender.name))]},
        });
        if sender.origin == SecretOrigin::Issued {
            entry["pending"] = serde_json::Value::Bool(true);
        }
        sources.insert(sender.name.clone(), entry);
    }
    serde_json::Value::Object(sources)
}

/// The ARNs the destinations name, by the stack parameter that must list them.
fn destination_arns(destinations: &str) -> anyhow::Result<BTreeMap<&'static str, Vec<String>>> {
    use inbox::route::target::Target;
    let parsed: serde_json::Value =
        serde_json::from_str(destinations).context("the destinations are not JSON")?;
    let entries = parsed
        .as_object()
        .ok_or_else(|| anyhow!("the destinations are not one JSON object"))?;
    let mut arns: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for (name, entry) in entries {
        let target = entry
            .get("target")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| anyhow!("destination `{name}` has no target"))?;
        let (parameter, arn) = match Target::parse(target)
            .map_err(|e| anyhow!("destination `{name}`, field `target`: {e}"))?
        {
            Target::Https(_) => continue,
            Target::EventBus { arn } => ("DestinationBusArns", arn),
            Target::Queue { arn, .. } => ("DestinationQueueArns", arn),
            Target::Function { arn } => ("DestinationFunctionArns", arn),
        };
        let list = arns.entry(parameter).or_default();
        if !list.contains(&arn) {
            list.push(arn);
        }
    }
    Ok(arns)
}

/// samconfig.toml for `answers`: the SAM CLI's settings as the shipped file has them, the
/// region, and the parameters, each item written so that the SAM CLI and the preflight read
/// back exactly its value (checked here by reading the text back).
pub fn samconfig_text(answers: &Answers) -> anyhow::Result<String> {
    let sources = webhook_sources(answers).to_string();
    let mut parameters: Vec<(&str, String)> = vec![
        (
            "ForwardUrl",
            answers.forward_url.clone().unwrap_or_default(),
        ),
        ("WebhookSources", sources),
        ("SecretArns", String::new()),
    ];
    if let Some(destinations) = &answers.destinations {
        let compact = serde_json::from_str::<serde_json::Value>(destinations)
            .context("the destinations are not JSON")?
            .to_string();
        for (parameter, arns) in destination_arns(destinations)? {
            parameters.push((parameter, arns.join(",")));
        }
        parameters.push(("Destinations", compact));
    }
    if let Some(email) = &answers.alarm_email {
        parameters.push(("AlarmEmail", email.clone()));
    }
    parameters.push(("LogLevel", "INFO".to_owned()));
    let items = parameters
        .iter()
        .map(|(name, value)| override_item(name, value).map(|item| format!("  {item},\n")))
        .collect::<anyhow::Result<String>>()?;
    let text = format!(
        r#"# Written by `inbox-ops init` (docs/deploying.md); `make deploy` reads it (the preflight,
# then `sam build` and `sam deploy`). Edit it freely, or run `inbox-ops init --force` again.
version = 0.1

[default.global.parameters]
stack_name = "{stack}"
region = "{region}"

[default.build.parameters]
# BuildMethod rust-cargolambda (cargo lambda build --release, arm64 from the template) is a beta
# feature of the SAM CLI.
beta_features = true
# No build cache: with CodeUri "." SAM would hash the whole workspace (target/, .venv) first.
cached = false

[default.validate.parameters]
lint = true

[default.deploy.parameters]
stack_name = "{stack}"
region = "{region}"
capabilities = "CAPABILITY_IAM"
resolve_s3 = true
# sam deploy shows the change set and asks before applying it; `make deploy
# ARGS=--no-confirm-changeset` does not ask.
confirm_changeset = true
fail_on_empty_changeset = false
# A parameter left out keeps its previous value on a stack that exists (docs/deploying.md).
parameter_overrides = [
{items}]

[default.sync.parameters]
beta_features = true
watch = true
"#,
        stack = answers.stack,
        region = answers.region,
    );
    let read = Samconfig::parse(&text).context("the samconfig.toml init writes")?;
    let expected: Vec<(String, String)> = parameters
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v))
        .collect();
    if read.overrides != expected || !read.problems.is_empty() {
        bail!("the samconfig.toml init would write does not read back as written: {read:?}");
    }
    Ok(text)
}

/// 32 random bytes, hex: a secret for a sender that takes the one you give it.
fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Creates the secret of each sender whose secret you choose (unless it exists: kept); the
/// others are pending. Nothing is printed of a value.
pub async fn create_secrets(
    client: &aws_sdk_secretsmanager::Client,
    answers: &Answers,
) -> anyhow::Result<Vec<(String, SecretOutcome)>> {
    let mut outcomes = Vec::new();
    for sender in &answers.senders {
        let name = secret_name(&answers.stack, &sender.name);
        let outcome = if sender.origin == SecretOrigin::Issued {
            // Stored already (a second run, after `secret set`): kept; else pending.
            match client.describe_secret().secret_id(&name).send().await {
                Ok(_) => SecretOutcome::Kept,
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_resource_not_found_exception()) =>
                {
                    SecretOutcome::Pending
                }
                Err(e) => {
                    return Err(anyhow!(
                    "DescribeSecret {name}: {} (the deployer policy allows it: docs/deploying.md)",
                    DisplayErrorContext(e)
                ))
                }
            }
        } else {
            match client
                .create_secret()
                .name(&name)
                .secret_string(random_secret())
                .description(format!(
                    "{}'s webhook signing secret (inbox-ops init)",
                    sender.name
                ))
                .send()
                .await
            {
                Ok(_) => SecretOutcome::Created,
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_resource_exists_exception()) =>
                {
                    SecretOutcome::Kept
                }
                Err(e) => {
                    return Err(anyhow!(
                    "CreateSecret {name}: {} (the deployer policy allows it: docs/deploying.md)",
                    DisplayErrorContext(e)
                ))
                }
            }
        };
        outcomes.push((sender.name.clone(), outcome));
    }
    Ok(outcomes)
}

/// For the tests: [`gather`] from text, no terminal.
pub fn gather_from(
    args: &InitArgs,
    found_region: Option<String>,
    input: &str,
) -> anyhow::Result<(Answers, String)> {
    let mut prompts = Vec::new();
    let answers = gather(args, found_region, &mut input.as_bytes(), &mut prompts)?;
    Ok((answers, String::from_utf8_lossy(&prompts).into_owned()))
}

/// Reads one answer line; `None` at the end of the input.
fn read_line(input: &mut dyn BufRead) -> anyhow::Result<Option<String>> {
    let mut line = String::new();
    if input
        .read_line(&mut line)
        .context("reading standard input")?
        == 0
    {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

/// Asks `question`; the answer, `default` on an empty line.
fn ask(
    input: &mut dyn BufRead,
    prompt: &mut dyn Write,
    question: &str,
    default: Option<&str>,
    flag: &str,
) -> anyhow::Result<String> {
    match default {
        Some(d) if !d.is_empty() => write!(prompt, "{question} [{d}]: ")?,
        _ => write!(prompt, "{question}: ")?,
    }
    prompt.flush()?;
    match read_line(input)? {
        Some(line) if !line.is_empty() => Ok(line),
        Some(_) => Ok(default.unwrap_or_default().to_owned()),
        None => bail!("no answer to \"{question}\" (standard input ended): give {flag}"),
    }
}
