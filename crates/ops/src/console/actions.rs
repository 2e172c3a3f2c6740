//! The actions, each in two steps: a GET that shows what would happen (the dry run: the events
//! a replay selects, the dead-letter queue's depth, the mapping's state) with a form to
//! confirm, and the POST of that form, which checks the run's CSRF token and then calls the
//! very functions the CLI command calls: `replay::select` and `replay::send` (`inbox-ops
//! replay`), `redrive::redrive` (`inbox-ops redrive`), `esm::set_enabled` (`inbox-ops pause`
//! and `resume`).

use crate::replay::StatusFilter;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;

use super::error::ConsoleError;
use super::layout::{csrf_field, page, time, Nav};
use super::pages::encode;
use super::Console;
use crate::esm;
use crate::redrive::{self, Method};
use crate::replay::{self, Selected, Selection, Skipped};

/// Replays from the console go at the CLI's default rate.
const REPLAY_PER_SECOND: u32 = 10;
/// How long an action waits for SQS or Lambda to settle before it answers.
const SETTLE: Duration = Duration::from_secs(30);
/// The dry run lists at most this many events (the count is of all).
const LISTED: usize = 200;

/// A replay's selection as the forms carry it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReplayForm {
    pub key: Option<String>,
    pub source: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub status: Option<String>,
    pub csrf: Option<String>,
}

impl ReplayForm {
    fn selection(&self, now_ms: i64) -> Result<(Selection, StatusFilter), ConsoleError> {
        let status = match self.status.as_deref().unwrap_or("") {
            "" => StatusFilter::Any,
            "COMPLETED" => StatusFilter::Completed,
            "FAILED" => StatusFilter::Failed,
            other => {
                return Err(ConsoleError::BadInput(format!(
                    "a replay selects by status COMPLETED or FAILED (or any), not {other}"
                )))
            }
        };
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().filter(|v| !v.is_empty())
        }
        let time = |v: &Option<String>, default: i64| match given(v) {
            Some(text) => replay::parse_time(text).map_err(ConsoleError::BadInput),
            None => Ok(default),
        };
        let selection = match (given(&self.key), given(&self.source)) {
            (Some(key), None) => Selection::Key(key.to_owned()),
            (None, Some(source)) => Selection::Range {
                source: source.to_owned(),
                from_ms: time(&self.from, now_ms - 24 * 3_600_000)?,
                to_ms: time(&self.to, now_ms + 60_000)?,
                archive_lag_ms: 3_600_000,
            },
            _ => {
                return Err(ConsoleError::BadInput(
                    "a replay is of one key, or of one source's time range".into(),
                ))
            }
        };
        Ok((selection, status))
    }

    fn hidden(&self) -> Markup {
        html! {
            @for (name, value) in [("key", &self.key), ("source", &self.source), ("from", &self.from), ("to", &self.to), ("status", &self.status)] {
                @if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) { input type="hidden" name=(name) value=(v); }
            }
        }
    }
}

fn describe(selection: &Selection, status: StatusFilter) -> String {
    let status = match status {
        StatusFilter::Any => "",
        StatusFilter::Completed => " (COMPLETED only)",
        StatusFilter::Failed => " (FAILED only)",
    };
    match selection {
        Selection::Key(key) => format!("the event {}{status}", crate::text::shown(key)),
        Selection::Range {
            source,
            from_ms,
            to_ms,
            ..
        } => format!(
            "{}'s events received from {} to {}{status}",
            crate::text::shown(source),
            time(*from_ms),
            time(*to_ms)
        ),
    }
}

async fn select(
    c: &Console,
    form: &ReplayForm,
) -> Result<(Selection, StatusFilter, Selected), ConsoleError> {
    let (selection, status) = form.selection(c.now_ms())?;
    let (store, ledger) = c.archive()?;
    let selected = replay::select(&store, &ledger, &selection, status)
        .await
        .map_err(ConsoleError::Aws)?;
    Ok((selection, status, selected))
}

/// What a replay passed over, and why (planted or unaccepted archive objects, an expired item).
fn skipped_list(skipped: &[Skipped]) -> Markup {
    html! {
        @if !skipped.is_empty() {
            p.warn #skipped { (skipped.len()) " archived envelope(s) passed over:" }
            ul {
                @for s in skipped.iter().take(LISTED) {
                    li { code { (crate::text::shown(&s.key)) } " in " code { (crate::text::shown(&s.object)) } ": " (s.reason) }
                }
            }
        }
    }
}

