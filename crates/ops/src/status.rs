//! `inbox-ops status`: whether delivery is paused (the event source mapping's state), and what
//! waits: the queue's messages visible, in flight and delayed, the age of the oldest (SQS reports
//! it to CloudWatch only: `ApproximateAgeOfOldestMessage`, the last five minutes' maximum), and
//! the dead-letter queue's depth. Nothing is received or changed. Where CloudWatch does not
//! answer (no permission; a local server without it), the age says so and the rest stands.

use crate::esm::MappingArgs;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::process::ExitCode;

use anyhow::Context as _;
use aws_sdk_cloudwatch::types::{Dimension, Statistic};
use aws_sdk_sqs::types::QueueAttributeName as Q;
use serde_json::{json, Value};

use crate::esm::{self, Locator, Mapping};

/// `status`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub mapping: MappingArgs,
    /// The webhook queue's URL [default: the mapping's event source].
    #[arg(long, env = "QUEUE_URL", value_name = "QUEUE_URL", value_parser = NonEmptyStringValueParser::new())]
    pub queue: Option<String>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What a queue holds now (SQS's approximations).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Depth {
    pub waiting: i64,
    pub in_flight: i64,
    pub delayed: i64,
}

/// The `status` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingStatus {
    pub mapping: Mapping,
    pub queue_url: String,
    pub queue: Depth,
    /// Seconds, from CloudWatch: `Ok(None)` without a datapoint in the last five minutes,
    /// `Err` with why CloudWatch did not answer (the rest of the status stands).
    pub oldest_age_seconds: Result<Option<i64>, String>,
    pub dlq_url: Option<String>,
    pub dlq: Option<Depth>,
}

impl MappingStatus {
    pub fn to_json(&self) -> Value {
        let depth = |d: &Depth| json!({"waiting": d.waiting, "in_flight": d.in_flight, "delayed": d.delayed});
        json!({
            "paused": self.mapping.paused(),
            "state": self.mapping.state,
            "event_source_mapping": self.mapping.uuid,
            "function": self.mapping.function_arn,
            "batch_size": self.mapping.batch_size,
            "maximum_concurrency": self.mapping.maximum_concurrency,
            "queue": {
                "url": self.queue_url,
                "oldest_age_seconds": self.oldest_age_seconds.as_ref().ok().copied().flatten(),
                "oldest_age_error": self.oldest_age_seconds.as_ref().err(),
                "messages": depth(&self.queue),
            },
            "dead_letter_queue": self.dlq_url.as_ref().map(|url| json!({
                "url": url,
                "messages": self.dlq.as_ref().map(depth),
            })),
        })
    }

    pub fn to_text(&self) -> String {
        let m = &self.mapping;
        let delivery = if m.paused() {
            "PAUSED (the receiver keeps accepting; `inbox-ops resume` delivers what waits)"
        } else {
            "running"
        };
        let oldest = match &self.oldest_age_seconds {
            Ok(Some(s)) => format!("oldest {s} s"),
            Ok(None) => "oldest: no CloudWatch datapoint in the last five minutes".to_owned(),
            Err(e) => format!("oldest: unknown ({e})"),
        };
        let mut out = format!(
            "delivery: {delivery}\n  mapping {} is {}, batch size {}, maximum concurrency {}\n  function {}\n",
            m.uuid,
            m.state,
            m.batch_size.map_or("-".to_owned(), |b| b.to_string()),
            m.maximum_concurrency.map_or("-".to_owned(), |c| c.to_string()),
            m.function_arn,
        );
        out.push_str(&format!(
            "queue: {} waiting, {} in flight, {} delayed; {oldest}\n  {}\n",
            self.queue.waiting, self.queue.in_flight, self.queue.delayed, self.queue_url
        ));
        if let (Some(url), Some(d)) = (&self.dlq_url, &self.dlq) {
            out.push_str(&format!(
                "dead-letter queue: {} waiting{}\n  {url}\n",
                d.waiting,
                if d.waiting > 0 {
                    " (`inbox-ops why`)"
                } else {
                    ""
                }
            ));
        }
        out
    }
}

