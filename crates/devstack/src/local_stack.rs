//! The local stack the tests, the demo and the bench run on: template.yaml created as a stack on
//! moto's CloudFormation ([`crate::cloudformation`]) with samconfig.toml's parameters and the
//! local ones over them, after the secrets its sources reference are put in moto's Secrets
//! Manager (as a deployer creates them before `sam deploy`). The table, the queues and each
//! function's environment are then read back from the stack; nothing here names or shapes a
//! resource.
//!
//! The local parameters ([`parameters`]): `WebhookSources` (the run's sources), `ForwardUrl`
//! (where the consumer forwards; a local `http://` address is fine, moto's CloudFormation does
//! not check the parameter's `AllowedPattern`) and `SecretArns` (the ARNs of the secrets the
//! sources reference with `secretsmanager:`).

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_secretsmanager::error::ProvideErrorMetadata as _;
use inbox::config::{SecretRef, SourceSpecs};
use serde_json::Value;

use crate::cloudformation::{deploy_local_with, samconfig_path, Parameters, Stack};

/// The template parameters the local stack sets over samconfig.toml's.
pub const SOURCES_PARAMETER: &str = "WebhookSources";
pub const FORWARD_URL_PARAMETER: &str = "ForwardUrl";
pub const SECRET_ARNS_PARAMETER: &str = "SecretArns";

/// A secret to put in Secrets Manager before the stack is created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Secret {
    pub name: String,
    pub value: String,
}

