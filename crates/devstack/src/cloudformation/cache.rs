//! The SAM transform's output kept, so that a test binary, the demo or the bench does not start
//! Python and import the translator (about a second of CPU) for a translation made before:
//!
//! - in memory, once per process for a template and its parameter values;
//! - on disk, `target/sam-translate/<key>.json`, where `key` is the SHA-256 of everything the
//!   output depends on: the template's text, `sam_translate.py`, the code URI, the parameter
//!   values, the Python that runs it and its aws-sam-translator (the package's `__init__.py`,
//!   which holds its version). Where that package is not found, nothing is kept on disk; a
//!   kept translation is removed after a week.
//!
//! `Translated::translate` itself (the template tests' translations) always runs the transform.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

use super::samconfig::Parameters;
use super::translate::{Translated, HELPER, PACKAGED_CODE_URI};

impl Translated {
    /// [`Translated::translate`], once per process for the same file and parameter values
    /// (later calls, and calls made while it runs, get a copy of the first one's result, an
    /// error included), and read from the disk cache when an earlier process made it.
    pub fn cached(template: &Path, parameters: &Parameters) -> anyhow::Result<Translated> {
        type Slot = Arc<OnceLock<Result<Translated, String>>>;
        static CACHE: OnceLock<Mutex<HashMap<(PathBuf, Parameters), Slot>>> = OnceLock::new();
        let slot: Slot = CACHE
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((template.to_owned(), parameters.clone()))
            .or_default()
            .clone();
        slot.get_or_init(|| {
            from_disk_or_translate(template, parameters).map_err(|e| format!("{e:#}"))
        })
        .clone()
        .map_err(anyhow::Error::msg)
    }
}

fn from_disk_or_translate(template: &Path, parameters: &Parameters) -> anyhow::Result<Translated> {
    let Some(file) =
        disk_key(template, parameters).map(|key| cache_dir().join(format!("{key}.json")))
    else {
        return Translated::translate(template, parameters);
    };
    if let Some(kept) = std::fs::read(&file)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .and_then(|doc| Translated::from_document(doc).ok())
    {
        return Ok(kept);
    }
    let translated = Translated::translate(template, parameters)?;
    prune(&cache_dir());
    // Written aside and renamed: a process reading at the same time sees all of it or nothing.
    let partial = file.with_extension(format!("json.{}", std::process::id()));
    let written = std::fs::create_dir_all(cache_dir())
        .and_then(|()| std::fs::write(&partial, translated.document().to_string()))
        .and_then(|()| std::fs::rename(&partial, &file));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    Ok(translated)
}

/// How long a kept translation stays: the demo's parameters (a loopback port in `ForwardUrl`)
/// differ from run to run, so its translations are not reused and should not pile up.
const KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

/// Removes the kept translations older than [`KEEP`].
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age > KEEP);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `target/sam-translate/` at the workspace root.
fn cache_dir() -> PathBuf {
    crate::moto::workspace_root().join("target/sam-translate")
}

/// The disk cache's key, or `None` where the translator's package cannot be read.
fn disk_key(template: &Path, parameters: &Parameters) -> Option<String> {
    let python = crate::moto::python().ok()?;
    let translator = translator_init(&python)?;
    let mut hash = Sha256::new();
    for part in [
        std::fs::read(template).ok()?,
        HELPER.as_bytes().to_vec(),
        PACKAGED_CODE_URI.as_bytes().to_vec(),
        parameters.to_json().to_string().into_bytes(),
        python.display().to_string().into_bytes(),
        translator,
    ] {
        // Length-prefixed, so that no two different inputs hash the same concatenation.
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(&part);
    }
    Some(hex::encode(hash.finalize()))
}

/// `samtranslator/__init__.py` of the venv `python` belongs to (`<venv>/bin/python` ->
/// `<venv>/lib/python3.*/site-packages/samtranslator/__init__.py`).
fn translator_init(python: &Path) -> Option<Vec<u8>> {
    let lib = python.parent()?.parent()?.join("lib");
    let found = std::fs::read_dir(&lib)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("site-packages/samtranslator/__init__.py"))
        .find(|path| path.is_file())?;
    std::fs::read(&found)
        .with_context(|| found.display().to_string())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_the_parameter_values() {
        let template = super::super::template_path();
        let mut parameters = Parameters::default();
        let Some(a) = disk_key(&template, &parameters) else {
            return; // no venv: nothing is kept on disk
        };
        assert_eq!(disk_key(&template, &parameters), Some(a.clone()));
        parameters.set("ForwardUrl", "https://example.com");
        assert_ne!(disk_key(&template, &parameters), Some(a));
    }
}