/// GET /replay: the dry run, then the form that sends it.
pub async fn replay_confirm(
    State(c): State<Arc<Console>>,
    Query(form): Query<ReplayForm>,
) -> Result<Markup, ConsoleError> {
    let (
        selection,
        status,
        Selected {
            candidates,
            skipped,
        },
    ) = select(&c, &form).await?;
    let what = describe(&selection, status);
    let body = html! {
        (skipped_list(&skipped))
        div.confirm {
            p { "Dry run: " strong { (candidates.len()) " event(s)" } " of " (what) " would be put back on the queue as one replay; the consumer forwards each once more (with "
                code { "Webhook-Replay-Id" } "), COMPLETED or not." }
            @if !candidates.is_empty() {
                form method="post" action="/replay" {
                    (csrf_field(c.guard.csrf())) (form.hidden())
                    button.danger type="submit" autofocus { "Replay " (candidates.len()) " event(s)" }
                    " " a href="/events" { "Cancel" }
                }
            }
        }
        @if !candidates.is_empty() {
            table {
                thead { tr { th { "key" } th { "received" } th { "status" } th { "archived in" } } }
                @for cand in candidates.iter().take(LISTED) {
                    tr { td.key { a href=(format!("/event?key={}", encode(&cand.envelope.key))) { (cand.envelope.key) } }
                        td { (time(cand.envelope.received_at)) }
                        td { (cand.status.map_or("(no ledger item)", |s| s.as_str())) }
                        td { code { (cand.object) } } }
                }
            }
        }
    };
    Ok(page(&c.stack.name, "Replay", Nav::Actions, body))
}

/// POST /replay: the CSRF check, the selection again, and the replay sent.
pub async fn replay_send(
    State(c): State<Arc<Console>>,
    Form(form): Form<ReplayForm>,
) -> Result<Markup, ConsoleError> {
    c.guard.check_csrf(form.csrf.as_deref())?;
    let (selection, status, Selected { candidates, .. }) = select(&c, &form).await?;
    let replay_id = replay::new_replay_id(c.now_ms());
    let queue = inbox::queue::SqsQueue::new(
        crate::aws::sqs(&c.sdk),
        c.need(&c.stack.queue_url, crate::stack::QUEUE_OUTPUT)?,
    );
    let (_, ledger) = c.archive()?;
    let sent = replay::send(
        &queue,
        &ledger,
        &candidates,
        &replay_id,
        REPLAY_PER_SECOND,
        |_| {},
    )
    .await
    .map_err(ConsoleError::Aws)?;
    let body = html! {
        p.ok #outcome { "replay " code { (replay_id) } ": " (sent.count) " event(s) sent" }
        (skipped_list(&sent.skipped))
        p { "Of " (describe(&selection, status)) ". The consumer forwards each once more; the ledger item records the replay id once it completed." }
        @if let Selection::Key(key) = &selection { p { a href=(format!("/event?key={}", encode(key))) { "Back to the event" } } }
    };
    Ok(page(&c.stack.name, "Replay sent", Nav::Actions, body))
}

/// POST forms of redrive and delivery carry only the token (and delivery its choice).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ActionForm {
    pub csrf: Option<String>,
    /// `pause` or `resume`.
    pub set: Option<String>,
}

/// GET /actions: what can be done, with the current state.
pub async fn actions(State(c): State<Arc<Console>>) -> Result<Markup, ConsoleError> {
    let status = c.status().await;
    let body = html! {
        h2 { "Delivery" }
        @match &status {
            Ok(s) => {
                p { "The consumer's event source mapping is " strong { (s.mapping.state) } "." }
                form method="get" action="/delivery" {
                    @if s.mapping.paused() { input type="hidden" name="set" value="resume"; button type="submit" { "Resume delivery…" } }
                    @else { input type="hidden" name="set" value="pause"; button.danger type="submit" { "Pause delivery…" } }
                }
                h2 { "Dead-letter queue" }
                p { (s.dlq.as_ref().map_or(0, |d| d.waiting)) " message(s) waiting." }
                form method="get" action="/redrive" { button type="submit" { "Redrive the dead-letter queue…" } }
            }
            Err(e) => { p.error { (e) } }
        }
        h2 { "Replay" }
        p { "From an event's page (one event), or from the list filtered by source (a time range)." }
    };
    Ok(page(&c.stack.name, "Actions", Nav::Actions, body))
}

/// GET /redrive: the depth, and the form that moves it.
pub async fn redrive_confirm(State(c): State<Arc<Console>>) -> Result<Markup, ConsoleError> {
    let waiting = c.status().await.map(|s| s.dlq.map_or(0, |d| d.waiting));
    let body = html! {
        div.confirm {
            @match &waiting {
                Ok(n) => p { strong { (n) " message(s)" } " on the dead-letter queue would be moved back to the webhook queue (StartMessageMoveTask, else receive/send/delete), as " code { "inbox-ops redrive" } " does." }
                Err(e) => p.error { (e) }
            }
            form method="post" action="/redrive" {
                (csrf_field(c.guard.csrf()))
                button.danger type="submit" autofocus { "Redrive" } " " a href="/actions" { "Cancel" }
            }
        }
    };
    Ok(page(
        &c.stack.name,
        "Redrive the dead-letter queue",
        Nav::Actions,
        body,
    ))
}

