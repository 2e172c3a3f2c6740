//! The list prices the bill uses: us-east-1, on-demand, no free tier.
//!
//! The first seven (API Gateway, Lambda, DynamoDB, SQS) were read on the AWS pricing pages
//! in 2025-06 ([`PRICES_AS_OF`]). The others were added later and checked on
//! 2026-12-04 ([`ADDED_PRICES_CHECKED`]) with the session's search tool over stored copies of
//! the pricing pages and AWS documentation: where the official page's table did not render
//! in the stored copy (its cells are template tokens), the constant's comment says which
//! source agreed with the figure instead. Each is the price of one unit of its line
//! ([`super::Line`], [`crate::price`]).

/// When the first prices were read from the AWS pricing pages.
pub const PRICES_AS_OF: &str = "2025-06";
/// When the prices added later were checked, and how.
pub const ADDED_PRICES_CHECKED: &str = "2026-12-04";

/// API Gateway HTTP API: per request (first 300 million a month).
pub const HTTP_API_REQUEST: f64 = 1.00 / 1e6;
/// A Lambda function URL: no charge of its own.
pub const FUNCTION_URL_REQUEST: f64 = 0.0;
/// Lambda: per request.
pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
/// Lambda on arm64 (Graviton): per GB-second (first 7.5 billion GB-s a month).
pub const LAMBDA_ARM64_GB_SECOND: f64 = 0.000_013_333_4;
/// DynamoDB on-demand: per write request unit (1 KiB of item).
pub const DYNAMODB_WRITE_UNIT: f64 = 0.625 / 1e6;
/// DynamoDB on-demand: per read request unit (4 KiB, strongly consistent).
pub const DYNAMODB_READ_UNIT: f64 = 0.125 / 1e6;
/// SQS FIFO: per request (64 KiB chunk). Every SQS action is a request.
pub const SQS_FIFO_REQUEST: f64 = 0.50 / 1e6;

/// S3 Standard: per PUT, COPY, POST or LIST request ($0.005 per 1,000). aws.amazon.com/s3/pricing
/// (its table unrendered in the stored copy); the same figure in c3x.dev's "S3 request fees
/// explained" (Tier 1) and cloudkaramchari.com's explainer of the PUT/COPY/POST/LIST line.
pub const S3_PUT_COPY_POST_LIST_REQUEST: f64 = 0.005 / 1000.0;
/// S3 Standard: per GET, SELECT and every other request not priced otherwise ($0.0004 per
/// 1,000). Same sources as the PUT line; HEAD is among "all other requests".
pub const S3_GET_AND_OTHER_REQUEST: f64 = 0.0004 / 1000.0;
/// S3: DELETE and CANCEL (abort multipart upload) requests are free. aws.amazon.com/s3/faqs
/// (stored copy): "Amazon S3 doesn't charge you for removing objects" (expiration "as with
/// standard delete requests"); the S3 Express One Zone example there prices DELETE at $0.00.
pub const S3_DELETE_REQUEST: f64 = 0.0;
/// S3 Standard storage: per GB-month, first 50 TB a month ($0.023). The same figure in a
/// transcription of aws.amazon.com/s3/pricing (gist EverettBerry/a37438006529…, "First 50 TB /
/// Month $0.023 per GB"); the official table unrendered in the stored copy.
pub const S3_STANDARD_GB_MONTH: f64 = 0.023;
/// Days in the month the storage price is for (S3 bills byte-hours over the month's hours).
pub const DAYS_PER_MONTH: f64 = 30.0;
/// Secrets Manager: per API call ($0.05 per 10,000). aws.amazon.com/secrets-manager/pricing,
/// per api-evangelist's transcription of it (read 2026-09-20: "$0.05/10,000 calls" in the
/// page's examples).
pub const SECRETS_MANAGER_API_CALL: f64 = 0.05 / 10_000.0;
/// Amazon Data Firehose, Direct PUT ingestion: per GB (first 500 TB a month, $0.029), each
/// record rounded up to the next 5 KB; no per-request charge. The 5 KB rounding is quoted on
/// aws.amazon.com/kinesis/data-firehose/pricing (stored German and Russian copies: "3-KB record
/// billed as 5 KB, 12 KB as 15 KB"), the per-record rounding ("not per API call: two 1 KB
/// records in one PutRecordBatch are 10 KB") on a Japanese copy quoted by shigemk2.com; the
/// $0.029 figure is the brief's, not found in a stored copy.
pub const FIREHOSE_DIRECT_PUT_GB: f64 = 0.029;
/// EventBridge: per custom event put on a bus (64 KB chunk; $1.00 per million).
/// blog.awsfundamentals.com's EventBridge pricing guide and cloudburn.io's (2026-03), from
/// aws.amazon.com/eventbridge/pricing; the entry size as docs.aws.amazon.com's "Calculating
/// Amazon EventBridge PutEvents event entry size" computes it.
pub const EVENTBRIDGE_EVENT: f64 = 1.00 / 1e6;

/// Bytes in the GB the per-GB prices are for (AWS bills GiB).
pub const GB: f64 = 1024.0 * 1024.0 * 1024.0;
