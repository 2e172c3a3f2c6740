//! The translated template created as a stack on local AWS (moto's CloudFormation), waited for,
//! and read back: the table, the queues, each function's configuration and the event source
//! mapping, as the SDK reports them.
//!
//! Two differences from a real deployment, each in one named place:
//! - [`inline_placeholder_code`]: the functions' code is a placeholder (locally they run under
//!   `cargo lambda watch` or in-process, never in moto's Lambda);
//! - [`apply_what_moto_ignores`]: properties moto's CloudFormation accepts but does not apply
//!   (the table's TTL) and checks it skips (unknown parameter names), done by hand.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_cloudformation::types::{Capability, Parameter, StackStatus};
use serde_json::{json, Value};

use super::samconfig::{samconfig_path, Parameters};
use super::template_path;
use super::translate::Translated;

/// How long [`deploy_local_with`] waits for CREATE_COMPLETE (moto takes about a second).
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);
/// Between two DescribeStacks while waiting.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The functions' logical ids in template.yaml.
pub const RECEIVER: &str = "ReceiverFunction";
pub const CONSUMER: &str = "ConsumerFunction";

/// What the local stack holds, read back through the SDK.
#[derive(Debug, Clone)]
pub struct Stack {
    pub name: String,
    /// The parameter values it was created with.
    pub parameters: Parameters,
    /// The template it was created from (before [`inline_placeholder_code`]).
    pub translated: Translated,
    /// Logical id -> (resource type, physical id), every resource CloudFormation reports.
    pub resources: BTreeMap<String, (String, String)>,
    pub outputs: BTreeMap<String, String>,
    /// The ledger table's name (LEDGER_TABLE).
    pub table: String,
    /// The webhook queue's URL as the stack names it (QUEUE_URL).
    pub queue_url: String,
    pub dlq_url: String,
    pub receiver: Function,
    pub consumer: Function,
    /// The consumer's SQS event source mapping.
    pub event_source_mapping: EventSourceMapping,
}

/// A function's configuration (GetFunctionConfiguration, GetFunctionConcurrency).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub arn: String,
    pub role: String,
    /// Its environment, intrinsics resolved.
    pub environment: BTreeMap<String, String>,
    pub timeout_seconds: Option<i32>,
    pub memory_mb: Option<i32>,
    pub reserved_concurrency: Option<i32>,
}

/// An event source mapping (ListEventSourceMappings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSourceMapping {
    pub uuid: String,
    pub event_source_arn: String,
    pub function_arn: String,
    pub batch_size: Option<i32>,
    pub maximum_concurrency: Option<i32>,
    pub enabled: bool,
    pub function_response_types: Vec<String>,
}

/// [`deploy_local_with`] `samconfig.toml`'s parameter overrides.
pub async fn deploy_local(sdk: &aws_config::SdkConfig, stack_name: &str) -> anyhow::Result<Stack> {
    let parameters = Parameters::from_samconfig(&samconfig_path())?;
    deploy_local_with(sdk, stack_name, &parameters).await
}

