//! The rate limits `inbox-ops status` shows (docs/routing.md, "Rate limit"): each destination of
//! the stack's `Destinations` with its `max_per_second`, and, for one with a limit, the calls
//! counted in the current second's window (one `GetItem` of its `#rate#<destination>#<second>`
//! item in the ledger's table; nothing is written).

use serde_json::{json, Value};

use inbox::clock::{Clock as _, SystemClock};
use inbox::destination::{DynamoRate, RateLimiter as _};
use inbox::route::Routes;

/// One destination's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateRow {
    pub destination: String,
    /// `None`: no limit but the consumer's concurrency.
    pub max_per_second: Option<u32>,
    /// The calls counted in the window of the moment asked (`Err`: unreadable); `None`
    /// without a limit (nothing is counted).
    pub this_second: Option<Result<u32, String>>,
}

/// The rows of `routes`, each limited one's window at `now_ms` read from `rate`.
pub async fn rows_at(routes: &Routes, rate: &DynamoRate, now_ms: i64) -> Vec<RateRow> {
    let mut rows = Vec::new();
    for d in routes.iter() {
        let this_second = match d.max_per_second {
            Some(_) => Some(rate.count(&d.name, now_ms).await.map_err(|e| e.to_string())),
            None => None,
        };
        rows.push(RateRow {
            destination: d.name.clone(),
            max_per_second: d.max_per_second,
            this_second,
        });
    }
    rows
}

/// The rows of the stack `stack` now (its `Destinations`, its ledger table); none where it
/// declares no destination. `Err`: the stack could not be read.
pub async fn rows(config: &aws_config::SdkConfig, stack: &str) -> anyhow::Result<Vec<RateRow>> {
    let mut lazy = crate::stack::Lazy::new(config, stack);
    let routes = lazy.routes().await?;
    if routes.is_empty() {
        return Ok(Vec::new());
    }
    let table = lazy
        .pick(None, crate::stack::TABLE_OUTPUT, |r| &r.table)
        .await?;
    let rate = DynamoRate::new(crate::aws::dynamo(config), table);
    Ok(rows_at(&routes, &rate, SystemClock.now_ms()).await)
}

/// The rows as `status --json` gives them: `[{"destination", "max_per_second",
/// "this_second", "this_second_error"}]` (`null` where absent).
pub fn to_json(rows: &[RateRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "destination": r.destination,
                    "max_per_second": r.max_per_second,
                    "this_second": r.this_second.as_ref().and_then(|n| n.as_ref().ok()),
                    "this_second_error": r.this_second.as_ref().and_then(|n| n.as_ref().err()),
                })
            })
            .collect(),
    )
}

/// The rows as `status` prints them; nothing without destinations.
pub fn to_text(rows: &[RateRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = "rate limits (max_per_second, across every consumer):\n".to_owned();
    for r in rows {
        let line = match (r.max_per_second, &r.this_second) {
            (None, _) => "no limit".to_owned(),
            (Some(max), Some(Ok(n))) => format!("{max} calls a second, {n} in this second"),
            (Some(max), Some(Err(e))) => {
                format!("{max} calls a second, this second's count unreadable ({e})")
            }
            (Some(max), None) => format!("{max} calls a second"),
        };
        out.push_str(&format!("  {}: {line}\n", r.destination));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<RateRow> {
        vec![
            RateRow {
                destination: "billing".into(),
                max_per_second: Some(5),
                this_second: Some(Ok(3)),
            },
            RateRow {
                destination: "crm".into(),
                max_per_second: None,
                this_second: None,
            },
            RateRow {
                destination: "ci".into(),
                max_per_second: Some(20),
                this_second: Some(Err("rate limit unreadable: AccessDenied".into())),
            },
        ]
    }

    #[test]
    fn each_destination_shows_its_limit_and_this_second_s_count() {
        assert_eq!(
            to_text(&rows()),
            "rate limits (max_per_second, across every consumer):\n  \
             billing: 5 calls a second, 3 in this second\n  crm: no limit\n  \
             ci: 20 calls a second, this second's count unreadable (rate limit unreadable: AccessDenied)\n"
        );
        assert_eq!(
            to_json(&rows()),
            json!([
                {"destination": "billing", "max_per_second": 5, "this_second": 3, "this_second_error": null},
                {"destination": "crm", "max_per_second": null, "this_second": null, "this_second_error": null},
                {"destination": "ci", "max_per_second": 20, "this_second": null,
                 "this_second_error": "rate limit unreadable: AccessDenied"},
            ])
        );
        assert_eq!(to_text(&[]), "");
    }
}
