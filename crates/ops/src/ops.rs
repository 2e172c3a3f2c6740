//! Operating the inbox (`inbox-ops`): move dead-lettered messages back to the queue, say why
//! each one was dead-lettered, and look a key up in the ledger. Works against AWS and, with
//! `AWS_ENDPOINT_URL`, a local server; region and credentials come from the standard places.
//!
//! ```text
//! inbox-ops why     --dlq URL --table TABLE [--json] [--peek SECONDS]
//! inbox-ops redrive --dlq URL --queue URL [--method auto|task|manual] [--wait SECONDS]
//! inbox-ops lookup  --table TABLE KEY
//! ```
//!
//! Nothing here prints a body or a header of a webhook: a dead letter is shown by its key,
//! its queue attributes and its ledger item.

use std::collections::HashSet;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_sqs::config::http::HttpResponse;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{MessageSystemAttributeName as Sys, QueueAttributeName};
use base64::Engine as _;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Record, Status};
use inbox::queue::Envelope;
use serde_json::{json, Value};

pub const USAGE: &str = "usage:
  inbox-ops why     --dlq URL --table TABLE [--json] [--peek SECONDS]
      each dead-lettered message: its key and its ledger item's status, attempts, last_error
  inbox-ops redrive --dlq URL --queue URL [--method auto|task|manual] [--wait SECONDS]
      moves the dead-letter queue's messages back (StartMessageMoveTask, else receive/send/delete)
  inbox-ops lookup  --table TABLE KEY
      prints the ledger item of KEY (`<source>:<value>`) as JSON
  --table defaults to $LEDGER_TABLE, --queue to $QUEUE_URL, --dlq to $DLQ_URL.
  AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL (a local server) as for any AWS SDK.";

/// How `redrive` moves messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// StartMessageMoveTask; receive/send/delete where the server does not support it.
    Auto,
    /// StartMessageMoveTask only.
    Task,
    /// Receive/send/delete only.
    Manual,
}

/// A parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Why {
        dlq: String,
        table: String,
        json: bool,
        peek_seconds: i32,
    },
    Redrive {
        dlq: String,
        queue: String,
        method: Method,
        wait: Duration,
    },
    Lookup {
        table: String,
        key: String,
    },
}

/// Seconds a `why` keeps the messages it looked at invisible, at most (they are made visible
/// again as soon as it is done).
pub const DEFAULT_PEEK_SECONDS: i32 = 30;
/// How long `redrive` waits for a move task to finish.
pub const DEFAULT_WAIT_SECONDS: u64 = 300;

