//! How a command finds its resources from the stack (`--stack`, default [`DEFAULT_STACK`]):
//! one `DescribeStacks` for the outputs template.yaml declares (`LedgerTableName`, `QueueUrl`,
//! `DeadLetterQueueUrl`, `PayloadBucketName`, `ConsumerEventSourceMapping`, `WebhookUrl`) and
//! the `WebhookSources` and `Destinations` parameters (the sources and the routes), and one
//! `ListStackResources` for its resources of one type (the console's alarms, a mapping). An
//! explicit flag or variable still wins over what the stack says ([`Lazy::pick`]), and the
//! stack is read only when a flag is missing.

use anyhow::{anyhow, Context as _};

/// The stack a command reads when none is named: template.yaml's name in samconfig.toml.
pub const DEFAULT_STACK: &str = "webhook-inbox";

/// The outputs a command may need.
pub const TABLE_OUTPUT: &str = "LedgerTableName";
pub const QUEUE_OUTPUT: &str = "QueueUrl";
pub const DLQ_OUTPUT: &str = "DeadLetterQueueUrl";
pub const BUCKET_OUTPUT: &str = "PayloadBucketName";
pub const MAPPING_OUTPUT: &str = "ConsumerEventSourceMapping";
pub const WEBHOOK_URL_OUTPUT: &str = "WebhookUrl";
/// The parameter whose keys are the sources.
pub const SOURCES_PARAMETER: &str = "WebhookSources";
/// The parameter holding the destinations (`WEBHOOK_DESTINATIONS`, docs/routing.md).
pub const DESTINATIONS_PARAMETER: &str = "Destinations";

/// What a stack holds that the commands use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackResources {
    pub name: String,
    pub table: Option<String>,
    pub queue_url: Option<String>,
    pub dlq_url: Option<String>,
    pub bucket: Option<String>,
    /// The consumer's event source mapping's UUID.
    pub mapping: Option<String>,
    /// The receiver's URL, `{source}` in it.
    pub webhook_url: Option<String>,
    /// The source names (`WebhookSources`' keys), sorted.
    pub sources: Vec<String>,
    /// `WebhookSources` and `Destinations` as the stack holds them.
    pub sources_json: Option<String>,
    pub destinations_json: Option<String>,
}

impl StackResources {
    /// The output's value, or an error naming the stack and the output.
    pub fn need<'a>(&self, value: &'a Option<String>, output: &str) -> anyhow::Result<&'a str> {
        value
            .as_deref()
            .ok_or_else(|| anyhow!("stack {} has no output {output}", self.name))
    }

    /// The `attempt_fields` of the stack's source `source` (left out of its payload hash,
    /// docs/design.md §2); none where the stack has no such source.
    pub fn attempt_fields(&self, source: &str) -> anyhow::Result<Vec<String>> {
        let Some(sources) = self.sources_json.as_deref() else {
            return Ok(Vec::new());
        };
        let specs = inbox::SourceSpecs::parse(sources)
            .with_context(|| format!("stack {}: {SOURCES_PARAMETER}", self.name))?;
        Ok(specs
            .get(source)
            .map(|s| s.attempt_fields.clone())
            .unwrap_or_default())
    }

    /// The stack's destinations, read as the consumer reads them (its sources, then
    /// `Destinations` checked against them); none where the stack declares none.
    pub fn routes(&self) -> anyhow::Result<inbox::route::Routes> {
        let destinations = self.destinations_json.as_deref().unwrap_or_default();
        if destinations.trim().is_empty() {
            return Ok(inbox::route::Routes::none());
        }
        let sources = self
            .sources_json
            .as_deref()
            .ok_or_else(|| anyhow!("stack {} has no parameter {SOURCES_PARAMETER}", self.name))?;
        let specs = inbox::SourceSpecs::parse(sources)
            .with_context(|| format!("stack {}: {SOURCES_PARAMETER}", self.name))?;
        inbox::route::Routes::parse(destinations, &specs)
            .with_context(|| format!("stack {}: {DESTINATIONS_PARAMETER}", self.name))
    }
}

/// The source names of a `WebhookSources` value (a JSON object), sorted; none where it is not
/// one (the functions refuse it anyway, and the console then lists nothing by source).
pub fn source_names(json: &str) -> Vec<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(json) else {
        return Vec::new();
    };
    map.keys().cloned().collect()
}

