//! The bill's lines and which line each operation is billed on: every operation the proxy
//! sees must have one ([`line_of`]), possibly free with its reason, or the run fails.

pub mod prices;

use crate::classify::{Op, Service};
use prices::*;

/// One line of the bill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Line {
    /// API Gateway HTTP API, one request per delivery.
    FrontDoor,
    LambdaRequests,
    LambdaDuration,
    /// Write request units (write calls x KiB of the largest item).
    DynamoDbWrites,
    /// Read request units.
    DynamoDbReads,
    /// SQS FIFO requests, 64 KiB chunks.
    Sqs,
    /// S3 PUT, COPY, POST and LIST requests.
    S3Writes,
    /// S3 GET, HEAD and other requests.
    S3Reads,
    /// S3 DELETE and CANCEL requests: free.
    S3Deletes,
    /// S3 Standard storage of what was written, for the days the bench assumes.
    S3Storage,
    /// Secrets Manager API calls.
    SecretsManager,
    /// Firehose Direct PUT ingestion, records rounded up to 5 KB.
    Firehose,
    /// EventBridge events put, 64 KB chunks.
    EventBridge,
}

impl Line {
    /// Every line, in the report's order.
    pub const ALL: [Line; 13] = [
        Line::FrontDoor,
        Line::LambdaRequests,
        Line::LambdaDuration,
        Line::DynamoDbWrites,
        Line::DynamoDbReads,
        Line::Sqs,
        Line::S3Writes,
        Line::S3Reads,
        Line::S3Deletes,
        Line::S3Storage,
        Line::SecretsManager,
        Line::Firehose,
        Line::EventBridge,
    ];

    /// Its label in the report.
    pub fn label(self) -> &'static str {
        match self {
            Line::FrontDoor => "API Gateway HTTP API requests (the front door)",
            Line::LambdaRequests => "Lambda requests",
            Line::LambdaDuration => "Lambda duration (billed ms x memory)",
            Line::DynamoDbWrites => "DynamoDB write units",
            Line::DynamoDbReads => "DynamoDB read units",
            Line::Sqs => "SQS FIFO requests (64 KiB chunks)",
            Line::S3Writes => "S3 PUT, COPY, POST, LIST requests",
            Line::S3Reads => "S3 GET, HEAD and other requests",
            Line::S3Deletes => "S3 DELETE requests (free)",
            Line::S3Storage => "S3 Standard storage of what was written",
            Line::SecretsManager => "Secrets Manager API calls (cold starts)",
            Line::Firehose => "Firehose Direct PUT ingestion (records rounded up to 5 KB)",
            Line::EventBridge => "EventBridge PutEvents (64 KB chunks)",
        }
    }

    /// The price of one unit of the line's metered quantity ([`crate::meter`]); the duration,
    /// storage and write lines are computed apart.
    pub fn unit_price(self) -> f64 {
        match self {
            Line::FrontDoor => HTTP_API_REQUEST,
            Line::LambdaRequests => LAMBDA_REQUEST,
            Line::LambdaDuration => LAMBDA_ARM64_GB_SECOND,
            Line::DynamoDbWrites => DYNAMODB_WRITE_UNIT,
            Line::DynamoDbReads => DYNAMODB_READ_UNIT,
            Line::Sqs => SQS_FIFO_REQUEST,
            Line::S3Writes => S3_PUT_COPY_POST_LIST_REQUEST,
            Line::S3Reads => S3_GET_AND_OTHER_REQUEST,
            Line::S3Deletes => S3_DELETE_REQUEST,
            Line::S3Storage => S3_STANDARD_GB_MONTH,
            Line::SecretsManager => SECRETS_MANAGER_API_CALL,
            Line::Firehose => FIREHOSE_DIRECT_PUT_GB / GB,
            Line::EventBridge => EVENTBRIDGE_EVENT,
        }
    }
}

