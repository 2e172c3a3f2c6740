//! The functions' environment variables, read once at cold start, through the one table
//! that describes them ([`super::vars`]), with their defaults.

use super::secrets::SecretRef;
use super::vars::{var, Function};
use super::ConfigError;
use crate::test_ca::{TestCa, TEST_CA_ENV};

/// The most real failures `MAX_FAILURES` may ask for before a dead letter.
pub const MAX_MAX_FAILURES: u64 = 1000;
/// The largest body a synchronous Lambda request payload (6,291,456 bytes) carries through
/// API Gateway: 6 MiB less 32 KiB for the JSON of the API Gateway event around the body
/// (docs/design.md §12). A base64-encoded body (`isBase64Encoded`) fits 3/4 of it decoded:
/// [`MAX_BASE64_BODY_BYTES`].
pub const DEFAULT_MAX_BODY_BYTES: u64 = LAMBDA_SYNC_PAYLOAD_BYTES - API_GATEWAY_EVENT_ROOM;
/// A synchronous Lambda invocation's request payload limit (6 MB, in bytes).
pub const LAMBDA_SYNC_PAYLOAD_BYTES: u64 = 6_291_456;
/// Room left for the API Gateway event's JSON around the body (headers, request context).
pub const API_GATEWAY_EVENT_ROOM: u64 = 32_768;
/// The largest body API Gateway can hand over base64-encoded, decoded: 3/4 of the default.
pub const MAX_BASE64_BODY_BYTES: u64 = DEFAULT_MAX_BODY_BYTES / 4 * 3;
/// The replay cache's size (`REPLAY_CACHE_KEYS`): keys one warm receiver remembers.
pub const DEFAULT_REPLAY_CACHE_KEYS: u64 = 10_000;
/// The replay cache's size in bytes (`REPLAY_CACHE_BYTES`): 8 MiB, a small part of the
/// receiver's 128 MB however long its keys (`inbox::replay_cache::entry_bytes`).
pub const DEFAULT_REPLAY_CACHE_BYTES: u64 = 8 * 1024 * 1024;
/// The replay cache's maximum age (`REPLAY_CACHE_SECONDS`).
pub const DEFAULT_REPLAY_CACHE_SECONDS: u64 = 300;
pub const DEFAULT_FORWARD_TIMEOUT_MS: u64 = 10_000;
/// The longest `FORWARD_TIMEOUT_MS`: Lambda's longest function timeout, 15 minutes.
pub const MAX_FORWARD_TIMEOUT_MS: u64 = 900_000;
pub const DEFAULT_MAX_CONCURRENT_GROUPS: u64 = 8;
pub const DEFAULT_MAX_FAILURES: u64 = crate::defaults::DEFAULT_MAX_FAILURES as u64;
/// The largest `MAX_BODY_BYTES`: nothing larger reaches a synchronous Lambda invocation.
/// Bodies whose envelope does not fit the queue (1 MiB) go to `PAYLOAD_BUCKET`.
pub const MAX_BODY_BYTES_LIMIT: u64 = LAMBDA_SYNC_PAYLOAD_BYTES;

/// A required variable, or a start-up error naming it.
pub fn required(name: &'static str) -> Result<String, ConfigError> {
    var(name, Function::Both).required()
}

/// `QUEUE_RETENTION_SECONDS`: the queue's message retention, which every source's
/// `retention_hours` must outlast. Optional (unset: not checked); the template sets it.
pub fn queue_retention_seconds() -> Result<Option<u64>, ConfigError> {
    var("QUEUE_RETENTION_SECONDS", Function::Both).optional_number()
}

/// `DLQ_RETENTION_SECONDS`, where set: the dead-letter queue's message retention.
pub fn dlq_retention_seconds() -> Result<Option<u64>, ConfigError> {
    var("DLQ_RETENTION_SECONDS", Function::Both).optional_number()
}

/// `PAYLOAD_RETENTION_DAYS`, where set: how long the payload bucket keeps an object.
pub fn payload_retention_days() -> Result<Option<u64>, ConfigError> {
    var("PAYLOAD_RETENTION_DAYS", Function::Both).optional_number()
}

