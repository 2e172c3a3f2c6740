//! Each destination's state of one event (docs/routing.md): the ledger item of every
//! (event, destination) pair the event's source and type are routed to, as the consumer
//! routes them, for `why` and `lookup`.

use inbox::ledger::{LedgerStore, Record};
use inbox::route::{destination_key, Routes};
use serde_json::{json, Value};

/// One destination of an event: its pair's item, where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestinationState {
    pub name: String,
    /// `None`: the consumer has not taken the pair yet (or its item expired: absent).
    pub record: Option<Record>,
}

/// The destinations an event of `source` with `event_type` goes to, in name order, each with
/// its pair's item (a consistent read each).
pub async fn states(
    ledger: &impl LedgerStore,
    routes: &Routes,
    key: &str,
    source: &str,
    event_type: Option<&str>,
    now_ms: i64,
) -> anyhow::Result<Vec<DestinationState>> {
    let mut out = Vec::new();
    for name in routes.destinations_for(source, event_type) {
        let record = ledger
            .get(&destination_key(key, name))
            .await?
            .filter(|r| !r.is_expired(now_ms));
        out.push(DestinationState {
            name: name.to_owned(),
            record,
        });
    }
    Ok(out)
}

impl DestinationState {
    /// Whether the pair is done: COMPLETED.
    pub fn completed(&self) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.status == inbox::ledger::Status::Completed)
    }

    pub fn to_json(&self) -> Value {
        match &self.record {
            Some(r) => json!({
                "destination": self.name,
                "status": r.status.as_str(),
                "attempts": r.attempts,
                "failures": r.failures,
                "last_error": r.last_error,
                "completed_at": r.completed_at,
            }),
            None => json!({
                "destination": self.name,
                "status": Value::Null,
                "attempts": 0,
                "failures": 0,
                "last_error": Value::Null,
                "completed_at": Value::Null,
            }),
        }
    }

    /// One line: `to <name>: <STATUS>  attempts N  failures N  last_error: ...`.
    pub fn to_text(&self) -> String {
        match &self.record {
            Some(r) => format!(
                "to {}: {}  attempts {}  failures {}  last_error: {}",
                crate::text::shown(&self.name),
                r.status.as_str(),
                r.attempts,
                r.failures,
                crate::text::shown(r.last_error.as_deref().unwrap_or("-"))
            ),
            None => format!("to {}: not taken yet", crate::text::shown(&self.name)),
        }
    }
}

/// What to do about a dead-lettered routed event, from its destinations' states: `None` where
/// every destination completed (the event's own item says the rest).
pub fn hint(states: &[DestinationState]) -> Option<String> {
    let left: Vec<&str> = states
        .iter()
        .filter(|s| !s.completed())
        .map(|s| s.name.as_str())
        .collect();
    if left.is_empty() {
        return None;
    }
    Some(format!(
        "destination(s) {} not applied: fix their cause (last_error), then redrive; the completed ones are not called again",
        left.join(", ")
    ))
}

/// A destination's state for tests: `status` `None` is not taken yet; attempts one more
/// than `failures`; COMPLETED at 2026-12-03 13:00 UTC.
#[cfg(test)]
pub(crate) fn example(
    name: &str,
    status: Option<inbox::ledger::Status>,
    failures: u32,
    last_error: Option<&str>,
) -> DestinationState {
    use inbox::ledger::Status;
    DestinationState {
        name: name.to_owned(),
        record: status.map(|status| Record {
            key: format!("github:1 to:{name}"),
            source: "github".into(),
            status,
            expires_at: i64::MAX,
            lease_until: None,
            lease_owner: None,
            payload_sha256: String::new(),
            response_status: None,
            response_body: None,
            attempts: failures + 1,
            failures,
            last_error: last_error.map(str::to_owned),
            received_at: 0,
            completed_at: (status == Status::Completed).then_some(1_796_302_800_000),
            archived_at: None,
            replays: Default::default(),
            replay_requests: Default::default(),
            resent_by: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox::ledger::Status;

    #[test]
    fn the_hint_names_the_destinations_not_applied() {
        let done = example("ledger", Some(Status::Completed), 0, None);
        let failed = example("crm", Some(Status::Failed), 5, Some("HTTP 503"));
        let untaken = example("ci", None, 0, None);
        assert_eq!(hint(std::slice::from_ref(&done)), None);
        let h = hint(&[done.clone(), failed.clone(), untaken.clone()]).expect("a hint");
        assert!(h.starts_with("destination(s) crm, ci not applied"), "{h}");
        assert_eq!(
            failed.to_text(),
            "to crm: FAILED  attempts 6  failures 5  last_error: HTTP 503"
        );
        assert_eq!(untaken.to_text(), "to ci: not taken yet");
        assert_eq!(failed.to_json()["failures"], 5);
        assert_eq!(untaken.to_json()["status"], Value::Null);
    }
}
