//! `make test` and `make demo` build the same crates with the same features: `cargo tree` of the
//! whole workspace with its dev-dependencies (what `cargo test --workspace --all-targets`
//! resolves) and without them (what `cargo run --bin demo` and `cargo lambda watch`'s `cargo run
//! --bin receiver` resolve) gives every crate both hold the same features. A crate that differs
//! is rebuilt by whichever of the two runs second, and everything above it with it.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each crate `cargo tree` shows (name and version) with the feature sets it is built with:
/// with the tests' dev-dependencies or without, with this package or without it.
fn resolved(dev_dependencies: bool, unified: bool) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "tree",
        "--workspace",
        "--offline",
        "--locked",
        "--prefix",
        "none",
    ])
    .args(["--format", "{p}|{f}"])
    .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    if !dev_dependencies {
        cmd.args(["--edges", "no-dev"]);
    }
    if !unified {
        cmd.args(["--exclude", "unified-features"]);
    }
    let out = cmd.output().expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut crates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once('|') else {
            continue;
        };
        // "name v1.2.3 (/path)" or "name v1.2.3 (proc-macro)": the name and the version.
        let package: Vec<&str> = package.split_whitespace().take(2).collect();
        crates
            .entry(package.join(" "))
            .or_default()
            .insert(features.to_owned());
    }
    crates
}

#[test]
fn the_test_build_and_the_demo_build_resolve_every_shared_crate_alike() {
    let with_dev = resolved(true, true);
    let without = resolved(false, true);
    assert!(
        without.contains_key("inbox v0.1.0") && without.contains_key("hyper v1.12.0"),
        "cargo tree's output was read: {:?}",
        without.keys().take(5).collect::<Vec<_>>()
    );
    let differing: Vec<String> = without
        .iter()
        .filter_map(|(package, features)| {
            let test = with_dev.get(package)?;
            (test != features).then(|| {
                format!("{package}: make test builds it with {test:?}, make demo with {features:?}")
            })
        })
        .collect();
    assert!(
        differing.is_empty(),
        "crates built with other features by the tests' dev-dependencies: add them, with those \
         features, to crates/unified-features/Cargo.toml:\n{}",
        differing.join("\n")
    );
}

#[test]
fn the_package_turns_on_nothing_the_tests_would_not() {
    let mut with = resolved(true, true);
    with.remove("unified-features v0.1.0");
    let without = resolved(true, false);
    assert!(
        without.contains_key("inbox v0.1.0"),
        "cargo tree's output was read"
    );
    let changed: Vec<String> = with
        .iter()
        .filter(|(package, features)| without.get(*package) != Some(*features))
        .map(|(package, features)| {
            format!(
                "{package}: {features:?}, the tests alone {:?}",
                without.get(package)
            )
        })
        .collect();
    assert!(
        changed.is_empty(),
        "crates/unified-features/Cargo.toml turns on more than the tests' dev-dependencies do \
         (default-features = false forgotten?), which rebuilds make test's crates:\n{}",
        changed.join("\n")
    );
}