/// The payload bucket's objects outlast the retention chain (`chain_seconds`,
/// [`crate::config::retention_chain_seconds`]): a redriven dead letter still finds its body.
pub fn check_payload_retention(days: u64, chain_seconds: u64) -> Result<(), ConfigError> {
    if days.saturating_mul(86_400) < chain_seconds {
        return Err(ConfigError::BadVar {
            name: "PAYLOAD_RETENTION_DAYS",
            message: format!(
                "{days} days does not outlast the retention chain ({chain_seconds} s): a redriven dead letter would find its body expired"
            ),
        });
    }
    Ok(())
}

/// The receiver's settings: `LEDGER_TABLE`, `QUEUE_URL`, `MAX_BODY_BYTES`, `PAYLOAD_BUCKET`,
/// `REPLAY_CACHE_KEYS`, `REPLAY_CACHE_BYTES`, `REPLAY_CACHE_SECONDS`.
#[derive(Clone, Debug)]
pub struct ReceiverEnv {
    pub ledger_table: String,
    pub queue_url: String,
    pub max_body_bytes: u64,
    /// `PAYLOAD_BUCKET`: where bodies too big for the queue go. Unset: such bodies are
    /// refused with 413.
    pub payload_bucket: Option<String>,
    pub replay_cache_keys: u64,
    pub replay_cache_bytes: u64,
    pub replay_cache_seconds: u64,
    /// `HTTPS_TEST_CA_FILE` (tests only): one more CA the key fetches trust.
    pub test_ca: Option<TestCa>,
}

/// `ARCHIVE_BODIES`: `true` or `false` (unset: false).
pub fn archive_bodies() -> Result<bool, ConfigError> {
    var("ARCHIVE_BODIES", Function::Consumer).flag()
}

impl ReceiverEnv {
    pub fn from_env() -> Result<Self, ConfigError> {
        let v = |name| var(name, Function::Receiver);
        Ok(Self {
            max_body_bytes: v("MAX_BODY_BYTES").number()?,
            ledger_table: v("LEDGER_TABLE").required()?,
            queue_url: v("QUEUE_URL").required()?,
            payload_bucket: v("PAYLOAD_BUCKET").text(),
            replay_cache_keys: v("REPLAY_CACHE_KEYS").number()?,
            replay_cache_bytes: v("REPLAY_CACHE_BYTES").number()?,
            replay_cache_seconds: v("REPLAY_CACHE_SECONDS").number()?,
            test_ca: test_ca()?,
        })
    }
}

/// `HTTPS_TEST_CA_FILE` (tests only), read and checked once, logged at WARN when set
/// ([`crate::test_ca`]); a bad file stops start-up naming the variable.
pub fn test_ca() -> Result<Option<TestCa>, ConfigError> {
    TestCa::from_setting(var(TEST_CA_ENV, Function::Both).text()).map_err(|message| {
        ConfigError::BadVar {
            name: TEST_CA_ENV,
            message,
        }
    })
}

/// An optional variable: `None` when unset or blank.
pub fn optional(name: &'static str) -> Option<String> {
    var(name, Function::Both).text()
}

/// The consumer's settings: `LEDGER_TABLE`, `FORWARD_URL`, `FORWARD_TIMEOUT_MS`,
/// `MAX_CONCURRENT_GROUPS`, `FORWARD_SIGNING_SECRET`, `QUEUE_URL`, `DLQ_URL`, `MAX_FAILURES`.
#[derive(Clone, Debug)]
pub struct ConsumerEnv {
    pub ledger_table: String,
    /// `FORWARD_URL`, the default destination: every event no destination takes. Unset or
    /// blank: none; such an event goes nowhere and is counted `Unrouted` (docs/routing.md).
    pub forward_url: Option<String>,
    pub forward_timeout_ms: u64,
    pub max_concurrent_groups: usize,
    /// `FORWARD_SIGNING_SECRET`: the references of the secrets forwards are signed with (each
    /// a `whsec_` secret; several during a rotation). Empty: forwards are unsigned.
    pub forward_signing_secrets: Vec<SecretRef>,
    /// `QUEUE_URL`: the queue whose messages a throttle delays. Unset: a throttled message
    /// comes back after the visibility timeout.
    pub queue_url: Option<String>,
    /// `DLQ_URL`: where the consumer moves a message after `MAX_FAILURES` real failures.
    /// Unset: only the queue's `maxReceiveCount` dead-letters.
    pub dlq_url: Option<String>,
    /// `MAX_FAILURES`: real failures of a key before its message is dead-lettered (at least 1).
    pub max_failures: u32,
    /// `PAYLOAD_BUCKET`: where the bodies behind envelope pointers are read from, and where
    /// an envelope too big for a Firehose record is archived.
    pub payload_bucket: Option<String>,
    /// `ARCHIVE_BODIES`: archive every source's envelopes (a source's `archive` overrides it).
    pub archive_bodies: bool,
    /// `ARCHIVE_STREAM`: the Firehose delivery stream the archive goes through.
    pub archive_stream: Option<String>,
    /// `HTTPS_TEST_CA_FILE` (tests only): one more CA the forward and every `https://`
    /// destination trust.
    pub test_ca: Option<TestCa>,
}

