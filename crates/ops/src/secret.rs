//! `inbox-ops secret set SOURCE`: stores a sender's signing secret where the stack's
//! `WebhookSources` says the receiver reads it (the source's `secretsmanager:` reference),
//! checked first as the receiver will check it. The way a `pending` source (Stripe, Slack:
//! the secret exists only once the URL does) starts verifying: the warm receivers read it
//! again within seconds, no deploy (docs/deploying.md, "A sender whose secret comes after the
//! URL"). Rotation is the same command with the new value.
//!
//! The value comes from standard input: typed at a prompt that does not echo it, or piped
//! (`--from-file FILE` reads a file instead); `--value` takes it on the command line, where the
//! shell's history keeps it, and is there for scripts that hold it already. Nothing prints it.

use crate::stack::DEFAULT_STACK;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use clap::Subcommand;
use std::io::{IsTerminal as _, Read as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_secretsmanager::error::DisplayErrorContext;
use inbox::config::{SecretRef, SourceSpec};
use inbox::signature::Scheme;
use inbox::SourceSpecs;

use crate::preflight::values::is_placeholder_secret;

/// `secret`'s actions.
#[derive(Clone, Debug, PartialEq, Eq, Subcommand)]
pub enum SecretCommand {
    /// Stores SOURCE's secret: typed at a prompt that does not echo it, or piped on standard
    /// input, or --from-file; creates the secret where it does not exist yet. Prints the
    /// secret's name, never its value. Exits 1 when the value is not one the receiver would take.
    Set(SecretSetArgs),
}

/// `secret set`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct SecretSetArgs {
    /// The source (its name in WebhookSources, the URL's last segment).
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The stack whose WebhookSources parameter names the source's secret.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The sources configuration (JSON, as WEBHOOK_SOURCES takes it) instead of the stack's.
    #[arg(long = "sources", value_name = "FILE")]
    pub sources_file: Option<PathBuf>,
    /// Which of the source's secrets, by position (1-based), where it has several
    /// secretsmanager: references [default: its only one].
    #[arg(long, value_name = "N")]
    pub position: Option<usize>,
    /// Read the value from this file (one trailing line end dropped).
    #[arg(long, value_name = "FILE", conflicts_with = "value")]
    pub from_file: Option<PathBuf>,
    /// The value itself, for scripts: your shell's history keeps it; prefer the prompt,
    /// standard input or --from-file.
    #[arg(long, value_name = "SECRET")]
    pub value: Option<String>,
}

/// What `store` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// The secret's name in Secrets Manager.
    pub name: String,
    /// Whether the secret was created (it did not exist), rather than given a new value.
    pub created: bool,
}

