//! `inbox-ops pause` and `inbox-ops resume`: the consumer's SQS event source mapping disabled
//! or enabled (`UpdateEventSourceMapping`), so delivery to the system of record holds while the
//! receiver keeps accepting; and how every mapping command finds the mapping: by `--uuid`, by
//! `--function` (`ListEventSourceMappings`, its one SQS mapping) or by `--stack` (the stack's
//! one `AWS::Lambda::EventSourceMapping`, whose physical id is the mapping's UUID).

use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_lambda::operation::get_event_source_mapping::GetEventSourceMappingOutput;

/// Which event source mapping: at most one of these; none is `--stack webhook-inbox`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
#[group(required = false, multiple = false)]
pub struct MappingArgs {
    /// The mapping's UUID (the stack's output ConsumerEventSourceMapping).
    #[arg(long, value_name = "UUID", value_parser = NonEmptyStringValueParser::new())]
    pub uuid: Option<String>,
    /// The consumer function's name or ARN: its one SQS event source mapping.
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub function: Option<String>,
    /// The stack's name: its one event source mapping [default: webhook-inbox, when neither
    /// --uuid nor --function is given].
    #[arg(long, value_name = "STACK", value_parser = NonEmptyStringValueParser::new())]
    pub stack: Option<String>,
}

/// `pause`'s and `resume`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub mapping: MappingArgs,
    /// Seconds to wait for the mapping to settle (Disabled, Enabled).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub wait: u64,
    /// One destination only (docs/routing.md): its events wait, the mapping and the other
    /// destinations run on.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["uuid", "function"])]
    pub destination: Option<String>,
    /// With --destination: the ledger table [default: the stack's LedgerTableName].
    #[arg(long, value_name = "LEDGER_TABLE", requires = "destination", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
}

/// How often a wait asks for the mapping's state.
const POLL: Duration = Duration::from_millis(500);

/// Where the mapping comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Locator {
    Uuid(String),
    Function(String),
    Stack(String),
}

impl Locator {
    pub fn from_args(args: &MappingArgs) -> anyhow::Result<Locator> {
        match (&args.uuid, &args.function, &args.stack) {
            (Some(u), None, None) => Ok(Locator::Uuid(u.clone())),
            (None, Some(f), None) => Ok(Locator::Function(f.clone())),
            (None, None, Some(s)) => Ok(Locator::Stack(s.clone())),
            (None, None, None) => Ok(Locator::Stack(crate::stack::DEFAULT_STACK.to_owned())),
            _ => bail!("give one of --uuid, --function, --stack"),
        }
    }
}

/// The mapping as an operator sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub uuid: String,
    /// `Enabled`, `Disabled`, `Enabling`, `Disabling`, `Updating`, ...
    pub state: String,
    pub function_arn: String,
    pub event_source_arn: String,
    pub batch_size: Option<i32>,
    pub maximum_concurrency: Option<i32>,
}

impl Mapping {
    /// Delivery holds: disabled, or on its way there.
    pub fn paused(&self) -> bool {
        matches!(self.state.as_str(), "Disabled" | "Disabling")
    }

    fn from_output(out: &GetEventSourceMappingOutput) -> Mapping {
        Mapping {
            uuid: out.uuid().unwrap_or_default().to_owned(),
            state: out.state().unwrap_or("Unknown").to_owned(),
            function_arn: out.function_arn().unwrap_or_default().to_owned(),
            event_source_arn: out.event_source_arn().unwrap_or_default().to_owned(),
            batch_size: out.batch_size(),
            maximum_concurrency: out.scaling_config().and_then(|s| s.maximum_concurrency()),
        }
    }
}

/// The mapping's UUID, found as `locator` says.
pub async fn find(config: &aws_config::SdkConfig, locator: &Locator) -> anyhow::Result<String> {
    match locator {
        Locator::Uuid(uuid) => Ok(uuid.clone()),
        Locator::Function(name) => {
            let lambda = aws_sdk_lambda::Client::new(config);
            let mappings: Vec<_> = lambda
                .list_event_source_mappings()
                .function_name(name)
                .into_paginator()
                .items()
                .send()
                .collect::<Result<Vec<_>, _>>()
                .await
                .with_context(|| format!("ListEventSourceMappings --function-name {name}"))?
                .into_iter()
                .filter(|m| m.event_source_arn().is_some_and(|a| a.contains(":sqs:")))
                .filter_map(|m| m.uuid().map(str::to_owned))
                .collect();
            one(
                mappings,
                &format!("function {name} has"),
                "SQS event source mapping",
            )
        }
        Locator::Stack(stack) => {
            let mappings =
                crate::stack::physical_ids(config, stack, "AWS::Lambda::EventSourceMapping")
                    .await?;
            one(
                mappings,
                &format!("stack {stack} has"),
                "event source mapping",
            )
        }
    }
}

