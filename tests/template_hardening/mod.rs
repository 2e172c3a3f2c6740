//! The deployed template's hardening, alarms and dashboard, checked on template.yaml as the real
//! SAM transform hands it to CloudFormation (with samconfig.toml's parameters). Each test fails
//! if its setting is taken out. What moto's CloudFormation skips (the HTTP API, the alarms) is
//! only checked here; tests/template_deploys.rs creates the rest.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use devstack::cloudformation::{samconfig_path, Parameters, Translated};
use inbox::metrics::{Metric, NAMESPACE};
use serde_json::{json, Value};

fn translated() -> &'static Translated {
    static T: OnceLock<Translated> = OnceLock::new();
    T.get_or_init(|| Translated::project().unwrap_or_else(|e| panic!("{e:#}")))
}

fn samconfig() -> Parameters {
    Parameters::from_samconfig(&samconfig_path()).expect("samconfig.toml parses")
}

fn reference(name: &str) -> Value {
    json!({ "Ref": name })
}

fn get_att(resource: &str, attribute: &str) -> Value {
    json!({ "Fn::GetAtt": [resource, attribute] })
}

/// The value a stack gets for a Number parameter: samconfig's, else the default.
fn number_parameter(name: &str) -> i64 {
    let t = translated();
    let declared = t
        .parameter(name)
        .unwrap_or_else(|| panic!("parameter {name}"));
    assert_eq!(declared["Type"], "Number", "{name}");
    let value = samconfig()
        .get(name)
        .map(str::to_owned)
        .or_else(|| declared["Default"].as_i64().map(|n| n.to_string()))
        .or_else(|| declared["Default"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{name} has a value"));
    value.parse().unwrap_or_else(|_| panic!("{name}={value}"))
}

/// Every policy statement of a role (inline policies), as (actions, resource) pairs; a
/// statement under `Fn::If` counts as its condition's true branch.
fn role_statements(role: &Value) -> Vec<(Vec<String>, Value)> {
    let mut out = Vec::new();
    for policy in role["Properties"]["Policies"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for statement in policy["PolicyDocument"]["Statement"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let statement = statement
                .get("Fn::If")
                .and_then(|branches| branches.get(1))
                .unwrap_or(statement);
            let actions = match &statement["Action"] {
                Value::String(a) => vec![a.clone()],
                Value::Array(a) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                other => panic!("Action {other}"),
            };
            out.push((actions, statement["Resource"].clone()));
        }
    }
    out
}

#[test]
fn the_http_api_is_explicit_throttled_and_access_logged() {
    let t = translated();
    let api = t
        .only_of_type("AWS::ApiGatewayV2::Api")
        .expect("one HTTP API");
    assert_eq!(
        api, "WebhookApi",
        "declared in the template, not SAM's implicit one"
    );
    assert!(
        t.properties(api)["Body"]["paths"]
            .get("/webhooks/{source}")
            .is_some(),
        "the receiver's route is on it"
    );

    let stage_id = t
        .only_of_type("AWS::ApiGatewayV2::Stage")
        .expect("one stage");
    let stage = t.properties(stage_id);
    assert_eq!(stage["ApiId"], reference(api));
    let throttle = &stage["DefaultRouteSettings"];
    assert_eq!(
        throttle["ThrottlingBurstLimit"],
        reference("ApiThrottlingBurstLimit")
    );
    assert_eq!(
        throttle["ThrottlingRateLimit"],
        reference("ApiThrottlingRateLimit")
    );
    assert!(number_parameter("ApiThrottlingBurstLimit") > 0);
    assert!(number_parameter("ApiThrottlingRateLimit") > 0);

    let logs = &stage["AccessLogSettings"];
    let group = logs["DestinationArn"]["Fn::GetAtt"][0]
        .as_str()
        .expect("access logs go to a log group of the stack");
    assert_eq!(logs["DestinationArn"], get_att(group, "Arn"));
    let group_props = t.properties(group);
    assert_eq!(t.resource(group).unwrap()["Type"], "AWS::Logs::LogGroup");
    assert!(
        group_props["RetentionInDays"]
            .as_i64()
            .is_some_and(|d| d > 0),
        "the access log group expires its entries"
    );
    let format: Value = serde_json::from_str(logs["Format"].as_str().expect("Format"))
        .expect("the access log format is JSON");
    for field in ["requestId", "ip", "status", "routeKey"] {
        assert!(format.get(field).is_some(), "access log has {field}");
    }
    let text = logs["Format"].as_str().unwrap();
    for leak in ["requestHeader", "$context.authorizer", "body"] {
        assert!(!text.contains(leak), "access log must not record {leak}");
    }
}

#[test]
fn the_receiver_reserves_concurrency_only_when_asked() {
    let t = translated();
    let reserved = &t.properties("ReceiverFunction")["ReservedConcurrentExecutions"];
    assert_eq!(
        reserved,
        &json!({"Fn::If": ["ReservesReceiverConcurrency",
            {"Ref": "ReceiverReservedConcurrency"}, {"Ref": "AWS::NoValue"}]})
    );
    assert_eq!(
        t.document()["Conditions"]["ReservesReceiverConcurrency"],
        json!({"Fn::Not": [{"Fn::Equals": [{"Ref": "ReceiverReservedConcurrency"}, 0]}]})
    );
    // A new account's concurrency quota is 10, all of it the unreserved minimum: the shipped
    // configuration reserves nothing (docs/deploying.md, a new account's quotas).
    assert_eq!(
        number_parameter("ReceiverReservedConcurrency"),
        0,
        "nothing reserved in the shipped configuration"
    );
    // With the function URL, which does not throttle, CloudFormation refuses 0.
    let rule = &t.document()["Rules"]["FunctionUrlNeedsReservedConcurrency"];
    assert_eq!(
        rule["RuleCondition"],
        json!({"Fn::Equals": [{"Ref": "FunctionUrl"}, "enabled"]})
    );
    assert_eq!(
        rule["Assertions"][0]["Assert"],
        json!({"Fn::Not": [{"Fn::Equals": [{"Ref": "ReceiverReservedConcurrency"}, "0"]}]})
    );
}

#[test]
fn the_consumer_role_is_scoped_to_its_queue() {
    let t = translated();
    for (id, role) in t.resources_of_type("AWS::IAM::Role") {
        let managed = role["Properties"]["ManagedPolicyArns"].to_string();
        assert!(
            !managed.contains("AWSLambdaSQSQueueExecutionRole"),
            "{id} gets the managed SQS policy (every queue in the account)"
        );
    }
    let role_arn = &t.properties("ConsumerFunction")["Role"];
    let role_id = role_arn["Fn::GetAtt"][0]
        .as_str()
        .expect("the consumer's Role is a role of the stack");
    assert_eq!(role_arn, &get_att(role_id, "Arn"));
    let role = t.resource(role_id).expect("consumer role");
    assert_eq!(role["Type"], "AWS::IAM::Role");

    let statements = role_statements(role);
    let dead_letter = (
        vec!["sqs:SendMessage".to_owned()],
        get_att("DeadLetterQueue", "Arn"),
    );
    assert!(
        statements.contains(&dead_letter),
        "the consumer may send to its dead-letter queue (MaxFailures)"
    );
    let sqs: Vec<_> = statements
        .iter()
        .filter(|s| **s != dead_letter)
        // The destinations' queues (DestinationQueueArns, only when given): destinations.rs.
        .filter(|(_, resource)| *resource != reference("DestinationQueueArns"))
        .filter(|(actions, _)| actions.iter().any(|a| a.starts_with("sqs:")))
        .collect();
    assert!(!sqs.is_empty(), "the consumer may poll its queue");
    for (actions, resource) in &sqs {
        assert_eq!(
            resource,
            &get_att("WebhookQueue", "Arn"),
            "{actions:?} on this queue only (and SendMessage on its dead-letter queue)"
        );
    }
    let all: BTreeSet<&str> = sqs
        .iter()
        .flat_map(|(a, _)| a.iter().map(String::as_str))
        .collect();
    for needed in [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:ChangeMessageVisibility",
    ] {
        assert!(all.contains(needed), "consumer role lacks {needed}");
    }
    for (actions, resource) in &statements {
        // Object keys need a prefix pattern: it reads the bodies behind pointers and writes
        // only the archive's envelopes too big for a Firehose record (and, with destinations,
        // the bodies too big for them).
        if actions.iter().any(|a| a.starts_with("s3:")) {
            let allowed = [
                (
                    vec!["s3:GetObject".to_owned()],
                    json!({"Fn::Sub": "${PayloadBucket.Arn}/payloads/*"}),
                ),
                (
                    vec!["s3:PutObject".to_owned()],
                    json!({"Fn::Sub": "${PayloadBucket.Arn}/archive/*"}),
                ),
                // With an ARN destination: a body too big for it, as a pointer (destinations.rs).
                (
                    vec!["s3:PutObject".to_owned()],
                    json!({"Fn::Sub": "${PayloadBucket.Arn}/payloads/*"}),
                ),
            ];
            assert!(
                allowed.contains(&(actions.clone(), resource.clone())),
                "the consumer's S3 statement {actions:?} on {resource}"
            );
            continue;
        }
        if actions.iter().any(|a| a.starts_with("firehose:")) {
            assert_eq!(actions, &["firehose:PutRecordBatch"]);
            assert_eq!(
                resource,
                &json!({"Fn::Sub": "arn:${AWS::Partition}:firehose:${AWS::Region}:${AWS::AccountId}:deliverystream/${AWS::StackName}-archive"})
            );
            continue;
        }
        assert!(
            !resource.to_string().contains('*'),
            "{actions:?} on {resource}: no wildcard resource"
        );
    }
    assert!(
        t.resources_of_type("AWS::IAM::Policy").is_empty(),
        "no policy attached to the role from outside"
    );
}

#[test]
fn the_ledger_survives_a_stack_delete_or_replacement() {
    let t = translated();
    let table = t.only_of_type("AWS::DynamoDB::Table").unwrap();
    let resource = t.resource(table).unwrap();
    assert_eq!(resource["DeletionPolicy"], "Retain");
    assert_eq!(resource["UpdateReplacePolicy"], "Retain");
    assert_eq!(resource["Properties"]["DeletionProtectionEnabled"], true);
}

#[test]
fn rust_log_keeps_dependencies_at_warn() {
    let t = translated();
    for function in ["ReceiverFunction", "ConsumerFunction"] {
        let props = t.properties(function);
        let rust_log = props["Environment"]["Variables"]["RUST_LOG"]["Fn::Sub"]
            .as_str()
            .unwrap_or_else(|| panic!("{function}: RUST_LOG is a Fn::Sub of LogLevel"));
        let directives: Vec<&str> = rust_log.split(',').collect();
        assert_eq!(directives[0], "warn", "{function}: everything else at WARN");
        let scoped: BTreeSet<&str> = directives[1..]
            .iter()
            .map(|d| {
                let (target, level) = d.split_once('=').expect("target=level");
                assert_eq!(level, "${LogLevel}", "{function}: {d}");
                target
            })
            .collect();
        assert_eq!(
            scoped,
            BTreeSet::from(["inbox", "receiver", "consumer"]),
            "{function}: only the project's crates follow LogLevel"
        );
        let logging = &props["LoggingConfig"];
        assert_eq!(logging["LogFormat"], "JSON", "{function}");
        assert_eq!(
            logging["ApplicationLogLevel"],
            reference("LogLevel"),
            "{function}"
        );
    }
}

#[test]
fn forward_url_is_https_only() {
    let t = translated();
    let pattern = t.parameter("ForwardUrl").unwrap()["AllowedPattern"]
        .as_str()
        .expect("ForwardUrl has an AllowedPattern");
    // Empty: no default destination (docs/routing.md); anything given is https.
    assert_eq!(pattern, "^(https://.+)?$");
    let value = samconfig().get("ForwardUrl").map(str::to_owned);
    assert!(
        value.as_deref().is_some_and(|v| v.starts_with("https://")),
        "samconfig's ForwardUrl {value:?}"
    );
}

#[test]
fn only_the_webhook_queue_may_dead_letter_into_the_dlq() {
    let t = translated();
    let policy = &t.properties("DeadLetterQueue")["RedriveAllowPolicy"];
    assert_eq!(policy["redrivePermission"], "byQueue");
    let sources = policy["sourceQueueArns"]
        .as_array()
        .expect("sourceQueueArns");
    assert_eq!(sources.len(), 1);
    let arn = sources[0]["Fn::Sub"]
        .as_str()
        .expect("an ARN from the name");
    let name = t.properties("WebhookQueue")["QueueName"]["Fn::Sub"]
        .as_str()
        .expect("the webhook queue's name");
    assert_eq!(
        arn,
        format!("arn:${{AWS::Partition}}:sqs:${{AWS::Region}}:${{AWS::AccountId}}:{name}"),
        "the webhook queue's ARN"
    );
}

#[test]
fn forwards_are_signed_with_a_generated_whsec_key_the_consumer_alone_reads() {
    let t = translated();
    let secret = t
        .resource("ForwardSigningSecret")
        .expect("ForwardSigningSecret");
    assert_eq!(secret["Type"], "AWS::SecretsManager::Secret");
    let generate = &secret["Properties"]["GenerateSecretString"];
    assert_eq!(
        generate["ExcludePunctuation"], true,
        "letters and digits only"
    );
    let length = generate["PasswordLength"].as_u64().expect("PasswordLength");
    assert!(
        length.is_multiple_of(4) && length >= 32,
        "{length}: base64 of 24 bytes or more"
    );
    // Letters and digits of that length are the base64 of a whsec_ key, as the consumer
    // checks it at start-up.
    let generated: String = "aB3".chars().cycle().take(length as usize).collect();
    assert!(inbox::forward::ForwardSigner::new(&[generated]).is_ok());

    let env = &t.properties("ConsumerFunction")["Environment"]["Variables"];
    assert_eq!(
        env["FORWARD_SIGNING_SECRET"],
        json!({ "Fn::Sub": "secretsmanager:${ForwardSigningSecret}" })
    );
    let role_id = t.properties("ConsumerFunction")["Role"]["Fn::GetAtt"][0]
        .as_str()
        .expect("consumer role");
    let read = (
        vec!["secretsmanager:GetSecretValue".to_owned()],
        reference("ForwardSigningSecret"),
    );
    assert!(
        role_statements(t.resource(role_id).expect("consumer role")).contains(&read),
        "the consumer reads the signing key"
    );
    // Another role names it only to deny it (the receiver, whose secrets share its prefix).
    for (id, resource) in t.resources_of_type("AWS::IAM::Role") {
        if id == role_id {
            continue;
        }
        for policy in resource["Properties"]["Policies"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for statement in policy["PolicyDocument"]["Statement"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if statement.to_string().contains("ForwardSigningSecret") {
                    assert_eq!(
                        statement["Effect"], "Deny",
                        "{id}: only the consumer reads the signing key"
                    );
                }
            }
        }
        let mut rest = resource.clone();
        rest["Properties"]["Policies"] = Value::Null;
        assert!(
            !rest.to_string().contains("ForwardSigningSecret"),
            "{id}: only the consumer reads the signing key"
        );
    }
    assert!(
        !t.properties("ReceiverFunction")
            .to_string()
            .contains("ForwardSigningSecret"),
        "the receiver never sees it"
    );
}

#[test]
fn the_consumer_dead_letters_after_max_failures_and_max_receive_count_is_a_safety_net() {
    let t = translated();
    let env = &t.properties("ConsumerFunction")["Environment"]["Variables"];
    assert_eq!(env["QUEUE_URL"], reference("WebhookQueue"));
    assert_eq!(env["DLQ_URL"], reference("DeadLetterQueue"));
    assert_eq!(env["MAX_FAILURES"], json!({ "Fn::Sub": "${MaxFailures}" }));
    let max_failures = number_parameter("MaxFailures");
    assert!(max_failures >= 1);

    let queue = t.properties("WebhookQueue");
    let max_receive = queue["RedrivePolicy"]["maxReceiveCount"]
        .as_i64()
        .expect("maxReceiveCount");
    let visibility = queue["VisibilityTimeout"]
        .as_i64()
        .expect("VisibilityTimeout");
    let retention = queue["MessageRetentionPeriod"]
        .as_i64()
        .expect("MessageRetentionPeriod");
    assert!(
        max_receive > 10 * max_failures,
        "{max_receive}: a safety net, not the rule"
    );
    // A message failing for other reasons (a store error, a busy key) comes back every
    // visibility timeout: it reaches the safety net before the queue's retention deletes it.
    assert!(
        max_receive * visibility < retention,
        "{max_receive} x {visibility} s outlasts the retention of {retention} s"
    );
    // Throttled on every receive (delayed at least its receive count in seconds), a message
    // needs more than a day to reach it.
    let throttled_s: i64 = (1..=max_receive).sum();
    assert!(throttled_s > 24 * 3600, "{throttled_s} s");
}

mod alarms;
mod deployer_policy;
mod destinations;
mod first_deploy;
mod function_url;
mod payload_bucket;
mod queue_policy;
mod side_doors;
