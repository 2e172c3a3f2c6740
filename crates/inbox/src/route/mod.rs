//! Destinations and their routes (docs/routing.md): `WEBHOOK_DESTINATIONS`, one JSON object,
//! one entry per destination: its target, the sources that feed it, and a filter on the
//! event type. A source no destination names keeps the single `FORWARD_URL` forward.
//!
//! Each (event, destination) pair has its own ledger item, [`destination_key`], moved through
//! the same transitions as an event's (docs/design.md §13).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;

use crate::config::{ConfigError, Delivery, SecretRef, SourceSpecs};

pub mod coverage;
pub mod filter;
pub mod target;

pub use coverage::Gap;
pub use filter::{Filter, Pattern};
pub use target::Target;

/// The variable the destinations are read from.
pub const DESTINATIONS_VAR: &str = "WEBHOOK_DESTINATIONS";

/// The ledger item of one (event, destination) pair: the event's key, a space, `to:` and the
/// destination's name. An event key never holds a space (docs/design.md §1), so no event key
/// is ever a destination item's, and the pair reads back from it.
pub fn destination_key(key: &str, destination: &str) -> String {
    format!("{key} to:{destination}")
}

/// A destination, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    pub name: String,
    pub target: Target,
    /// The sources whose events it takes.
    pub sources: BTreeSet<String>,
    pub filter: Filter,
    /// An `https://` target's signing secrets (Standard Webhooks, as `FORWARD_SIGNING_SECRET`);
    /// empty: signed with `FORWARD_SIGNING_SECRET`'s, unless [`Destination::unsigned`].
    pub signing_secrets: Vec<SecretRef>,
    /// `"unsigned": true`: an `https://` target declared to take its forwards unsigned (the
    /// audit flags it); never with `signing_secret`.
    pub unsigned: bool,
    /// An `https://` target's timeout; `None`: `FORWARD_TIMEOUT_MS`.
    pub timeout_ms: Option<u64>,
    /// When its circuit breaker opens and how long before the probe (`"breaker"`; absent:
    /// [`crate::breaker::Rule::default`]).
    pub breaker: crate::breaker::Rule,
    /// `max_per_second`: at most this many calls to the destination start in any one
    /// second, across every consumer instance (docs/routing.md, "Rate limit"); `None`: no
    /// limit but the consumer's concurrency.
    pub max_per_second: Option<u32>,
}

/// A destination as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    target: String,
    sources: Vec<String>,
    #[serde(default)]
    event_types: Option<Vec<String>>,
    #[serde(default)]
    exclude_event_types: Vec<String>,
    #[serde(default)]
    signing_secret: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    unsigned: bool,
    #[serde(default)]
    breaker: Option<WrittenBreaker>,
    max_per_second: Option<Value>,
}

/// A destination's `"breaker"` as written: `{"failures": 5, "cool_down_seconds": 60}`, each
/// optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrittenBreaker {
    #[serde(default)]
    failures: Option<u32>,
    #[serde(default)]
    cool_down_seconds: Option<u64>,
}

/// The longest cool-down (a day): past it, a recovered destination would wait too long.
pub const MAX_COOL_DOWN_SECONDS: u64 = 86_400;

/// The breaker's rule, checked: `failures` 1 to 1000, `cool_down_seconds` 1 to a day.
fn breaker_rule(
    name: &str,
    w: Option<&WrittenBreaker>,
) -> Result<crate::breaker::Rule, ConfigError> {
    let mut rule = crate::breaker::Rule::default();
    let Some(w) = w else {
        return Ok(rule);
    };
    if let Some(f) = w.failures {
        if !(1..=1000).contains(&f) {
            return Err(bad(name, "breaker.failures", "must be between 1 and 1000"));
        }
        rule.failures = f;
    }
    if let Some(s) = w.cool_down_seconds {
        if !(1..=MAX_COOL_DOWN_SECONDS).contains(&s) {
            return Err(bad(
                name,
                "breaker.cool_down_seconds",
                "must be between 1 and 86400",
            ));
        }
        rule.cool_down = std::time::Duration::from_secs(s);
    }
    Ok(rule)
}

fn bad(name: &str, field: &str, message: impl std::fmt::Display) -> ConfigError {
    ConfigError::BadVar {
        name: DESTINATIONS_VAR,
        message: format!("destination `{name}`, field `{field}`: {message}"),
    }
}

/// Whether `name` is a destination name: 1 to 64 letters, digits, `-` and `_`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn patterns(name: &str, field: &str, list: &[String]) -> Result<Vec<Pattern>, ConfigError> {
    list.iter()
        .map(|p| {
            Pattern::parse(p).ok_or_else(|| {
                bad(
                    name,
                    field,
                    format!("`{p}` is not an event type or a prefix pattern such as `invoice.*`"),
                )
            })
        })
        .collect()
}

/// The fields only an `https://` target takes (`signing_secret`, `unsigned`, `timeout_ms`),
/// checked; its signing secrets.
fn https_fields(name: &str, w: &Written, https: bool) -> Result<Vec<SecretRef>, ConfigError> {
    if !https && (!w.signing_secret.is_empty() || w.timeout_ms.is_some() || w.unsigned) {
        return Err(bad(
            name,
            "signing_secret",
            "only an https:// target signs and times out",
        ));
    }
    if w.unsigned && !w.signing_secret.is_empty() {
        return Err(bad(
            name,
            "unsigned",
            "declared unsigned and given a signing_secret: one or the other",
        ));
    }
    if let Some(ms) = w.timeout_ms {
        if ms == 0 || ms > crate::config::env::MAX_FORWARD_TIMEOUT_MS {
            return Err(bad(name, "timeout_ms", "must be between 1 and 900000"));
        }
    }
    w.signing_secret
        .iter()
        .map(|r| {
            SecretRef::parse(r).ok_or_else(|| {
                bad(
                    name,
                    "signing_secret",
                    format!("`{r}` is not env:NAME or secretsmanager:NAME_OR_ARN"),
                )
            })
        })
        .collect()
}

