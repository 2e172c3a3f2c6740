//! `inbox-ops destroy` (`make destroy`) as an operator runs it, on moto: the translated template's
//! stack created as `sam deploy` creates it, its ledger table holding an item (deletion
//! protection on) and its payload bucket an object (versioned: two versions and a delete marker),
//! a sender's secret `<stack>/…`. The stack is deleted whatever is typed after; a wrong name
//! keeps the table and the bucket, the stack's name deletes both; the secret is listed, left.

use std::collections::HashMap;
use std::path::Path;

use aws_sdk_dynamodb::types::AttributeValue;
use devstack::cloudformation::{deploy_local_with, samconfig_path, Parameters};
use devstack::testkit::unique;

use super::init::{ops, temp_dir};
use super::Run;

/// The stack created on moto, with what it retains filled; (table, bucket, secret's name).
async fn deployed(dir: &Path, stack: &str) -> (String, String, String) {
    std::fs::write(
        dir.join("samconfig.toml"),
        format!("version = 0.1\n[default.deploy.parameters]\nstack_name = \"{stack}\"\nregion = \"us-east-1\"\n"),
    )
    .expect("samconfig.toml");
    devstack::moto::shared();
    let sdk = inbox_ops::aws::config()
        .await
        .into_builder()
        .region(aws_config::Region::new("us-east-1"))
        .build();
    let parameters = Parameters::from_samconfig(&samconfig_path()).expect("parameters");
    let created = deploy_local_with(&sdk, stack, &parameters)
        .await
        .unwrap_or_else(|e| panic!("the stack: {e:#}"));
    let table = created.outputs["LedgerTableName"].clone();
    let bucket = created.outputs["PayloadBucketName"].clone();

    let dynamo = aws_sdk_dynamodb::Client::new(&sdk);
    dynamo
        .update_table()
        .table_name(&table)
        .deletion_protection_enabled(true)
        .send()
        .await
        .expect("deletion protection on");
    dynamo
        .put_item()
        .table_name(&table)
        .set_item(Some(HashMap::from([
            ("pk".to_owned(), AttributeValue::S("github:1".to_owned())),
            (
                "status".to_owned(),
                AttributeValue::S("COMPLETED".to_owned()),
            ),
        ])))
        .send()
        .await
        .expect("an item");
    let s3 = inbox::bucket::s3_client(&sdk);
    s3.put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .expect("versioning");
    for body in ["one", "two"] {
        s3.put_object()
            .bucket(&bucket)
            .key("archive/github/2026/12/07/01/a")
            .body(body.as_bytes().to_vec().into())
            .send()
            .await
            .expect("an object");
    }
    s3.delete_object()
        .bucket(&bucket)
        .key("archive/github/2026/12/07/01/a")
        .send()
        .await
        .expect("a delete marker");
    let secret = format!("{stack}/github");
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&secret)
        .secret_string("a-sender-secret")
        .send()
        .await
        .expect("the sender's secret");
    (table, bucket, secret)
}

