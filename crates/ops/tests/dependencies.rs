//! What `inbox-ops` is built from: the library and the AWS SDK, plus a few small crates for the
//! command line and its output, the library's own HMAC crates and HTTP client for `smoke`, and
//! `stack-config` (the readers of template.yaml and samconfig.toml). Its manifest's dependency tables (normal, build and
//! target-specific; not dev-dependencies, which the tests alone use) name nothing else, so the
//! operator's tool never compiles the dev stack, an HTTP server or a zip reader.

/// Every crate `inbox-ops` may depend on.
const ALLOWED: &[&str] = &[
    "inbox",
    // template.yaml and samconfig.toml, read as the dev stack and the bench read them (the
    // preflight, the audit, `init`, `destroy`): two readers and nothing of the project.
    "stack-config",
    "aws-config",
    "aws-sdk-dynamodb",
    "aws-sdk-sqs",
    "aws-sdk-lambda",
    "aws-sdk-cloudformation",
    "aws-sdk-cloudwatch",
    "clap",
    "serde",
    "serde_json",
    "serde_yaml",
    "anyhow",
    "tokio",
    "base64",
    "jiff",
    // `replay`'s progress bar.
    "indicatif",
    // `secret set`'s prompt that does not echo the secret (indicatif's own terminal crate).
    "console",
    // `smoke` signs a test event and sends it over HTTPS: the library's own HMAC crates and
    // HTTP client (in the tree already through the consumer's forwarder).
    "hmac",
    "sha2",
    "hex",
    "reqwest",
    // ... and every family a preset uses: HMAC-SHA1 (the library's own), Twilio's form body.
    "sha1",
    "form_urlencoded",
    // `preflight` describes the secrets the sources reference (the library reads their values
    // with it).
    "aws-sdk-secretsmanager",
    // `preflight` warns of an EventBridge bus with no rule for a source routed to it.
    "aws-sdk-eventbridge",
    // `destroy` empties the retained payload bucket (every object version) before deleting it.
    "aws-sdk-s3",
    // `console`: the HTTP server on loopback, its server-rendered pages, the run's tokens
    // (random, compared in constant time), its errors, the browser opened.
    "axum",
    "maud",
    "rand",
    "subtle",
    "thiserror",
    "webbrowser",
];

/// Named here so that a change to [`ALLOWED`] cannot let them in unnoticed.
const NEVER: &[&str] = &[
    "devstack",
    "demo",
    "bench",
    "e2e",
    "tiny_http",
    "hyper",
    "hyper-util",
    "zip",
];

/// The crate a `package = "..."` inside `value` names, if any.
fn package_of(value: &str) -> Option<String> {
    value.match_indices("package").find_map(|(at, word)| {
        let rest = value[at + word.len()..].trim_start().strip_prefix('=')?;
        rest.trim_start()
            .strip_prefix('"')?
            .split('"')
            .next()
            .map(str::to_owned)
    })
}

/// Whether a table header (`dependencies`, `target.'cfg(unix)'.build-dependencies`, ...) is
/// one of the tables of what the crate is built from.
fn is_dependency_table(header: &str) -> bool {
    matches!(
        header.rsplit('.').next(),
        Some("dependencies" | "build-dependencies")
    )
}

/// The crate names in the manifest's dependency tables: `name = ...`, `name.workspace = true`
/// and `[dependencies.name]`; a renamed one (`package = "..."`) under both names.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut found = Vec::new();
    // Inside a dependency table (true) or a `[dependencies.name]` table (false).
    let mut table = None;
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            table = None;
            if is_dependency_table(header) {
                table = Some(true);
            } else if let Some((owner, name)) = header.rsplit_once('.') {
                if is_dependency_table(owner) {
                    found.push(name.trim_matches('"').to_owned());
                    table = Some(false);
                }
            }
            continue;
        }
        let (Some(whole_table), Some((key, value))) = (table, line.split_once('=')) else {
            continue;
        };
        if line.starts_with('#') {
            continue;
        }
        let key = key.trim();
        if whole_table {
            let name = key.split('.').next().unwrap_or(key).trim_matches('"');
            found.push(name.to_owned());
            found.extend(package_of(value));
        } else if key == "package" {
            found.extend(package_of(line));
        }
    }
    found
}

#[test]
fn the_manifest_names_only_the_library_the_sdk_and_the_allowed_crates() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let manifest = std::fs::read_to_string(path).expect("crates/ops/Cargo.toml");
    let deps = dependencies(&manifest);
    assert!(
        deps.iter().any(|name| name == "inbox") && deps.iter().any(|name| name == "aws-sdk-sqs"),
        "the reader found the dependencies: {deps:?}"
    );
    let outside: Vec<_> = deps
        .iter()
        .filter(|name| !ALLOWED.contains(&name.as_str()))
        .collect();
    assert!(
        outside.is_empty(),
        "inbox-ops depends on crates outside its list: {outside:?}"
    );
    for never in NEVER {
        assert!(!ALLOWED.contains(never), "{never} is never allowed");
    }
}

#[test]
fn the_reader_sees_every_form_of_a_dependency() {
    let manifest = r#"
[package]
name = "x"

[dependencies]
inbox.workspace = true
clap = { workspace = true, features = ["package-x"] }
tiny = { package = "tiny_http", version = "0.12" }

[dependencies.devstack]
path = "../devstack"

[dependencies.web]
package = "hyper"
version = "1"

[target.'cfg(unix)'.dependencies]
zip = "9"

[build-dependencies]
reqwest = "0.12"

[dev-dependencies]
devstack = { path = "../devstack" }
"#;
    let names = dependencies(manifest);
    for expected in [
        "inbox",
        "clap",
        "tiny",
        "tiny_http",
        "web",
        "devstack",
        "hyper",
        "zip",
        "reqwest",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }
    assert_eq!(
        names.iter().filter(|n| *n == "devstack").count(),
        1,
        "dev-dependencies are not counted: {names:?}"
    );
    assert_eq!(names.len(), 9, "{names:?}");
}
