//! The payload bucket: encrypted, private, TLS only, expiring with the ledger;
//! who may put, get and list.

use super::*;

/// Statements of a policy document, as (effect, actions, resource).
fn document_statements(document: &Value) -> Vec<(String, Vec<String>, Value)> {
    document["Statement"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|statement| {
            let actions = match &statement["Action"] {
                Value::String(a) => vec![a.clone()],
                Value::Array(a) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(), // an `Fn::If`
            };
            (
                statement["Effect"].as_str().unwrap_or_default().to_owned(),
                actions,
                statement["Resource"].clone(),
            )
        })
        .collect()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
fn the_payload_bucket_is_encrypted_private_tls_only_and_expires_with_the_ledger() {
    let t = translated();
    let buckets = t.resources_of_type("AWS::S3::Bucket");
    assert_eq!(buckets.len(), 1, "one bucket: the payload bucket");
    let bucket = t.properties("PayloadBucket");
    assert_eq!(
        bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
            ["ServerSideEncryptionByDefault"]["SSEAlgorithm"],
        "AES256"
    );
    for flag in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(
            bucket["PublicAccessBlockConfiguration"][flag],
            json!(true),
            "{flag}"
        );
    }
    assert_eq!(
        bucket["OwnershipControls"]["Rules"][0]["ObjectOwnership"],
        "BucketOwnerEnforced"
    );
    // Every object expires after PayloadRetentionDays, which outlasts the retention chain.
    let rules = bucket["LifecycleConfiguration"]["Rules"]
        .as_array()
        .expect("lifecycle rules");
    let expiring: Vec<_> = rules
        .iter()
        .filter(|r| r["Status"] == "Enabled" && r.get("Prefix").is_none())
        .filter(|r| r["ExpirationInDays"] == reference("PayloadRetentionDays"))
        .collect();
    assert_eq!(
        expiring.len(),
        1,
        "one rule expires every object: {rules:?}"
    );
    // The retention chain, from the translated queues (docs/design.md §12): a message may wait
    // the queue's retention, then be copied to the dead-letter queue, whose clock starts at
    // the copy, then be redriven within the margin. The objects, the ledger's default and
    // every default source, and the functions' own view of it, must all outlast it.
    let retention = |q: &str| {
        t.properties(q)["MessageRetentionPeriod"]
            .as_u64()
            .unwrap_or_else(|| panic!("{q}'s retention"))
    };
    let (queue, dlq) = (retention("WebhookQueue"), retention("DeadLetterQueue"));
    let chain = inbox::config::retention_chain_seconds(queue, Some(dlq));
    assert_eq!(chain, 11 * 86_400, "4 + 6 + 1 days");
    let days = u64::try_from(number_parameter("PayloadRetentionDays")).expect("days");
    let min_days = t.parameter("PayloadRetentionDays").expect("parameter")["MinValue"]
        .as_u64()
        .expect("a MinValue");
    assert!(
        min_days * 86_400 >= chain && days * 86_400 >= chain,
        "PayloadRetentionDays {days} (MinValue {min_days}) must outlast the chain ({chain} s)"
    );
    assert!(inbox::config::DEFAULT_RETENTION_HOURS * 3600 >= chain);
    let sources = t.parameter("WebhookSources").expect("WebhookSources")["Default"]
        .as_str()
        .expect("a default");
    inbox::config::SourceSpecs::parse(sources)
        .expect("the default sources parse")
        .check_retention(chain)
        .expect("every default source outlasts the chain");
    for function in ["ReceiverFunction", "ConsumerFunction"] {
        let env = &t.properties(function)["Environment"]["Variables"];
        assert_eq!(
            env["QUEUE_RETENTION_SECONDS"],
            queue.to_string(),
            "{function}"
        );
        assert_eq!(env["DLQ_RETENTION_SECONDS"], dlq.to_string(), "{function}");
        // A string, as every Lambda variable is (a bare Ref of a Number is not one).
        assert_eq!(
            env["PAYLOAD_RETENTION_DAYS"],
            serde_json::json!({"Fn::Sub": "${PayloadRetentionDays}"}),
            "{function}"
        );
    }

    // TLS only: a Deny of everything on the bucket and its objects without SecureTransport.
    let policies = t.resources_of_type("AWS::S3::BucketPolicy");
    assert_eq!(policies.len(), 1);
    let policy = &policies[0].1["Properties"];
    assert_eq!(policy["Bucket"], reference("PayloadBucket"));
    let deny = policy["PolicyDocument"]["Statement"]
        .as_array()
        .expect("statements")
        .iter()
        .find(|s| s["Effect"] == "Deny")
        .expect("a Deny statement");
    assert_eq!(deny["Principal"], "*");
    assert_eq!(deny["Action"], "s3:*");
    assert_eq!(
        deny["Condition"]["Bool"]["aws:SecureTransport"],
        json!("false")
    );
    assert_eq!(
        deny["Resource"],
        json!([get_att("PayloadBucket", "Arn"), {"Fn::Sub": "${PayloadBucket.Arn}/*"}])
    );
}

