//! Reading `template.yaml`: the parts the code depends on (the ledger table, the queues, the
//! functions' environment), checked when loaded. The audit reads the queue facts from it, and
//! `tests/template_matches.rs` checks it against the code and against the local stack (which is
//! the template itself created on moto's CloudFormation, devstack::local_stack).
//!
//! Only the literal properties that matter to the code are read: the ledger table's key schema,
//! billing mode and TTL attribute, the FIFO queue's and dead-letter queue's attributes and the
//! redrive policy. CloudFormation intrinsics (`!Ref`, `!GetAtt`, `!Sub`, ... short tags, which
//! serde_yaml 0.9 reads as [`Value::Tagged`], or their `Fn::` long forms) are accepted only where
//! the value is not needed locally (names, ARNs); a property this module needs must be a literal.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context as _};
use serde_yaml::Value;

const TABLE_TYPE: &str = "AWS::DynamoDB::Table";
const QUEUE_TYPE: &str = "AWS::SQS::Queue";

/// `AWS::SQS::Queue` properties that are queue attributes of the same name and that the local
/// queues copy. `KmsMasterKeyId` and `SqsManagedSseEnabled` (encryption at rest) stay deployed-only.
const QUEUE_ATTRIBUTES: &[&str] = &[
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "MaximumMessageSize",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
];

/// The parts of `template.yaml` that the local environment and the code depend on.
#[derive(Debug, Clone)]
pub struct Template {
    doc: Value,
    table: TableSpec,
    queue: QueueSpec,
    dlq: QueueSpec,
    max_receive_count: u32,
}

/// The ledger table as the template defines it.
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub logical_id: String,
    pub billing_mode: String,
    /// (AttributeName, AttributeType)
    pub attribute_definitions: Vec<(String, String)>,
    /// (AttributeName, KeyType)
    pub key_schema: Vec<(String, String)>,
    pub ttl_attribute: String,
}

#[derive(Debug, Clone)]
struct QueueSpec {
    logical_id: String,
    /// SQS attribute name -> value as SQS takes it ("true", "360", ...).
    attributes: BTreeMap<String, String>,
}

impl QueueSpec {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.get(name).map(String::as_str)
    }

    fn is_fifo(&self) -> bool {
        self.attribute("FifoQueue") == Some("true")
    }

    fn seconds(&self, name: &str, default: u32) -> u32 {
        // Values were checked to be numbers when the template was loaded.
        self.attribute(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }
}

