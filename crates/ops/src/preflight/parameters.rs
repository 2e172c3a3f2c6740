//! The parameter values a `sam deploy` with a given samconfig.toml would pass to CloudFormation:
//! the `default` environment's `parameter_overrides` (in `[default.deploy.parameters]`, else
//! `[default.global.parameters]`, as the SAM CLI merges them), then the template's `Default`
//! for every parameter not overridden. Also the deploy's `stack_name` and `region` from the same
//! tables.
//!
//! `parameter_overrides` is read as the SAM CLI reads it ([`crate::samconfig`], the dev
//! stack's reader too): a JSON value such as `WebhookSources` is written as
//! docs/configuration.md ("Where to write it") says, or as `sam deploy --guided` saves it.

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::report::Report;
use stack_config::Template;

/// The stack name when neither `--stack` nor samconfig.toml gives one.
pub const DEFAULT_STACK: &str = "webhook-inbox";

pub use stack_config::Samconfig;

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
    fn overrides_then_defaults_and_what_is_missing() {
        let template = Template::load(&stack_config::template_path()).unwrap();
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
