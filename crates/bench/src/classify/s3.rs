//! S3's REST API: the operation from the method, the bucket and key, the query's
//! sub-resources and the `x-amz-copy-source` header.
//!
//! The bucket is the first path segment (path style, what the functions' client sends to a
//! custom endpoint: `inbox::bucket::s3_config` forces it where `AWS_ENDPOINT_URL` is set, and
//! the SDK's endpoint rules use it for an IP address anyway), or the host's first labels for a
//! virtual host (`<bucket>.s3.<region>.amazonaws.com`, `<bucket>.s3-<region>.amazonaws.com`,
//! `<bucket>.localhost:<port>`); the key is the rest of the path. A query parameter that is
//! neither one of [`SUB_RESOURCES`] nor a plain parameter ([`is_plain`]) is not classified,
//! nor is a combination no rule of [`RULES`] matches; where the SDK names the operation itself
//! (`x-id=PutObject`), the rule's must be the same.

use http::Request;
use hyper::body::Bytes;

use super::{query_pairs, Op, Service};

/// The sub-resources the rules tell operations by.
const SUB_RESOURCES: &[&str] = &[
    "list-type",
    "uploads",
    "uploadId",
    "partNumber",
    "tagging",
    "acl",
    "delete",
    "versions",
    "location",
    "attributes",
];

/// A query parameter that only qualifies an operation (a listing's prefix, a version id, a
/// response header override, a presigned URL's signature), never names one.
fn is_plain(name: &str) -> bool {
    const PLAIN: &[&str] = &[
        "x-id",
        "prefix",
        "delimiter",
        "max-keys",
        "marker",
        "continuation-token",
        "start-after",
        "fetch-owner",
        "encoding-type",
        "versionId",
        "max-parts",
        "part-number-marker",
        "max-uploads",
        "key-marker",
        "upload-id-marker",
        "version-id-marker",
    ];
    PLAIN.contains(&name)
        || name.starts_with("response-")
        || name.to_ascii_lowercase().starts_with("x-amz-")
}

/// One rule: on `method`, addressed to an object (a key) or to a bucket, with exactly these
/// sub-resources and (where `Some`) with or without `x-amz-copy-source`, the operation is `op`.
struct Rule {
    method: &'static str,
    object: bool,
    subs: &'static [&'static str],
    copy: Option<bool>,
    op: &'static str,
}

const fn rule(
    method: &'static str,
    object: bool,
    subs: &'static [&'static str],
    copy: Option<bool>,
    op: &'static str,
) -> Rule {
    Rule {
        method,
        object,
        subs,
        copy,
        op,
    }
}

/// The rules, first match wins (the copy rules before the plain PUTs).
const RULES: &[Rule] = &[
    rule(
        "PUT",
        true,
        &["partNumber", "uploadId"],
        Some(true),
        "UploadPartCopy",
    ),
    rule(
        "PUT",
        true,
        &["partNumber", "uploadId"],
        Some(false),
        "UploadPart",
    ),
    rule("PUT", true, &["tagging"], None, "PutObjectTagging"),
    rule("PUT", true, &["acl"], None, "PutObjectAcl"),
    rule("PUT", true, &[], Some(true), "CopyObject"),
    rule("PUT", true, &[], Some(false), "PutObject"),
    rule("GET", true, &["uploadId"], None, "ListParts"),
    rule("GET", true, &["tagging"], None, "GetObjectTagging"),
    rule("GET", true, &["acl"], None, "GetObjectAcl"),
    rule("GET", true, &["attributes"], None, "GetObjectAttributes"),
    rule("GET", true, &[], None, "GetObject"),
    rule("GET", true, &["partNumber"], None, "GetObject"),
    rule("HEAD", true, &[], None, "HeadObject"),
    rule("HEAD", true, &["partNumber"], None, "HeadObject"),
    rule("DELETE", true, &["uploadId"], None, "AbortMultipartUpload"),
    rule("DELETE", true, &["tagging"], None, "DeleteObjectTagging"),
    rule("DELETE", true, &[], None, "DeleteObject"),
    rule("POST", true, &["uploads"], None, "CreateMultipartUpload"),
    rule("POST", true, &["uploadId"], None, "CompleteMultipartUpload"),
    rule("GET", false, &["list-type"], None, "ListObjectsV2"),
    rule("GET", false, &["uploads"], None, "ListMultipartUploads"),
    rule("GET", false, &["versions"], None, "ListObjectVersions"),
    rule("GET", false, &["location"], None, "GetBucketLocation"),
    rule("GET", false, &[], None, "ListObjects"),
    rule("HEAD", false, &[], None, "HeadBucket"),
    rule("PUT", false, &[], None, "CreateBucket"),
    rule("DELETE", false, &[], None, "DeleteBucket"),
    rule("POST", false, &["delete"], None, "DeleteObjects"),
];

