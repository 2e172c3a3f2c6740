//! `inbox-ops why`: each message on the dead-letter queue by its key, its queue attributes and
//! its ledger item (status, attempts, last_error) and, for a routed event, each destination's
//! item (docs/routing.md), with what to do about it. The messages are
//! only looked at: they are visible again on the dead-letter queue when it is done. Nothing here
//! prints a body or a header of a webhook; what it prints of a message or an item (a key, an
//! error) is shown escaped ([`crate::text`]).

use crate::stack::DEFAULT_STACK;
use clap::builder::NonEmptyStringValueParser;
use clap::Args;
use std::collections::HashSet;
use std::process::ExitCode;

use anyhow::Context as _;
use aws_sdk_sqs::types::{MessageSystemAttributeName as Sys, QueueAttributeName};
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Record, Status};
use inbox::queue::Envelope;
use inbox::route::Routes;
use serde_json::{json, Value};

use crate::aws;
use crate::destination_state::{self, DestinationState};
use crate::text::{json_shown, shown};

/// `why`'s arguments.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct WhyArgs {
    /// The stack whose outputs name what a flag below leaves out.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_STACK, value_parser = NonEmptyStringValueParser::new())]
    pub stack: String,
    /// The dead-letter queue's URL [default: the stack's DeadLetterQueueUrl].
    #[arg(long, env = "DLQ_URL", value_name = "DLQ_URL", value_parser = NonEmptyStringValueParser::new())]
    pub dlq: Option<String>,
    /// The ledger table's name [default: the stack's LedgerTableName].
    #[arg(long, env = "LEDGER_TABLE", value_name = "LEDGER_TABLE", value_parser = NonEmptyStringValueParser::new())]
    pub table: Option<String>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Seconds the messages looked at stay invisible, at most (visible again when done).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_PEEK_SECONDS,
        value_parser = clap::value_parser!(i32).range(1..=43_200)
    )]
    pub peek: i32,
}

/// Seconds a `why` keeps the messages it looked at invisible, at most (they are made visible
/// again as soon as it is done).
pub const DEFAULT_PEEK_SECONDS: i32 = 30;

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
    /// A routed event's destinations, each with its pair's item, or why they could not be
    /// read (none for a source that
    /// forwards to `FORWARD_URL`).
    pub destinations: Result<Vec<DestinationState>, String>,
    /// The event's trace id, from the envelope's `traceparent` (it travels with the message
    /// through the dead-letter queue), and its link under `TRACE_LINK_FORMAT`.
    pub trace_id: Option<String>,
    pub trace_link: Option<String>,
}

impl DeadLetter {
    pub fn key(&self) -> Option<&str> {
        self.envelope.as_ref().ok().map(|(k, _)| k.as_str())
    }

    /// What the items say, and what to do: for a routed event, which destinations are left.
    pub fn hint(&self, now_ms: i64) -> String {
        if self.destinations.is_err() {
            return "the ledger could not be read; retry".to_owned();
        }
        if let Some(left) = self
            .destinations
            .as_deref()
            .ok()
            .and_then(destination_state::hint)
        {
            return left;
        }
        self.event_hint(now_ms).to_owned()
    }

    /// What the event's own item says, and what to do.
    fn event_hint(&self, now_ms: i64) -> &'static str {
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
#[allow(
    clippy::too_many_lines,
    reason = "one command read top to bottom: receive, explain each message, make them visible again"
)]
pub async fn why(
    sqs: &aws_sdk_sqs::Client,
    ledger: &DynamoLedger,
    routes: &Routes,
    dlq_url: &str,
    peek_seconds: i32,
) -> anyhow::Result<Why> {
    let now = now_ms();
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
                let parsed = m.body().map(Envelope::parse);
                let destinations = match &parsed {
                    Some(Ok(env)) => destination_state::states(
                        ledger,
                        routes,
                        &env.key,
                        &env.source,
                        env.event_type.as_deref(),
                        now,
                    )
                    .await
                    .map_err(|e| e.to_string()),
                    _ => Ok(Vec::new()),
                };
                let trace_id = match &parsed {
                    Some(Ok(env)) => env.trace_id(),
                    _ => None,
                };
                let trace_link = trace_id
                    .as_deref()
                    .and_then(crate::trace_link::link_from_env);
                let envelope = match parsed {
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
                    destinations,
                    trace_id,
                    trace_link,
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
                    "destinations": d.destinations.as_deref().unwrap_or_default().iter().map(DestinationState::to_json).collect::<Vec<_>>(),
                    "destinations_error": d.destinations.as_ref().err(),
                    "hint": d.hint(now_ms),
                    "trace_id": d.trace_id,
                    "trace_link": d.trace_link,
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
            // The key, the errors and the ids come from a message: shown escaped.
            let head = match (&d.envelope, &d.ledger) {
                (Err(e), _) => format!("(no key: {})", shown(e)),
                (Ok((key, _)), LedgerView::Item(r)) => format!(
                    "{}  {}  attempts {}  last_error: {}",
                    shown(key),
                    r.status.as_str(),
                    r.attempts,
                    shown(r.last_error.as_deref().unwrap_or("-"))
                ),
                (Ok((key, _)), LedgerView::Absent) => format!("{}  no ledger item", shown(key)),
                (Ok((key, _)), LedgerView::Error(e)) => {
                    format!("{}  ledger error: {}", shown(key), shown(e))
                }
                (Ok((key, _)), LedgerView::NoKey) => shown(key).into_owned(),
            };
            out.push_str(&head);
            out.push('\n');
            match &d.destinations {
                Ok(states) => {
                    for state in states {
                        out.push_str(&format!("  {}\n", state.to_text()));
                    }
                }
                Err(e) => out.push_str(&format!("  destinations unreadable: {}\n", shown(e))),
            }
            out.push_str(&format!(
                "  message {}  group {}  received {} time(s)  first sent {}\n",
                shown(&d.message_id),
                shown(d.group_id.as_deref().unwrap_or("-")),
                d.receive_count.map_or("?".to_owned(), |n| n.to_string()),
                d.sent_at_ms.map_or("?".to_owned(), utc),
            ));
            if let Some(id) = &d.trace_id {
                let link = d.trace_link.as_deref().map(|l| format!("  {}", shown(l)));
                out.push_str(&format!("  trace {id}{}\n", link.unwrap_or_default()));
            }
            out.push_str(&format!("  -> {}\n", shown(&d.hint(now_ms))));
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

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC, the second truncated); the bare number
/// for a time outside the years -9999 to 9999.
pub fn utc(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => format!("{ms} ms since 1970"),
    }
}

