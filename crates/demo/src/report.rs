//! The demo's result table: what each layer stopped, whether every accepted event had
//! exactly one side effect (the exit code), and a row per destination: every routed event
//! applied and received exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

/// What the run counted; [`Report::ok`] decides the exit code.
#[derive(Debug)]
pub struct Report {
    /// (status, `error` code or "accepted"/"replayed") -> HTTP attempts.
    pub by_answer: BTreeMap<(u16, String), u64>,
    pub attempts: u64,
    pub retries: u64,
    /// Deliveries given up after their last attempt.
    pub gave_up: u64,
    /// Distinct keys answered 200.
    pub accepted: usize,
    /// Of them, those of sources no destination takes: forwarded to the system of record.
    pub forwarded: usize,
    /// One row per destination.
    pub destinations: Vec<DestinationRow>,
    /// Answers with `Idempotent-Replayed: true`.
    pub replayed: u64,
    /// The receiver's EMF `Accepted` and `Replayed`.
    pub emf_accepted: u64,
    pub emf_replayed: u64,
    /// Messages the demo put on the queue itself (staged crashes, late redeliveries).
    pub direct_sends: u64,
    /// Sends by duplicates that found a RECEIVED claim of the same body (the receiver's log).
    pub sent_behind_claims: u64,
    /// Distinct messages that reached the bridge.
    pub messages_seen: usize,
    /// The consumer's EMF `DuplicateDelivery`.
    pub consumer_duplicates: u64,
    /// Calls the system of record answered 2xx to (applied).
    pub side_effects: u64,
    /// Calls it answered 500 on purpose.
    pub forward_failures: u64,
    /// Keys with other than one side effect, or a side effect without an accepted answer.
    pub keys_not_once: Vec<String>,
    /// Accepted keys whose ledger item is not COMPLETED.
    pub not_completed: usize,
    /// From everything warm to the queue drained.
    pub took: Duration,
}

/// What one destination came to.
#[derive(Debug)]
pub struct DestinationRow {
    pub name: String,
    /// What its target is (`SQS FIFO queue`, `EventBridge bus`).
    pub target: &'static str,
    /// Accepted events its sources and filter admit.
    pub routed: usize,
    /// Of them, those whose (event, destination) item is COMPLETED.
    pub completed: usize,
    /// Distinct routed keys its target received.
    pub received: usize,
    /// Messages its target received (a copy more than once counts each time).
    pub messages: u64,
    /// Keys its target received that were not routed to it.
    pub strays: usize,
}

impl DestinationRow {
    /// Every routed event applied and received once, nothing else.
    pub fn ok(&self) -> bool {
        self.completed == self.routed
            && self.received == self.routed
            && self.messages == self.routed as u64
            && self.strays == 0
    }
}

impl Report {
    /// Every accepted event had exactly one side effect, and nothing else had one.
    pub fn ok(&self) -> bool {
        self.side_effects == self.forwarded as u64
            && self.destinations.iter().all(DestinationRow::ok)
            && self.keys_not_once.is_empty()
            && self.not_completed == 0
            && self.gave_up == 0
    }
}

