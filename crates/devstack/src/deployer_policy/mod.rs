//! The IAM policy a deployer needs for `sam deploy` of template.yaml, derived instead of
//! written by hand (docs/deploying.md, "The IAM a deployer needs"):
//!
//! 1. template.yaml through the real SAM transform, with samconfig.toml's parameters and
//!    [`OPTIONAL_RESOURCES_ON`], so that every condition holds (`conditions`) and every
//!    conditional resource counts; its resource types, with those of SAM's managed stack
//!    ([`SAM_MANAGED_STACK_TYPES`]);
//! 2. for each type, the permissions of its create, read, update and delete handlers in
//!    cfn-lint's copy of the resource provider schemas ([`Schemas`]);
//! 3. with the deploy's own calls (`scopes::DEPLOY_STEPS`), each placed by the table of
//!    scopes (`scopes::table`): service -> the stack's resource ARN patterns, `*` only for the
//!    actions with no resource type (`scopes::UNSCOPED`); an action the table does not place
//!    fails the derivation;
//! 4. one statement per scope, actions listed one by one (no wildcard), in two documents
//!    ([`Part`]): all of it is some 11,300 characters, and IAM takes at most
//!    [`MANAGED_POLICY_LIMIT`] in one managed policy.
//!
//! `cargo run -p devstack --bin deployer-policy` rewrites `docs/deployer-policy*.json`;
//! tests/template_hardening/deployer_policy.rs fails while they differ from [`derive`]'s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cloudformation::{samconfig_path, template_path, Parameters, Translated};

pub mod conditions;
mod schemas;
mod scopes;

pub use schemas::{Schemas, HANDLERS};

/// The stack name the policy's resource names assume: samconfig.toml's `stack_name`.
pub const STACK_NAME: &str = "webhook-inbox";

/// IAM's limit on a managed policy document: characters, whitespace not counted.
pub const MANAGED_POLICY_LIMIT: usize = 6144;

/// Parameter values beyond samconfig.toml's that the template is translated with for the
/// policy: each makes a condition true (`HasFunctionUrl`, `HasAlarmEmail`, `HasAlarmTopic`),
/// so that the resources under it count. samconfig.toml already gives `SecretArns`
/// (`HasSecretArns`) and a `ReceiverReservedConcurrency` above 0.
pub const OPTIONAL_RESOURCES_ON: &[(&str, &str)] = &[
    ("FunctionUrl", "enabled"),
    ("AlarmEmail", "alarms@example.com"),
    ("AlarmTopicArn", "arn:aws:sns:us-east-1:123456789012:alarms"),
    // Chooses a resource of a statement, no resource: given so that every condition holds.
    (
        "SecretArns",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook-inbox/github-??????",
    ),
    ("ReceiverReservedConcurrency", "5"),
    // Choose statements of the consumer's role, no resource: given for the same reason.
    (
        "DestinationBusArns",
        "arn:aws:events:us-east-1:123456789012:event-bus/payments",
    ),
    (
        "DestinationQueueArns",
        "arn:aws:sqs:us-east-1:123456789012:ci-events.fifo",
    ),
    (
        "DestinationFunctionArns",
        "arn:aws:lambda:us-east-1:123456789012:function:crm-sync",
    ),
    (
        "DestinationSecretArns",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook-inbox/billing-forward-??????",
    ),
];

/// The resource types of SAM CLI's `aws-sam-cli-managed-default` stack (its artifact bucket
/// and the bucket's policy), which `sam deploy` creates with the deployer's credentials too.
pub const SAM_MANAGED_STACK_TYPES: &[&str] = &["AWS::S3::Bucket", "AWS::S3::BucketPolicy"];