/// Parses the arguments after the program name; `env` reads the fallback variables.
pub fn parse_args(
    args: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Command> {
    let mut it = args.iter();
    let sub = match it.next().map(String::as_str) {
        None | Some("-h" | "--help" | "help") => return Ok(Command::Help),
        Some(sub) => sub.to_owned(),
    };
    let (mut dlq, mut queue, mut table) = (None, None, None);
    let (mut json, mut method, mut wait, mut peek) = (
        false,
        Method::Auto,
        DEFAULT_WAIT_SECONDS,
        DEFAULT_PEEK_SECONDS,
    );
    let mut positional = Vec::new();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| anyhow!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--dlq" => dlq = Some(value("--dlq")?),
            "--queue" => queue = Some(value("--queue")?),
            "--table" => table = Some(value("--table")?),
            "--json" => json = true,
            "--method" => {
                method = match value("--method")?.as_str() {
                    "auto" => Method::Auto,
                    "task" => Method::Task,
                    "manual" => Method::Manual,
                    other => bail!("--method is auto, task or manual, not `{other}`"),
                }
            }
            "--wait" => {
                wait = value("--wait")?
                    .parse()
                    .context("--wait takes whole seconds")?
            }
            "--peek" => {
                peek = value("--peek")?
                    .parse()
                    .ok()
                    .filter(|s| (1..=43_200).contains(s))
                    .ok_or_else(|| anyhow!("--peek takes 1 to 43200 seconds"))?
            }
            "-h" | "--help" => return Ok(Command::Help),
            flag if flag.starts_with("--") => bail!("unknown option `{flag}`\n{USAGE}"),
            _ => positional.push(arg.clone()),
        }
    }
    let need = |value: Option<String>, flag: &str, var: &str| {
        value
            .or_else(|| env(var).filter(|v| !v.is_empty()))
            .ok_or_else(|| anyhow!("{sub} needs {flag} (or ${var})\n{USAGE}"))
    };
    let no_positional = |positional: &[String]| match positional.first() {
        Some(extra) => Err(anyhow!("unexpected argument `{extra}`\n{USAGE}")),
        None => Ok(()),
    };
    match sub.as_str() {
        "why" => {
            no_positional(&positional)?;
            Ok(Command::Why {
                dlq: need(dlq, "--dlq", "DLQ_URL")?,
                table: need(table, "--table", "LEDGER_TABLE")?,
                json,
                peek_seconds: peek,
            })
        }
        "redrive" => {
            no_positional(&positional)?;
            Ok(Command::Redrive {
                dlq: need(dlq, "--dlq", "DLQ_URL")?,
                queue: need(queue, "--queue", "QUEUE_URL")?,
                method,
                wait: Duration::from_secs(wait),
            })
        }
        "lookup" => {
            let table = need(table, "--table", "LEDGER_TABLE")?;
            match positional.as_slice() {
                [key] => Ok(Command::Lookup {
                    table,
                    key: key.clone(),
                }),
                _ => bail!("lookup takes exactly one KEY (`<source>:<value>`)\n{USAGE}"),
            }
        }
        other => bail!("unknown command `{other}`\n{USAGE}"),
    }
}

// --- redrive ----------------------------------------------------------------------------------

/// What a redrive did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redrive {
    /// SQS moved the messages itself (StartMessageMoveTask).
    Task {
        handle: String,
        /// RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED, as last seen.
        status: String,
        moved: i64,
        to_move: Option<i64>,
        failure: Option<String>,
    },
    /// Moved one at a time: receive from the dead-letter queue, send to the queue with the
    /// same MessageGroupId and MessageDeduplicationId, then delete.
    Manual {
        moved: usize,
        /// Why the move task was not used (`None` when `--method manual` asked for this).
        task_unavailable: Option<String>,
    },
}

impl Redrive {
    pub fn describe(&self) -> String {
        match self {
            Redrive::Task {
                handle,
                status,
                moved,
                to_move,
                failure,
            } => {
                let total = to_move.map(|n| format!(" of {n}")).unwrap_or_default();
                let failure = failure
                    .as_deref()
                    .map(|f| format!("; failure: {f}"))
                    .unwrap_or_default();
                format!(
                    "method: StartMessageMoveTask (task {handle})\nstatus: {status}, {moved}{total} message(s) moved{failure}"
                )
            }
            Redrive::Manual {
                moved,
                task_unavailable,
            } => {
                let why = task_unavailable
                    .as_deref()
                    .map(|r| format!(" (StartMessageMoveTask is not available here: {r})"))
                    .unwrap_or_default();
                format!(
                    "method: receive/send/delete, same MessageGroupId and MessageDeduplicationId{why}\nmoved {moved} message(s)"
                )
            }
        }
    }
}

/// The queue's ARN.
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> anyhow::Result<String> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .with_context(|| format!("GetQueueAttributes {url}"))?;
    out.attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .ok_or_else(|| anyhow!("no QueueArn for {url}"))
}

/// Error codes that say the operation does not exist at this endpoint.
const UNSUPPORTED_CODES: &[&str] = &[
    "UnsupportedOperation",
    "AWS.SimpleQueueService.UnsupportedOperation",
    "InvalidAction",
    "UnknownOperationException",
    "UnknownOperation",
    "NotImplemented",
];

/// Whether a failed call means "this server does not do that" rather than "that failed":
/// a code saying so, 501, or a 5xx that is not an AWS error document at all (moto answers an
/// HTML 500 for an action it has not implemented). Access and validation errors are not.
fn unsupported<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> Option<String> {
    unsupported_reason(err.raw_response().map(|r| r.status().as_u16()), err.code())
}

