//! `inbox-ops redrive`: moves every message of the dead-letter queue back to the webhook queue,
//! with SQS's own move task (StartMessageMoveTask) where the server has it, else one message at
//! a time (receive, send with the same MessageGroupId and MessageDeduplicationId, delete).

use crate::stack::DEFAULT_STACK;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use aws_sdk_sqs::config::http::HttpResponse;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::MessageSystemAttributeName as Sys;

use crate::aws;
use inbox::queue::SqsQueue;

/// `redrive`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct RedriveArgs {
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The dead-letter queue's URL [default: the stack's DeadLetterQueueUrl].
    #[arg(long, env = "DLQ_URL", value_name = "DLQ_URL", value_parser = NonEmptyStringValueParser::new())]
    pub dlq: Option<String>,
    /// The webhook queue's URL [default: the stack's QueueUrl].
    #[arg(long, env = "QUEUE_URL", value_name = "QUEUE_URL", value_parser = NonEmptyStringValueParser::new())]
    pub queue: Option<String>,
    /// How the messages are moved.
    #[arg(long, value_enum, default_value_t = Method::Auto)]
    pub method: Method,
    /// Seconds to wait for a move task to finish.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_WAIT_SECONDS)]
    pub wait: u64,
}

/// How long `redrive` waits for a move task to finish.
pub const DEFAULT_WAIT_SECONDS: u64 = 300;

/// How `redrive` moves messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// StartMessageMoveTask; receive/send/delete where the server does not support it.
    #[default]
    Auto,
    /// StartMessageMoveTask only.
    Task,
    /// Receive/send/delete only.
    Manual,
}

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
    let source_arn = SqsQueue::new(sqs.clone(), dlq_url).arn().await?;
    let destination_arn = SqsQueue::new(sqs.clone(), queue_url).arn().await?;
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

/// Runs `redrive`, printing what it did; exit code 1 when a move task ended other than
/// COMPLETED (or still RUNNING at the end of `--wait`).
pub async fn run(args: &RedriveArgs) -> anyhow::Result<ExitCode> {
    let sdk = aws::config().await;
    let mut stack = crate::stack::Lazy::new(&sdk, &args.stack);
    let dlq = stack
        .pick(args.dlq.as_deref(), crate::stack::DLQ_OUTPUT, |r| {
            &r.dlq_url
        })
        .await?;
    let queue = stack
        .pick(args.queue.as_deref(), crate::stack::QUEUE_OUTPUT, |r| {
            &r.queue_url
        })
        .await?;
    let sqs = aws::sqs(&sdk);
    let wait = Duration::from_secs(args.wait);
    let done = redrive(&sqs, &dlq, &queue, args.method, wait).await?;
    println!("{}", done.describe());
    Ok(match &done {
        Redrive::Task { status, .. } if status != "COMPLETED" && status != "RUNNING" => {
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
