//! docs/deploying.md's scripted first deploy, run as written on the local stack: the block after
//! its `rehearsed by` marker, each `cargo run -q -p inbox-ops -- …` line run as this binary and
//! `make deploy` as what it does short of AWS (the preflight, then the translated template
//! created on moto's CloudFormation with the samconfig.toml written, as `sam deploy` would
//! create it). Prints the time taken and the commands counted (docs/testing.md).

use std::time::Instant;

use devstack::cloudformation::{deploy_local_with, Parameters};

use super::init::{ops, temp_dir};
use super::{preflight, template_arg, workspace_root};

/// The commands of the first ```sh block after the marker, continuation lines joined.
fn rehearsed_commands() -> Vec<String> {
    let doc = std::fs::read_to_string(workspace_root().join("docs/deploying.md"))
        .expect("docs/deploying.md");
    let marker = "<!-- rehearsed by crates/ops/tests/preflight/rehearsal.rs";
    let after = &doc[doc
        .find(marker)
        .expect("the rehearsal marker in docs/deploying.md")..];
    let block = &after[after.find("```sh\n").expect("a sh block after the marker") + 6..];
    let block = &block[..block.find("```").expect("the block ends")];
    block
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_first_deploy_runs_as_written_to_a_created_stack() {
    let commands = rehearsed_commands();
    assert_eq!(
        commands.last().map(String::as_str),
        Some("make deploy"),
        "{commands:?}"
    );
    let started = Instant::now();
    let dir = temp_dir("rehearsal");
    let mut deployed = None;
    for command in &commands {
        if let Some(rest) = command.strip_prefix("cargo run -q -p inbox-ops -- ") {
            let args: Vec<&str> = rest.split_whitespace().collect();
            assert!(
                !rest.contains(['\'', '"', '$']),
                "one plain command line: {command}"
            );
            let run = ops(&dir, &args, "").await;
            assert_eq!(run.code, 0, "{command}: {}", run.text());
        } else if command == "make deploy" {
            let template = template_arg();
            let checked = preflight(&dir, &["--template", &template], &[]).await;
            assert_eq!(checked.code, 0, "the preflight: {}", checked.text());
            let written =
                stack_config::Samconfig::load(&dir.join("samconfig.toml")).expect("samconfig.toml");
            let region = written.region.clone().expect("init writes the region");
            let stack_name = written.stack_name.clone().expect("init writes the stack");
            let parameters =
                Parameters::from_samconfig(&dir.join("samconfig.toml")).expect("parameters");
            devstack::moto::shared();
            let sdk = inbox_ops::aws::config()
                .await
                .into_builder()
                .region(aws_config::Region::new(region))
                .build();
            let stack = deploy_local_with(&sdk, &stack_name, &parameters)
                .await
                .unwrap_or_else(|e| panic!("the stack, as sam deploy creates it: {e:#}"));
            deployed = Some((stack, written));
        } else {
            panic!("a command the rehearsal does not know: {command}");
        }
    }
    let elapsed = started.elapsed();
    let (stack, written) = deployed.expect("make deploy ran");
    assert!(
        stack.outputs.contains_key("WebhookUrl"),
        "{:?}",
        stack.outputs
    );
    assert_eq!(
        stack
            .receiver
            .environment
            .get("WEBHOOK_SOURCES")
            .map(String::as_str),
        written.get("WebhookSources"),
        "the receiver gets the sources init wrote"
    );
    assert_eq!(
        stack
            .consumer
            .environment
            .get("FORWARD_URL")
            .map(String::as_str),
        written.get("ForwardUrl")
    );
    if written.get("AlarmEmail").is_some() {
        assert!(
            stack.resources.contains_key("AlarmTopic"),
            "an alarm e-mail creates the topic"
        );
    }
    println!(
        "rehearsal: {} commands, 0 files edited by hand, {:.1} s from init to a created stack (moto)",
        commands.len(),
        elapsed.as_secs_f64()
    );
}
