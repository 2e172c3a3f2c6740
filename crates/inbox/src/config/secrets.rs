//! Secrets by reference: the configuration names a secret (`env:NAME` or
//! `secretsmanager:NAME_OR_ARN`), never holds it; a [`SecretResolver`] reads it once, at the
//! receiver's cold start.

use std::future::Future;

/// A reference to a secret, as written in the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretRef {
    Env(String),
    SecretsManager(String),
}

impl SecretRef {
    /// `env:NAME` or `secretsmanager:NAME_OR_ARN`; anything else is not a reference.
    pub fn parse(text: &str) -> Option<SecretRef> {
        if let Some(name) = text.strip_prefix("env:") {
            (!name.is_empty()).then(|| SecretRef::Env(name.to_owned()))
        } else if let Some(id) = text.strip_prefix("secretsmanager:") {
            (!id.is_empty()).then(|| SecretRef::SecretsManager(id.to_owned()))
        } else {
            None
        }
    }
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretRef::Env(name) => write!(f, "env:{name}"),
            SecretRef::SecretsManager(id) => write!(f, "secretsmanager:{id}"),
        }
    }
}

/// Reads a secret by reference.
pub trait SecretResolver: Sync {
    /// The secret's value, or a message saying why it could not be read (never the value).
    fn resolve(&self, reference: &SecretRef)
        -> impl Future<Output = Result<String, String>> + Send;
}

/// `env:` from the process environment, `secretsmanager:` from AWS Secrets Manager.
pub struct AwsSecretResolver {
    secrets_manager: Option<aws_sdk_secretsmanager::Client>,
}

impl AwsSecretResolver {
    /// Environment only: a `secretsmanager:` reference fails.
    pub fn env_only() -> Self {
        Self {
            secrets_manager: None,
        }
    }

    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Self {
            secrets_manager: Some(aws_sdk_secretsmanager::Client::new(sdk)),
        }
    }

    async fn read_secrets_manager(
        &self,
        reference: &SecretRef,
        id: &str,
    ) -> Result<String, String> {
        let client = self
            .secrets_manager
            .as_ref()
            .ok_or_else(|| format!("`{reference}`: Secrets Manager is not available"))?;
        let out = client
            .get_secret_value()
            .secret_id(id)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "`{reference}`: {}",
                    aws_sdk_secretsmanager::error::DisplayErrorContext(e)
                )
            })?;
        out.secret_string()
            .map(str::to_owned)
            .ok_or_else(|| format!("`{reference}`: the secret has no string value"))
    }
}

