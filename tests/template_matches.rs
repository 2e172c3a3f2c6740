//! template.yaml says what the code and docs/design.md expect, and the local stack the
//! end-to-end tests run on (the template created on moto's CloudFormation) holds the same.

use aws_sdk_dynamodb::types::{KeyType, ScalarAttributeType, TimeToLiveStatus};
use aws_sdk_sqs::types::QueueAttributeName;
use devstack::testkit::LocalAws;
use serde_yaml::Value;
use stack_config::{template_path, Template};

const RECEIVER: &str = "ReceiverFunction";
const CONSUMER: &str = "ConsumerFunction";

fn template() -> Template {
    Template::load(&template_path()).expect("template.yaml loads")
}

/// A literal number, or a numeric string (CloudFormation takes both).
fn number(value: &Value) -> u64 {
    match value {
        Value::Number(n) => n.as_u64().expect("a whole number"),
        Value::String(s) => s.parse().expect("a whole number"),
        other => panic!("not a literal number: {other:?}"),
    }
}

fn parameter_default_number(t: &Template, name: &str) -> u64 {
    number(
        t.parameter_default(name)
            .unwrap_or_else(|| panic!("parameter {name} has a default")),
    )
}

/// The parameter a `!Ref Name` (or `{Ref: Name}`) names.
fn ref_target(value: &Value) -> Option<&str> {
    match value {
        Value::Tagged(t) if t.tag == "Ref" => t.value.as_str(),
        Value::Mapping(m) if m.len() == 1 => m.get("Ref")?.as_str(),
        _ => None,
    }
}

fn env_value<'a>(t: &'a Template, function: &str, name: &str) -> &'a Value {
    t.resource(function)
        .and_then(|r| {
            r.get("Properties")?
                .get("Environment")?
                .get("Variables")?
                .get(name)
        })
        .unwrap_or_else(|| panic!("{function} sets {name}"))
}

fn consumer_sqs_event(t: &Template) -> &Value {
    let events = t
        .resource(CONSUMER)
        .and_then(|r| r.get("Properties")?.get("Events")?.as_mapping())
        .expect("consumer has Events");
    let sqs: Vec<_> = events
        .values()
        .filter(|e| e.get("Type").and_then(Value::as_str) == Some("SQS"))
        .collect();
    assert_eq!(sqs.len(), 1, "consumer has exactly one SQS event");
    sqs[0].get("Properties").expect("SQS event has Properties")
}

#[test]
fn ledger_table_matches_the_ledger_item() {
    let t = template();
    assert_eq!(t.ttl_attribute(), "expires_at");
    assert_eq!(t.partition_key(), "pk");
    assert_eq!(t.partition_key_type(), "S");
    assert_eq!(
        t.key_schema(),
        [("pk".to_owned(), "HASH".to_owned())],
        "pk is the only key"
    );
    assert_eq!(t.billing_mode(), "PAY_PER_REQUEST");
}

#[test]
fn queue_is_fifo_with_explicit_deduplication_ids() {
    let t = template();
    assert!(t.queue_is_fifo());
    assert!(
        !t.queue_content_based_deduplication(),
        "the MessageDeduplicationId is the idempotency key, never a hash of the body"
    );
    let attrs = t.queue_attributes();
    assert_eq!(attrs.get("FifoQueue").map(String::as_str), Some("true"));
    assert_eq!(
        attrs.get("ContentBasedDeduplication").map(String::as_str),
        Some("false"),
        "written out, not left to the default"
    );
    assert_eq!(
        attrs.get("DeduplicationScope").map(String::as_str),
        Some("messageGroup")
    );
    assert_eq!(
        attrs.get("FifoThroughputLimit").map(String::as_str),
        Some("perMessageGroupId")
    );
}

#[test]
fn visibility_timeout_is_at_least_six_consumer_timeouts() {
    let t = template();
    let timeout = t.function_timeout(CONSUMER).expect("consumer Timeout");
    assert!(
        t.queue_visibility_timeout() >= 6 * timeout,
        "VisibilityTimeout {} < 6 x consumer Timeout {timeout}",
        t.queue_visibility_timeout()
    );
}

