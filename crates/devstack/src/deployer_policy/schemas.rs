//! The CloudFormation resource provider schemas that cfn-lint ships (in the project's venv,
//! pinned in requirements-dev.txt): for each resource type, the IAM permissions each of its
//! handlers may call with the caller's credentials.
//!
//! `cfnlint/data/schemas/providers/us-east-1.json` maps a type to a hash, and
//! `cfnlint/data/schemas/resources/<hash>.json` is the type's schema, whose
//! `handlers.<create|read|update|delete|list>.permissions` are those lists. us-east-1 stands for
//! every region: a handler's permissions do not differ by region, only which types exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};
use serde_json::Value;

/// The handlers whose permissions a stack operation needs. CloudFormation calls `create`,
/// `update` and `delete` for a stack's changes and `read` after each of them (and for drift
/// and `Fn::GetAtt`). `list` is left out: only `ListResources`, resource import and the IaC
/// generator call it, never a stack create, update or delete, and its permissions are the
/// account-wide list calls (`s3:ListAllMyBuckets`, `sqs:ListQueues`, ...) that would each need
/// `Resource: *`.
pub const HANDLERS: [&str; 4] = ["create", "read", "update", "delete"];

/// cfn-lint's copy of the provider schemas.
#[derive(Debug, Clone)]
pub struct Schemas {
    /// `cfnlint/data/schemas`.
    dir: PathBuf,
    /// Resource type -> schema file stem (`providers/us-east-1.json`).
    providers: BTreeMap<String, String>,
    /// cfn-lint's `__version__`.
    version: String,
}

impl Schemas {
    /// The cfn-lint of the project's Python (`INBOX_PYTHON`, else `.venv/bin/python`):
    /// `<venv>/lib/python3.*/site-packages/cfnlint`.
    pub fn of_project() -> anyhow::Result<Schemas> {
        let python = crate::moto::python()?;
        let lib = python
            .parent()
            .and_then(Path::parent)
            .map(|venv| venv.join("lib"))
            .ok_or_else(|| anyhow!("{}: not in a venv's bin/", python.display()))?;
        let package = std::fs::read_dir(&lib)
            .with_context(|| format!("reading {}", lib.display()))?
            .filter_map(Result::ok)
            .map(|entry| entry.path().join("site-packages/cfnlint"))
            .find(|path| path.is_dir())
            .ok_or_else(|| {
                anyhow!(
                    "cfn-lint not found under {}: run `make venv`",
                    lib.display()
                )
            })?;
        Schemas::at(&package)
    }

    /// The schemas of the cfn-lint package at `package` (the `cfnlint` directory).
    pub fn at(package: &Path) -> anyhow::Result<Schemas> {
        let dir = package.join("data/schemas");
        let providers_file = dir.join("providers/us-east-1.json");
        let providers: BTreeMap<String, String> = serde_json::from_slice(
            &std::fs::read(&providers_file)
                .with_context(|| format!("reading {}", providers_file.display()))?,
        )
        .with_context(|| format!("{} is not a map of type to hash", providers_file.display()))?;
        let version_file = package.join("version.py");
        let version_text = std::fs::read_to_string(&version_file)
            .with_context(|| format!("reading {}", version_file.display()))?;
        let version = parse_version(&version_text)
            .ok_or_else(|| anyhow!("no __version__ in {}", version_file.display()))?;
        Ok(Schemas {
            dir,
            providers,
            version,
        })
    }

