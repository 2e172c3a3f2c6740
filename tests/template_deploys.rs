//! template.yaml as `sam deploy` would create it: translated by the real SAM transform and
//! created on moto's CloudFormation with samconfig.toml's parameters, then read back through the
//! SDK (the table, both queues, both functions' configuration, the event source mapping) and
//! compared with the translated template.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, Mutex};

use aws_sdk_sqs::types::QueueAttributeName;
use devstack::cloudformation::{
    delete_local, deploy_local, deploy_local_with, samconfig_path, Parameters, Stack, Translated,
};
use serde_json::Value;
use tokio::sync::OnceCell;

async fn sdk() -> aws_config::SdkConfig {
    devstack::moto::shared();
    inbox::app::sdk_config().await
}

fn samconfig() -> Parameters {
    Parameters::from_samconfig(&samconfig_path()).expect("samconfig.toml parses")
}

/// The stack created with samconfig.toml's parameters, once per test binary.
async fn stack() -> &'static Stack {
    static STACK: OnceCell<Stack> = OnceCell::const_new();
    STACK
        .get_or_init(|| async {
            deploy_local(&sdk().await, "inbox-samconfig")
                .await
                .unwrap_or_else(|e| panic!("deploying template.yaml on moto: {e:#}"))
        })
        .await
}