fn now_ms() -> i64 {
    inbox::clock::Clock::now_ms(&inbox::clock::SystemClock)
}

/// Runs `why`, printing the answer as text or (`--json`) as JSON.
pub async fn run(args: &WhyArgs) -> anyhow::Result<ExitCode> {
    let config = aws::config().await;
    let mut stack = crate::stack::Lazy::new(&config, &args.stack);
    let table = stack
        .pick(args.table.as_deref(), crate::stack::TABLE_OUTPUT, |r| {
            &r.table
        })
        .await?;
    let dlq = stack
        .pick(args.dlq.as_deref(), crate::stack::DLQ_OUTPUT, |r| {
            &r.dlq_url
        })
        .await?;
    let routes = stack.routes_to_show().await;
    let ledger = DynamoLedger::new(aws::dynamo(&config), table);
    let answer = why(&aws::sqs(&config), &ledger, &routes, &dlq, args.peek).await?;
    if args.json {
        println!("{}", json_shown(&answer.to_json(now_ms())));
    } else {
        print!("{}", answer.to_text(now_ms()));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_epoch_milliseconds() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_220_000_123), "2026-12-02T14:00:00Z");
        assert_eq!(
            utc(-1),
            "1969-12-31T23:59:59Z",
            "the second before, not after"
        );
    }

    /// A forged dead letter: its key, group, `last_error` and destination's error hold
    /// terminal escapes, a newline and a bidi override.
    fn forged() -> Why {
        let key = "github:\x1b[2J\x1b]0;pwned\x07\nok: nothing to see\u{202e}";
        let mut state = destination_state::example(
            "crm",
            Some(Status::Failed),
            1,
            Some("HTTP 500: \x1b[31mred"),
        );
        state.name = "crm\x1b[1m".into();
        let record = Record {
            last_error: Some("boom \x1b[2J".into()),
            ..state.record.clone().expect("a record")
        };
        Why {
            letters: vec![
                DeadLetter {
                    message_id: "m-1".into(),
                    group_id: Some(key.into()),
                    dedup_id: None,
                    receive_count: Some(1),
                    sent_at_ms: Some(0),
                    envelope: Ok((key.into(), "github".into())),
                    ledger: LedgerView::Item(Box::new(record)),
                    destinations: Ok(vec![state]),
                    trace_id: None,
                    trace_link: None,
                },
                DeadLetter {
                    message_id: "m-2".into(),
                    group_id: None,
                    dedup_id: None,
                    receive_count: None,
                    sent_at_ms: None,
                    envelope: Err("not an envelope: \x1b[2J".into()),
                    ledger: LedgerView::NoKey,
                    destinations: Err("\x1b[2J".into()),
                    trace_id: None,
                    trace_link: None,
                },
            ],
            approximate_depth: Some(2),
        }
    }

    #[test]
    fn why_shows_a_forged_key_escaped_never_its_escapes() {
        let text = forged().to_text(0);
        assert!(!text.contains('\x1b'), "{text}");
        assert!(!text.contains('\u{202e}'), "{text}");
        assert!(!text.contains('\x07'), "{text}");
        assert!(
            text.contains(
                "github:\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{a}ok: nothing to see\\u{202e}"
            ),
            "{text}"
        );
        // The key's newline made no line of its own.
        assert!(!text.lines().any(|l| l.starts_with("ok:")), "{text}");
        let json = json_shown(&forged().to_json(0));
        assert!(
            !json.contains('\x1b') && !json.contains('\u{202e}'),
            "{json}"
        );
    }
}
