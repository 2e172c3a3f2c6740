//! The overview's rate limits (docs/routing.md, "Rate limit"): each destination of the stack's
//! `Destinations` with its `max_per_second` and the calls counted in the current second's
//! window, as `inbox-ops status` shows them ([`crate::rate_status`]).

use maud::{html, Markup};

use crate::rate_status::RateRow;
use crate::text::shown;

/// The section; nothing where the stack declares no destination.
pub fn section(rates: &Result<Vec<RateRow>, String>) -> Markup {
    html! {
        @match rates {
            Ok(rows) if rows.is_empty() => {}
            Ok(rows) => {
                h2 { "Rate limits per destination" }
                table aria-label="rate limits" {
                    thead { tr { th { "destination" } th { "max_per_second" } th { "this second" } } }
                    tbody {
                        @for r in rows {
                            tr {
                                td { (shown(&r.destination)) }
                                td.num { @match r.max_per_second {
                                    Some(max) => { (max) " calls a second" }
                                    None => { span.muted { "no limit" } }
                                } }
                                td.num { @match &r.this_second {
                                    Some(Ok(n)) => { (n) " in this second" }
                                    Some(Err(e)) => { span.error { "count unreadable (" (shown(e)) ")" } }
                                    None => { span.muted { "—" } }
                                } }
                            }
                        }
                    }
                }
                p.muted { "Counted across every consumer instance in the ledger's table, one window a second; a call over the limit waits on the queue for the next one (counted RateLimited)." }
            }
            Err(e) => { p.error { "Rate limits unavailable: " (shown(e)) } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_destination_s_limit_and_count_or_nothing_without_destinations() {
        let rows = vec![
            RateRow {
                destination: "billing".into(),
                max_per_second: Some(5),
                this_second: Some(Ok(2)),
            },
            RateRow {
                destination: "crm".into(),
                max_per_second: None,
                this_second: None,
            },
        ];
        let html = section(&Ok(rows)).into_string();
        assert!(
            html.contains("<td>billing</td><td class=\"num\">5 calls a second</td><td class=\"num\">2 in this second</td>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"muted\">no limit</span>"),
            "{html}"
        );
        assert_eq!(section(&Ok(Vec::new())).into_string(), "");
        let failed = section(&Err("AccessDenied".into())).into_string();
        assert!(
            failed.contains("Rate limits unavailable: AccessDenied"),
            "{failed}"
        );
    }
}
