//! The audit's report: every source's answers and flags, rendered as a table for a person
//! (`make audit`) or as JSON (`--json`).

use inbox::config::SourceSpecs;
use serde_json::{json, Value};

use super::{audit_source, hours, Flag, Forwarding, QueueFacts, Routing, SourceAudit};

/// Retention against the chain it must outlast, or why it does not apply.
fn retention_text(s: &SourceAudit, queue: &QueueFacts) -> String {
    if s.flags.contains(&Flag::AtMostOnce) {
        "unused (no ledger)".to_owned()
    } else {
        format!(
            "{} h (chain {})",
            s.retention_hours,
            hours(queue.chain_seconds())
        )
    }
}

/// Every source, audited.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Where the sources came from.
    pub origin: String,
    pub queue: QueueFacts,
    pub sources: Vec<SourceAudit>,
    /// The forward every source shares, when audited.
    pub forwarding: Option<Forwarding>,
    /// Where each source's events go, when audited.
    pub routing: Option<Routing>,
}

impl Report {
    pub fn new(specs: &SourceSpecs, queue: QueueFacts, origin: impl Into<String>) -> Report {
        Report {
            origin: origin.into(),
            queue,
            sources: specs.iter().map(|s| audit_source(s, &queue)).collect(),
            forwarding: None,
            routing: None,
        }
    }

    /// With the routes' audit (where events go, unsigned destinations).
    pub fn with_routing(mut self, routing: Routing) -> Report {
        self.routing = Some(routing);
        self
    }

    fn routing_flags(&self) -> &[(&'static str, String, String)] {
        self.routing.as_ref().map_or(&[], |r| r.flags.as_slice())
    }

    /// With the forward's audit (signed or not).
    pub fn with_forwarding(mut self, forwarding: Forwarding) -> Report {
        self.forwarding = Some(forwarding);
        self
    }

    fn forwarding_flag(&self) -> Option<(&'static str, &'static str)> {
        self.forwarding.as_ref().and_then(Forwarding::flag)
    }

    pub fn flag_count(&self) -> usize {
        self.sources.iter().map(|s| s.flags.len()).sum::<usize>()
            + usize::from(self.forwarding_flag().is_some())
            + self.routing_flags().len()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "origin": self.origin,
            "queue": {
                "message_retention_seconds": self.queue.retention_seconds,
                "dead_letter_retention_seconds": self.queue.dlq_retention_seconds,
                "max_receive_count": self.queue.max_receive_count,
                "max_failures": self.queue.max_failures,
                "visibility_timeout_seconds": self.queue.visibility_timeout,
            },
            "forwarding": self.forwarding.as_ref().map(|f| json!({
                "signed": f.secrets > 0,
                "secrets": f.secrets,
                "origin": f.origin,
                "max_failures": f.max_failures,
                "flags": f.flag().iter().map(|(code, why)| json!({"code": code, "why": why})).collect::<Vec<_>>(),
            })),
            "routing": self.routing.as_ref().map(|r| json!({
                "origin": r.origin,
                "forward_url": r.forward,
                "forward_origin": r.forward_origin,
                "sources": r.lines,
                "flags": r.flags.iter().map(|(code, subject, why)| json!({"code": code, "subject": subject, "why": why})).collect::<Vec<_>>(),
            })),
            "sources": self.sources.iter().map(|s| json!({
                "source": s.source,
                "signature": s.signature,
                "repeat_key": s.repeat_key,
                "group": s.group,
                "delivery": s.delivery,
                "retention_hours": s.retention_hours,
                "retention_vs_queue": retention_text(s, &self.queue),
                "if_it_arrives_twice": s.arrives_twice,
                "on_failure": s.on_failure,
                "flags": s.flags.iter().map(|f| json!({"code": f.code(), "why": f.explain()})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The readable form: a summary table, then each source's three answers.
    #[allow(
        clippy::too_many_lines,
        reason = "the table's rows in the order they print"
    )]
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("Sources from {}\n", self.origin));
        out.push_str(&format!(
            "Queue: messages kept {}, visibility timeout {} s, dead-lettered after {} real failures \
             (maxReceiveCount {} a safety net), dead-letter queue keeps {}\n",
            hours(self.queue.retention_seconds),
            self.queue.visibility_timeout,
            self.queue.max_failures,
            self.queue.max_receive_count,
            hours(self.queue.dlq_retention_seconds)
        ));
        if let Some(f) = &self.forwarding {
            out.push_str(&format!("Forwards: {}\n", f.describe()));
        }
        if let Some(r) = &self.routing {
            out.push_str(&format!(
                "Routes (destinations from {}; {}):\n",
                r.origin, r.forward_origin
            ));
            for line in &r.lines {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out.push('\n');
        let header = [
            "source",
            "signature",
            "repeat identified by",
            "delivery",
            "retention",
            "flags",
        ];
        let rows: Vec<[String; 6]> = self
            .sources
            .iter()
            .map(|s| {
                let flags: Vec<&str> = s.flags.iter().map(|f| f.code()).collect();
                [
                    s.source.clone(),
                    s.signature.clone(),
                    s.repeat_key.clone(),
                    s.delivery.to_owned(),
                    retention_text(s, &self.queue),
                    if flags.is_empty() {
                        "-".to_owned()
                    } else {
                        flags.join(", ")
                    },
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            format!("{}\n", padded.join("  ").trim_end())
        };
        out.push_str(&line(&header.map(str::to_owned)));
        out.push_str(&line(&widths.map(|w| "-".repeat(w))));
        for row in &rows {
            out.push_str(&line(row));
        }
        // One clause a line: the answers are lists of facts joined by "; ".
        let clauses = |text: &str| {
            text.split("; ")
                .collect::<Vec<_>>()
                .join("\n                 ")
        };
        for s in &self.sources {
            out.push_str(&format!("\n{}\n", s.source));
            out.push_str(&format!("  arrives twice: {}\n", clauses(&s.arrives_twice)));
            out.push_str(&format!(
                "  repeat key:    {} (FIFO group: {})\n",
                s.repeat_key, s.group
            ));
            out.push_str(&format!("  on failure:    {}\n", clauses(&s.on_failure)));
            for f in &s.flags {
                out.push_str(&format!("  FLAG {}: {}\n", f.code(), f.explain()));
            }
        }
        if let Some((code, why)) = self.forwarding_flag() {
            out.push_str(&format!("\nFLAG {code}: {why}\n"));
        }
        for (code, _, why) in self.routing_flags() {
            out.push_str(&format!("\nFLAG {code}: {why}\n"));
        }
        out.push_str(&format!(
            "\n{} source(s), {} flag(s)\n",
            self.sources.len(),
            self.flag_count()
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::tests::QUEUE;

    #[test]
    fn the_table_lists_every_source_and_its_flags() {
        let specs = SourceSpecs::parse(
            r#"{"open": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}},
                "gh": {"signature": {"scheme": "github", "secrets": ["env:X"]}, "key": {"from": "header", "name": "X-GitHub-Delivery"}}}"#,
        )
        .expect("parses");
        let table = Report::new(&specs, QUEUE, "test").to_table();
        assert!(
            table.contains("open") && table.contains("unsigned, payload_hash_key"),
            "{table}"
        );
        assert!(table.contains("header x-github-delivery"), "{table}");
        assert!(table.contains("no_replay_guard"), "{table}");
        assert!(table.contains("2 source(s), 3 flag(s)"), "{table}");
    }
}
