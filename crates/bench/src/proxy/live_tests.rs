//! The classifier and the bill's lines against the SDKs' own requests: the Rust SDK (S3 with
//! the functions' own client configuration, DynamoDB, SQS, Secrets Manager) and boto3
//! (Firehose, EventBridge: no Rust client in the workspace) on moto, through the counting
//! proxy, every call classified as the SDK's operation and priced; then what the proxy must
//! refuse.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};

use crate::classify::{Op, Service};
use crate::options::Latency;
use crate::price::Line;
use crate::proxy::{Calls, Proxy};

fn no_latency() -> Latency {
    Latency {
        dynamodb: Duration::ZERO,
        sqs: Duration::ZERO,
        s3: Duration::ZERO,
        other: Duration::ZERO,
    }
}

/// The count of `service`'s `name` calls (any key prefix).
fn count(calls: &Calls, service: Service, name: &str) -> u64 {
    calls
        .iter()
        .filter(|(op, _)| op.service == service && op.name == name)
        .map(|(_, m)| m.count)
        .sum()
}

/// S3 as the functions' client sends it (inbox::bucket::s3_config, path style at an
/// endpoint): the object and bucket calls.
async fn s3_calls(sdk: &aws_config::SdkConfig, endpoint: &str) -> aws_sdk_s3::Client {
    let direct = inbox::bucket::s3_client(sdk);
    direct
        .create_bucket()
        .bucket("classify")
        .send()
        .await
        .expect("bucket");
    let s3 =
        aws_sdk_s3::Client::from_conf(inbox::bucket::s3_config(sdk).endpoint_url(endpoint).build());
    let put = |key: &'static str| {
        s3.put_object()
            .bucket("classify")
            .key(key)
            .body(vec![b'x'; 3000].into())
            .send()
    };
    put("archive/acme/2026/12/04/22/abc").await.expect("put");
    put("payloads/acme/k/sha").await.expect("put");
    s3.get_object()
        .bucket("classify")
        .key("payloads/acme/k/sha")
        .send()
        .await
        .expect("get");
    s3.head_object()
        .bucket("classify")
        .key("payloads/acme/k/sha")
        .send()
        .await
        .expect("head");
    s3.list_objects_v2()
        .bucket("classify")
        .prefix("archive/")
        .send()
        .await
        .expect("list");
    s3.copy_object()
        .bucket("classify")
        .key("copy/of")
        .copy_source("classify/payloads/acme/k/sha")
        .send()
        .await
        .expect("copy");
    s3.delete_object()
        .bucket("classify")
        .key("copy/of")
        .send()
        .await
        .expect("delete");
    s3.head_bucket()
        .bucket("classify")
        .send()
        .await
        .expect("head bucket");
    s3.list_buckets().send().await.expect("buckets");
    s3
}

/// S3's multipart calls: an upload completed, another aborted.
async fn s3_multipart_calls(s3: &aws_sdk_s3::Client) {
    let upload = s3
        .create_multipart_upload()
        .bucket("classify")
        .key("big/one")
        .send()
        .await
        .expect("create upload");
    let id = upload.upload_id().expect("upload id");
    let part = s3
        .upload_part()
        .bucket("classify")
        .key("big/one")
        .upload_id(id)
        .part_number(1)
        .body(vec![b'y'; 100].into())
        .send()
        .await
        .expect("part");
    // moto answers a `ListPartsResponse` root the SDK does not decode: the request is what
    // is tested here, not the answer.
    let _ = s3
        .list_parts()
        .bucket("classify")
        .key("big/one")
        .upload_id(id)
        .send()
        .await;
    s3.list_multipart_uploads()
        .bucket("classify")
        .send()
        .await
        .expect("uploads");
    let done = aws_sdk_s3::types::CompletedMultipartUpload::builder()
        .parts(
            aws_sdk_s3::types::CompletedPart::builder()
                .part_number(1)
                .set_e_tag(part.e_tag().map(str::to_owned))
                .build(),
        )
        .build();
    s3.complete_multipart_upload()
        .bucket("classify")
        .key("big/one")
        .upload_id(id)
        .multipart_upload(done)
        .send()
        .await
        .expect("complete");
    let other = s3
        .create_multipart_upload()
        .bucket("classify")
        .key("big/two")
        .send()
        .await
        .expect("create upload");
    s3.abort_multipart_upload()
        .bucket("classify")
        .key("big/two")
        .upload_id(other.upload_id().expect("upload id"))
        .send()
        .await
        .expect("abort");
}