async fn depth(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<(Depth, Option<String>)> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(Q::ApproximateNumberOfMessages)
        .attribute_names(Q::ApproximateNumberOfMessagesNotVisible)
        .attribute_names(Q::ApproximateNumberOfMessagesDelayed)
        .attribute_names(Q::RedrivePolicy)
        .send()
        .await
        .with_context(|| format!("GetQueueAttributes {url}"))?;
    let attrs = out.attributes();
    let n = |name: Q| {
        attrs
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let dlq_arn = attrs
        .and_then(|a| a.get(&Q::RedrivePolicy))
        .and_then(|p| serde_json::from_str::<Value>(p).ok())
        .and_then(|p| p["deadLetterTargetArn"].as_str().map(str::to_owned));
    Ok((
        Depth {
            waiting: n(Q::ApproximateNumberOfMessages),
            in_flight: n(Q::ApproximateNumberOfMessagesNotVisible),
            delayed: n(Q::ApproximateNumberOfMessagesDelayed),
        },
        dlq_arn,
    ))
}

/// `ApproximateAgeOfOldestMessage` of the queue named `name`: the largest in the last five
/// minutes' most recent datapoint.
async fn oldest_age(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    name: &str,
) -> anyhow::Result<Option<i64>> {
    let now = std::time::SystemTime::now();
    let out = cloudwatch
        .get_metric_statistics()
        .namespace("AWS/SQS")
        .metric_name("ApproximateAgeOfOldestMessage")
        .dimensions(Dimension::builder().name("QueueName").value(name).build())
        .start_time((now - std::time::Duration::from_secs(300)).into())
        .end_time(now.into())
        .period(60)
        .statistics(Statistic::Maximum)
        .send()
        .await
        .with_context(|| format!("GetMetricStatistics ApproximateAgeOfOldestMessage {name}"))?;
    let latest = out
        .datapoints()
        .iter()
        .filter_map(|d| Some((d.timestamp()?.secs(), d.maximum()?)))
        .max_by_key(|(at, _)| *at);
    // Seconds of age: whole, as SQS reports them.
    Ok(latest.map(|(_, age)| age.round() as i64))
}

/// Gathers the status of the mapping `locator` names and its queue (`queue_url`, else the
/// mapping's event source).
pub async fn status(
    config: &aws_config::SdkConfig,
    locator: &Locator,
    queue_url: Option<&str>,
) -> anyhow::Result<MappingStatus> {
    let uuid = esm::find(config, locator).await?;
    let mapping = esm::get(&aws_sdk_lambda::Client::new(config), &uuid).await?;
    let sqs = crate::aws::sqs(config);
    let queue_url = match queue_url {
        Some(url) => url.to_owned(),
        None => esm::queue_url_of(&sqs, &mapping.event_source_arn).await?,
    };
    let (queue, dlq_arn) = depth(&sqs, &queue_url).await?;
    let name = queue_url.rsplit('/').next().unwrap_or_default();
    let oldest_age_seconds = oldest_age(&aws_sdk_cloudwatch::Client::new(config), name)
        .await
        .map_err(|e| format!("{e:#}"));
    let (dlq_url, dlq) = match dlq_arn {
        Some(arn) => {
            let url = esm::queue_url_of(&sqs, &arn).await?;
            let (d, _) = depth(&sqs, &url).await?;
            (Some(url), Some(d))
        }
        None => (None, None),
    };
    Ok(MappingStatus {
        mapping,
        queue_url,
        queue,
        oldest_age_seconds,
        dlq_url,
        dlq,
    })
}

/// Each destination's pause and breaker (docs/routing.md#breakers), where the mapping is
/// found through its stack (`--stack`, or the default one): the stack's ledger table's pause
/// board. `None` where the mapping was named by `--uuid` or `--function`.
async fn destinations(
    config: &aws_config::SdkConfig,
    args: &StatusArgs,
) -> Option<Result<Vec<crate::breakers::DestinationRow>, String>> {
    let m = &args.mapping;
    if m.stack.is_none() && (m.uuid.is_some() || m.function.is_some()) {
        return None;
    }
    let stack = m.stack.as_deref().unwrap_or(crate::stack::DEFAULT_STACK);
    Some(
        async {
            let resources = crate::stack::resolve(config, stack)
                .await
                .map_err(|e| format!("{e:#}"))?;
            let table = resources
                .need(&resources.table, crate::stack::TABLE_OUTPUT)
                .map_err(|e| format!("{e:#}"))?;
            let board = crate::breakers::read(config, table).await?;
            let names = crate::breakers::names_of(resources.destinations_json.as_deref());
            Ok(crate::breakers::rows(&board, &names))
        }
        .await,
    )
}

pub async fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let config = crate::aws::config().await;
    let locator = Locator::from_args(&args.mapping)?;
    let s = status(&config, &locator, args.queue.as_deref()).await?;
    let destinations = destinations(&config, args).await;
    // Each destination's rate limit, from the stack's `Destinations` (a stack to read only).
    let rates = match &locator {
        Locator::Stack(stack) => crate::rate_status::rows(&config, stack)
            .await
            .unwrap_or_else(|e| {
                eprintln!("rate limits not shown: {e:#}");
                Vec::new()
            }),
        _ => Vec::new(),
    };
    if args.json {
        let mut json = s.to_json();
        match &destinations {
            Some(Ok(rows)) => json["destinations"] = crate::breakers::to_json(rows),
            Some(Err(e)) => json["destinations_error"] = Value::String(e.clone()),
            None => {}
        }
        json["rates"] = crate::rate_status::to_json(&rates);
        println!("{json:#}");
    } else {
        print!("{}", s.to_text());
        match &destinations {
            Some(Ok(rows)) => print!("{}", crate::breakers::to_text(rows)),
            Some(Err(e)) => println!("destinations: unknown ({e})"),
            None => {}
        }
        print!("{}", crate::rate_status::to_text(&rates));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(state: &str) -> MappingStatus {
        MappingStatus {
            mapping: Mapping {
                uuid: "u-1".into(),
                state: state.into(),
                function_arn: "arn:aws:lambda:eu-west-1:1:function:consumer".into(),
                event_source_arn: "arn:aws:sqs:eu-west-1:1:q.fifo".into(),
                batch_size: Some(10),
                maximum_concurrency: Some(5),
            },
            queue_url: "https://sqs/1/q.fifo".into(),
            queue: Depth {
                waiting: 3,
                in_flight: 1,
                delayed: 0,
            },
            oldest_age_seconds: Ok(None),
            dlq_url: Some("https://sqs/1/d.fifo".into()),
            dlq: Some(Depth::default()),
        }
    }

    #[test]
    fn paused_or_running_with_what_waits() {
        let text = sample("Disabled").to_text();
        assert!(text.starts_with("delivery: PAUSED"), "{text}");
        assert!(
            text.contains("queue: 3 waiting, 1 in flight, 0 delayed; oldest: no CloudWatch"),
            "{text}"
        );
        assert!(text.contains("dead-letter queue: 0 waiting\n"), "{text}");
        let mut running = sample("Enabled");
        running.oldest_age_seconds = Ok(Some(42));
        let text = running.to_text();
        assert!(text.starts_with("delivery: running"), "{text}");
        assert!(text.contains("oldest 42 s"), "{text}");
        let json = running.to_json();
        assert_eq!(json["paused"], false);
        assert_eq!(json["queue"]["messages"]["waiting"], 3);
        assert_eq!(json["queue"]["oldest_age_seconds"], 42);
        assert_eq!(json["dead_letter_queue"]["messages"]["waiting"], 0);
        running.oldest_age_seconds = Err("GetMetricStatistics: access denied".into());
        assert!(running
            .to_text()
            .contains("oldest: unknown (GetMetricStatistics: access denied)"));
        assert_eq!(running.to_json()["oldest_age_seconds"], Value::Null);
    }
}