impl SecretResolver for AwsSecretResolver {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(name) => std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("`{reference}`: environment variable {name} is not set")),
            SecretRef::SecretsManager(id) => self.read_secrets_manager(reference, id).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SourceSpecs;
    use super::*;

    #[test]
    fn references_parse_and_print_back() {
        for text in [
            "env:X",
            "secretsmanager:arn:aws:secretsmanager:eu-west-1:1:secret:s",
        ] {
            assert_eq!(SecretRef::parse(text).unwrap().to_string(), text);
        }
        for text in ["env:", "secretsmanager:", "hunter2", ""] {
            assert_eq!(SecretRef::parse(text), None, "{text}");
        }
    }

    #[tokio::test]
    async fn resolve_reads_env_secrets_and_names_missing_ones() {
        std::env::set_var("INBOX_TEST_SECRET_PRESENT", "It's a Secret to Everybody");
        let specs = SourceSpecs::parse(
            r#"{"gh": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_SECRET_PRESENT"]}, "key": {"from": "header", "name": "X-GitHub-Delivery"}}}"#,
        )
        .unwrap();
        let sources = specs.resolve(&AwsSecretResolver::env_only()).await.unwrap();
        assert!(sources.get("gh").is_some());

        let specs = SourceSpecs::parse(
            r#"{"gh": {"signature": {"scheme": "github", "secrets": ["env:INBOX_TEST_SECRET_ABSENT"]}, "key": {"from": "header", "name": "X-GitHub-Delivery"}}}"#,
        )
        .unwrap();
        let e = specs
            .resolve(&AwsSecretResolver::env_only())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`gh`") && e.contains("INBOX_TEST_SECRET_ABSENT"),
            "{e}"
        );
    }

    /// A pending source starts without its secret (nothing to read, or a value the scheme
    /// refuses); the same source not pending stops start-up; `pending` needs a secret that can
    /// be stored after the deploy.
    #[tokio::test]
    async fn a_pending_source_starts_without_its_secret_and_another_does_not() {
        let entry = |pending: bool, secret: &str| {
            format!(
                r#"{{"s": {{"preset": "stripe", "pending": {pending}, "signature": {{"secrets": ["{secret}"]}}}}}}"#
            )
        };
        let e = SourceSpecs::parse(&entry(true, "env:INBOX_TEST_PENDING_ENV"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "source `s`, field `pending`: a pending source needs a `secretsmanager:` secret"
            ),
            "{e}"
        );
        let resolve = |pending: bool, secret: &str| {
            let json = entry(pending, secret);
            async move {
                SourceSpecs::parse(&json)
                    .unwrap()
                    .resolve(&AwsSecretResolver::env_only())
                    .await
            }
        };
        // Secrets Manager unreachable here: nothing can be read.
        let sources = resolve(true, "secretsmanager:webhook-inbox/s")
            .await
            .unwrap();
        let source = sources.get("s").unwrap();
        assert!(source.awaiting() && source.verifier.is_none());
        let e = resolve(false, "secretsmanager:webhook-inbox/s")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("source `s`, field `signature.secrets`: `secretsmanager:webhook-inbox/s`: Secrets Manager is not available"),
            "{e}"
        );
        // Beside an env: secret, a secretsmanager: one makes `pending` possible; one of the
        // two missing is enough to wait.
        let sources = SourceSpecs::parse(
            r#"{"s": {"preset": "stripe", "pending": true, "signature": {"secrets": ["env:INBOX_TEST_SECRET_UNSET_P", "secretsmanager:webhook-inbox/s"]}}}"#,
        )
        .unwrap()
        .resolve(&AwsSecretResolver::env_only())
        .await
        .unwrap();
        assert!(
            sources.get("s").unwrap().awaiting(),
            "one secret missing: waits"
        );
    }

    /// A secret shorter than its scheme's minimum stops start-up, naming the source and the
    /// secret's position, never its value.
    #[tokio::test]
    async fn short_secrets_stop_start_up() {
        std::env::set_var("INBOX_TEST_SECRET_SHORT", "fifteen-bytes!!");
        std::env::set_var("INBOX_TEST_SECRET_SIXTEEN", "sixteen-bytes!!!");
        // 23 and 65 bytes, base64, and 24.
        std::env::set_var(
            "INBOX_TEST_WHSEC_23",
            "whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM=",
        );
        std::env::set_var(
            "INBOX_TEST_WHSEC_65",
            format!("whsec_{}", "QUFB".repeat(21) + "QUE="),
        );
        std::env::set_var(
            "INBOX_TEST_WHSEC_24",
            "whsec_MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0",
        );
        // Resolves the sources of `json` from the environment: the start-up error's text, if any.
        let resolve_json = |json: String| async move {
            SourceSpecs::parse(&json)
                .unwrap()
                .resolve(&AwsSecretResolver::env_only())
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let resolve = |scheme: &str, var: &str| {
            resolve_json(format!(
                r#"{{"src": {{"signature": {{"scheme": "{scheme}", "secrets": ["env:INBOX_TEST_SECRET_SIXTEEN", "env:{var}"]}}, "key": {{"from": "payload_sha256"}}}}}}"#
            ))
        };
        for scheme in ["github", "shopify", "stripe"] {
            let e = resolve(scheme, "INBOX_TEST_SECRET_SHORT")
                .await
                .unwrap_err();
            assert!(
                e.contains("`src`") && e.contains("secret #2") && e.contains("at least 16"),
                "{e}"
            );
            assert!(!e.contains("fifteen"), "{e}");
            assert_eq!(resolve(scheme, "INBOX_TEST_SECRET_SIXTEEN").await, Ok(()));
        }
        let sw = |var: &str| {
            resolve_json(format!(
                r#"{{"src": {{"signature": {{"scheme": "standard-webhooks", "secrets": ["env:{var}"]}}, "key": {{"from": "payload_sha256"}}}}}}"#
            ))
        };
        for (var, bytes) in [("INBOX_TEST_WHSEC_23", 23), ("INBOX_TEST_WHSEC_65", 65)] {
            let e = sw(var).await.unwrap_err();
            assert!(
                e.contains("`src`")
                    && e.contains(&format!("decodes to {bytes} bytes"))
                    && e.contains("24 to 64"),
                "{e}"
            );
        }
        assert_eq!(sw("INBOX_TEST_WHSEC_24").await, Ok(()));
    }
}
