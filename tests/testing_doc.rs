//! docs/testing.md's table of what each test binary checks names exactly the test binaries the
//! workspace builds: this binary's modules (`tests/main.rs`) and every other package's
//! integration tests (their `tests/*.rs` files and `tests/*/main.rs` directories).

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first column of docs/testing.md's table "What each test binary checks": each entry's
/// paths from the workspace's root, as written between backticks (a file named after them,
/// `mod.rs` or `init.rs`, is part of the entry before it, not a binary).
fn documented() -> BTreeSet<String> {
    let doc = read("docs/testing.md");
    let table = doc
        .split("## What each test binary checks")
        .nth(1)
        .expect("the section")
        .split("\n## ")
        .next()
        .expect("its text");
    let mut paths = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().expect("a cell");
        for (i, part) in first.split('`').enumerate() {
            if i % 2 == 1 && (part.starts_with("tests/") || part.starts_with("crates/")) {
                paths.insert(part.to_owned());
            }
        }
    }
    paths
}

/// `mod x;` lines of tests/main.rs, as the paths docs/testing.md writes them.
fn e2e_modules() -> BTreeSet<String> {
    read("tests/main.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "support")
        .map(|m| {
            if root().join("tests").join(m).join("mod.rs").exists() {
                format!("tests/{m}/")
            } else {
                format!("tests/{m}.rs")
            }
        })
        .collect()
}

/// Every other crate's test binaries: `crates/*/tests/x.rs` and `crates/*/tests/x/main.rs`.
fn crate_binaries() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for krate in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let krate = krate.expect("entry").path();
        let Ok(tests) = std::fs::read_dir(krate.join("tests")) else {
            continue;
        };
        let name = krate
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        for entry in tests {
            let path = entry.expect("entry").path();
            let file = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() && path.join("main.rs").exists() {
                found.insert(format!("crates/{name}/tests/{file}/"));
            } else if file.ends_with(".rs") {
                found.insert(format!("crates/{name}/tests/{file}"));
            }
        }
    }
    found
}

#[test]
fn the_table_names_every_test_binary_and_no_other() {
    let documented = documented();
    let built: BTreeSet<String> = e2e_modules().into_iter().chain(crate_binaries()).collect();
    let missing: Vec<_> = built.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "docs/testing.md's table does not describe: {missing:?}"
    );
    let stale: Vec<_> = documented.difference(&built).collect();
    assert!(
        stale.is_empty(),
        "docs/testing.md's table names what is not there: {stale:?}"
    );
}
