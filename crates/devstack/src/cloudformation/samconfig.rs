//! `samconfig.toml`'s deploy parameters: the `parameter_overrides` that `sam deploy` hands to
//! CloudFormation, read by the one reader the preflight uses too ([`stack_config::samconfig`]).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};

pub use stack_config::samconfig_path;

/// Stack parameter values by name, as CloudFormation takes them (strings).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Parameters(BTreeMap<String, String>);

impl Parameters {
    /// `samconfig.toml`'s `[default.deploy.parameters] parameter_overrides`.
    pub fn from_samconfig(path: &Path) -> anyhow::Result<Parameters> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse_samconfig(&text).with_context(|| format!("in {}", path.display()))
    }

    /// As [`Parameters::from_samconfig`], from the file's text, read by the preflight's reader
    /// ([`stack_config::Samconfig`], as the SAM CLI reads it: the list, the guided
    /// string, quotes undone). What `sam deploy` would cut short, skip or take twice is
    /// refused here, each problem named; absent means no overrides.
    pub fn parse_samconfig(text: &str) -> anyhow::Result<Parameters> {
        let config = stack_config::Samconfig::parse(text)?;
        if !config.problems.is_empty() {
            let problems: Vec<String> = config
                .problems
                .iter()
                .map(|(name, why)| format!("{name}: {why}"))
                .collect();
            bail!("samconfig.toml: {}", problems.join("; "));
        }
        Ok(Parameters(config.overrides.into_iter().collect()))
    }

    /// The value given for `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Sets (or replaces) one value.
    pub fn set(&mut self, name: &str, value: &str) -> &mut Self {
        self.0.insert(name.to_owned(), value.to_owned());
        self
    }

    /// The names given, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// (name, value) pairs, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// As the JSON object the SAM transform takes for its parameter values.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.iter()
                .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v.to_owned())))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_pairs() {
        let p = Parameters::parse_samconfig(
            "[default.deploy.parameters]\nparameter_overrides = [\"A=1\", \"B=x=y\", \"C=''\"]\n",
        )
        .unwrap();
        assert_eq!(p.get("A"), Some("1"));
        assert_eq!(p.get("B"), Some("x=y"), "split at the first '='");
        assert_eq!(p.get("C"), Some(""));
        assert_eq!(p.names().collect::<Vec<_>>(), ["A", "B", "C"]);
    }

    #[test]
    fn a_string_of_pairs() {
        let p = Parameters::parse_samconfig(
            "[default.deploy.parameters]\nparameter_overrides = \"A=1 B=2 C='x y'\"\n",
        )
        .unwrap();
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            [("A", "1"), ("B", "2"), ("C", "x y")],
            "quotes undone as the preflight and the SAM CLI undo them"
        );
    }

    #[test]
    fn refused() {
        for (text, why) in [
            (
                "[default.deploy.parameters]\nparameter_overrides = [\"A\"]\n",
                "not Name=value",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = [\"A=1\", \"A=2\"]\n",
                "A: given twice",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = 3\n",
                "neither a list",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = \"A=x y\"\n",
                "\"y\" is not Name=value",
            ),
            ("not toml =", "not valid TOML"),
        ] {
            let e = Parameters::parse_samconfig(text).expect_err(text);
            assert!(format!("{e:#}").contains(why), "{text}: {e:#}");
        }
        assert_eq!(
            Parameters::parse_samconfig("version = 0.1\n").unwrap(),
            Parameters::default()
        );
    }
}
