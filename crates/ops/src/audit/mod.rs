//! The audit: every source in `WEBHOOK_SOURCES`, asked three questions (what happens when it
//! arrives twice, what identifies a repeat, what the sender is told when we fail), with the
//! answers derived from the configuration and template.yaml rather than written by hand, and
//! the decisions worth a second look flagged; and the forward to the system of record, which
//! every source shares (signed or not: [`Forwarding`]).
//!
//! `make audit` (or `inbox-ops audit [--sources FILE] [--template FILE] [--json]`).
//! The sources come from `--sources FILE`, else the `WEBHOOK_SOURCES` environment variable,
//! else the `WebhookSources` parameter default in template.yaml.
//!
//! This module derives the answers and the flags; [`Report`] (report.rs) renders them as a
//! table or JSON.

mod forwarding;
mod report;
pub mod routing;

use anyhow::{anyhow, Context as _};
use clap::Args;
use inbox::config::{Delivery, GroupSpec, KeySpec, OnPayloadMismatch, SourceSpec, SourceSpecs};
use inbox::signature::Scheme;
use std::path::PathBuf;

pub use self::forwarding::{Forwarding, FORWARD_UNSIGNED, MAX_FAILURES_PARAMETER};
pub use self::report::Report;
pub use self::routing::Routing;
use stack_config::{template_path, Template};

/// `audit`'s arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct AuditArgs {
    /// The sources configuration (JSON, as WEBHOOK_SOURCES takes it).
    #[arg(long = "sources", value_name = "FILE")]
    pub sources_file: Option<PathBuf>,
    /// The SAM template [default: template.yaml at the workspace root].
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The consumer's signing secret references, as it would read them [default: as the
    /// template sets them]; blank: unsigned, which is flagged.
    #[arg(long, env = "FORWARD_SIGNING_SECRET", value_name = "REFERENCES")]
    pub forward_signing_secret: Option<String>,
    /// The destinations (JSON, as WEBHOOK_DESTINATIONS takes it) [default:
    /// $WEBHOOK_DESTINATIONS, else the template's Destinations default].
    #[arg(long = "destinations", value_name = "FILE")]
    pub destinations_file: Option<PathBuf>,
    /// The stack's ForwardUrl, the default destination; blank: none, and what no destination
    /// takes goes nowhere, which is flagged [default: assumed set].
    #[arg(long, env = "FORWARD_URL", value_name = "URL")]
    pub forward_url: Option<String>,
}

/// The template parameter whose default is the shipped source configuration.
pub const SOURCES_PARAMETER: &str = "WebhookSources";
/// Below this, a sender's ordinary retry schedule (hours of backoff) outlives the key.
pub const MIN_RETENTION_HOURS: u64 = 24;

/// Headers whose value changes with every delivery (or with the clock): a key taken from one
/// cannot recognise a repeat.
const PER_DELIVERY_HEADERS: &[&str] = &[
    "date",
    "x-request-id",
    "x-amzn-requestid",
    "x-amzn-trace-id",
    "x-amz-date",
    "traceparent",
    "x-correlation-id",
    "webhook-timestamp",
    "x-slack-request-timestamp",
];

/// A decision the audit wants a human to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flag {
    /// Signature scheme `none`: anyone who knows the URL can post.
    Unsigned,
    /// The key is the body's SHA-256: a sender that changes the body between retries
    /// (a timestamp, a retry counter) defeats it.
    PayloadHashKey,
    /// Remembered for less than a day: shorter than most senders' retry schedules.
    ShortRetention,
    /// Remembered for less than the retention chain (the queue, then the dead-letter queue
    /// from the dead-letter move, then a day to redrive): a message could outlive its ledger
    /// item and run twice.
    RetentionUnderChain,
    /// Declared at-most-once: no ledger, a failure is dropped, a repeat after SQS's
    /// five-minute window runs again.
    AtMostOnce,
    /// The key header changes with every delivery: no repeat will ever match.
    PerDeliveryKey,
    /// The scheme signs the body alone, the key is not the body's hash and no
    /// `replay_guard_seconds` is set: a captured request verifies again under any fresh
    /// delivery id, as a new event.
    NoReplayGuard,
    /// No payload bucket (`PAYLOAD_BUCKET`): a body whose envelope would not fit the queue's
    /// 1 MiB is refused with 413 (a GitHub push of many commits: an event gone).
    LargeBodiesRefused,
    /// A shared token or basic auth: the secret itself travels in every request.
    SecretInRequest,
    /// The signature does not cover the body (Mailgun's: a token and a timestamp).
    BodyNotSigned,
}

