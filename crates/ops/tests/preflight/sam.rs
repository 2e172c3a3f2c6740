//! samconfig.toml as the SAM CLI's own code writes and reads it (aws-sam-cli from
//! requirements-sam.txt, in `.venv-sam`: `make test` installs it), through
//! `samconfig_by_sam.py` beside this file.

use std::path::{Path, PathBuf};

use super::workspace_root;

/// `.venv-sam`'s Python, which has the SAM CLI's modules.
fn sam_python() -> PathBuf {
    let python = workspace_root().join(".venv-sam/bin/python");
    assert!(
        python.exists(),
        "{} is missing: `make .venv-sam/.installed` (make test's prerequisite) installs the SAM CLI",
        python.display()
    );
    python
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/preflight/samconfig_by_sam.py")
}

/// What `sam deploy` takes from `file`: (parameters, stack_name, region), by the SAM CLI's code.
pub fn read_by_sam(file: &Path) -> serde_json::Value {
    let out = std::process::Command::new(sam_python())
        .arg(script())
        .arg("read")
        .arg(file)
        .output()
        .expect("run the SAM CLI's reader");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from the reader")
}

/// `dir/samconfig.toml` as `sam deploy --guided` saves `parameters` for `stack` in `region`.
pub fn write_as_guided(dir: &Path, parameters: &serde_json::Value, stack: &str, region: &str) {
    let out = std::process::Command::new(sam_python())
        .arg(script())
        .arg("write")
        .arg(dir)
        .arg(parameters.to_string())
        .args([stack, region])
        .output()
        .expect("run the SAM CLI's guided writer");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The preflight's reading of `file`, in the reader's JSON shape.
pub fn read_by_preflight(file: &Path) -> serde_json::Value {
    let c = stack_config::Samconfig::load(file).expect("the preflight's reader");
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    serde_json::json!({
        "parameters": c
            .overrides
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect::<serde_json::Map<_, _>>(),
        "stack_name": c.stack_name,
        "region": c.region,
    })
}
