//! `inbox-ops destroy` (`make destroy`): deletes the stack, then, once the operator types the
//! stack's name (or `--yes-delete-retained <stack>`), what the stack retains by design
//! (template.yaml's `DeletionPolicy: Retain`): the ledger table, its deletion protection turned
//! off first, and the payload bucket, emptied of every object version first. Lists the senders'
//! secrets left (`<stack>/…`, not the stack's) with how to delete them.
//!
//! The stack and the region are read as `inbox-ops init` writes them and the preflight reads them
//! (samconfig.toml's `stack_name` and `region`, `--stack` first; the AWS config's region where
//! samconfig names none). The retained resources' names are read from the stack (its outputs,
//! else its resources by logical id) before it is deleted; the deletion is polled
//! (`DescribeStacks` by the stack's id) until the stack is gone or its deletion failed.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_cloudformation::error::DisplayErrorContext;
use aws_sdk_cloudformation::types::StackStatus;
use aws_sdk_s3::error::ProvideErrorMetadata as _;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;

use crate::stack::{BUCKET_OUTPUT, DEFAULT_STACK, TABLE_OUTPUT};
use stack_config::Samconfig;

/// The retained resources' logical ids in template.yaml, read where an output is missing.
const TABLE_RESOURCE: &str = "LedgerTable";
const BUCKET_RESOURCE: &str = "PayloadBucket";

/// `destroy`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct DestroyArgs {
    /// The SAM CLI configuration the stack was deployed with (its `stack_name` and `region`).
    #[arg(long, value_name = "FILE", default_value = "samconfig.toml")]
    pub config: PathBuf,
    /// The stack's name [default: samconfig's stack_name, else webhook-inbox].
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub stack: Option<String>,
    /// Delete the stack without asking.
    #[arg(long)]
    pub yes: bool,
    /// For scripts: the stack's name, as it would be typed at the prompt, to delete the
    /// retained ledger table and payload bucket without asking.
    #[arg(long, value_name = "STACK", value_parser = NonEmptyStringValueParser::new())]
    pub yes_delete_retained: Option<String>,
    /// Seconds to wait for the stack's deletion (polled).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub wait: u64,
}

/// What the stack retains, named before it is deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retained {
    pub table: Option<String>,
    pub bucket: Option<String>,
}

