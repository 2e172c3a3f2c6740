//! The library's modules in layers (docs/layout.md, "The library's modules, in layers"): each
//! module imports only from its own layer or below, the imports have no cycle, and every
//! module of `src/` is in the picture. Imports are read from the sources (`crate::name`,
//! `crate::{a, b}`), test code and comments left out.

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