impl Template {
    /// Reads and checks `template.yaml`: exactly one DynamoDB table, and one SQS queue whose
    /// `RedrivePolicy` names the dead-letter queue with `!GetAtt <Queue>.Arn`.
    pub fn load(path: &Path) -> anyhow::Result<Template> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// As [`Template::load`], from the template's text.
    pub fn parse(text: &str) -> anyhow::Result<Template> {
        let doc: Value = serde_yaml::from_str(text).context("template is not valid YAML")?;
        let resources = doc
            .get("Resources")
            .and_then(Value::as_mapping)
            .ok_or_else(|| anyhow!("template has no Resources section"))?;

        let mut tables = Vec::new();
        let mut queues = Vec::new();
        for (id, resource) in resources {
            let id = id
                .as_str()
                .ok_or_else(|| anyhow!("a resource's logical id is not a string"))?;
            match resource.get("Type").and_then(literal_str) {
                Some(TABLE_TYPE) => tables.push((id, resource)),
                Some(QUEUE_TYPE) => queues.push((id, resource)),
                _ => {}
            }
        }

        let table = match tables.as_slice() {
            [(id, resource)] => {
                table_spec(id, resource).with_context(|| format!("resource {id} ({TABLE_TYPE})"))?
            }
            other => bail!("expected exactly one {TABLE_TYPE}, found {}", other.len()),
        };

        let with_redrive: Vec<_> = queues
            .iter()
            .filter(|(_, r)| properties(r).and_then(|p| p.get("RedrivePolicy")).is_some())
            .collect();
        let (queue_id, queue_resource) = match with_redrive.as_slice() {
            [one] => **one,
            other => bail!(
                "expected exactly one {QUEUE_TYPE} with a RedrivePolicy, found {}",
                other.len()
            ),
        };
        let queue = queue_spec(queue_id, queue_resource)
            .with_context(|| format!("resource {queue_id} ({QUEUE_TYPE})"))?;

        let redrive = properties(queue_resource)
            .and_then(|p| p.get("RedrivePolicy"))
            .ok_or_else(|| anyhow!("{queue_id} has no RedrivePolicy"))?;
        let target = redrive
            .get("deadLetterTargetArn")
            .ok_or_else(|| anyhow!("{queue_id}: RedrivePolicy has no deadLetterTargetArn"))?;
        let dlq_id = get_att_arn_target(target).ok_or_else(|| {
            anyhow!("{queue_id}: RedrivePolicy.deadLetterTargetArn must be !GetAtt <Queue>.Arn")
        })?;
        let max_receive_count = redrive
            .get("maxReceiveCount")
            .ok_or_else(|| anyhow!("{queue_id}: RedrivePolicy has no maxReceiveCount"))
            .and_then(|v| literal_u32(v).context("RedrivePolicy.maxReceiveCount"))?;
        let (_, dlq_resource) = queues.iter().find(|(id, _)| *id == dlq_id).ok_or_else(|| {
            anyhow!(
                "{queue_id}: dead-letter queue {dlq_id} is not an {QUEUE_TYPE} of this template"
            )
        })?;
        let dlq = queue_spec(dlq_id, dlq_resource)
            .with_context(|| format!("resource {dlq_id} ({QUEUE_TYPE})"))?;

        Ok(Template {
            doc,
            table,
            queue,
            dlq,
            max_receive_count,
        })
    }

    /// The whole document, tags and all, for checks this type has no accessor for.
    pub fn table(&self) -> &TableSpec {
        &self.table
    }

    pub fn document(&self) -> &Value {
        &self.doc
    }

    /// A resource by logical id.
    pub fn resource(&self, logical_id: &str) -> Option<&Value> {
        self.doc.get("Resources")?.get(logical_id)
    }

    /// A parameter's `Default`, if it has one.
    pub fn parameter_default(&self, name: &str) -> Option<&Value> {
        self.doc.get("Parameters")?.get(name)?.get("Default")
    }

    /// Logical id of the ledger table.
    pub fn table_logical_id(&self) -> &str {
        &self.table.logical_id
    }

    /// Logical id of the FIFO webhook queue (the one with a redrive policy).
    pub fn queue_logical_id(&self) -> &str {
        &self.queue.logical_id
    }

    /// Logical id of the dead-letter queue.
    pub fn dlq_logical_id(&self) -> &str {
        &self.dlq.logical_id
    }

    /// `TimeToLiveSpecification.AttributeName` of the ledger table.
    pub fn ttl_attribute(&self) -> &str {
        &self.table.ttl_attribute
    }

    /// The table's HASH key.
    pub fn partition_key(&self) -> &str {
        self.table
            .key_schema
            .iter()
            .find(|(_, kind)| kind == "HASH")
            .map(|(name, _)| name.as_str())
            .expect("checked at load")
    }

    /// The partition key's `AttributeType` (`S`, `N` or `B`).
    pub fn partition_key_type(&self) -> &str {
        let pk = self.partition_key();
        self.table
            .attribute_definitions
            .iter()
            .find(|(name, _)| name == pk)
            .map(|(_, ty)| ty.as_str())
            .expect("checked at load")
    }

    /// The table's key schema as (AttributeName, KeyType) pairs.
    pub fn key_schema(&self) -> &[(String, String)] {
        &self.table.key_schema
    }

    /// The table's `BillingMode`.
    pub fn billing_mode(&self) -> &str {
        &self.table.billing_mode
    }

    pub fn queue_is_fifo(&self) -> bool {
        self.queue.is_fifo()
    }

    pub fn dlq_is_fifo(&self) -> bool {
        self.dlq.is_fifo()
    }

