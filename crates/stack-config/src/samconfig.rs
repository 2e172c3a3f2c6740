//! `samconfig.toml` as the SAM CLI reads it, and as `inbox-ops init` writes it: the one reader of
//! `parameter_overrides` in the workspace (the preflight's, and the dev stack's through
//! [`Samconfig::parse`]).
//!
//! What `sam deploy` takes: the `default` environment's settings, from
//! `[default.deploy.parameters]`, else `[default.global.parameters]` (the SAM CLI merges them);
//! `parameter_overrides` either one string (what `sam deploy --guided` saves: `Name="value"`
//! pairs, every value double-quoted, `"` inside escaped as `\"`, SAM CLI 1.170's
//! `guided_config.py`) or a list of such strings, or a table of `Name = value`. Each string is
//! split as the SAM CLI's `CfnParameterOverridesType` splits it (`samcli/cli/types.py`): pairs
//! separated by spaces, a value either wrapped in double or single quotes (with `\`-escapes) or
//! running to the next space or double quote; then wrapping quotes are removed and `\ `, `\"`,
//! `\'` unescaped. What the SAM CLI would silently cut short, skip or take twice is a problem
//! named after its parameter; what it would refuse is an error.

use std::path::Path;

use anyhow::{anyhow, bail, Context as _};

/// What `sam deploy` takes from samconfig.toml that the preflight needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Samconfig {
    /// `parameter_overrides`, in the file's order, quotes undone; a name given twice keeps its
    /// last value, at its last place (as `sam deploy` takes it).
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
        let mut pairs = Vec::new();
        match setting(&doc, "parameter_overrides") {
            None => {}
            Some(toml::Value::Array(items)) => {
                for item in items {
                    let text = item
                        .as_str()
                        .ok_or_else(|| anyhow!("parameter_overrides holds a non-string: {item}"))?;
                    split_overrides(text, &mut pairs, &mut config.problems)?;
                }
            }
            Some(toml::Value::String(s)) => split_overrides(s, &mut pairs, &mut config.problems)?,
            Some(toml::Value::Table(table)) => {
                for (name, value) in table {
                    let value = match value {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Integer(_)
                        | toml::Value::Float(_)
                        | toml::Value::Boolean(_) => value.to_string(),
                        toml::Value::Array(items) => items
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .filter(|v| !v.is_empty())
                            .collect::<Vec<_>>()
                            .join(","),
                        other => bail!("parameter_overrides.{name} is not a value: {other}"),
                    };
                    pairs.push((
                        unescape(&unwrap_quotes(name)),
                        unescape(&unwrap_quotes(&value)),
                    ));
                }
            }
            Some(other) => bail!("parameter_overrides is neither a list nor a string: {other}"),
        }
        for (name, value) in pairs {
            if config.overrides.iter().any(|(n, _)| *n == name) {
                config.problems.push((
                    name.clone(),
                    "given twice in parameter_overrides (sam deploy would take the last)"
                        .to_owned(),
                ));
                config.overrides.retain(|(n, _)| *n != name);
            }
            config.overrides.push((name, value));
        }
        Ok(config)
    }

    /// The value given for `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.overrides
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
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

/// One `parameter_overrides` string split as the SAM CLI does: `re.findall` of
/// `(?: )KEY=VALUE` over `" " + text.strip()`, KEY `[A-Za-z0-9"']+`, VALUE a double-quoted or
/// single-quoted run (`\` escaping the next character) or a run of anything but a space, a
/// double quote or a lone `\`. A string with no pair is refused (the SAM CLI's "is not a valid
/// format"); text between pairs that the SAM CLI skips, or a value it ends early, is a problem.
fn split_overrides(
    text: &str,
    pairs: &mut Vec<(String, String)>,
    problems: &mut Vec<(String, String)>,
) -> anyhow::Result<()> {
    if text.starts_with("file://") {
        bail!("parameter_overrides {text:?}: file references are not read by the preflight; list the parameters in samconfig.toml");
    }
    let normalized: Vec<char> = std::iter::once(' ').chain(text.trim().chars()).collect();
    let mut found = 0;
    let mut at = 0;
    let mut skipped = String::new();
    while at < normalized.len() {
        let Some((name, value, end)) = pair_at(&normalized, at) else {
            skipped.push(normalized[at]);
            at += 1;
            continue;
        };
        found += 1;
        let name = unescape(&unwrap_quotes(&name));
        let next = normalized.get(end).copied();
        if next.is_some_and(|c| c != ' ') {
            problems.push((
                name.clone(),
                "its value holds a space or a double quote unquoted: the SAM CLI cuts it short there; wrap the value in single quotes (docs/configuration.md, \"Where to write it\")".to_owned(),
            ));
        }
        flush_skipped(&mut skipped, problems);
        pairs.push((name, unescape(&unwrap_quotes(&value))));
        at = end;
    }
    if found == 0 {
        bail!("parameter override {text:?} is not Name=value (the SAM CLI refuses it)");
    }
    flush_skipped(&mut skipped, problems);
    Ok(())
}

