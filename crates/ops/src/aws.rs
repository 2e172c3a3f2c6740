//! The AWS side of every command: the SDK configuration and clients (region, credentials and
//! `AWS_ENDPOINT_URL` from the standard places, as the Lambda functions load them) and
//! [`queue_arn`], the one look-up of a queue's ARN for the workspace.

use anyhow::{anyhow, Context as _};
use aws_sdk_sqs::types::QueueAttributeName;

/// The SDK configuration the functions use: standard region and credential chain, three
/// attempts, one shared HTTPS client. `AWS_ENDPOINT_URL` points it at a local server.
pub async fn config() -> aws_config::SdkConfig {
    inbox::app::sdk_config().await
}

/// An SQS client on `config`.
pub fn sqs(config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(config)
}

/// A DynamoDB client on `config`.
pub fn dynamo(config: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(config)
}

/// The queue's ARN (`GetQueueAttributes QueueArn`).
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<String> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .with_context(|| format!("GetQueueAttributes {url}"))?;
    out.attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .ok_or_else(|| anyhow!("no QueueArn for {url}"))
}
