//! Which destinations are paused (`inbox-ops pause --destination`) and where each
//! destination's circuit breaker stands ([`crate::breaker`]): one item of the ledger's table,
//! `pk` `#destinations`, whose string set `paused` names the paused ones and whose map
//! attribute `breaker:<name>` holds a destination's breaker. The consumer reads it once per
//! batch (a strongly consistent `GetItem`: the pauses and the breakers in one call); a paused
//! destination's events, and an open breaker's, wait on the queue (docs/routing.md), the
//! others run. A `#` starts no event key, so no event collides.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use crate::breaker::{Breaker, BreakerBoard, Condition, State, Transition, Written};

/// The item's `pk`.
pub const PAUSES_PK: &str = "#destinations";

/// The prefix of a breaker's attribute: `breaker:<destination>`.
pub const BREAKER_PREFIX: &str = "breaker:";

type Item = std::collections::HashMap<String, AttributeValue>;

pub use crate::breaker::Board;

/// What the board's item holds (none: nothing paused, every breaker closed).
fn board_of(item: Option<&Item>) -> Board {
    let Some(item) = item else {
        return Board::default();
    };
    let paused = item
        .get("paused")
        .and_then(|v| v.as_ss().ok())
        .map(|names| names.iter().cloned().collect())
        .unwrap_or_default();
    let breakers = item
        .iter()
        .filter_map(|(name, v)| {
            let destination = name.strip_prefix(BREAKER_PREFIX)?;
            Some((destination.to_owned(), breaker_of(v)))
        })
        .collect();
    Board { paused, breakers }
}

/// A breaker's attribute, read. One that cannot be read (written by hand) keeps its version,
/// so that a write still meets its condition, and reads as closed.
fn breaker_of(v: &AttributeValue) -> Breaker {
    let Ok(m) = v.as_m() else {
        return Breaker::default();
    };
    let n = |k: &str| {
        m.get(k)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<i64>().ok())
    };
    let s = |k: &str| m.get(k).and_then(|v| v.as_s().ok()).cloned();
    let version = n("version")
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(0);
    let state = match s("state").as_deref() {
        Some("open") => State::Open {
            opened_at_ms: n("opened_at").unwrap_or(0),
        },
        Some("half_open") => State::HalfOpen {
            opened_at_ms: n("opened_at").unwrap_or(0),
            probe_owner: s("probe_owner").unwrap_or_default(),
            probe_until_ms: n("probe_until").unwrap_or(0),
        },
        _ => State::Closed {
            failures: n("failures")
                .and_then(|f| u32::try_from(f).ok())
                .unwrap_or(0),
        },
    };
    Breaker { state, version }
}

/// A breaker as its attribute: `state`, `version`, and the state's own fields.
fn attribute_of(b: &Breaker) -> AttributeValue {
    let n = |v: i64| AttributeValue::N(v.to_string());
    let mut m = std::collections::HashMap::from([
        ("state".to_owned(), AttributeValue::S(b.state.name().into())),
        (
            "version".to_owned(),
            AttributeValue::N(b.version.to_string()),
        ),
    ]);
    match &b.state {
        State::Closed { failures } => {
            m.insert("failures".into(), n(i64::from(*failures)));
        }
        State::Open { opened_at_ms } => {
            m.insert("opened_at".into(), n(*opened_at_ms));
        }
        State::HalfOpen {
            opened_at_ms,
            probe_owner,
            probe_until_ms,
        } => {
            m.insert("opened_at".into(), n(*opened_at_ms));
            m.insert("probe_owner".into(), AttributeValue::S(probe_owner.clone()));
            m.insert("probe_until".into(), n(*probe_until_ms));
        }
    }
    AttributeValue::M(m)
}

/// The pause switches and the breakers, in the ledger's table.
#[derive(Clone, Debug)]
pub struct PauseBoard {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

fn error_text<E: ProvideErrorMetadata + std::fmt::Display>(e: &E) -> String {
    format!("{}: {}", e.code().unwrap_or("error"), e)
}

impl PauseBoard {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The pauses and the breakers: one strongly consistent `GetItem`.
    pub async fn read(&self) -> Result<Board, String> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(PAUSES_PK.into()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| error_text(&e))?;
        Ok(board_of(out.item()))
    }