/// What stops the derivation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// An action no scope of the table takes.
    #[error(
        "{0}: no scope of the deployer policy's table takes it (add its service's resource \
         patterns, or, when it has no resource type, add it to UNSCOPED with the reason)"
    )]
    NoScope(String),
    /// An action the table names that nothing needs any more.
    #[error(
        "{0}: the deployer policy's table names it, but no resource type or deploy step needs it"
    )]
    Unused(String),
    /// A document over [`MANAGED_POLICY_LIMIT`].
    #[error("{file}: {size} characters, over IAM's {MANAGED_POLICY_LIMIT} for a managed policy: move a scope to the other part")]
    TooLarge {
        /// The document's file name.
        file: &'static str,
        /// Its size as IAM counts it ([`iam_size`]).
        size: usize,
    },
}

/// The two managed policies the statements are split into (one would be over
/// [`MANAGED_POLICY_LIMIT`]): attach both to the deployer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// CloudFormation, SAM's transform, IAM, Lambda, API Gateway, logs and the unscoped
    /// calls.
    Deploy,
    /// S3, DynamoDB, SQS, SNS, Secrets Manager, CloudWatch, KMS and the other stores.
    Storage,
}

impl Part {
    /// Both, in file order.
    pub const ALL: [Part; 2] = [Part::Deploy, Part::Storage];

    /// The file under docs/.
    pub fn file_name(self) -> &'static str {
        match self {
            Part::Deploy => "deployer-policy.json",
            Part::Storage => "deployer-policy-storage.json",
        }
    }

    /// The managed policy's name in docs/deploying.md.
    pub fn policy_name(self) -> &'static str {
        match self {
            Part::Deploy => "webhook-inbox-deployer",
            Part::Storage => "webhook-inbox-deployer-storage",
        }
    }
}

/// An IAM policy document, its keys in IAM's usual order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDocument {
    /// `2012-10-17`.
    #[serde(rename = "Version")]
    pub version: String,
    /// The statements.
    #[serde(rename = "Statement")]
    pub statement: Vec<Statement>,
}

/// One Allow statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// Its scope's name.
    #[serde(rename = "Sid")]
    pub sid: String,
    /// `Allow`.
    #[serde(rename = "Effect")]
    pub effect: String,
    /// The actions, each spelled out, sorted case-insensitively.
    #[serde(rename = "Action")]
    pub action: Vec<String>,
    /// The resource ARN patterns.
    #[serde(rename = "Resource")]
    pub resource: Vec<String>,
    /// operator -> key -> value, when the scope has a condition.
    #[serde(rename = "Condition", default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<BTreeMap<String, BTreeMap<String, String>>>,
}

/// The derivation's result.
#[derive(Debug, Clone)]
pub struct Derived {
    /// The cfn-lint whose schemas were read.
    pub cfn_lint_version: String,
    /// Each resource type counted -> its handlers' permissions ([`Schemas::handler_permissions`]).
    pub permissions: BTreeMap<String, Vec<String>>,
    /// What the schemas list that is not an IAM action name ([`is_action_name`]), left out:
    /// IAM could not match a request to it (`s3:REST.PUT.OBJECT` is a server access log's
    /// operation name).
    pub not_actions: BTreeSet<String>,
    /// The documents, in [`Part::ALL`] order.
    pub documents: Documents,
}

impl Derived {
    /// Each document as its file holds it.
    pub fn rendered(&self) -> anyhow::Result<Vec<(Part, String)>> {
        self.documents
            .iter()
            .map(|(part, doc)| Ok((*part, render(doc)?)))
            .collect()
    }

    /// The distinct handler permissions (IAM action names, case-insensitively) of all types.
    pub fn distinct_permissions(&self) -> BTreeSet<String> {
        self.permissions
            .values()
            .flatten()
            .filter(|a| is_action_name(a))
            .map(|a| a.to_ascii_lowercase())
            .collect()
    }

    /// Writes every document into `dir`.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        for (part, text) in self.rendered()? {
            let file = dir.join(part.file_name());
            std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        }
        Ok(())
    }
}

