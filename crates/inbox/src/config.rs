//! `WEBHOOK_SOURCES`: one JSON object, one entry per source, checked once at start-up.
//!
//! Parsing happens in two steps so that the consumer, which verifies nothing, never has to
//! read a secret: [`SourceSpecs::parse`] checks every field, [`SourceSpecs::resolve`] reads
//! the secrets (`env:` or `secretsmanager:`) and builds the signature verifiers.

use std::collections::BTreeMap;
use std::future::Future;

use serde::Deserialize;
use serde_json::Value;

use crate::signature::{Encoding, HmacSpec, Scheme, Verifier};

/// Default `tolerance_seconds` of timestamped schemes.
pub const DEFAULT_TOLERANCE_SECONDS: u64 = 300;
/// Default `retention_hours`: a week.
pub const DEFAULT_RETENTION_HOURS: u64 = 168;
/// The longest key value accepted (bytes), before the source prefix.
pub const MAX_KEY_VALUE_BYTES: usize = 1024;

/// A configuration problem, reported at start-up and naming the source and the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is required but not set")]
    MissingVar(&'static str),
    #[error("environment variable {name}: {message}")]
    BadVar { name: &'static str, message: String },
    #[error("WEBHOOK_SOURCES is not a JSON object: {0}")]
    NotAnObject(String),
    #[error("WEBHOOK_SOURCES declares no source")]
    NoSources,
    #[error("source `{source_name}`, field `{field}`: {message}")]
    Field {
        source_name: String,
        field: &'static str,
        message: String,
    },
}

fn field_error(source: &str, field: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Field {
        source_name: source.to_owned(),
        field,
        message: message.into(),
    }
}

/// Where a source's key comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySpec {
    /// A request header, such as `X-GitHub-Delivery` or `webhook-id`.
    Header(http::HeaderName),
    /// One or more JSON pointers into the body; several make a composite business key.
    Json(Vec<String>),
    /// SHA-256 of the raw body. Only where declared: never a fallback.
    PayloadSha256,
}

impl KeySpec {
    pub fn needs_json(&self) -> bool {
        matches!(self, KeySpec::Json(_))
    }
    pub fn describe(&self) -> String {
        match self {
            KeySpec::Header(name) => format!("header {name}"),
            KeySpec::Json(pointers) => format!("body {}", pointers.join(" + ")),
            KeySpec::PayloadSha256 => "SHA-256 of the raw body".to_owned(),
        }
    }
}

/// What sets the FIFO `MessageGroupId`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupSpec {
    /// The key itself: per-event order, full parallelism.
    Key,
    /// Values from the body (per-customer order, say).
    Json(Vec<String>),
}

/// The delivery semantics a source declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    EffectivelyOnce,
    /// Skips the ledger. Must be written out; the audit lists it.
    AtMostOnce,
}

/// What to do with a duplicate whose body hash differs from the first delivery's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnPayloadMismatch {
    /// Replay as a duplicate, count it (senders do vary payloads between retries).
    Accept,
    /// Answer 422 `payload_mismatch`.
    Reject,
}

/// A reference to a secret, as written in the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretRef {
    Env(String),
    SecretsManager(String),
}