#[test]
fn ledger_retention_outlasts_the_queue_and_dead_letter_chain() {
    let t = template();
    let queue = u64::from(t.queue_retention_seconds());
    let dlq = u64::from(t.dlq_retention_seconds());
    let chain = inbox::config::retention_chain_seconds(queue, Some(dlq));
    // Both functions are told the queue's and the dead-letter queue's retention and refuse to
    // start with a source that forgets its keys before a redriven message could still arrive
    // (inbox::config::SourceSpecs::check_retention).
    for function in ["ReceiverFunction", "ConsumerFunction"] {
        let variables = t
            .resource(function)
            .and_then(|r| r.get("Properties")?.get("Environment")?.get("Variables"))
            .unwrap_or_else(|| panic!("{function} has environment variables"));
        for (name, value) in [
            ("QUEUE_RETENTION_SECONDS", queue),
            ("DLQ_RETENTION_SECONDS", dlq),
        ] {
            assert_eq!(
                variables.get(name).and_then(Value::as_str),
                Some(value.to_string().as_str()),
                "{function}'s {name} is the queue's retention"
            );
        }
    }
    let default_sources = t
        .parameter_default("WebhookSources")
        .and_then(Value::as_str)
        .expect("WebhookSources has a default");
    inbox::config::SourceSpecs::parse(default_sources)
        .expect("the default WebhookSources parses")
        .check_retention(chain)
        .expect("the default sources outlast the chain");

    // And so do the demo sources' own retention_hours.
    let sources: serde_json::Value =
        serde_json::from_str(default_sources).expect("WebhookSources default is JSON");
    let sources = sources.as_object().expect("a JSON object of sources");
    // One source, the one the smoke test signs for: a first deploy needs one secret.
    assert_eq!(
        sources.keys().collect::<Vec<_>>(),
        ["github"],
        "the default is one source"
    );
    for (name, source) in sources {
        let hours = source
            .get("retention_hours")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(inbox::config::DEFAULT_RETENTION_HOURS);
        assert!(
            chain <= hours * 3600,
            "source {name}: retention_hours {hours} under the chain of {chain} s"
        );
    }
}

#[test]
fn redrive_goes_to_a_fifo_dlq_that_outlives_the_queue() {
    let t = template();
    assert!(t.dlq_is_fifo(), "a FIFO queue's DLQ must be FIFO");
    assert!(t.max_receive_count() >= 1);
    // A message keeps its original enqueue time in a FIFO DLQ: it must not expire there first.
    assert!(t.dlq_retention_seconds() > t.queue_retention_seconds());
    // And a redriven dead letter must still find its key in the ledger, or its side effect
    // could run again: the DLQ keeps messages for less than any default source remembers keys.
    let default_sources = t
        .parameter_default("WebhookSources")
        .and_then(Value::as_str)
        .expect("WebhookSources has a default");
    let specs = inbox::config::SourceSpecs::parse(default_sources).expect("default sources parse");
    for spec in specs.iter() {
        assert!(
            u64::from(t.dlq_retention_seconds()) < spec.retention_hours * 3600,
            "source {}: DLQ retention outlives retention_hours",
            spec.name
        );
    }
}

#[test]
fn functions_get_the_environment_the_code_reads() {
    let t = template();
    let receiver = t.function_env_names(RECEIVER);
    for name in [
        "LEDGER_TABLE",
        "WEBHOOK_SOURCES",
        "QUEUE_URL",
        "MAX_BODY_BYTES",
        "PAYLOAD_BUCKET",
        "RUST_LOG",
    ] {
        assert!(receiver.iter().any(|n| n == name), "receiver lacks {name}");
    }
    // The archive is the consumer's: off the sender's path.
    for name in ["ARCHIVE_BODIES", "ARCHIVE_STREAM"] {
        assert!(!receiver.iter().any(|n| n == name), "receiver has {name}");
        assert!(
            t.function_env_names(CONSUMER).iter().any(|n| n == name),
            "consumer lacks {name}"
        );
    }
    // Removed (a duplicate behind a live claim no longer waits): not set.
    assert!(!receiver.iter().any(|n| n == "IN_PROGRESS_WAIT_MS"));
    let consumer = t.function_env_names(CONSUMER);
    for name in [
        "LEDGER_TABLE",
        "WEBHOOK_SOURCES",
        "FORWARD_URL",
        "FORWARD_TIMEOUT_MS",
        "MAX_CONCURRENT_GROUPS",
        "RUST_LOG",
    ] {
        assert!(consumer.iter().any(|n| n == name), "consumer lacks {name}");
    }
    assert!(t.function_env_names("NoSuchFunction").is_empty());

    assert_eq!(
        ref_target(env_value(&t, RECEIVER, "QUEUE_URL")),
        Some(t.queue_logical_id())
    );
    for function in [RECEIVER, CONSUMER] {
        assert_eq!(
            ref_target(env_value(&t, function, "LEDGER_TABLE")),
            Some(t.table_logical_id())
        );
    }
}