/// Translates template.yaml ([`Translated::cached`]), creates it as `stack_name` on the CloudFormation `sdk` points at
/// (moto: `AWS_ENDPOINT_URL`), waits for CREATE_COMPLETE, applies what moto ignores, and reads
/// the stack back.
#[allow(
    clippy::too_many_lines,
    reason = "the rehearsal's steps in CloudFormation's order: translate, create, wait, read back"
)]
pub async fn deploy_local_with(
    sdk: &aws_config::SdkConfig,
    stack_name: &str,
    parameters: &Parameters,
) -> anyhow::Result<Stack> {
    let (template, values) = (template_path(), parameters.clone());
    let translated = tokio::task::spawn_blocking(move || Translated::cached(&template, &values))
        .await
        .context("the SAM transform's thread")??;
    check_parameters_declared(&translated, parameters)?;
    let mut body = translated.clone();
    inline_placeholder_code(&mut body);

    let cfn = aws_sdk_cloudformation::Client::new(sdk);
    let created = cfn
        .create_stack()
        .stack_name(stack_name)
        .template_body(body.document().to_string())
        .set_parameters(Some(
            parameters
                .iter()
                .map(|(k, v)| {
                    Parameter::builder()
                        .parameter_key(k)
                        .parameter_value(v)
                        .build()
                })
                .collect(),
        ))
        .capabilities(Capability::CapabilityIam)
        .send()
        .await;
    // The SDK retries a CreateStack that got no answer (a loaded machine, moto's thread slow
    // to reply) and the retry finds the stack the first attempt created: this caller names
    // its stacks uniquely, so that stack is this call's own, and waiting for it is the answer.
    if let Err(e) = created {
        let ours = e
            .as_service_error()
            .and_then(|s| s.meta().code())
            .is_some_and(|code| code == "AlreadyExistsException");
        if !ours {
            return Err(e).with_context(|| format!("CreateStack {stack_name}"));
        }
    }
    let outputs = wait_for_create(&cfn, stack_name).await?;

    let resources: BTreeMap<String, (String, String)> = cfn
        .list_stack_resources()
        .stack_name(stack_name)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .context("ListStackResources")?
        .into_iter()
        .filter_map(|r| {
            Some((
                r.logical_resource_id()?.to_owned(),
                (
                    r.resource_type()?.to_owned(),
                    r.physical_resource_id().unwrap_or_default().to_owned(),
                ),
            ))
        })
        .collect();
    let physical = |logical: &str| -> anyhow::Result<String> {
        resources
            .get(logical)
            .map(|(_, id)| id.clone())
            .filter(|id| !id.is_empty())
            .ok_or_else(|| anyhow!("stack {stack_name} has no {logical}"))
    };

    let table_id = translated.only_of_type("AWS::DynamoDB::Table")?;
    let (queue_id, dlq_id) = queue_ids(&translated)?;
    let table = physical(table_id)?;
    apply_what_moto_ignores(sdk, &translated, table_id, &table).await?;
    for (bucket_id, _) in translated.resources_of_type("AWS::S3::Bucket") {
        apply_bucket_settings(
            sdk,
            &translated,
            parameters,
            bucket_id,
            &physical(bucket_id)?,
        )
        .await?;
    }

    super::streams::create_delivery_streams(sdk, &translated, stack_name, &resources).await?;

    let lambda = aws_sdk_lambda::Client::new(sdk);
    let receiver = function(&lambda, &physical(RECEIVER)?).await?;
    let consumer = function(&lambda, &physical(CONSUMER)?).await?;
    let event_source_mapping = event_source_mapping(&lambda, &consumer.name).await?;

    Ok(Stack {
        name: stack_name.to_owned(),
        parameters: parameters.clone(),
        table,
        queue_url: physical(&queue_id)?,
        dlq_url: physical(&dlq_id)?,
        receiver,
        consumer,
        event_source_mapping,
        outputs,
        resources,
        translated,
    })
}