impl Secret {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Secret {
        Secret {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// The names the tests and tools read from a stack: the table and both queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    /// The ledger table (LEDGER_TABLE).
    pub table: String,
    /// The webhook queue's URL (QUEUE_URL).
    pub queue_url: String,
    pub dlq_url: String,
    /// The payload bucket (PAYLOAD_BUCKET): the stack's output `PayloadBucketName`.
    pub payload_bucket: String,
}

impl From<&Stack> for Resources {
    fn from(stack: &Stack) -> Resources {
        Resources {
            table: stack.table.clone(),
            queue_url: stack.queue_url.clone(),
            dlq_url: stack.dlq_url.clone(),
            payload_bucket: stack
                .outputs
                .get("PayloadBucketName")
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// A valid stack name made from `label`: letters, digits and `-`, starting with a letter, at
/// most 60 characters (the queues are named `<stack>-webhooks.fifo`, at most 80).
pub fn stack_name(label: &str) -> String {
    let mut name: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert(0, 's');
    }
    name.truncate(60);
    name
}

/// Creates each secret in Secrets Manager, or, where one of that name exists, makes this value
/// its current version.
pub async fn put_secrets(sdk: &aws_config::SdkConfig, secrets: &[Secret]) -> anyhow::Result<()> {
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    for secret in secrets {
        let created = client
            .create_secret()
            .name(&secret.name)
            .secret_string(&secret.value)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(err) if err.code() == Some("ResourceExistsException") => {
                client
                    .put_secret_value()
                    .secret_id(&secret.name)
                    .secret_string(&secret.value)
                    .send()
                    .await
                    .with_context(|| format!("PutSecretValue {}", secret.name))?;
            }
            Err(err) => {
                return Err(anyhow::Error::new(err).context(format!("CreateSecret {}", secret.name)))
            }
        }
    }
    Ok(())
}

/// The ARN of every secret the sources reference with `secretsmanager:` (DescribeSecret), in
/// order of first reference: the `SecretArns` the receiver's role is scoped to. Each is written
/// as samconfig.toml suggests, the name with the random suffix matched by `??????`, which also
/// makes the parameter values (and so the translation, [`crate::cloudformation::Translated::cached`])
/// the same from one moto server to the next.
pub async fn secret_arns(
    sdk: &aws_config::SdkConfig,
    sources: &SourceSpecs,
) -> anyhow::Result<Vec<String>> {
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    let mut arns: Vec<String> = Vec::new();
    for spec in sources.iter() {
        for reference in &spec.secrets {
            let SecretRef::SecretsManager(id) = reference else {
                continue;
            };
            let described = client.describe_secret().secret_id(id).send().await;
            // A pending source's secret may be stored after the deploy (`inbox-ops secret set`).
            let not_yet = described.as_ref().is_err_and(|e| {
                e.as_service_error()
                    .is_some_and(|se| se.is_resource_not_found_exception())
            });
            if spec.pending && not_yet {
                continue;
            }
            let described = described.with_context(|| {
                format!(
                    "source {}: DescribeSecret {id} (is it in Secrets Manager?)",
                    spec.name
                )
            })?;
            let arn = described
                .arn()
                .ok_or_else(|| anyhow!("DescribeSecret {id} returned no ARN"))?;
            let arn = suffix_pattern(arn, described.name().unwrap_or_default());
            if !arns.contains(&arn) {
                arns.push(arn);
            }
        }
    }
    Ok(arns)
}

/// `arn` (`...:secret:<name>-<6 random characters>`) with its suffix as `??????`; unchanged when
/// it does not end so.
fn suffix_pattern(arn: &str, name: &str) -> String {
    match arn.rsplit_once(":secret:") {
        Some((prefix, rest))
            if rest.len() == name.len() + 7
                && rest.starts_with(name)
                && rest[name.len()..].starts_with('-') =>
        {
            format!("{prefix}:secret:{name}-??????")
        }
        _ => arn.to_owned(),
    }
}

/// samconfig.toml's parameters with the local ones over them.
pub fn parameters(
    sources: &str,
    forward_url: &str,
    secret_arns: &[String],
) -> anyhow::Result<Parameters> {
    let mut parameters = Parameters::from_samconfig(&samconfig_path())?;
    parameters
        .set(SOURCES_PARAMETER, sources)
        .set(FORWARD_URL_PARAMETER, forward_url)
        .set(SECRET_ARNS_PARAMETER, &secret_arns.join(","));
    Ok(parameters)
}

/// The stack `stack_name(label)`, created with these sources (JSON, as `WEBHOOK_SOURCES` takes
/// it) and forward URL; the secrets the sources reference must be in Secrets Manager
/// ([`put_secrets`]).
pub async fn deploy(
    sdk: &aws_config::SdkConfig,
    label: &str,
    sources: &str,
    forward_url: &str,
) -> anyhow::Result<Stack> {
    let specs = SourceSpecs::parse(sources).context("the local stack's sources")?;
    let arns = secret_arns(sdk, &specs).await?;
    deploy_with(sdk, label, sources, forward_url, &arns).await
}

/// [`deploy`] with the sources' [`secret_arns`] known already.
pub async fn deploy_with(
    sdk: &aws_config::SdkConfig,
    label: &str,
    sources: &str,
    forward_url: &str,
    secret_arns: &[String],
) -> anyhow::Result<Stack> {
    let parameters = parameters(sources, forward_url, secret_arns)?;
    deploy_parameters(sdk, label, &parameters).await
}

/// The stack `stack_name(label)`, created with these parameters ([`parameters`] and any
/// others over them, such as `Destinations`).
pub async fn deploy_parameters(
    sdk: &aws_config::SdkConfig,
    label: &str,
    parameters: &Parameters,
) -> anyhow::Result<Stack> {
    let mut stack = deploy_local_with(sdk, &stack_name(label), parameters).await?;
    put_secrets_moto_skips(sdk, &mut stack).await?;
    Ok(stack)
}

/// moto's CloudFormation does not create `AWS::SecretsManager::Secret`, so a function variable
/// that references a secret the template generates (the consumer's `FORWARD_SIGNING_SECRET`,
/// `secretsmanager:${ForwardSigningSecret}`) is left unresolved. Such a secret is put in
/// Secrets Manager here, as `<stack>/<logical id>`, with a value of the template's form (32
/// letters and digits: base64 of 24 bytes, derived from the stack's name), and the variable
/// names it. The one place where the local stack stands in for a resource moto skips.
async fn put_secrets_moto_skips(
    sdk: &aws_config::SdkConfig,
    stack: &mut Stack,
) -> anyhow::Result<()> {
    let mut secrets = Vec::new();
    for function in [&mut stack.receiver, &mut stack.consumer] {
        for value in function.environment.values_mut() {
            let Some(logical_id) = value
                .strip_prefix("secretsmanager:${")
                .and_then(|rest| rest.strip_suffix('}'))
            else {
                continue;
            };
            let name = format!("{}/{logical_id}", stack.name);
            let digest = inbox::key::sha256_hex(name.as_bytes());
            secrets.push(Secret::new(&name, &digest[..32]));
            *value = format!("secretsmanager:{name}");
        }
    }
    put_secrets(sdk, &secrets).await
}

/// Both functions' environment as one set of variables, as one `--env-file` gives it to both
/// under `cargo lambda watch`: a variable both set (the ledger, the sources) must have one value.
pub fn functions_env(stack: &Stack) -> anyhow::Result<BTreeMap<String, String>> {
    let mut vars = stack.receiver.environment.clone();
    for (name, value) in &stack.consumer.environment {
        match vars.get(name) {
            Some(other) if other != value => bail!(
                "the stack gives the functions different values of {name}: one env file cannot hold both"
            ),
            _ => {
                vars.insert(name.clone(), value.clone());
            }
        }
    }
    Ok(vars)
}

/// `sources` (JSON) with every `env:NAME` secret reference replaced by
/// `secretsmanager:<prefix>/<source>` (`-2`, `-3`, ... for a source's further secrets), and
/// the secrets to create for them, valued `value_of(NAME)`.
pub fn env_secrets_to_secrets_manager(
    sources: &str,
    prefix: &str,
    value_of: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<(String, Vec<Secret>)> {
    let mut doc: Value = serde_json::from_str(sources).context("sources are not JSON")?;
    let map = doc
        .as_object_mut()
        .ok_or_else(|| anyhow!("sources are not a JSON object"))?;
    let mut secrets: Vec<Secret> = Vec::new();
    for (source, spec) in map.iter_mut() {
        let Some(list) = spec
            .pointer_mut("/signature/secrets")
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for (i, reference) in list.iter_mut().enumerate() {
            let Some(var) = reference.as_str().and_then(|r| r.strip_prefix("env:")) else {
                continue;
            };
            let value =
                value_of(var).ok_or_else(|| anyhow!("source {source}: no value for env:{var}"))?;
            let name = match i {
                0 => format!("{prefix}/{source}"),
                n => format!("{prefix}/{source}-{}", n + 1),
            };
            *reference = Value::String(format!("secretsmanager:{name}"));
            secrets.push(Secret { name, value });
        }
    }
    Ok((doc.to_string(), secrets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_names_are_valid() {
        assert_eq!(stack_name("c-dup-12-3"), "c-dup-12-3");
        assert_eq!(stack_name("a_b.c"), "a-b-c");
        assert_eq!(stack_name("1x"), "s1x");
        assert_eq!(stack_name(&"x".repeat(100)).len(), 60);
    }

    #[test]
    fn secret_arns_match_any_suffix() {
        assert_eq!(
            suffix_pattern(
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook-inbox/acme-AbC123",
                "webhook-inbox/acme"
            ),
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook-inbox/acme-??????"
        );
        for (arn, name) in [("arn:x:secret:a-b", "a"), ("not-an-arn", "a")] {
            assert_eq!(suffix_pattern(arn, name), arn);
        }
    }

    #[test]
    fn env_references_become_secrets_manager_ones() {
        let (sources, secrets) = env_secrets_to_secrets_manager(
            r#"{"a": {"signature": {"secrets": ["env:X", "env:Y"]}},
                "b": {"signature": {"secrets": ["secretsmanager:kept"]}},
                "c": {"signature": {"scheme": "none"}}}"#,
            "inbox",
            |var| Some(format!("value-of-{var}")),
        )
        .unwrap();
        let doc: Value = serde_json::from_str(&sources).unwrap();
        assert_eq!(
            doc["a"]["signature"]["secrets"],
            serde_json::json!(["secretsmanager:inbox/a", "secretsmanager:inbox/a-2"])
        );
        assert_eq!(
            doc["b"]["signature"]["secrets"],
            serde_json::json!(["secretsmanager:kept"])
        );
        assert_eq!(
            secrets,
            [
                Secret::new("inbox/a", "value-of-X"),
                Secret::new("inbox/a-2", "value-of-Y")
            ]
        );
        assert!(env_secrets_to_secrets_manager(
            r#"{"a": {"signature": {"secrets": ["env:X"]}}}"#,
            "p",
            |_| None
        )
        .is_err());
    }
}
