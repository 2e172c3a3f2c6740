//! `inbox-ops preflight [--template FILE] [--config FILE] [--stack NAME]`: what a first
//! `sam deploy` would get wrong, found before CloudFormation starts. It works out the parameter
//! values that `sam deploy` with that samconfig.toml would pass ([`parameters`]), then refuses,
//! listing every problem, each naming its parameter:
//!
//! - a value holding a placeholder (`REGION`, `ACCOUNT_ID`, `ACCOUNT`, an example.com/.org/.net
//!   host, `replace-me`, the docs' `whsec_…`), an `https://` URL (`ForwardUrl`, or a target in
//!   `Destinations`) whose host is a reserved placeholder name (RFC 2606, RFC 6761:
//!   `.example`, `.test`, `.invalid`, `.localhost`, example.com/.net/.org), a `ForwardUrl` that
//!   is missing or not `https://` (empty is no default destination: [`destinations`] decides),
//!   a stack name CloudFormation refuses ([`values`]);
//! - no deploy region, or an empty one (samconfig.toml's `region`, else `AWS_REGION` /
//!   `AWS_DEFAULT_REGION`, else the AWS config), and an ARN with an empty region field in a
//!   `*Arns`/`*Arn` parameter ([`values::check_arn_regions`]);
//! - `WebhookSources` that the functions would refuse at start-up: the library's parser, its
//!   retention check against the template's queues, and `PayloadRetentionDays` against the
//!   same chain;
//! - each referenced secret that is missing, an `env:` reference, invalid for its scheme, or
//!   outside what the receiver's role may read ([`secrets`], [`access`]);
//! - `Destinations` as the consumer reads it: a source whose events would all go nowhere, an
//!   ARN target missing from its `Destination*Arns`, a signing secret missing, invalid or
//!   outside `DestinationSecretArns` ([`destinations`]). Warned of, the deploy going ahead:
//!   events that would go nowhere (no `ForwardUrl`), a destination declared unsigned, a bus
//!   with no rule for a source routed there.
//!
//! Passed checks are printed one a line on stdout (exit 0); the problems on stderr (exit 1).
//! No secret's value is printed or logged.

pub mod access;
pub mod destinations;
pub mod parameters;
pub mod report;
pub mod secrets;
pub mod values;

use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

use inbox::config::env::check_payload_retention;
use inbox::config::retention_chain_seconds;
use inbox::SourceSpecs;

use self::access::Access;
use self::parameters::{Parameters, Samconfig, DEFAULT_STACK};
use self::report::Report;
use self::secrets::SecretChecks;
use crate::audit::SOURCES_PARAMETER;
use stack_config::Template;

/// `preflight`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct PreflightArgs {
    /// The SAM template.
    #[arg(long, value_name = "FILE", default_value = "template.yaml")]
    pub template: PathBuf,
    /// The SAM CLI configuration `sam deploy` reads (its `default` environment).
    #[arg(long, value_name = "FILE", default_value = "samconfig.toml")]
    pub config: PathBuf,
    /// The stack's name [default: samconfig's stack_name, else webhook-inbox].
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub stack: Option<String>,
}

/// The template parameter of the payload bucket's lifecycle, in days.
const PAYLOAD_RETENTION_PARAMETER: &str = "PayloadRetentionDays";

/// Why a deploy with no region (or an empty one) is refused.
const NO_REGION: &str = "no AWS region, or an empty one (samconfig.toml's region, else AWS_REGION or AWS_DEFAULT_REGION, else the AWS config's): sam deploy needs one, the secrets cannot be checked, and a policy written with an empty region matches nothing; set region in samconfig.toml";

/// Runs the checks and prints the outcome: exit code 0 when the deploy may go ahead, 1 with
/// the list of problems otherwise. An unreadable template or samconfig is an error.
pub async fn run(args: &PreflightArgs) -> anyhow::Result<ExitCode> {
    let template = Template::load(&args.template)?;
    let samconfig = Samconfig::load(&args.config)?;
    let stack = args
        .stack
        .clone()
        .or_else(|| samconfig.stack_name.clone())
        .unwrap_or_else(|| DEFAULT_STACK.to_owned());
    let sdk = sdk_config(samconfig.region.as_deref()).await;
    let region = sdk.region().map(ToString::to_string);
    let report = check(&template, &samconfig, &stack, &sdk, region.as_deref()).await;
    let heading = format!(
        "preflight: stack {stack}, region {}, {} with {}",
        region.as_deref().unwrap_or("(none)"),
        args.config.display(),
        args.template.display()
    );
    if report.is_ready() {
        print!("{}", report.passed_text(&heading));
        Ok(ExitCode::SUCCESS)
    } else {
        eprint!("{}", report.problems_text(&heading));
        Ok(ExitCode::FAILURE)
    }
}

/// The operator's SDK configuration ([`crate::aws::config`]), in samconfig's `region` when it
/// names one: the region `sam deploy` deploys to, where the receiver will read its secrets.
async fn sdk_config(region: Option<&str>) -> aws_config::SdkConfig {
    let sdk = crate::aws::config().await;
    match region {
        Some(region) => sdk
            .to_builder()
            .region(aws_config::Region::new(region.to_owned()))
            .build(),
        None => sdk,
    }
}