/// DynamoDB through the proxy (its table made directly).
async fn dynamodb_calls(sdk: &aws_config::SdkConfig, endpoint: &str) {
    let ddb = aws_sdk_dynamodb::Client::new(sdk);
    ddb.create_table()
        .table_name("classify")
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("attr"),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .expect("key"),
        )
        .send()
        .await
        .expect("table");
    let via = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(sdk)
            .endpoint_url(endpoint)
            .build(),
    );
    let pk = AttributeValue::S("k".into());
    via.put_item()
        .table_name("classify")
        .item("pk", pk.clone())
        .send()
        .await
        .expect("put");
    via.get_item()
        .table_name("classify")
        .key("pk", pk.clone())
        .consistent_read(true)
        .send()
        .await
        .expect("get");
    via.get_item()
        .table_name("classify")
        .key("pk", pk.clone())
        .send()
        .await
        .expect("get");
    via.delete_item()
        .table_name("classify")
        .key("pk", pk)
        .send()
        .await
        .expect("delete");
}

/// SQS and Secrets Manager through the proxy (the queue and the secret made directly).
async fn sqs_and_secret_calls(sdk: &aws_config::SdkConfig, endpoint: &str) {
    let queue = aws_sdk_sqs::Client::new(sdk)
        .create_queue()
        .queue_name("classify.fifo")
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::ContentBasedDeduplication,
            "true",
        )
        .send()
        .await
        .expect("queue");
    let url = queue.queue_url().expect("url");
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(sdk)
            .endpoint_url(endpoint)
            .build(),
    );
    sqs.send_message()
        .queue_url(url)
        .message_group_id("g")
        .message_body("x".repeat(70_000))
        .send()
        .await
        .expect("send");
    let got = sqs
        .receive_message()
        .queue_url(url)
        .send()
        .await
        .expect("receive");
    let handle = got.messages()[0]
        .receipt_handle()
        .expect("handle")
        .to_owned();
    sqs.delete_message()
        .queue_url(url)
        .receipt_handle(handle)
        .send()
        .await
        .expect("delete");

    aws_sdk_secretsmanager::Client::new(sdk)
        .create_secret()
        .name("classify/s")
        .secret_string("v")
        .send()
        .await
        .expect("secret");
    let sm = aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(sdk)
            .endpoint_url(endpoint)
            .build(),
    );
    sm.get_secret_value()
        .secret_id("classify/s")
        .send()
        .await
        .expect("get secret");
}