/// POST /redrive.
pub async fn redrive_send(
    State(c): State<Arc<Console>>,
    Form(form): Form<ActionForm>,
) -> Result<Markup, ConsoleError> {
    c.guard.check_csrf(form.csrf.as_deref())?;
    let dlq = c.need(&c.stack.dlq_url, crate::stack::DLQ_OUTPUT)?;
    let queue = c.need(&c.stack.queue_url, crate::stack::QUEUE_OUTPUT)?;
    let done = redrive::redrive(&crate::aws::sqs(&c.sdk), dlq, queue, Method::Auto, SETTLE)
        .await
        .map_err(ConsoleError::Aws)?;
    let body =
        html! { pre #outcome { (done.describe()) } p { a href="/" { "Back to the overview" } } };
    Ok(page(&c.stack.name, "Redrive", Nav::Actions, body))
}

fn enabling(set: Option<&str>) -> Result<bool, ConsoleError> {
    match set {
        Some("pause") => Ok(false),
        Some("resume") => Ok(true),
        _ => Err(ConsoleError::BadInput("set=pause or set=resume".into())),
    }
}

/// GET /delivery?set=pause|resume: what it does, and the form.
pub async fn delivery_confirm(
    State(c): State<Arc<Console>>,
    Query(form): Query<ActionForm>,
) -> Result<Markup, ConsoleError> {
    let enable = enabling(form.set.as_deref())?;
    let (verb, what) = if enable {
        (
            "Resume",
            "the consumer's event source mapping is enabled: what waits on the queue is delivered",
        )
    } else {
        ("Pause", "the consumer's event source mapping is disabled: the receiver keeps accepting, events wait on the queue")
    };
    let body = html! {
        div.confirm {
            p { (verb) " delivery: " (what) ", as " code { "inbox-ops " (verb.to_lowercase()) } " does." }
            form method="post" action="/delivery" {
                (csrf_field(c.guard.csrf())) input type="hidden" name="set" value=(verb.to_lowercase());
                button.danger type="submit" autofocus { (verb) " delivery" } " " a href="/actions" { "Cancel" }
            }
        }
    };
    Ok(page(
        &c.stack.name,
        &format!("{verb} delivery"),
        Nav::Actions,
        body,
    ))
}

/// POST /delivery.
pub async fn delivery_send(
    State(c): State<Arc<Console>>,
    Form(form): Form<ActionForm>,
) -> Result<Markup, ConsoleError> {
    c.guard.check_csrf(form.csrf.as_deref())?;
    let enable = enabling(form.set.as_deref())?;
    let uuid = c.need(&c.stack.mapping, crate::stack::MAPPING_OUTPUT)?;
    let lambda = aws_sdk_lambda::Client::new(&c.sdk);
    let mapping = esm::set_enabled(&lambda, uuid, enable, SETTLE)
        .await
        .map_err(ConsoleError::Aws)?;
    let body = html! {
        p #outcome { "The event source mapping " code { (mapping.uuid) } " is " strong { (mapping.state) } "." }
        p { a href="/" { "Back to the overview" } }
    };
    Ok(page(&c.stack.name, "Delivery", Nav::Actions, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_form_selects_one_key_or_one_range() {
        let key = ReplayForm {
            key: Some("github:d-1".into()),
            ..ReplayForm::default()
        };
        assert_eq!(
            key.selection(0).unwrap(),
            (Selection::Key("github:d-1".into()), StatusFilter::Any)
        );
        let range = ReplayForm {
            source: Some("github".into()),
            from: Some("2026-12-03T13:00:00Z".into()),
            to: Some("".into()),
            status: Some("FAILED".into()),
            ..ReplayForm::default()
        };
        let (sel, status) = range.selection(1_796_306_400_000).unwrap();
        assert_eq!(status, StatusFilter::Failed);
        assert_eq!(
            sel,
            Selection::Range {
                source: "github".into(),
                from_ms: 1_796_302_800_000,
                to_ms: 1_796_306_460_000,
                archive_lag_ms: 3_600_000
            }
        );
        for bad in [
            ReplayForm::default(),
            ReplayForm {
                key: Some("k".into()),
                source: Some("s".into()),
                ..ReplayForm::default()
            },
            ReplayForm {
                key: Some("k".into()),
                status: Some("PROCESSING".into()),
                ..ReplayForm::default()
            },
            ReplayForm {
                source: Some("s".into()),
                from: Some("yesterday".into()),
                ..ReplayForm::default()
            },
        ] {
            assert!(
                matches!(bad.selection(0), Err(ConsoleError::BadInput(_))),
                "{bad:?}"
            );
        }
        assert!(enabling(Some("pause")).is_ok_and(|e| !e));
        assert!(matches!(
            enabling(Some("off")),
            Err(ConsoleError::BadInput(why)) if why == "set=pause or set=resume"
        ));
    }
}
