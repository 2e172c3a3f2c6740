//! The classifier on request shapes the SDKs sent through the proxy to moto (captured with
//! `BENCH_CAPTURE`: the Rust SDK for S3, DynamoDB, SQS and Secrets Manager, boto3 for
//! Firehose and EventBridge; signatures and dates shortened), and on the shapes AWS also
//! accepts that the functions do not send here (virtual hosts, presigned URLs, SQS's query
//! protocol); then the requests it must refuse, each named by method, path and service.

use http::Request;
use hyper::body::Bytes;

use super::{classify, Op, Service};

/// A request signed for `service` (None: unsigned), with `headers` and `body`.
fn req(
    method: &str,
    uri: &str,
    service: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Bytes> {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:42091");
    if let Some(s) = service {
        b = b.header(
            "authorization",
            format!(
                "AWS4-HMAC-SHA256 Credential=testing/20261204/us-east-1/{s}/aws4_request, \
                 SignedHeaders=content-length;content-type;host;x-amz-date, Signature=0cc37fe3"
            ),
        );
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Bytes::from(body.to_owned())).expect("request")
}

/// A JSON-protocol request.
fn json(service: &str, target: &str, body: &str) -> Request<Bytes> {
    req(
        "POST",
        "/",
        Some(service),
        &[
            ("x-amz-target", target),
            ("content-type", "application/x-amz-json-1.0"),
        ],
        body,
    )
}

/// An S3 request, path style as the functions' client sends it.
fn s3(method: &str, uri: &str, headers: &[(&str, &str)]) -> Request<Bytes> {
    req(method, uri, Some("s3"), headers, "")
}

fn op(service: Service, name: &str, prefix: Option<&str>) -> Op {
    Op {
        key_prefix: prefix.map(str::to_owned),
        ..Op::new(service, name)
    }
}

#[test]
fn json_protocols_by_target_and_credential_scope() {
    use Service::*;
    for (scope, target, service, name) in [
        ("dynamodb", "DynamoDB_20120810.PutItem", DynamoDb, "PutItem"),
        (
            "dynamodb",
            "DynamoDB_20120810.UpdateItem",
            DynamoDb,
            "UpdateItem",
        ),
        ("dynamodb", "DynamoDB_20120810.GetItem", DynamoDb, "GetItem"),
        ("sqs", "AmazonSQS.SendMessage", Sqs, "SendMessage"),
        ("sqs", "AmazonSQS.ReceiveMessage", Sqs, "ReceiveMessage"),
        (
            "sqs",
            "AmazonSQS.DeleteMessageBatch",
            Sqs,
            "DeleteMessageBatch",
        ),
        (
            "secretsmanager",
            "secretsmanager.GetSecretValue",
            SecretsManager,
            "GetSecretValue",
        ),
        (
            "firehose",
            "Firehose_20150804.PutRecordBatch",
            Firehose,
            "PutRecordBatch",
        ),
        ("events", "AWSEvents.PutEvents", EventBridge, "PutEvents"),
    ] {
        assert_eq!(
            classify(&json(scope, target, "{}")),
            Ok(op(service, name, None)),
            "{target}"
        );
    }
}

#[test]
fn sqs_query_protocol_by_action() {
    let form = [(
        "content-type",
        "application/x-www-form-urlencoded; charset=utf-8",
    )];
    let body = "Action=SendMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2Fq&MessageBody=x";
    assert_eq!(
        classify(&req("POST", "/", Some("sqs"), &form, body)),
        Ok(op(Service::Sqs, "SendMessage", None))
    );
    let in_query = req(
        "GET",
        "/123456789012/q?Action=GetQueueAttributes&AttributeName.1=All",
        Some("sqs"),
        &[],
        "",
    );
    assert_eq!(
        classify(&in_query),
        Ok(op(Service::Sqs, "GetQueueAttributes", None))
    );
}

/// Each request classified as S3's `name` on a key starting `prefix/`.
fn assert_s3(cases: Vec<(Request<Bytes>, &str, Option<&str>)>) {
    for (r, name, prefix) in cases {
        let uri = r.uri().to_string();
        assert_eq!(
            classify(&r),
            Ok(op(Service::S3, name, prefix)),
            "{} {uri}",
            r.method()
        );
    }
}

#[test]
fn s3_object_and_bucket_calls_by_method_path_and_query() {
    let copy = [("x-amz-copy-source", "classify/payloads/acme/k/sha")];
    assert_s3(vec![
        (
            s3(
                "PUT",
                "/classify/archive/acme/2026/12/04/22/abc?x-id=PutObject",
                &[],
            ),
            "PutObject",
            Some("archive"),
        ),
        (
            s3("GET", "/classify/payloads/acme/k/sha?x-id=GetObject", &[]),
            "GetObject",
            Some("payloads"),
        ),
        (
            s3("HEAD", "/classify/payloads/acme/k/sha", &[]),
            "HeadObject",
            Some("payloads"),
        ),
        (
            s3("GET", "/classify/?list-type=2&prefix=archive%2F", &[]),
            "ListObjectsV2",
            None,
        ),
        (
            s3("PUT", "/classify/copy/of?x-id=CopyObject", &copy),
            "CopyObject",
            Some("copy"),
        ),
        (
            s3("DELETE", "/classify/copy/of?x-id=DeleteObject", &[]),
            "DeleteObject",
            Some("copy"),
        ),
        (s3("HEAD", "/classify/", &[]), "HeadBucket", None),
        (s3("GET", "/?x-id=ListBuckets", &[]), "ListBuckets", None),
        // A key without a `/` has no prefix.
        (
            s3("PUT", "/classify/flat?x-id=PutObject", &[]),
            "PutObject",
            None,
        ),
        (s3("GET", "/classify", &[]), "ListObjects", None),
        (s3("POST", "/classify?delete", &[]), "DeleteObjects", None),
    ]);
}

#[test]
fn s3_multipart_calls_by_method_path_and_query() {
    let id = "uploadId=mKAc3CDqXSndFEPtAIA3JNPZGNOlMkEThNyT1G42mhoVIAHifTpe24HLw";
    let copy = [("x-amz-copy-source", "classify/payloads/acme/k/sha")];
    let at = |query: &str| format!("/classify/big/one?{query}");
    assert_s3(vec![
        (
            s3("POST", &at("uploads"), &[]),
            "CreateMultipartUpload",
            Some("big"),
        ),
        (
            s3(
                "PUT",
                &at(&format!("x-id=UploadPart&partNumber=1&{id}")),
                &[],
            ),
            "UploadPart",
            Some("big"),
        ),
        (
            s3("PUT", &at(&format!("partNumber=2&{id}")), &copy),
            "UploadPartCopy",
            Some("big"),
        ),
        (
            s3("GET", &at(&format!("x-id=ListParts&{id}")), &[]),
            "ListParts",
            Some("big"),
        ),
        (
            s3("GET", "/classify/?uploads", &[]),
            "ListMultipartUploads",
            None,
        ),
        (
            s3("POST", &at(id), &[]),
            "CompleteMultipartUpload",
            Some("big"),
        ),
        (
            s3(
                "DELETE",
                &at(&format!("x-id=AbortMultipartUpload&{id}")),
                &[],
            ),
            "AbortMultipartUpload",
            Some("big"),
        ),
    ]);
}

#[test]
fn s3_virtual_hosts_and_presigned_urls() {
    let mut r = s3("PUT", "/archive/acme/k?x-id=PutObject", &[]);
    r.headers_mut().insert(
        "host",
        "bucket.s3.us-east-1.amazonaws.com".parse().expect("host"),
    );
    assert_eq!(
        classify(&r),
        Ok(op(Service::S3, "PutObject", Some("archive")))
    );
    r.headers_mut()
        .insert("host", "bucket.localhost:4566".parse().expect("host"));
    assert_eq!(
        classify(&r),
        Ok(op(Service::S3, "PutObject", Some("archive")))
    );
    // The bucket named by the host: `/` is the bucket itself.
    let mut list = s3("GET", "/?list-type=2", &[]);
    list.headers_mut().insert(
        "host",
        "my.bucket.s3-us-west-2.amazonaws.com"
            .parse()
            .expect("host"),
    );
    assert_eq!(classify(&list), Ok(op(Service::S3, "ListObjectsV2", None)));
    // Path style at AWS's own regional host.
    let mut path = s3("GET", "/bucket/payloads/k", &[]);
    path.headers_mut()
        .insert("host", "s3.us-east-1.amazonaws.com".parse().expect("host"));
    assert_eq!(
        classify(&path),
        Ok(op(Service::S3, "GetObject", Some("payloads")))
    );
    let presigned = req(
        "GET",
        "/bucket/payloads/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20261204%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261204T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=ab",
        None,
        &[],
        "",
    );
    assert_eq!(
        classify(&presigned),
        Ok(op(Service::S3, "GetObject", Some("payloads")))
    );
}

#[test]
fn what_cannot_be_told_is_refused_by_method_path_and_service() {
    let refused = |r: Request<Bytes>, says: &[&str]| {
        let e = classify(&r).expect_err("refused");
        for s in says {
            assert!(e.contains(s), "{e:?} should say {s:?}");
        }
    };
    refused(
        req("GET", "/some/bucket?tagging", None, &[], ""),
        &["GET /some/bucket?tagging", "not signed with SigV4"],
    );
    refused(
        json("kinesis", "Kinesis_20131202.PutRecords", "{}"),
        &["POST /", "service kinesis", "no price for"],
    );
    refused(
        json("dynamodb", "AmazonSQS.SendMessage", "{}"),
        &[
            "service dynamodb",
            "AmazonSQS.SendMessage is not dynamodb's",
        ],
    );
    refused(
        req("POST", "/", Some("dynamodb"), &[], "{}"),
        &["service dynamodb", "no X-Amz-Target"],
    );
    refused(
        req("POST", "/", Some("sqs"), &[], "MessageBody=x"),
        &["service sqs", "neither X-Amz-Target nor Action="],
    );
    refused(
        s3("GET", "/classify?policy", &[]),
        &["GET /classify?policy (service s3)", "`policy`"],
    );
    refused(
        s3("PUT", "/classify/k?x-id=GetObject", &[]),
        &[
            "PUT /classify/k",
            "classified as PutObject, but the SDK says x-id=GetObject",
        ],
    );
    refused(
        s3("POST", "/classify/k", &[]),
        &["no S3 rule for POST on an object"],
    );
    refused(s3("GET", "/classify?list-type=1", &[]), &["list-type=1"]);
    refused(s3("PUT", "/", &[]), &["no S3 rule for PUT on a bucket"]);
}