/// Firehose and EventBridge through the proxy with boto3 (the stream made on moto directly):
/// a batch of a 1-byte and a 6,000-byte record (5 KB + 10 KB billed) and two events.
fn boto3_calls(moto: &str, endpoint: &str) {
    let script = r#"
import os, boto3
moto, proxy = os.environ["MOTO"], os.environ["PROXY"]
boto3.client("firehose", endpoint_url=moto).create_delivery_stream(
    DeliveryStreamName="classify",
    ExtendedS3DestinationConfiguration={"RoleARN": "arn:aws:iam::123456789012:role/r", "BucketARN": "arn:aws:s3:::classify"})
boto3.client("firehose", endpoint_url=proxy).put_record_batch(
    DeliveryStreamName="classify", Records=[{"Data": b"x"}, {"Data": b"y" * 6000}])
boto3.client("events", endpoint_url=proxy).put_events(Entries=[
    {"Source": "bench", "DetailType": "t", "Detail": "{}"}, {"Source": "bench", "DetailType": "t", "Detail": "{}"}])
"#;
    let python = devstack::moto::python().expect("python");
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .env("MOTO", moto)
        .env("PROXY", endpoint)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .output()
        .expect("boto3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each S3 call the SDK made, once, on its line, the archive's bytes stored.
fn assert_s3(calls: &Calls) {
    let s3 = |name| count(calls, Service::S3, name);
    for name in [
        "CopyObject",
        "GetObject",
        "HeadObject",
        "ListObjectsV2",
        "DeleteObject",
        "HeadBucket",
        "ListBuckets",
        "UploadPart",
        "ListParts",
        "ListMultipartUploads",
        "CompleteMultipartUpload",
        "AbortMultipartUpload",
    ] {
        assert_eq!(s3(name), 1, "S3 {name}: {calls:#?}");
    }
    assert_eq!((s3("PutObject"), s3("CreateMultipartUpload")), (2, 2));
    let archive = Op {
        key_prefix: Some("archive".into()),
        ..Op::new(Service::S3, "PutObject")
    };
    let archived = &calls[&archive];
    assert_eq!(
        (archived.line, archived.count, archived.stored_bytes),
        (Line::S3Writes, 1, 3000.0)
    );
    assert_eq!(
        calls[&Op {
            key_prefix: Some("big".into()),
            ..Op::new(Service::S3, "AbortMultipartUpload")
        }]
            .line,
        Line::S3Deletes
    );
    assert_eq!(
        calls[&Op {
            key_prefix: Some("payloads".into()),
            ..Op::new(Service::S3, "HeadObject")
        }]
            .line,
        Line::S3Reads
    );
}

/// DynamoDB's read units, SQS's chunks, Firehose's rounded bytes, EventBridge's events.
fn assert_others(calls: &Calls) {
    let ddb = &calls[&Op::new(Service::DynamoDb, "GetItem")];
    assert_eq!(
        (ddb.line, ddb.count, ddb.units),
        (Line::DynamoDbReads, 2, 1.5)
    );
    assert_eq!(
        count(calls, Service::DynamoDb, "PutItem") + count(calls, Service::DynamoDb, "DeleteItem"),
        2
    );
    // A 70,000-byte message: two 64 KiB chunks to send and to receive, one to delete.
    let units = |name: &str| calls[&Op::new(Service::Sqs, name)].units;
    assert_eq!(
        (
            units("SendMessage"),
            units("ReceiveMessage"),
            units("DeleteMessage")
        ),
        (2.0, 2.0, 1.0)
    );
    assert_eq!(
        calls[&Op::new(Service::SecretsManager, "GetSecretValue")].line,
        Line::SecretsManager
    );
    let firehose = &calls[&Op::new(Service::Firehose, "PutRecordBatch")];
    assert_eq!((firehose.count, firehose.units), (1, 15.0 * 1024.0));
    assert!(
        firehose.line == Line::Firehose
            && Op::new(Service::Firehose, "PutRecordBatch").is_archive()
    );
    assert_eq!(
        calls[&Op::new(Service::EventBridge, "PutEvents")].units,
        2.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdks_requests_are_classified_and_priced() {
    let moto = devstack::moto::shared();
    let sdk = inbox::app::sdk_config().await;
    let proxy = Proxy::start(moto, no_latency(), 1).await.expect("proxy");
    let endpoint = proxy.endpoint(0);
    let s3 = s3_calls(&sdk, &endpoint).await;
    s3_multipart_calls(&s3).await;
    dynamodb_calls(&sdk, &endpoint).await;
    sqs_and_secret_calls(&sdk, &endpoint).await;
    let (moto_url, e) = (moto.to_owned(), endpoint.clone());
    tokio::task::spawn_blocking(move || boto3_calls(&moto_url, &e))
        .await
        .expect("boto3");
    proxy
        .check("sdk")
        .expect("every request classified and priced");
    let (calls, _) = proxy.snapshot();

    assert_s3(&calls);
    assert_others(&calls);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_cannot_be_billed_fails_the_run() {
    let moto = devstack::moto::shared();
    let sdk = inbox::app::sdk_config().await;
    // An operation with no price line: DynamoDB's ListTables, as the SDK sends it.
    let proxy = Proxy::start(moto, no_latency(), 1).await.expect("proxy");
    let via = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&sdk)
            .endpoint_url(proxy.endpoint(0))
            .build(),
    );
    via.list_tables()
        .send()
        .await
        .expect("forwarded all the same");
    let e = proxy.check("t").unwrap_err().to_string();
    assert!(e.contains("DynamoDB ListTables has no price line"), "{e}");
    assert!(
        proxy.snapshot().0.is_empty(),
        "not counted, not priced at zero"
    );
    // An unsigned request: not classified, named by method and path.
    let proxy = Proxy::start(moto, no_latency(), 1).await.expect("proxy");
    reqwest::Client::new()
        .get(format!("{}/some/bucket?tagging", proxy.endpoint(0)))
        .send()
        .await
        .expect("forwarded");
    let e = proxy.check("t").unwrap_err().to_string();
    assert!(
        e.contains("GET /some/bucket?tagging (service unknown: not signed with SigV4)"),
        "{e}"
    );
}
