//! docs/deployer-policy*.json, the IAM policy a deployer needs (docs/deploying.md): the
//! generator's output (devstack::deployer_policy), allowing every handler permission of every
//! resource type of the translated template, with no action wildcard, `Resource: *` only for
//! the actions listed here with their reason, and each document within IAM's size limit.

use devstack::deployer_policy::{
    self, iam_size, is_action_name, Derived, Part, Schemas, MANAGED_POLICY_LIMIT, STACK_NAME,
};

use super::*;

fn derived() -> &'static Derived {
    static D: OnceLock<Derived> = OnceLock::new();
    D.get_or_init(|| deployer_policy::derive(STACK_NAME).unwrap_or_else(|e| panic!("{e:#}")))
}

/// Each committed document: (file name, text, JSON).
fn committed() -> Vec<(&'static str, String, Value)> {
    Part::ALL
        .iter()
        .map(|part| {
            let file = deployer_policy::docs_dir().join(part.file_name());
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let doc = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()));
            (part.file_name(), text, doc)
        })
        .collect()
}

/// A statement's Action (or Resource) as a list; a single string is a list of one.
fn strings(value: &Value, what: &str) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .unwrap_or_else(|| panic!("{what}: {v}"))
                    .to_owned()
            })
            .collect(),
        other => panic!("{what}: {other}"),
    }
}