#[test]
fn no_iam_statement_has_a_wildcard() {
    fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(s) => out.push(s),
            Value::Sequence(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Mapping(map) => map.values().for_each(|v| strings(v, out)),
            Value::Tagged(tagged) => strings(&tagged.value, out),
            _ => {}
        }
    }
    fn walk(value: &Value, checked: &mut usize) {
        match value {
            // A Deny only takes away (the payload bucket's TLS-only policy denies s3:* on it).
            Value::Mapping(map) if map.get("Effect").and_then(Value::as_str) == Some("Deny") => {}
            Value::Mapping(map) => {
                for (key, v) in map {
                    if let Some(k @ ("Action" | "NotAction" | "Resource" | "NotResource")) =
                        key.as_str()
                    {
                        let mut found = Vec::new();
                        strings(v, &mut found);
                        for s in found {
                            // Object keys of the payload bucket are named by prefix.
                            let object_prefix = k == "Resource"
                                && s.starts_with("${PayloadBucket.Arn}/")
                                && s.ends_with("/*")
                                && !s[..s.len() - 2].contains('*');
                            // With no SecretArns, the receiver reads the stack's own
                            // secrets: named by the stack's prefix, in its account and region.
                            let stack_secrets = k == "Resource"
                                && s == "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${AWS::StackName}/*";
                            assert!(
                                object_prefix
                                    || stack_secrets
                                    || s == "${PayloadBucket.Arn}/*"
                                    || !s.contains('*'),
                                "{k} {s:?} has a wildcard"
                            );
                        }
                        *checked += 1;
                    }
                    walk(v, checked);
                }
            }
            Value::Sequence(items) => items.iter().for_each(|v| walk(v, checked)),
            // !If branches, !Sub strings, ...
            Value::Tagged(tagged) => walk(&tagged.value, checked),
            _ => {}
        }
    }
    let t = template();
    let mut checked = 0;
    walk(t.document(), &mut checked);
    // receiver: 3 statements, consumer: 2, each with Action and Resource.
    assert!(
        checked >= 10,
        "found only {checked} Action/Resource entries"
    );
}

#[test]
fn consumer_reports_batch_item_failures() {
    let t = template();
    let event = consumer_sqs_event(&t);
    let types = event
        .get("FunctionResponseTypes")
        .and_then(Value::as_sequence)
        .expect("FunctionResponseTypes");
    assert!(types
        .iter()
        .any(|v| v.as_str() == Some("ReportBatchItemFailures")));

    match event.get("Queue").expect("SQS event Queue") {
        Value::Tagged(tagged) if tagged.tag == "GetAtt" => assert_eq!(
            tagged.value.as_str(),
            Some(format!("{}.Arn", t.queue_logical_id()).as_str())
        ),
        other => panic!("Queue should be !GetAtt <queue>.Arn, is {other:?}"),
    }

    let batch = number(event.get("BatchSize").expect("BatchSize"));
    assert!((1..=10).contains(&batch), "FIFO batches hold at most 10");

    let max = event
        .get("ScalingConfig")
        .and_then(|s| s.get("MaximumConcurrency"))
        .expect("ScalingConfig.MaximumConcurrency");
    let param = ref_target(max).expect("MaximumConcurrency is a parameter");
    assert!(parameter_default_number(&t, param) >= 2, "AWS minimum is 2");
}

#[test]
fn a_batch_of_one_group_fits_in_the_consumer_timeout() {
    // One FIFO group runs its messages in order, so a full batch of slow forwards is the worst case.
    let t = template();
    let batch = number(consumer_sqs_event(&t).get("BatchSize").expect("BatchSize"));
    let forward_ms = number(env_value(&t, CONSUMER, "FORWARD_TIMEOUT_MS"));
    let timeout_ms = u64::from(t.function_timeout(CONSUMER).expect("Timeout")) * 1000;
    assert!(
        batch * forward_ms < timeout_ms,
        "{batch} x {forward_ms} ms >= {timeout_ms} ms"
    );
}