/// Reads the value, checks it, stores it; prints what was done (never the value).
pub async fn set(args: &SecretSetArgs) -> anyhow::Result<ExitCode> {
    let sdk = crate::aws::config().await;
    let sources = match &args.sources_file {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => crate::stack::resolve(&sdk, &args.stack)
            .await?
            .sources_json
            .ok_or_else(|| anyhow!("stack {} has no parameter WebhookSources", args.stack))?,
    };
    let spec = source_spec(&sources, &args.source)?;
    let reference = reference(&spec, args.position)?;
    let value = read_value(args, &spec)?;
    check_value(&spec, &value).map_err(|why| anyhow!("source `{}`: {why}", spec.name))?;
    let client = aws_sdk_secretsmanager::Client::new(&sdk);
    let stored = store(&client, &reference, value).await?;
    println!(
        "{} secret {} for source `{}` ({} scheme){}",
        if stored.created {
            "created"
        } else {
            "stored a new value of"
        },
        stored.name,
        spec.name,
        spec.scheme.name(),
        if spec.pending {
            "; the source is pending: warm receivers read it on its next request (at most every 5 s) and stop answering 503"
        } else {
            "; warm receivers read it on the first request it signs (at most every 5 s), and within 5 minutes in any case; the previous value verifies 5 minutes more"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The source called `name` in `sources` (`WebhookSources`), checked as the functions check it.
pub fn source_spec(sources: &str, name: &str) -> anyhow::Result<SourceSpec> {
    let specs = SourceSpecs::parse(sources).map_err(|e| anyhow!("WebhookSources: {e}"))?;
    specs.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        anyhow!(
            "no source `{name}` in WebhookSources (sources: {})",
            known.join(", ")
        )
    })
}

/// The `secretsmanager:` reference to store into: the source's only one, or the one at
/// `position` (1-based, among all its secrets).
pub fn reference(spec: &SourceSpec, position: Option<usize>) -> anyhow::Result<String> {
    let stored: Vec<(usize, &str)> = spec
        .secrets
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            SecretRef::SecretsManager(id) => Some((i + 1, id.as_str())),
            SecretRef::Env(_) => None,
        })
        .collect();
    match (position, stored.as_slice()) {
        (Some(p), _) => stored
            .iter()
            .find(|(i, _)| *i == p)
            .map(|(_, id)| (*id).to_owned())
            .ok_or_else(|| {
                anyhow!(
                    "source `{}`: secret #{p} is not a secretsmanager: reference",
                    spec.name
                )
            }),
        (None, [(_, id)]) => Ok((*id).to_owned()),
        (None, []) => bail!(
            "source `{}` has no secretsmanager: secret to store (its secrets: {})",
            spec.name,
            spec.secrets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (None, several) => bail!(
            "source `{}` has {} secretsmanager: secrets (#{}): say which with --position",
            spec.name,
            several.len(),
            several
                .iter()
                .map(|(i, _)| i.to_string())
                .collect::<Vec<_>>()
                .join(", #")
        ),
    }
}

/// The value, from `--value`, `--from-file`, a prompt without echo, or piped standard input;
/// one trailing line end taken off (a file or `echo` adds it).
fn read_value(args: &SecretSetArgs, spec: &SourceSpec) -> anyhow::Result<String> {
    let text = if let Some(value) = &args.value {
        value.clone()
    } else if let Some(path) = &args.from_file {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    } else if std::io::stdin().is_terminal() {
        let term = console::Term::stderr();
        term.write_str(&format!(
            "{}'s signing secret for source `{}` (not echoed): ",
            provider(spec),
            spec.name
        ))?;
        term.read_secure_line()
            .context("reading the secret from the terminal")?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the secret from standard input")?;
        text
    };
    let text = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    Ok(text.to_owned())
}

/// Who issues the secret, for the prompt.
fn provider(spec: &SourceSpec) -> String {
    spec.preset
        .clone()
        .unwrap_or_else(|| format!("the {} sender", spec.scheme.name()))
}

/// The value as the receiver will take it: no blank, no whitespace or control character, not
/// the docs' placeholder, in the form the preset's provider issues (Stripe's `whsec_…`), and
/// valid for the scheme (its length, `whsec_` base64, a public key's point) as the receiver
/// checks it when it reads it. The message never quotes the value.
pub fn check_value(spec: &SourceSpec, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("the secret is empty".to_owned());
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(
            "the secret holds whitespace or a control character (copied with a space or a line break?)"
                .to_owned(),
        );
    }
    if is_placeholder_secret(value) {
        return Err(
            "the secret is the docs' placeholder whsec_\u{2026}, not the sender's signing secret"
                .to_owned(),
        );
    }
    if spec.scheme == Scheme::Stripe && !value.starts_with("whsec_") {
        return Err(
            "a Stripe endpoint's signing secret begins with whsec_ (Workbench, the destination's \"Signing secret\")"
                .to_owned(),
        );
    }
    inbox::config::verifier_from(spec, vec![value.to_owned()]).map(drop)
}