/// Runs `destroy` on the terminal: questions on stderr, answers from stdin, the rest on stdout.
pub async fn run(args: &DestroyArgs) -> anyhow::Result<ExitCode> {
    let samconfig = if args.config.exists() {
        Samconfig::load(&args.config)?
    } else {
        Samconfig::default()
    };
    let stack = args
        .stack
        .clone()
        .or_else(|| samconfig.stack_name.clone())
        .unwrap_or_else(|| DEFAULT_STACK.to_owned());
    let mut sdk = crate::aws::config().await;
    if let Some(region) = samconfig.region.as_deref().filter(|r| !r.trim().is_empty()) {
        sdk = sdk
            .into_builder()
            .region(aws_config::Region::new(region.to_owned()))
            .build();
    }
    let region = sdk
        .region()
        .map(ToString::to_string)
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| {
            anyhow!("no region: samconfig.toml's region, AWS_REGION or the AWS config's")
        })?;
    let stdin = std::io::stdin();
    destroy(
        &sdk,
        &stack,
        &region,
        args,
        &mut stdin.lock(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
    .await
}

/// The whole teardown of `stack`, answers read from `input`, prompts written to `prompt`.
pub async fn destroy(
    sdk: &aws_config::SdkConfig,
    stack: &str,
    region: &str,
    args: &DestroyArgs,
    input: &mut impl BufRead,
    out: &mut impl Write,
    prompt: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    if let Some(named) = args.yes_delete_retained.as_deref().filter(|n| *n != stack) {
        bail!("--yes-delete-retained names {named}, but the stack is {stack}: nothing deleted");
    }
    let cfn = aws_sdk_cloudformation::Client::new(sdk);
    let Some(stack_id) = stack_id(&cfn, stack).await? else {
        bail!("no stack {stack} in {region}: nothing to delete (retained resources of an earlier stack: docs/deploying.md, Teardown)");
    };
    let retained = retained(sdk, stack).await?;
    writeln!(out, "The stack {stack} in {region} will be deleted, with every resource it created except, by design (DeletionPolicy: Retain):")?;
    describe_retained(out, &retained)?;
    if !args.yes {
        let answer = ask(input, prompt, &format!("Delete the stack {stack}? [y/N] "))?;
        if !matches!(answer.as_str(), "y" | "Y" | "yes") {
            writeln!(out, "Nothing deleted.")?;
            return Ok(ExitCode::FAILURE);
        }
    }
    writeln!(out, "==> deleting the stack {stack}")?;
    delete_stack(&cfn, stack, &stack_id, Duration::from_secs(args.wait)).await?;
    writeln!(out, "The stack {stack} is gone.")?;

    if retained.table.is_some() || retained.bucket.is_some() {
        writeln!(out, "\nIt retained, by design:")?;
        describe_retained(out, &retained)?;
        writeln!(out, "A new stack makes a new, empty table and bucket.")?;
        let confirmed = match &args.yes_delete_retained {
            Some(name) => name == stack,
            None => {
                let question = format!("Type the stack's name ({stack}) to delete both now, anything else to keep them: ");
                ask(input, prompt, &question)? == stack
            }
        };
        if confirmed {
            if let Some(table) = &retained.table {
                writeln!(out, "==> the ledger table {table}")?;
                delete_table(sdk, table).await?;
            }
            if let Some(bucket) = &retained.bucket {
                writeln!(out, "==> the payload bucket {bucket}")?;
                let removed = delete_bucket(sdk, bucket).await?;
                writeln!(
                    out,
                    "    {removed} object versions and delete markers removed"
                )?;
            }
        } else {
            writeln!(
                out,
                "Kept: {} (docs/deploying.md, Teardown, removes them later).",
                names(&retained)
            )?;
        }
    }
    list_secrets(sdk, stack, region, out).await?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the retained resources, one a line.
fn describe_retained(out: &mut impl Write, retained: &Retained) -> std::io::Result<()> {
    if let Some(table) = &retained.table {
        writeln!(out, "  the ledger table   {table}   (every key: a sender's retry of an event already done would run it again)")?;
    }
    if let Some(bucket) = &retained.bucket {
        writeln!(
            out,
            "  the payload bucket {bucket}   (the archive replays read: every body)"
        )?;
    }
    if retained.table.is_none() && retained.bucket.is_none() {
        writeln!(out, "  (none found in the stack)")?;
    }
    Ok(())
}

fn names(retained: &Retained) -> String {
    [&retained.table, &retained.bucket]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Writes `question` to `prompt`, reads one line; empty at the end of the input.
fn ask(
    input: &mut impl BufRead,
    prompt: &mut impl Write,
    question: &str,
) -> anyhow::Result<String> {
    write!(prompt, "{question}")?;
    prompt.flush()?;
    let mut line = String::new();
    input.read_line(&mut line).context("reading the answer")?;
    Ok(line.trim().to_owned())
}

/// Whether DescribeStacks' error says the stack does not exist.
fn is_missing<E, R>(e: &aws_sdk_cloudformation::error::SdkError<E, R>) -> bool
where
    E: aws_sdk_cloudformation::error::ProvideErrorMetadata,
{
    e.as_service_error()
        .and_then(aws_sdk_cloudformation::error::ProvideErrorMetadata::message)
        .is_some_and(|m| m.contains("does not exist"))
}

/// The stack's id, `None` when there is no such stack (or only a deleted one).
async fn stack_id(
    cfn: &aws_sdk_cloudformation::Client,
    stack: &str,
) -> anyhow::Result<Option<String>> {
    match cfn.describe_stacks().stack_name(stack).send().await {
        Ok(out) => Ok(out
            .stacks()
            .first()
            .filter(|s| s.stack_status() != Some(&StackStatus::DeleteComplete))
            .map(|s| s.stack_id().unwrap_or(stack).to_owned())),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(anyhow!(
            "DescribeStacks {stack}: {}",
            DisplayErrorContext(e)
        )),
    }
}

/// The retained table and bucket: the stack's outputs, else its resources by logical id.
pub async fn retained(sdk: &aws_config::SdkConfig, stack: &str) -> anyhow::Result<Retained> {
    let resolved = crate::stack::resolve(sdk, stack).await?;
    let mut found = Retained {
        table: resolved.table,
        bucket: resolved.bucket,
    };
    if found.table.is_none() || found.bucket.is_none() {
        let resources = aws_sdk_cloudformation::Client::new(sdk)
            .list_stack_resources()
            .stack_name(stack)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .with_context(|| {
                format!("ListStackResources {stack} (no output {TABLE_OUTPUT} or {BUCKET_OUTPUT})")
            })?;
        let physical = |logical: &str| {
            resources
                .iter()
                .find(|r| r.logical_resource_id() == Some(logical))
                .and_then(|r| r.physical_resource_id())
                .filter(|id| !id.is_empty())
                .map(str::to_owned)
        };
        found.table = found.table.or_else(|| physical(TABLE_RESOURCE));
        found.bucket = found.bucket.or_else(|| physical(BUCKET_RESOURCE));
    }
    Ok(found)
}

/// DeleteStack, then DescribeStacks (by id) polled until the stack is gone; an error when its
/// deletion failed or took longer than `wait`.
async fn delete_stack(
    cfn: &aws_sdk_cloudformation::Client,
    stack: &str,
    stack_id: &str,
    wait: Duration,
) -> anyhow::Result<()> {
    cfn.delete_stack()
        .stack_name(stack_id)
        .send()
        .await
        .map_err(|e| anyhow!("DeleteStack {stack}: {}", DisplayErrorContext(e)))?;
    let started = Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        let described = match cfn.describe_stacks().stack_name(stack_id).send().await {
            Ok(out) => out.stacks().first().cloned(),
            Err(e) if is_missing(&e) => None,
            Err(e) => bail!("DescribeStacks {stack}: {}", DisplayErrorContext(e)),
        };
        let Some(described) = described else {
            return Ok(());
        };
        match described.stack_status() {
            Some(StackStatus::DeleteComplete) => return Ok(()),
            Some(StackStatus::DeleteFailed) => bail!(
                "the stack {stack}'s deletion failed ({}): nothing else deleted; see its events in the CloudFormation console",
                described.stack_status_reason().unwrap_or("no reason given")
            ),
            _ => {}
        }
        if started.elapsed() > wait {
            bail!(
                "the stack {stack} is still {} after {} s: nothing else deleted; run destroy again once it is gone",
                described.stack_status().map_or("in deletion", StackStatus::as_str),
                wait.as_secs()
            );
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(10));
    }
}

/// The ledger table: deletion protection off, DeleteTable, DescribeTable polled until it is
/// gone. A table already gone is no error.
async fn delete_table(sdk: &aws_config::SdkConfig, table: &str) -> anyhow::Result<()> {
    let dynamo = crate::aws::dynamo(sdk);
    match dynamo
        .update_table()
        .table_name(table)
        .deletion_protection_enabled(false)
        .send()
        .await
    {
        Ok(_) => {}
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            return Ok(());
        }
        Err(e) => bail!(
            "UpdateTable {table} (deletion protection off): {}",
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        ),
    }
    match dynamo.delete_table().table_name(table).send().await {
        Ok(_) => {}
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) => {}
        Err(e) => bail!(
            "DeleteTable {table}: {}",
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        ),
    }
    let mut pause = Duration::from_millis(250);
    loop {
        match dynamo.describe_table().table_name(table).send().await {
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                return Ok(());
            }
            Err(e) => bail!(
                "DescribeTable {table}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            ),
            Ok(_) => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(10));
    }
}

