//! `Destinations` as the consumer will read it (docs/routing.md), checked before the deploy:
//!
//! - parsed by the consumer's own parser ([`Routes::parse`], what it runs on
//!   `WEBHOOK_DESTINATIONS` at cold start) against the sources;
//! - what of each source's events no destination takes ([`Routes::gaps`]): with a
//!   `ForwardUrl` it goes there (said as passed); without one it goes nowhere (a warning), and
//!   a source whose every event would go nowhere is refused;
//! - each ARN target in its `Destination*Arns` list, the only ones the consumer may call (one
//!   missing there fails each event `MaxFailures` times, then dead-letters it);
//! - each `https://` destination's signing secret: a `secretsmanager:` reference that exists,
//!   that the consumer's role may read (`DestinationSecretArns`, else the stack's forward
//!   secret only) and that the consumer's own cold start accepts; none: signed with the
//!   forward secret; `"unsigned": true` is warned of;
//! - each EventBridge bus has an enabled rule whose pattern can take each source that routes
//!   there ([`bus_rules`]).

use aws_sdk_secretsmanager::error::DisplayErrorContext;
use inbox::config::{AwsSecretResolver, SecretRef};
use inbox::route::coverage::describe;
use inbox::route::{Routes, Target};
use inbox::SourceSpecs;

use super::access::arn_matches;
use super::report::Report;

/// The parameter the consumer's `WEBHOOK_DESTINATIONS` is.
pub const DESTINATIONS: &str = "Destinations";
/// The parameter of the secrets the consumer may read for its destinations.
pub const DESTINATION_SECRET_ARNS: &str = "DestinationSecretArns";
/// The parameter of the default destination.
const FORWARD_URL: &str = "ForwardUrl";

/// The list parameter that must name a target's ARN.
pub fn arn_parameter(target: &Target) -> Option<&'static str> {
    match target {
        Target::Https(_) => None,
        Target::EventBus { .. } => Some("DestinationBusArns"),
        Target::Queue { .. } => Some("DestinationQueueArns"),
        Target::Function { .. } => Some("DestinationFunctionArns"),
    }
}

/// The entries of a CommaDelimitedList value, trimmed, empty ones dropped.
fn entries(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect()
}

/// `Destinations` parsed as the consumer parses it (a refusal naming the destination and the
/// field otherwise); with no `ForwardUrl`, the routes know there is no default destination.
pub fn routes(
    parameters: &super::parameters::Parameters,
    specs: &SourceSpecs,
    report: &mut Report,
) -> Option<Routes> {
    let text = parameters.get(DESTINATIONS).unwrap_or_default();
    let routes = match Routes::parse(text, specs) {
        Ok(routes) => routes,
        Err(e) => {
            report.refuse(DESTINATIONS, e.to_string());
            return None;
        }
    };
    let forward = parameters
        .get(FORWARD_URL)
        .is_some_and(|u| !u.trim().is_empty());
    let count = routes.iter().count();
    if count > 0 {
        report.pass(format!(
            "{DESTINATIONS} parses as the consumer reads it: {count} destination{}",
            if count == 1 { "" } else { "s" }
        ));
    }
    Some(if forward {
        routes
    } else {
        routes.without_forward()
    })
}

/// What of each source's events no destination takes: to `ForwardUrl` where set; else a
/// warning naming the gaps, and a refusal where a source's every event would go nowhere.
pub fn check_coverage(routes: &Routes, specs: &SourceSpecs, report: &mut Report) {
    for spec in specs.iter() {
        let source = spec.name.as_str();
        let gaps = routes.gaps(source, &spec.event_type_metrics);
        if gaps.is_empty() {
            report.pass(format!(
                "source `{source}`: every event goes to a destination"
            ));
            continue;
        }
        let what = describe(&gaps);
        match (routes.has_forward(), routes.routes(source)) {
            (true, false) => {}
            (true, true) => report.pass(format!(
                "source `{source}`: what no destination takes ({what}) goes to {FORWARD_URL}"
            )),
            (false, true) => report.warn(
                DESTINATIONS,
                format!(
                    "{source}: {what} go nowhere ({FORWARD_URL} is empty): each such event completes with no call, counted by the metric Unrouted; route them, or set {FORWARD_URL}"
                ),
            ),
            (false, false) => report.refuse(
                FORWARD_URL,
                format!(
                    "empty, and no destination takes source `{source}`: its every event would go nowhere; set {FORWARD_URL} or route `{source}` in {DESTINATIONS}"
                ),
            ),
        }
    }
}

