//! `template.yaml` through the real SAM transform (`sam_translate.py`, run by the project's
//! Python): the plain CloudFormation template that `sam deploy` has CloudFormation create.
//! (Kept for reuse by [`super::cache`].)

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context as _};
use serde_json::Value;

use super::samconfig::{samconfig_path, Parameters};
use super::template_path;

pub(super) const HELPER: &str = include_str!("sam_translate.py");

/// Where the translated template says the functions' code is: what `sam package` would write
/// after uploading the build. Nothing is uploaded there; [`super::deploy`] swaps in a placeholder.
pub const PACKAGED_CODE_URI: &str = "s3://webhook-inbox-artifacts/bootstrap.zip";

/// A translated template (JSON, intrinsics in their long `Fn::` / `Ref` forms).
#[derive(Debug, Clone)]
pub struct Translated {
    doc: Value,
}

impl Translated {
    /// Translates `template` with these parameter values.
    pub fn translate(template: &Path, parameters: &Parameters) -> anyhow::Result<Translated> {
        let mut child = Command::new(crate::moto::python()?)
            .arg("-c")
            .arg(HELPER)
            .arg(template)
            .arg(PACKAGED_CODE_URI)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting the SAM transform (sam_translate.py)")?;
        child
            .stdin
            .take()
            .context("SAM transform stdin")?
            .write_all(parameters.to_json().to_string().as_bytes())
            .context("writing the parameter values to the SAM transform")?;
        let out = child
            .wait_with_output()
            .context("running the SAM transform")?;
        if !out.status.success() {
            bail!(
                "the SAM transform of {} failed ({}): {}",
                template.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let doc: Value = serde_json::from_slice(&out.stdout)
            .context("the SAM transform's output is not JSON")?;
        Translated::from_document(doc)
    }

    /// A translated template read back (from [`super::cache`]).
    pub(super) fn from_document(doc: Value) -> anyhow::Result<Translated> {
        if !doc.get("Resources").is_some_and(Value::is_object) {
            bail!("the translated template has no Resources");
        }
        Ok(Translated { doc })
    }

    /// The project's `template.yaml` with `samconfig.toml`'s parameter overrides.
    pub fn project() -> anyhow::Result<Translated> {
        let parameters = Parameters::from_samconfig(&samconfig_path())?;
        Self::translate(&template_path(), &parameters)
    }

    pub fn document(&self) -> &Value {
        &self.doc
    }

    /// The document, to change before handing it to CloudFormation.
    pub(super) fn document_mut(&mut self) -> &mut Value {
        &mut self.doc
    }

    /// A resource by logical id.
    pub fn resource(&self, logical_id: &str) -> Option<&Value> {
        self.doc.get("Resources")?.get(logical_id)
    }

    /// A resource's `Properties` (`Null` when it has none).
    pub fn properties(&self, logical_id: &str) -> &Value {
        self.resource(logical_id)
            .and_then(|r| r.get("Properties"))
            .unwrap_or(&Value::Null)
    }

    /// (logical id, resource) of every resource of this type, sorted by logical id.
    pub fn resources_of_type(&self, resource_type: &str) -> Vec<(&str, &Value)> {
        let mut found: Vec<_> = self
            .doc
            .get("Resources")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, r)| r.get("Type").and_then(Value::as_str) == Some(resource_type))
            .map(|(id, r)| (id.as_str(), r))
            .collect();
        found.sort_by_key(|(id, _)| *id);
        found
    }

    /// The logical id of the one resource of this type.
    pub fn only_of_type(&self, resource_type: &str) -> anyhow::Result<&str> {
        match self.resources_of_type(resource_type).as_slice() {
            [(id, _)] => Ok(id),
            other => Err(anyhow!(
                "expected one {resource_type}, the template has {}",
                other.len()
            )),
        }
    }

    /// A parameter's declaration.
    pub fn parameter(&self, name: &str) -> Option<&Value> {
        self.doc.get("Parameters")?.get(name)
    }

    /// The declared parameter names, sorted.
    pub fn parameter_names(&self) -> Vec<&str> {
        let mut names: Vec<_> = self
            .doc
            .get("Parameters")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|p| p.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names
    }
}