impl Flag {
    pub const ALL: [Flag; 10] = [
        Flag::Unsigned,
        Flag::PayloadHashKey,
        Flag::ShortRetention,
        Flag::RetentionUnderChain,
        Flag::AtMostOnce,
        Flag::PerDeliveryKey,
        Flag::NoReplayGuard,
        Flag::LargeBodiesRefused,
        Flag::SecretInRequest,
        Flag::BodyNotSigned,
    ];

    /// Stable machine name (the `--json` output).
    pub fn code(self) -> &'static str {
        match self {
            Flag::Unsigned => "unsigned",
            Flag::PayloadHashKey => "payload_hash_key",
            Flag::ShortRetention => "retention_under_a_day",
            Flag::RetentionUnderChain => "retention_under_chain",
            Flag::AtMostOnce => "at_most_once",
            Flag::PerDeliveryKey => "per_delivery_key",
            Flag::NoReplayGuard => "no_replay_guard",
            Flag::LargeBodiesRefused => "large_bodies_refused",
            Flag::SecretInRequest => "secret_in_request",
            Flag::BodyNotSigned => "body_not_signed",
        }
    }

    /// What it means, for a person.
    pub fn explain(self) -> &'static str {
        match self {
            Flag::Unsigned => {
                "signature scheme `none`: nothing proves the sender; anyone who knows the URL can post"
            }
            Flag::PayloadHashKey => {
                "key is the body's SHA-256: a sender that alters the body between retries is not recognised as repeating"
            }
            Flag::ShortRetention => {
                "retention under a day: a sender still retrying after that is taken for a new event"
            }
            Flag::RetentionUnderChain => {
                "retention shorter than the queue's, the dead-letter queue's and a day to redrive: a redriven message could outlive its ledger item and run twice (the functions refuse to start with it)"
            }
            Flag::AtMostOnce => {
                "declared at-most-once: no ledger; a failed side effect is dropped, a repeat after five minutes runs again"
            }
            Flag::PerDeliveryKey => {
                "key header changes with every delivery (a request id or a time): no repeat will ever match"
            }
            Flag::NoReplayGuard => {
                "the scheme signs the body alone and no replay_guard_seconds is set: a captured request resent under a fresh delivery id is a new event"
            }
            Flag::LargeBodiesRefused => {
                "no PAYLOAD_BUCKET: a body whose envelope would not fit the queue's 1 MiB is refused with 413; a sender that does not retry (GitHub) loses it"
            }
            Flag::SecretInRequest => {
                "a shared token or basic auth: weaker than a signature, the secret itself travels in every request (and a changed body is not detected)"
            }
            Flag::BodyNotSigned => {
                "the signature covers a token and a timestamp, not the body: a captured signature could carry another body"
            }
        }
    }
}

/// What template.yaml says about the queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFacts {
    /// The webhook queue's `MessageRetentionPeriod`, seconds.
    pub retention_seconds: u32,
    /// The dead-letter queue's `MessageRetentionPeriod`, seconds.
    pub dlq_retention_seconds: u32,
    /// `RedrivePolicy.maxReceiveCount`: a safety net.
    pub max_receive_count: u32,
    /// Real failures before the consumer dead-letters an event (`MaxFailures`).
    pub max_failures: u32,
    /// The webhook queue's `VisibilityTimeout`, seconds.
    pub visibility_timeout: u32,
    /// Whether the receiver gets a `PAYLOAD_BUCKET` (bodies over the queue's 1 MiB).
    pub payload_bucket: bool,
}

impl QueueFacts {
    /// How long a message can still be redriven after receipt: the functions' own rule
    /// ([`inbox::config::retention_chain_seconds`]).
    pub fn chain_seconds(&self) -> u64 {
        inbox::config::retention_chain_seconds(
            u64::from(self.retention_seconds),
            Some(u64::from(self.dlq_retention_seconds)),
        )
    }