#[test]
fn the_largest_body_the_platform_admits_is_accepted_through_the_payload_bucket() {
    // MAX_BODY_BYTES is what a 6 MB synchronous Lambda payload carries through API Gateway;
    // an envelope over the queue's largest message carries a pointer into PAYLOAD_BUCKET.
    let t = template();
    let max_body = number(env_value(&t, RECEIVER, "MAX_BODY_BYTES"));
    assert_eq!(max_body, inbox::config::env::DEFAULT_MAX_BODY_BYTES);
    assert_eq!(max_body, 6_291_456 - 32_768);
    let message_limit: u64 = t
        .queue_attributes()
        .get("MaximumMessageSize")
        .map_or(262_144, |v| v.parse().expect("a number"));
    assert_eq!(
        message_limit,
        inbox::queue::SQS_MAX_MESSAGE_BYTES as u64,
        "the receiver measures envelopes against the queue's limit"
    );
    assert!(max_body > message_limit);
    for function in [RECEIVER, CONSUMER] {
        assert_eq!(
            ref_target(env_value(&t, function, "PAYLOAD_BUCKET")),
            Some("PayloadBucket"),
            "{function} needs the bucket for bodies over the queue's limit"
        );
    }
}

/// `Environment.Variables.<name>` of a function's properties (or of `Globals.Function`).
fn variable<'a>(properties: &'a Value, name: &str) -> Option<&'a Value> {
    properties.get("Environment")?.get("Variables")?.get(name)
}

// --- against the local stack ------------------------------------------------------------------