/// `docs/` at the workspace root, where the documents are committed.
pub fn docs_dir() -> PathBuf {
    let dir = crate::moto::workspace_root().join("docs");
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// samconfig.toml's parameters with [`OPTIONAL_RESOURCES_ON`].
pub fn parameters() -> anyhow::Result<Parameters> {
    let mut parameters = Parameters::from_samconfig(&samconfig_path())?;
    for (name, value) in OPTIONAL_RESOURCES_ON {
        parameters.set(name, value);
    }
    Ok(parameters)
}

/// template.yaml translated with [`parameters`], after checking that each of its conditions
/// holds for them.
pub fn translated() -> anyhow::Result<Translated> {
    let parameters = parameters()?;
    let translated = Translated::cached(&template_path(), &parameters)?;
    conditions::check_all_hold(translated.document(), &parameters)?;
    Ok(translated)
}

/// The resource types of `translated`, and [`SAM_MANAGED_STACK_TYPES`].
pub fn resource_types(translated: &Translated) -> BTreeSet<String> {
    translated
        .document()
        .get("Resources")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|resources| resources.values())
        .filter_map(|r| r.get("Type").and_then(Value::as_str))
        .chain(SAM_MANAGED_STACK_TYPES.iter().copied())
        .map(str::to_owned)
        .collect()
}

/// The policy for a stack named `stack`, from the project's template and cfn-lint.
pub fn derive(stack: &str) -> anyhow::Result<Derived> {
    let translated = translated()?;
    let schemas = Schemas::of_project()?;
    let mut permissions = BTreeMap::new();
    for resource_type in resource_types(&translated) {
        let listed = schemas.handler_permissions(&resource_type)?;
        permissions.insert(resource_type, listed);
    }
    let names = names(&translated, stack)?;
    let (documents, not_actions) = documents(&permissions, &names)?;
    Ok(Derived {
        cfn_lint_version: schemas.version().to_owned(),
        permissions,
        not_actions,
        documents,
    })
}

