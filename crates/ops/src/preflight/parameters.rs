//! The parameter values a `sam deploy` with a given samconfig.toml would pass to CloudFormation:
//! the `default` environment's `parameter_overrides` (in `[default.deploy.parameters]`, else
//! `[default.global.parameters]`, as the SAM CLI merges them), then the template's `Default`
//! for every parameter not overridden. Also the deploy's `stack_name` and `region` from the same
//! tables.
//!
//! `parameter_overrides` is read as the dev stack reads it (devstack's `Parameters`, which this
//! crate may not depend on): a TOML list of `"Name=value"` strings, or one string of
//! space-separated `Name=value` pairs with no quotes; split at the first `=`. In the list form a
//! value wrapped in single or double quotes is unwrapped (and `\'`, `\"`, `\ ` unescaped) as
//! the SAM CLI does: that is how a JSON value such as `WebhookSources` is written
//! (docs/configuration.md, "Where to write it").

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context as _};
use serde_yaml::Value;

use super::report::Report;
use crate::template::Template;

/// The stack name when neither `--stack` nor samconfig.toml gives one.
pub const DEFAULT_STACK: &str = "webhook-inbox";

/// What `sam deploy` takes from samconfig.toml that the preflight needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samconfig {
    /// `parameter_overrides`, in the file's order, quotes undone.
    pub overrides: Vec<(String, String)>,
    pub stack_name: Option<String>,
    pub region: Option<String>,
    /// What would not reach CloudFormation as written: (parameter, why).
    pub problems: Vec<(String, String)>,
}

impl Samconfig {
    /// Reads `path`.
    pub fn load(path: &Path) -> anyhow::Result<Samconfig> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// As [`Samconfig::load`], from the file's text.
    pub fn parse(text: &str) -> anyhow::Result<Samconfig> {
        let doc: toml::Table = text.parse().context("samconfig is not valid TOML")?;
        let mut config = Samconfig {
            stack_name: string_setting(&doc, "stack_name")?,
            region: string_setting(&doc, "region")?,
            ..Samconfig::default()
        };
        if matches!(setting(&doc, "region"), Some(toml::Value::String(s)) if s.trim().is_empty()) {
            config.problems.push((
                "region".to_owned(),
                "empty in samconfig.toml (written from an unset $AWS_REGION?): name the region to deploy to, or remove the line".to_owned(),
            ));
        }
        let pairs: Vec<&str> = match setting(&doc, "parameter_overrides") {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| anyhow!("parameter_overrides holds a non-string: {v}"))
                })
                .collect::<anyhow::Result<_>>()?,
            Some(toml::Value::String(s)) => {
                if s.contains(['"', '\'']) {
                    bail!("quoted values in a parameter_overrides string are not supported: use a list");
                }
                s.split_whitespace().collect()
            }
            Some(other) => bail!("parameter_overrides is neither a list nor a string: {other}"),
        };
        for pair in pairs {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| anyhow!("parameter override {pair:?} is not Name=value"))?;
            let value = match unquote(value) {
                Some(unquoted) => unquoted,
                None => {
                    config.problems.push((
                        name.to_owned(),
                        "its value holds a space or a double quote unquoted: the SAM CLI cuts it short there; wrap the value in single quotes (docs/configuration.md, \"Where to write it\")".to_owned(),
                    ));
                    value.to_owned()
                }
            };
            if config.overrides.iter().any(|(n, _)| n == name) {
                config.problems.push((
                    name.to_owned(),
                    "given twice in parameter_overrides (sam deploy would take the last)"
                        .to_owned(),
                ));
                config.overrides.retain(|(n, _)| n != name);
            }
            config.overrides.push((name.to_owned(), value));
        }
        Ok(config)
    }
}

/// `key` of the `default` environment: `[default.deploy.parameters]`, else
/// `[default.global.parameters]`.
fn setting<'a>(doc: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let default = doc.get("default")?;
    ["deploy", "global"]
        .iter()
        .find_map(|command| default.get(command)?.get("parameters")?.get(key))
}

