//! The functions' environment for a local run, written as the `--env-file` `cargo lambda
//! watch` reads: each function's configuration as the local stack holds it (read back from
//! moto's Lambda), and the standard SDK settings pointed at moto. The sources' secrets are not
//! in it: the receiver reads them from moto's Secrets Manager at start-up, as deployed.

use std::path::Path;

use anyhow::Context as _;

use devstack::cloudformation::Stack;
use devstack::local_stack::functions_env;

/// Variables the functions get locally, in env-file order: both functions' environment from
/// the stack ([`functions_env`]), then the standard SDK settings pointed at moto with dummy
/// credentials.
pub fn local_env(stack: &Stack, aws_endpoint: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = functions_env(stack)?.into_iter().collect();
    out.extend(
        [
            ("AWS_ENDPOINT_URL", aws_endpoint),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
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
}
