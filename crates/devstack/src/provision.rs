//! Local AWS resources created from `template.yaml`'s own definitions (read by
//! [`inbox_ops::template`]), so that local (moto) and deployed cannot drift.
//!
//! Deployed names come from the stack; locally a caller-given prefix names the resources:
//! table `{prefix}-ledger`, queue `{prefix}-webhooks.fifo`, dead-letter queue `{prefix}-dlq.fifo`.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_sqs::types::QueueAttributeName;
pub use inbox_ops::template::{template_path, Template};

/// How long [`provision`] waits for a new table to become ACTIVE.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// What [`provision`] created or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provisioned {
    pub table: String,
    pub queue_url: String,
    pub dlq_url: String,
}

/// Creates the ledger table (key schema and billing mode from the template, then its TTL
/// attribute), the dead-letter queue and the webhook queue (the template's attributes, and a
/// RedrivePolicy naming the dead-letter queue's ARN with the template's maxReceiveCount).
///
/// Idempotent: existing resources are reused; a queue's mutable attributes are set to the
/// template's, a table whose key schema differs is an error.
pub async fn provision(
    template: &Template,
    dynamo: &aws_sdk_dynamodb::Client,
    sqs: &aws_sdk_sqs::Client,
    prefix: &str,
) -> anyhow::Result<Provisioned> {
    check_prefix(prefix)?;
    let table = format!("{prefix}-ledger");
    let queue_name = format!("{prefix}-webhooks.fifo");
    let dlq_name = format!("{prefix}-dlq.fifo");

    ensure_table(template, dynamo, &table)
        .await
        .with_context(|| format!("provisioning table {table}"))?;

    let dlq_url = ensure_queue(sqs, &dlq_name, template.dlq_attributes())
        .await
        .with_context(|| format!("provisioning queue {dlq_name}"))?;
    let dlq_arn = inbox_ops::aws::queue_arn(sqs, &dlq_url).await?;

    let mut attributes = template.queue_attributes().clone();
    let redrive = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": template.max_receive_count(),
    });
    attributes.insert("RedrivePolicy".to_owned(), redrive.to_string());
    let queue_url = ensure_queue(sqs, &queue_name, &attributes)
        .await
        .with_context(|| format!("provisioning queue {queue_name}"))?;

    Ok(Provisioned {
        table,
        queue_url,
        dlq_url,
    })
}

fn check_prefix(prefix: &str) -> anyhow::Result<()> {
    // The longest name is `{prefix}-webhooks.fifo`; SQS allows 80 characters of
    // [A-Za-z0-9_-] plus the .fifo suffix, DynamoDB a superset of those characters.
    let ok = !prefix.is_empty()
        && prefix.len() <= 80 - "-webhooks.fifo".len()
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        bail!("prefix {prefix:?} must be 1 to 66 characters of A-Z, a-z, 0-9, '-' and '_'")
    }
}

async fn ensure_table(
    template: &Template,
    dynamo: &aws_sdk_dynamodb::Client,
    table: &str,
) -> anyhow::Result<()> {
    let spec = template.table();
    let mut create = dynamo
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::from(spec.billing_mode.as_str()));
    for (name, ty) in &spec.attribute_definitions {
        create = create.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::from(ty.as_str()))
                .build()?,
        );
    }
    for (name, kind) in &spec.key_schema {
        create = create.key_schema(
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(KeyType::from(kind.as_str()))
                .build()?,
        );
    }
    match create.send().await {
        Ok(_) => {}
        // Already there (or being created by a concurrent caller): reuse it, if its keys match.
        Err(err) if err.code() == Some("ResourceInUseException") => {}
        Err(err) => return Err(anyhow::Error::new(err).context("CreateTable")),
    }

    let deadline = Instant::now() + TABLE_ACTIVE_TIMEOUT;
    let mut pause = Duration::from_millis(50);
    loop {
        let described = dynamo
            .describe_table()
            .table_name(table)
            .send()
            .await
            .context("DescribeTable")?;
        let description = described
            .table()
            .ok_or_else(|| anyhow!("DescribeTable returned no table"))?;
        let keys: Vec<(String, String)> = description
            .key_schema()
            .iter()
            .map(|k| {
                (
                    k.attribute_name().to_owned(),
                    k.key_type().as_str().to_owned(),
                )
            })
            .collect();
        if keys != spec.key_schema {
            bail!(
                "existing table has key schema {keys:?}, the template declares {:?}",
                spec.key_schema
            );
        }
        if description.table_status() == Some(&TableStatus::Active) {
            break;
        }
        if Instant::now() >= deadline {
            bail!("table not ACTIVE after {TABLE_ACTIVE_TIMEOUT:?}");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }

    let ttl = dynamo
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .context("DescribeTimeToLive")?;
    let current = ttl.time_to_live_description();
    let status = current.and_then(|d| d.time_to_live_status());
    let attribute = current.and_then(|d| d.attribute_name());
    match status {
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            if attribute == Some(spec.ttl_attribute.as_str()) =>
        {
            Ok(())
        }
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) => bail!(
            "existing table has TTL on {attribute:?}, the template declares {}",
            spec.ttl_attribute
        ),
        _ => {
            dynamo
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .attribute_name(&spec.ttl_attribute)
                        .enabled(true)
                        .build()?,
                )
                .send()
                .await
                .context("UpdateTimeToLive")?;
            Ok(())
        }
    }
}

/// Creates the queue, or, when one of that name exists with other attributes, sets its mutable
/// attributes to these. Returns its URL.
async fn ensure_queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    attributes: &BTreeMap<String, String>,
) -> anyhow::Result<String> {
    let all: HashMap<QueueAttributeName, String> = attributes
        .iter()
        .map(|(k, v)| (QueueAttributeName::from(k.as_str()), v.clone()))
        .collect();
    match sqs
        .create_queue()
        .queue_name(name)
        .set_attributes(Some(all.clone()))
        .send()
        .await
    {
        // CreateQueue with identical attributes returns the existing queue's URL.
        Ok(out) => out
            .queue_url()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("CreateQueue returned no QueueUrl")),
        Err(err) if is_queue_exists(err.code()) => {
            let url = sqs
                .get_queue_url()
                .queue_name(name)
                .send()
                .await
                .context("GetQueueUrl")?
                .queue_url()
                .map(str::to_owned)
                .ok_or_else(|| anyhow!("GetQueueUrl returned no QueueUrl"))?;
            // FifoQueue cannot change (and the .fifo name already implies it).
            let mutable: HashMap<_, _> = all
                .into_iter()
                .filter(|(k, _)| *k != QueueAttributeName::FifoQueue)
                .collect();
            sqs.set_queue_attributes()
                .queue_url(&url)
                .set_attributes(Some(mutable))
                .send()
                .await
                .context("SetQueueAttributes")?;
            Ok(url)
        }
        Err(err) => Err(anyhow::Error::new(err).context("CreateQueue")),
    }
}

fn is_queue_exists(code: Option<&str>) -> bool {
    // JSON protocol name, and the query-protocol name older servers answer with.
    matches!(
        code,
        Some("QueueNameExists" | "QueueAlreadyExists" | "AWS.SimpleQueueService.QueueNameExists")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_rules() {
        assert!(check_prefix("it-123_x").is_ok());
        assert!(check_prefix("").is_err());
        assert!(check_prefix("a.b").is_err());
        assert!(check_prefix(&"a".repeat(67)).is_err());
        assert!(check_prefix(&"a".repeat(66)).is_ok());
    }
}