/// The stack's outputs and sources (`DescribeStacks`).
pub async fn resolve(
    config: &aws_config::SdkConfig,
    stack: &str,
) -> anyhow::Result<StackResources> {
    let cfn = aws_sdk_cloudformation::Client::new(config);
    let out = cfn
        .describe_stacks()
        .stack_name(stack)
        .send()
        .await
        .map_err(|e| {
            anyhow!(
                "DescribeStacks {stack}: {} (name the stack with --stack, or give the resource flags)",
                aws_sdk_cloudformation::error::DisplayErrorContext(e)
            )
        })?;
    let described = out
        .stacks()
        .first()
        .ok_or_else(|| anyhow!("no stack named {stack}"))?;
    let output = |name: &str| {
        described
            .outputs()
            .iter()
            .find(|o| o.output_key() == Some(name))
            .and_then(|o| o.output_value())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let parameter = |name: &str| {
        described
            .parameters()
            .iter()
            .find(|p| p.parameter_key() == Some(name))
            .and_then(|p| p.parameter_value())
            .map(str::to_owned)
    };
    let sources_json = parameter(SOURCES_PARAMETER);
    let sources = sources_json
        .as_deref()
        .map(source_names)
        .unwrap_or_default();
    Ok(StackResources {
        name: stack.to_owned(),
        table: output(TABLE_OUTPUT),
        queue_url: output(QUEUE_OUTPUT),
        dlq_url: output(DLQ_OUTPUT),
        bucket: output(BUCKET_OUTPUT),
        mapping: output(MAPPING_OUTPUT),
        webhook_url: output(WEBHOOK_URL_OUTPUT),
        sources,
        sources_json,
        destinations_json: parameter(DESTINATIONS_PARAMETER),
    })
}

/// The physical ids of the stack's resources of one type (`AWS::CloudWatch::Alarm`: the
/// alarm names; `AWS::Lambda::EventSourceMapping`: the mappings' UUIDs).
pub async fn physical_ids(
    config: &aws_config::SdkConfig,
    stack: &str,
    resource_type: &str,
) -> anyhow::Result<Vec<String>> {
    let cfn = aws_sdk_cloudformation::Client::new(config);
    let resources = cfn
        .list_stack_resources()
        .stack_name(stack)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .with_context(|| format!("ListStackResources {stack}"))?;
    Ok(resources
        .into_iter()
        .filter(|r| r.resource_type() == Some(resource_type))
        .filter_map(|r| r.physical_resource_id().map(str::to_owned))
        .collect())
}

/// A flag's value where given, else the stack's (resolved once, on first need).
pub struct Lazy<'a> {
    config: &'a aws_config::SdkConfig,
    stack: &'a str,
    resolved: Option<StackResources>,
}

impl<'a> Lazy<'a> {
    pub fn new(config: &'a aws_config::SdkConfig, stack: &'a str) -> Lazy<'a> {
        Lazy {
            config,
            stack,
            resolved: None,
        }
    }

    /// `given` where there is one, else the stack's output (`pick` selects it).
    pub async fn pick(
        &mut self,
        given: Option<&str>,
        output: &str,
        pick: impl FnOnce(&StackResources) -> &Option<String>,
    ) -> anyhow::Result<String> {
        if let Some(value) = given.filter(|v| !v.is_empty()) {
            return Ok(value.to_owned());
        }
        if self.resolved.is_none() {
            self.resolved = Some(resolve(self.config, self.stack).await?);
        }
        let resources = self
            .resolved
            .as_ref()
            .ok_or_else(|| anyhow!("unreachable"))?;
        Ok(resources.need(pick(resources), output)?.to_owned())
    }

    /// The `attempt_fields` of the stack's source ([`StackResources::attempt_fields`]); none
    /// where the stack cannot be read (every flag given, no stack deployed): a body whose hash
    /// leaves some out is then said not to match, never taken unchecked.
    pub async fn attempt_fields(&mut self, source: &str) -> anyhow::Result<Vec<String>> {
        if self.resolved.is_none() {
            match resolve(self.config, self.stack).await {
                Ok(resources) => self.resolved = Some(resources),
                Err(_) => return Ok(Vec::new()),
            }
        }
        match &self.resolved {
            Some(resources) => resources.attempt_fields(source),
            None => Ok(Vec::new()),
        }
    }

    /// The stack's destinations ([`StackResources::routes`]).
    pub async fn routes(&mut self) -> anyhow::Result<inbox::route::Routes> {
        if self.resolved.is_none() {
            self.resolved = Some(resolve(self.config, self.stack).await?);
        }
        self.resolved
            .as_ref()
            .ok_or_else(|| anyhow!("unreachable"))?
            .routes()
    }

    /// [`Lazy::routes`] for a command that shows each destination's state: where the stack
    /// cannot be read (only flags given, no such stack), none, and stderr says why.
    pub async fn routes_to_show(&mut self) -> inbox::route::Routes {
        self.routes().await.unwrap_or_else(|e| {
            eprintln!("destinations not shown: {e:#}");
            inbox::route::Routes::none()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_are_the_keys_sorted() {
        assert_eq!(
            source_names(r#"{"stripe":{},"github":{"scheme":"github"}}"#),
            ["github", "stripe"]
        );
        assert!(source_names("[1]").is_empty());
        assert!(source_names("not json").is_empty());
    }

    #[test]
    fn the_routes_are_read_against_the_stacks_sources() {
        let mut r = StackResources {
            name: "s".into(),
            sources_json: Some(
                r#"{"github": {"preset": "github", "signature": {"secrets": ["env:GH"]}}}"#.into(),
            ),
            ..StackResources::default()
        };
        assert!(r.routes().expect("no destinations").is_empty());
        r.destinations_json =
            Some(r#"{"ci": {"target": "https://ci.example/in", "sources": ["github"]}}"#.into());
        let routes = r.routes().expect("routes");
        assert_eq!(routes.destinations_for("github", Some("push")), ["ci"]);
        r.destinations_json =
            Some(r#"{"ci": {"target": "https://ci.example/in", "sources": ["stripe"]}}"#.into());
        let e = format!("{:#}", r.routes().unwrap_err());
        assert!(
            e.contains("stack s: Destinations") && e.contains("`stripe`"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_output_names_the_stack_and_the_output() {
        let r = StackResources {
            name: "s".into(),
            ..StackResources::default()
        };
        let e = r.need(&r.table, TABLE_OUTPUT).unwrap_err().to_string();
        assert_eq!(e, "stack s has no output LedgerTableName");
    }
}