/// The S3 operation of `req`, with the first segment of its key (where it has a key with a
/// `/` in it); why not, where no rule matches.
pub(super) fn operation(req: &Request<Bytes>) -> Result<Op, String> {
    let host = req
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    let (bucket, key) = bucket_and_key(host, req.uri().path());
    let pairs: Vec<(&str, &str)> = query_pairs(req.uri().query().unwrap_or("")).collect();
    let mut subs: Vec<&str> = Vec::new();
    for (name, value) in &pairs {
        if SUB_RESOURCES.contains(name) {
            subs.push(name);
        } else if !is_plain(name) {
            return Err(format!(
                "the query parameter `{name}` is no S3 sub-resource the bench knows"
            ));
        }
        if *name == "list-type" && *value != "2" {
            return Err(format!("list-type={value}"));
        }
    }
    subs.sort_unstable();
    let copy = req.headers().contains_key("x-amz-copy-source");
    let name = if bucket.is_none() {
        (req.method() == "GET" && subs.is_empty()).then_some("ListBuckets")
    } else {
        RULES
            .iter()
            .find(|r| {
                r.method == req.method().as_str()
                    && r.object == key.is_some()
                    && r.subs == subs.as_slice()
                    && r.copy.is_none_or(|c| c == copy)
            })
            .map(|r| r.op)
    };
    let Some(name) = name else {
        return Err(format!(
            "no S3 rule for {} on {} with sub-resources {subs:?}{}",
            req.method(),
            if key.is_some() {
                "an object"
            } else {
                "a bucket"
            },
            if copy { " and x-amz-copy-source" } else { "" }
        ));
    };
    if let Some((_, sdk_name)) = pairs.iter().find(|(k, _)| *k == "x-id") {
        if *sdk_name != name {
            return Err(format!(
                "classified as {name}, but the SDK says x-id={sdk_name}"
            ));
        }
    }
    Ok(Op {
        service: Service::S3,
        name: name.to_owned(),
        key_prefix: key
            .and_then(|k| k.split_once('/'))
            .map(|(p, _)| p.to_owned()),
    })
}

/// The bucket and the key a request addresses: a virtual host's bucket and the whole path as
/// the key, or the path's first segment and the rest.
fn bucket_and_key<'a>(host: &'a str, path: &'a str) -> (Option<&'a str>, Option<&'a str>) {
    let path = path.strip_prefix('/').unwrap_or(path);
    let non_empty = |s: &'a str| (!s.is_empty()).then_some(s);
    if let Some(bucket) = virtual_host_bucket(host) {
        return (Some(bucket), non_empty(path));
    }
    match path.split_once('/') {
        Some((bucket, key)) => (non_empty(bucket), non_empty(key)),
        None => (non_empty(path), None),
    }
}

/// The bucket a virtual-hosted `host` names, if it is one.
fn virtual_host_bucket(host: &str) -> Option<&str> {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    if name.ends_with(".amazonaws.com") {
        let at = [".s3.", ".s3-"].iter().filter_map(|m| name.find(m)).min()?;
        return (at > 0).then(|| &name[..at]);
    }
    name.strip_suffix(".localhost").filter(|b| !b.is_empty())
}
