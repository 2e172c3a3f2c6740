//! One entry of `WEBHOOK_SOURCES`, read and checked field by field into a [`SourceSpec`].
//! Every error names the source and the field; the checks run in the order the fields are
//! documented (signature, key, group, delivery, retention, payload mismatch).

use serde::Deserialize;
use serde_json::Value;

use crate::signature::Scheme;

use super::batch::parse_batch;
use super::presets;
use super::secrets::SecretRef;
use super::signature::{parse_scheme, RawSignature};
use super::spec::{
    AcceptedAnswer, BodyCheck, Delivery, EventTypeSpec, GroupSpec, Handshake, KeySpec,
    OnPayloadMismatch, SignatureRefusal, SourceSpec,
};
use super::{
    field_error, ConfigError, DEFAULT_RETENTION_HOURS, DEFAULT_TOLERANCE_SECONDS,
    MAX_RETENTION_HOURS, MAX_TOLERANCE_SECONDS,
};

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
    #[serde(default)]
    allow_unsigned: Option<bool>,
    #[serde(default)]
    replay_guard_seconds: Option<u64>,
    /// `true` / `false`: archive this source's envelopes (over `ARCHIVE_BODIES`).
    #[serde(default)]
    archive: Option<bool>,
    #[serde(default)]
    event_type: Option<RawEventType>,
    #[serde(default)]
    handshake: Option<String>,
    #[serde(default)]
    public_url: Option<String>,
    #[serde(default)]
    verify_token: Option<String>,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    body_check: Option<String>,
    /// `true`: the secret is stored after the deploy (`inbox-ops secret set`).
    #[serde(default)]
    pending: Option<bool>,
    /// Several events per body (docs/design.md §14).
    #[serde(default)]
    batch: Option<super::batch::RawBatch>,
    #[serde(default)]
    on_invalid_signature: Option<String>,
    /// Per-attempt members left out of the payload hash.
    #[serde(default)]
    attempt_fields: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSelector {
    from: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    names: Option<Vec<String>>,
    #[serde(default)]
    pointers: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEventType {
    from: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    pointer: Option<String>,
    #[serde(default)]
    metric_types: Option<Vec<String>>,
}

/// The source called `name`, from its entry (its preset's fields filled in first).
#[allow(
    clippy::too_many_lines,
    reason = "one parse per field of the entry, in the order they constrain each other"
)]
pub(super) fn parse_source(name: &str, value: Value) -> Result<SourceSpec, ConfigError> {
    check_name(name)?;
    let expanded = presets::expand(name, value)?;
    let raw: RawSource = serde_json::from_value(expanded.entry)
        .map_err(|e| field_error(name, "(entry)", e.to_string()))?;
    let scheme = parse_scheme(name, &raw.signature)?;
    scheme
        .check()
        .map_err(|message| field_error(name, "signature", message))?;
    check_allow_unsigned(name, &scheme, raw.allow_unsigned)?;
    let secrets = parse_secrets(
        name,
        &scheme,
        &raw.signature.secrets,
        raw.handshake.as_deref(),
    )?;
    let delivery = parse_delivery(name, raw.delivery.as_deref())?;
    let retention_hours = parse_retention(name, raw.retention_hours)?;
    let replay_guard_seconds = parse_replay_guard(
        name,
        &scheme,
        delivery,
        retention_hours,
        raw.replay_guard_seconds,
    )?;
    let handshake = parse_handshake(name, raw.handshake.as_deref(), &scheme)?;
    let pending = parse_pending(name, raw.pending, &secrets)?;
    let key = parse_key(name, raw.key)?;
    let batch = parse_batch(
        name,
        raw.batch,
        &key,
        &scheme,
        delivery,
        replay_guard_seconds,
    )?;
    Ok(SourceSpec {
        attempt_fields: parse_attempt_fields(name, raw.attempt_fields, &key)?,
        pending,
        batch,
        name: name.to_owned(),
        tolerance_seconds: parse_tolerance(name, &scheme, raw.signature.tolerance_seconds)?,
        public_url: parse_public_url(name, &scheme, raw.public_url)?,
        verify_token: parse_verify_token(name, handshake, raw.verify_token.as_deref())?,
        scheme,
        secrets,
        key,
        group: parse_group(name, raw.group)?,
        delivery,
        retention_hours,
        on_payload_mismatch: parse_on_payload_mismatch(name, raw.on_payload_mismatch.as_deref())?,
        replay_guard_seconds,
        archive: raw.archive,
        min_secret_bytes: expanded
            .min_secret_bytes
            .unwrap_or(crate::signature::MIN_SECRET_BYTES),
        preset: expanded.preset,
        overrides: expanded.overrides,
        event_type_metrics: parse_metric_types(name, raw.event_type.as_ref())?,
        event_type: raw
            .event_type
            .map(|e| parse_event_type(name, e))
            .transpose()?,
        handshake,
        answer: parse_choice(
            name,
            "answer",
            raw.answer.as_deref(),
            &AcceptedAnswer::ALL,
            |a| a.name(),
        )?
        .unwrap_or_default(),
        body_check: parse_choice(
            name,
            "body_check",
            raw.body_check.as_deref(),
            &BodyCheck::ALL,
            |c| c.name(),
        )?,
        on_invalid_signature: parse_choice(
            name,
            "on_invalid_signature",
            raw.on_invalid_signature.as_deref(),
            &SignatureRefusal::ALL,
            |r| r.name(),
        )?
        .unwrap_or_default(),
    })
}