    /// The paused destinations' names.
    pub async fn paused(&self) -> Result<BTreeSet<String>, String> {
        Ok(self.read().await?.paused)
    }

    /// Pauses (`true`) or resumes one destination.
    pub async fn set(&self, destination: &str, paused: bool) -> Result<(), String> {
        let expression = if paused {
            "ADD paused :d"
        } else {
            "DELETE paused :d"
        };
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(PAUSES_PK.into()))
            .update_expression(expression)
            .expression_attribute_values(":d", AttributeValue::Ss(vec![destination.to_owned()]))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| error_text(&e))
    }
}

impl BreakerBoard for PauseBoard {
    async fn breakers(&self) -> Result<BTreeMap<String, Breaker>, String> {
        Ok(self.read().await?.breakers)
    }

    /// `SET #b = :new` on the board's item, where the breaker is still the one the
    /// transition read ([`Transition::condition`]: absent, or `#b.version = :v`). Refused: the
    /// breaker the board holds, from the refusal (`ALL_OLD`), else from one more read.
    async fn write(&self, destination: &str, t: &Transition) -> Result<Written, String> {
        let attribute = format!("{BREAKER_PREFIX}{destination}");
        let condition = t.condition();
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(PAUSES_PK.into()))
            .update_expression("SET #b = :new")
            .condition_expression(condition.expression())
            .expression_attribute_names("#b", &attribute)
            .expression_attribute_values(":new", attribute_of(&t.to))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Condition::Version(v) = condition {
            req = req.expression_attribute_values(":v", AttributeValue::N(v.to_string()));
        }
        match req.send().await {
            Ok(_) => Ok(Written::Applied),
            Err(err) => match err.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(e)) => {
                    let held = match e.item() {
                        Some(item) => board_of(Some(item)).breakers.remove(destination),
                        None => self.read().await?.breakers.remove(destination),
                    };
                    Ok(Written::Stale(held.unwrap_or_default()))
                }
                _ => Err(error_text(&err)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_as_written() {
        for b in [
            Breaker::default(),
            Breaker {
                state: State::Closed { failures: 3 },
                version: 4,
            },
            Breaker {
                state: State::Open { opened_at_ms: 17 },
                version: 5,
            },
            Breaker {
                state: State::HalfOpen {
                    opened_at_ms: 17,
                    probe_owner: "req:msg".into(),
                    probe_until_ms: 99,
                },
                version: 6,
            },
        ] {
            assert_eq!(breaker_of(&attribute_of(&b)), b);
        }
    }

    #[test]
    fn the_item_holds_the_pauses_and_the_breakers() {
        let open = Breaker {
            state: State::Open { opened_at_ms: 1 },
            version: 2,
        };
        let item = Item::from([
            ("pk".into(), AttributeValue::S(PAUSES_PK.into())),
            ("paused".into(), AttributeValue::Ss(vec!["crm".into()])),
            ("breaker:billing".into(), attribute_of(&open)),
        ]);
        let board = board_of(Some(&item));
        assert_eq!(board.paused, BTreeSet::from(["crm".to_owned()]));
        assert_eq!(
            board.breakers,
            BTreeMap::from([("billing".to_owned(), open)])
        );
        assert_eq!(board_of(None), Board::default());
    }

    #[test]
    fn an_unreadable_breaker_reads_closed_at_its_version() {
        let m = AttributeValue::M(std::collections::HashMap::from([
            ("state".to_owned(), AttributeValue::S("sideways".into())),
            ("version".to_owned(), AttributeValue::N("9".into())),
        ]));
        assert_eq!(
            breaker_of(&m),
            Breaker {
                state: State::Closed { failures: 0 },
                version: 9
            }
        );
        assert_eq!(
            breaker_of(&AttributeValue::S("x".into())),
            Breaker::default()
        );
    }
}
