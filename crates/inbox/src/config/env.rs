//! The functions' environment variables, read once at cold start, with their defaults.

use super::ConfigError;

pub const DEFAULT_IN_PROGRESS_WAIT_MS: u64 = 1000;
pub const DEFAULT_MAX_BODY_BYTES: u64 = 262_144;
pub const DEFAULT_FORWARD_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_MAX_CONCURRENT_GROUPS: u64 = 8;
/// The largest `MAX_BODY_BYTES`. The queue's `MaximumMessageSize` (1 MiB in the template)
/// must hold the envelope: the body JSON-escaped or base64-encoded (4/3) plus headers.
pub const SQS_MAX_MESSAGE_BYTES: u64 = 262_144;

/// A required variable, or a start-up error naming it.
pub fn required(name: &'static str) -> Result<String, ConfigError> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or(ConfigError::MissingVar(name))
}

/// `QUEUE_RETENTION_SECONDS`: the queue's message retention, which every source's
/// `retention_hours` must outlast. Optional (unset: not checked); the template sets it.
pub fn queue_retention_seconds() -> Result<Option<u64>, ConfigError> {
    match std::env::var("QUEUE_RETENTION_SECONDS") {
        Err(_) => Ok(None),
        Ok(_) => number_or("QUEUE_RETENTION_SECONDS", 0).map(Some),
    }
}

/// An optional whole number with its default.
pub fn number_or(name: &'static str, default: u64) -> Result<u64, ConfigError> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => v.trim().parse().map_err(|_| ConfigError::BadVar {
            name,
            message: format!("`{v}` is not a whole number"),
        }),
    }
}

/// The receiver's settings: `LEDGER_TABLE`, `QUEUE_URL`, `IN_PROGRESS_WAIT_MS`, `MAX_BODY_BYTES`.
#[derive(Clone, Debug)]
pub struct ReceiverEnv {
    pub ledger_table: String,
    pub queue_url: String,
    pub in_progress_wait_ms: u64,
    pub max_body_bytes: u64,
}

impl ReceiverEnv {
    pub fn from_env() -> Result<Self, ConfigError> {
        let max_body_bytes = number_or("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)?;
        if max_body_bytes == 0 || max_body_bytes > SQS_MAX_MESSAGE_BYTES {
            return Err(ConfigError::BadVar {
                name: "MAX_BODY_BYTES",
                message: format!("must be between 1 and {SQS_MAX_MESSAGE_BYTES}"),
            });
        }
        Ok(Self {
            ledger_table: required("LEDGER_TABLE")?,
            queue_url: required("QUEUE_URL")?,
            in_progress_wait_ms: number_or("IN_PROGRESS_WAIT_MS", DEFAULT_IN_PROGRESS_WAIT_MS)?,
            max_body_bytes,
        })
    }
}

/// The consumer's settings: `LEDGER_TABLE`, `FORWARD_URL`, `FORWARD_TIMEOUT_MS`, `MAX_CONCURRENT_GROUPS`.
#[derive(Clone, Debug)]
pub struct ConsumerEnv {
    pub ledger_table: String,
    pub forward_url: String,
    pub forward_timeout_ms: u64,
    pub max_concurrent_groups: usize,
}

impl ConsumerEnv {
    pub fn from_env() -> Result<Self, ConfigError> {
        let groups = number_or("MAX_CONCURRENT_GROUPS", DEFAULT_MAX_CONCURRENT_GROUPS)?;
        if groups == 0 {
            return Err(ConfigError::BadVar {
                name: "MAX_CONCURRENT_GROUPS",
                message: "must be at least 1".into(),
            });
        }
        Ok(Self {
            ledger_table: required("LEDGER_TABLE")?,
            forward_url: required("FORWARD_URL")?,
            forward_timeout_ms: number_or("FORWARD_TIMEOUT_MS", DEFAULT_FORWARD_TIMEOUT_MS)?,
            max_concurrent_groups: usize::try_from(groups).unwrap_or(usize::MAX),
        })
    }
}
