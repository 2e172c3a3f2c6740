//! The read-only pages, rendered from what the routes gathered: the overview, the event list
//! and one event. Nothing here calls AWS. maud escapes HTML; what a message or the ledger says
//! (a key, a header, a source, an event type, an error) is also shown through
//! [`crate::text::shown`], so a control or bidi character is seen as `\u{…}`, not obeyed.

use maud::{html, Markup};
use serde_json::Value;

use super::figures::{SourceFigures, SERIES};
use super::layout::{bars, page, time, Nav};
use super::listing::{ListFilter, Page, Row};
use super::show::ShownBody;
use crate::breakers::{breaker_text, DestinationRow};
use crate::destination_state::DestinationState;
use crate::status::MappingStatus;
use crate::text::shown;

/// The ledger statuses the list filters by.
pub const STATUSES: &[&str] = &["RECEIVED", "QUEUED", "PROCESSING", "COMPLETED", "FAILED"];

/// What the overview shows; each part may have failed on its own.
pub struct Overview {
    pub status: Result<MappingStatus, String>,
    pub figures: Result<Vec<SourceFigures>, String>,
    pub alarms: Result<Vec<(String, String)>, String>,
    /// Each destination's pause and breaker (the pause board).
    pub destinations: Result<Vec<DestinationRow>, String>,
    /// Each destination's rate limit and this second's count (none without destinations).
    pub rates: Result<Vec<crate::rate_status::RateRow>, String>,
}

/// A link to the list filtered so.
pub fn events_link(source: Option<&str>, status: Option<&str>) -> String {
    let mut query = form_urlencoded(&[("source", source), ("status", status)]);
    if !query.is_empty() {
        query.insert(0, '?');
    }
    format!("/events{query}")
}

