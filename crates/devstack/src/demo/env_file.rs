//! The functions' environment for a local run: the template's own values, the local resources
//! for its `!Ref`s, the SDK pointed at moto and the demo secrets, written as the `--env-file`
//! `cargo lambda watch` reads.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};
use serde_yaml::Value as Yaml;

use super::watch::FUNCTIONS;
use crate::provision::{Provisioned, Template};
use crate::testkit::{TEST_SECRET, TEST_SOURCES, TEST_WHSEC};

/// Variables the functions get locally, in env-file order.
///
/// The template's literal values for both functions (`Globals` and each function's own), so
/// local runs with the deployed settings; for its `!Ref`s, the local resources; then the
/// standard SDK settings pointed at moto, dummy credentials, and the demo sources' secrets.
pub fn local_env(
    template: &Template,
    resources: &Provisioned,
    aws_endpoint: &str,
    forward_url: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let sources: serde_json::Value =
        serde_json::from_str(TEST_SOURCES).context("the demo sources")?;
    let local: BTreeMap<&str, String> = BTreeMap::from([
        ("LEDGER_TABLE", resources.table.clone()),
        ("QUEUE_URL", resources.queue_url.clone()),
        ("WEBHOOK_SOURCES", sources.to_string()),
        ("FORWARD_URL", forward_url.to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ]);
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    for binary in FUNCTIONS {
        let id = function_logical_id(template.document(), binary)
            .with_context(|| format!("template.yaml has no function with Binary {binary}"))?;
        for (name, literal) in template_env(template.document(), &id) {
            let value = match (literal, local.get(name.as_str())) {
                (_, Some(local)) => local.clone(),
                (Some(literal), None) => literal,
                (None, None) => bail!(
                    "template.yaml: {id} sets {name} from an intrinsic the local run has no value for"
                ),
            };
            vars.insert(name, value);
        }
    }
    for name in [
        "LEDGER_TABLE",
        "QUEUE_URL",
        "WEBHOOK_SOURCES",
        "FORWARD_URL",
    ] {
        if !vars.contains_key(name) {
            bail!("template.yaml gives no function {name}");
        }
    }
    let mut out: Vec<(String, String)> = vars.into_iter().collect();
    out.extend(
        [
            ("AWS_ENDPOINT_URL", aws_endpoint),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("INBOX_TEST_SECRET", TEST_SECRET),
            ("INBOX_TEST_WHSEC", TEST_WHSEC),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    Ok(out)
}

/// An `--env-file`: `KEY=VALUE` lines; a value holding JSON (or anything but plain
/// characters) single-quoted, as cargo-lambda's dotenv parser needs.
pub fn env_file(vars: &[(String, String)]) -> String {
    let mut text = String::from(
        "# cargo lambda watch --env-file: local settings for both functions (written by the demo).\n",
    );
    for (name, value) in vars {
        let plain = value.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/' | ',' | '@')
        });
        if plain {
            text.push_str(&format!("{name}={value}\n"));
        } else {
            text.push_str(&format!("{name}='{value}'\n"));
        }
    }
    text
}

/// The logical id of the `AWS::Serverless::Function` built from `binary`.
fn function_logical_id(doc: &Yaml, binary: &str) -> Option<String> {
    doc.get("Resources")?
        .as_mapping()?
        .iter()
        .find_map(|(id, r)| {
            let built = r.get("Metadata")?.get("BuildProperties")?.get("Binary")?;
            (built.as_str() == Some(binary))
                .then(|| id.as_str().map(str::to_owned))
                .flatten()
        })
}

/// A function's environment (`Globals.Function` merged with its own): literal values, and
/// `None` where the template computes the value.
fn template_env(doc: &Yaml, logical_id: &str) -> Vec<(String, Option<String>)> {
    let global = doc
        .get("Globals")
        .and_then(|g| g.get("Function"))
        .and_then(|f| f.get("Environment"))
        .and_then(|e| e.get("Variables"))
        .and_then(Yaml::as_mapping);
    let own = doc
        .get("Resources")
        .and_then(|r| r.get(logical_id))
        .and_then(|r| r.get("Properties"))
        .and_then(|p| p.get("Environment"))
        .and_then(|e| e.get("Variables"))
        .and_then(Yaml::as_mapping);
    let mut vars = BTreeMap::new();
    for map in [global, own].into_iter().flatten() {
        for (k, v) in map {
            let Some(name) = k.as_str() else { continue };
            let literal = match v {
                Yaml::String(s) => Some(s.clone()),
                Yaml::Number(n) => Some(n.to_string()),
                Yaml::Bool(b) => Some(b.to_string()),
                _ => None,
            };
            vars.insert(name.to_owned(), literal);
        }
    }
    vars.into_iter().collect()
}

/// Writes the env file, creating its directory.
pub fn write_env_file(path: &Path, vars: &[(String, String)]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, env_file(vars)).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_quotes_json_and_leaves_plain_values() {
        let text = env_file(&[
            ("A".into(), "http://127.0.0.1:5000/123/q.fifo".into()),
            ("B".into(), r#"{"x":{"y":[1]}}"#.into()),
        ]);
        assert!(text.contains("\nA=http://127.0.0.1:5000/123/q.fifo\n"));
        assert!(text.contains("\nB='{\"x\":{\"y\":[1]}}'\n"));
    }

    #[test]
    fn local_env_takes_the_templates_literals_and_local_resources() {
        let template = Template::load(&crate::provision::template_path()).unwrap();
        let resources = Provisioned {
            table: "t".into(),
            queue_url: "http://q/1/q.fifo".into(),
            dlq_url: "http://q/1/d.fifo".into(),
        };
        let vars = local_env(&template, &resources, "http://127.0.0.1:1", "http://s/e").unwrap();
        let get = |n: &str| {
            vars.iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert_eq!(get("LEDGER_TABLE"), "t");
        assert_eq!(get("QUEUE_URL"), "http://q/1/q.fifo");
        assert_eq!(get("FORWARD_URL"), "http://s/e");
        assert_eq!(get("AWS_ENDPOINT_URL"), "http://127.0.0.1:1");
        assert!(inbox::config::SourceSpecs::parse(&get("WEBHOOK_SOURCES")).is_ok());
        assert!(!get("IN_PROGRESS_WAIT_MS").is_empty(), "{vars:?}");
    }
}
