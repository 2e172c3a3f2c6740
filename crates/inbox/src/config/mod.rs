//! The configuration, checked once at start-up: `WEBHOOK_SOURCES` (one JSON object, one entry
//! per source) and the functions' environment variables.
//!
//! Parsing happens in two steps so that the consumer, which verifies nothing, never has to
//! read a secret: [`SourceSpecs::parse`] checks every field, [`SourceSpecs::resolve`] reads
//! the secrets (`env:` or `secretsmanager:`) and builds the signature verifiers.
//!
//! - [`spec`]: what a source declares ([`SourceSpec`], [`KeySpec`], [`GroupSpec`], ...).
//! - `source`: reading and checking one entry, field by field.
//! - [`secrets`]: secret references and their resolver.
//! - [`env`]: the functions' environment variables and their defaults.

use std::collections::BTreeMap;

use crate::signature::Verifier;

mod batch;
pub mod env;
pub mod presets;
pub mod secrets;
mod signature;
mod source;
pub mod spec;
#[cfg(test)]
mod tests;
pub mod vars;

pub use batch::{DEFAULT_MAX_EVENTS, MAX_BATCH_EVENTS};
pub use secrets::{AwsSecretResolver, SecretRef, SecretResolver};
pub use spec::{
    AcceptedAnswer, BatchFormat, BatchSpec, BodyCheck, Delivery, EventTypeSpec, GroupSpec,
    Handshake, KeySpec, OnPayloadMismatch, SignatureRefusal, SourceSpec,
};

/// The longest event type carried (docs/design.md §5): a longer one is no type at all.
pub const MAX_EVENT_TYPE_BYTES: usize = 256;

/// Default `tolerance_seconds` of timestamped schemes.
pub const DEFAULT_TOLERANCE_SECONDS: u64 = 300;
/// The longest `tolerance_seconds`: an hour.
pub const MAX_TOLERANCE_SECONDS: u64 = 3600;
/// Default `retention_hours`: eleven days, the template's retention chain
/// ([`retention_chain_seconds`]: the queue's 4 days, the dead-letter queue's 6, a day to redrive).
pub const DEFAULT_RETENTION_HOURS: u64 = 264;

/// The time an operator has to redrive a dead letter after the dead-letter queue would have
/// expired it: a day.
pub const REDRIVE_MARGIN_SECONDS: u64 = 86_400;

/// How long after its receipt an accepted event's message may still come back, at most: the
/// queue's retention (a message may wait that long, then be dead-lettered), then the
/// dead-letter queue's, counted from the dead-letter copy (the consumer dead-letters with a
/// new `SendMessage`, so that clock starts at the copy, not at the receipt), then the redrive
/// margin. Without a dead-letter queue (`None`), the queue's retention alone. The ledger's
/// `retention_hours` and the payload bucket's objects must outlast it, or a redriven event
/// finds its key forgotten (and runs again) or its body gone.
pub fn retention_chain_seconds(queue_seconds: u64, dlq_seconds: Option<u64>) -> u64 {
    queue_seconds
        .saturating_add(dlq_seconds.map_or(0, |d| d.saturating_add(REDRIVE_MARGIN_SECONDS)))
}
/// The longest `retention_hours`: ten years. Far beyond any queue or archive, and small
/// enough that the retention in milliseconds, added to any clock reading, cannot wrap.
pub const MAX_RETENTION_HOURS: u64 = 87_600;
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
    #[error("WEBHOOK_SOURCES names source `{0}` more than once (only one entry per source)")]
    DuplicateSource(String),
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

/// Every source, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpecs(BTreeMap<String, SourceSpec>);

impl SourceSpecs {
    /// Parses and checks `WEBHOOK_SOURCES`.
    pub fn parse(json: &str) -> Result<SourceSpecs, ConfigError> {
        // Entries read in order, duplicates kept: a JSON object read into a map keeps only
        // the last of two entries of one name, silently.
        let crate::json_fields::Entries(entries) =
            serde_json::from_str(json).map_err(|e| ConfigError::NotAnObject(e.to_string()))?;
        if entries.is_empty() {
            return Err(ConfigError::NoSources);
        }
        let mut specs = BTreeMap::new();
        for (name, value) in entries {
            if specs.contains_key(&name) {
                return Err(ConfigError::DuplicateSource(name));
            }
            let spec = source::parse_source(&name, value)?;
            specs.insert(name, spec);
        }
        Ok(SourceSpecs(specs))
    }