fn one(mut found: Vec<String>, whose: &str, what: &str) -> anyhow::Result<String> {
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!("{whose} no {what}"),
        n => bail!("{whose} {n} of them ({}): give --uuid", found.join(", ")),
    }
}

/// The mapping's configuration and state now.
pub async fn get(lambda: &aws_sdk_lambda::Client, uuid: &str) -> anyhow::Result<Mapping> {
    let out = lambda
        .get_event_source_mapping()
        .uuid(uuid)
        .send()
        .await
        .with_context(|| format!("GetEventSourceMapping {uuid}"))?;
    Ok(Mapping::from_output(&out))
}

/// Disables (`enabled` false) or enables the mapping, then waits up to `wait` for the state
/// to settle (`Disabled` or `Enabled`).
pub async fn set_enabled(
    lambda: &aws_sdk_lambda::Client,
    uuid: &str,
    enabled: bool,
    wait: Duration,
) -> anyhow::Result<Mapping> {
    lambda
        .update_event_source_mapping()
        .uuid(uuid)
        .enabled(enabled)
        .send()
        .await
        .with_context(|| format!("UpdateEventSourceMapping {uuid} --enabled {enabled}"))?;
    let target = if enabled { "Enabled" } else { "Disabled" };
    let started = Instant::now();
    loop {
        let mapping = get(lambda, uuid).await?;
        if mapping.state == target || started.elapsed() >= wait {
            return Ok(mapping);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `pause` (`enabled` false) or `resume`.
pub async fn run(args: &PauseArgs, enabled: bool) -> anyhow::Result<ExitCode> {
    let config = crate::aws::config().await;
    let uuid = find(&config, &Locator::from_args(&args.mapping)?).await?;
    let lambda = aws_sdk_lambda::Client::new(&config);
    let mapping = set_enabled(&lambda, &uuid, enabled, Duration::from_secs(args.wait)).await?;
    let (verb, settled) = if enabled {
        ("resumed", mapping.state == "Enabled")
    } else {
        ("paused", mapping.state == "Disabled")
    };
    println!(
        "{verb}: event source mapping {} ({} -> {}) is {}{}",
        mapping.uuid,
        mapping.event_source_arn,
        mapping.function_arn,
        mapping.state,
        if settled {
            ""
        } else {
            " (still settling; `inbox-ops status` shows when it is done)"
        }
    );
    if !enabled {
        println!("the receiver keeps accepting; events wait on the queue until `inbox-ops resume`");
    }
    Ok(ExitCode::SUCCESS)
}

/// The queue URL of an SQS ARN (`arn:aws:sqs:<region>:<account>:<name>`).
pub async fn queue_url_of(sqs: &aws_sdk_sqs::Client, arn: &str) -> anyhow::Result<String> {
    let parts: Vec<&str> = arn.split(':').collect();
    let [_, _, "sqs", _, account, name] = parts.as_slice() else {
        return Err(anyhow!("`{arn}` is not an SQS queue ARN"));
    };
    sqs.get_queue_url()
        .queue_name(*name)
        .queue_owner_aws_account_id(*account)
        .send()
        .await
        .with_context(|| format!("GetQueueUrl {name}"))?
        .queue_url()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no URL for {arn}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_mapping_or_a_message_saying_why() {
        assert_eq!(
            one(vec!["u1".into()], "stack s has", "mapping").unwrap(),
            "u1"
        );
        let none = one(vec![], "stack s has", "event source mapping").unwrap_err();
        assert_eq!(none.to_string(), "stack s has no event source mapping");
        let two = one(
            vec!["a".into(), "b".into()],
            "function f has",
            "SQS event source mapping",
        )
        .unwrap_err()
        .to_string();
        assert!(
            two.contains("2 of them (a, b)") && two.contains("--uuid"),
            "{two}"
        );
    }

    #[test]
    fn disabled_and_disabling_are_paused() {
        let mut m = Mapping {
            uuid: "u".into(),
            state: "Enabled".into(),
            function_arn: String::new(),
            event_source_arn: String::new(),
            batch_size: None,
            maximum_concurrency: None,
        };
        assert!(!m.paused());
        for (state, paused) in [("Disabled", true), ("Disabling", true), ("Enabling", false)] {
            m.state = state.into();
            assert_eq!(m.paused(), paused, "{state}");
        }
    }
}