/// Text the SAM CLI passes over without taking it as a parameter (other than spaces).
fn flush_skipped(skipped: &mut String, problems: &mut Vec<(String, String)>) {
    let text = skipped.trim();
    if !text.is_empty() && !problems.iter().any(|(_, why)| why.contains(text)) {
        problems.push((
            "parameter_overrides".to_owned(),
            format!("{text:?} is not Name=value: the SAM CLI skips it"),
        ));
    }
    skipped.clear();
}

/// A match of ` KEY=VALUE` starting at `at`: the raw key, the raw value, where it ends.
fn pair_at(s: &[char], at: usize) -> Option<(String, String, usize)> {
    if s.get(at) != Some(&' ') {
        return None;
    }
    let key_start = at + 1;
    let mut i = key_start;
    while s
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '"' || *c == '\'')
    {
        i += 1;
    }
    if i == key_start || s.get(i) != Some(&'=') {
        return None;
    }
    let key: String = s[key_start..i].iter().collect();
    let value_start = i + 1;
    let end = quoted_end(s, value_start, '"')
        .or_else(|| quoted_end(s, value_start, '\''))
        .or_else(|| bare_end(s, value_start))?;
    Some((key, s[value_start..end].iter().collect(), end))
}

/// `q(?:\\.|[^q\\]+)*q` at `start`: the index after the closing quote. `.` takes any
/// character but a newline, as Python's `re` does.
fn quoted_end(s: &[char], start: usize, q: char) -> Option<usize> {
    if s.get(start) != Some(&q) {
        return None;
    }
    let mut i = start + 1;
    loop {
        match s.get(i)? {
            '\\' => match s.get(i + 1) {
                Some(c) if *c != '\n' => i += 2,
                _ => return None,
            },
            c if *c == q => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// `(?:\\.|[^ "\\]+)+` at `start`: the index after the run, if it is not empty.
fn bare_end(s: &[char], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        match s.get(i) {
            Some('\\') if s.get(i + 1).is_some_and(|c| *c != '\n') => i += 2,
            Some(c) if *c != ' ' && *c != '"' && *c != '\\' => i += 1,
            _ => break,
        }
    }
    (i > start).then_some(i)
}

/// The SAM CLI's `_unquote_wrapped_quotes`, first half: one pair of wrapping quotes removed.
fn unwrap_quotes(value: &str) -> String {
    let mut chars = value.chars();
    match (chars.next(), chars.next_back()) {
        (Some(a), Some(b)) if a == b && (a == '"' || a == '\'') => chars.collect(),
        _ => value.to_owned(),
    }
}

/// Its second half: `\ `, `\"` and `\'` unescaped, other backslashes kept.
fn unescape(value: &str) -> String {
    value
        .replace("\\ ", " ")
        .replace("\\\"", "\"")
        .replace("\\'", "'")
}

/// One `parameter_overrides` list item for `name` and `value`, as TOML: read back by the
/// SAM CLI and by [`Samconfig::parse`] as exactly `value`. A value with no space, quote or
/// backslash is written bare, one with no single quote or backslash wrapped in single quotes
/// (JSON stays readable), any other wrapped in double quotes with `"` escaped, as
/// `sam deploy --guided` writes it. Refused: a value holding a backslash before a space or a
/// quote, or a newline, which neither form carries unchanged.
pub fn override_item(name: &str, value: &str) -> anyhow::Result<String> {
    if value.contains('\n') || ["\\ ", "\\\"", "\\'"].iter().any(|e| value.contains(e)) {
        bail!("{name}: its value holds a newline or a backslash before a space or a quote, which samconfig.toml cannot carry unchanged");
    }
    let quoted = if !value.is_empty() && !value.contains([' ', '"', '\'', '\\']) {
        value.to_owned()
    } else if !value.contains(['\'', '\\']) {
        format!("'{value}'")
    } else {
        format!("\"{}\"", value.replace('"', "\\\""))
    };
    let item = format!("{name}={quoted}");
    Ok(if !item.contains(['\'', '\n']) {
        format!("'{item}'")
    } else if !item.contains("'''") && !item.starts_with('\'') {
        format!("'''{item}'''")
    } else {
        toml::Value::String(item).to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Samconfig {
        Samconfig::parse(text).unwrap()
    }

    fn pairs(c: &Samconfig) -> Vec<(&str, &str)> {
        c.overrides
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn a_list_a_string_and_the_global_table() {
        let c = parse(
            "[default.deploy.parameters]\nstack_name = \"s\"\nparameter_overrides = [\"A=1\", \"B=x=y\", \"C=''\", \"D=4 E=\"]\n",
        );
        assert_eq!(pairs(&c), [("A", "1"), ("B", "x=y"), ("C", ""), ("D", "4")]);
        assert_eq!(
            c.problems,
            [(
                "parameter_overrides".to_owned(),
                "\"E=\" is not Name=value: the SAM CLI skips it".to_owned()
            )],
            "an empty value after = matches nothing in the SAM CLI"
        );
        assert_eq!(c.stack_name.as_deref(), Some("s"));
        let c = parse(
            "[default.global.parameters]\nstack_name = \"g\"\nregion = \"eu-west-1\"\nparameter_overrides = \"A=1 B=2\"\n",
        );
        assert_eq!(pairs(&c), [("A", "1"), ("B", "2")]);
        assert_eq!(c.stack_name.as_deref(), Some("g"));
        assert_eq!(c.region.as_deref(), Some("eu-west-1"));
        assert!(c.problems.is_empty());
        assert_eq!(parse("version = 0.1\n"), Samconfig::default());
    }

    #[test]
    fn the_guided_string_every_value_double_quoted() {
        // What SAM CLI 1.170's guided_config.py saves: `key="value"` joined by spaces, `"`
        // escaped as `\"` (crates/ops/tests/preflight/guided.rs has SAM write it).
        let c = parse(concat!(
            "[default.deploy.parameters]\n",
            r#"parameter_overrides = "ForwardUrl=\"https://records.acme.io/x\" WebhookSources=\"{\\\"github\\\": {\\\"preset\\\": \\\"github\\\"}}\" SecretArns=\"\" LogLevel=\"INFO\"""#,
            "\n"
        ));
        assert_eq!(
            pairs(&c),
            [
                ("ForwardUrl", "https://records.acme.io/x"),
                ("WebhookSources", r#"{"github": {"preset": "github"}}"#),
                ("SecretArns", ""),
                ("LogLevel", "INFO"),
            ]
        );
        assert!(c.problems.is_empty(), "{:?}", c.problems);
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
        let c = parse("[default.deploy.parameters]\nparameter_overrides = {A = \"'x'\", B = 3, C = [\"a\", \"b\"]}\n");
        assert_eq!(pairs(&c), [("A", "x"), ("B", "3"), ("C", "a,b")]);
    }

    #[test]
    fn what_sam_would_cut_short_or_take_twice_is_a_problem() {
        let c = parse(
            "[default.deploy.parameters]\nparameter_overrides = ['W={\"a\":1}', 'X=a b', 'Y=1', 'Y=2']\n",
        );
        let named: Vec<_> = c.problems.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(named, ["W", "parameter_overrides", "Y"]);
        assert_eq!(c.get("W"), Some("{"), "cut at the double quote");
        assert_eq!(c.get("X"), Some("a"), "cut at the space");
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
        for (text, why) in [
            (
                "[default.deploy.parameters]\nparameter_overrides = [\"A\"]\n",
                "not Name=value",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = [\"A=\"]\n",
                "not Name=value",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = 3\n",
                "neither a list",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = [3]\n",
                "non-string",
            ),
            (
                "[default.deploy.parameters]\nparameter_overrides = \"file://p.yaml\"\n",
                "file references",
            ),
            (
                "[default.deploy.parameters]\nstack_name = 3\n",
                "not a string",
            ),
            ("not toml =", "not valid TOML"),
        ] {
            let e = Samconfig::parse(text).expect_err(text);
            assert!(format!("{e:#}").contains(why), "{text}: {e:#}");
        }
    }

    #[test]
    fn an_item_written_reads_back_as_its_value() {
        for value in [
            "INFO",
            "",
            "https://records.acme.io/x?a=b",
            r#"{"github": {"preset": "github", "signature": {"secrets": ["secretsmanager:w/github"]}}}"#,
            "it's",
            r#"it's "quoted""#,
            "two words",
            r"a\nb",
        ] {
            let item = override_item("P", value).unwrap();
            let c = parse(&format!(
                "[default.deploy.parameters]\nparameter_overrides = [{item}]\n"
            ));
            assert_eq!(c.get("P"), Some(value), "{item}");
            assert!(c.problems.is_empty(), "{item}: {:?}", c.problems);
        }
        for value in ["a\\ b", "a\nb", "x\\\"y"] {
            let e = override_item("P", value).unwrap_err().to_string();
            assert!(
                e.starts_with("P: its value holds a newline or a backslash"),
                "{value:?}: {e}"
            );
        }
    }
}