/// A template scalar as SQS and CloudFormation's string parameters carry it.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A Number parameter's value for the stack: samconfig's, else the template's default.
fn number_value(parameters: &Parameters, t: &Translated, name: &str) -> i32 {
    parameters
        .get(name)
        .map(str::to_owned)
        .or_else(|| t.parameter(name).map(|p| scalar(&p["Default"])))
        .unwrap_or_else(|| panic!("{name} has a value"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is a number"))
}

async fn queue_attributes(url: &str) -> BTreeMap<String, String> {
    aws_sdk_sqs::Client::new(&sdk().await)
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .expect("GetQueueAttributes on the stack's queue URL")
        .attributes()
        .expect("attributes")
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
        .collect()
}

#[test]
fn every_samconfig_parameter_is_a_template_parameter() {
    let translated = Translated::project().unwrap_or_else(|e| panic!("{e:#}"));
    let declared = translated.parameter_names();
    for name in samconfig().names() {
        assert!(
            declared.contains(&name),
            "samconfig.toml overrides {name}, which template.yaml does not declare: \
             `sam deploy` would fail"
        );
    }
}

#[tokio::test]
async fn a_parameter_the_template_lacks_is_refused_as_cloudformation_would() {
    let mut parameters = samconfig();
    parameters.set("RetentionHours", "168");
    let err = deploy_local_with(&sdk().await, "inbox-stale", &parameters)
        .await
        .expect_err("an unknown parameter");
    assert!(format!("{err:#}").contains("RetentionHours"), "{err:#}");
}

#[tokio::test]
async fn the_stack_reaches_create_complete_with_samconfig_parameters() {
    let stack = stack().await;
    assert_eq!(stack.parameters, samconfig());
    for (logical, kind) in [
        ("LedgerTable", "AWS::DynamoDB::Table"),
        ("WebhookQueue", "AWS::SQS::Queue"),
        ("DeadLetterQueue", "AWS::SQS::Queue"),
        ("ReceiverFunction", "AWS::Lambda::Function"),
        ("ConsumerFunction", "AWS::Lambda::Function"),
        ("ReceiverFunctionRole", "AWS::IAM::Role"),
        ("ConsumerRole", "AWS::IAM::Role"),
        ("ConsumerFunctionQueue", "AWS::Lambda::EventSourceMapping"),
        ("ReceiverLogGroup", "AWS::Logs::LogGroup"),
        ("ConsumerLogGroup", "AWS::Logs::LogGroup"),
        ("ApiAccessLogGroup", "AWS::Logs::LogGroup"),
        ("Dashboard", "AWS::CloudWatch::Dashboard"),
    ] {
        let (found, _) = stack
            .resources
            .get(logical)
            .unwrap_or_else(|| panic!("the stack created {logical}"));
        assert_eq!(found, kind, "{logical}");
    }
    assert!(
        !stack.resources.contains_key("AlarmTopic"),
        "no AlarmEmail in samconfig: no topic"
    );
    assert_eq!(stack.outputs["LedgerTableName"], stack.table);
    assert_eq!(stack.outputs["QueueUrl"], stack.queue_url);
    assert_eq!(stack.outputs["DeadLetterQueueUrl"], stack.dlq_url);
    assert_eq!(
        stack.outputs["ConsumerEventSourceMapping"],
        stack.event_source_mapping.uuid
    );
}

#[tokio::test]
async fn the_table_is_the_ledger_with_ttl_and_deletion_protection() {
    let stack = stack().await;
    let dynamo = aws_sdk_dynamodb::Client::new(&sdk().await);
    let table = dynamo
        .describe_table()
        .table_name(&stack.table)
        .send()
        .await
        .expect("DescribeTable")
        .table
        .expect("table");
    let keys: Vec<_> = table
        .key_schema()
        .iter()
        .map(|k| {
            (
                k.attribute_name().to_owned(),
                k.key_type().as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(keys, [("pk".to_owned(), "HASH".to_owned())]);
    assert_eq!(
        table
            .billing_mode_summary()
            .and_then(|b| b.billing_mode())
            .map(|m| m.as_str()),
        Some("PAY_PER_REQUEST")
    );
    assert_eq!(table.deletion_protection_enabled(), Some(true));

    // Applied by hand (moto leaves TTL off): it must be what the template says.
    let spec = &stack.translated.properties("LedgerTable")["TimeToLiveSpecification"];
    let ttl = dynamo
        .describe_time_to_live()
        .table_name(&stack.table)
        .send()
        .await
        .expect("DescribeTimeToLive")
        .time_to_live_description
        .expect("TTL description");
    assert_eq!(
        ttl.attribute_name(),
        spec["AttributeName"].as_str(),
        "TTL attribute"
    );
    assert_eq!(spec["Enabled"], true);
    assert_eq!(
        ttl.time_to_live_status().map(|s| s.as_str()),
        Some("ENABLED")
    );
}

#[tokio::test]
async fn both_queues_have_their_fifo_and_redrive_attributes() {
    let stack = stack().await;
    let queue = queue_attributes(&stack.queue_url).await;
    let dlq = queue_attributes(&stack.dlq_url).await;
    for (logical, attributes) in [("WebhookQueue", &queue), ("DeadLetterQueue", &dlq)] {
        let props = stack.translated.properties(logical);
        for name in [
            "FifoQueue",
            "ContentBasedDeduplication",
            "DeduplicationScope",
            "FifoThroughputLimit",
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "MaximumMessageSize",
            "SqsManagedSseEnabled",
        ] {
            if let Some(expected) = props.get(name) {
                assert_eq!(
                    attributes.get(name),
                    Some(&scalar(expected)),
                    "{logical} {name}"
                );
            }
        }
        assert_eq!(attributes["FifoQueue"], "true", "{logical} is FIFO");
    }
    let redrive: Value = serde_json::from_str(&queue["RedrivePolicy"]).expect("RedrivePolicy");
    assert_eq!(redrive["deadLetterTargetArn"], dlq["QueueArn"].as_str());
    assert_eq!(
        redrive["maxReceiveCount"],
        stack.translated.properties("WebhookQueue")["RedrivePolicy"]["maxReceiveCount"]
    );
}

#[tokio::test]
async fn both_functions_have_their_resolved_environment_roles_and_concurrency() {
    let stack = stack().await;
    let t = &stack.translated;
    let parameters = samconfig();
    let log_level = parameters.get("LogLevel").unwrap_or("INFO");
    let rust_log = format!("warn,inbox={log_level},receiver={log_level},consumer={log_level}");
    let sources = t.parameter("WebhookSources").unwrap()["Default"]
        .as_str()
        .expect("WebhookSources default");

    for (logical, function) in [
        ("ReceiverFunction", &stack.receiver),
        ("ConsumerFunction", &stack.consumer),
    ] {
        let declared = t.properties(logical)["Environment"]["Variables"]
            .as_object()
            .expect("Environment.Variables");
        let names: BTreeSet<&str> = function.environment.keys().map(String::as_str).collect();
        let expected: BTreeSet<&str> = declared.keys().map(String::as_str).collect();
        assert_eq!(names, expected, "{logical}: the template's variables");
        for (name, value) in declared {
            if let Value::String(literal) = value {
                assert_eq!(&function.environment[name], literal, "{logical} {name}");
            }
        }
        let env = &function.environment;
        assert_eq!(env["LEDGER_TABLE"], stack.table, "{logical}");
        assert_eq!(env["WEBHOOK_SOURCES"], sources, "{logical}");
        assert_eq!(env["RUST_LOG"], rust_log, "{logical}");
        assert_eq!(
            env["QUEUE_RETENTION_SECONDS"],
            scalar(&t.properties("WebhookQueue")["MessageRetentionPeriod"]),
            "{logical}"
        );
    }
    assert_eq!(stack.receiver.environment["QUEUE_URL"], stack.queue_url);
    assert_eq!(
        stack.consumer.environment["FORWARD_URL"],
        parameters
            .get("ForwardUrl")
            .expect("samconfig's ForwardUrl")
    );

    let role_of = |logical: &str| {
        let (_, name) = &stack.resources[logical];
        format!("role/{name}")
    };
    assert!(
        stack
            .receiver
            .role
            .ends_with(&role_of("ReceiverFunctionRole")),
        "{}",
        stack.receiver.role
    );
    assert!(
        stack.consumer.role.ends_with(&role_of("ConsumerRole")),
        "the consumer runs as its own scoped role: {}",
        stack.consumer.role
    );

    let reserved = number_value(&parameters, t, "ReceiverReservedConcurrency");
    // 0 reserves nothing (a new account has nothing to reserve): no concurrency setting.
    assert_eq!(
        stack.receiver.reserved_concurrency,
        (reserved > 0).then_some(reserved)
    );
    assert_eq!(stack.consumer.reserved_concurrency, None);
    for (logical, function) in [
        ("ReceiverFunction", &stack.receiver),
        ("ConsumerFunction", &stack.consumer),
    ] {
        assert_eq!(
            function.timeout_seconds.map(i64::from),
            t.properties(logical)["Timeout"].as_i64(),
            "{logical} Timeout"
        );
    }
}

#[tokio::test]
async fn the_event_source_mapping_is_the_template_s() {
    let stack = stack().await;
    let mapping = &stack.event_source_mapping;
    let declared = stack.translated.properties("ConsumerFunctionQueue");
    let queue = queue_attributes(&stack.queue_url).await;
    assert_eq!(mapping.event_source_arn, queue["QueueArn"]);
    assert_eq!(mapping.function_arn, stack.consumer.arn);
    assert_eq!(
        mapping.batch_size.map(i64::from),
        declared["BatchSize"].as_i64()
    );
    let max: i32 = samconfig()
        .get("ConsumerMaxConcurrency")
        .expect("samconfig's ConsumerMaxConcurrency")
        .parse()
        .expect("a number");
    assert_eq!(mapping.maximum_concurrency, Some(max));
    assert!(mapping.enabled);
    assert_eq!(mapping.function_response_types, ["ReportBatchItemFailures"]);
}

#[tokio::test]
async fn an_alarm_email_creates_the_alarm_topic() {
    let mut parameters = samconfig();
    parameters.set("AlarmEmail", "oncall@example.com");
    let stack = deploy_local_with(&sdk().await, "inbox-alarm-email", &parameters)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let (kind, arn) = &stack.resources["AlarmTopic"];
    assert_eq!(kind, "AWS::SNS::Topic");
    assert!(arn.starts_with("arn:"), "{arn}");
}

/// `sam delete` and a re-deploy under the same name, as docs/deploying.md's teardown gives them:
/// the delete completes with the payload bucket holding an object (the archive is on by
/// default), the ledger table and the bucket stay (retained by design), and the same stack
/// name deploys again beside them with a new table and bucket.
#[tokio::test]
async fn teardown_completes_keeps_the_ledger_and_the_archive_and_the_name_deploys_again() {
    let sdk = sdk().await;
    let name = "inbox-teardown";
    let first = deploy_local(&sdk, name)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let bucket = first.resources["PayloadBucket"].1.clone();
    // CloudFormation fails DeleteStack on a bucket that holds an object, where moto keeps it
    // silently: the template retains it, so that `sam delete` completes on AWS too.
    let declared = first
        .translated
        .resource("PayloadBucket")
        .expect("PayloadBucket");
    assert_eq!(declared["DeletionPolicy"], "Retain");
    assert_eq!(declared["UpdateReplacePolicy"], "Retain");
    let s3 = aws_sdk_s3::Client::new(&sdk);
    s3.put_object()
        .bucket(&bucket)
        .key("archive/github/2026/12/04/21/github:smoke-1")
        .body(b"{}".to_vec().into())
        .send()
        .await
        .expect("an archived event");
    delete_local(&sdk, &first)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let table = aws_sdk_dynamodb::Client::new(&sdk)
        .describe_table()
        .table_name(&first.table)
        .send()
        .await
        .expect("the ledger table is retained")
        .table
        .expect("a table");
    assert_eq!(table.deletion_protection_enabled, Some(true));
    s3.head_object()
        .bucket(&bucket)
        .key("archive/github/2026/12/04/21/github:smoke-1")
        .send()
        .await
        .expect("the payload bucket and its archive are retained");

    let second = deploy_local(&sdk, name)
        .await
        .unwrap_or_else(|e| panic!("a re-deploy after teardown: {e:#}"));
    assert_ne!(second.table, first.table, "a new, empty ledger");
    assert_ne!(second.resources["PayloadBucket"].1, bucket, "a new bucket");
}

/// A `tracing` writer into memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `at_trace_the_dependencies_still_log_nothing` sets the process's global subscriber and its
/// environment: in a process of its own.
#[test]
fn at_trace_in_its_own_process() {
    crate::support::in_own_process(
        "template_deploys::at_trace_the_dependencies_still_log_nothing",
        1,
    );
}

/// The binaries' own logging set-up (lambda_runtime's init_default_subscriber), given the
/// environment the stack resolves for LogLevel=TRACE: the project's crates log at TRACE, the
/// runtime and the AWS SDK (which log raw events and request bodies there) do not.
#[tokio::test]
#[ignore = "sets the global subscriber: run by at_trace_in_its_own_process"]
async fn at_trace_the_dependencies_still_log_nothing() {
    crate::support::own_process_only();
    let mut parameters = samconfig();
    parameters.set("LogLevel", "TRACE");
    let stack = deploy_local_with(&sdk().await, "inbox-trace", &parameters)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    let rust_log = stack.consumer.environment["RUST_LOG"].clone();
    assert_eq!(rust_log, stack.receiver.environment["RUST_LOG"]);

    // What Lambda sets from LoggingConfig, and the function's environment.
    std::env::set_var("AWS_LAMBDA_LOG_LEVEL", "TRACE");
    std::env::set_var("AWS_LAMBDA_LOG_FORMAT", "JSON");
    std::env::set_var("RUST_LOG", &rust_log);
    let captured = Captured::default();
    let writer = captured.clone();
    lambda_runtime::tracing::init_default_subscriber_with_writer(move || writer.clone());

    tracing::trace!(target: "lambda_runtime", "leak: raw event body");
    tracing::trace!(target: "lambda_runtime::layers::api_client", "leak: raw event body");
    tracing::trace!(target: "aws_smithy_runtime::client::http", "leak: request body");
    tracing::debug!(target: "aws_sdk_sqs::operation", "leak: request body");
    tracing::trace!(target: "hyper_util::client", "leak: connection");
    tracing::trace!(target: "inbox::receiver", "ours: inbox");
    tracing::trace!(target: "receiver", "ours: receiver");
    tracing::trace!(target: "consumer", "ours: consumer");

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        !text.contains("leak:"),
        "a dependency logged at TRACE:\n{text}"
    );
    for ours in ["ours: inbox", "ours: receiver", "ours: consumer"] {
        assert!(text.contains(ours), "{ours} missing at TRACE:\n{text}");
    }
}