/// `name=value&…` of the pairs that have a value, each percent-encoded.
pub fn form_urlencoded(pairs: &[(&str, Option<&str>)]) -> String {
    pairs
        .iter()
        .filter_map(|(k, v)| {
            v.filter(|v| !v.is_empty())
                .map(|v| format!("{k}={}", encode(v)))
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encoding of everything but unreserved characters.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn overview(stack: &str, o: &Overview) -> Markup {
    let body = html! {
        h2 { "Delivery and queues" }
        @match &o.status {
            Ok(s) => {
                table {
                    tr { th { "delivery" } td {
                        @if s.mapping.paused() { strong.error { "PAUSED" } " (" (s.mapping.state) "): the receiver keeps accepting; events wait on the queue" }
                        @else { span.ok { "running" } " (" (s.mapping.state) ")" }
                        " · " a href="/actions" { "pause or resume" }
                    } }
                    tr { th { "queue" } td { (s.queue.waiting) " waiting, " (s.queue.in_flight) " in flight, " (s.queue.delayed) " delayed; "
                        @match &s.oldest_age_seconds {
                            Ok(Some(age)) => { "oldest " (age) " s" }
                            Ok(None) => { span.muted { "oldest: no datapoint in the last five minutes" } }
                            Err(e) => { span.muted { "oldest: unknown (" (e) ")" } }
                        }
                    } }
                    tr { th { "dead-letter queue" } td {
                        @match &s.dlq { Some(d) => {
                            @if d.waiting > 0 { strong.error { (d.waiting) " waiting" } " · " a href=(events_link(None, Some("FAILED"))) { "the failed events →" } " · " a href="/redrive" { "redrive…" } }
                            @else { "0 waiting" }
                        } None => { span.muted { "none configured" } } }
                    } }
                }
            }
            Err(e) => { p.error { "Delivery and queue status unavailable: " (e) } }
        }
        (destinations(&o.destinations))
        (super::rates::section(&o.rates))
        h2 { "Alarms in ALARM" }
        @match &o.alarms {
            Ok(firing) if firing.is_empty() => { p.ok { "None." } }
            Ok(firing) => { ul { @for (name, reason) in firing { li { strong.error { (name) } ": " (reason) } } }
                p { a href=(events_link(None, Some("FAILED"))) { "The failed events →" } } }
            Err(e) => { p.error { "Alarms unavailable: " (e) } }
        }
        h2 { "Last 24 hours, per source" }
        @match &o.figures {
            Ok(figures) if figures.is_empty() => { p.muted { "The stack declares no sources." } }
            Ok(figures) => {
                div.cards {
                    @for f in figures {
                        section.card aria-label=(format!("source {}", f.source)) {
                            h3 { a href=(events_link(Some(&f.source), None)) { (f.source) } }
                            @for (label, values) in &f.series {
                                (bars(label, values, matches!(*label, "failed" | "dead-lettered" | "rejected")))
                            }
                            p { a href=(events_link(Some(&f.source), Some("FAILED"))) { "failed events" } }
                        }
                    }
                }
                p.muted { "CloudWatch metrics of namespace WebhookInbox (" (SERIES.len()) " series), hourly sums; rejected counts signature failures too." }
            }
            Err(e) => { p.error { "Metrics unavailable: " (e) } }
        }
    };
    page(stack, "Overview", Nav::Overview, body)
}

/// Each destination's row: paused or not, its breaker, and where its held events are (a held
/// pair writes nothing, so they are not counted: the events wait QUEUED, their `last_error`
/// naming the destination).
fn destinations(rows: &Result<Vec<DestinationRow>, String>) -> Markup {
    html! {
        h2 { "Destinations" }
        @match rows {
            Ok(rows) if rows.is_empty() => { p.muted { "No destination is paused; every breaker is closed." } }
            Ok(rows) => {
                table aria-label="destinations" {
                    tr { th { "destination" } th { "paused" } th { "breaker" } th { "held events" } }
                    @for r in rows {
                        @let holds = r.paused || !matches!(r.breaker.state, inbox::breaker::State::Closed { .. });
                        tr aria-label=(format!("destination {}", shown(&r.name))) {
                            td { (shown(&r.name)) }
                            td { @if r.paused { strong.error { "PAUSED" } } @else { "no" } }
                            td { @if matches!(r.breaker.state, inbox::breaker::State::Closed { .. }) { (breaker_text(&r.breaker)) }
                                 @else { strong.error { (breaker_text(&r.breaker)) } } }
                            td { @if holds { a href=(events_link(None, Some("QUEUED"))) { "held: the QUEUED events →" } }
                                 @else { span.muted { "none held" } } }
                        }
                    }
                }
                p.muted { "A breaker opens after its destination's consecutive failures and holds its events; " code { "inbox-ops resume --destination NAME" } " closes it by hand." }
            }
            Err(e) => { p.error { "Destinations unavailable: " (e) } }
        }
    }
}

/// The list's filter form, the rows and the next page's link.
pub fn events(
    stack: &str,
    sources: &[String],
    filter: &ListFilter,
    given: &ListQuery,
    listed: &Page,
) -> Markup {
    let body = html! {
        form.filters method="get" action="/events" {
            label { "source" select name="source" {
                option value="" selected[filter.source.is_none()] { "every source" }
                @for s in sources { option value=(s) selected[filter.source.as_deref() == Some(s.as_str())] { (s) } }
            } }
            label { "status" select name="status" {
                option value="" selected[filter.status.is_none()] { "any" }
                @for s in STATUSES { option value=(s) selected[filter.status.as_deref() == Some(*s)] { (s) } }
            } }
            label { "event type" input name="event_type" value=[filter.event_type.as_deref()] size="14"; }
            label { "from (RFC 3339 or epoch ms)" input name="from" value=[given.from.as_deref()] placeholder="2026-12-03T13:00:00Z" size="22"; }
            label { "to (excluded)" input name="to" value=[given.to.as_deref()] size="22"; }
            button type="submit" { "List" }
        }
        @if listed.rows.is_empty() {
            p.muted { "No events match." }
        } @else {
            table {
                thead { tr { th { "key" } th { "source" } th { "event type" } th { "status" } th { "attempts" } th { "received" } th { "last_error" } } }
                tbody {
                    @for row in &listed.rows { (event_row(row)) }
                }
            }
        }
        p.muted { (listed.rows.len()) " shown, newest first; " (listed.examined) " key(s) read from the index for this page." }
        @if let Some(next) = &listed.next {
            p { a href=(format!("/events?{}", form_urlencoded(&[
                ("source", filter.source.as_deref()), ("status", filter.status.as_deref()),
                ("event_type", filter.event_type.as_deref()), ("from", given.from.as_deref()),
                ("to", given.to.as_deref()), ("cursor", Some(&next.encode()))]))) rel="next" { "Next page →" } }
        }
        @if let Some(source) = &filter.source {
            h2 { "Replay" }
            p { "Replay " (shown(source)) "'s archived events of this time range"
                @if let Some(s) = &filter.status { " whose status is " (s) }
                ": " a href=(format!("/replay?{}", form_urlencoded(&[("source", Some(source)), ("from", given.from.as_deref()), ("to", given.to.as_deref()), ("status", filter.status.as_deref())]))) { "count them first…" } }
        }
    };
    page(stack, "Events", Nav::Events, body)
}

/// The list's query as typed (kept for the links).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    pub source: Option<String>,
    pub status: Option<String>,
    pub event_type: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<usize>,
}

fn event_row(row: &Row) -> Markup {
    html! {
        tr {
            td.key { a href=(format!("/event?key={}", encode(&row.key))) { (shown(&row.key)) } }
            td { (shown(&row.source)) }
            td { @if let Some(t) = &row.event_type { (shown(t)) } @else { span.muted { "—" } } }
            td class=(format!("status-{}", row.status)) { (row.status) }
            td.num { (row.attempts) }
            td { (time(row.received_at)) }
            td { @if let Some(e) = &row.last_error { span.error { (shown(e)) } } }
        }
    }
}

/// One event: its ledger item, its archived headers and body (or why there are none).
pub struct EventView {
    pub key: String,
    pub item: Value,
    pub headers: Result<Vec<(String, String)>, String>,
    pub body: Result<ShownBody, String>,
    pub archive_object: Option<String>,
    /// A routed event's destinations, each with its pair's item (docs/routing.md); empty for
    /// a forwarded one; why they could not be read.
    pub destinations: Result<Vec<DestinationState>, String>,
}

/// An attribute's value as shown: times as UTC beside their number.
fn attribute(name: &str, value: &Value) -> String {
    match (name, value.as_i64()) {
        ("expires_at", Some(s)) => format!("{s} ({})", time(s.saturating_mul(1000))),
        (n, Some(ms)) if n.ends_with("_at") || n == "lease_until" => format!("{ms} ({})", time(ms)),
        _ => match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

/// The event's trace id (docs/operations.md, "Traces"), linked where `TRACE_LINK_FORMAT` makes a
/// link of it ([`crate::trace_link::link`]: an `http(s)://` format, a 32-hex id); nothing for
/// an item without one. Escaped like every value; the link opens without a referrer.
pub fn trace_line(item: &Value, format: Option<&str>) -> Markup {
    let Some(id) = item["trace_id"].as_str() else {
        return html! {};
    };
    html! {
        p.trace { "Trace " code { (shown(id)) }
            @if let Some(link) = crate::trace_link::link(format, id) {
                " · " a href=(link) rel="noreferrer noopener" { "open the trace" }
            }
        }
    }
}

pub fn event(stack: &str, v: &EventView) -> Markup {
    let status = v.item["status"].as_str().unwrap_or_default();
    let body = html! {
        p { "Key " code.key { (shown(&v.key)) } " · status " strong class=(format!("status-{status}")) { (status) }
            " · " a href=(format!("/replay?key={}", encode(&v.key))) { "Replay this event…" } }
        (trace_line(&v.item, crate::trace_link::format_from_env().as_deref()))
        @match &v.destinations {
            Ok(states) if states.is_empty() => {}
            Ok(states) => {
                h2 { "Destinations" }
                table {
                    tr { th { "destination" } th { "status" } th { "attempts" } th { "failures" } th { "last_error" } th { "completed_at" } }
                    @for d in states {
                        @match &d.record {
                            Some(r) => {
                                tr { td { (shown(&d.name)) } td { strong class=(format!("status-{}", r.status.as_str())) { (r.status.as_str()) } }
                                     td { (r.attempts) } td { (r.failures) } td { (shown(r.last_error.as_deref().unwrap_or(""))) }
                                     td { (r.completed_at.map(time).unwrap_or_default()) } }
                            }
                            None => { tr { td { (shown(&d.name)) } td.muted colspan="5" { "not taken yet" } } }
                        }
                    }
                }
            }
            Err(e) => { h2 { "Destinations" } p.muted { (shown(e)) } }
        }
        h2 { "Ledger item" }
        table {
            @if let Value::Object(map) = &v.item {
                @for (name, value) in map { tr { th { (shown(name)) } td { (shown(&attribute(name, value))) } } }
            }
        }
        h2 { "Headers (as archived; signatures masked)" }
        @match &v.headers {
            Ok(headers) => { table { @for (name, value) in headers { tr { th { (shown(name)) } td { code { (shown(value)) } } } } } }
            Err(e) => { p.muted { (shown(e)) } }
        }
        h2 { "Body" }
        @match &v.body {
            Ok(b) => {
                p.muted { (b.bytes) " bytes, " (b.kind)
                    @if b.cut { ", cut to the first " (b.text.len()) " characters" }
                    @if let Some(o) = &v.archive_object { " · archived in " code { (o) } } }
                pre #body { (b.text) }
            }
            Err(e) => { p.muted { "No archived body: " (shown(e)) } }
        }
    };
    page(
        stack,
        &format!("Event {}", shown(&v.key)),
        Nav::Events,
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_page_escapes_its_body_and_formats_times() {
        let view = EventView {
            key: "github:<b>".into(),
            item: serde_json::json!({"pk": "github:<b>", "status": "FAILED", "received_at": 1_796_302_800_000_i64, "expires_at": 1_796_302_800, "last_error": "<i>boom</i>"}),
            headers: Ok(vec![(
                "x-hub-signature-256".into(),
                "•••••• (masked, 71 characters)".into(),
            )]),
            body: Ok(super::super::show::body(
                br#"{"x":"<script>alert(1)</script>"}"#,
            )),
            archive_object: Some("archive/2026/12/03/13/o".into()),
            destinations: Ok(Vec::new()),
        };
        let html = event("s", &view).into_string();
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&lt;i&gt;boom&lt;/i&gt;"));
        assert!(
            html.contains("1796302800000 (2026-12-03 13:00:00 UTC)"),
            "{html}"
        );
        assert!(html.contains("1796302800 (2026-12-03 13:00:00 UTC)"));
        assert!(html.contains("/replay?key=github%3A%3Cb%3E"));
    }

    #[test]
    fn an_event_page_shows_the_body_as_the_sender_signed_it() {
        let view = EventView {
            key: "stripe:evt_1".into(),
            item: serde_json::json!({"pk": "stripe:evt_1", "status": "COMPLETED"}),
            headers: Ok(Vec::new()),
            body: Ok(super::super::show::body(
                br#"{"id":123456789012345678901234,"amount":1,"amount":1000}"#,
            )),
            archive_object: None,
            destinations: Ok(Vec::new()),
        };
        let html = event("s", &view).into_string();
        assert!(
            html.contains(
                "&quot;id&quot;: 123456789012345678901234,\n  &quot;amount&quot;: 1,\n  &quot;amount&quot;: 1000\n"
            ),
            "{html}"
        );
        assert!(!html.contains("e+23"), "{html}");
    }

    #[test]
    fn a_routed_event_shows_each_destination() {
        use crate::destination_state::example;
        use inbox::ledger::Status;
        let view = EventView {
            key: "stripe:evt_1".into(),
            item: serde_json::json!({"pk": "stripe:evt_1", "status": "QUEUED"}),
            headers: Err("none".into()),
            body: Err("none".into()),
            archive_object: None,
            destinations: Ok(vec![
                example("billing", Some(Status::Completed), 0, None),
                example("crm", Some(Status::Failed), 2, Some("HTTP <503>")),
                example("bus", None, 0, None),
            ]),
        };
        let html = event("s", &view).into_string();
        assert!(html.contains("<h2>Destinations</h2>"), "{html}");
        assert!(html.contains("<td>billing</td><td><strong class=\"status-COMPLETED\">COMPLETED</strong></td><td>1</td><td>0</td>"), "{html}");
        assert!(html.contains("<td>crm</td><td><strong class=\"status-FAILED\">FAILED</strong></td><td>3</td><td>2</td><td>HTTP &lt;503&gt;</td>"), "{html}");
        assert!(
            html.contains("<td>bus</td><td class=\"muted\" colspan=\"5\">not taken yet</td>"),
            "{html}"
        );
        let forwarded = EventView {
            destinations: Ok(Vec::new()),
            ..view
        };
        assert!(!event("s", &forwarded)
            .into_string()
            .contains("Destinations"));
    }

    #[test]
    fn a_forged_key_header_or_error_is_shown_escaped_on_every_page() {
        let forged = "github:\x1b[2J\u{202e}kcatta";
        let view = EventView {
            key: forged.into(),
            item: serde_json::json!({"pk": forged, "status": "FAILED", "last_error": "no\x1b[31m"}),
            headers: Ok(vec![("x-github-event".into(), "push\x1b]0;t\x07".into())]),
            body: Err("none: \x1b[2J".into()),
            archive_object: None,
            destinations: Ok(vec![crate::destination_state::example(
                "crm",
                Some(inbox::ledger::Status::Failed),
                1,
                Some("HTTP 500 \u{2066}x"),
            )]),
        };
        let row = Row {
            key: forged.into(),
            source: "github".into(),
            event_type: Some("push\x1b[2J".into()),
            status: "FAILED".into(),
            attempts: 1,
            received_at: 0,
            last_error: Some("boom\u{9b}2J".into()),
        };
        for html in [
            event("s", &view).into_string(),
            event_row(&row).into_string(),
        ] {
            for hidden in ['\x1b', '\x07', '\u{9b}', '\u{202e}', '\u{2066}'] {
                assert!(!html.contains(hidden), "{hidden:?} in {html}");
            }
            assert!(html.contains("github:\\u{1b}[2J\\u{202e}kcatta"), "{html}");
        }
    }

    #[test]
    fn an_event_s_trace_id_is_linked_only_under_a_web_format_and_escaped() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        let item = serde_json::json!({"trace_id": id});
        let linked =
            trace_line(&item, Some("https://ui.example/t/{trace_id}?a=1&b=2")).into_string();
        assert!(linked.contains(&format!("<code>{id}</code>")), "{linked}");
        assert!(
            linked.contains(&format!(r#"href="https://ui.example/t/{id}?a=1&amp;b=2""#)),
            "{linked}"
        );
        assert!(linked.contains(r#"rel="noreferrer noopener""#), "{linked}");
        let unlinked = trace_line(&item, Some("javascript:alert(1)//{trace_id}")).into_string();
        assert!(!unlinked.contains("href"), "{unlinked}");
        assert!(unlinked.contains(id));
        // A forged item's trace id is shown escaped, never linked.
        let forged = serde_json::json!({"trace_id": "<script>\u{1b}[2J"});
        let html = trace_line(&forged, Some("https://ui.example/t/{trace_id}")).into_string();
        assert!(
            !html.contains("<script>") && !html.contains('\x1b') && !html.contains("href"),
            "{html}"
        );
        assert_eq!(trace_line(&serde_json::json!({}), None).into_string(), "");
    }

    #[test]
    fn links_encode_their_values() {
        assert_eq!(
            events_link(Some("git hub"), Some("FAILED")),
            "/events?source=git%20hub&status=FAILED"
        );
        assert_eq!(events_link(None, None), "/events");
        assert_eq!(
            form_urlencoded(&[("a", Some("")), ("b", Some("x&y=z"))]),
            "b=x%26y%3Dz"
        );
    }

    #[test]
    fn each_destination_shows_its_pause_breaker_and_held_events() {
        use inbox::breaker::{Breaker, State};
        let rows = vec![
            DestinationRow {
                name: "billing<b>".into(),
                paused: false,
                breaker: Breaker {
                    state: State::Open {
                        opened_at_ms: 1_700_000_000_000,
                    },
                    version: 3,
                },
            },
            DestinationRow {
                name: "crm".into(),
                paused: false,
                breaker: Breaker::default(),
            },
        ];
        let html = destinations(&Ok(rows)).into_string();
        assert!(html.contains("<td>billing&lt;b&gt;</td>"), "{html}");
        assert!(
            html.contains("<strong class=\"error\">OPEN since 2023-11-14 22:13:20 UTC"),
            "{html}"
        );
        assert_eq!(html.matches("held: the QUEUED events").count(), 1, "{html}");
        assert!(html.contains("none held"), "{html}");
        assert!(
            html.contains("inbox-ops resume --destination NAME"),
            "{html}"
        );
        let html = destinations(&Ok(Vec::new())).into_string();
        assert!(html.contains("every breaker is closed"), "{html}");
        let html = destinations(&Err("AccessDenied".into())).into_string();
        assert!(
            html.contains("Destinations unavailable: AccessDenied"),
            "{html}"
        );
    }
}