/// The most `attempt_fields` a source may list.
const MAX_ATTEMPT_FIELDS: usize = 8;

/// `attempt_fields`: each a JSON pointer to an object member (`/attemptNumber`), at most
/// [`MAX_ATTEMPT_FIELDS`], none on a key pointer's path (a key must not drop out of the hash
/// that guards it), only with a key read from a JSON body or a header (Linear's
/// `Linear-Delivery` beside its per-attempt `webhookTimestamp`); never with the body hash as
/// the key, nor a form's.
fn parse_attempt_fields(
    source: &str,
    raw: Option<Vec<String>>,
    key: &KeySpec,
) -> Result<Vec<String>, ConfigError> {
    let field = "attempt_fields";
    let Some(fields) = raw else {
        return Ok(Vec::new());
    };
    if fields.is_empty() || fields.len() > MAX_ATTEMPT_FIELDS {
        return Err(field_error(
            source,
            field,
            format!("1 to {MAX_ATTEMPT_FIELDS} JSON pointers"),
        ));
    }
    let pointers: &[String] = match key {
        KeySpec::Json(pointers) => pointers,
        KeySpec::Header(_) => &[],
        KeySpec::PayloadSha256 | KeySpec::Form(_) => {
            return Err(field_error(
                source,
                field,
                "only with a key read from the JSON body (`from: json`) or a header",
            ))
        }
    };
    for f in &fields {
        if !f.starts_with('/') || f.len() < 2 || f.chars().any(char::is_control) {
            return Err(field_error(
                source,
                field,
                format!("`{f}` is not a JSON pointer to a member"),
            ));
        }
        let on_key_path = pointers
            .iter()
            .any(|p| p == f || p.starts_with(&format!("{f}/")) || f.starts_with(&format!("{p}/")));
        if on_key_path {
            return Err(field_error(
                source,
                field,
                format!("`{f}` is on a key pointer's path"),
            ));
        }
    }
    Ok(fields)
}

/// A field that names one of a few choices (`answer`, `body_check`, `on_invalid_signature`);
/// unset is `None`.
fn parse_choice<T: Copy>(
    source: &str,
    field: &'static str,
    text: Option<&str>,
    all: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<Option<T>, ConfigError> {
    let Some(text) = text else {
        return Ok(None);
    };
    all.iter()
        .copied()
        .find(|c| name(*c) == text)
        .map(Some)
        .ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|c| name(*c)).collect();
            unknown(source, field, text, &known.join(", "))
        })
}

