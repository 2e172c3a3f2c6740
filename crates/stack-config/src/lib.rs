//! The stack's two files as the code reads them, one reader each: [`template`] (`template.yaml`:
//! the ledger table, the queues, the functions' environment, checked when loaded) and
//! [`samconfig`] (`samconfig.toml` as the SAM CLI reads it, and as `inbox-ops init` writes it).
//! `inbox-ops` (the preflight, the audit, `init`), the dev stack (the local stack's parameters)
//! and the bench (the functions' memory size) read them here and nowhere else.

use std::path::PathBuf;

pub mod samconfig;
pub mod template;

pub use samconfig::Samconfig;
pub use template::Template;

/// The workspace root, where `template.yaml` and `samconfig.toml` are.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `template.yaml` at the workspace root.
pub fn template_path() -> PathBuf {
    workspace_root().join("template.yaml")
}

/// `samconfig.toml` at the workspace root.
pub fn samconfig_path() -> PathBuf {
    workspace_root().join("samconfig.toml")
}