fn unsupported_reason(status: Option<u16>, code: Option<&str>) -> Option<String> {
    if let Some(code) = code.filter(|c| UNSUPPORTED_CODES.contains(c)) {
        return Some(format!("error code {code}"));
    }
    // Without an error document, some parsers fall back to the status as the code.
    let no_code = code.is_none_or(|c| c.chars().all(|ch| ch.is_ascii_digit()));
    match status {
        Some(501) => Some("HTTP 501".to_owned()),
        Some(s) if s >= 500 && no_code => Some(format!("HTTP {s} without an AWS error code")),
        _ => None,
    }
}

/// Moves every message of the dead-letter queue back to the queue.
pub async fn redrive(
    sqs: &aws_sdk_sqs::Client,
    dlq_url: &str,
    queue_url: &str,
    method: Method,
    wait: Duration,
) -> anyhow::Result<Redrive> {
    if method == Method::Manual {
        let moved = move_one_by_one(sqs, dlq_url, queue_url).await?;
        return Ok(Redrive::Manual {
            moved,
            task_unavailable: None,
        });
    }
    let source_arn = queue_arn(sqs, dlq_url).await?;
    let destination_arn = queue_arn(sqs, queue_url).await?;
    let started = sqs
        .start_message_move_task()
        .source_arn(&source_arn)
        .destination_arn(&destination_arn)
        .send()
        .await;
    let handle = match started {
        Ok(out) => out.task_handle().unwrap_or_default().to_owned(),
        Err(err) => {
            if method == Method::Auto {
                if let Some(reason) = unsupported(&err) {
                    let moved = move_one_by_one(sqs, dlq_url, queue_url).await?;
                    return Ok(Redrive::Manual {
                        moved,
                        task_unavailable: Some(reason),
                    });
                }
            }
            bail!(
                "StartMessageMoveTask: {}",
                aws_sdk_sqs::error::DisplayErrorContext(err)
            );
        }
    };
    let deadline = Instant::now() + wait;
    loop {
        let out = sqs
            .list_message_move_tasks()
            .source_arn(&source_arn)
            .max_results(1)
            .send()
            .await
            .context("ListMessageMoveTasks")?;
        // The most recent task first: ours (only one may run per source).
        let latest = out.results().first();
        let status = latest
            .and_then(|t| t.status())
            .unwrap_or("UNKNOWN")
            .to_owned();
        if status != "RUNNING" || Instant::now() >= deadline {
            return Ok(Redrive::Task {
                handle,
                status,
                moved: latest.map_or(0, |t| t.approximate_number_of_messages_moved()),
                to_move: latest.and_then(|t| t.approximate_number_of_messages_to_move()),
                failure: latest.and_then(|t| t.failure_reason()).map(str::to_owned),
            });
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Receive, send (same group and deduplication ids, same attributes), delete; one message at
/// a time so a group keeps its order. A message is deleted only after its send succeeded.
async fn move_one_by_one(
    sqs: &aws_sdk_sqs::Client,
    dlq_url: &str,
    queue_url: &str,
) -> anyhow::Result<usize> {
    let fifo = queue_url.ends_with(".fifo");
    let mut moved = 0;
    loop {
        let out = sqs
            .receive_message()
            .queue_url(dlq_url)
            .max_number_of_messages(10)
            .visibility_timeout(60)
            .wait_time_seconds(1)
            .message_system_attribute_names(Sys::All)
            .message_attribute_names("All")
            .send()
            .await
            .with_context(|| format!("ReceiveMessage from {dlq_url} (moved {moved} so far)"))?;
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(moved);
        }
        for m in messages {
            let id = m.message_id().unwrap_or_default().to_owned();
            let attribute = |name: Sys| m.attributes().and_then(|a| a.get(&name)).cloned();
            let mut send = sqs
                .send_message()
                .queue_url(queue_url)
                .message_body(m.body().unwrap_or_default())
                .set_message_attributes(m.message_attributes().cloned());
            if fifo {
                let group = attribute(Sys::MessageGroupId)
                    .ok_or_else(|| anyhow!("message {id} has no MessageGroupId for the FIFO queue (moved {moved} so far)"))?;
                send = send
                    .message_group_id(group)
                    .set_message_deduplication_id(attribute(Sys::MessageDeduplicationId));
            }
            send.send()
                .await
                .with_context(|| format!("SendMessage of {id} to {queue_url} (moved {moved} so far; it stays on the dead-letter queue)"))?;
            sqs.delete_message()
                .queue_url(dlq_url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await
                .with_context(|| format!("DeleteMessage of {id} from {dlq_url}: it is on both queues now; the ledger makes the second run a duplicate"))?;
            moved += 1;
        }
    }
}

// --- why --------------------------------------------------------------------------------------

/// The ledger's side of a dead letter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerView {
    Item(Box<Record>),
    Absent,
    /// The message is not an envelope: there is no key to look up.
    NoKey,
    Error(String),
}

/// One dead-lettered message, as `why` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub message_id: String,
    pub group_id: Option<String>,
    pub dedup_id: Option<String>,
    /// Receives so far, counting the main queue's and this look.
    pub receive_count: Option<u64>,
    /// Epoch milliseconds the message was first sent.
    pub sent_at_ms: Option<i64>,
    /// The envelope's key and source, or why it could not be read.
    pub envelope: Result<(String, String), String>,
    pub ledger: LedgerView,
}

impl DeadLetter {
    pub fn key(&self) -> Option<&str> {
        self.envelope.as_ref().ok().map(|(k, _)| k.as_str())
    }

    /// What the item says, and what to do.
    pub fn hint(&self, now_ms: i64) -> &'static str {
        match &self.ledger {
            LedgerView::NoKey => "not an envelope: the consumer cannot read it, a redrive dead-letters it again; inspect it in the console",
            LedgerView::Error(_) => "the ledger could not be read; retry",
            LedgerView::Absent => "no ledger item (expired and deleted, or never claimed): a redrive runs it as a new event",
            LedgerView::Item(r) if r.is_expired(now_ms) => {
                "ledger item past expires_at: it counts as absent, a redrive runs it as a new event"
            }
            LedgerView::Item(r) => match r.status {
                Status::Failed => "the side effect failed: fix the cause (last_error), then redrive",
                Status::Completed => "already completed: a redriven copy is acknowledged without running again",
                Status::Processing => "a consumer holds or held the lease: if its lease ran out, a redrive takes it over",
                Status::Received | Status::Queued => {
                    "never taken by the consumer (the ledger was unreachable?): redrive to retry"
                }
            },
        }
    }
}