/// The highest `max_per_second`: the limit's counter is one DynamoDB item per destination
/// and second, and one item takes at most 1000 writes a second (a call over the limit is a
/// write too).
pub const MAX_PER_SECOND_LIMIT: u32 = 500;

/// `max_per_second` as written: a whole number from 1 to [`MAX_PER_SECOND_LIMIT`].
fn max_per_second(name: &str, value: Option<&Value>) -> Result<Option<u32>, ConfigError> {
    let Some(value) = value else {
        return Ok(None);
    };
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| (1..=MAX_PER_SECOND_LIMIT).contains(n))
        .map(Some)
        .ok_or_else(|| {
            bad(
                name,
                "max_per_second",
                format!(
                    "`{value}` is not a whole number of calls per second from 1 to \
                     {MAX_PER_SECOND_LIMIT}"
                ),
            )
        })
}

impl Destination {
    fn read(name: &str, value: Value, sources: &SourceSpecs) -> Result<Destination, ConfigError> {
        if !valid_name(name) {
            return Err(bad(name, "name", "1 to 64 letters, digits, `-` and `_`"));
        }
        let w: Written = serde_json::from_value(value).map_err(|e| bad(name, "*", e))?;
        let target = Target::parse(&w.target).map_err(|e| bad(name, "target", e))?;
        if w.sources.is_empty() {
            return Err(bad(name, "sources", "names no source"));
        }
        for s in &w.sources {
            match sources.get(s) {
                None => {
                    return Err(bad(
                        name,
                        "sources",
                        format!("`{s}` is not in WEBHOOK_SOURCES"),
                    ))
                }
                Some(spec) if spec.delivery == Delivery::AtMostOnce => {
                    return Err(bad(
                        name,
                        "sources",
                        format!(
                            "`{s}` is at_most_once: destinations keep their state in the ledger"
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        let include = match &w.event_types {
            Some(list) if list.is_empty() => {
                return Err(bad(
                    name,
                    "event_types",
                    "an empty list would take nothing; leave it out to take every type",
                ))
            }
            Some(list) => Some(patterns(name, "event_types", list)?),
            None => None,
        };
        let exclude = patterns(name, "exclude_event_types", &w.exclude_event_types)?;
        let signing_secrets = https_fields(name, &w, matches!(target, Target::Https(_)))?;
        let breaker = breaker_rule(name, w.breaker.as_ref())?;
        let max_per_second = max_per_second(name, w.max_per_second.as_ref())?;
        Ok(Destination {
            name: name.to_owned(),
            target,
            sources: w.sources.into_iter().collect(),
            filter: Filter { include, exclude },
            signing_secrets,
            unsigned: w.unsigned,
            timeout_ms: w.timeout_ms,
            breaker,
            max_per_second,
        })
    }
}

/// Every destination, by name, and whether there is a default destination (`FORWARD_URL`)
/// for the events none takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes(BTreeMap<String, Destination>, NoForward);

/// `true` where `FORWARD_URL` is not set (the default, `false`: it is).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct NoForward(bool);

impl Routes {
    /// The same routes with no default destination (`FORWARD_URL` blank): an event that no
    /// destination takes goes nowhere, completes, and is counted `Unrouted`.
    #[must_use]
    pub fn without_forward(mut self) -> Routes {
        self.1 = NoForward(true);
        self
    }

    /// Whether `FORWARD_URL` takes the events no destination takes.
    pub fn has_forward(&self) -> bool {
        !self.1 .0
    }

    /// No destination: every source forwards to `FORWARD_URL`.
    pub fn none() -> Routes {
        Routes::default()
    }

    /// `WEBHOOK_DESTINATIONS`, checked against the sources; a blank value is no destination.
    pub fn parse(json: &str, sources: &SourceSpecs) -> Result<Routes, ConfigError> {
        if json.trim().is_empty() {
            return Ok(Routes::none());
        }
        let entries: Vec<(String, Value)> =
            serde_json::from_str::<crate::json_fields::Entries>(json)
                .map_err(|e| ConfigError::BadVar {
                    name: DESTINATIONS_VAR,
                    message: format!("not a JSON object of destinations: {e}"),
                })?
                .0;
        let mut out = BTreeMap::new();
        for (name, value) in entries {
            let d = Destination::read(&name, value, sources)?;
            if out.insert(name.clone(), d).is_some() {
                return Err(bad(&name, "name", "declared more than once"));
            }
        }
        Ok(Routes(out, NoForward::default()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Destination> {
        self.0.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Destination> {
        self.0.values()
    }

    /// Whether some destination names this source: its events go to the destinations that
    /// take them; an event none takes goes to `FORWARD_URL` where one is set (the default
    /// destination), else nowhere (counted `Unrouted`).
    pub fn routes(&self, source: &str) -> bool {
        self.0.values().any(|d| d.sources.contains(source))
    }

    /// The destinations an event of `source` with this type goes to, by name (possibly none:
    /// the filters left it out everywhere).
    pub fn destinations_for(&self, source: &str, event_type: Option<&str>) -> Vec<&str> {
        self.0
            .values()
            .filter(|d| d.sources.contains(source) && d.filter.admits(event_type))
            .map(|d| d.name.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests;