/// The stack every end-to-end test runs on (template.yaml created on moto's CloudFormation,
/// [`LocalAws`]) holds what the template declares, as the reader above sees it.
#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn the_local_stack_holds_what_the_template_declares() {
    let t = template();
    let aws = LocalAws::new("it").await;
    let (dynamo, sqs) = (aws.dynamo.clone(), aws.sqs.clone());
    let made = &aws.resources;
    let stack = &aws.stack;
    assert_eq!(stack.outputs["LedgerTableName"], made.table);
    assert!(
        made.queue_url
            .ends_with(&format!("/{}-webhooks.fifo", stack.name)),
        "{}",
        made.queue_url
    );
    assert!(
        made.dlq_url.ends_with(&format!("/{}-dlq.fifo", stack.name)),
        "{}",
        made.dlq_url
    );

    // The table.
    let described = dynamo
        .describe_table()
        .table_name(&made.table)
        .send()
        .await
        .expect("DescribeTable");
    let table = described.table().expect("a table");
    let keys: Vec<_> = table
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type().clone()))
        .collect();
    assert_eq!(keys, [(t.partition_key(), KeyType::Hash)]);
    let pk_type = table
        .attribute_definitions()
        .iter()
        .find(|d| d.attribute_name() == t.partition_key())
        .map(|d| d.attribute_type().clone());
    assert_eq!(pk_type, Some(ScalarAttributeType::S));
    if let Some(summary) = table.billing_mode_summary() {
        assert_eq!(
            summary.billing_mode().map(|m| m.as_str()),
            Some(t.billing_mode())
        );
    }

    let ttl = dynamo
        .describe_time_to_live()
        .table_name(&made.table)
        .send()
        .await
        .expect("DescribeTimeToLive");
    let ttl = ttl.time_to_live_description().expect("a TTL description");
    assert_eq!(ttl.attribute_name(), Some(t.ttl_attribute()));
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));

    // The queues.
    let all = |url: String| {
        let sqs = sqs.clone();
        async move {
            sqs.get_queue_attributes()
                .queue_url(url)
                .attribute_names(QueueAttributeName::All)
                .send()
                .await
                .expect("GetQueueAttributes")
                .attributes()
                .cloned()
                .unwrap_or_default()
        }
    };
    let queue = all(made.queue_url.clone()).await;
    let dlq = all(made.dlq_url.clone()).await;
    for (expected, actual, which) in [
        (t.queue_attributes(), &queue, "queue"),
        (t.dlq_attributes(), &dlq, "dlq"),
    ] {
        for (name, value) in expected {
            assert_eq!(
                actual.get(&QueueAttributeName::from(name.as_str())),
                Some(value),
                "{which} attribute {name}"
            );
        }
    }
    let redrive: serde_json::Value = serde_json::from_str(
        queue
            .get(&QueueAttributeName::RedrivePolicy)
            .expect("RedrivePolicy"),
    )
    .expect("RedrivePolicy is JSON");
    assert_eq!(
        redrive["deadLetterTargetArn"].as_str(),
        dlq.get(&QueueAttributeName::QueueArn).map(String::as_str)
    );
    let max_receive = &redrive["maxReceiveCount"];
    let max_receive = max_receive
        .as_u64()
        .or_else(|| max_receive.as_str()?.parse().ok());
    assert_eq!(max_receive, Some(u64::from(t.max_receive_count())));

    // Without content-based deduplication, a message needs an explicit deduplication id.
    let refused = sqs
        .send_message()
        .queue_url(&made.queue_url)
        .message_group_id("g")
        .message_body("{}")
        .send()
        .await;
    let refused = refused.expect_err("sent without a MessageDeduplicationId");
    let refused = refused.into_service_error();
    assert_eq!(
        aws_sdk_sqs::error::ProvideErrorMetadata::code(&refused),
        Some("InvalidParameterValue"),
        "{refused:?}"
    );

    // The functions: every variable the template sets to a literal has that value, its
    // references name the stack's table and queue.
    for (logical, function) in [(RECEIVER, &stack.receiver), (CONSUMER, &stack.consumer)] {
        for name in t.function_env_names(logical) {
            let own = t
                .resource(logical)
                .and_then(|r| r.get("Properties"))
                .and_then(|p| variable(p, &name));
            let global = t
                .document()
                .get("Globals")
                .and_then(|g| g.get("Function"))
                .and_then(|f| variable(f, &name));
            let declared = own.or(global).expect("declared where the reader found it");
            let literal = match declared {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            };
            let got = function.environment.get(&name);
            assert!(got.is_some(), "{logical} has no {name} in the stack");
            if let Some(literal) = literal {
                assert_eq!(got, Some(&literal), "{logical} {name}");
            }
        }
        assert_eq!(
            function.environment["LEDGER_TABLE"], made.table,
            "{logical}"
        );
    }
    assert_eq!(stack.receiver.environment["QUEUE_URL"], made.queue_url);

    // The payload bucket: both functions name it; encrypted, public access blocked, every
    // object expiring after PayloadRetentionDays (put by hand where moto's CloudFormation
    // does not apply it).
    assert!(!made.payload_bucket.is_empty());
    for function in [&stack.receiver, &stack.consumer] {
        assert_eq!(function.environment["PAYLOAD_BUCKET"], made.payload_bucket);
    }
    let s3 = &aws.s3;
    let sse = s3
        .get_bucket_encryption()
        .bucket(&made.payload_bucket)
        .send()
        .await
        .expect("GetBucketEncryption");
    let rule = &sse
        .server_side_encryption_configuration()
        .expect("encryption")
        .rules()[0];
    assert_eq!(
        rule.apply_server_side_encryption_by_default()
            .map(|d| d.sse_algorithm().as_str()),
        Some("AES256")
    );
    let block = s3
        .get_public_access_block()
        .bucket(&made.payload_bucket)
        .send()
        .await
        .expect("GetPublicAccessBlock");
    let block = block.public_access_block_configuration().expect("a block");
    assert_eq!(
        (
            block.block_public_acls(),
            block.block_public_policy(),
            block.ignore_public_acls(),
            block.restrict_public_buckets()
        ),
        (Some(true), Some(true), Some(true), Some(true))
    );
    let lifecycle = s3
        .get_bucket_lifecycle_configuration()
        .bucket(&made.payload_bucket)
        .send()
        .await
        .expect("GetBucketLifecycleConfiguration");
    let days: Vec<_> = lifecycle
        .rules()
        .iter()
        .filter_map(|r| r.expiration().and_then(|e| e.days()))
        .collect();
    let retention = stack
        .parameters
        .get("PayloadRetentionDays")
        .and_then(|v| v.parse().ok())
        .or_else(|| {
            template()
                .parameter_default("PayloadRetentionDays")
                .and_then(Value::as_i64)
                .and_then(|d| i32::try_from(d).ok())
        })
        .expect("PayloadRetentionDays has a value");
    assert_eq!(days, [retention]);
}
