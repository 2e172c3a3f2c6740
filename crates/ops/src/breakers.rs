//! Each destination's pause and circuit breaker as `inbox-ops status` and the console show
//! them (docs/routing.md#breakers): the pause board's one item, read once. Held events are
//! not counted: a held pair writes nothing (the healthy path costs no write), so counting
//! them would take a scan of the ledger; the event's own item reads QUEUED with `last_error`
//! `destinations pending: <name>: held: its breaker is open`, which the console's QUEUED list
//! shows.

use inbox::breaker::{Breaker, State};
use inbox::destination::pause::{Board, PauseBoard};
use serde_json::{json, Value};

use crate::text::shown;

/// One destination's row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestinationRow {
    pub name: String,
    pub paused: bool,
    pub breaker: Breaker,
}

/// The rows of `names` (the stack's destinations, where known) and of every destination the
/// board names, by name.
pub fn rows(board: &Board, names: &[String]) -> Vec<DestinationRow> {
    let mut all: std::collections::BTreeSet<&str> = names.iter().map(String::as_str).collect();
    all.extend(board.paused.iter().map(String::as_str));
    all.extend(board.breakers.keys().map(String::as_str));
    all.into_iter()
        .map(|name| DestinationRow {
            name: name.to_owned(),
            paused: board.paused.contains(name),
            breaker: board.breakers.get(name).cloned().unwrap_or_default(),
        })
        .collect()
}

/// The destinations' names in the stack's `Destinations` (a JSON object), in order; none
/// where it is blank or not an object.
pub fn names_of(destinations_json: Option<&str>) -> Vec<String> {
    destinations_json
        .and_then(|j| serde_json::from_str::<serde_json::Map<String, Value>>(j).ok())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The board of the ledger table `table`.
pub async fn read(sdk: &aws_config::SdkConfig, table: &str) -> Result<Board, String> {
    PauseBoard::new(crate::aws::dynamo(sdk), table).read().await
}

/// Epoch milliseconds as UTC, to the second.
pub fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

/// The breaker in words: `closed`, `closed (2 consecutive failures)`, `OPEN since …`,
/// `HALF-OPEN since …: one event tried until …`.
pub fn breaker_text(b: &Breaker) -> String {
    match &b.state {
        State::Closed { failures: 0 } => "closed".to_owned(),
        State::Closed { failures } => format!("closed ({failures} consecutive failures)"),
        State::Open { opened_at_ms } => format!(
            "OPEN since {}: its events are held, one is tried after the cool-down",
            time(*opened_at_ms)
        ),
        State::HalfOpen {
            opened_at_ms,
            probe_until_ms,
            ..
        } => format!(
            "HALF-OPEN since {}: one event tried until {}, the others held",
            time(*opened_at_ms),
            time(*probe_until_ms)
        ),
    }
}

/// The rows as `status`'s text: one line each.
pub fn to_text(rows: &[DestinationRow]) -> String {
    if rows.is_empty() {
        return "destinations: none paused, every breaker closed\n".to_owned();
    }
    let mut out = "destinations:\n".to_owned();
    for r in rows {
        out.push_str(&format!(
            "  {}: {}breaker {}\n",
            shown(&r.name),
            if r.paused { "PAUSED, " } else { "" },
            breaker_text(&r.breaker)
        ));
    }
    out
}

/// The rows as `status --json`'s `destinations`.
pub fn to_json(rows: &[DestinationRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                let (opened_at, probe_until, failures) = match &r.breaker.state {
                    State::Closed { failures } => (None, None, Some(*failures)),
                    State::Open { opened_at_ms } => (Some(*opened_at_ms), None, None),
                    State::HalfOpen {
                        opened_at_ms,
                        probe_until_ms,
                        ..
                    } => (Some(*opened_at_ms), Some(*probe_until_ms), None),
                };
                json!({
                    "name": r.name,
                    "paused": r.paused,
                    "breaker": {
                        "state": r.breaker.state.name(),
                        "failures": failures,
                        "opened_at_ms": opened_at,
                        "probe_until_ms": probe_until,
                    },
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn board() -> Board {
        Board {
            paused: BTreeSet::from(["crm".to_owned()]),
            breakers: BTreeMap::from([
                (
                    "billing".to_owned(),
                    Breaker {
                        state: State::Open {
                            opened_at_ms: 1_700_000_000_000,
                        },
                        version: 3,
                    },
                ),
                (
                    "bus".to_owned(),
                    Breaker {
                        state: State::Closed { failures: 2 },
                        version: 2,
                    },
                ),
            ]),
        }
    }

    #[test]
    fn every_destination_has_a_row_with_its_pause_and_breaker() {
        let rows = rows(&board(), &["ci".to_owned(), "billing".to_owned()]);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["billing", "bus", "ci", "crm"]);
        assert_eq!(
            to_text(&rows),
            "destinations:\n  billing: breaker OPEN since 2023-11-14 22:13:20 UTC: its events are held, one is tried after the cool-down\n  bus: breaker closed (2 consecutive failures)\n  ci: breaker closed\n  crm: PAUSED, breaker closed\n"
        );
        let json = to_json(&rows);
        assert_eq!(json[0]["breaker"]["state"], "open");
        assert_eq!(json[0]["breaker"]["opened_at_ms"], 1_700_000_000_000_i64);
        assert_eq!(json[1]["breaker"]["failures"], 2);
        assert_eq!(json[3]["paused"], true);
        assert_eq!(
            to_text(&[]),
            "destinations: none paused, every breaker closed\n"
        );
    }

    #[test]
    fn a_half_open_breaker_says_until_when_its_probe_runs() {
        let b = Breaker {
            state: State::HalfOpen {
                opened_at_ms: 1_700_000_000_000,
                probe_owner: "req:m".into(),
                probe_until_ms: 1_700_000_060_000,
            },
            version: 4,
        };
        assert_eq!(
            breaker_text(&b),
            "HALF-OPEN since 2023-11-14 22:13:20 UTC: one event tried until 2023-11-14 22:14:20 UTC, the others held"
        );
    }

    #[test]
    fn the_names_come_from_the_stack_s_destinations() {
        assert_eq!(
            names_of(Some(r#"{"b": {}, "a": {}}"#)),
            ["a".to_owned(), "b".to_owned()]
        );
        assert!(names_of(Some("")).is_empty());
        assert!(names_of(None).is_empty());
    }
}