/// `handshake`: one of the providers' URL checks (docs/providers.md). Zoom's and X's answer
/// an HMAC with the source's key, so they need an HMAC scheme.
fn parse_handshake(
    name: &str,
    handshake: Option<&str>,
    scheme: &Scheme,
) -> Result<Option<Handshake>, ConfigError> {
    let Some(text) = handshake else {
        return Ok(None);
    };
    let handshake = Handshake::from_name(text).ok_or_else(|| {
        let known: Vec<&str> = Handshake::ALL.iter().map(|h| h.name()).collect();
        unknown(name, "handshake", text, &known.join(", "))
    })?;
    let needs_hmac = matches!(handshake, Handshake::Zoom | Handshake::X | Handshake::Asana);
    if needs_hmac && !scheme.is_hmac() {
        return Err(field_error(
            name,
            "handshake",
            format!("the {text} handshake needs an HMAC scheme"),
        ));
    }
    Ok(Some(handshake))
}

/// `public_url`: an `https://` URL without a query or fragment, needed exactly where the
/// scheme signs `{url}`.
fn parse_public_url(
    name: &str,
    scheme: &Scheme,
    url: Option<String>,
) -> Result<Option<String>, ConfigError> {
    let signs_url = scheme.signs_url();
    match url {
        None if signs_url => Err(field_error(
            name,
            "public_url",
            "the scheme signs the URL the sender calls: set `public_url` to the source's WebhookUrl",
        )),
        None => Ok(None),
        Some(_) if !signs_url => Err(field_error(
            name,
            "public_url",
            "the scheme signs no URL: `public_url` would check nothing",
        )),
        Some(url) => {
            let ok = url.starts_with("https://")
                && url.len() > "https://".len()
                && !url.contains(['?', '#'])
                && url.bytes().all(|b| b.is_ascii_graphic());
            if ok {
                Ok(Some(url))
            } else {
                Err(field_error(
                    name,
                    "public_url",
                    "an https:// URL without a query or fragment",
                ))
            }
        }
    }
}

/// `verify_token`: Meta's, by reference, exactly with the meta handshake.
fn parse_verify_token(
    name: &str,
    handshake: Option<Handshake>,
    token: Option<&str>,
) -> Result<Option<SecretRef>, ConfigError> {
    match (handshake == Some(Handshake::Meta), token) {
        (true, None) => Err(field_error(
            name,
            "verify_token",
            "the meta handshake needs `verify_token` (a reference `env:NAME` or `secretsmanager:NAME_OR_ARN`)",
        )),
        (false, Some(_)) => Err(field_error(
            name,
            "verify_token",
            "only goes with the meta handshake",
        )),
        (false, None) => Ok(None),
        (true, Some(text)) => SecretRef::parse(text).map(Some).ok_or_else(|| {
            field_error(
                name,
                "verify_token",
                "a reference `env:NAME` or `secretsmanager:NAME_OR_ARN`, never the token itself",
            )
        }),
    }
}

/// The most types `event_type.metric_types` lists: each is a CloudWatch dimension value.
const MAX_METRIC_TYPES: usize = 50;

/// `event_type.metric_types`: the types counted with their own `event_type` dimension.
fn parse_metric_types(name: &str, raw: Option<&RawEventType>) -> Result<Vec<String>, ConfigError> {
    let types = raw.and_then(|e| e.metric_types.clone()).unwrap_or_default();
    let usable = |t: &String| {
        !t.is_empty() && t.len() <= 128 && t != "other" && !t.chars().any(char::is_control)
    };
    if types.len() > MAX_METRIC_TYPES || !types.iter().all(usable) {
        return Err(field_error(
            name,
            "event_type.metric_types",
            format!("at most {MAX_METRIC_TYPES} types of 1 to 128 characters, none called `other` (the rest are counted as `other`)"),
        ));
    }
    Ok(types)
}

fn parse_event_type(name: &str, raw: RawEventType) -> Result<EventTypeSpec, ConfigError> {
    match (raw.from.as_str(), raw.name, raw.pointer) {
        ("header", Some(header), None) => http::HeaderName::from_bytes(header.as_bytes())
            .map(EventTypeSpec::Header)
            .map_err(|_| {
                field_error(name, "event_type.name", format!("`{header}` is not a header name"))
            }),
        ("json", None, Some(pointer)) if pointer.starts_with('/') => {
            Ok(EventTypeSpec::Json(pointer))
        }
        ("form", Some(field), None) if !field.is_empty() => Ok(EventTypeSpec::Form(field)),
        ("header" | "json" | "form", _, _) => Err(field_error(
            name,
            "event_type",
            "`from: header` and `from: form` take a `name`, `from: json` a `pointer` (starting with '/')",
        )),
        (other, _, _) => Err(unknown(name, "event_type.from", other, "header, json, form")),
    }
}