    pub fn from_template(template: &Template) -> QueueFacts {
        QueueFacts {
            retention_seconds: template.queue_retention_seconds(),
            dlq_retention_seconds: template.dlq_retention_seconds(),
            max_receive_count: template.max_receive_count(),
            max_failures: template
                .parameter_default(MAX_FAILURES_PARAMETER)
                .and_then(serde_yaml::Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(inbox::consumer::DEFAULT_MAX_FAILURES),
            visibility_timeout: template.queue_visibility_timeout(),
            payload_bucket: template
                .function_env_names(RECEIVER_FUNCTION)
                .iter()
                .any(|n| n == "PAYLOAD_BUCKET"),
        }
    }
}

/// The receiver's logical id in template.yaml.
pub const RECEIVER_FUNCTION: &str = "ReceiverFunction";

/// The flags for one source, in [`Flag::ALL`] order.
pub fn flags(spec: &SourceSpec, queue: &QueueFacts) -> Vec<Flag> {
    let retention_seconds = spec.retention_hours.saturating_mul(3600);
    let per_delivery = matches!(&spec.key, KeySpec::Header(name)
        if PER_DELIVERY_HEADERS.contains(&name.as_str()));
    let raised = [
        spec.scheme == Scheme::None,
        spec.key == KeySpec::PayloadSha256,
        spec.retention_hours < MIN_RETENTION_HOURS,
        // At most once keeps no ledger item, so its retention protects nothing.
        spec.delivery == Delivery::EffectivelyOnce && retention_seconds < queue.chain_seconds(),
        spec.delivery == Delivery::AtMostOnce,
        per_delivery,
        // Keyed on the body's hash, a resent body is the same key: a duplicate, never new.
        spec.scheme.signs_body_only()
            && spec.delivery == Delivery::EffectivelyOnce
            && spec.replay_guard_seconds.is_none()
            && spec.key != KeySpec::PayloadSha256,
        !queue.payload_bucket,
        spec.scheme.sends_secret(),
        spec.scheme != Scheme::None && !spec.scheme.sends_secret() && !spec.scheme.covers_body(),
    ];
    Flag::ALL
        .into_iter()
        .zip(raised)
        .filter_map(|(flag, up)| up.then_some(flag))
        .collect()
}

/// One source, audited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceAudit {
    pub source: String,
    pub signature: String,
    /// Which key identifies a repeat.
    pub repeat_key: String,
    /// What sets the FIFO group.
    pub group: String,
    pub delivery: &'static str,
    pub retention_hours: u64,
    /// What happens if it arrives twice.
    pub arrives_twice: String,
    /// What we return (and do) when we fail.
    pub on_failure: String,
    pub flags: Vec<Flag>,
}

/// The scheme, and the preset with each field the source set over it.
fn signature_text(spec: &SourceSpec) -> String {
    let scheme = scheme_text(spec);
    match &spec.preset {
        None => scheme,
        Some(preset) if spec.overrides.is_empty() => format!("preset {preset}: {scheme}"),
        Some(preset) => format!(
            "preset {preset} (overridden: {}): {scheme}",
            spec.overrides.join(", ")
        ),
    }
}

fn scheme_text(spec: &SourceSpec) -> String {
    match &spec.scheme {
        Scheme::None => "none".to_owned(),
        scheme if scheme.has_timestamp() => {
            format!("{} (±{} s)", spec.scheme.name(), spec.tolerance_seconds)
        }
        Scheme::HmacSha256(h) => format!("hmac-sha256 ({})", h.header),
        other => other.name().to_owned(),
    }
}

pub(crate) fn hours(seconds: impl Into<u64>) -> String {
    let seconds: u64 = seconds.into();
    if seconds.is_multiple_of(3600) {
        format!("{} h", seconds / 3600)
    } else {
        // Rounded to a tenth, as before the chain (a u64 of seconds is exact in an f64 far
        // beyond any retention).
        format!("{:.1} h", seconds as f64 / 3600.0)
    }
}