impl std::fmt::Display for Report {
    #[allow(
        clippy::too_many_lines,
        reason = "the demo's report in the order it prints"
    )]
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let row = |f: &mut std::fmt::Formatter<'_>, label: &str, value: String, note: &str| {
            let line = format!("  {label:<56} {value:>6}  {note}");
            writeln!(f, "{}", line.trim_end())
        };
        writeln!(f)?;
        writeln!(
            f,
            "  webhook inbox demo: receiver and consumer under `cargo lambda watch`, AWS on moto"
        )?;
        writeln!(f)?;
        writeln!(f, "  deliveries by answer (every HTTP attempt)")?;
        for ((status, label), n) in &self.by_answer {
            let text = match (*status, label.as_str()) {
                (0, _) => "no answer (connection error; retried)".to_owned(),
                (200, "accepted") => "200 accepted (first delivery)".to_owned(),
                (200, "replayed") => "200 replayed (Idempotent-Replayed: true)".to_owned(),
                (503, l) => format!("503 {l} (sender retried after Retry-After)"),
                (s, l) if s >= 500 => format!("{s} {l} (sender retried)"),
                (s, l) => format!("{s} {l}"),
            };
            row(f, &format!("  {text}"), n.to_string(), "")?;
        }
        row(
            f,
            "  total",
            self.attempts.to_string(),
            &format!("({} of them retries)", self.retries),
        )?;
        writeln!(f)?;
        row(
            f,
            "distinct events accepted",
            self.accepted.to_string(),
            &format!("(receiver EMF Accepted: {})", self.emf_accepted),
        )?;
        let verdict = if self.side_effects == self.forwarded as u64 && self.keys_not_once.is_empty()
        {
            format!("= {} accepted events forwarded: OK", self.forwarded)
        } else {
            format!("{} accepted events forwarded: MISMATCH", self.forwarded)
        };
        row(
            f,
            "side effects recorded at the system of record",
            self.side_effects.to_string(),
            &verdict,
        )?;
        if !self.destinations.is_empty() {
            writeln!(
                f,
                "  destinations (each routed event applied once per destination)"
            )?;
            writeln!(
                f,
                "    {:<10} {:<16} {:>7} {:>10} {:>9} {:>9}  verdict",
                "name", "target", "routed", "COMPLETED", "received", "messages"
            )?;
            for d in &self.destinations {
                let verdict = match (d.ok(), d.strays) {
                    (true, _) => "once each: OK".to_owned(),
                    (false, 0) => "MISMATCH".to_owned(),
                    (false, n) => format!("MISMATCH ({n} not routed here)"),
                };
                writeln!(
                    f,
                    "    {:<10} {:<16} {:>7} {:>10} {:>9} {:>9}  {verdict}",
                    d.name, d.target, d.routed, d.completed, d.received, d.messages
                )?;
            }
        }
        writeln!(f, "  duplicates stopped")?;
        row(
            f,
            "  at the receiver (answers replayed)",
            self.replayed.to_string(),
            &format!("(receiver EMF Replayed: {})", self.emf_replayed),
        )?;
        let sends = self.emf_accepted + self.sent_behind_claims + self.direct_sends;
        row(
            f,
            "  at the queue (sends SQS deduplicated)",
            sends.saturating_sub(self.messages_seen as u64).to_string(),
            &format!(
                "({} sends = {} Accepted + {} behind a claim + {} direct; {} messages reached the bridge)",
                sends,
                self.emf_accepted,
                self.sent_behind_claims,
                self.direct_sends,
                self.messages_seen
            ),
        )?;
        row(
            f,
            "  at the consumer (DuplicateDelivery)",
            self.consumer_duplicates.to_string(),
            "(consumer EMF, from the watch output)",
        )?;
        row(
            f,
            "forwards the system of record failed (retried)",
            self.forward_failures.to_string(),
            "(answered 500 on purpose; the queue redelivered)",
        )?;
        if !self.keys_not_once.is_empty() {
            writeln!(
                f,
                "  keys without exactly one side effect: {:?}",
                self.keys_not_once
            )?;
        }
        if self.not_completed > 0 {
            writeln!(f, "  ledger items not COMPLETED: {}", self.not_completed)?;
        }
        if self.gave_up > 0 {
            writeln!(
                f,
                "  deliveries given up after 8 attempts: {}",
                self.gave_up
            )?;
        }
        row(
            f,
            "took",
            format!("{:.1} s", self.took.as_secs_f64()),
            &format!(
                "({:.0} deliveries/s through the emulator)",
                self.attempts as f64 / self.took.as_secs_f64().max(0.001)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(routed: usize, completed: usize, received: usize, messages: u64) -> DestinationRow {
        DestinationRow {
            name: "billing".into(),
            target: "SQS FIFO queue",
            routed,
            completed,
            received,
            messages,
            strays: 0,
        }
    }

    #[test]
    fn a_destination_is_ok_only_when_each_routed_event_arrived_once() {
        assert!(row(20, 20, 20, 20).ok());
        assert!(!row(20, 19, 20, 20).ok(), "one pair not COMPLETED");
        assert!(!row(20, 20, 19, 19).ok(), "one event lost");
        assert!(!row(20, 20, 20, 21).ok(), "one event twice");
        let stray = DestinationRow {
            strays: 1,
            ..row(20, 20, 20, 21)
        };
        assert!(!stray.ok(), "an event not routed here");
    }
}