/// `FORWARD_SIGNING_SECRET`: comma-separated secret references, or nothing.
pub fn forward_signing_secrets() -> Result<Vec<SecretRef>, ConfigError> {
    match var("FORWARD_SIGNING_SECRET", Function::Consumer).text() {
        Some(text) => parse_forward_signing_secrets(&text),
        None => Ok(Vec::new()),
    }
}

/// The references in a `FORWARD_SIGNING_SECRET` value (blank: none).
pub fn parse_forward_signing_secrets(text: &str) -> Result<Vec<SecretRef>, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(str::trim)
        .map(|part| {
            SecretRef::parse(part).ok_or_else(|| ConfigError::BadVar {
                name: "FORWARD_SIGNING_SECRET",
                message: format!(
                    "`{part}` is not a secret reference (env:NAME or secretsmanager:NAME_OR_ARN, comma-separated)"
                ),
            })
        })
        .collect()
}

/// `FORWARD_TIMEOUT_MS`: 0 would time out every forward before it is sent (each key failing
/// until it is dead-lettered); over [`MAX_FORWARD_TIMEOUT_MS`] no invocation lasts that long.
pub fn check_forward_timeout_ms(ms: u64) -> Result<u64, ConfigError> {
    var("FORWARD_TIMEOUT_MS", Function::Consumer).check(ms)
}

impl ConsumerEnv {
    pub fn from_env() -> Result<Self, ConfigError> {
        let v = |name| var(name, Function::Consumer);
        let groups = v("MAX_CONCURRENT_GROUPS").number()?;
        let max_failures = v("MAX_FAILURES").number()?;
        Ok(Self {
            ledger_table: v("LEDGER_TABLE").required()?,
            forward_url: v("FORWARD_URL").text(),
            forward_timeout_ms: v("FORWARD_TIMEOUT_MS").number()?,
            max_concurrent_groups: usize::try_from(groups).unwrap_or(usize::MAX),
            forward_signing_secrets: forward_signing_secrets()?,
            queue_url: v("QUEUE_URL").text(),
            dlq_url: v("DLQ_URL").text(),
            max_failures: u32::try_from(max_failures).unwrap_or(u32::MAX),
            payload_bucket: v("PAYLOAD_BUCKET").text(),
            archive_bodies: archive_bodies()?,
            archive_stream: v("ARCHIVE_STREAM").text(),
            test_ca: test_ca()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_signing_secrets_are_comma_separated_references() {
        assert_eq!(parse_forward_signing_secrets("  "), Ok(Vec::new()));
        assert_eq!(
            parse_forward_signing_secrets(
                "env:A, secretsmanager:arn:aws:secretsmanager:x:1:secret:s"
            ),
            Ok(vec![
                SecretRef::Env("A".into()),
                SecretRef::SecretsManager("arn:aws:secretsmanager:x:1:secret:s".into())
            ])
        );
        let e = parse_forward_signing_secrets("env:A,whsec_abc")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("FORWARD_SIGNING_SECRET") && e.contains("not a secret reference"),
            "{e}"
        );
        let e = parse_forward_signing_secrets("env:A,")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`` is not a secret reference"), "{e}");
    }
}