/// Audits one source against the queue's facts.
pub fn audit_source(spec: &SourceSpec, queue: &QueueFacts) -> SourceAudit {
    let repeat_key = match &spec.batch {
        None => format!("{} -> `{}:<value>`", spec.key.describe(), spec.name),
        // docs/design.md §14: each event of the batch keyed in itself.
        Some(batch) => format!(
            "{} of each event of {} -> `{}:<value>` per event",
            spec.key.describe(),
            batch.describe(),
            spec.name
        ),
    };
    let group = match &spec.group {
        GroupSpec::Key => "the key (per-event order)".to_owned(),
        GroupSpec::Json(pointers) => format!("body {} (ordered per value)", pointers.join(" + ")),
    };
    let mismatch = match spec.on_payload_mismatch {
        OnPayloadMismatch::Accept => {
            "a different body under the same key is replayed too and counted as PayloadMismatch"
        }
        OnPayloadMismatch::Reject => {
            "a different body under the same key gets 422 payload_mismatch"
        }
    };
    let (delivery, arrives_twice, on_failure) = match spec.delivery {
        Delivery::EffectivelyOnce => (
            "effectively once",
            format!(
                "the receiver's claim finds the key and replays the first answer (200, Idempotent-Replayed: true) without queueing again; \
                 {mismatch}; a second copy on the queue finds the key COMPLETED and is acknowledged without the side effect; \
                 remembered {} h, after which the same key is a new event",
                spec.retention_hours
            ),
            format!(
                "receiver: 500 after releasing the claim (the sender retries and finds the key free), a duplicate behind a live claim sends the event itself (same deduplication id) and replays, \
                 401 bad signature, 400 missing key; consumer: FAILED with last_error, redelivered after the visibility timeout ({} s), \
                 to the dead-letter queue after {} real failures, kept {} (a 429 or 503 waits for its Retry-After and counts as no failure, \
                 and the queue's maxReceiveCount of {} is only a safety net)",
                queue.visibility_timeout,
                queue.max_failures,
                hours(queue.dlq_retention_seconds),
                queue.max_receive_count
            ),
        ),
        Delivery::AtMostOnce => (
            "at most once (declared)",
            "no ledger: SQS drops a copy with the same deduplication id within five minutes; a later copy is queued and runs again".to_owned(),
            "receiver: 500 when SQS refuses the message (the sender retries), 401 bad signature, 400 missing key; \
             consumer: a failed side effect is logged, counted as Failed and dropped, never retried"
                .to_owned(),
        ),
    };
    SourceAudit {
        source: spec.name.clone(),
        signature: signature_text(spec),
        repeat_key,
        group,
        delivery,
        retention_hours: spec.retention_hours,
        arrives_twice,
        on_failure,
        flags: flags(spec, queue),
    }
}

/// Runs the audit; `env_sources` is `WEBHOOK_SOURCES` as the environment has it. The output
/// on success; on error, a message that names what is wrong (a configuration error's own text).
pub fn run(opts: &AuditArgs, env_sources: Option<String>) -> anyhow::Result<String> {
    let template_file = opts.template.clone().unwrap_or_else(template_path);
    let template_file = std::fs::canonicalize(&template_file).unwrap_or(template_file);
    let template = Template::load(&template_file)?;
    let (origin, text) = match (&opts.sources_file, env_sources) {
        (Some(file), _) => (
            file.display().to_string(),
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?,
        ),
        (None, Some(text)) if !text.trim().is_empty() => ("$WEBHOOK_SOURCES".to_owned(), text),
        (None, _) => {
            let default = template
                .parameter_default(SOURCES_PARAMETER)
                .and_then(serde_yaml::Value::as_str)
                .ok_or_else(|| {
                    anyhow!(
                        "{} has no string default for parameter {SOURCES_PARAMETER}",
                        template_file.display()
                    )
                })?;
            (
                format!(
                    "the {SOURCES_PARAMETER} default in {}",
                    template_file.display()
                ),
                default.to_owned(),
            )
        }
    };
    let specs = SourceSpecs::parse(&text).map_err(|e| anyhow!("{e} (sources from {origin})"))?;
    let forwarding = Forwarding::new(opts.forward_signing_secret.as_deref(), &template)?;
    let routing = routing_of(opts, &template, &specs)?;
    let report = Report::new(&specs, QueueFacts::from_template(&template), origin)
        .with_forwarding(forwarding)
        .with_routing(routing);
    Ok(if opts.json {
        format!("{:#}\n", report.to_json())
    } else {
        report.to_table()
    })
}

/// The routes: `--destinations FILE`, else `$WEBHOOK_DESTINATIONS`, else the template's
/// `Destinations` default; `FORWARD_URL` as given (blank: none), else assumed set.
fn routing_of(
    opts: &AuditArgs,
    template: &Template,
    specs: &SourceSpecs,
) -> anyhow::Result<Routing> {
    let (origin, text) = match &opts.destinations_file {
        Some(file) => (
            file.display().to_string(),
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?,
        ),
        None => match std::env::var(inbox::route::DESTINATIONS_VAR) {
            Ok(text) if !text.trim().is_empty() => ("$WEBHOOK_DESTINATIONS".to_owned(), text),
            _ => (
                "the Destinations default in the template".to_owned(),
                template
                    .parameter_default("Destinations")
                    .and_then(serde_yaml::Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
        },
    };
    let (forward, forward_origin) = match &opts.forward_url {
        Some(url) if url.trim().is_empty() => (false, "FORWARD_URL given blank".to_owned()),
        Some(_) => (true, "FORWARD_URL as given".to_owned()),
        None => (
            true,
            "FORWARD_URL assumed set (--forward-url '' audits a stack without one)".to_owned(),
        ),
    };
    Routing::new(&text, origin, specs, forward, forward_origin)
}

#[cfg(test)]
mod tests;