/// Stores `value` as secret `id` (a name or an ARN): a new version where the secret exists,
/// else the secret created under that name (an ARN that does not exist cannot be created).
pub async fn store(
    client: &aws_sdk_secretsmanager::Client,
    id: &str,
    value: String,
) -> anyhow::Result<Stored> {
    match client.describe_secret().secret_id(id).send().await {
        Ok(out) if out.deleted_date().is_some() => bail!(
            "secret {id} is scheduled for deletion: restore it first (aws secretsmanager restore-secret --secret-id {id})"
        ),
        Ok(out) => {
            client
                .put_secret_value()
                .secret_id(id)
                .secret_string(value)
                .send()
                .await
                .map_err(|e| anyhow!("PutSecretValue {id}: {}", DisplayErrorContext(e)))?;
            Ok(Stored {
                name: out.name().unwrap_or(id).to_owned(),
                created: false,
            })
        }
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_resource_not_found_exception()) =>
        {
            if id.starts_with("arn:") {
                bail!("no secret {id}: an ARN names a secret that exists; create it (aws secretsmanager create-secret) or reference it by name");
            }
            client
                .create_secret()
                .name(id)
                .secret_string(value)
                .send()
                .await
                .map_err(|e| anyhow!("CreateSecret {id}: {}", DisplayErrorContext(e)))?;
            Ok(Stored {
                name: id.to_owned(),
                created: true,
            })
        }
        Err(e) => Err(anyhow!("DescribeSecret {id}: {}", DisplayErrorContext(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(entry: &str) -> SourceSpec {
        source_spec(&format!(r#"{{"s": {entry}}}"#), "s").expect("the source parses")
    }

    #[test]
    fn the_value_is_checked_as_the_preset_and_the_receiver_take_it() {
        let stripe = spec(
            r#"{"preset": "stripe", "pending": true, "signature": {"secrets": ["secretsmanager:webhook-inbox/s"]}}"#,
        );
        let whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        assert_eq!(check_value(&stripe, whsec), Ok(()));
        for (value, says) in [
            ("", "is empty"),
            ("sk_live_abcdefghijklmnopqrstu", "begins with whsec_"),
            ("whsec_\u{2026}", "placeholder"),
            ("whsec_abc def", "whitespace"),
            ("whsec_short", "at least 16"),
        ] {
            let e = check_value(&stripe, value).unwrap_err();
            assert!(e.contains(says), "{value:?}: {e}");
        }
        let slack = spec(
            r#"{"preset": "slack", "pending": true, "signature": {"secrets": ["secretsmanager:webhook-inbox/s"]}}"#,
        );
        assert_eq!(
            check_value(&slack, "8f742231b10e8888abcd99edabcd85a5"),
            Ok(())
        );
        let e = check_value(&slack, "8f742231b10e").unwrap_err();
        assert!(e.contains("at least 16"), "{e}");
        let sw = spec(
            r#"{"signature": {"scheme": "standard-webhooks", "secrets": ["secretsmanager:x"]}, "key": {"from": "header", "name": "webhook-id"}}"#,
        );
        let e = check_value(&sw, "whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM=").unwrap_err();
        assert!(e.contains("decodes to 23 bytes"), "{e}");
    }

    #[test]
    fn the_reference_is_the_sources_secretsmanager_one() {
        let one = spec(
            r#"{"preset": "github", "signature": {"secrets": ["env:X", "secretsmanager:webhook-inbox/gh"]}}"#,
        );
        assert_eq!(reference(&one, None).unwrap(), "webhook-inbox/gh");
        assert_eq!(reference(&one, Some(2)).unwrap(), "webhook-inbox/gh");
        let e = reference(&one, Some(1)).unwrap_err().to_string();
        assert!(e.contains("secret #1 is not a secretsmanager:"), "{e}");
        let two = spec(
            r#"{"preset": "github", "signature": {"secrets": ["secretsmanager:a", "secretsmanager:b"]}}"#,
        );
        let e = reference(&two, None).unwrap_err().to_string();
        assert!(
            e.contains("2 secretsmanager: secrets (#1, #2)") && e.contains("--position"),
            "{e}"
        );
        assert_eq!(reference(&two, Some(2)).unwrap(), "b");
        let env = spec(r#"{"preset": "github", "signature": {"secrets": ["env:X"]}}"#);
        let e = reference(&env, None).unwrap_err().to_string();
        assert!(
            e.contains("no secretsmanager: secret") && e.contains("env:X"),
            "{e}"
        );
        let e = source_spec(
            r#"{"s": {"preset": "github", "signature": {"secrets": ["env:X"]}}}"#,
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("no source `t`") && e.contains("(sources: s)"),
            "{e}"
        );
    }
}
