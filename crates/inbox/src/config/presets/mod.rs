//! Provider presets: a source declared `{"preset": "stripe", "signature": {"secrets": [...]}}`
//! takes the provider's scheme, key, event type, tolerance, handshake and retention from
//! `presets.json`, written in the same configuration language as any source (docs/providers.md
//! lists them). The entry's own fields override the preset's: the top-level fields whole,
//! `signature` field by field (or whole, where the entry names its own `scheme`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{field_error, ConfigError, DEFAULT_RETENTION_HOURS};

/// How a preset is documented (docs/providers.md): the provider's page and its retries.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetDoc {
    pub url: String,
    /// The longest the provider documents retrying a delivery, in hours (0: none documented).
    pub retry_hours: u64,
    /// The retries as the provider documents them.
    pub retries: String,
}

/// One provider's preset.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub doc: PresetDoc,
    /// The source entry the preset stands for, without secrets.
    pub source: Map<String, Value>,
    /// Fields the source must add (`public_url`, `verify_token`).
    #[serde(default)]
    pub needs: Vec<String>,
    /// The provider issues shorter secrets than [`crate::signature::MIN_SECRET_BYTES`].
    #[serde(default)]
    pub min_secret_bytes: Option<usize>,
}

impl Preset {
    /// The retention the preset gives: the provider's documented retry window and a day of
    /// margin, never under the default (the queue and dead-letter chain,
    /// [`super::retention_chain_seconds`]).
    pub fn retention_hours(&self) -> u64 {
        DEFAULT_RETENTION_HOURS.max(self.doc.retry_hours.saturating_add(24))
    }
}

/// Every preset, by name.
pub fn all() -> &'static BTreeMap<String, Preset> {
    static PRESETS: OnceLock<BTreeMap<String, Preset>> = OnceLock::new();
    PRESETS.get_or_init(|| {
        // The table ships inside the binary and is parsed by a test of every preset
        // (config::tests): a table that does not parse cannot be built into a release.
        serde_json::from_str(include_str!("presets.json")).unwrap_or_default()
    })
}

/// The preset called `name`.
pub fn get(name: &str) -> Option<&'static Preset> {
    all().get(name)
}

/// What expanding an entry's preset gives: the entry as if written out whole, the preset's
/// name and the fields the entry set over it.
pub(super) struct Expanded {
    pub entry: Value,
    pub min_secret_bytes: Option<usize>,
    pub preset: Option<String>,
    pub overrides: Vec<String>,
}

/// The entry with its preset's fields filled in; an entry without `preset` as it is.
pub(super) fn expand(source: &str, entry: Value) -> Result<Expanded, ConfigError> {
    let Value::Object(mut own) = entry else {
        return Ok(Expanded {
            entry,
            min_secret_bytes: None,
            preset: None,
            overrides: Vec::new(),
        });
    };
    let Some(name) = own.remove("preset") else {
        return Ok(Expanded {
            entry: Value::Object(own),
            min_secret_bytes: None,
            preset: None,
            overrides: Vec::new(),
        });
    };
    let Value::String(name) = name else {
        return Err(field_error(
            source,
            "preset",
            "a preset is named by a string",
        ));
    };
    let preset = get(&name).ok_or_else(|| {
        let known: Vec<&str> = all().keys().map(String::as_str).collect();
        field_error(
            source,
            "preset",
            format!("unknown preset `{name}` (known: {})", known.join(", ")),
        )
    })?;
    let mut merged = preset.source.clone();
    merged
        .entry("retention_hours")
        .or_insert_with(|| Value::from(preset.retention_hours()));
    let overrides = merge(&mut merged, own);
    for need in &preset.needs {
        if !merged.contains_key(need) {
            return Err(field_error(
                source,
                "preset",
                format!("preset `{name}` needs `{need}` on the source (docs/providers.md)"),
            ));
        }
    }
    Ok(Expanded {
        entry: Value::Object(merged),
        min_secret_bytes: preset.min_secret_bytes,
        preset: Some(name),
        overrides,
    })
}

/// Lays `own` over `merged`; the paths `own` changed (its secrets are no override).
fn merge(merged: &mut Map<String, Value>, own: Map<String, Value>) -> Vec<String> {
    let mut overrides = Vec::new();
    for (field, value) in own {
        match (field.as_str(), merged.get_mut(&field), value) {
            ("signature", Some(Value::Object(base)), Value::Object(sig))
                if !sig.contains_key("scheme") =>
            {
                for (name, v) in sig {
                    if name != "secrets" && base.get(&name) != Some(&v) {
                        overrides.push(format!("signature.{name}"));
                    }
                    base.insert(name, v);
                }
            }
            (_, current, value) => {
                if current.as_deref() != Some(&value) {
                    overrides.push(field.clone());
                }
                merged.insert(field, value);
            }
        }
    }
    overrides.sort();
    overrides
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_parses_and_names_are_lowercase_with_dashes() {
        assert!(all().len() >= 40, "{} presets", all().len());
        for name in all().keys() {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{name}"
            );
        }
    }

    #[test]
    fn own_fields_override_the_preset_and_are_listed() {
        let out = expand(
            "billing",
            json!({"preset": "stripe", "signature": {"secrets": ["env:S"], "tolerance_seconds": 60},
                   "delivery": "effectively_once"}),
        )
        .unwrap();
        assert_eq!(out.preset.as_deref(), Some("stripe"));
        assert_eq!(out.overrides, ["delivery", "signature.tolerance_seconds"]);
        assert_eq!(out.entry["signature"]["scheme"], "stripe");
        assert_eq!(out.entry["signature"]["tolerance_seconds"], 60);
        assert_eq!(out.entry["key"]["pointers"], json!(["/id"]));
        assert_eq!(out.entry["retention_hours"], json!(DEFAULT_RETENTION_HOURS));
    }

    #[test]
    fn a_scheme_of_its_own_replaces_the_presets_signature_whole() {
        let out = expand(
            "s",
            json!({"preset": "slack", "signature": {"scheme": "github", "secrets": ["env:S"]}}),
        )
        .unwrap();
        assert_eq!(
            out.entry["signature"],
            json!({"scheme": "github", "secrets": ["env:S"]})
        );
        assert_eq!(out.overrides, ["signature"]);
    }

    #[test]
    fn unknown_presets_list_the_known_ones_and_needs_are_named() {
        let err = expand("s", json!({"preset": "stipe"}))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("unknown preset `stipe`") && err.contains("stripe, "),
            "{err}"
        );
        let err = expand("s", json!({"preset": "meta"}))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("needs `verify_token`"), "{err}");
        let err = expand("s", json!({"preset": 3})).err().unwrap().to_string();
        assert!(err.contains("string"), "{err}");
    }
}
