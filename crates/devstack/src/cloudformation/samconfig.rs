//! `samconfig.toml`'s deploy parameters: the `parameter_overrides` that `sam deploy` hands to
//! CloudFormation, read with the `toml` crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};

/// `samconfig.toml` at the workspace root.
pub fn samconfig_path() -> PathBuf {
    super::workspace_root().join("samconfig.toml")
}

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

    /// As [`Parameters::from_samconfig`], from the file's text. `parameter_overrides` is either a
    /// list of `"Name=value"` strings or one string of space-separated `Name=value` pairs (SAM
    /// takes both); absent means no overrides.
    pub fn parse_samconfig(text: &str) -> anyhow::Result<Parameters> {
        let doc: toml::Table = text.parse().context("samconfig is not valid TOML")?;
        let overrides = doc
            .get("default")
            .and_then(|d| d.get("deploy"))
            .and_then(|d| d.get("parameters"))
            .and_then(|p| p.get("parameter_overrides"));
        let pairs: Vec<&str> = match overrides {
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
        let mut parameters = Parameters::default();
        for pair in pairs {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| anyhow!("parameter override {pair:?} is not Name=value"))?;
            if parameters
                .0
                .insert(name.to_owned(), value.to_owned())
                .is_some()
            {
                bail!("parameter {name} is overridden twice");
            }
        }
        Ok(parameters)
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
            "[default.deploy.parameters]\nparameter_overrides = [\"A=1\", \"B=x=y\", \"C=\"]\n",
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
            "[default.deploy.parameters]\nparameter_overrides = \"A=1 B=2\"\n",
        )
        .unwrap();
        assert_eq!(p.iter().collect::<Vec<_>>(), [("A", "1"), ("B", "2")]);
    }

    #[test]
    fn refused() {
        for text in [
            "[default.deploy.parameters]\nparameter_overrides = [\"A\"]\n",
            "[default.deploy.parameters]\nparameter_overrides = [\"A=1\", \"A=2\"]\n",
            "[default.deploy.parameters]\nparameter_overrides = 3\n",
            "[default.deploy.parameters]\nparameter_overrides = \"A='x y'\"\n",
            "not toml =",
        ] {
            assert!(Parameters::parse_samconfig(text).is_err(), "{text}");
        }
        assert_eq!(
            Parameters::parse_samconfig("version = 0.1\n").unwrap(),
            Parameters::default()
        );
    }
}