/// `service:Action`: a lower-case service prefix and an alphanumeric action name, as IAM
/// spells every action (no wildcard).
pub fn is_action_name(text: &str) -> bool {
    text.split_once(':').is_some_and(|(service, action)| {
        !service.is_empty()
            && service
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !action.is_empty()
            && action.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// A document as its file holds it: pretty JSON and a final newline.
pub fn render(doc: &PolicyDocument) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(doc).context("rendering a policy")?;
    text.push('\n');
    Ok(text)
}

/// A policy's size as IAM counts it against [`MANAGED_POLICY_LIMIT`]: its characters but
/// whitespace.
pub fn iam_size(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

/// The physical names the scopes are built from.
fn names(translated: &Translated, stack: &str) -> anyhow::Result<scopes::Names> {
    let of_type = |resource_type: &str, property: &str, lower: bool| {
        translated
            .resources_of_type(resource_type)
            .into_iter()
            .map(|(id, resource)| {
                physical_name(resource, property, id, stack, lower)
                    .with_context(|| format!("{id}'s {property}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()
    };
    Ok(scopes::Names {
        stack: stack.to_owned(),
        buckets: of_type("AWS::S3::Bucket", "BucketName", true)?,
        log_groups: of_type("AWS::Logs::LogGroup", "LogGroupName", false)?,
    })
}

/// A resource's name property with `${AWS::StackName}` substituted, or, when the template
/// gives none, the pattern of the name CloudFormation generates (`stack-LogicalId-*`; lower
/// case for a bucket).
fn physical_name(
    resource: &Value,
    property: &str,
    logical_id: &str,
    stack: &str,
    lower: bool,
) -> anyhow::Result<String> {
    let name = match resource.get("Properties").and_then(|p| p.get(property)) {
        None => format!("{stack}-{logical_id}-*"),
        Some(Value::String(literal)) => literal.clone(),
        Some(Value::Object(sub)) if sub.len() == 1 && sub.contains_key("Fn::Sub") => sub
            .get("Fn::Sub")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("a Fn::Sub with variables"))?
            .replace("${AWS::StackName}", stack),
        Some(other) => bail!("{other}: neither a literal nor a Fn::Sub of the stack name"),
    };
    if name.contains("${") {
        bail!("{name}: only ${{AWS::StackName}} is substituted");
    }
    Ok(if lower { name.to_lowercase() } else { name })
}

/// The documents in [`Part::ALL`] order.
pub type Documents = Vec<(Part, PolicyDocument)>;

/// The documents, and the permissions left out as not action names.
fn documents(
    permissions: &BTreeMap<String, Vec<String>>,
    names: &scopes::Names,
) -> anyhow::Result<(Documents, BTreeSet<String>)> {
    // lower-case name -> the spelling that sorts first.
    let mut needed: BTreeMap<String, String> = BTreeMap::new();
    let mut not_actions = BTreeSet::new();
    let listed = permissions.values().flatten().map(String::as_str);
    let steps = scopes::DEPLOY_STEPS.iter().map(|(action, _)| *action);
    for action in listed.chain(steps) {
        if !is_action_name(action) {
            not_actions.insert(action.to_owned());
            continue;
        }
        let kept = needed
            .entry(action.to_ascii_lowercase())
            .or_insert_with(|| action.to_owned());
        if action < kept.as_str() {
            action.clone_into(kept);
        }
    }
    let table = scopes::table(names);
    for named in table.iter().flat_map(|scope| &scope.actions) {
        if !needed.contains_key(&named.to_ascii_lowercase()) {
            return Err(PolicyError::Unused((*named).to_owned()).into());
        }
    }
    let mut placed: Vec<BTreeMap<&str, &str>> = vec![BTreeMap::new(); table.len()];
    for (lower, spelling) in &needed {
        for i in scopes::place(spelling, &table)? {
            placed[i].insert(lower, spelling);
        }
    }
    let mut documents = Vec::new();
    for part in Part::ALL {
        let statement: Vec<Statement> = table
            .iter()
            .zip(&placed)
            .filter(|(scope, actions)| scope.part == part && !actions.is_empty())
            .map(|(scope, actions)| statement(scope, actions.values()))
            .collect();
        let doc = PolicyDocument {
            version: "2012-10-17".to_owned(),
            statement,
        };
        let size = iam_size(&render(&doc)?);
        if size > MANAGED_POLICY_LIMIT {
            let file = part.file_name();
            return Err(PolicyError::TooLarge { file, size }.into());
        }
        documents.push((part, doc));
    }
    Ok((documents, not_actions))
}

/// A scope's statement with these actions.
fn statement<'a>(scope: &scopes::Scope, actions: impl Iterator<Item = &'a &'a str>) -> Statement {
    Statement {
        sid: scope.sid.to_owned(),
        effect: "Allow".to_owned(),
        action: actions.map(|a| (*a).to_owned()).collect(),
        resource: scope.resources.clone(),
        condition: scope.condition.as_ref().map(|(operator, key, value)| {
            BTreeMap::from([(
                (*operator).to_owned(),
                BTreeMap::from([((*key).to_owned(), value.clone())]),
            )])
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn action_names() {
        for good in [
            "s3:GetObject",
            "s3:getObject",
            "elasticfilesystem:DescribeMountTargets",
            "s3files:ListMountTargets",
        ] {
            assert!(is_action_name(good), "{good}");
        }
        for bad in [
            "s3:REST.PUT.OBJECT",
            "s3:*",
            "s3:Get*",
            "*",
            "S3:GetObject",
            "s3:",
            ":x",
            "s3 GetObject",
        ] {
            assert!(!is_action_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_size_iam_counts_leaves_out_whitespace() {
        assert_eq!(iam_size("{\n  \"a\": [ \"b\" ]\n}\n"), 11);
    }

    #[test]
    fn physical_names() {
        let named = json!({"Properties": {"LogGroupName": {"Fn::Sub": "/aws/vendedlogs/${AWS::StackName}-api"}}});
        assert_eq!(
            physical_name(&named, "LogGroupName", "Api", "st", false).unwrap(),
            "/aws/vendedlogs/st-api"
        );
        let generated = json!({"Properties": {}});
        assert_eq!(
            physical_name(&generated, "BucketName", "PayloadBucket", "Web-Inbox", true).unwrap(),
            "web-inbox-payloadbucket-*"
        );
        let other = json!({"Properties": {"BucketName": {"Fn::Sub": "${AWS::AccountId}-x"}}});
        assert_eq!(
            physical_name(&other, "BucketName", "B", "st", true)
                .unwrap_err()
                .to_string(),
            "${AWS::AccountId}-x: only ${AWS::StackName} is substituted"
        );
    }

    fn names() -> scopes::Names {
        scopes::Names {
            stack: "webhook-inbox".to_owned(),
            buckets: vec!["webhook-inbox-payloadbucket-*".to_owned()],
            log_groups: Vec::new(),
        }
    }

    /// Handler permissions of one made-up type, with the deploy steps' services.
    fn permissions(extra: &[&str]) -> BTreeMap<String, Vec<String>> {
        let mut listed: Vec<String> = [
            "sqs:CreateQueue",
            "sqs:getQueueAttributes",
            "s3:REST.PUT.OBJECT",
        ]
        .iter()
        .chain(extra)
        .map(|a| (*a).to_owned())
        .collect();
        // What the table names explicitly must be needed, or the derivation refuses it.
        listed.extend(scopes::UNSCOPED.iter().map(|(a, _)| (*a).to_owned()));
        listed.extend(
            [
                "iam:CreateServiceLinkedRole",
                "lambda:GetEventSourceMapping",
                "lambda:UpdateEventSourceMapping",
                "lambda:DeleteEventSourceMapping",
                "lambda:CreateEventSourceMapping",
            ]
            .map(str::to_owned),
        );
        BTreeMap::from([("AWS::X::Y".to_owned(), listed)])
    }

    #[test]
    fn statements_by_scope_with_case_duplicates_merged_and_not_actions_left_out() {
        let mut p = permissions(&["sqs:GetQueueAttributes"]);
        p.insert(
            "AWS::X::Z".to_owned(),
            vec!["sqs:SetQueueAttributes".to_owned()],
        );
        let (docs, not_actions) = documents(&p, &names()).unwrap();
        assert_eq!(
            not_actions,
            BTreeSet::from(["s3:REST.PUT.OBJECT".to_owned()])
        );
        let storage = &docs[1].1;
        let sqs = storage.statement.iter().find(|s| s.sid == "Sqs").unwrap();
        assert_eq!(
            sqs.action,
            [
                "sqs:CreateQueue",
                "sqs:GetQueueAttributes",
                "sqs:SetQueueAttributes"
            ]
        );
        assert_eq!(sqs.resource, ["arn:aws:sqs:REGION:ACCOUNT:webhook-inbox-*"]);
        assert!(
            !storage.statement.iter().any(|s| s.sid == "Kinesis"),
            "a scope nothing needs has no statement"
        );
        let deploy = &docs[0].1;
        let create = deploy
            .statement
            .iter()
            .find(|s| s.sid == "EventSourceMappingCreate")
            .unwrap();
        assert_eq!(create.resource, ["*"]);
        assert!(create.condition.is_some());
    }

    #[test]
    fn an_unplaced_action_or_an_unused_table_entry_stops_it() {
        let err = documents(&permissions(&["organizations:ListAccounts"]), &names()).unwrap_err();
        assert_eq!(
            err.downcast_ref::<PolicyError>(),
            Some(&PolicyError::NoScope(
                "organizations:ListAccounts".to_owned()
            ))
        );
        let mut p = permissions(&[]);
        p.values_mut()
            .for_each(|v| v.retain(|a| a != "sns:Unsubscribe"));
        let err = documents(&p, &names()).unwrap_err();
        assert_eq!(
            err.downcast_ref::<PolicyError>(),
            Some(&PolicyError::Unused("sns:Unsubscribe".to_owned()))
        );
    }

    #[test]
    fn a_document_over_the_limit_stops_it() {
        let many: Vec<String> = (0..400).map(|i| format!("dynamodb:Action{i:04}")).collect();
        let mut p = permissions(&[]);
        p.insert("AWS::X::Big".to_owned(), many);
        let err = documents(&p, &names()).unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<PolicyError>(),
                Some(PolicyError::TooLarge {
                    file: "deployer-policy-storage.json",
                    ..
                })
            ),
            "{err}"
        );
    }
}
