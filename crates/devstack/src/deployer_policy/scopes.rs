//! Where each action may act: the table of scopes (service -> the stack's resource ARN
//! patterns), the few actions that need `Resource: *` and why, and the deploy's own steps.
//!
//! Every action the generator places is either named by a scope (an exhaustive list: a named
//! action is in those scopes only) or falls to the one scope that takes its service's other
//! actions. An action of a service no scope takes fails the generator ([`PolicyError::NoScope`]):
//! nothing falls back to `*`. Names are the stack's (`STACK-...`, what CloudFormation generates
//! for a resource the template does not name), so that permissions the schemas list for a
//! feature this template does not use (a Kinesis stream, a KMS key, an S3 table) act on nothing
//! that exists. `REGION` and `ACCOUNT` are placeholders, the partition is `aws`.

use super::{Part, PolicyError};

/// The stack SAM CLI creates once per region for its artifact bucket (`resolve_s3`).
pub(super) const SAM_MANAGED_STACK: &str = "aws-sam-cli-managed-default";

/// The actions that need `Resource: *` (and the one scoped by a condition instead), each with
/// the reason: the Service Authorization Reference gives them no resource type.
pub(super) const UNSCOPED: &[(&str, &str)] = &[
    ("cloudformation:ValidateTemplate", "no resource type"),
    (
        "cloudformation:GetTemplateSummary",
        "sam deploy calls it on a template, not a stack",
    ),
    (
        "ec2:DescribeNetworkInterfaces",
        "EC2 Describe calls have no resource type (Lambda's VPC checks)",
    ),
    (
        "ec2:DescribeSecurityGroups",
        "EC2 Describe calls have no resource type",
    ),
    (
        "ec2:DescribeSubnets",
        "EC2 Describe calls have no resource type",
    ),
    (
        "ec2:DescribeVpcs",
        "EC2 Describe calls have no resource type",
    ),
    ("kms:ListAliases", "no resource type"),
    (
        "logs:CreateLogDelivery",
        "log deliveries have no resource type",
    ),
    (
        "logs:GetLogDelivery",
        "log deliveries have no resource type",
    ),
    (
        "logs:UpdateLogDelivery",
        "log deliveries have no resource type",
    ),
    (
        "logs:DeleteLogDelivery",
        "log deliveries have no resource type",
    ),
    (
        "logs:ListLogDeliveries",
        "log deliveries have no resource type",
    ),
    (
        "logs:PutResourcePolicy",
        "the account's log resource policies have no resource type",
    ),
    (
        "logs:DescribeResourcePolicies",
        "the account's log resource policies have no resource type",
    ),
    (
        "logs:DeleteResourcePolicy",
        "the account's log resource policies have no resource type",
    ),
    ("logs:PutIndexPolicy", "no resource type"),
    ("logs:DescribeIndexPolicies", "no resource type"),
    ("logs:DeleteIndexPolicy", "no resource type"),
    (
        "logs:DescribeLogGroups",
        "a list call with no resource type",
    ),
    (
        "s3files:ListMountTargets",
        "lists the account's mount targets, no resource type",
    ),
    (
        "secretsmanager:GetRandomPassword",
        "no resource type (GenerateSecretString)",
    ),
    ("sns:Unsubscribe", "no resource type"),
    ("secretsmanager:ListSecrets", "no resource type"),
];