/// IAM's match of an action against a pattern of a statement's Action: case-insensitive,
/// `*` any run of characters, `?` any one.
fn iam_matches(pattern: &str, action: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let a: Vec<char> = action.to_ascii_lowercase().chars().collect();
    let (mut pi, mut ai) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ai < a.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == a[ai]) {
            pi += 1;
            ai += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ai));
            pi += 1;
        } else if let Some((sp, sa)) = star {
            pi = sp + 1;
            ai = sa + 1;
            star = Some((sp, sa + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[test]
fn iam_matching_is_case_insensitive_with_wildcards() {
    assert!(iam_matches("s3:GetObject", "s3:getobject"));
    assert!(iam_matches("s3:Get*", "s3:GetObjectVersion"));
    assert!(iam_matches("*", "lambda:CreateFunction"));
    assert!(iam_matches("lambda:?etFunction", "lambda:GetFunction"));
    assert!(!iam_matches("s3:GetObject", "s3:GetObjectVersion"));
    assert!(!iam_matches("s3:Get*", "s3:PutObject"));
    assert!(!iam_matches("sqs:*Queue", "sqs:CreateQueueX"));
}

#[test]
fn the_committed_policy_is_the_generators_output() {
    let rendered = derived().rendered().expect("renders");
    for ((part, generated), (file, text, _)) in rendered.iter().zip(committed()) {
        assert_eq!(part.file_name(), file);
        assert!(
            *generated == text,
            "docs/{file} is not what the generator derives from template.yaml and cfn-lint {}: \
             run `cargo run -p devstack --bin deployer-policy` and commit the result",
            derived().cfn_lint_version
        );
    }
    // No stale part left beside them.
    let mut files: Vec<String> = std::fs::read_dir(deployer_policy::docs_dir())
        .expect("docs/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("deployer-policy"))
        .collect();
    files.sort();
    let mut expected: Vec<&str> = Part::ALL.iter().map(|p| p.file_name()).collect();
    expected.sort_unstable();
    assert_eq!(files, expected);
}

/// The handler permissions of each resource type of the translated template (every condition
/// true) and of SAM's managed stack, read from cfn-lint's schemas here, not from the
/// generator's statements.
fn handler_permissions() -> Vec<(String, String)> {
    let translated = deployer_policy::translated().unwrap_or_else(|e| panic!("{e:#}"));
    let types = deployer_policy::resource_types(&translated);
    for conditional in [
        "AWS::Lambda::Url",
        "AWS::SNS::Topic",
        "AWS::IAM::ManagedPolicy",
    ] {
        assert!(types.contains(conditional), "{conditional} counts");
    }
    let schemas = Schemas::of_project().unwrap_or_else(|e| panic!("{e:#}"));
    types
        .iter()
        .flat_map(|t| {
            let listed = schemas
                .handler_permissions(t)
                .unwrap_or_else(|e| panic!("{e:#}"));
            listed.into_iter().map(move |p| (t.clone(), p))
        })
        .collect()
}

#[test]
fn every_handler_permission_of_every_resource_type_is_allowed() {
    let patterns: Vec<String> = committed()
        .iter()
        .flat_map(|(file, _, doc)| {
            let statements = doc["Statement"].as_array().expect("Statement").clone();
            statements.into_iter().map(move |s| (*file, s))
        })
        .filter(|(file, s)| {
            assert!(s.get("NotAction").is_none(), "{file}: NotAction");
            s["Effect"] == "Allow"
        })
        .flat_map(|(file, s)| strings(&s["Action"], &format!("{file} Action")))
        .collect();
    let all = handler_permissions();
    let mut checked = 0;
    let mut missing = Vec::new();
    for (resource_type, permission) in &all {
        if !is_action_name(permission) {
            // Not an IAM action name (s3:REST.PUT.OBJECT): no request is authorized as it.
            assert!(
                derived().not_actions.contains(permission),
                "{permission} left out unnoticed"
            );
            continue;
        }
        checked += 1;
        if !patterns.iter().any(|p| iam_matches(p, permission)) {
            missing.push(format!("{resource_type}: {permission}"));
        }
    }
    assert!(missing.is_empty(), "not allowed: {missing:#?}");
    assert!(checked > 200, "only {checked} permissions checked");
}

/// The actions that may have `Resource: *`, with the reason (the Service Authorization
/// Reference gives them no resource type).
const ALLOWED_ON_ANY_RESOURCE: &[(&str, &str)] = &[
    ("cloudformation:ValidateTemplate", "no resource type"),
    ("cloudformation:GetTemplateSummary", "sam deploy asks it of a template, not a stack"),
    ("ec2:DescribeNetworkInterfaces", "EC2 Describe calls have no resource type"),
    ("ec2:DescribeSecurityGroups", "EC2 Describe calls have no resource type"),
    ("ec2:DescribeSubnets", "EC2 Describe calls have no resource type"),
    ("ec2:DescribeVpcs", "EC2 Describe calls have no resource type"),
    ("kms:ListAliases", "no resource type"),
    ("lambda:CreateEventSourceMapping", "no resource type; its statement's lambda:FunctionArn condition scopes it to the stack's functions"),
    ("logs:CreateLogDelivery", "log deliveries have no resource type"),
    ("logs:GetLogDelivery", "log deliveries have no resource type"),
    ("logs:UpdateLogDelivery", "log deliveries have no resource type"),
    ("logs:DeleteLogDelivery", "log deliveries have no resource type"),
    ("logs:ListLogDeliveries", "log deliveries have no resource type"),
    ("logs:PutResourcePolicy", "account-wide log resource policies"),
    ("logs:DescribeResourcePolicies", "account-wide log resource policies"),
    ("logs:DeleteResourcePolicy", "account-wide log resource policies"),
    ("logs:PutIndexPolicy", "no resource type"),
    ("logs:DescribeIndexPolicies", "no resource type"),
    ("logs:DeleteIndexPolicy", "no resource type"),
    ("logs:DescribeLogGroups", "a list call with no resource type"),
    ("s3files:ListMountTargets", "lists the account's mount targets"),
    ("secretsmanager:GetRandomPassword", "no resource type"),
    ("secretsmanager:ListSecrets", "no resource type (make destroy lists the senders' secrets)"),
    ("sns:Unsubscribe", "no resource type"),
];

#[test]
fn no_action_wildcard_and_star_resources_only_where_listed() {
    for (file, _, doc) in committed() {
        for statement in doc["Statement"].as_array().expect("Statement") {
            let sid = statement["Sid"].as_str().unwrap_or("?");
            let actions = strings(&statement["Action"], &format!("{file} {sid} Action"));
            for action in &actions {
                assert!(
                    !action.contains(['*', '?']),
                    "{file} {sid}: {action}: actions are listed one by one"
                );
            }
            let resources = strings(&statement["Resource"], &format!("{file} {sid} Resource"));
            if resources.iter().any(|r| r == "*") {
                for action in &actions {
                    assert!(
                        ALLOWED_ON_ANY_RESOURCE
                            .iter()
                            .any(|(a, _)| a.eq_ignore_ascii_case(action)),
                        "{file} {sid}: {action} on Resource *"
                    );
                }
            }
        }
    }
}

#[test]
fn each_document_fits_a_managed_policy() {
    for (file, text, _) in committed() {
        let size = iam_size(&text);
        assert!(
            size <= MANAGED_POLICY_LIMIT,
            "{file}: {size} characters, IAM takes {MANAGED_POLICY_LIMIT}"
        );
    }
}

#[test]
fn each_document_is_an_iam_policy_with_named_statements() {
    let mut sids = BTreeSet::new();
    for (file, _, doc) in committed() {
        assert_eq!(doc["Version"], "2012-10-17", "{file}");
        let statements = doc["Statement"].as_array().expect("Statement");
        assert!(!statements.is_empty(), "{file}");
        for statement in statements {
            let sid = statement["Sid"]
                .as_str()
                .expect("every statement has a Sid");
            assert!(
                !sid.is_empty() && sid.chars().all(|c| c.is_ascii_alphanumeric()),
                "{file}: Sid {sid:?}"
            );
            assert!(sids.insert(sid.to_owned()), "{file}: Sid {sid} twice");
            assert_eq!(statement["Effect"], "Allow", "{file} {sid}");
            for action in strings(&statement["Action"], sid) {
                assert!(is_action_name(&action), "{file} {sid}: {action}");
            }
            for resource in strings(&statement["Resource"], sid) {
                assert!(
                    resource == "*" || resource.starts_with("arn:aws:"),
                    "{file} {sid}: {resource}"
                );
            }
        }
    }
}
