//! The invariant, checked after every step (nothing accepted is dropped, a FIFO group's batch
//! answer fails a suffix), and the final checks after the drain (every accepted event
//! completed exactly once).

use std::collections::{BTreeMap, BTreeSet};

use inbox::ledger::LedgerStore;

use crate::queue_model::Msg;
use crate::sim::Sim;

impl Sim<'_> {
    pub(crate) fn check(&mut self) {
        let now = self.now();
        let mut w = self.w();
        for m in w.queue.age_out(now) {
            w.violation(format!(
                "message {} ({}) aged out of the queue (simulation parameters keep this from happening)",
                m.id, m.key
            ));
        }
        for (key, accepted) in self.event_keys() {
            if accepted && !w.completions.contains_key(&key) && !w.queue.holds(&key) {
                let rec = futures::executor::block_on(self.ledger.get(&key))
                    .ok()
                    .flatten();
                let status = rec.map(|r| r.status);
                w.violation(format!(
                    "LOST: {key} was answered 200 but is neither completed nor on a queue (ledger: {status:?})"
                ));
            }
        }
    }

    /// FIFO: within a group, once one fails, every later one fails too.
    pub(crate) fn check_batch_answer(
        &mut self,
        name: &str,
        batch: &[Msg],
        failed: &BTreeSet<&str>,
    ) {
        let mut groups: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
        for m in batch {
            groups
                .entry(&m.group)
                .or_default()
                .push(failed.contains(m.id.as_str()));
        }
        for (group, fails) in &groups {
            if let Some(first) = fails.iter().position(|f| *f) {
                if fails[first..].iter().any(|f| !f) {
                    self.w().violation(format!(
                        "{name}: group {group} ran on after a failure: {fails:?}"
                    ));
                }
            }
        }
    }

    pub(crate) fn failed(&self) -> bool {
        !self.w().violations.is_empty()
    }

    pub(crate) fn final_checks(&mut self) {
        let events = self.event_keys();
        let mut w = self.w();
        for (key, accepted) in &events {
            let completions = w.completions.get(key).map_or(0, Vec::len);
            if *accepted && completions == 0 {
                w.violation(format!(
                    "LOST: {key} accepted, never completed after the drain"
                ));
            }
            if completions > 1 && !w.forgotten_reruns.contains(key) {
                w.violation(format!("{key} completed {completions} times"));
            }
            if completions >= 1 {
                w.stats.completed += 1;
            }
            for d in w.destinations.clone() {
                let pair = inbox::route::destination_key(key, d);
                let done = w.completions.get(&pair).map_or(0, Vec::len);
                if *accepted && done == 0 {
                    w.violation(format!("LOST: {pair} (event, destination) never completed"));
                }
                if done > 1 && !w.forgotten_reruns.contains(&pair) {
                    w.violation(format!("{pair} completed {done} times"));
                }
            }
        }
        if w.stats.doubled > 0 && w.violations.is_empty() {
            w.violation("a double went unreported".to_owned());
        }
    }
}