/// The payload bucket: every object version and delete marker deleted (a page at a time), then
/// the bucket. How many were removed; a bucket already gone is no error.
async fn delete_bucket(sdk: &aws_config::SdkConfig, bucket: &str) -> anyhow::Result<usize> {
    use aws_sdk_s3::types::{Delete, ObjectIdentifier};
    let s3 = inbox::bucket::s3_client(sdk);
    let mut removed = 0;
    loop {
        let page = match s3.list_object_versions().bucket(bucket).send().await {
            Ok(page) => page,
            Err(e) if e.code() == Some("NoSuchBucket") => return Ok(removed),
            Err(e) => bail!(
                "ListObjectVersions {bucket}: {}",
                aws_sdk_s3::error::DisplayErrorContext(e)
            ),
        };
        let versions = page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            );
        let objects = versions
            .filter_map(|(key, version)| {
                ObjectIdentifier::builder()
                    .set_key(key.map(str::to_owned))
                    .set_version_id(version.map(str::to_owned))
                    .build()
                    .ok()
            })
            .collect::<Vec<_>>();
        if objects.is_empty() {
            break;
        }
        let count = objects.len();
        let delete = Delete::builder()
            .set_objects(Some(objects))
            .quiet(true)
            .build()
            .context("the DeleteObjects request")?;
        let answer = s3
            .delete_objects()
            .bucket(bucket)
            .delete(delete)
            .send()
            .await
            .map_err(|e| {
                anyhow!(
                    "DeleteObjects {bucket}: {}",
                    aws_sdk_s3::error::DisplayErrorContext(e)
                )
            })?;
        if let Some(failed) = answer.errors().first() {
            bail!(
                "DeleteObjects {bucket}: {} of {count} not deleted, the first {}: {}",
                answer.errors().len(),
                failed.key().unwrap_or("?"),
                failed.message().unwrap_or("no message")
            );
        }
        removed += count;
    }
    s3.delete_bucket()
        .bucket(bucket)
        .send()
        .await
        .map_err(|e| {
            anyhow!(
                "DeleteBucket {bucket}: {}",
                aws_sdk_s3::error::DisplayErrorContext(e)
            )
        })?;
    Ok(removed)
}