/// Each ARN target against its `Destination*Arns` list (IAM's matching, as the consumer's
/// policy will apply it).
pub fn check_arns(
    routes: &Routes,
    parameters: &super::parameters::Parameters,
    report: &mut Report,
) {
    for d in routes.iter() {
        let (Some(parameter), Some(arn)) = (arn_parameter(&d.target), d.target.arn()) else {
            continue;
        };
        let listed = entries(parameters.get(parameter).unwrap_or_default());
        match listed.iter().find(|p| arn_matches(p, arn)) {
            Some(entry) => report.pass(format!(
                "destination `{}`: the consumer may call {arn} ({parameter} entry {entry})",
                d.name
            )),
            None => report.refuse(
                parameter,
                format!(
                    "destination `{}`'s target {arn} is not in it: the consumer's role may not call it, so each event routed there would fail MaxFailures times and be dead-lettered; add it to {parameter}",
                    d.name
                ),
            ),
        }
    }
}

/// Who may be read: `DestinationSecretArns`' entries, else the stack's forward secret alone.
fn readable(parameters: &super::parameters::Parameters, stack: &str, region: &str) -> Vec<String> {
    let listed: Vec<String> = entries(parameters.get(DESTINATION_SECRET_ARNS).unwrap_or_default())
        .into_iter()
        .map(str::to_owned)
        .collect();
    if listed.is_empty() {
        vec![format!(
            "arn:*:secretsmanager:{region}:*:secret:{stack}/forward-signing-secret-??????"
        )]
    } else {
        listed
    }
}

/// Each `https://` destination's signing: its secrets exist, the consumer's role may read
/// them, and the consumer's own cold start takes them; none: the forward secret's;
/// `"unsigned": true` warned of.
pub async fn check_signing(
    routes: &Routes,
    parameters: &super::parameters::Parameters,
    stack: &str,
    region: &str,
    sdk: &aws_config::SdkConfig,
    report: &mut Report,
) {
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    let resolver = AwsSecretResolver::new(sdk);
    let readable = readable(parameters, stack, region);
    for d in routes.iter() {
        if !matches!(d.target, Target::Https(_)) {
            continue;
        }
        let name = d.name.as_str();
        if d.unsigned {
            report.warn(
                DESTINATIONS,
                format!("destination `{name}` is declared \"unsigned\": true: its receiver cannot tell the inbox's forwards from anyone's"),
            );
            continue;
        }
        if d.signing_secrets.is_empty() {
            report.pass(format!(
                "destination `{name}` is signed with the stack's forward secret (no signing_secret of its own)"
            ));
            continue;
        }
        let before = report.problem_count();
        for reference in &d.signing_secrets {
            let id = match reference {
                SecretRef::Env(var) => {
                    report.refuse(DESTINATIONS, format!(
                        "destination `{name}`, signing_secret `{reference}`: an env: reference cannot be deployed (the consumer has no variable {var}); store it in Secrets Manager"
                    ));
                    continue;
                }
                SecretRef::SecretsManager(id) => id,
            };
            match client.describe_secret().secret_id(id).send().await {
                Ok(out) => {
                    let arn = out.arn().unwrap_or_default();
                    if !readable.iter().any(|p| arn_matches(p, arn)) {
                        report.refuse(DESTINATION_SECRET_ARNS, format!(
                            "destination `{name}`'s signing secret {arn}: the consumer's role may not read it ({}), so the consumer would stop at cold start for every source; list it in {DESTINATION_SECRET_ARNS}, or drop signing_secret to sign with the stack's forward secret",
                            readable.join(", ")
                        ));
                    }
                }
                Err(e) => {
                    let why = if e
                        .as_service_error()
                        .is_some_and(|se| se.is_resource_not_found_exception())
                    {
                        format!("no such secret in {region}")
                    } else {
                        format!("DescribeSecret: {}", DisplayErrorContext(e))
                    };
                    report.refuse(
                        DESTINATIONS,
                        format!("destination `{name}`, signing_secret `{reference}`: {why}"),
                    );
                }
            }
        }
        if report.problem_count() == before {
            // The consumer's own cold start of this destination's signer.
            match inbox::app::forward_signer(&d.signing_secrets, &resolver).await {
                Ok(_) => report.pass(format!(
                    "destination `{name}`'s signing secrets exist, are whsec_ keys and are readable by the consumer"
                )),
                Err(e) => report.refuse(DESTINATIONS, format!("destination `{name}`: {e}")),
            }
        }
    }
}