impl SecretRef {
    fn parse(text: &str) -> Option<SecretRef> {
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

/// One source, every field checked, secrets not yet read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpec {
    pub name: String,
    pub scheme: Scheme,
    pub secrets: Vec<SecretRef>,
    pub tolerance_seconds: u64,
    pub key: KeySpec,
    pub group: GroupSpec,
    pub delivery: Delivery,
    pub retention_hours: u64,
    pub on_payload_mismatch: OnPayloadMismatch,
}

impl SourceSpec {
    /// The header names the queue envelope carries along: the scheme's, the key's, and the content type.
    pub fn envelope_headers(&self) -> Vec<String> {
        let mut names = self.scheme.header_names();
        if let KeySpec::Header(name) = &self.key {
            names.push(name.as_str().to_owned());
        }
        names.push("content-type".to_owned());
        names.sort();
        names.dedup();
        names
    }
}

/// Every source, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpecs(BTreeMap<String, SourceSpec>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    signature: RawSignature,
    key: RawSelector,
    #[serde(default)]
    group: Option<RawSelector>,
    #[serde(default)]
    delivery: Option<String>,
    #[serde(default)]
    retention_hours: Option<u64>,
    #[serde(default)]
    on_payload_mismatch: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    scheme: String,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    tolerance_seconds: Option<u64>,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    prefix: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSelector {
    from: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    pointers: Option<Vec<String>>,
}

impl SourceSpecs {
    /// Parses and checks `WEBHOOK_SOURCES`.
    pub fn parse(json: &str) -> Result<SourceSpecs, ConfigError> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| ConfigError::NotAnObject(e.to_string()))?;
        let Value::Object(map) = value else {
            return Err(ConfigError::NotAnObject("expected an object".into()));
        };
        if map.is_empty() {
            return Err(ConfigError::NoSources);
        }
        let mut specs = BTreeMap::new();
        for (name, value) in map {
            let spec = parse_source(&name, value)?;
            specs.insert(name, spec);
        }
        Ok(SourceSpecs(specs))
    }

    pub fn get(&self, name: &str) -> Option<&SourceSpec> {
        self.0.get(name)
    }

    /// Every source must remember its keys longer than the queue keeps a message, or a
    /// message still on the queue could outlive its ledger item and run twice.
    /// `queue_retention_seconds` is `QUEUE_RETENTION_SECONDS`, set by the template from the
    /// queue's own `MessageRetentionPeriod`.
    pub fn check_retention(&self, queue_retention_seconds: u64) -> Result<(), ConfigError> {
        for spec in self.0.values() {
            let remembered = spec.retention_hours.saturating_mul(3600);
            if spec.delivery == Delivery::EffectivelyOnce && remembered <= queue_retention_seconds {
                return Err(field_error(
                    &spec.name,
                    "retention_hours",
                    format!(
                        "{} hours does not outlast the queue's message retention ({queue_retention_seconds} s)",
                        spec.retention_hours
                    ),
                ));
            }
        }
        Ok(())
    }

    pub fn iter(&self) -> impl Iterator<Item = &SourceSpec> {
        self.0.values()
    }

    /// Reads every secret once and builds the verifiers (the receiver's cold start).
    pub async fn resolve<R: SecretResolver>(self, resolver: &R) -> Result<Sources, ConfigError> {
        let mut sources = BTreeMap::new();
        for (name, spec) in self.0 {
            let mut secrets = Vec::with_capacity(spec.secrets.len());
            for reference in &spec.secrets {
                let secret = resolver
                    .resolve(reference)
                    .await
                    .map_err(|message| field_error(&name, "signature.secrets", message))?;
                secrets.push(secret);
            }
            let verifier = Verifier::new(spec.scheme.clone(), secrets, spec.tolerance_seconds)
                .map_err(|message| field_error(&name, "signature.secrets", message))?;
            let envelope_headers = spec.envelope_headers();
            sources.insert(
                name,
                Source {
                    spec,
                    verifier,
                    envelope_headers,
                },
            );
        }
        Ok(Sources(sources))
    }
}

fn check_name(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(field_error(
            name,
            "name",
            "a source name is 1 to 64 characters of letters, digits, '-' and '_' (it is the URL's last segment and the key's prefix)",
        ))
    }
}

fn parse_pointers(
    source: &str,
    field: &'static str,
    pointers: Option<Vec<String>>,
) -> Result<Vec<String>, ConfigError> {
    let pointers = pointers.unwrap_or_default();
    if pointers.is_empty() {
        return Err(field_error(
            source,
            field,
            "`from: json` needs a non-empty `pointers` list",
        ));
    }
    for pointer in &pointers {
        if !pointer.starts_with('/') {
            return Err(field_error(
                source,
                field,
                format!("`{pointer}` is not a JSON pointer (it must start with '/')"),
            ));
        }
    }
    Ok(pointers)
}

