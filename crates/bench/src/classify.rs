//! What each request the counting proxy forwards is, for the bill: its service and operation,
//! or why it cannot be told (which fails the run: nothing is priced at zero for want of a name).
//!
//! - **The service** is the signing name in the request's SigV4 credential scope,
//!   `Credential=<key>/<date>/<region>/<service>/aws4_request` in the `Authorization` header
//!   (or `X-Amz-Credential` in a presigned URL's query): what AWS itself routes on. An unsigned
//!   request, or a service the bench has no price for, is not classified.
//! - **The operation**: for a JSON protocol (DynamoDB, Secrets Manager, Firehose, EventBridge,
//!   SQS's JSON protocol) the `X-Amz-Target` header, `<prefix>.<Operation>`, whose prefix must be
//!   that service's (`DynamoDB_20120810`, `secretsmanager`, `Firehose_20150804`, `AWSEvents`,
//!   `AmazonSQS`); for SQS's query protocol the `Action=` parameter (body or query); for S3's
//!   REST API the method, the bucket and key the path (or a virtual host) names, the
//!   sub-resources of the query and the `x-amz-copy-source` header ([`s3`]).

use http::Request;
use hyper::body::Bytes;

mod s3;

/// A service the bench can price, by its SigV4 signing name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    DynamoDb,
    Sqs,
    S3,
    SecretsManager,
    Firehose,
    EventBridge,
}

impl Service {
    /// Every service, in the report's order.
    pub const ALL: [Service; 6] = [
        Service::DynamoDb,
        Service::Sqs,
        Service::S3,
        Service::SecretsManager,
        Service::Firehose,
        Service::EventBridge,
    ];

    /// The signing name in a SigV4 credential scope.
    pub fn signing_name(self) -> &'static str {
        match self {
            Service::DynamoDb => "dynamodb",
            Service::Sqs => "sqs",
            Service::S3 => "s3",
            Service::SecretsManager => "secretsmanager",
            Service::Firehose => "firehose",
            Service::EventBridge => "events",
        }
    }

    /// The service a signing name names.
    fn from_signing_name(name: &str) -> Option<Service> {
        Service::ALL.into_iter().find(|s| s.signing_name() == name)
    }

    /// The `X-Amz-Target` prefix of its JSON protocol; `None` for S3 (REST only).
    fn target_prefix(self) -> Option<&'static str> {
        match self {
            Service::DynamoDb => Some("DynamoDB_20120810"),
            Service::Sqs => Some("AmazonSQS"),
            Service::S3 => None,
            Service::SecretsManager => Some("secretsmanager"),
            Service::Firehose => Some("Firehose_20150804"),
            Service::EventBridge => Some("AWSEvents"),
        }
    }

    /// Its name in the report.
    pub fn label(self) -> &'static str {
        match self {
            Service::DynamoDb => "DynamoDB",
            Service::Sqs => "SQS",
            Service::S3 => "S3",
            Service::SecretsManager => "Secrets Manager",
            Service::Firehose => "Firehose",
            Service::EventBridge => "EventBridge",
        }
    }
}

/// One kind of call: its service, its operation and, for S3, the first segment of the object
/// key (`archive`, `payloads`), which tells the archive's calls from the others.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Op {
    pub service: Service,
    pub name: String,
    pub key_prefix: Option<String>,
}

impl Op {
    /// An operation without a key prefix.
    pub fn new(service: Service, name: &str) -> Op {
        Op {
            service,
            name: name.to_owned(),
            key_prefix: None,
        }
    }

    /// `S3 PutObject archive/`, `DynamoDB PutItem`.
    pub fn label(&self) -> String {
        match &self.key_prefix {
            Some(p) => format!("{} {} {p}/", self.service.label(), self.name),
            None => format!("{} {}", self.service.label(), self.name),
        }
    }

    /// Whether the call serves the archive: S3 objects under `archive/`, and Firehose (the
    /// archive's delivery stream).
    pub fn is_archive(&self) -> bool {
        self.key_prefix.as_deref() == Some("archive") || self.service == Service::Firehose
    }
}

/// The service and operation of `req`, or why they cannot be told: `<method> <path> (service
/// <signing name>): <reason>`.
pub fn classify(req: &Request<Bytes>) -> Result<Op, String> {
    let scope = signing_name(req);
    let fail = |why: String| {
        format!(
            "{} {} (service {}): {why}",
            req.method(),
            req.uri().path_and_query().map_or("/", |p| p.as_str()),
            scope.as_deref().unwrap_or("unknown: not signed with SigV4")
        )
    };
    let Some(scope) = scope.as_deref() else {
        return Err(fail("no SigV4 credential scope".into()));
    };
    let service = Service::from_signing_name(scope)
        .ok_or_else(|| fail("a service the bench has no price for".into()))?;
    if let Some(target) = req.headers().get("x-amz-target") {
        let target = target
            .to_str()
            .map_err(|_| fail("X-Amz-Target is not text".into()))?;
        return match (target.split_once('.'), service.target_prefix()) {
            (Some((prefix, name)), Some(expected)) if prefix == expected && !name.is_empty() => {
                Ok(Op::new(service, name))
            }
            _ => Err(fail(format!("X-Amz-Target {target} is not {scope}'s"))),
        };
    }
    match service {
        Service::S3 => s3::operation(req).map_err(fail),
        Service::Sqs => query_action(req)
            .map(|action| Op::new(service, &action))
            .ok_or_else(|| fail("neither X-Amz-Target nor Action=".into())),
        _ => Err(fail("no X-Amz-Target".into())),
    }
}

/// The signing name of the request's SigV4 credential scope: from `Authorization`, else from
/// a presigned URL's `X-Amz-Credential`.
fn signing_name(req: &Request<Bytes>) -> Option<String> {
    let credential = match req.headers().get(http::header::AUTHORIZATION) {
        Some(auth) => {
            let auth = auth.to_str().ok()?;
            let rest = &auth[auth.find("Credential=")? + "Credential=".len()..];
            rest.split([',', ' ']).next()?.to_owned()
        }
        None => query_pairs(req.uri().query().unwrap_or(""))
            .find(|(k, _)| *k == "X-Amz-Credential")
            .map(|(_, v)| v.replace("%2F", "/").replace("%2f", "/"))?,
    };
    let parts: Vec<&str> = credential.split('/').collect();
    match parts.as_slice() {
        [.., service, "aws4_request"] if parts.len() >= 5 => Some((*service).to_owned()),
        _ => None,
    }
}

/// The query protocol's `Action=`, from the form body or the URL's query.
fn query_action(req: &Request<Bytes>) -> Option<String> {
    let body = std::str::from_utf8(req.body()).unwrap_or("");
    query_pairs(body)
        .chain(query_pairs(req.uri().query().unwrap_or("")))
        .find(|(k, _)| *k == "Action")
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

/// `a=1&b&c=` as (name, value) pairs, values as sent (not percent-decoded).
fn query_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
}

#[cfg(test)]
mod tests;
