//! No side door: what the inbox trusts is written only by the roles that write it.
//! The dead-letter queue takes `SendMessage` from the consumer's role alone (what lands there
//! is moved to the webhook queue by `inbox-ops redrive`), and the payload bucket takes
//! `PutObject` under `archive/` only from Firehose's role and the consumer's, under
//! `payloads/` only from the receiver's and the consumer's.
//!
//! Checked by evaluating the translated template's policies for a request, as IAM does within
//! one account: an explicit Deny in the resource policy or the principal's own policies wins,
//! else an Allow in either allows. The stranger is a role of the account allowed everything
//! by its own policy (an administrator, a compromised CI role): only the resource policy
//! stands in its way.

use super::*;

const ACCOUNT: &str = "123456789012";
const REGION: &str = "eu-west-1";
const STRANGER: &str = "arn:aws:iam::123456789012:role/Stranger";

/// The ARN a resource of the template gets, from its logical id (a stand-in name: the
/// policies compare ARNs, so any one name per resource does).
fn arn_of(logical_id: &str) -> String {
    let t = translated();
    let resource = t
        .resource(logical_id)
        .unwrap_or_else(|| panic!("{logical_id} is in the template"));
    match resource["Type"].as_str() {
        Some("AWS::IAM::Role") => format!("arn:aws:iam::{ACCOUNT}:role/{logical_id}"),
        Some("AWS::S3::Bucket") => format!("arn:aws:s3:::{}", logical_id.to_lowercase()),
        Some("AWS::SQS::Queue") => format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{logical_id}"),
        Some("AWS::DynamoDB::Table") => {
            format!("arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{logical_id}")
        }
        // Of no statement these tests evaluate: an ARN nothing above matches.
        _ => format!("arn:aws:other:{REGION}:{ACCOUNT}:{logical_id}"),
    }
}

/// A policy value as the strings it stands for: a string, a `Fn::GetAtt` of an ARN, a
/// `Fn::Sub` of ARNs and pseudo parameters, a `Ref` (a name no ARN matches), an `Fn::If`
/// (both branches: every optional permission granted), or a list of these. Anything else
/// fails the test rather than being read as nothing.
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(m) if m.len() == 1 => {
            let (function, args) = m.iter().next().expect("one entry");
            match function.as_str() {
                "Fn::GetAtt" => {
                    assert_eq!(args[1], "Arn", "{v}");
                    vec![arn_of(args[0].as_str().expect("a logical id"))]
                }
                "Fn::Sub" => vec![substitute(args.as_str().expect("Fn::Sub of a string"))],
                "Ref" => vec![format!("ref:{}", args.as_str().expect("Ref of a name"))],
                "Fn::If" => strings(&args[1])
                    .into_iter()
                    .chain(strings(&args[2]))
                    .collect(),
                _ => panic!("not evaluated here: {v}"),
            }
        }
        other => panic!("not a policy value: {other}"),
    }
}

