//! `cargo run -p devstack --bin deployer-policy`: derives the IAM policy a deployer needs
//! (devstack::deployer_policy) and rewrites docs/deployer-policy.json and
//! docs/deployer-policy-storage.json with it.
//!
//! ```text
//! deployer-policy [--stack-name NAME] [--dir DIR]
//! ```
//! Run it after a change to template.yaml or to cfn-lint (requirements-dev.txt);
//! tests/template_hardening/deployer_policy.rs fails until the committed files match.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use devstack::deployer_policy::{self, iam_size, MANAGED_POLICY_LIMIT, STACK_NAME};

/// Derives the deployer's IAM policy from the translated template and cfn-lint's resource
/// provider schemas, and writes it as two managed policy documents.
#[derive(Parser, Debug)]
#[command(name = "deployer-policy")]
struct Cli {
    /// The stack name the resource names assume (samconfig.toml's stack_name).
    #[arg(long, default_value = STACK_NAME)]
    stack_name: String,
    /// Where to write the files [default: docs/ at the workspace root].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("deployer-policy: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let derived = deployer_policy::derive(&cli.stack_name)?;
    let dir = cli.dir.clone().unwrap_or_else(deployer_policy::docs_dir);
    derived.write(&dir)?;
    eprintln!(
        "{} resource types, {} distinct handler permissions (cfn-lint {}); left out as not \
         IAM actions: {:?}",
        derived.permissions.len(),
        derived.distinct_permissions().len(),
        derived.cfn_lint_version,
        derived.not_actions
    );
    for (part, text) in derived.rendered()? {
        eprintln!(
            "{}: {} characters of {MANAGED_POLICY_LIMIT}",
            dir.join(part.file_name()).display(),
            iam_size(&text)
        );
    }
    Ok(())
}
