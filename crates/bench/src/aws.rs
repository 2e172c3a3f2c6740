//! AWS as the driver sees it, directly on moto (not through the counting proxy): the stack the
//! inbox's functions run on, counting what a run left in its table and queue, and creating the
//! Powertools peer's resources.

use anyhow::{Context, Result};
use devstack::cloudformation::Stack;

/// The driver's own clients.
pub struct Aws {
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
}

impl Aws {
    /// template.yaml created as the stack `bench` on moto's CloudFormation with the bench's
    /// sources (their secrets in the environment, as the peer's) and forward URL: the receiver's
    /// and the consumer's table, queue and environment are the stack's.
    /// (On the standard SDK configuration, as the driver's clients.)
    pub async fn stack(sources: &str, forward_url: &str) -> Result<Stack> {
        let sdk = inbox::app::sdk_config().await;
        devstack::local_stack::deploy(&sdk, "bench", sources, forward_url).await
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

    /// Every item of the receiver's ledger `table` COMPLETED, lease removed: what the consumer
    /// leaves behind (`--settle-before-duplicates`).
    pub async fn complete_all(&self, table: &str) -> Result<()> {
        use aws_sdk_dynamodb::types::AttributeValue as V;
        let mut start = None;
        loop {
            let out = self
                .dynamo
                .scan()
                .table_name(table)
                .set_exclusive_start_key(start)
                .send()
                .await?;
            for item in out.items() {
                let Some(pk) = item.get("pk") else { continue };
                self.dynamo
                    .update_item()
                    .table_name(table)
                    .key("pk", pk.clone())
                    .update_expression(
                        "SET #status = :completed, attempts = :one REMOVE lease_until, lease_owner",
                    )
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":completed", V::S("COMPLETED".into()))
                    .expression_attribute_values(":one", V::N("1".into()))
                    .send()
                    .await?;
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(());
            }
        }
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