#[test]
fn the_receiver_puts_the_consumer_gets_and_operators_list_and_get_payloads() {
    let t = translated();
    // The receiver's role is SAM's (ReceiverFunctionRole), from the function's Policies.
    let receiver_role = t.resource("ReceiverFunctionRole").expect("receiver role");
    // Its inline policy: the S3 statements among the others (the webhook secrets, the ledger).
    let s3: Vec<_> = receiver_role["Properties"]["Policies"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| document_statements(&p["PolicyDocument"]))
        .filter(|(_, a, _)| a.iter().any(|a| a.starts_with("s3:")))
        .map(|(_, a, r)| (a, r))
        .collect();
    assert_eq!(
        s3,
        vec![(
            vec!["s3:PutObject".to_owned()],
            json!({"Fn::Sub": "${PayloadBucket.Arn}/payloads/*"})
        )],
        "the receiver only writes, under payloads/: the archive is off the sender's path"
    );
    let env = &t.properties("ReceiverFunction")["Environment"]["Variables"];
    assert_eq!(env["PAYLOAD_BUCKET"], reference("PayloadBucket"));
    assert!(
        env.get("ARCHIVE_BODIES").is_none(),
        "the receiver archives nothing"
    );
    let consumer_env = &t.properties("ConsumerFunction")["Environment"]["Variables"];
    assert_eq!(consumer_env["ARCHIVE_BODIES"], reference("ArchiveBodies"));
    // The consumer's stream is the template's ArchiveStream, by name.
    let stream = t.properties("ArchiveStream");
    assert_eq!(consumer_env["ARCHIVE_STREAM"], stream["DeliveryStreamName"]);
    assert_eq!(
        stream["DeliveryStreamName"],
        json!({"Fn::Sub": "${AWS::StackName}-archive"})
    );
    let s3 = &stream["ExtendedS3DestinationConfiguration"];
    assert_eq!(s3["BucketARN"], get_att("PayloadBucket", "Arn"));
    // The layout the readers search: inbox::archive::archive_hour_prefix.
    assert_eq!(
        s3["Prefix"],
        "archive/!{timestamp:yyyy}/!{timestamp:MM}/!{timestamp:dd}/!{timestamp:HH}/"
    );
    assert_eq!(
        inbox::archive::archive_hour_prefix(1_796_306_399_999),
        "archive/2026/12/03/13/"
    );
    // At most the 15 minutes archive_hours allows for between a record and its object's hour.
    assert!(s3["BufferingHints"]["IntervalInSeconds"].as_i64() <= Some(900));
    assert_eq!(
        t.parameter("ArchiveBodies").expect("ArchiveBodies")["Default"],
        "true"
    );
    assert_eq!(
        t.properties("ConsumerFunction")["Environment"]["Variables"]["PAYLOAD_BUCKET"],
        reference("PayloadBucket")
    );

    let operator = t.properties("OperatorReplayPolicy");
    let statements = document_statements(&operator["PolicyDocument"]);
    let s3: Vec<_> = statements
        .iter()
        .filter(|(_, a, _)| a.iter().any(|a| a.starts_with("s3:")))
        .cloned()
        .collect();
    assert_eq!(
        s3,
        vec![
            (
                "Allow".to_owned(),
                vec!["s3:ListBucket".to_owned()],
                get_att("PayloadBucket", "Arn")
            ),
            (
                "Allow".to_owned(),
                vec!["s3:GetObject".to_owned()],
                json!([
                    {"Fn::Sub": "${PayloadBucket.Arn}/archive/*"},
                    {"Fn::Sub": "${PayloadBucket.Arn}/payloads/*"}
                ])
            ),
        ],
        "operators list and read the archive and the bodies it points to, never write"
    );
    let list = operator["PolicyDocument"]["Statement"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["Action"] == "s3:ListBucket")
        .expect("the listing statement");
    assert_eq!(
        list["Condition"],
        json!({"StringLike": {"s3:prefix": "archive/*"}}),
        "only the archive is listed"
    );
    // The receiver's ledger calls: claim, release, a duplicate's mark, the fallback read.
    let dynamo: Vec<_> = receiver_role["Properties"]["Policies"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| document_statements(&p["PolicyDocument"]))
        .filter(|(_, a, _)| a.iter().any(|a| a.starts_with("dynamodb:")))
        .flat_map(|(_, a, _)| a)
        .collect();
    assert_eq!(
        dynamo,
        [
            "dynamodb:PutItem",
            "dynamodb:DeleteItem",
            "dynamodb:GetItem",
            "dynamodb:UpdateItem"
        ],
        "claim, release, the fallback read, and the mark of a claim resent"
    );
    for (_, actions, resource) in &statements {
        if !actions.iter().any(|a| a.starts_with("s3:")) {
            assert!(
                !resource.to_string().contains('*'),
                "{actions:?} {resource}"
            );
        }
    }
}