/// Every check, in order; the report of all of them.
pub async fn check(
    template: &Template,
    samconfig: &Samconfig,
    stack: &str,
    sdk: &aws_config::SdkConfig,
    region: Option<&str>,
) -> Report {
    let mut report = Report::default();
    values::check_stack_name(stack, &mut report);
    let parameters = Parameters::resolve(template, samconfig, &mut report);
    values::check_placeholders(&parameters, &mut report);
    values::check_forward_url(&parameters, &mut report);
    values::check_arn_regions(&parameters, &mut report);
    let region = region.map(str::trim).filter(|r| !r.is_empty());
    if region.is_none() {
        report.refuse("region", NO_REGION);
    }
    let Some(specs) = check_sources(template, &parameters, &mut report) else {
        return report;
    };
    let routes = destinations::routes(&parameters, &specs, &mut report);
    if let Some(routes) = &routes {
        destinations::check_coverage(routes, &specs, &mut report);
        destinations::check_arns(routes, &parameters, &mut report);
    }
    let Some(region) = region else {
        return report;
    };
    if let Some(routes) = &routes {
        destinations::check_signing(routes, &parameters, stack, region, sdk, &mut report).await;
        destinations::check_buses(routes, sdk, &mut report).await;
    }
    let access = Access::new(
        parameters.get("SecretArns").unwrap_or_default(),
        stack,
        region,
    );
    for entry in access.malformed() {
        report.refuse(
            "SecretArns",
            format!(
                "entry {entry:?} is neither an ARN nor *: IAM would refuse the receiver's policy"
            ),
        );
    }
    let sources_json = parameters.get(SOURCES_PARAMETER).unwrap_or_default();
    SecretChecks::new(sdk, &access, region)
        .check(&specs, sources_json, &mut report)
        .await;
    report
}

/// `WebhookSources` as the functions read it at start-up: the library's parser, then its
/// retention rule against the template's queues (the chain the functions compute from
/// `QUEUE_RETENTION_SECONDS` and `DLQ_RETENTION_SECONDS`), and the payload bucket's
/// `PayloadRetentionDays` against the same chain. The specs when they parse.
fn check_sources(
    template: &Template,
    parameters: &Parameters,
    report: &mut Report,
) -> Option<SourceSpecs> {
    // Missing: already refused as a parameter with no value.
    let text = parameters.get(SOURCES_PARAMETER)?;
    let specs = match SourceSpecs::parse(text) {
        Ok(specs) => specs,
        Err(e) => {
            report.refuse(SOURCES_PARAMETER, e.to_string());
            return None;
        }
    };
    let chain = retention_chain_seconds(
        u64::from(template.queue_retention_seconds()),
        Some(u64::from(template.dlq_retention_seconds())),
    );
    let before = report.problem_count();
    if let Err(e) = specs.check_retention(chain) {
        report.refuse(SOURCES_PARAMETER, e.to_string());
    }
    if let Some(days) = parameters.get(PAYLOAD_RETENTION_PARAMETER) {
        match days.trim().parse::<u64>() {
            Ok(days) => {
                if let Err(e) = check_payload_retention(days, chain) {
                    report.refuse(PAYLOAD_RETENTION_PARAMETER, e.to_string());
                }
            }
            Err(_) => report.refuse(
                PAYLOAD_RETENTION_PARAMETER,
                format!("{days:?} is not a whole number of days"),
            ),
        }
    }
    if report.problem_count() == before {
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        report.pass(format!(
            "{SOURCES_PARAMETER} parses: {} source{} ({}); every effectively-once source remembers its keys past the {chain} s retention chain",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
    }
    Some(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The problems of `check` on the repository's template and `samconfig` with `region`
    /// as the SDK resolved it (no AWS call is made: the region is refused first).
    async fn problems(samconfig: &str, region: Option<&str>) -> Vec<String> {
        let template = Template::load(&stack_config::template_path()).unwrap();
        let samconfig = Samconfig::parse(samconfig).unwrap();
        let sdk = aws_config::SdkConfig::builder().build();
        check(&template, &samconfig, DEFAULT_STACK, &sdk, region)
            .await
            .problems()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const REAL: &str = "[default.deploy.parameters]\nparameter_overrides = [\"ForwardUrl=https://records.acme.io/x\"]\n";

    #[tokio::test]
    async fn a_missing_or_empty_deploy_region_is_refused() {
        for region in [None, Some(""), Some("  ")] {
            let problems = problems(REAL, region).await;
            assert_eq!(problems.len(), 1, "{region:?}: {problems:#?}");
            assert!(
                problems[0].starts_with("region: no AWS region, or an empty one (samconfig.toml's region, else AWS_REGION or AWS_DEFAULT_REGION, else the AWS config's)"),
                "{}",
                problems[0]
            );
        }
    }

    #[tokio::test]
    async fn an_empty_region_in_samconfig_is_named_as_such() {
        let text = format!("[default.global.parameters]\nregion = \"\"\n{REAL}");
        let problems = problems(&text, None).await;
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].starts_with(
                "region: empty in samconfig.toml (written from an unset $AWS_REGION?)"
            ),
            "{problems:#?}"
        );
        assert!(
            problems[1].starts_with("region: no AWS region"),
            "{problems:#?}"
        );
    }
}