    pub fn get(&self, name: &str) -> Option<&SourceSpec> {
        self.0.get(name)
    }

    /// Every effectively-once source remembers its keys at least `chain_seconds`
    /// ([`retention_chain_seconds`] of `QUEUE_RETENTION_SECONDS` and `DLQ_RETENTION_SECONDS`,
    /// which the template sets from the queues), or a message still on a queue, or redriven,
    /// could outlive its ledger item and run twice.
    pub fn check_retention(&self, chain_seconds: u64) -> Result<(), ConfigError> {
        for spec in self.0.values() {
            let remembered = spec.retention_hours.saturating_mul(3600);
            if spec.delivery == Delivery::EffectivelyOnce && remembered < chain_seconds {
                return Err(field_error(
                    &spec.name,
                    "retention_hours",
                    format!(
                        "{} hours does not outlast the retention chain ({chain_seconds} s: the queue's message retention, then the dead-letter queue's from the dead-letter copy, then a {REDRIVE_MARGIN_SECONDS} s redrive margin)",
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
            let source = Source::resolve(spec, resolver).await?;
            sources.insert(name, source);
        }
        Ok(Sources(sources))
    }
}

/// A source ready to verify requests. Its `Debug` never shows a secret: the verifier says how
/// many keys it holds, the verify token only whether there is one.
pub struct Source {
    pub spec: SourceSpec,
    /// The verifier of the configured secrets; `None` only for a source whose secret its
    /// handshake establishes (Asana's), until then.
    pub verifier: Option<Verifier>,
    /// `verify_token`, read (Meta's handshake).
    pub verify_token: Option<String>,
    /// [`SourceSpec::envelope_headers`], worked out once at start-up, not per request.
    pub envelope_headers: Vec<String>,
    /// [`secrets_digest`] of the secrets read at start-up (empty: none read).
    pub(crate) secrets_digest: String,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("spec", &self.spec)
            .field("verifier", &self.verifier)
            .field(
                "verify_token",
                &self.verify_token.as_ref().map(|_| "<redacted>"),
            )
            .field("envelope_headers", &self.envelope_headers)
            .finish()
    }
}

impl Source {
    /// Reads the source's secrets and builds its verifier. A `pending` source whose secrets
    /// cannot be read yet, or do not check, starts without a verifier ([`Source::awaiting`]):
    /// its requests wait (503) while the others run; any other source stops start-up.
    async fn resolve<R: SecretResolver>(
        spec: SourceSpec,
        resolver: &R,
    ) -> Result<Self, ConfigError> {
        let (verifier, secrets_digest) = match read_verifier(&spec, resolver).await {
            Ok(read) => read,
            Err(message) if spec.pending => {
                tracing::warn!(
                    source = %spec.name,
                    error = SOURCE_PENDING_CODE,
                    reason = %message,
                    "source `{}` is pending: its requests are answered 503 until its secret is stored (inbox-ops secret set {})",
                    spec.name,
                    spec.name
                );
                (None, String::new())
            }
            Err(message) => return Err(field_error(&spec.name, "signature.secrets", message)),
        };
        if spec.scheme == crate::signature::Scheme::None {
            tracing::warn!(
                source = %spec.name,
                "source `{}` is unsigned (scheme none, allow_unsigned): anyone who knows its URL can post, and claim its keys",
                spec.name
            );
        }
        let verify_token = match &spec.verify_token {
            None => None,
            Some(reference) => {
                let token = resolver
                    .resolve(reference)
                    .await
                    .map_err(|message| field_error(&spec.name, "verify_token", message))?;
                check_verify_token(&token)
                    .map_err(|message| field_error(&spec.name, "verify_token", message))?;
                Some(token)
            }
        };
        let envelope_headers = spec.envelope_headers();
        Ok(Source {
            spec,
            verifier,
            verify_token,
            envelope_headers,
            secrets_digest,
        })
    }

    /// Whether this is a `pending` source whose secret is not stored yet (as read at start-up).
    pub fn awaiting(&self) -> bool {
        self.verifier.is_none() && !self.spec.secrets.is_empty()
    }

    /// A verifier of this source's scheme with the secret its handshake established.
    pub fn verifier_with(&self, secret: String) -> Result<Verifier, String> {
        Verifier::new(
            self.spec.scheme.clone(),
            vec![secret],
            self.spec.tolerance_seconds,
        )
        .map(|v| v.each_event_at(self.spec.each_event_signed_at()))
    }
}

/// The `error` code of a request to a pending source whose secret is not stored yet (503).
pub const SOURCE_PENDING_CODE: &str = "source_pending";

/// The verifier of `spec`'s secrets, each read through `resolver` and checked for the scheme
/// (`None` for a source whose handshake establishes its secret, Asana's), and the digest of
/// the values read ([`secrets_digest`]); the message names the secret by position, never its
/// value. Start-up and the receiver's re-reads (`crate::receiver`) both build it here.
pub async fn read_verifier<R: SecretResolver>(
    spec: &SourceSpec,
    resolver: &R,
) -> Result<(Option<Verifier>, String), String> {
    let secrets = secret_values(&spec.secrets, resolver).await?;
    let digest = secrets_digest(&secrets);
    if secrets.is_empty() && spec.handshake == Some(Handshake::Asana) {
        return Ok((None, digest));
    }
    verifier_from(spec, secrets).map(|v| (Some(v), digest))
}

/// Each reference's value, in order, or why one could not be read.
pub async fn secret_values<R: SecretResolver>(
    references: &[SecretRef],
    resolver: &R,
) -> Result<Vec<String>, String> {
    let mut values = Vec::with_capacity(references.len());
    for reference in references {
        values.push(resolver.resolve(reference).await?);
    }
    Ok(values)
}

/// The verifier of `spec`'s scheme over these values, each checked for the scheme first.
pub fn verifier_from(spec: &SourceSpec, secrets: Vec<String>) -> Result<Verifier, String> {
    for (index, secret) in secrets.iter().enumerate() {
        crate::signature::check_secret_length_at_least(
            &spec.scheme,
            index + 1,
            secret,
            spec.min_secret_bytes,
        )?;
    }
    Verifier::new(spec.scheme.clone(), secrets, spec.tolerance_seconds)
        .map(|v| v.each_event_at(spec.each_event_signed_at()))
}

/// What tells two reads of a source's secrets apart without keeping them: the SHA-256 of the
/// values, each length-prefixed.
pub fn secrets_digest(values: &[String]) -> String {
    let mut joined = Vec::new();
    for value in values {
        joined.extend_from_slice(&u64::try_from(value.len()).unwrap_or(u64::MAX).to_be_bytes());
        joined.extend_from_slice(value.as_bytes());
    }
    crate::key::sha256_hex(&joined)
}

/// The fewest characters a handshake's shared token (Meta's `verify_token`) may have: whoever
/// guesses it has the receiver echo a text of their choosing from the inbox's own URL.
pub const MIN_VERIFY_TOKEN_CHARS: usize = 16;

/// A verify token, read: at least [`MIN_VERIFY_TOKEN_CHARS`] characters; the message says how
/// many it has, never what they are.
pub fn check_verify_token(token: &str) -> Result<(), String> {
    let chars = token.chars().count();
    if chars < MIN_VERIFY_TOKEN_CHARS {
        return Err(format!(
            "the token read is {chars} character(s); at least {MIN_VERIFY_TOKEN_CHARS} are needed (a random one: `openssl rand -hex 16`)"
        ));
    }
    Ok(())
}

/// Every source, with its secrets read.
#[derive(Debug)]
pub struct Sources(BTreeMap<String, Source>);

impl Sources {
    pub fn get(&self, name: &str) -> Option<&Source> {
        self.0.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Source> {
        self.0.values()
    }
}