fn string_setting(doc: &toml::Table, key: &str) -> anyhow::Result<Option<String>> {
    match setting(doc, key) {
        None => Ok(None),
        Some(toml::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(other) => bail!("{key} is not a string: {other}"),
    }
}

/// A list item's value as the SAM CLI passes it on: wrapping quotes removed and `\ `, `\"`,
/// `\'` unescaped. `None` for an unquoted value the SAM CLI would cut short (at a space or a
/// double quote).
fn unquote(value: &str) -> Option<String> {
    let wrapped = value.len() >= 2
        && ['\'', '"']
            .iter()
            .any(|&q| value.starts_with(q) && value.ends_with(q));
    if wrapped {
        let inner = &value[1..value.len() - 1];
        return Some(
            inner
                .replace("\\ ", " ")
                .replace("\\\"", "\"")
                .replace("\\'", "'"),
        );
    }
    (!value.contains([' ', '"'])).then(|| value.to_owned())
}

/// The value of every template parameter as CloudFormation would get it, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parameters(BTreeMap<String, String>);

impl Parameters {
    /// samconfig's overrides, then the template's defaults. An override the template does not
    /// declare, and a parameter left without a value, are problems named after the parameter
    /// (sam deploy would stop at either), as are the samconfig's own.
    pub fn resolve(template: &Template, samconfig: &Samconfig, report: &mut Report) -> Parameters {
        for (name, why) in &samconfig.problems {
            report.refuse(name, why);
        }
        let declared = template
            .document()
            .get("Parameters")
            .and_then(Value::as_mapping);
        let names: Vec<&str> = declared
            .into_iter()
            .flat_map(|m| m.keys().filter_map(Value::as_str))
            .collect();
        let mut values = BTreeMap::new();
        for (name, value) in &samconfig.overrides {
            if names.contains(&name.as_str()) {
                values.insert(name.clone(), value.clone());
            } else {
                report.refuse(
                    name,
                    "overridden in samconfig.toml but not a parameter of the template: sam deploy would fail",
                );
            }
        }
        for name in names {
            if values.contains_key(name) {
                continue;
            }
            match template.parameter_default(name).map(scalar) {
                Some(Some(value)) => {
                    values.insert(name.to_owned(), value);
                }
                Some(None) => report.refuse(name, "the template's Default is not a plain value"),
                None => report.refuse(
                    name,
                    "no value: neither samconfig.toml's parameter_overrides nor the template's Default gives one; sam deploy would fail",
                ),
            }
        }
        Parameters(values)
    }

    /// The value `name` gets.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// (name, value), sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A YAML scalar as CloudFormation takes a parameter value (a string).
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Samconfig {
        Samconfig::parse(text).unwrap()
    }

    #[test]
    fn a_list_a_string_and_the_global_table() {
        let c = parse(
            "[default.deploy.parameters]\nstack_name = \"s\"\nparameter_overrides = [\"A=1\", \"B=x=y\", \"C=\"]\n",
        );
        assert_eq!(
            c.overrides,
            [("A", "1"), ("B", "x=y"), ("C", "")].map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        assert_eq!(c.stack_name.as_deref(), Some("s"));
        let c = parse(
            "[default.global.parameters]\nstack_name = \"g\"\nregion = \"eu-west-1\"\nparameter_overrides = \"A=1 B=2\"\n",
        );
        assert_eq!(c.overrides.len(), 2);
        assert_eq!(c.stack_name.as_deref(), Some("g"));
        assert_eq!(c.region.as_deref(), Some("eu-west-1"));
        assert!(c.problems.is_empty());
        assert_eq!(parse("version = 0.1\n"), Samconfig::default());
    }

    #[test]
    fn quoted_values_are_unwrapped_as_sam_does() {
        let c = parse(
            "[default.deploy.parameters]\nparameter_overrides = [\n'''WebhookSources='{\"a\": 1}'''',\n'N=\"two words\"',\n'''E='it\\'s''''\n]\n",
        );
        assert_eq!(c.overrides[0].1, r#"{"a": 1}"#);
        assert_eq!(c.overrides[1].1, "two words");
        assert_eq!(c.overrides[2].1, "it's");
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }

    #[test]
    fn what_sam_would_cut_short_or_take_twice_is_a_problem() {
        let c = parse(
            "[default.deploy.parameters]\nparameter_overrides = ['W={\"a\":1}', 'X=a b', 'Y=1', 'Y=2']\n",
        );
        let named: Vec<_> = c.problems.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(named, ["W", "X", "Y"]);
        assert_eq!(c.overrides.last(), Some(&("Y".to_owned(), "2".to_owned())));
    }

    #[test]
    fn an_empty_region_is_a_problem() {
        let c = parse("[default.global.parameters]\nregion = \"\"\n");
        assert_eq!(c.region, None);
        let named: Vec<_> = c.problems.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(named, ["region"]);
        let c = parse("[default.deploy.parameters]\nregion = \"eu-west-1\"\n");
        assert_eq!(c.region.as_deref(), Some("eu-west-1"));
        assert!(c.problems.is_empty());
    }

    #[test]
    fn refused() {
        for text in [
            "[default.deploy.parameters]\nparameter_overrides = [\"A\"]\n",
            "[default.deploy.parameters]\nparameter_overrides = 3\n",
            "[default.deploy.parameters]\nparameter_overrides = [3]\n",
            "[default.deploy.parameters]\nparameter_overrides = \"A='x y'\"\n",
            "[default.deploy.parameters]\nstack_name = 3\n",
            "not toml =",
        ] {
            assert!(Samconfig::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn overrides_then_defaults_and_what_is_missing() {
        let template = Template::load(&crate::template::template_path()).unwrap();
        let c = parse(
            "[default.deploy.parameters]\nparameter_overrides = [\"LogLevel=DEBUG\", \"Nope=1\"]\n",
        );
        let mut report = Report::default();
        let p = Parameters::resolve(&template, &c, &mut report);
        assert_eq!(p.get("LogLevel"), Some("DEBUG"));
        assert_eq!(
            p.get("PayloadRetentionDays"),
            Some("11"),
            "a number default"
        );
        assert_eq!(p.get("SecretArns"), Some(""));
        assert!(p
            .get("WebhookSources")
            .is_some_and(|s| s.contains("github")));
        assert_eq!(p.get("Nope"), None);
        let subjects: Vec<_> = report
            .problems()
            .iter()
            .map(|p| p.subject.as_str())
            .collect();
        assert_eq!(subjects, ["Nope", "ForwardUrl"], "{:?}", report.problems());
    }
}