/// The `why` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Why {
    pub letters: Vec<DeadLetter>,
    /// `ApproximateNumberOfMessages` of the dead-letter queue before the look.
    pub approximate_depth: Option<i64>,
}

/// Looks at every message on the dead-letter queue without removing it: receives them (hidden
/// for at most `peek_seconds`), reads their keys, then makes them visible again. On a FIFO
/// queue a group shows only the messages of it that one receive returns (at most 10).
pub async fn why(
    sqs: &aws_sdk_sqs::Client,
    ledger: &DynamoLedger,
    dlq_url: &str,
    peek_seconds: i32,
) -> anyhow::Result<Why> {
    let depth = sqs
        .get_queue_attributes()
        .queue_url(dlq_url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .with_context(|| format!("GetQueueAttributes {dlq_url}"))?
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
        .and_then(|n| n.parse().ok());
    let mut seen = HashSet::new();
    let mut handles = Vec::new();
    let mut letters = Vec::new();
    let looked = async {
        loop {
            let out = sqs
                .receive_message()
                .queue_url(dlq_url)
                .max_number_of_messages(10)
                .visibility_timeout(peek_seconds)
                .wait_time_seconds(1)
                .message_system_attribute_names(Sys::All)
                .send()
                .await
                .with_context(|| format!("ReceiveMessage from {dlq_url}"))?;
            let messages = out.messages.unwrap_or_default();
            // Done when nothing is left, or only messages already seen come back (the look
            // outlasted `peek_seconds` and the first ones are visible again).
            if messages
                .iter()
                .all(|m| seen.contains(m.message_id().unwrap_or_default()))
            {
                return anyhow::Ok(());
            }
            for m in messages {
                handles.push(m.receipt_handle().unwrap_or_default().to_owned());
                let id = m.message_id().unwrap_or_default().to_owned();
                if !seen.insert(id.clone()) {
                    continue;
                }
                let attribute = |name: Sys| m.attributes().and_then(|a| a.get(&name)).cloned();
                let envelope = match m.body().map(Envelope::parse) {
                    Some(Ok(env)) => Ok((env.key, env.source)),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("no body".to_owned()),
                };
                let ledger_view = match &envelope {
                    Err(_) => LedgerView::NoKey,
                    Ok((key, _)) => match ledger.get(key).await {
                        Ok(Some(record)) => LedgerView::Item(Box::new(record)),
                        Ok(None) => LedgerView::Absent,
                        Err(e) => LedgerView::Error(e.to_string()),
                    },
                };
                letters.push(DeadLetter {
                    message_id: id,
                    group_id: attribute(Sys::MessageGroupId),
                    dedup_id: attribute(Sys::MessageDeduplicationId),
                    receive_count: attribute(Sys::ApproximateReceiveCount)
                        .and_then(|n| n.parse().ok()),
                    sent_at_ms: attribute(Sys::SentTimestamp).and_then(|n| n.parse().ok()),
                    envelope,
                    ledger: ledger_view,
                });
            }
        }
    }
    .await;
    // Visible again at once, whatever happened, so a redrive can follow right away.
    for handle in &handles {
        let _ = sqs
            .change_message_visibility()
            .queue_url(dlq_url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
            .await;
    }
    looked?;
    Ok(Why {
        letters,
        approximate_depth: depth,
    })
}

impl Why {
    pub fn to_json(&self, now_ms: i64) -> Value {
        let letters: Vec<Value> = self
            .letters
            .iter()
            .map(|d| {
                let (status, attempts, last_error, expires_at) = match &d.ledger {
                    LedgerView::Item(r) => (
                        json!(r.status.as_str()),
                        json!(r.attempts),
                        json!(r.last_error),
                        json!(r.expires_at),
                    ),
                    _ => (Value::Null, Value::Null, Value::Null, Value::Null),
                };
                json!({
                    "message_id": d.message_id,
                    "key": d.key(),
                    "source": d.envelope.as_ref().ok().map(|(_, s)| s),
                    "envelope_error": d.envelope.as_ref().err(),
                    "group_id": d.group_id,
                    "deduplication_id": d.dedup_id,
                    "receive_count": d.receive_count,
                    "sent_at_ms": d.sent_at_ms,
                    "ledger": match &d.ledger {
                        LedgerView::Item(_) => "found",
                        LedgerView::Absent => "absent",
                        LedgerView::NoKey => "no_key",
                        LedgerView::Error(_) => "error",
                    },
                    "ledger_error": match &d.ledger { LedgerView::Error(e) => Some(e), _ => None },
                    "status": status,
                    "attempts": attempts,
                    "last_error": last_error,
                    "expires_at": expires_at,
                    "hint": d.hint(now_ms),
                })
            })
            .collect();
        json!({"approximate_depth": self.approximate_depth, "messages": letters})
    }

    pub fn to_text(&self, now_ms: i64) -> String {
        if self.letters.is_empty() {
            return "the dead-letter queue is empty\n".to_owned();
        }
        let mut out = String::new();
        for d in &self.letters {
            let head = match (&d.envelope, &d.ledger) {
                (Err(e), _) => format!("(no key: {e})"),
                (Ok((key, _)), LedgerView::Item(r)) => format!(
                    "{key}  {}  attempts {}  last_error: {}",
                    r.status.as_str(),
                    r.attempts,
                    r.last_error.as_deref().unwrap_or("-")
                ),
                (Ok((key, _)), LedgerView::Absent) => format!("{key}  no ledger item"),
                (Ok((key, _)), LedgerView::Error(e)) => format!("{key}  ledger error: {e}"),
                (Ok((key, _)), LedgerView::NoKey) => key.clone(),
            };
            out.push_str(&head);
            out.push('\n');
            out.push_str(&format!(
                "  message {}  group {}  received {} time(s)  first sent {}\n",
                d.message_id,
                d.group_id.as_deref().unwrap_or("-"),
                d.receive_count.map_or("?".to_owned(), |n| n.to_string()),
                d.sent_at_ms.map_or("?".to_owned(), utc),
            ));
            out.push_str(&format!("  -> {}\n", d.hint(now_ms)));
        }
        out.push_str(&format!(
            "{} message(s) shown; the queue reported about {} before this look\n",
            self.letters.len(),
            self.approximate_depth
                .map_or("?".to_owned(), |n| n.to_string())
        ));
        out
    }
}

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// --- lookup -----------------------------------------------------------------------------------

/// A DynamoDB attribute as plain JSON: strings, numbers, booleans, lists, maps; binary as base64.
pub fn attribute_json(value: &AttributeValue) -> Value {
    let number = |n: &str| {
        n.parse::<i64>()
            .map(Value::from)
            .or_else(|_| n.parse::<f64>().map(Value::from))
            .unwrap_or_else(|_| Value::String(n.to_owned()))
    };
    let b64 = |b: &aws_sdk_dynamodb::primitives::Blob| {
        Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_ref()))
    };
    match value {
        AttributeValue::S(s) => Value::String(s.clone()),
        AttributeValue::N(n) => number(n),
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::L(items) => Value::Array(items.iter().map(attribute_json).collect()),
        AttributeValue::M(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), attribute_json(v)))
                .collect(),
        ),
        AttributeValue::Ss(items) => json!(items),
        AttributeValue::Ns(items) => Value::Array(items.iter().map(|n| number(n)).collect()),
        AttributeValue::B(blob) => b64(blob),
        AttributeValue::Bs(blobs) => Value::Array(blobs.iter().map(b64).collect()),
        other => Value::String(format!("{other:?}")),
    }
}