/// Whether the stack, the table and the bucket exist.
async fn exist(stack: &str, table: &str, bucket: &str) -> (bool, bool, bool) {
    let sdk = inbox_ops::aws::config()
        .await
        .into_builder()
        .region(aws_config::Region::new("us-east-1"))
        .build();
    let stack_exists = match aws_sdk_cloudformation::Client::new(&sdk)
        .describe_stacks()
        .stack_name(stack)
        .send()
        .await
    {
        Ok(out) => out.stacks().first().is_some_and(|s| {
            s.stack_status() != Some(&aws_sdk_cloudformation::types::StackStatus::DeleteComplete)
        }),
        Err(e) => {
            let text = aws_sdk_cloudformation::error::DisplayErrorContext(&e).to_string();
            assert!(text.contains("does not exist"), "{text}");
            false
        }
    };
    let table_exists = match aws_sdk_dynamodb::Client::new(&sdk)
        .describe_table()
        .table_name(table)
        .send()
        .await
    {
        Ok(_) => true,
        Err(e) => {
            assert!(
                e.as_service_error()
                    .is_some_and(aws_sdk_dynamodb::operation::describe_table::DescribeTableError::is_resource_not_found_exception),
                "{}",
                aws_sdk_dynamodb::error::DisplayErrorContext(&e)
            );
            false
        }
    };
    let bucket_exists = match inbox::bucket::s3_client(&sdk)
        .head_bucket()
        .bucket(bucket)
        .send()
        .await
    {
        Ok(_) => true,
        Err(e) => {
            assert!(
                e.as_service_error()
                    .is_some_and(aws_sdk_s3::operation::head_bucket::HeadBucketError::is_not_found),
                "{}",
                aws_sdk_s3::error::DisplayErrorContext(&e)
            );
            false
        }
    };
    (stack_exists, table_exists, bucket_exists)
}

/// Runs `destroy` in `dir` with `typed` on its standard input.
async fn destroy(dir: &Path, typed: &str) -> Run {
    ops(dir, &["destroy"], typed).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_deletes_the_stack_and_what_it_retains_only_when_the_name_is_typed() {
    // A wrong name: the stack goes, the table and the bucket stay.
    let dir = temp_dir("destroy-keep");
    let stack = unique("destroy-keep");
    let (table, bucket, secret) = deployed(&dir, &stack).await;
    assert_eq!(exist(&stack, &table, &bucket).await, (true, true, true));
    let run = destroy(&dir, "y\nnot-the-name\n").await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert!(
        run.stdout
            .contains(&format!("The stack {stack} in us-east-1 will be deleted")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("the ledger table   {table}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("the payload bucket {bucket}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("Kept: {table} and {bucket}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("  {secret}\n")),
        "{}",
        run.stdout
    );
    assert_eq!(exist(&stack, &table, &bucket).await, (false, true, true));

    // The stack's name: both go too, the versioned object's every version first.
    let dir = temp_dir("destroy-all");
    let stack = unique("destroy-all");
    let (table, bucket, secret) = deployed(&dir, &stack).await;
    let run = destroy(&dir, &format!("y\n{stack}\n")).await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert!(
        run.stdout
            .contains(&format!("==> the ledger table {table}")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("    3 object versions and delete markers removed"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("  {secret}\n")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("--force-delete-without-recovery"),
        "{}",
        run.stdout
    );
    assert_eq!(exist(&stack, &table, &bucket).await, (false, false, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_answered_no_deletes_nothing_and_a_missing_stack_is_refused() {
    let dir = temp_dir("destroy-no");
    let stack = unique("destroy-no");
    let (table, bucket, _) = deployed(&dir, &stack).await;
    let run = destroy(&dir, "n\n").await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert!(run.stdout.contains("Nothing deleted."), "{}", run.stdout);
    assert_eq!(exist(&stack, &table, &bucket).await, (true, true, true));

    // --yes-delete-retained naming another stack: refused before anything is deleted.
    let run = ops(
        &dir,
        &["destroy", "--yes", "--yes-delete-retained", "other"],
        "",
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert!(
        run.stderr.contains(&format!(
            "destroy: --yes-delete-retained names other, but the stack is {stack}: nothing deleted"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(exist(&stack, &table, &bucket).await, (true, true, true));

    // --yes and --yes-delete-retained for scripts: no question asked.
    let run = ops(
        &dir,
        &["destroy", "--yes", "--yes-delete-retained", &stack],
        "",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.text());
    assert_eq!(exist(&stack, &table, &bucket).await, (false, false, false));

    let run = destroy(&dir, "").await;
    assert_eq!(run.code, 1, "{}", run.text());
    assert!(
        run.stderr.contains(&format!(
            "destroy: no stack {stack} in us-east-1: nothing to delete"
        )),
        "{}",
        run.stderr
    );
}
