//! The library's modules in layers (docs/layout.md, "The library's modules, in layers"): each
//! module imports only from its own layer or below, the imports have no cycle, and every
//! module of `src/` is in the picture. Imports are read from the sources (`crate::name`,
//! `crate::{a, b}`), test code and comments left out. The workspace crates' graph too (docs/layout.md,
//! "The crates"): the picture and the manifests agree, and it has no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The picture: module -> its layer number.
fn layers() -> BTreeMap<String, u32> {
    let layout = crate_dir().join("../../docs/layout.md");
    let text = std::fs::read_to_string(&layout).expect("docs/layout.md");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("layer") {
            continue;
        }
        let number: u32 = words
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a layer number: {line}"));
        let _name = words.next();
        for module in words {
            assert!(
                out.insert(module.to_owned(), number).is_none(),
                "{module} twice in the picture"
            );
        }
    }
    assert!(out.len() > 10, "the picture was found: {out:?}");
    out
}

/// The code of a file without its tests and its comments.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("a source file");
    let text = match text.find("#[cfg(test)]") {
        Some(cut) => &text[..cut],
        None => &text[..],
    };
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate modules `code` names: `crate::name` and each first name in `crate::{...}`.
fn imports(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                let name = ident(part.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Top-level module -> the crate modules it imports (itself left out).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir().join("src");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).expect("under src/");
            let is_tests = rel.file_name().is_some_and(|f| f == "tests.rs");
            if path.extension().is_none_or(|e| e != "rs") || is_tests {
                continue;
            }
            let first = rel
                .components()
                .next()
                .and_then(|c| c.as_os_str().to_str())
                .expect("a name");
            let module = first.trim_end_matches(".rs").to_owned();
            if module == "lib" {
                continue;
            }
            let mut named = imports(&code_of(&path));
            named.remove(&module);
            out.entry(module).or_default().extend(named);
        }
    }
    out
}

#[test]
fn every_module_imports_only_from_its_layer_or_below() {
    let layers = layers();
    let graph = graph();
    let modules: BTreeSet<_> = graph.keys().cloned().collect();
    let pictured: BTreeSet<_> = layers.keys().cloned().collect();
    assert_eq!(
        modules, pictured,
        "the picture names every module of src/, and no other"
    );
    let mut upward = Vec::new();
    for (module, named) in &graph {
        for other in named.iter().filter(|n| layers.contains_key(*n)) {
            if layers[other] > layers[module] {
                upward.push(format!(
                    "{module} (layer {}) imports {other} (layer {})",
                    layers[module], layers[other]
                ));
            }
        }
    }
    assert!(upward.is_empty(), "imports that go up: {upward:#?}");
}

#[test]
fn the_module_imports_have_no_cycle() {
    let graph = graph();
    // Kahn's algorithm: a module whose imports are all placed is placed; what is left over
    // sits on a cycle.
    let mut placed = BTreeSet::new();
    loop {
        let ready: Vec<_> = graph
            .iter()
            .filter(|(m, named)| {
                !placed.contains(*m)
                    && named
                        .iter()
                        .all(|n| placed.contains(n) || !graph.contains_key(n))
            })
            .map(|(m, _)| m.clone())
            .collect();
        if ready.is_empty() {
            break;
        }
        placed.extend(ready);
    }
    let left: Vec<_> = graph.keys().filter(|m| !placed.contains(*m)).collect();
    assert!(left.is_empty(), "modules on a cycle: {left:?}");
}

#[test]
fn the_reader_sees_both_import_forms_and_skips_tests_and_comments() {
    let named = imports("use crate::a::B;\nuse crate::{c, d::E, self};\nlet x = crate::f(1);");
    assert_eq!(
        named.into_iter().collect::<Vec<_>>(),
        ["a", "c", "d", "f", "self"]
    );
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("m.rs");
    std::fs::write(
        &file,
        "use crate::up; // crate::comment\n#[cfg(test)]\nmod tests { use crate::tested; }",
    )
    .expect("written");
    assert_eq!(
        imports(&code_of(&file)).into_iter().collect::<Vec<_>>(),
        ["up"]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// docs/design.md §4's transition table, read against the ledger as the picture above is read
/// against the modules.
#[path = "layers/transitions.rs"]
mod transitions;
/// A crate's workspace dependencies: (normal and build, those for its tests alone).
type Crates = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

/// The crate picture of docs/layout.md: `crate NAME: DEPS | DEV-DEPS` lines.
fn crates_drawn() -> Crates {
    let layout = crate_dir().join("../../docs/layout.md");
    let text = std::fs::read_to_string(&layout).expect("docs/layout.md");
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect();
    text.lines()
        .filter_map(|line| line.strip_prefix("crate "))
        .map(|line| {
            let (name, deps) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("crate NAME: ...: {line}"));
            let (normal, dev) = deps.split_once('|').unwrap_or((deps, ""));
            (name.trim().to_owned(), (words(normal), words(dev)))
        })
        .collect()
}

/// The same from the manifests, as `cargo metadata` reads them: each workspace crate's
/// dependencies on other workspace crates.
fn crates_built() -> Crates {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(crate_dir().join("../.."))
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut crates = Crates::new();
    for package in packages {
        let name = package["name"].as_str().expect("a name").to_owned();
        let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("a dependency's name");
            if !members.contains(dep_name) {
                continue;
            }
            if dep["kind"].as_str() == Some("dev") {
                dev.insert(dep_name.to_owned());
            } else {
                normal.insert(dep_name.to_owned());
            }
        }
        let dev = dev.difference(&normal).cloned().collect();
        crates.insert(name, (normal, dev));
    }
    crates
}

#[test]
fn the_crate_picture_is_the_manifests() {
    let drawn = crates_drawn();
    let built = crates_built();
    assert!(
        built.contains_key("inbox") && built.contains_key("devstack"),
        "cargo metadata read: {built:?}"
    );
    for (name, deps) in &built {
        assert_eq!(
            drawn.get(name),
            Some(deps),
            "docs/layout.md's crate {name} (normal | dev-only workspace dependencies)"
        );
    }
    let extra: Vec<_> = drawn.keys().filter(|n| !built.contains_key(*n)).collect();
    assert!(
        extra.is_empty(),
        "drawn but not in the workspace: {extra:?}"
    );
}

#[test]
fn the_crate_graph_has_no_cycle_and_keeps_the_tools_apart() {
    let built = crates_built();
    let all = |name: &str| -> BTreeSet<String> {
        let (normal, dev) = &built[name];
        normal.union(dev).cloned().collect()
    };
    // A crate reaching itself through any dependency, a dev-dependency included.
    for start in built.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = all(start).into_iter().collect();
        while let Some(name) = stack.pop() {
            assert_ne!(&name, start, "{start} depends on itself through {seen:?}");
            if seen.insert(name.clone()) {
                stack.extend(all(&name));
            }
        }
    }
    for tool in ["inbox-ops", "demo"] {
        assert!(
            !all("devstack").contains(tool),
            "the dev stack depends on {tool}"
        );
    }
    assert!(
        !built["inbox-ops"].0.contains("devstack"),
        "inbox-ops depends on the dev stack"
    );
    assert_eq!(
        all("inbox"),
        BTreeSet::from(["lambda-idempotency".to_owned()]),
        "the library's tests build no other crate of the workspace"
    );
}
