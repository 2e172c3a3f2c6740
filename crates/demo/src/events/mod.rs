//! The sample Lambda events in `events/` and what each one must get back.
//!
//! `make events` (the `make-events` binary) writes them; the checked-in files are its output.
//! Receiver events are API Gateway HTTP API (payload v2) requests for the demo sources
//! ([`TEST_SOURCES`], secrets [`devstack::testkit::TEST_SECRET`] and
//! [`devstack::testkit::TEST_WHSEC`]), signed the way each sender signs; consumer events are SQS
//! FIFO batches whose bodies are envelopes as the receiver writes them.
//!
//! Stripe and Standard Webhooks sign a timestamp that is stale `tolerance_seconds` (300) after
//! it was made, so the events that carry one depend on the time they were generated at;
//! everything else is fixed, and regenerating changes only those files.
//!
//! One file per sender's samples (`github`, `stripe`, `standard_webhooks`, `shopify`,
//! `orders`), the requests refused before any signature is read (`routing`), the consumer's
//! batches (`sqs`); [`Expected`] is what each must get back, [`readme_table`] the page that
//! lists them.

use std::path::{Path, PathBuf};

use inbox::config::SourceSpecs;
use serde_json::Value;

use devstack::testkit::TEST_SOURCES;

mod expected;
mod github;
mod orders;
mod readme;
mod request;
mod routing;
mod shopify;
mod sqs;
mod standard_webhooks;
mod stripe;

pub use expected::Expected;
pub use readme::readme_table;
pub use sqs::accept_sample;

/// The instant of everything that does not go stale: 2026-12-01T00:00:00Z.
pub const FIXED_EPOCH_S: i64 = 1_796_083_200;
/// How old a timestamped event may be before its signature is refused (the sources' tolerance).
pub const STALE_AFTER_S: i64 = 300;
/// How far back the `*-expired` events are signed.
pub const EXPIRED_BY_S: i64 = 600;
/// The queue the SQS events claim to come from.
pub const QUEUE_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:webhook-inbox-webhooks.fifo";

/// Which function an event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Receiver,
    Consumer,
}

impl Function {
    /// The binary, as `cargo lambda invoke <name>` and the emulator know it.
    pub fn name(self) -> &'static str {
        match self {
            Function::Receiver => "receiver",
            Function::Consumer => "consumer",
        }
    }
}

/// One sample event.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The file name under `events/`.
    pub file: String,
    pub function: Function,
    /// The Lambda event, as `cargo lambda invoke --data-file` sends it.
    pub event: Value,
    pub expected: Expected,
    /// What it shows, for the README.
    pub shows: String,
    /// Signed with a timestamp: stale [`STALE_AFTER_S`] after it was generated.
    pub timestamped: bool,
}

impl Sample {
    /// The file's text: pretty JSON and a final newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.event).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// `events/` at the workspace root.
pub fn events_dir() -> PathBuf {
    devstack::moto::workspace_root().join("events")
}

/// Every sample, generated at `now_s` (epoch seconds), in the order to invoke them: a first
/// delivery before its duplicate.
pub fn generate(now_s: i64) -> Vec<Sample> {
    let specs = SourceSpecs::parse(TEST_SOURCES).expect("the demo sources parse");
    let mut out = Vec::new();
    github::samples(&mut out);
    stripe::samples(&mut out, now_s);
    standard_webhooks::samples(&mut out, now_s);
    shopify::samples(&mut out);
    orders::samples(&mut out);
    routing::samples(&mut out);
    sqs::samples(&mut out, &specs);
    out
}

/// Writes every sample into `dir`, removing `*.json` files that are not samples any more.
pub fn write_all(dir: &Path, samples: &[Sample]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".json") && !samples.iter().any(|s| s.file == name) {
            std::fs::remove_file(&path)?;
        }
    }
    for s in samples {
        std::fs::write(dir.join(&s.file), s.text())?;
    }
    Ok(())
}

/// The generation time of timestamped files: `requestContext.timeEpoch` of one of them.
pub fn generated_at(event: &Value) -> Option<i64> {
    event
        .pointer("/requestContext/timeEpoch")
        .and_then(Value::as_i64)
        .map(|ms| ms.div_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_names_are_unique() {
        let a = generate(FIXED_EPOCH_S + 50);
        let b = generate(FIXED_EPOCH_S + 50);
        assert_eq!(
            a.iter().map(Sample::text).collect::<Vec<_>>(),
            b.iter().map(Sample::text).collect::<Vec<_>>()
        );
        let mut names: Vec<&str> = a.iter().map(|s| s.file.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), a.len());
        for s in &a {
            if s.timestamped {
                assert_eq!(
                    generated_at(&s.event),
                    Some(FIXED_EPOCH_S + 50),
                    "{}",
                    s.file
                );
            }
        }
    }
}
