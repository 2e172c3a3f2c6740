//! Destinations' targets on the local AWS API server (docs/routing.md), as a team's own
//! resources outside the stack: SQS queues, and an EventBridge bus whose rule copies every
//! event of the inbox to a queue; and what each received, by the event's key.

use std::collections::BTreeMap;

use anyhow::Context as _;
use aws_sdk_sqs::types::QueueAttributeName;

/// The ARN moto gives a queue of this name (the default account and region).
fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:123456789012:{name}")
}

/// A queue (FIFO where `fifo`; its name then ends in `.fifo`): its URL and ARN.
pub async fn queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    fifo: bool,
) -> anyhow::Result<(String, String)> {
    let mut create = sqs.create_queue().queue_name(name);
    if fifo {
        create = create.attributes(QueueAttributeName::FifoQueue, "true");
    }
    let url = create
        .send()
        .await
        .with_context(|| format!("CreateQueue {name}"))?
        .queue_url()
        .unwrap_or_default()
        .to_owned();
    Ok((url, queue_arn(name)))
}

/// An EventBridge bus named `name`: its ARN.
pub async fn bus(events: &aws_sdk_eventbridge::Client, name: &str) -> anyhow::Result<String> {
    Ok(events
        .create_event_bus()
        .name(name)
        .send()
        .await
        .with_context(|| format!("CreateEventBus {name}"))?
        .event_bus_arn()
        .unwrap_or_default()
        .to_owned())
}

/// A bus named `bus`, with a rule that sends every event whose `source` starts with
/// `webhook-inbox.` to the queue `seen` (created here): the bus's ARN and the queue's URL.
pub async fn bus_to_queue(
    sdk: &aws_config::SdkConfig,
    bus: &str,
    seen: &str,
) -> anyhow::Result<(String, String)> {
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let bus_arn = self::bus(&events, bus).await?;
    let (seen_url, seen_arn) = queue(&aws_sdk_sqs::Client::new(sdk), seen, false).await?;
    let rule = format!("{bus}-to-{seen}");
    events
        .put_rule()
        .name(&rule)
        .event_bus_name(bus)
        .event_pattern(r#"{"source": [{"prefix": "webhook-inbox."}]}"#)
        .send()
        .await
        .with_context(|| format!("PutRule {rule}"))?;
    events
        .put_targets()
        .rule(&rule)
        .event_bus_name(bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("seen")
                .arn(&seen_arn)
                .build()
                .context("a rule target")?,
        )
        .send()
        .await
        .with_context(|| format!("PutTargets {rule}"))?;
    Ok((bus_arn, seen_url))
}

/// The key a destination's message carries: the `idempotency_key` attribute (an SQS target),
/// or the EventBridge event's `detail.idempotency_key` (a bus's rule to a queue).
fn key_of(message: &aws_sdk_sqs::types::Message) -> Option<String> {
    if let Some(key) = message
        .message_attributes()
        .and_then(|a| a.get("idempotency_key"))
        .and_then(|v| v.string_value())
    {
        return Some(key.to_owned());
    }
    let event: serde_json::Value = serde_json::from_str(message.body()?).ok()?;
    event["detail"]["idempotency_key"]
        .as_str()
        .map(str::to_owned)
}

/// Every message now on `url` (left in flight for ten minutes), counted by the key it carries;
/// a message carrying none counts under `""`.
pub async fn received_by_key(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    loop {
        let got = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .message_attribute_names("All")
            .send()
            .await
            .with_context(|| format!("ReceiveMessage {url}"))?;
        let messages = got.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(out);
        }
        for m in &messages {
            *out.entry(key_of(m).unwrap_or_default()).or_insert(0) += 1;
        }
    }
}