    /// cfn-lint's version (`1.58.0`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The permissions of `resource_type`'s [`HANDLERS`], as the schema spells them (each
    /// once; IAM compares action names case-insensitively, so `s3:getObject` and
    /// `s3:GetObject` are one, kept in the spelling that sorts first).
    pub fn handler_permissions(&self, resource_type: &str) -> anyhow::Result<Vec<String>> {
        let hash = self.providers.get(resource_type).ok_or_else(|| {
            anyhow!(
                "{resource_type}: cfn-lint {} has no schema for it",
                self.version
            )
        })?;
        let file = self.dir.join("resources").join(format!("{hash}.json"));
        let schema: Value = serde_json::from_slice(
            &std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?,
        )
        .with_context(|| format!("{} is not JSON", file.display()))?;
        let handlers = schema.get("handlers").and_then(Value::as_object);
        let mut by_lower: BTreeMap<String, String> = BTreeMap::new();
        let mut found = false;
        for handler in HANDLERS {
            let Some(listed) = handlers.and_then(|h| h.get(handler)) else {
                continue;
            };
            found = true;
            let permissions = listed
                .get("permissions")
                .and_then(Value::as_array)
                .ok_or_else(|| anyhow!("{resource_type}: handler {handler} has no permissions"))?;
            for permission in permissions {
                let name = permission.as_str().ok_or_else(|| {
                    anyhow!("{resource_type}: handler {handler} lists {permission}")
                })?;
                let kept = by_lower
                    .entry(name.to_ascii_lowercase())
                    .or_insert_with(|| name.to_owned());
                if name < kept.as_str() {
                    name.clone_into(kept);
                }
            }
        }
        if !found {
            bail!(
                "{resource_type}: its schema (cfn-lint {}) has no create, read, update or delete \
                 handler, so it says nothing of the permissions it needs",
                self.version
            );
        }
        Ok(by_lower.into_values().collect())
    }
}

/// `__version__ = "1.58.0"` -> `1.58.0`.
fn parse_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("__version__")?.trim_start();
        let quoted = rest.strip_prefix('=')?.trim();
        let unquoted = quoted
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .or_else(|| quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')))?;
        Some(unquoted.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line() {
        let text = "\"\"\"\nCopyright\n\"\"\"\n\n__version__ = \"1.58.0\"\n";
        assert_eq!(parse_version(text).as_deref(), Some("1.58.0"));
        assert_eq!(parse_version("__version__ = '2.0'").as_deref(), Some("2.0"));
        assert_eq!(parse_version("version = \"1\"\n"), None);
    }

    /// A package directory with one schema, for the handler tests.
    fn package(name: &str, schema: &Value) -> (PathBuf, Schemas) {
        let dir = std::env::temp_dir().join(format!(
            "deployer-policy-schemas-{}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(dir.join("data/schemas/providers")).unwrap();
        std::fs::create_dir_all(dir.join("data/schemas/resources")).unwrap();
        std::fs::write(dir.join("version.py"), "__version__ = \"0.1\"\n").unwrap();
        std::fs::write(
            dir.join("data/schemas/providers/us-east-1.json"),
            r#"{"AWS::X::Y": "abc"}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("data/schemas/resources/abc.json"),
            schema.to_string(),
        )
        .unwrap();
        let schemas = Schemas::at(&dir).unwrap();
        (dir, schemas)
    }

    #[test]
    fn handlers_are_unioned_without_list_and_case_duplicates() {
        let (dir, schemas) = package(
            "union",
            &serde_json::json!({"handlers": {
                "create": {"permissions": ["x:CreateY", "s3:getObject"]},
                "read": {"permissions": ["x:GetY", "s3:GetObject"]},
                "delete": {"permissions": ["x:DeleteY", "x:GetY"]},
                "list": {"permissions": ["x:ListYs"]}
            }}),
        );
        assert_eq!(schemas.version(), "0.1");
        assert_eq!(
            schemas.handler_permissions("AWS::X::Y").unwrap(),
            ["s3:GetObject", "x:CreateY", "x:DeleteY", "x:GetY"]
        );
        let e = schemas
            .handler_permissions("AWS::X::Z")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("AWS::X::Z: cfn-lint") && e.ends_with("has no schema for it"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_schema_without_handlers_is_refused() {
        let (dir, schemas) = package(
            "list-only",
            &serde_json::json!({"handlers": {
                "list": {"permissions": ["x:ListYs"]}
            }}),
        );
        let e = schemas
            .handler_permissions("AWS::X::Y")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("AWS::X::Y: its schema")
                && e.contains("no create, read, update or delete"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