/// What the deploy itself calls beyond the resources' handlers (docs/deploying.md), each with
/// the step that needs it. Placed by the same table as the handlers' permissions.
pub(super) const DEPLOY_STEPS: &[(&str, &str)] = &[
    (
        "cloudformation:CreateChangeSet",
        "sam deploy (both stacks, and the SAM transform)",
    ),
    (
        "cloudformation:DescribeChangeSet",
        "sam deploy shows the change set",
    ),
    ("cloudformation:ExecuteChangeSet", "sam deploy"),
    (
        "cloudformation:DeleteChangeSet",
        "sam deploy drops an empty change set",
    ),
    (
        "cloudformation:DescribeStacks",
        "sam deploy, the stack outputs (out WebhookUrl)",
    ),
    (
        "cloudformation:DescribeStackEvents",
        "sam deploy prints them",
    ),
    (
        "cloudformation:DescribeStackResources",
        "New code only: describe-stack-resources",
    ),
    (
        "cloudformation:GetTemplate",
        "sam delete finds the artifacts",
    ),
    ("cloudformation:DeleteStack", "sam delete"),
    (
        "cloudformation:TagResource",
        "SAM CLI tags its managed stack on create",
    ),
    ("cloudformation:ValidateTemplate", "sam validate"),
    ("cloudformation:GetTemplateSummary", "sam deploy"),
    (
        "s3:PutObject",
        "sam deploy uploads the code and the template",
    ),
    (
        "s3:GetObject",
        "sam deploy checks an upload, CloudFormation reads the template",
    ),
    ("s3:ListBucket", "sam deploy checks an upload"),
    ("s3:GetBucketLocation", "sam deploy"),
    ("s3:DeleteObject", "sam delete removes the artifacts"),
    (
        "iam:PassRole",
        "CloudFormation hands the stack's roles to Lambda",
    ),
    ("lambda:GetFunction", "New code only: cargo lambda deploy"),
    (
        "lambda:GetFunctionConfiguration",
        "New code only: cargo lambda deploy --merge-env",
    ),
    (
        "lambda:UpdateFunctionCode",
        "New code only: cargo lambda deploy",
    ),
    (
        "lambda:UpdateFunctionConfiguration",
        "New code only: cargo lambda deploy --merge-env",
    ),
    // API Gateway checks the caller for these when a stage gets AccessLogSettings (its HTTP
    // API logging docs); the Stage schema does not list them.
    ("logs:CreateLogDelivery", "the HTTP API stage's access log"),
    ("logs:GetLogDelivery", "the HTTP API stage's access log"),
    ("logs:UpdateLogDelivery", "the HTTP API stage's access log"),
    ("logs:DeleteLogDelivery", "the HTTP API stage's access log"),
    ("logs:ListLogDeliveries", "the HTTP API stage's access log"),
    ("logs:PutResourcePolicy", "the HTTP API stage's access log"),
    (
        "logs:DescribeResourcePolicies",
        "the HTTP API stage's access log",
    ),
    ("logs:DescribeLogGroups", "the HTTP API stage's access log"),
    ("secretsmanager:CreateSecret", "Secrets: create-secret"),
    ("secretsmanager:PutSecretValue", "Secrets: a new value"),
    ("secretsmanager:DescribeSecret", "Secrets"),
    (
        "secretsmanager:GetSecretValue",
        "Smoke test: the GitHub secret, the forward signing key",
    ),
    ("secretsmanager:DeleteSecret", "Teardown: delete-secret"),
    (
        "cloudformation:ListStackResources",
        "Teardown: make destroy finds the retained table and bucket",
    ),
    (
        "s3:ListBucketVersions",
        "Teardown: make destroy lists the payload bucket's object versions",
    ),
    (
        "s3:DeleteObjectVersion",
        "Teardown: make destroy empties the payload bucket",
    ),
    (
        "secretsmanager:ListSecrets",
        "Teardown: make destroy lists the senders' secrets",
    ),
];

/// One statement of the policy: its resources, and which actions it takes.
#[derive(Debug, Clone)]
pub(super) struct Scope {
    /// The statement's Sid.
    pub sid: &'static str,
    /// The policy document it is in.
    pub part: Part,
    /// Services whose actions come here unless a scope names them.
    pub services: Vec<&'static str>,
    /// Actions named for this scope (IAM compares them case-insensitively).
    pub actions: Vec<&'static str>,
    /// The resource ARN patterns.
    pub resources: Vec<String>,
    /// A condition on the statement: (operator, key, value).
    pub condition: Option<(&'static str, &'static str, String)>,
}