fn parse_source(name: &str, value: Value) -> Result<SourceSpec, ConfigError> {
    check_name(name)?;
    let raw: RawSource = serde_json::from_value(value).map_err(|e| ConfigError::Field {
        source_name: name.to_owned(),
        field: "(entry)",
        message: e.to_string(),
    })?;

    let sig = raw.signature;
    let scheme = match sig.scheme.as_str() {
        "standard-webhooks" => Scheme::StandardWebhooks,
        "stripe" => Scheme::Stripe,
        "github" => Scheme::Github,
        "shopify" => Scheme::Shopify,
        "none" => Scheme::None,
        "hmac-sha256" => {
            let header = sig.header.clone().ok_or_else(|| {
                field_error(name, "signature.header", "hmac-sha256 needs the header name")
            })?;
            http::HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
                field_error(name, "signature.header", format!("`{header}` is not a header name"))
            })?;
            let encoding = match sig.encoding.as_deref() {
                Some("hex") => Encoding::Hex,
                Some("base64") => Encoding::Base64,
                _ => {
                    return Err(field_error(
                        name,
                        "signature.encoding",
                        "hmac-sha256 needs `encoding`: \"hex\" or \"base64\"",
                    ))
                }
            };
            Scheme::HmacSha256(HmacSpec {
                header: header.to_ascii_lowercase(),
                encoding,
                prefix: sig.prefix.clone().unwrap_or_default(),
            })
        }
        other => {
            return Err(field_error(
                name,
                "signature.scheme",
                format!("unknown scheme `{other}` (standard-webhooks, stripe, github, shopify, hmac-sha256, none)"),
            ))
        }
    };
    if !matches!(scheme, Scheme::HmacSha256(_))
        && (sig.header.is_some() || sig.encoding.is_some() || sig.prefix.is_some())
    {
        return Err(field_error(
            name,
            "signature",
            "`header`, `encoding` and `prefix` only go with the hmac-sha256 scheme",
        ));
    }
    let secrets = sig
        .secrets
        .iter()
        .map(|text| {
            SecretRef::parse(text).ok_or_else(|| {
                field_error(
                    name,
                    "signature.secrets",
                    "each secret is a reference `env:NAME` or `secretsmanager:NAME_OR_ARN`, never the secret itself",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    match (&scheme, secrets.is_empty()) {
        (Scheme::None, false) => {
            return Err(field_error(
                name,
                "signature.secrets",
                "scheme `none` takes no secrets",
            ))
        }
        (s, true) if *s != Scheme::None => {
            return Err(field_error(
                name,
                "signature.secrets",
                "at least one secret is needed (list several to rotate)",
            ))
        }
        _ => {}
    }
    let tolerance_seconds = sig.tolerance_seconds.unwrap_or(DEFAULT_TOLERANCE_SECONDS);
    if tolerance_seconds == 0 {
        return Err(field_error(
            name,
            "signature.tolerance_seconds",
            "must be at least 1",
        ));
    }

    let key = match raw.key.from.as_str() {
        "header" => {
            let header = raw.key.name.as_deref().ok_or_else(|| {
                field_error(name, "key.name", "`from: header` needs the header `name`")
            })?;
            let header = http::HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
                field_error(name, "key.name", format!("`{header}` is not a header name"))
            })?;
            KeySpec::Header(header)
        }
        "json" => KeySpec::Json(parse_pointers(name, "key.pointers", raw.key.pointers)?),
        "payload_sha256" => KeySpec::PayloadSha256,
        other => {
            return Err(field_error(
                name,
                "key.from",
                format!("unknown `{other}` (header, json, payload_sha256)"),
            ))
        }
    };

    let group = match raw.group {
        None => GroupSpec::Key,
        Some(group) => match group.from.as_str() {
            "key" => GroupSpec::Key,
            "json" => GroupSpec::Json(parse_pointers(name, "group.pointers", group.pointers)?),
            other => {
                return Err(field_error(
                    name,
                    "group.from",
                    format!("unknown `{other}` (key, json)"),
                ))
            }
        },
    };

    let delivery = match raw.delivery.as_deref() {
        None | Some("effectively_once") => Delivery::EffectivelyOnce,
        Some("at_most_once") => Delivery::AtMostOnce,
        Some(other) => {
            return Err(field_error(
                name,
                "delivery",
                format!("unknown `{other}` (effectively_once, at_most_once)"),
            ))
        }
    };

    let retention_hours = raw.retention_hours.unwrap_or(DEFAULT_RETENTION_HOURS);
    if retention_hours == 0 {
        return Err(field_error(name, "retention_hours", "must be at least 1"));
    }

    let on_payload_mismatch = match raw.on_payload_mismatch.as_deref() {
        None | Some("accept") => OnPayloadMismatch::Accept,
        Some("reject") => OnPayloadMismatch::Reject,
        Some(other) => {
            return Err(field_error(
                name,
                "on_payload_mismatch",
                format!("unknown `{other}` (accept, reject)"),
            ))
        }
    };

    Ok(SourceSpec {
        name: name.to_owned(),
        scheme,
        secrets,
        tolerance_seconds,
        key,
        group,
        delivery,
        retention_hours,
        on_payload_mismatch,
    })
}

/// A source ready to verify requests.
#[derive(Debug)]
pub struct Source {
    pub spec: SourceSpec,
    pub verifier: Verifier,
    /// [`SourceSpec::envelope_headers`], worked out once at start-up, not per request.
    pub envelope_headers: Vec<String>,
}

/// Every source, with its secrets read.
#[derive(Debug)]
pub struct Sources(BTreeMap<String, Source>);

impl Sources {
    pub fn get(&self, name: &str) -> Option<&Source> {
        self.0.get(name)
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
}

impl SecretResolver for AwsSecretResolver {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        match reference {
            SecretRef::Env(name) => std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("`{reference}`: environment variable {name} is not set")),
            SecretRef::SecretsManager(id) => {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            r#"{"shop": {"signature": {"scheme": "none", "secrets": ["env:X"]}, "key": {"from": "payload_sha256"}}}"#,
        );
        assert!(e.contains("scheme `none` takes no secrets"), "{e}");
        let e = err(
            r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "json", "pointers": []}}}"#,
        );
        assert!(e.contains("key.pointers"), "{e}");
        let e = err(
            r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "json", "pointers": ["id"]}}}"#,
        );
        assert!(
            e.contains("key.pointers") && e.contains("JSON pointer"),
            "{e}"
        );
        let e = err(r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "header"}}}"#);
        assert!(e.contains("key.name"), "{e}");
        let e = err(r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "time"}}}"#);
        assert!(e.contains("key.from"), "{e}");
        let e = err(
            r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "delivery": "maybe"}}"#,
        );
        assert!(e.contains("`shop`, field `delivery`"), "{e}");
        let e = err(
            r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "retention_hours": 0}}"#,
        );
        assert!(e.contains("retention_hours"), "{e}");
        let e = err(
            r#"{"shop": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "colour": 1}}"#,
        );
        assert!(e.contains("`shop`") && e.contains("colour"), "{e}");
        let e = err(r#"{"shop": {"key": {"from": "payload_sha256"}}}"#);
        assert!(e.contains("`shop`") && e.contains("signature"), "{e}");
        let e = err(
            r#"{"bad/name": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}}}"#,
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
    fn retention_must_outlast_the_queue() {
        let specs = SourceSpecs::parse(
            r#"{"short": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}, "retention_hours": 96},
                "long": {"signature": {"scheme": "none"}, "key": {"from": "payload_sha256"}}}"#,
        )
        .unwrap();
        let e = specs.check_retention(345_600).unwrap_err().to_string();
        assert!(
            e.contains("`short`") && e.contains("retention_hours"),
            "{e}"
        );
        assert!(specs.check_retention(345_599).is_ok());
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
}