/// The line `op` is billed on; why not, naming it, where the bench has no price for it.
pub fn line_of(op: &Op) -> Result<Line, String> {
    let line = match (op.service, op.name.as_str()) {
        (Service::DynamoDb, "PutItem" | "UpdateItem" | "DeleteItem") => Line::DynamoDbWrites,
        (Service::DynamoDb, "GetItem") => Line::DynamoDbReads,
        (
            Service::Sqs,
            "SendMessage"
            | "SendMessageBatch"
            | "ReceiveMessage"
            | "DeleteMessage"
            | "DeleteMessageBatch"
            | "ChangeMessageVisibility"
            | "ChangeMessageVisibilityBatch"
            | "GetQueueAttributes"
            | "GetQueueUrl",
        ) => Line::Sqs,
        (
            Service::S3,
            "PutObject"
            | "CopyObject"
            | "UploadPart"
            | "UploadPartCopy"
            | "CreateMultipartUpload"
            | "CompleteMultipartUpload"
            | "ListObjectsV2"
            | "ListObjects"
            | "ListObjectVersions"
            | "ListParts"
            | "ListMultipartUploads"
            | "ListBuckets"
            | "PutObjectTagging"
            | "PutObjectAcl"
            | "CreateBucket",
        ) => Line::S3Writes,
        (
            Service::S3,
            "GetObject"
            | "HeadObject"
            | "HeadBucket"
            | "GetObjectTagging"
            | "GetObjectAcl"
            | "GetObjectAttributes"
            | "GetBucketLocation",
        ) => Line::S3Reads,
        (Service::S3, "DeleteObject" | "AbortMultipartUpload" | "DeleteBucket") => Line::S3Deletes,
        // One price for every Secrets Manager API call.
        (Service::SecretsManager, _) => Line::SecretsManager,
        (Service::Firehose, "PutRecord" | "PutRecordBatch") => Line::Firehose,
        (Service::EventBridge, "PutEvents") => Line::EventBridge,
        _ => {
            return Err(format!(
                "{} has no price line (crates/bench/src/price.rs)",
                op.label()
            ))
        }
    };
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_has_its_line_and_the_rest_none() {
        let line = |s, n| line_of(&Op::new(s, n));
        assert_eq!(line(Service::S3, "PutObject"), Ok(Line::S3Writes));
        assert_eq!(line(Service::S3, "ListObjectsV2"), Ok(Line::S3Writes));
        assert_eq!(line(Service::S3, "HeadObject"), Ok(Line::S3Reads));
        assert_eq!(line(Service::S3, "DeleteObject"), Ok(Line::S3Deletes));
        assert_eq!(line(Service::Sqs, "DeleteMessageBatch"), Ok(Line::Sqs));
        assert_eq!(
            line(Service::Firehose, "PutRecordBatch"),
            Ok(Line::Firehose)
        );
        assert_eq!(
            line(Service::SecretsManager, "GetSecretValue"),
            Ok(Line::SecretsManager)
        );
        // Classified, not priced: whether a multi-object delete's POST is billed as a PUT or a
        // free DELETE is not stated where checked; DynamoDB's Query reads by response size.
        for (s, n) in [
            (Service::S3, "DeleteObjects"),
            (Service::DynamoDb, "Query"),
            (Service::Firehose, "DescribeDeliveryStream"),
            (Service::EventBridge, "PutRule"),
        ] {
            let e = line(s, n).unwrap_err();
            assert!(e.contains(n) && e.contains("no price line"), "{e}");
        }
    }

    #[test]
    fn unit_prices_are_the_published_ones() {
        // $5.00 per million S3 PUTs, $0.40 per million GETs, $0.05 per 10,000 Secrets
        // Manager calls, $0.029 per GiB into Firehose.
        assert!((Line::S3Writes.unit_price() * 1e6 - 5.0).abs() < 1e-9);
        assert!((Line::S3Reads.unit_price() * 1e6 - 0.4).abs() < 1e-9);
        assert!((Line::SecretsManager.unit_price() * 1e4 - 0.05).abs() < 1e-12);
        assert!((Line::Firehose.unit_price() * GB - 0.029).abs() < 1e-12);
        assert_eq!(Line::S3Deletes.unit_price(), 0.0);
    }
}