/// A value that is none of the field's choices.
fn unknown(source: &str, field: &'static str, value: &str, choices: &str) -> ConfigError {
    field_error(source, field, format!("unknown `{value}` ({choices})"))
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

/// `signature.secrets`: references only, none for scheme `none`, at least one otherwise.
fn parse_secrets(
    name: &str,
    scheme: &Scheme,
    texts: &[String],
    handshake: Option<&str>,
) -> Result<Vec<SecretRef>, ConfigError> {
    let secrets = texts
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
    let problem = match (scheme, secrets.is_empty()) {
        (Scheme::None, false) => Some("scheme `none` takes no secrets"),
        // Asana's secret comes with its handshake (docs/providers.md, "asana").
        (_, true) if handshake == Some("asana") => None,
        (s, true) if *s != Scheme::None => {
            Some("at least one secret is needed (list several to rotate)")
        }
        _ => None,
    };
    match problem {
        Some(message) => Err(field_error(name, "signature.secrets", message)),
        None => Ok(secrets),
    }
}

/// `pending`: the source's secret may be stored after the deploy (a sender that issues it
/// only once the URL exists: Stripe, Slack). It needs a `secretsmanager:` reference, the only
/// kind a running receiver can see filled in (an `env:` variable is fixed at deploy).
fn parse_pending(
    name: &str,
    pending: Option<bool>,
    secrets: &[SecretRef],
) -> Result<bool, ConfigError> {
    let pending = pending.unwrap_or(false);
    let stored_later = secrets
        .iter()
        .any(|s| matches!(s, SecretRef::SecretsManager(_)));
    if pending && !stored_later {
        return Err(field_error(
            name,
            "pending",
            "a pending source needs a `secretsmanager:` secret (the one `inbox-ops secret set` stores); an `env:` variable or no secret cannot be stored after the deploy",
        ));
    }
    Ok(pending)
}

/// `allow_unsigned`: scheme `none` needs it, `true`, written out; no other scheme takes it.
fn check_allow_unsigned(
    name: &str,
    scheme: &Scheme,
    allow_unsigned: Option<bool>,
) -> Result<(), ConfigError> {
    match (*scheme == Scheme::None, allow_unsigned) {
        (true, Some(true)) | (false, None) => Ok(()),
        (true, _) => Err(field_error(
            name,
            "allow_unsigned",
            "scheme `none` accepts anyone's requests: it needs `\"allow_unsigned\": true` on the source",
        )),
        (false, Some(_)) => Err(field_error(
            name,
            "allow_unsigned",
            "only goes with scheme `none`",
        )),
    }
}

/// `replay_guard_seconds`: only on a scheme that signs the body alone (the others sign an id
/// or a timestamp), only with the ledger, at least 1 s and at most the retention (the guard
/// item lives in the ledger table).
fn parse_replay_guard(
    name: &str,
    scheme: &Scheme,
    delivery: Delivery,
    retention_hours: u64,
    seconds: Option<u64>,
) -> Result<Option<u64>, ConfigError> {
    let Some(seconds) = seconds else {
        return Ok(None);
    };
    let field = "replay_guard_seconds";
    if !scheme.signs_body_only() {
        return Err(field_error(
            name,
            field,
            format!(
                "only for the schemes that sign the body alone (github, shopify, hmac-sha256), not `{}`",
                scheme.name()
            ),
        ));
    }
    if delivery == Delivery::AtMostOnce {
        return Err(field_error(
            name,
            field,
            "needs the ledger: not with `at_most_once`",
        ));
    }
    let retention = retention_hours.saturating_mul(3600);
    if seconds == 0 || seconds > retention {
        return Err(field_error(
            name,
            field,
            format!("must be between 1 and the retention ({retention} s)"),
        ));
    }
    Ok(Some(seconds))
}

/// `signature.tolerance_seconds`: 1 s to an hour, and only on a scheme that signs a timestamp.
fn parse_tolerance(
    name: &str,
    scheme: &Scheme,
    tolerance: Option<u64>,
) -> Result<u64, ConfigError> {
    if tolerance.is_some() && !scheme.has_timestamp() {
        return Err(field_error(
            name,
            "signature.tolerance_seconds",
            format!(
                "scheme `{}` signs no timestamp: a tolerance would check nothing",
                scheme.name()
            ),
        ));
    }
    match tolerance.unwrap_or(DEFAULT_TOLERANCE_SECONDS) {
        0 => Err(field_error(
            name,
            "signature.tolerance_seconds",
            "must be at least 1",
        )),
        seconds if seconds > MAX_TOLERANCE_SECONDS => Err(field_error(
            name,
            "signature.tolerance_seconds",
            format!("{seconds} is over an hour ({MAX_TOLERANCE_SECONDS}): a captured request would stay valid that long"),
        )),
        seconds => Ok(seconds),
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
    if let Some(pointer) = pointers.iter().find(|p| !p.starts_with('/')) {
        return Err(field_error(
            source,
            field,
            format!("`{pointer}` is not a JSON pointer (it must start with '/')"),
        ));
    }
    Ok(pointers)
}

fn parse_key(name: &str, key: RawSelector) -> Result<KeySpec, ConfigError> {
    match key.from.as_str() {
        "header" => {
            let header = key.name.as_deref().ok_or_else(|| {
                field_error(name, "key.name", "`from: header` needs the header `name`")
            })?;
            let header = http::HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
                field_error(name, "key.name", format!("`{header}` is not a header name"))
            })?;
            Ok(KeySpec::Header(header))
        }
        "json" => Ok(KeySpec::Json(parse_pointers(
            name,
            "key.pointers",
            key.pointers,
        )?)),
        "payload_sha256" => Ok(KeySpec::PayloadSha256),
        "form" => match key.names {
            Some(names) if !names.is_empty() && names.iter().all(|n| !n.is_empty()) => {
                Ok(KeySpec::Form(names))
            }
            _ => Err(field_error(
                name,
                "key.names",
                "`from: form` needs a non-empty `names` list",
            )),
        },
        other => Err(unknown(
            name,
            "key.from",
            other,
            "header, json, form, payload_sha256",
        )),
    }
}

