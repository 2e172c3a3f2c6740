//! The log's `outcome` vocabulary is one enum (`inbox::outcome::LogOutcome`): docs/operations.md
//! lists exactly its values, in its order, and no source file writes an outcome as a literal.

use std::path::PathBuf;

use inbox::outcome::LogOutcome;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The backticked words of the `fields.outcome` bullet, in order.
fn documented() -> Vec<String> {
    let text = std::fs::read_to_string(crate_dir().join("../../docs/operations.md"))
        .expect("docs/operations.md");
    let start = text
        .find("- `fields.outcome`:")
        .expect("the outcome bullet");
    let bullet = &text[start + "- `fields.outcome`:".len()..];
    let bullet = &bullet[..bullet.find("\n- ").unwrap_or(bullet.len())];
    // Backticked words outside parentheses: the parentheses name fields (`error`, ...).
    let mut out = Vec::new();
    let mut depth = 0;
    for (i, part) in bullet.split('`').enumerate() {
        if i % 2 == 0 {
            depth += part.matches('(').count() as i32 - part.matches(')').count() as i32;
        } else if depth == 0 && part.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            out.push(part.to_owned());
        }
    }
    out
}

#[test]
fn the_runbook_lists_every_outcome_in_order() {
    let coded: Vec<_> = LogOutcome::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(documented(), coded);
}

#[test]
fn no_source_writes_an_outcome_as_a_literal() {
    let mut literal = Vec::new();
    let mut dirs = vec![crate_dir().join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                for (n, line) in text.lines().enumerate() {
                    if line.contains("outcome = \"") {
                        literal.push(format!("{}:{}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(
        literal.is_empty(),
        "outcomes written as literals: {literal:?}"
    );
}