/// Each EventBridge bus destination: an enabled rule on the bus whose pattern can take the
/// events of each source routed there (`source` `webhook-inbox.<source>`). A bus with none
/// drops every event while its pair reads COMPLETED. Read with `ListRules`; each pattern's
/// `source` field is matched here (exact values and `prefix`; a pattern with no `source`, or
/// another operator on it, may match and counts as taking it), since `TestEventPattern` is
/// not on every endpoint (the local server lacks it). Warnings only.
pub async fn check_buses(routes: &Routes, sdk: &aws_config::SdkConfig, report: &mut Report) {
    let client = aws_sdk_eventbridge::Client::new(sdk);
    for d in routes.iter() {
        let Target::EventBus { arn } = &d.target else {
            continue;
        };
        let mut patterns = Vec::new();
        let mut token = None;
        loop {
            let page = client
                .list_rules()
                .event_bus_name(arn)
                .set_next_token(token.take())
                .send()
                .await;
            match page {
                Ok(out) => {
                    patterns.extend(out.rules().iter().filter_map(|r| {
                        let enabled = r.state().is_none_or(|s| s.as_str().starts_with("ENABLED"));
                        enabled.then(|| r.event_pattern().map(str::to_owned))
                    }));
                    token = out.next_token().map(str::to_owned);
                    if token.is_none() {
                        break;
                    }
                }
                Err(e) => {
                    report.warn(
                        DESTINATIONS,
                        format!(
                            "destination `{}`: the rules of bus {arn} could not be read ({}): check it has a rule for {}",
                            d.name,
                            aws_sdk_eventbridge::error::DisplayErrorContext(e),
                            sources_text(&d.sources)
                        ),
                    );
                    patterns.clear();
                    break;
                }
            }
        }
        for source in &d.sources {
            let event_source = format!("webhook-inbox.{source}");
            let taken = patterns
                .iter()
                .any(|p| p.as_deref().is_none_or(|p| takes_source(p, &event_source)));
            if taken {
                report.pass(format!(
                    "destination `{}`: bus {arn} has an enabled rule for source {event_source}",
                    d.name
                ));
            } else {
                report.warn(DESTINATIONS, format!(
                    "destination `{}`: bus {arn} has no enabled rule whose pattern takes source {event_source}: EventBridge drops every such event while its pair reads COMPLETED; add a rule",
                    d.name
                ));
            }
        }
    }
}

fn sources_text(sources: &std::collections::BTreeSet<String>) -> String {
    sources
        .iter()
        .map(|s| format!("webhook-inbox.{s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether an event pattern's `source` field can take `source`: absent (any source), a value
/// equal to it, `{"prefix": p}` that it starts with, or any other operator (not decided here:
/// counted as taking it). An unreadable pattern takes nothing.
pub fn takes_source(pattern: &str, source: &str) -> bool {
    let Ok(serde_json::Value::Object(pattern)) = serde_json::from_str(pattern) else {
        return false;
    };
    let Some(field) = pattern.get("source") else {
        return true;
    };
    let Some(values) = field.as_array() else {
        return false;
    };
    values.iter().any(|v| match v {
        serde_json::Value::String(s) => s == source,
        serde_json::Value::Object(op) => match op.get("prefix").and_then(|p| p.as_str()) {
            Some(prefix) => source.starts_with(prefix),
            None => true,
        },
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_takes_a_source_by_value_prefix_or_no_source_field() {
        let s = "webhook-inbox.stripe";
        assert!(takes_source(r#"{"source": ["webhook-inbox.stripe"]}"#, s));
        assert!(takes_source(
            r#"{"source": [{"prefix": "webhook-inbox."}]}"#,
            s
        ));
        assert!(takes_source(r#"{"detail-type": ["invoice.paid"]}"#, s));
        assert!(takes_source(r#"{"source": [{"anything-but": "x"}]}"#, s));
        assert!(!takes_source(r#"{"source": ["webhook-inbox.github"]}"#, s));
        assert!(!takes_source(r#"{"source": [{"prefix": "aws."}]}"#, s));
        assert!(!takes_source("not json", s));
    }
}