fn parse_group(name: &str, group: Option<RawSelector>) -> Result<GroupSpec, ConfigError> {
    let Some(group) = group else {
        return Ok(GroupSpec::Key);
    };
    match group.from.as_str() {
        "key" => Ok(GroupSpec::Key),
        "json" => Ok(GroupSpec::Json(parse_pointers(
            name,
            "group.pointers",
            group.pointers,
        )?)),
        other => Err(unknown(name, "group.from", other, "key, json")),
    }
}

fn parse_delivery(name: &str, delivery: Option<&str>) -> Result<Delivery, ConfigError> {
    match delivery {
        None | Some("effectively_once") => Ok(Delivery::EffectivelyOnce),
        Some("at_most_once") => Ok(Delivery::AtMostOnce),
        Some(other) => Err(unknown(
            name,
            "delivery",
            other,
            "effectively_once, at_most_once",
        )),
    }
}

fn parse_retention(name: &str, hours: Option<u64>) -> Result<u64, ConfigError> {
    match hours.unwrap_or(DEFAULT_RETENTION_HOURS) {
        0 => Err(field_error(name, "retention_hours", "must be at least 1")),
        hours if hours > MAX_RETENTION_HOURS => Err(field_error(
            name,
            "retention_hours",
            format!("{hours} is over ten years ({MAX_RETENTION_HOURS} hours)"),
        )),
        hours => Ok(hours),
    }
}

fn parse_on_payload_mismatch(
    name: &str,
    policy: Option<&str>,
) -> Result<OnPayloadMismatch, ConfigError> {
    match policy {
        None | Some("accept") => Ok(OnPayloadMismatch::Accept),
        Some("reject") => Ok(OnPayloadMismatch::Reject),
        Some(other) => Err(unknown(
            name,
            "on_payload_mismatch",
            other,
            "accept, reject",
        )),
    }
}
