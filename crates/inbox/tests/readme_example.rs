//! The README's `Processor` is the compiled one: README.md holds, as one ```rust block, exactly
//! the lines of `examples/processor.rs` between `// ANCHOR: processor` and
//! `// ANCHOR_END: processor` (the example is built by `cargo test`, so the README cannot show
//! code that does not compile).

use std::path::Path;

use inbox::clock::Clock as _;

const ANCHOR: &str = "// ANCHOR: processor";
const ANCHOR_END: &str = "// ANCHOR_END: processor";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines between the anchors, without them.
fn anchored(example: &str) -> Vec<&str> {
    let lines: Vec<&str> = example.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == ANCHOR)
        .expect("the example has `// ANCHOR: processor`");
    let end = lines
        .iter()
        .position(|l| l.trim() == ANCHOR_END)
        .expect("the example has `// ANCHOR_END: processor`");
    assert!(start < end, "ANCHOR comes before ANCHOR_END");
    lines[start + 1..end].to_vec()
}

/// Every ```rust block of a Markdown text, as its lines.
fn rust_blocks(markdown: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in markdown.lines() {
        match current.as_mut() {
            None if line.trim_start().starts_with("```rust") => current = Some(Vec::new()),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => {
                blocks.extend(current.take());
            }
            Some(block) => block.push(line),
        }
    }
    blocks
}

#[test]
fn the_readme_shows_the_compiled_processor() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = read(&crate_dir.join("examples/processor.rs"));
    let readme = read(&crate_dir.join("../../README.md"));
    let expected = anchored(&example);
    assert!(
        expected.iter().any(|l| l.contains("impl Processor for")),
        "the anchored lines hold the Processor implementation"
    );
    let blocks = rust_blocks(&readme);
    assert!(
        blocks.contains(&expected),
        "README.md has no ```rust block equal to the anchored lines of examples/processor.rs; \
         paste exactly these lines:\n{}",
        expected.join("\n")
    );
}

#[test]
fn rust_blocks_are_found_whole() {
    let md = "text\n```rust\nfn a() {}\n\nfn b() {}\n```\n```sh\nmake\n```\n```rust\nx\n```\n";
    assert_eq!(
        rust_blocks(md),
        vec![vec!["fn a() {}", "", "fn b() {}"], vec!["x"]]
    );
    let ex = "a\n// ANCHOR: processor\nb\nc\n// ANCHOR_END: processor\nd\n";
    assert_eq!(anchored(ex), vec!["b", "c"]);
}

#[path = "../examples/discord_followup.rs"]
mod discord_followup;

/// Issue 35: the Discord follow-up example runs end to end against its local stand-in for
/// Discord's API: the signed slash command is answered at once with a deferred response, and
/// the consumer's `FollowUp` edits it through the interaction webhook, once, with the
/// interaction's own application id and token, inside the token's 15 minutes.
#[tokio::test]
async fn the_discord_follow_up_example_edits_the_deferred_answer_on_a_stand_in() {
    let (api, seen) = discord_followup::stand_in().await.expect("the stand-in");
    let out = discord_followup::run(&api, &seen)
        .await
        .expect("the example");
    assert_eq!((out.status, out.answer.as_str()), (200, r#"{"type":5}"#));
    assert_eq!(
        out.calls,
        [(
            "PATCH /api/v10/webhooks/1234560123453231555/A_UNIQUE_TOKEN/messages/@original HTTP/1.1"
                .to_owned(),
            r#"{"content":"/blep: done"}"#.to_owned()
        )]
    );
    // The snowflake's time is the interaction's: the token's 15 minutes run from it.
    let now = inbox::clock::SystemClock.now_ms();
    let id = discord_followup::snowflake_at(now);
    assert_eq!(discord_followup::created_ms(&id), Some(now));
    assert_eq!(discord_followup::TOKEN_LIFETIME_MS, 900_000);
}