/// The secrets named `<stack>/…`: the senders', not the stack's, so left in place.
pub async fn secrets_left(sdk: &aws_config::SdkConfig, stack: &str) -> anyhow::Result<Vec<String>> {
    use aws_sdk_secretsmanager::types::{Filter, FilterNameStringType};
    let prefix = format!("{stack}/");
    let pages = aws_sdk_secretsmanager::Client::new(sdk)
        .list_secrets()
        .filters(
            Filter::builder()
                .key(FilterNameStringType::Name)
                .values(prefix.clone())
                .build(),
        )
        .into_paginator()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .map_err(|e| {
            anyhow!(
                "ListSecrets {prefix}: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(e)
            )
        })?;
    let mut names: Vec<String> = pages
        .iter()
        .flat_map(|page| page.secret_list())
        .filter_map(|s| s.name())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_owned)
        .collect();
    names.sort();
    Ok(names)
}

async fn list_secrets(
    sdk: &aws_config::SdkConfig,
    stack: &str,
    region: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let names = secrets_left(sdk, stack).await?;
    if names.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nNot the stack's, so left: the senders' secrets")?;
    for name in &names {
        writeln!(out, "  {name}")?;
    }
    writeln!(
        out,
        "To delete one at once, its name free again (the console's Delete keeps it 7 to 30 days):"
    )?;
    writeln!(out, "  aws secretsmanager delete-secret --region {region} --force-delete-without-recovery --secret-id <name>")?;
    Ok(())
}