/// `sam delete` as CloudFormation does it: DeleteStack, then waits until the stack is gone
/// (DELETE_COMPLETE, or no longer described). Resources under `DeletionPolicy: Retain` stay;
/// the delivery streams moto's CloudFormation could not create (and so cannot delete) are
/// deleted as CloudFormation deletes them.
pub async fn delete_local(sdk: &aws_config::SdkConfig, stack: &Stack) -> anyhow::Result<()> {
    let stack_name = stack.name.as_str();
    super::streams::delete_delivery_streams(sdk, &stack.translated, stack_name).await?;
    let cfn = aws_sdk_cloudformation::Client::new(sdk);
    cfn.delete_stack()
        .stack_name(stack_name)
        .send()
        .await
        .with_context(|| format!("DeleteStack {stack_name}"))?;
    let deadline = Instant::now() + CREATE_TIMEOUT;
    loop {
        let status = match cfn.describe_stacks().stack_name(stack_name).send().await {
            Ok(described) => described
                .stacks()
                .first()
                .and_then(|s| s.stack_status().cloned()),
            // A deleted stack is no longer described by name.
            Err(_) => None,
        };
        match status {
            None | Some(StackStatus::DeleteComplete) => return Ok(()),
            Some(StackStatus::DeleteInProgress) if Instant::now() < deadline => {
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            Some(other) => bail!("stack {stack_name} is {other:?}, not deleted"),
        }
    }
}

/// CloudFormation refuses a parameter the template does not declare (`sam deploy` with a stale
/// samconfig fails so); moto's CloudFormation ignores it.
pub fn check_parameters_declared(
    translated: &Translated,
    parameters: &Parameters,
) -> anyhow::Result<()> {
    let unknown: Vec<&str> = parameters
        .names()
        .filter(|name| translated.parameter(name).is_none())
        .collect();
    if !unknown.is_empty() {
        bail!("parameters {unknown:?} do not exist in the template");
    }
    Ok(())
}

/// The one place the functions' code changes for the local stack: each `AWS::Lambda::Function`'s
/// `Code` (the S3 location `sam package` would have written) becomes a one-line inline
/// placeholder, so that moto's Lambda creates the function without an upload. Nothing runs it.
pub fn inline_placeholder_code(translated: &mut Translated) {
    let placeholder = json!({
        "ZipFile": "placeholder: the local stack runs the function outside moto's Lambda"
    });
    if let Some(resources) = translated
        .document_mut()
        .get_mut("Resources")
        .and_then(Value::as_object_mut)
    {
        for resource in resources.values_mut() {
            if resource.get("Type").and_then(Value::as_str) == Some("AWS::Lambda::Function") {
                if let Some(props) = resource
                    .get_mut("Properties")
                    .and_then(Value::as_object_mut)
                {
                    props.insert("Code".to_owned(), placeholder.clone());
                }
            }
        }
    }
}

/// The one place for what moto's CloudFormation accepts without applying: the ledger table's
/// `TimeToLiveSpecification` (moto creates the table with TTL off), applied with UpdateTimeToLive.
pub async fn apply_what_moto_ignores(
    sdk: &aws_config::SdkConfig,
    translated: &Translated,
    table_id: &str,
    table: &str,
) -> anyhow::Result<()> {
    let ttl = &translated.properties(table_id)["TimeToLiveSpecification"];
    let Some(attribute) = ttl["AttributeName"].as_str() else {
        return Ok(());
    };
    if ttl["Enabled"] != Value::Bool(true) {
        return Ok(());
    }
    let spec = aws_sdk_dynamodb::types::TimeToLiveSpecification::builder()
        .attribute_name(attribute)
        .enabled(true)
        .build()
        .context("TTL specification")?;
    aws_sdk_dynamodb::Client::new(sdk)
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(spec)
        .send()
        .await
        .with_context(|| format!("UpdateTimeToLive on {table}"))?;
    Ok(())
}

/// The same for a bucket: moto's CloudFormation creates it with its `BucketEncryption` only,
/// so its `PublicAccessBlockConfiguration` and its lifecycle rules' expiration (a literal or a
/// parameter's `Ref`) are put with the S3 API. (Its `AWS::S3::BucketPolicy`, which moto's
/// CloudFormation skips, is not: moto does not enforce bucket policies anyway.)
#[allow(
    clippy::too_many_lines,
    reason = "each bucket setting moto's CloudFormation skips, put in turn"
)]
pub async fn apply_bucket_settings(
    sdk: &aws_config::SdkConfig,
    translated: &Translated,
    parameters: &Parameters,
    bucket_id: &str,
    bucket: &str,
) -> anyhow::Result<()> {
    use aws_sdk_s3::types::{
        BucketLifecycleConfiguration, ExpirationStatus, LifecycleExpiration, LifecycleRule,
        LifecycleRuleFilter, PublicAccessBlockConfiguration,
    };
    let s3 = inbox::bucket::s3_client(sdk);
    let props = translated.properties(bucket_id);
    let block = &props["PublicAccessBlockConfiguration"];
    if block.is_object() {
        let flag = |name: &str| block[name].as_bool().unwrap_or(false);
        s3.put_public_access_block()
            .bucket(bucket)
            .public_access_block_configuration(
                PublicAccessBlockConfiguration::builder()
                    .block_public_acls(flag("BlockPublicAcls"))
                    .block_public_policy(flag("BlockPublicPolicy"))
                    .ignore_public_acls(flag("IgnorePublicAcls"))
                    .restrict_public_buckets(flag("RestrictPublicBuckets"))
                    .build(),
            )
            .send()
            .await
            .with_context(|| format!("PutPublicAccessBlock on {bucket}"))?;
    }
    let number = |value: &Value| -> Option<i32> {
        let text = match value {
            Value::Object(o) => {
                let name = o.get("Ref")?.as_str()?;
                parameters.get(name).map(str::to_owned).or_else(|| {
                    let default = &translated.parameter(name)?["Default"];
                    default
                        .as_i64()
                        .map(|n| n.to_string())
                        .or_else(|| default.as_str().map(str::to_owned))
                })?
            }
            other => other.as_i64()?.to_string(),
        };
        text.parse().ok()
    };
    let mut rules = Vec::new();
    for (i, rule) in props["LifecycleConfiguration"]["Rules"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(days) = number(&rule["ExpirationInDays"]) else {
            continue;
        };
        rules.push(
            LifecycleRule::builder()
                .id(rule["Id"]
                    .as_str()
                    .map_or_else(|| format!("rule-{i}"), str::to_owned))
                .status(if rule["Status"] == "Enabled" {
                    ExpirationStatus::Enabled
                } else {
                    ExpirationStatus::Disabled
                })
                .filter(LifecycleRuleFilter::builder().prefix("").build())
                .expiration(LifecycleExpiration::builder().days(days).build())
                .build()
                .context("lifecycle rule")?,
        );
    }
    if !rules.is_empty() {
        s3.put_bucket_lifecycle_configuration()
            .bucket(bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .set_rules(Some(rules))
                    .build()
                    .context("lifecycle configuration")?,
            )
            .send()
            .await
            .with_context(|| format!("PutBucketLifecycleConfiguration on {bucket}"))?;
    }
    Ok(())
}