/// The names the scopes are built from.
#[derive(Debug, Clone)]
pub(super) struct Names {
    /// The stack name.
    pub stack: String,
    /// The template's bucket names (or the pattern of a generated one).
    pub buckets: Vec<String>,
    /// The template's log group names (or the pattern of a generated one).
    pub log_groups: Vec<String>,
}

/// A scope with no condition.
fn scope(
    sid: &'static str,
    part: Part,
    services: &[&'static str],
    actions: &[&'static str],
    resources: Vec<String>,
) -> Scope {
    Scope {
        sid,
        part,
        services: services.to_vec(),
        actions: actions.to_vec(),
        resources,
        condition: None,
    }
}

/// `arn:aws:SERVICE:REGION:ACCOUNT:REST`.
fn arn(service: &str, rest: &str) -> String {
    format!("arn:aws:{service}:REGION:ACCOUNT:{rest}")
}

/// The table, in the order of the statements. Service -> resource ARN patterns:
///
/// | service | resources |
/// | --- | --- |
/// | cloudformation | the stack and SAM's managed stack; `CreateChangeSet` also on the SAM transform |
/// | iam | roles, managed policies (and groups, users a policy could attach to) `STACK-*`; service-linked roles of DynamoDB (its table handler may create them) |
/// | lambda | functions, layers, capacity providers `STACK-*`; event source mappings and code signing configs (generated ids): the mappings' Get/Update/Delete and Create only with `lambda:FunctionArn` of a `STACK-*` function |
/// | apigateway | HTTP APIs (`/apis`, ids are generated) and their tags |
/// | logs | `/aws/lambda/STACK-*` and the template's log group names |
/// | secretsmanager | `STACK/*` and the senders' `webhook-inbox/*` |
/// | elasticfilesystem | file systems and access points (generated ids; Lambda only describes their mount targets) |
/// | s3 | the template's buckets (`stack-logicalid-*`, lower case) and SAM's artifact bucket, with their objects |
/// | s3tables, dynamodb, kinesis, sqs, sns, firehose | `STACK-*` |
/// | cloudwatch | alarms and dashboards `STACK-*` |
/// | kms | keys with an alias `alias/STACK-*` (`kms:ResourceAliases`): key ARNs carry no name |
pub(super) fn table(names: &Names) -> Vec<Scope> {
    let s = names.stack.as_str();
    let function = arn("lambda", &format!("function:{s}-*"));
    let unscoped: Vec<&'static str> = UNSCOPED.iter().map(|(action, _)| *action).collect();
    let mut scopes = vec![
        scope(
            "CloudFormationStacks",
            Part::Deploy,
            &["cloudformation"],
            &["cloudformation:CreateChangeSet"],
            vec![
                arn("cloudformation", &format!("stack/{s}/*")),
                arn("cloudformation", &format!("stack/{SAM_MANAGED_STACK}/*")),
            ],
        ),
        scope(
            "SamTransform",
            Part::Deploy,
            &[],
            &["cloudformation:CreateChangeSet"],
            vec!["arn:aws:cloudformation:REGION:aws:transform/Serverless-2016-10-31".to_owned()],
        ),
        scope(
            "Iam",
            Part::Deploy,
            &["iam"],
            &[],
            ["role", "policy", "group", "user"]
                .iter()
                .map(|kind| format!("arn:aws:iam::ACCOUNT:{kind}/{s}-*"))
                .collect(),
        ),
        scope(
            "IamServiceLinkedRoles",
            Part::Deploy,
            &[],
            &["iam:CreateServiceLinkedRole"],
            vec![
                "arn:aws:iam::ACCOUNT:role/aws-service-role/*.dynamodb.amazonaws.com/*".to_owned(),
            ],
        ),
        scope(
            "Lambda",
            Part::Deploy,
            &["lambda"],
            &[],
            vec![
                function.clone(),
                arn("lambda", &format!("layer:{s}-*")),
                arn("lambda", &format!("capacity-provider:{s}-*")),
                arn("lambda", "event-source-mapping:*"),
                arn("lambda", "code-signing-config:*"),
            ],
        ),
        Scope {
            condition: Some(("ArnLike", "lambda:FunctionArn", function.clone())),
            ..scope(
                "EventSourceMappings",
                Part::Deploy,
                &[],
                &[
                    "lambda:GetEventSourceMapping",
                    "lambda:UpdateEventSourceMapping",
                    "lambda:DeleteEventSourceMapping",
                ],
                vec![arn("lambda", "event-source-mapping:*")],
            )
        },
        Scope {
            condition: Some(("ArnLike", "lambda:FunctionArn", function)),
            ..scope(
                "EventSourceMappingCreate",
                Part::Deploy,
                &[],
                &["lambda:CreateEventSourceMapping"],
                vec!["*".to_owned()],
            )
        },
        scope(
            "ApiGateway",
            Part::Deploy,
            &["apigateway"],
            &[],
            ["/apis", "/apis/*", "/tags/*"]
                .iter()
                .map(|path| format!("arn:aws:apigateway:REGION::{path}"))
                .collect(),
        ),
        scope("Logs", Part::Deploy, &["logs"], &[], log_groups(names)),
        scope(
            "ElasticFileSystem",
            Part::Deploy,
            &["elasticfilesystem"],
            &[],
            vec![
                arn("elasticfilesystem", "file-system/*"),
                arn("elasticfilesystem", "access-point/*"),
            ],
        ),
        scope(
            "Unscoped",
            Part::Deploy,
            &[],
            &unscoped,
            vec!["*".to_owned()],
        ),
    ];
    scopes.extend(storage(names));
    scopes
}

/// The second document's scopes: the stores, queues, topic, secrets, alarms and keys.
fn storage(names: &Names) -> Vec<Scope> {
    let s = names.stack.as_str();
    let sam_bucket = format!("{SAM_MANAGED_STACK}-*");
    let buckets = dedup(
        names
            .buckets
            .iter()
            .chain([&sam_bucket])
            .flat_map(|b| [format!("arn:aws:s3:::{b}"), format!("arn:aws:s3:::{b}/*")])
            .collect(),
    );
    let named = |service: &'static str, sid: &'static str, rest: String| {
        scope(
            sid,
            Part::Storage,
            &[service],
            &[],
            vec![arn(service, &rest)],
        )
    };
    vec![
        scope("S3", Part::Storage, &["s3"], &[], buckets),
        named("s3tables", "S3Tables", format!("bucket/{s}-*")),
        named("dynamodb", "DynamoDb", format!("table/{s}-*")),
        named("kinesis", "Kinesis", format!("stream/{s}-*")),
        named("sqs", "Sqs", format!("{s}-*")),
        named("sns", "Sns", format!("{s}-*")),
        scope(
            "SecretsManager",
            Part::Storage,
            &["secretsmanager"],
            &[],
            dedup(vec![
                arn("secretsmanager", &format!("secret:{s}/*")),
                arn("secretsmanager", "secret:webhook-inbox/*"),
            ]),
        ),
        named("firehose", "Firehose", format!("deliverystream/{s}-*")),
        scope(
            "CloudWatch",
            Part::Storage,
            &["cloudwatch"],
            &[],
            vec![
                arn("cloudwatch", &format!("alarm:{s}-*")),
                format!("arn:aws:cloudwatch::ACCOUNT:dashboard/{s}-*"),
            ],
        ),
        Scope {
            condition: Some((
                "ForAnyValue:StringLike",
                "kms:ResourceAliases",
                format!("alias/{s}-*"),
            )),
            ..scope(
                "Kms",
                Part::Storage,
                &["kms"],
                &[],
                vec![arn("kms", "key/*")],
            )
        },
    ]
}

/// `/aws/lambda/STACK-*`, and each log group of the template that it does not cover, as the
/// group (`log-group:NAME`) and its streams (`log-group:NAME:*`).
fn log_groups(names: &Names) -> Vec<String> {
    let lambda = format!("/aws/lambda/{}-", names.stack);
    let mut out = vec![arn("logs", &format!("log-group:{lambda}*"))];
    for group in &names.log_groups {
        if group.starts_with(&lambda) {
            continue;
        }
        out.push(arn("logs", &format!("log-group:{group}")));
        if !group.ends_with('*') {
            out.push(arn("logs", &format!("log-group:{group}:*")));
        }
    }
    dedup(out)
}

/// `items` without repeats, in their first order.
fn dedup(items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

/// The indices of the scopes `action` goes to: those naming it, else its service's.
pub(super) fn place(action: &str, scopes: &[Scope]) -> Result<Vec<usize>, PolicyError> {
    let named: Vec<usize> = scopes
        .iter()
        .enumerate()
        .filter(|(_, scope)| scope.actions.iter().any(|a| a.eq_ignore_ascii_case(action)))
        .map(|(i, _)| i)
        .collect();
    if !named.is_empty() {
        return Ok(named);
    }
    let service = action
        .split_once(':')
        .map(|(service, _)| service)
        .unwrap_or_default();
    scopes
        .iter()
        .position(|scope| {
            scope
                .services
                .iter()
                .any(|s| s.eq_ignore_ascii_case(service))
        })
        .map(|i| vec![i])
        .ok_or_else(|| PolicyError::NoScope(action.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        Names {
            stack: "webhook-inbox".to_owned(),
            buckets: vec!["webhook-inbox-payloadbucket-*".to_owned()],
            log_groups: vec![
                "/aws/lambda/webhook-inbox-receiver".to_owned(),
                "/aws/vendedlogs/webhook-inbox-api-access".to_owned(),
            ],
        }
    }

    fn sids(action: &str) -> Vec<&'static str> {
        let scopes = table(&names());
        place(action, &scopes)
            .unwrap()
            .into_iter()
            .map(|i| scopes[i].sid)
            .collect()
    }

    #[test]
    fn a_named_action_goes_to_every_scope_naming_it_and_no_other() {
        assert_eq!(
            sids("cloudformation:CreateChangeSet"),
            ["CloudFormationStacks", "SamTransform"]
        );
        assert_eq!(
            sids("CloudFormation:ExecuteChangeSet"),
            ["CloudFormationStacks"]
        );
        assert_eq!(
            sids("lambda:GetEventSourceMapping"),
            ["EventSourceMappings"]
        );
        assert_eq!(
            sids("lambda:createeventsourcemapping"),
            ["EventSourceMappingCreate"]
        );
        assert_eq!(sids("lambda:CreateFunction"), ["Lambda"]);
        assert_eq!(sids("ec2:DescribeVpcs"), ["Unscoped"]);
        assert_eq!(
            sids("iam:CreateServiceLinkedRole"),
            ["IamServiceLinkedRoles"]
        );
    }

    #[test]
    fn an_action_no_scope_takes_is_refused_not_put_on_star() {
        let scopes = table(&names());
        for action in ["ec2:RunInstances", "organizations:ListAccounts", "nocolon"] {
            assert_eq!(
                place(action, &scopes),
                Err(PolicyError::NoScope(action.to_owned())),
                "{action}"
            );
        }
    }

    #[test]
    fn every_star_resource_is_for_unscoped_actions_only() {
        for scope in table(&names()) {
            if scope.resources.iter().any(|r| r == "*") {
                assert!(
                    scope.services.is_empty(),
                    "{}: no service falls to *",
                    scope.sid
                );
                for action in &scope.actions {
                    assert!(
                        UNSCOPED.iter().any(|(a, _)| a == action)
                            || *action == "lambda:CreateEventSourceMapping",
                        "{action}"
                    );
                }
            }
        }
    }

    #[test]
    fn log_groups_outside_the_lambda_pattern_are_named_with_their_streams() {
        assert_eq!(
            log_groups(&names()),
            [
                "arn:aws:logs:REGION:ACCOUNT:log-group:/aws/lambda/webhook-inbox-*",
                "arn:aws:logs:REGION:ACCOUNT:log-group:/aws/vendedlogs/webhook-inbox-api-access",
                "arn:aws:logs:REGION:ACCOUNT:log-group:/aws/vendedlogs/webhook-inbox-api-access:*",
            ]
        );
    }
}