    /// `ContentBasedDeduplication` of the webhook queue (false when absent, as in SQS).
    pub fn queue_content_based_deduplication(&self) -> bool {
        self.queue.attribute("ContentBasedDeduplication") == Some("true")
    }

    /// `VisibilityTimeout` in seconds (SQS's default, 30, when absent).
    pub fn queue_visibility_timeout(&self) -> u32 {
        self.queue.seconds("VisibilityTimeout", 30)
    }

    /// `MessageRetentionPeriod` in seconds (SQS's default, 4 days, when absent).
    pub fn queue_retention_seconds(&self) -> u32 {
        self.queue.seconds("MessageRetentionPeriod", 345_600)
    }

    /// `MessageRetentionPeriod` of the dead-letter queue in seconds.
    pub fn dlq_retention_seconds(&self) -> u32 {
        self.dlq.seconds("MessageRetentionPeriod", 345_600)
    }

    /// The queue attributes (as SQS names and values) the local webhook queue is created with,
    /// besides `RedrivePolicy`.
    pub fn queue_attributes(&self) -> &BTreeMap<String, String> {
        &self.queue.attributes
    }

    /// The attributes of the local dead-letter queue.
    pub fn dlq_attributes(&self) -> &BTreeMap<String, String> {
        &self.dlq.attributes
    }

    /// `RedrivePolicy.maxReceiveCount` of the webhook queue.
    pub fn max_receive_count(&self) -> u32 {
        self.max_receive_count
    }

    /// Names of the environment variables a function gets: `Globals.Function.Environment` merged
    /// with the function's own, sorted. Empty for an unknown logical id.
    pub fn function_env_names(&self, logical_id: &str) -> Vec<String> {
        if self.resource(logical_id).is_none() {
            return Vec::new();
        }
        let global = self
            .doc
            .get("Globals")
            .and_then(|g| g.get("Function"))
            .and_then(env_variables);
        let own = self
            .resource(logical_id)
            .and_then(properties)
            .and_then(env_variables);
        let mut names: Vec<String> = global
            .into_iter()
            .chain(own)
            .flat_map(|vars| vars.keys().filter_map(Value::as_str))
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// `Globals.Function.MemorySize` in MB, where it is a literal number.
    pub fn globals_memory_size(&self) -> Option<u32> {
        literal_u32(
            self.doc
                .get("Globals")?
                .get("Function")?
                .get("MemorySize")?,
        )
        .ok()
    }

    /// A function's `Timeout` in seconds: its own, else `Globals.Function.Timeout`, else SAM's
    /// default of 3. `None` when the resource does not exist or the value is not a literal number.
    pub fn function_timeout(&self, logical_id: &str) -> Option<u32> {
        let own = self.resource(logical_id)?;
        let value = properties(own)
            .and_then(|p| p.get("Timeout"))
            .or_else(|| self.doc.get("Globals")?.get("Function")?.get("Timeout"));
        match value {
            Some(v) => literal_u32(v).ok(),
            None => Some(3),
        }
    }
}
/// `template.yaml` at the workspace root.
pub use crate::template_path;

fn properties(resource: &Value) -> Option<&Value> {
    resource.get("Properties")
}

fn env_variables(owner: &Value) -> Option<&serde_yaml::Mapping> {
    owner.get("Environment")?.get("Variables")?.as_mapping()
}

/// Whether a value is a CloudFormation intrinsic: a short tag (`!Ref x`) or a one-key mapping
/// `{Ref: x}` / `{Fn::...: ...}`.
fn is_intrinsic(value: &Value) -> bool {
    match value {
        Value::Tagged(_) => true,
        Value::Mapping(map) if map.len() == 1 => map
            .keys()
            .next()
            .and_then(Value::as_str)
            .is_some_and(|k| k == "Ref" || k == "Condition" || k.starts_with("Fn::")),
        _ => false,
    }
}

/// A literal string (serde_yaml's `as_str` would look through a `!Ref` tag: refuse those).
fn literal_str(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A literal list (`as_sequence` would look through a tag such as `!Split`).
fn literal_seq(value: &Value) -> Option<&serde_yaml::Sequence> {
    match value {
        Value::Sequence(seq) => Some(seq),
        _ => None,
    }
}

/// A literal scalar as SQS/DynamoDB take it: strings as they are, booleans as `true`/`false`,
/// numbers in decimal.
fn literal_scalar(value: &Value) -> anyhow::Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        v if is_intrinsic(v) => {
            bail!("is an intrinsic function; the reader needs a literal")
        }
        other => bail!("is not a scalar: {other:?}"),
    }
}