/// Polls DescribeStacks until the stack leaves CREATE_IN_PROGRESS; its outputs on
/// CREATE_COMPLETE, else the status with the failed resources' reasons.
async fn wait_for_create(
    cfn: &aws_sdk_cloudformation::Client,
    stack_name: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let deadline = Instant::now() + CREATE_TIMEOUT;
    loop {
        let described = cfn
            .describe_stacks()
            .stack_name(stack_name)
            .send()
            .await
            .with_context(|| format!("DescribeStacks {stack_name}"))?;
        let stack = described
            .stacks()
            .first()
            .ok_or_else(|| anyhow!("DescribeStacks {stack_name}: no stack"))?;
        match stack.stack_status() {
            Some(StackStatus::CreateComplete) => {
                return Ok(stack
                    .outputs()
                    .iter()
                    .filter_map(|o| {
                        Some((o.output_key()?.to_owned(), o.output_value()?.to_owned()))
                    })
                    .collect())
            }
            Some(StackStatus::CreateInProgress) if Instant::now() < deadline => {
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            status => {
                let reasons = failed_events(cfn, stack_name).await;
                bail!(
                    "stack {stack_name} is {status:?} ({}); failed: {reasons:?}",
                    stack.stack_status_reason().unwrap_or("no reason given")
                );
            }
        }
    }
}

async fn failed_events(cfn: &aws_sdk_cloudformation::Client, stack_name: &str) -> Vec<String> {
    let Ok(events) = cfn
        .describe_stack_events()
        .stack_name(stack_name)
        .send()
        .await
    else {
        return Vec::new();
    };
    events
        .stack_events()
        .iter()
        .filter(|e| {
            e.resource_status()
                .is_some_and(|s| s.as_str().ends_with("FAILED"))
        })
        .map(|e| {
            format!(
                "{}: {}",
                e.logical_resource_id().unwrap_or("?"),
                e.resource_status_reason().unwrap_or("")
            )
        })
        .collect()
}

/// (webhook queue, dead-letter queue) logical ids: the queue with a RedrivePolicy, and the queue
/// its `deadLetterTargetArn` names with `Fn::GetAtt`.
fn queue_ids(translated: &Translated) -> anyhow::Result<(String, String)> {
    let with_redrive: Vec<_> = translated
        .resources_of_type("AWS::SQS::Queue")
        .into_iter()
        .filter(|(_, r)| r["Properties"].get("RedrivePolicy").is_some())
        .collect();
    let [(queue, resource)] = with_redrive.as_slice() else {
        bail!(
            "expected one queue with a RedrivePolicy, found {}",
            with_redrive.len()
        );
    };
    let dlq = resource["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        .as_str()
        .ok_or_else(|| anyhow!("{queue}: deadLetterTargetArn is not Fn::GetAtt <queue>.Arn"))?;
    Ok(((*queue).to_owned(), dlq.to_owned()))
}

async fn function(lambda: &aws_sdk_lambda::Client, name: &str) -> anyhow::Result<Function> {
    let config = lambda
        .get_function_configuration()
        .function_name(name)
        .send()
        .await
        .with_context(|| format!("GetFunctionConfiguration {name}"))?;
    let concurrency = lambda
        .get_function_concurrency()
        .function_name(name)
        .send()
        .await
        .with_context(|| format!("GetFunctionConcurrency {name}"))?;
    Ok(Function {
        name: name.to_owned(),
        arn: config.function_arn().unwrap_or_default().to_owned(),
        role: config.role().unwrap_or_default().to_owned(),
        environment: config
            .environment()
            .and_then(|e| e.variables())
            .map(|vars| vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default(),
        timeout_seconds: config.timeout(),
        memory_mb: config.memory_size(),
        reserved_concurrency: concurrency.reserved_concurrent_executions(),
    })
}

async fn event_source_mapping(
    lambda: &aws_sdk_lambda::Client,
    function: &str,
) -> anyhow::Result<EventSourceMapping> {
    let listed = lambda
        .list_event_source_mappings()
        .function_name(function)
        .send()
        .await
        .with_context(|| format!("ListEventSourceMappings {function}"))?;
    let [mapping] = listed.event_source_mappings() else {
        bail!(
            "expected one event source mapping for {function}, found {}",
            listed.event_source_mappings().len()
        );
    };
    Ok(EventSourceMapping {
        uuid: mapping
            .uuid()
            .ok_or_else(|| anyhow!("event source mapping without a UUID"))?
            .to_owned(),
        event_source_arn: mapping.event_source_arn().unwrap_or_default().to_owned(),
        function_arn: mapping.function_arn().unwrap_or_default().to_owned(),
        batch_size: mapping.batch_size(),
        maximum_concurrency: mapping
            .scaling_config()
            .and_then(|s| s.maximum_concurrency()),
        enabled: mapping.state() == Some("Enabled"),
        function_response_types: mapping
            .function_response_types()
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect(),
    })
}
