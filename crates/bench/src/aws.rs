//! AWS as the driver sees it, directly on moto (not through the counting proxy): the stack the
//! inbox's functions run on, counting what a run left in its table and queue, and creating the
//! Powertools peer's resources.

use anyhow::{Context, Result};
use devstack::cloudformation::Stack;

use crate::options::Switch;

/// The driver's own clients.
pub struct Aws {
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
}

impl Aws {
    /// template.yaml created as the stack `bench` on moto's CloudFormation with the bench's
    /// sources (their secrets in the environment, as the peer's) and forward URL (the local
    /// system of record): the receiver's and the consumer's table, queue, event source mapping
    /// and environment are the stack's, samconfig.toml's parameters and the template's
    /// defaults for the rest. With `archive`, ARCHIVE_BODIES of every function whose
    /// environment has it is set to it; an error where none has it.
    /// With `destinations` above 0, that many EventBridge buses are created and every source
    /// routed to each (`Destinations`, `DestinationBusArns`).
    /// (On the standard SDK configuration, as the driver's clients.)
    pub async fn stack(
        sources: &str,
        forward_url: &str,
        archive: Option<Switch>,
        destinations: u8,
    ) -> Result<Stack> {
        let sdk = inbox::app::sdk_config().await;
        let specs = inbox::SourceSpecs::parse(sources).context("the bench's sources")?;
        let arns = devstack::local_stack::secret_arns(&sdk, &specs).await?;
        let mut parameters = devstack::local_stack::parameters(sources, forward_url, &arns)?;
        if destinations > 0 {
            let (json, bus_arns) = buses(&sdk, &specs, destinations).await?;
            parameters
                .set("Destinations", &json)
                .set("DestinationBusArns", &bus_arns.join(","));
        }
        let mut stack =
            devstack::local_stack::deploy_parameters(&sdk, "bench", &parameters).await?;
        if let Some(switch) = archive {
            let mut set = 0;
            for function in [&mut stack.receiver, &mut stack.consumer] {
                if let Some(v) = function.environment.get_mut("ARCHIVE_BODIES") {
                    *v = switch.env_value().to_owned();
                    set += 1;
                }
            }
            if set == 0 {
                anyhow::bail!("--archive: no function of the stack has ARCHIVE_BODIES");
            }
        }
        Ok(stack)
    }

    /// Items in `table` and the size of the largest in bytes, as DynamoDB counts it for
    /// capacity units (a full scan).
    pub async fn count_items(&self, table: &str) -> Result<(usize, usize)> {
        let mut n = 0;
        let mut largest = 0;
        let mut start = None;
        loop {
            let out = self
                .dynamo
                .scan()
                .table_name(table)
                .set_exclusive_start_key(start)
                .send()
                .await?;
            n += out.items().len();
            for item in out.items() {
                largest = largest.max(item_bytes(item));
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok((n, largest));
            }
        }
    }

    /// The queue's ARN (GetQueueAttributes).
    pub async fn queue_arn(&self, queue_url: &str) -> Result<String> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(A::QueueArn)
            .send()
            .await?;
        out.attributes()
            .and_then(|a| a.get(&A::QueueArn))
            .cloned()
            .context("the queue has no QueueArn")
    }

    /// Messages on the queue (`ApproximateNumberOfMessages`).
    pub async fn count_messages(&self, queue_url: &str) -> Result<u64> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .send()
            .await?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&A::ApproximateNumberOfMessages))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// The peer's own table (Powertools' default key attribute `id`) and FIFO queue.
    pub async fn peer_resources(&self, prefix: &str) -> Result<(String, String)> {
        use aws_sdk_dynamodb::types::{
            AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
        };
        let table = format!("{prefix}-powertools-idempotency");
        self.dynamo
            .create_table()
            .table_name(&table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("id")
                    .key_type(KeyType::Hash)
                    .build()?,
            )
            .send()
            .await?;
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let queue = self
            .sqs
            .create_queue()
            .queue_name(format!("{prefix}-powertools.fifo"))
            .attributes(A::FifoQueue, "true")
            .send()
            .await?;
        Ok((table, queue.queue_url().context("queue url")?.to_owned()))
    }
}

/// An item's size as DynamoDB bills it: each attribute's name and value (strings and binary
/// by length; numbers about one byte per two digits plus one).
fn item_bytes(
    item: &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    item.iter()
        .map(|(name, v)| {
            name.len()
                + match v {
                    V::S(s) => s.len(),
                    V::N(n) => n.len().div_ceil(2) + 1,
                    V::B(b) => b.as_ref().len(),
                    _ => 1,
                }
        })
        .sum()
}

/// `n` EventBridge buses (`bench-bus-1`, ...), and `Destinations` sending every source to
/// each: the JSON and the buses' ARNs.
async fn buses(
    sdk: &aws_config::SdkConfig,
    specs: &inbox::SourceSpecs,
    n: u8,
) -> Result<(String, Vec<String>)> {
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let sources: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let mut destinations = serde_json::Map::new();
    let mut arns = Vec::new();
    for i in 1..=n {
        let name = format!("bench-bus-{i}");
        let arn = devstack::targets::bus(&events, &name).await?;
        destinations.insert(
            format!("bus-{i}"),
            serde_json::json!({"target": arn, "sources": sources}),
        );
        arns.push(arn);
    }
    Ok((serde_json::Value::Object(destinations).to_string(), arns))
}