fn literal_u32(value: &Value) -> anyhow::Result<u32> {
    let text = literal_scalar(value)?;
    text.parse()
        .map_err(|_| anyhow!("{text:?} is not a non-negative whole number"))
}

fn literal_bool(value: &Value) -> anyhow::Result<bool> {
    match literal_scalar(value)?.as_str() {
        "true" | "True" | "TRUE" => Ok(true),
        "false" | "False" | "FALSE" => Ok(false),
        other => bail!("{other:?} is not a boolean"),
    }
}

fn required<'a>(map: &'a Value, key: &str) -> anyhow::Result<&'a Value> {
    map.get(key).ok_or_else(|| anyhow!("missing {key}"))
}

fn required_str<'a>(map: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    let value = required(map, key)?;
    literal_str(value).ok_or_else(|| anyhow!("{key} must be a literal string"))
}

fn table_spec(id: &str, resource: &Value) -> anyhow::Result<TableSpec> {
    let props = properties(resource).ok_or_else(|| anyhow!("no Properties"))?;

    let billing_mode = match props.get("BillingMode") {
        Some(v) => literal_str(v)
            .ok_or_else(|| anyhow!("BillingMode must be a literal string"))?
            .to_owned(),
        None => "PROVISIONED".to_owned(),
    };
    if billing_mode != "PAY_PER_REQUEST" {
        // Provisioned throughput would need read/write capacities, which nothing here needs.
        bail!("BillingMode {billing_mode} is not supported locally (PAY_PER_REQUEST is)");
    }

    let definitions = literal_seq(required(props, "AttributeDefinitions")?)
        .ok_or_else(|| anyhow!("AttributeDefinitions must be a literal list"))?;
    let attribute_definitions = definitions
        .iter()
        .map(|d| {
            Ok((
                required_str(d, "AttributeName")?.to_owned(),
                required_str(d, "AttributeType")?.to_owned(),
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .context("AttributeDefinitions")?;

    let schema = literal_seq(required(props, "KeySchema")?)
        .ok_or_else(|| anyhow!("KeySchema must be a literal list"))?;
    let key_schema = schema
        .iter()
        .map(|k| {
            Ok((
                required_str(k, "AttributeName")?.to_owned(),
                required_str(k, "KeyType")?.to_owned(),
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()
        .context("KeySchema")?;
    if key_schema.iter().filter(|(_, k)| k == "HASH").count() != 1 {
        bail!("KeySchema must have exactly one HASH key");
    }
    for (name, _) in &key_schema {
        if !attribute_definitions.iter().any(|(n, _)| n == name) {
            bail!("key attribute {name} has no AttributeDefinitions entry");
        }
    }

    let ttl = required(props, "TimeToLiveSpecification")?;
    let ttl_attribute = required_str(ttl, "AttributeName")
        .context("TimeToLiveSpecification")?
        .to_owned();
    let enabled = literal_bool(required(ttl, "Enabled").context("TimeToLiveSpecification")?)
        .context("TimeToLiveSpecification.Enabled")?;
    if !enabled {
        bail!("TimeToLiveSpecification.Enabled is false: nothing would ever expire the ledger");
    }

    Ok(TableSpec {
        logical_id: id.to_owned(),
        billing_mode,
        attribute_definitions,
        key_schema,
        ttl_attribute,
    })
}

fn queue_spec(id: &str, resource: &Value) -> anyhow::Result<QueueSpec> {
    let mut attributes = BTreeMap::new();
    if let Some(props) = properties(resource) {
        for name in QUEUE_ATTRIBUTES {
            if let Some(value) = props.get(*name) {
                let text = literal_scalar(value).with_context(|| format!("property {name}"))?;
                attributes.insert((*name).to_owned(), normalize(name, text)?);
            }
        }
    }
    Ok(QueueSpec {
        logical_id: id.to_owned(),
        attributes,
    })
}

/// Booleans and numbers in the form SQS takes them, whatever YAML spelling the template used.
fn normalize(name: &str, text: String) -> anyhow::Result<String> {
    match name {
        "FifoQueue" | "ContentBasedDeduplication" => Ok(literal_bool(&Value::String(text))
            .with_context(|| format!("property {name}"))?
            .to_string()),
        "DeduplicationScope" | "FifoThroughputLimit" => Ok(text),
        _ => text
            .parse::<u32>()
            .map(|n| n.to_string())
            .map_err(|_| anyhow!("property {name}: {text:?} is not a whole number")),
    }
}

/// The logical id in `!GetAtt X.Arn`, `!GetAtt [X, Arn]` or `{Fn::GetAtt: [X, Arn]}`.
fn get_att_arn_target(value: &Value) -> Option<&str> {
    let (args, short) = match value {
        Value::Tagged(tagged) if tagged.tag == "GetAtt" => (&tagged.value, true),
        Value::Mapping(map) if map.len() == 1 => (map.get("Fn::GetAtt")?, false),
        _ => return None,
    };
    match args {
        Value::String(dotted) if short => {
            let (id, attr) = dotted.split_once('.')?;
            (attr == "Arn").then_some(id)
        }
        Value::Sequence(parts) if parts.len() == 2 => {
            let id = literal_str(&parts[0])?;
            (literal_str(&parts[1])? == "Arn").then_some(id)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      TimeToLiveSpecification: {AttributeName: expires_at, Enabled: true}
  Q:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "${AWS::StackName}-q.fifo"
      FifoQueue: true
      ContentBasedDeduplication: "false"
      VisibilityTimeout: 120
      RedrivePolicy:
        deadLetterTargetArn: {"Fn::GetAtt": [D, Arn]}
        maxReceiveCount: "3"
  D:
    Type: AWS::SQS::Queue
    Properties: {FifoQueue: "true"}
"#;

    #[test]
    fn reads_literals_long_forms_and_string_spellings() {
        let t = Template::parse(MINIMAL).unwrap();
        assert_eq!(t.partition_key(), "pk");
        assert_eq!(t.ttl_attribute(), "expires_at");
        assert!(t.queue_is_fifo() && t.dlq_is_fifo());
        assert!(!t.queue_content_based_deduplication());
        assert_eq!(t.queue_visibility_timeout(), 120);
        assert_eq!(t.queue_retention_seconds(), 345_600);
        assert_eq!(t.max_receive_count(), 3);
        assert_eq!(t.dlq_logical_id(), "D");
    }

    #[test]
    fn refuses_an_intrinsic_where_a_literal_is_needed() {
        let text = MINIMAL.replace("VisibilityTimeout: 120", "VisibilityTimeout: !Ref Vis");
        let err = Template::parse(&text).unwrap_err();
        assert!(format!("{err:#}").contains("VisibilityTimeout"), "{err:#}");

        let text = MINIMAL.replace("AttributeName: expires_at", "AttributeName: !Ref Ttl");
        let err = Template::parse(&text).unwrap_err();
        assert!(format!("{err:#}").contains("AttributeName"), "{err:#}");
    }

    #[test]
    fn get_att_forms() {
        let v: Value = serde_yaml::from_str("!GetAtt Dlq.Arn").unwrap();
        assert_eq!(get_att_arn_target(&v), Some("Dlq"));
        let v: Value = serde_yaml::from_str("!GetAtt [Dlq, Arn]").unwrap();
        assert_eq!(get_att_arn_target(&v), Some("Dlq"));
        let v: Value = serde_yaml::from_str("!GetAtt Dlq.QueueName").unwrap();
        assert_eq!(get_att_arn_target(&v), None);
        let v: Value = serde_yaml::from_str("!Ref Dlq").unwrap();
        assert_eq!(get_att_arn_target(&v), None);
    }
}
