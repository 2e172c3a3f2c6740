//! docs/providers.md has one row per preset, no other, each with the retention the preset
//! gives and its handshake.

use inbox::config::presets;

#[test]
fn the_providers_page_lists_every_preset_as_the_table_has_it() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/providers.md"
    ))
    .expect("docs/providers.md");
    let table = doc
        .split("## The presets")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the presets table");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split(" | ").collect())
        .collect();
    let named: Vec<String> = rows
        .iter()
        .map(|r| r[0].trim_start_matches("| ").trim_matches('`').to_owned())
        .collect();
    let expected: Vec<String> = presets::all().keys().cloned().collect();
    assert_eq!(named, expected);
    for (row, (name, preset)) in rows.iter().zip(presets::all()) {
        assert_eq!(row[6], format!("{} h", preset.retention_hours()), "{name}");
        let handshake = preset
            .source
            .get("handshake")
            .and_then(|h| h.as_str())
            .unwrap_or("–");
        assert_eq!(row[7], handshake, "{name}");
        assert!(
            row.last().is_some_and(|l| l.contains(&preset.doc.url)),
            "{name}"
        );
    }
}

#[test]
fn the_readme_counts_the_presets_there_are() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let count = presets::all().len();
    for said in [
        format!("{count} provider presets"),
        format!("a preset name and a secret ({count}: "),
    ] {
        assert!(
            readme.contains(&said),
            "README.md should say \"{said}\" (presets.json has {count})"
        );
    }
}
