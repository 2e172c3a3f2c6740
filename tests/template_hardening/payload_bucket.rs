//! The payload bucket (issue 14): encrypted, private, TLS only, expiring with the ledger;
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
    // Every object expires after the ledger's retention (7 days by default, beyond the
    // dead-letter queue's 6, so that a redriven dead letter still finds its body).
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
    let days = number_parameter("PayloadRetentionDays");
    let dlq_days = t.properties("DeadLetterQueue")["MessageRetentionPeriod"]
        .as_i64()
        .expect("DLQ retention")
        / 86_400;
    assert!(
        days > dlq_days,
        "{days} days must outlast the DLQ's {dlq_days}"
    );
    assert!(
        days * 24 >= 168,
        "the ledger's default retention is 168 hours"
    );

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
    // Its inline policy holds an `Fn::If` (the webhook secrets), which is no statement itself.
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
            json!([
                {"Fn::Sub": "${PayloadBucket.Arn}/payloads/*"},
                {"Fn::Sub": "${PayloadBucket.Arn}/archive/*"}
            ])
        )],
        "the receiver only writes, under payloads/ and archive/"
    );
    let env = &t.properties("ReceiverFunction")["Environment"]["Variables"];
    assert_eq!(env["PAYLOAD_BUCKET"], reference("PayloadBucket"));
    assert_eq!(env["ARCHIVE_BODIES"], reference("ArchiveBodies"));
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
    // The receiver's ledger calls: claim and release, and the adapter's fallback read.
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
            "dynamodb:GetItem"
        ],
        "no UpdateItem: nothing on the receiver's path calls it"
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
