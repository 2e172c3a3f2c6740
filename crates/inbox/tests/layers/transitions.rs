//! docs/design.md §4's table of the ledger's transitions, read against the ledger: one row per
//! write the ledger's port makes (each `LedgerStore` method that writes, read from
//! `src/ledger/mod.rs`), and each row's condition the very expression the DynamoDB adapter
//! sends (the `*_CONDITION` the code composes), placeholders and all.

use std::collections::BTreeMap;

use inbox::ledger::{
    CLAIM_CONDITION, DEFER_CONDITION, FINISH_CONDITION, GIVE_BACK_REPLAY_CONDITION,
    GUARD_BODY_CONDITION, KEEP_HOOK_SECRET_CONDITION, MARK_RESENT_CONDITION,
    NOTE_REFUSAL_CONDITION, OPEN_HANDSHAKE_CONDITION, PAIR_REPLAY_TAKE_CONDITION,
    PAIR_TAKE_CONDITION, RELEASE_CONDITION, REPLAY_COMPLETE_CONDITION, REPLAY_TAKE_CONDITION,
    REQUEST_REPLAY_CONDITION, TAKE_CONDITION,
};

use super::crate_dir;

/// The port's methods that only read: no row of their own.
const READS: [&str; 2] = ["get", "hook_secret"];

/// Each writing method of `LedgerStore`, the rows of the table it makes (a take is an event's
/// or an (event, destination) pair's, by its `Take`).
const METHODS: [(&str, &[&str]); 15] = [
    ("claim", &["claim"]),
    ("release", &["release"]),
    ("mark_resent", &["mark resent"]),
    ("take", &["take", "pair take"]),
    ("complete", &["complete"]),
    ("fail", &["fail"]),
    ("defer", &["defer"]),
    ("note_refusal", &["note refusal"]),
    ("open_handshake", &["open a handshake window"]),
    ("keep_hook_secret", &["keep a hook secret"]),
    ("guard_body", &["guard body"]),
    ("request_replay", &["request replay"]),
    ("take_replay", &["replay take", "pair replay take"]),
    ("complete_replay", &["replay complete"]),
    ("give_back_replay", &["give back a replay"]),
];

/// Each row's condition in the code.
fn conditions() -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        ("claim", CLAIM_CONDITION.to_owned()),
        ("release", RELEASE_CONDITION.clone()),
        ("mark resent", MARK_RESENT_CONDITION.to_owned()),
        ("take", TAKE_CONDITION.clone()),
        ("pair take", PAIR_TAKE_CONDITION.clone()),
        ("complete", FINISH_CONDITION.to_owned()),
        ("fail", FINISH_CONDITION.to_owned()),
        ("defer", DEFER_CONDITION.to_owned()),
        ("note refusal", NOTE_REFUSAL_CONDITION.to_owned()),
        (
            "open a handshake window",
            OPEN_HANDSHAKE_CONDITION.to_owned(),
        ),
        ("keep a hook secret", KEEP_HOOK_SECRET_CONDITION.to_owned()),
        ("guard body", GUARD_BODY_CONDITION.to_owned()),
        ("request replay", REQUEST_REPLAY_CONDITION.clone()),
        ("replay take", REPLAY_TAKE_CONDITION.clone()),
        ("pair replay take", PAIR_REPLAY_TAKE_CONDITION.clone()),
        ("replay complete", REPLAY_COMPLETE_CONDITION.to_owned()),
        ("give back a replay", GIVE_BACK_REPLAY_CONDITION.clone()),
    ])
}

/// The table's rows: transition -> its condition cell, the expression alone (the cell's first
/// backticked part; what follows it, `:held` RECEIVED and the like, says what a placeholder
/// stands for).
fn table() -> BTreeMap<String, String> {
    let path = crate_dir().join("../../docs/design.md");
    let doc = std::fs::read_to_string(&path).expect("docs/design.md");
    let section = doc
        .split("\n## 4. ")
        .nth(1)
        .and_then(|s| s.split("\n## 5. ").next())
        .expect("§4");
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in section.lines() {
        if line.starts_with("| transition |") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("| ---") {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 4, "four cells: {line}");
        let condition = cells[2]
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("a condition in backticks: {line}"));
        assert!(
            rows.insert(cells[0].to_owned(), condition.to_owned())
                .is_none(),
            "{} twice",
            cells[0]
        );
    }
    rows
}

/// The `LedgerStore` trait's method names, read from its declaration.
fn port_methods() -> Vec<String> {
    let path = crate_dir().join("src/ledger/mod.rs");
    let code = std::fs::read_to_string(&path).expect("src/ledger/mod.rs");
    let body = code
        .split("pub trait LedgerStore")
        .nth(1)
        .expect("the trait")
        .split("\n}\n")
        .next()
        .expect("its body");
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("fn "))
        .map(|l| l.split(['(', '<']).next().expect("a name").to_owned())
        .collect()
}

#[test]
fn every_write_of_the_ledger_has_its_row_and_no_row_is_left_over() {
    let methods = port_methods();
    assert!(methods.len() > 10, "the trait was read: {methods:?}");
    let mapped: BTreeMap<_, _> = METHODS.into_iter().collect();
    for m in &methods {
        assert!(
            READS.contains(&m.as_str()) || mapped.contains_key(m.as_str()),
            "LedgerStore::{m} writes, and no row of design.md §4's table says how"
        );
    }
    let rows = table();
    let expected: Vec<&str> = METHODS
        .iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    let mut documented: Vec<&str> = rows.keys().map(String::as_str).collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_unstable();
    documented.sort_unstable();
    assert_eq!(documented, expected_sorted, "design.md §4's rows");
}

#[test]
fn each_rows_condition_is_the_expression_the_code_sends() {
    let rows = table();
    for (row, code) in conditions() {
        let doc = rows
            .get(row)
            .unwrap_or_else(|| panic!("no row `{row}` in design.md §4"));
        assert_eq!(
            doc, &code,
            "design.md §4, `{row}`: the document, then the code"
        );
    }
}
