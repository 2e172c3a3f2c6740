//! What moto's CloudFormation cannot create at all and the stack needs: the archive's Kinesis
//! Data Firehose delivery stream (`AWS::KinesisFirehose::DeliveryStream`), created with
//! Firehose's own API on moto from the translated template's properties, its bucket and role
//! the stack's physical ones.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_firehose::types::{
    BufferingHints, CompressionFormat, DeliveryStreamType, ExtendedS3DestinationConfiguration,
};
use serde_json::Value;

use super::translate::Translated;

/// Each delivery stream of `translated`, created on the Firehose `sdk` points at. Its name is
/// the template's `DeliveryStreamName` (`${AWS::StackName}-…`), the bucket and role those the
/// stack made. moto files every object under `<prefix><yyyy>/<mm>/<dd>/<hh>/`, which is what
/// the template's `!{timestamp:…}` prefix asks of Firehose: the prefix given to moto is the
/// template's up to its first `!{`.
pub async fn create_delivery_streams(
    sdk: &aws_config::SdkConfig,
    translated: &Translated,
    stack_name: &str,
    resources: &BTreeMap<String, (String, String)>,
) -> anyhow::Result<()> {
    let firehose = aws_sdk_firehose::Client::new(sdk);
    for (id, _) in translated.resources_of_type("AWS::KinesisFirehose::DeliveryStream") {
        let props = translated.properties(id);
        let name = stack_sub(&props["DeliveryStreamName"], stack_name)
            .ok_or_else(|| anyhow!("{id}: DeliveryStreamName is not `${{AWS::StackName}}…`"))?;
        let s3 = &props["ExtendedS3DestinationConfiguration"];
        let physical = |value: &Value, attribute: &str| -> anyhow::Result<String> {
            let [logical, att] = [&value["Fn::GetAtt"][0], &value["Fn::GetAtt"][1]];
            if att != attribute {
                bail!("{id}: expected a GetAtt of {attribute}, found {value}");
            }
            let logical = logical.as_str().unwrap_or_default();
            resources
                .get(logical)
                .map(|(_, physical)| physical.clone())
                .ok_or_else(|| anyhow!("{id}: the stack has no {logical}"))
        };
        let bucket = physical(&s3["BucketARN"], "Arn")?;
        let role = physical(&s3["RoleARN"], "Arn")?;
        let prefix = s3["Prefix"].as_str().unwrap_or_default();
        let prefix = prefix.split("!{").next().unwrap_or_default();
        let hints = &s3["BufferingHints"];
        let destination = ExtendedS3DestinationConfiguration::builder()
            .bucket_arn(format!("arn:aws:s3:::{bucket}"))
            .role_arn(format!("arn:aws:iam::123456789012:role/{role}"))
            .prefix(prefix)
            .compression_format(CompressionFormat::Uncompressed)
            .buffering_hints(
                BufferingHints::builder()
                    .set_interval_in_seconds(hints["IntervalInSeconds"].as_i64().map(|n| n as i32))
                    .set_size_in_mbs(hints["SizeInMBs"].as_i64().map(|n| n as i32))
                    .build(),
            )
            .build()
            .context("the destination")?;
        firehose
            .create_delivery_stream()
            .delivery_stream_name(&name)
            .delivery_stream_type(DeliveryStreamType::DirectPut)
            .extended_s3_destination_configuration(destination)
            .send()
            .await
            .with_context(|| format!("CreateDeliveryStream {name}"))?;
    }
    Ok(())
}

/// Each delivery stream of `translated` deleted from Firehose (the teardown's half of
/// [`create_delivery_streams`]).
pub async fn delete_delivery_streams(
    sdk: &aws_config::SdkConfig,
    translated: &Translated,
    stack_name: &str,
) -> anyhow::Result<()> {
    let firehose = aws_sdk_firehose::Client::new(sdk);
    for (id, _) in translated.resources_of_type("AWS::KinesisFirehose::DeliveryStream") {
        let name = stack_sub(&translated.properties(id)["DeliveryStreamName"], stack_name)
            .ok_or_else(|| anyhow!("{id}: DeliveryStreamName is not `${{AWS::StackName}}…`"))?;
        firehose
            .delete_delivery_stream()
            .delivery_stream_name(&name)
            .send()
            .await
            .with_context(|| format!("DeleteDeliveryStream {name}"))?;
    }
    Ok(())
}

/// `{"Fn::Sub": "${AWS::StackName}<rest>"}` (or a literal) for this stack.
fn stack_sub(value: &Value, stack_name: &str) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => {
            let text = o.get("Fn::Sub")?.as_str()?;
            let rest = text.strip_prefix("${AWS::StackName}")?;
            (!rest.contains("${")).then(|| format!("{stack_name}{rest}"))
        }
        _ => None,
    }
}