/// `Fn::Sub`'s `${X.Arn}` and pseudo parameters.
fn substitute(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("a closed ${") + start;
        let name = &rest[start + 2..end];
        out.push_str(&match name {
            "AWS::Partition" => "aws".to_owned(),
            "AWS::Region" => REGION.to_owned(),
            "AWS::AccountId" => ACCOUNT.to_owned(),
            "AWS::StackName" => "stack".to_owned(),
            _ => match name.strip_suffix(".Arn") {
                Some(logical_id) => arn_of(logical_id),
                // A resource's own Ref (a name or id): its logical id stands in.
                None if translated().resource(name).is_some() => name.to_owned(),
                None => panic!("not substituted here: ${{{name}}}"),
            },
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// IAM's wildcard match: `*` any run, `?` one character.
fn matches_pattern(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| go(rest, &t[i..])),
            Some(('?', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

/// A request within the account, over TLS unless said.
#[derive(Clone)]
struct Request {
    principal: String,
    action: &'static str,
    resource: String,
    secure_transport: bool,
    /// `s3:prefix` of a listing.
    s3_prefix: Option<String>,
}

fn request(principal: &str, action: &'static str, resource: &str) -> Request {
    Request {
        principal: principal.to_owned(),
        action,
        resource: resource.to_owned(),
        secure_transport: true,
        s3_prefix: None,
    }
}

/// Whether one statement applies to the request (its effect aside).
fn applies(statement: &Value, req: &Request, resource_policy: bool) -> bool {
    if resource_policy {
        assert_eq!(statement["Principal"], "*", "{statement}");
    }
    let action_matches = strings(&statement["Action"])
        .iter()
        .any(|a| matches_pattern(&a.to_lowercase(), &req.action.to_lowercase()));
    action_matches
        && strings(&statement["Resource"])
            .iter()
            .any(|r| matches_pattern(r, &req.resource))
        && conditions_hold(&statement["Condition"], req)
}

fn conditions_hold(conditions: &Value, req: &Request) -> bool {
    let Some(conditions) = conditions.as_object() else {
        assert!(conditions.is_null(), "{conditions}");
        return true;
    };
    conditions.iter().all(|(operator, keys)| {
        keys.as_object()
            .expect("condition keys")
            .iter()
            .all(|(key, values)| {
                let actual = match key.as_str() {
                    "aws:PrincipalArn" => req.principal.clone(),
                    "aws:SecureTransport" => req.secure_transport.to_string(),
                    "s3:prefix" => req.s3_prefix.clone().unwrap_or_default(),
                    other => panic!("condition key not evaluated here: {other}"),
                };
                let values = strings(values);
                let equal = values.contains(&actual);
                let like = values.iter().any(|v| matches_pattern(v, &actual));
                match operator.as_str() {
                    "Bool" | "StringEquals" | "ArnEquals" => equal,
                    "StringNotEquals" | "ArnNotEquals" => !equal,
                    "StringLike" | "ArnLike" => like,
                    "StringNotLike" | "ArnNotLike" => !like,
                    other => panic!("condition operator not evaluated here: {other}"),
                }
            })
    })
}

/// The statements of the one policy of `policy_type` whose `field` holds `target`.
fn resource_policy(policy_type: &str, field: &str, target: Value) -> Vec<Value> {
    let t = translated();
    let policies: Vec<_> = t
        .resources_of_type(policy_type)
        .into_iter()
        .filter(|(_, p)| p["Properties"][field] == target)
        .collect();
    assert_eq!(policies.len(), 1, "one {policy_type} over {target}");
    policies[0].1["Properties"]["PolicyDocument"]["Statement"]
        .as_array()
        .expect("statements")
        .clone()
}

/// The principal's own statements: its inline policies (a statement under `Fn::If` as its
/// condition's true branch: every optional permission granted) and its managed policies of
/// the stack. The stranger is allowed everything.
fn identity_statements(principal: &str) -> Vec<Value> {
    if principal == STRANGER {
        return vec![json!({"Effect": "Allow", "Action": "*", "Resource": "*"})];
    }
    let t = translated();
    let logical_id = principal.rsplit('/').next().expect("a role name");
    let role = &t.properties(logical_id);
    let mut documents: Vec<Value> = role["Policies"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["PolicyDocument"].clone())
        .collect();
    for managed in role["ManagedPolicyArns"].as_array().into_iter().flatten() {
        if let Some(name) = managed["Ref"].as_str() {
            documents.push(t.properties(name)["PolicyDocument"].clone());
        }
    }
    documents
        .iter()
        .flat_map(|d| d["Statement"].as_array().cloned().unwrap_or_default())
        .map(|s| {
            s.get("Fn::If")
                .and_then(|branches| branches.get(1))
                .cloned()
                .unwrap_or(s)
        })
        .collect()
}

/// IAM's answer within one account: no explicit Deny anywhere, and an Allow somewhere.
fn allowed(resource_statements: &[Value], req: &Request) -> bool {
    let identity = identity_statements(&req.principal);
    let applying = resource_statements
        .iter()
        .map(|s| (s, true))
        .chain(identity.iter().map(|s| (s, false)))
        .filter(|(s, resource_policy)| applies(s, req, *resource_policy))
        .map(|(s, _)| s["Effect"].as_str().expect("an effect").to_owned())
        .collect::<Vec<_>>();
    !applying.iter().any(|e| e == "Deny") && applying.iter().any(|e| e == "Allow")
}

fn queue_statements(queue: &str) -> Vec<Value> {
    resource_policy("AWS::SQS::QueuePolicy", "Queues", json!([reference(queue)]))
}

#[test]
fn the_evaluator_reads_conditions_and_wildcards_as_iam_does() {
    assert!(matches_pattern(
        "arn:aws:s3:::b/archive/*",
        "arn:aws:s3:::b/archive/2026/x"
    ));
    assert!(!matches_pattern(
        "arn:aws:s3:::b/archive/*",
        "arn:aws:s3:::b/archive-errors/x"
    ));
    assert!(matches_pattern("sqs:*", "sqs:sendmessage"));
    let deny = json!({"Effect": "Deny", "Principal": "*", "Action": "sqs:SendMessage",
        "Resource": "arn:q", "Condition": {"ArnNotEquals": {"aws:PrincipalArn": ["arn:a"]}}});
    assert!(applies(
        &deny,
        &request("arn:b", "sqs:SendMessage", "arn:q"),
        true
    ));
    assert!(!applies(
        &deny,
        &request("arn:a", "sqs:SendMessage", "arn:q"),
        true
    ));
    assert!(!applies(
        &deny,
        &request("arn:b", "sqs:ReceiveMessage", "arn:q"),
        true
    ));
    // The stranger is allowed anything where no resource policy says otherwise.
    assert!(allowed(&[], &request(STRANGER, "sqs:SendMessage", "arn:q")));
}

#[test]
fn only_the_consumer_may_send_to_the_dead_letter_queue() {
    let statements = queue_statements("DeadLetterQueue");
    let dlq = arn_of("DeadLetterQueue");
    let consumer = arn_of("ConsumerRole");
    assert!(
        allowed(&statements, &request(&consumer, "sqs:SendMessage", &dlq)),
        "the consumer dead-letters"
    );
    for principal in [
        STRANGER.to_owned(),
        arn_of("ReceiverFunctionRole"),
        arn_of("OperatorRole"),
        arn_of("ArchiveStreamRole"),
    ] {
        assert!(
            !allowed(&statements, &request(&principal, "sqs:SendMessage", &dlq)),
            "{principal} must not put a forged envelope where redrive takes it from"
        );
    }
    // Not over TLS, not even the consumer.
    let mut plain = request(&consumer, "sqs:SendMessage", &dlq);
    plain.secure_transport = false;
    assert!(!allowed(&statements, &plain));
    // The operator still reads and moves dead letters (why, redrive).
    let operator = arn_of("OperatorRole");
    for action in [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:StartMessageMoveTask",
    ] {
        assert!(
            allowed(&statements, &request(&operator, action, &dlq)),
            "{action}"
        );
    }
    // The role the policy names is the one the consumer runs as.
    assert_eq!(
        translated().properties("ConsumerFunction")["Role"],
        get_att("ConsumerRole", "Arn")
    );
}

#[test]
fn only_the_receiver_and_the_operator_role_may_send_to_the_webhook_queue() {
    let statements = queue_statements("WebhookQueue");
    let queue = arn_of("WebhookQueue");
    for principal in ["ReceiverFunctionRole", "OperatorRole"] {
        let principal = arn_of(principal);
        assert!(
            allowed(&statements, &request(&principal, "sqs:SendMessage", &queue)),
            "{principal}"
        );
    }
    for principal in [
        STRANGER.to_owned(),
        arn_of("ConsumerRole"),
        arn_of("ArchiveStreamRole"),
    ] {
        assert!(
            !allowed(&statements, &request(&principal, "sqs:SendMessage", &queue)),
            "{principal}"
        );
    }
}

#[test]
fn only_their_writers_may_put_objects_under_archive_and_payloads() {
    let statements = resource_policy(
        "AWS::S3::BucketPolicy",
        "Bucket",
        reference("PayloadBucket"),
    );
    let bucket = arn_of("PayloadBucket");
    let archive = format!("{bucket}/archive/2026/12/06/21/webhook-inbox-archive-1-2026");
    let large = format!("{bucket}/archive/2026/12/06/21/large-{}", "a".repeat(64));
    let payload = format!(
        "{bucket}/payloads/github/{}/{}",
        "b".repeat(64),
        "c".repeat(64)
    );
    let writers: [(&str, &[&String]); 3] = [
        ("ArchiveStreamRole", &[&archive]),
        ("ConsumerRole", &[&large, &payload]),
        ("ReceiverFunctionRole", &[&payload]),
    ];
    for (role, objects) in writers {
        for object in objects {
            assert!(
                allowed(&statements, &request(&arn_of(role), "s3:PutObject", object)),
                "{role} writes {object}"
            );
        }
    }
    for object in [&archive, &large, &payload] {
        assert!(
            !allowed(&statements, &request(STRANGER, "s3:PutObject", object)),
            "a stranger must not drop {object} where replay or the consumer reads it"
        );
        // Nor the operators: they read the archive, never write it.
        assert!(!allowed(
            &statements,
            &request(&arn_of("OperatorRole"), "s3:PutObject", object)
        ));
    }
    // Each writer only where it writes: the receiver not in the archive, Firehose not among
    // the payloads.
    assert!(!allowed(
        &statements,
        &request(&arn_of("ReceiverFunctionRole"), "s3:PutObject", &archive)
    ));
    assert!(!allowed(
        &statements,
        &request(&arn_of("ArchiveStreamRole"), "s3:PutObject", &payload)
    ));
    // Reading is not what the statements deny: operators still read the archive.
    assert!(allowed(
        &statements,
        &request(&arn_of("OperatorRole"), "s3:GetObject", &archive)
    ));
    // The roles the policy names are the ones the writers run as.
    let t = translated();
    assert_eq!(
        t.properties("ArchiveStream")["ExtendedS3DestinationConfiguration"]["RoleARN"],
        get_att("ArchiveStreamRole", "Arn")
    );
    assert_eq!(
        t.properties("ReceiverFunction")["Role"],
        get_att("ReceiverFunctionRole", "Arn")
    );
}

/// What each operator command calls (crates/ops/src: why, lookup, replay, redrive, pause and
/// resume, `pause --destination`, status, the console), as `(command, action, resource)`.
fn operator_calls() -> Vec<(&'static str, &'static str, String)> {
    let (dlq, queue, table, bucket) = (
        arn_of("DeadLetterQueue"),
        arn_of("WebhookQueue"),
        arn_of("LedgerTable"),
        arn_of("PayloadBucket"),
    );
    let mapping =
        format!("arn:aws:lambda:{REGION}:{ACCOUNT}:event-source-mapping:ConsumerFunctionQueue");
    let stack = "ref:AWS::StackId".to_owned();
    vec![
        ("why", "cloudformation:DescribeStacks", stack.clone()),
        ("why", "sqs:ReceiveMessage", dlq.clone()),
        ("why", "sqs:ChangeMessageVisibility", dlq.clone()),
        ("why", "sqs:GetQueueAttributes", dlq.clone()),
        ("why", "dynamodb:GetItem", table.clone()),
        ("lookup", "dynamodb:GetItem", table.clone()),
        (
            "lookup --body",
            "s3:GetObject",
            format!("{bucket}/archive/2026/12/07/00/x"),
        ),
        (
            "lookup --body",
            "s3:GetObject",
            format!("{bucket}/payloads/github/k/h"),
        ),
        ("replay", "s3:ListBucket", bucket.clone()),
        (
            "replay",
            "s3:GetObject",
            format!("{bucket}/archive/2026/12/07/00/x"),
        ),
        ("replay", "dynamodb:GetItem", table.clone()),
        ("replay", "dynamodb:UpdateItem", table.clone()),
        ("replay", "sqs:SendMessage", queue.clone()),
        ("redrive", "sqs:GetQueueAttributes", dlq.clone()),
        ("redrive", "sqs:StartMessageMoveTask", dlq.clone()),
        ("redrive", "sqs:ListMessageMoveTasks", dlq.clone()),
        ("redrive", "sqs:ReceiveMessage", dlq.clone()),
        ("redrive", "sqs:DeleteMessage", dlq.clone()),
        ("redrive", "sqs:SendMessage", queue.clone()),
        ("pause", "cloudformation:ListStackResources", stack.clone()),
        ("pause", "lambda:GetEventSourceMapping", mapping.clone()),
        ("pause", "lambda:UpdateEventSourceMapping", mapping.clone()),
        ("pause --destination", "dynamodb:UpdateItem", table.clone()),
        ("pause --destination", "dynamodb:GetItem", table.clone()),
        ("status", "sqs:GetQueueAttributes", queue.clone()),
        ("status", "lambda:GetEventSourceMapping", mapping),
        (
            "console",
            "dynamodb:Query",
            format!("{table}/index/by-source-received"),
        ),
        ("console", "dynamodb:BatchGetItem", table),
        ("console", "sqs:GetQueueUrl", dlq),
    ]
}

/// The resource policy in force for `resource`: a queue's or the payload bucket's.
fn resource_statements_for(resource: &str) -> Vec<Value> {
    if resource == arn_of("DeadLetterQueue") {
        queue_statements("DeadLetterQueue")
    } else if resource == arn_of("WebhookQueue") {
        queue_statements("WebhookQueue")
    } else if resource.starts_with(&arn_of("PayloadBucket")) {
        resource_policy(
            "AWS::S3::BucketPolicy",
            "Bucket",
            reference("PayloadBucket"),
        )
    } else {
        Vec::new()
    }
}

/// `OperatorRole` may do what the commands it serves do (`pause --destination` as
/// the role was once denied): each call of each command, against the role's own policies and the
/// resource's policy, as IAM evaluates them. A listing of the archive only under `archive/`.
#[test]
fn operator_role_may_do_what_each_operator_command_calls() {
    let operator = arn_of("OperatorRole");
    for (command, action, resource) in operator_calls() {
        let mut req = request(&operator, action, &resource);
        if action == "s3:ListBucket" {
            req.s3_prefix = Some("archive/2026/12/07/".into());
        }
        assert!(
            allowed(&resource_statements_for(&resource), &req),
            "inbox-ops {command}: {action} on {resource} denied to OperatorRole"
        );
    }
    // Not beyond: the archive's listing elsewhere, the dead-letter queue's SendMessage.
    let mut elsewhere = request(&operator, "s3:ListBucket", &arn_of("PayloadBucket"));
    elsewhere.s3_prefix = Some("payloads/".into());
    assert!(!allowed(
        &resource_statements_for(&arn_of("PayloadBucket")),
        &elsewhere
    ));
    let dlq = arn_of("DeadLetterQueue");
    assert!(!allowed(
        &resource_statements_for(&dlq),
        &request(&operator, "sqs:SendMessage", &dlq)
    ));
}