/// The ledger item of `key`, every attribute, as JSON (a consistent read).
pub async fn lookup(
    dynamo: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &str,
) -> anyhow::Result<Option<Value>> {
    let out = dynamo
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(key.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| {
            anyhow!(
                "GetItem on {table}: {}",
                aws_sdk_dynamodb::error::DisplayErrorContext(e)
            )
        })?;
    Ok(out.item().map(|item| {
        Value::Object(
            item.iter()
                .map(|(k, v)| (k.clone(), attribute_json(v)))
                .collect(),
        )
    }))
}

// --- the command ------------------------------------------------------------------------------

fn now_ms() -> i64 {
    inbox::clock::Clock::now_ms(&inbox::clock::SystemClock)
}

/// Runs one command, printing to stdout; the exit code: 0 done, 1 failed or not found.
pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    let sdk = inbox::app::sdk_config;
    match command {
        Command::Help => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Why {
            dlq,
            table,
            json,
            peek_seconds,
        } => {
            let sdk = sdk().await;
            let sqs = aws_sdk_sqs::Client::new(&sdk);
            let ledger = DynamoLedger::new(aws_sdk_dynamodb::Client::new(&sdk), table);
            let answer = why(&sqs, &ledger, &dlq, peek_seconds).await?;
            if json {
                println!("{:#}", answer.to_json(now_ms()));
            } else {
                print!("{}", answer.to_text(now_ms()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Redrive {
            dlq,
            queue,
            method,
            wait,
        } => {
            let sqs = aws_sdk_sqs::Client::new(&sdk().await);
            let done = redrive(&sqs, &dlq, &queue, method, wait).await?;
            println!("{}", done.describe());
            Ok(match &done {
                Redrive::Task { status, .. } if status != "COMPLETED" && status != "RUNNING" => {
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            })
        }
        Command::Lookup { table, key } => {
            let dynamo = aws_sdk_dynamodb::Client::new(&sdk().await);
            match lookup(&dynamo, &table, &key).await? {
                Some(item) => {
                    println!("{item:#}");
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!(
                        "no item for `{key}` in {table}: never claimed, or deleted by TTL after expires_at"
                    );
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

/// The binary's whole body.
pub async fn main(args: Vec<String>) -> ExitCode {
    let outcome = match parse_args(&args, |name| std::env::var(name).ok()) {
        Ok(command) => run(command).await,
        Err(e) => Err(e),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("inbox-ops: {e:#}");
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_each_command_with_env_fallbacks() {
        let env = |name: &str| match name {
            "LEDGER_TABLE" => Some("t-env".to_owned()),
            "QUEUE_URL" => Some("q-env".to_owned()),
            _ => None,
        };
        assert_eq!(
            parse_args(&args(&["why", "--dlq", "d"]), env).unwrap(),
            Command::Why {
                dlq: "d".into(),
                table: "t-env".into(),
                json: false,
                peek_seconds: DEFAULT_PEEK_SECONDS
            }
        );
        assert_eq!(
            parse_args(
                &args(&["redrive", "--dlq", "d", "--method", "manual", "--wait", "5"]),
                env
            )
            .unwrap(),
            Command::Redrive {
                dlq: "d".into(),
                queue: "q-env".into(),
                method: Method::Manual,
                wait: Duration::from_secs(5)
            }
        );
        assert_eq!(
            parse_args(&args(&["lookup", "--table", "t", "github:abc"]), env).unwrap(),
            Command::Lookup {
                table: "t".into(),
                key: "github:abc".into()
            }
        );
        assert_eq!(parse_args(&[], env).unwrap(), Command::Help);
    }

    #[test]
    fn refuses_what_it_cannot_run() {
        let none = |_: &str| None;
        let e = parse_args(&args(&["why", "--table", "t"]), none)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dlq") && e.contains("DLQ_URL"), "{e}");
        assert!(parse_args(&args(&["lookup", "--table", "t"]), none).is_err());
        assert!(parse_args(&args(&["lookup", "--table", "t", "a", "b"]), none).is_err());
        assert!(parse_args(
            &args(&["redrive", "--dlq", "d", "--queue", "q", "--method", "fast"]),
            none
        )
        .is_err());
        assert!(parse_args(&args(&["frobnicate"]), none).is_err());
        assert!(parse_args(
            &args(&["why", "--dlq", "d", "--table", "t", "--colour"]),
            none
        )
        .is_err());
    }

    #[test]
    fn falls_back_only_where_the_server_lacks_the_action() {
        assert!(
            unsupported_reason(Some(500), None).is_some(),
            "moto's HTML 500"
        );
        assert!(unsupported_reason(Some(500), Some("500")).is_some());
        assert!(unsupported_reason(Some(501), Some("NotImplemented")).is_some());
        assert!(unsupported_reason(Some(400), Some("UnsupportedOperation")).is_some());
        assert!(unsupported_reason(Some(400), Some("InvalidAction")).is_some());
        assert!(unsupported_reason(Some(403), Some("AccessDenied")).is_none());
        assert!(unsupported_reason(Some(400), Some("ResourceNotFoundException")).is_none());
        assert!(unsupported_reason(Some(400), Some("InvalidParameterValue")).is_none());
        assert!(unsupported_reason(Some(500), Some("InternalError")).is_none());
        assert!(
            unsupported_reason(None, None).is_none(),
            "no answer at all is not a verdict"
        );
    }

    #[test]
    fn utc_formats_epoch_milliseconds() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_220_000_123), "2026-12-02T14:00:00Z");
    }

    #[test]
    fn attributes_become_plain_json() {
        use std::collections::HashMap;
        let map: HashMap<String, AttributeValue> = [
            ("n".to_owned(), AttributeValue::N("42".into())),
            ("f".to_owned(), AttributeValue::N("1.5".into())),
            ("s".to_owned(), AttributeValue::S("x".into())),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            attribute_json(&AttributeValue::M(map)),
            json!({"n": 42, "f": 1.5, "s": "x"})
        );
        assert_eq!(attribute_json(&AttributeValue::Bool(true)), json!(true));
        assert_eq!(
            attribute_json(&AttributeValue::L(vec![AttributeValue::Null(true)])),
            json!([null])
        );
    }
}
