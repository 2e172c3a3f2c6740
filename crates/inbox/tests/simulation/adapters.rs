//! The adapters the real handlers get besides the ledger (`ledger_adapter.rs`): the queue model
//! behind the queue port, the archive and the consumer's redelivery, one yield per call with
//! injected failures, and the side effect that records every run and reports a double, and two
//! runs of one key at once.

use std::sync::Arc;

use std::time::Duration;

use aws_lambda_events::sqs::SqsMessage;
use inbox::archive::{Archive, ArchiveError};
use inbox::consumer::{Job, Outcome, ProcessError, Processor, LEASE_MARGIN_MS};
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::LedgerStore;
use inbox::queue::{Outgoing, Queue, QueueError};
use inbox::redelivery::Redelivery;
use rand::Rng;

use crate::destinations::event_of;
use crate::faults::{Fault, Mutant};
use crate::params::MAX_FAILURES;
use crate::world::{lock, step, Shared};

/// The queue model behind the receiver's `Queue` port.
#[derive(Clone)]
pub(crate) struct SimQueue {
    pub(crate) world: Shared,
}

impl Queue for SimQueue {
    async fn send(&self, msg: Outgoing) -> Result<(), QueueError> {
        step().await;
        let mut w = lock(&self.world);
        w.called("send");
        let (before, after) = (w.rates.queue_before, w.rates.queue_after);
        let f = w.roll(before, after);
        if f == Fault::Before {
            w.log(format!(
                "  queue send {}: error (nothing sent)",
                msg.dedup_id()
            ));
            return Err(QueueError("injected: queue unavailable".into()));
        }
        let now = w.now();
        let dropped_by_mutant = w.mutant == Mutant::QueueDropsMessages && w.frng.random_bool(0.2);
        let enqueued = !dropped_by_mutant && w.queue.send(&msg, now);
        if !enqueued && !dropped_by_mutant {
            w.stats.deduplicated_sends += 1;
        }
        let what = if enqueued { "enqueued" } else { "deduplicated" };
        if f == Fault::After {
            w.log(format!(
                "  queue send {}: {what}, answer lost (error)",
                msg.dedup_id()
            ));
            return Err(QueueError("injected: answer lost".into()));
        }
        w.log(format!("  queue send {}: {what}", msg.dedup_id()));
        Ok(())
    }
}

/// The archive stream behind the consumer's `Archive` port, with the queue's fault rates: a
/// call that fails before taking anything, or one whose records were taken but its answer
/// lost (the consumer sees an error and the message comes back; the archive holds it twice).
#[derive(Clone)]
pub(crate) struct SimArchive {
    pub(crate) world: Shared,
}

impl Archive for SimArchive {
    async fn put(&self, lines: &[String]) -> Result<Vec<bool>, ArchiveError> {
        step().await;
        let mut w = lock(&self.world);
        w.called("archive");
        let (before, after) = (w.rates.queue_before, w.rates.queue_after);
        let f = w.roll(before, after);
        if f == Fault::Before {
            w.log(format!(
                "  archive {} line(s): error (nothing taken)",
                lines.len()
            ));
            return Err(ArchiveError("injected: archive unavailable".into()));
        }
        for line in lines {
            if let Ok(envelope) = inbox::Envelope::parse(line) {
                w.archived.insert(envelope.key);
            }
        }
        if f == Fault::After {
            w.log(format!(
                "  archive {} line(s): taken, answer lost (error)",
                lines.len()
            ));
            return Err(ArchiveError("injected: answer lost".into()));
        }
        w.log(format!("  archive {} line(s): taken", lines.len()));
        Ok(vec![true; lines.len()])
    }
}

/// The queue model behind the consumer's `Redelivery` port: a delay changes a message's
/// visibility, a dead letter copies it to the dead-letter queue; each with injected errors
/// before and after, as the receiver's sends.
#[derive(Clone)]
pub(crate) struct SimRedelivery {
    pub(crate) world: Shared,
    /// The ledger as it is (read without faults, to explain a dead letter).
    pub(crate) ledger: Arc<MemoryLedger>,
}

impl SimRedelivery {
    fn call(
        &self,
        op: &'static str,
        msg: &SqsMessage,
        apply: impl FnOnce(&mut crate::world::World, &str, u64) -> bool,
    ) -> Result<(), QueueError> {
        let mut w = lock(&self.world);
        w.called(op);
        let (before, after) = (w.rates.queue_before, w.rates.queue_after);
        let f = w.roll(before, after);
        let handle = msg.receipt_handle.clone().unwrap_or_default();
        if f == Fault::Before {
            w.log(format!("  queue {op} {handle}: error (nothing done)"));
            return Err(QueueError("injected: queue unavailable".into()));
        }
        let (id, receipt) = handle.split_once('#').unwrap_or_default();
        let receipt = receipt.parse().unwrap_or(0);
        let done = apply(&mut w, id, receipt);
        let lost = if f == Fault::After {
            ", answer lost (error)"
        } else {
            ""
        };
        w.log(format!(
            "  queue {op} {handle}: {}{lost}",
            if done { "done" } else { "refused" }
        ));
        match (done, f) {
            (_, Fault::After) => Err(QueueError("injected: answer lost".into())),
            (true, _) => Ok(()),
            (false, _) => Err(QueueError("stale receipt handle".into())),
        }
    }
}

impl Redelivery for SimRedelivery {
    async fn delay(&self, msg: &SqsMessage, seconds: u32) -> Result<(), QueueError> {
        step().await;
        self.call("delay", msg, |w, id, receipt| {
            let until = w.now() + i64::from(seconds) * 1000;
            w.stats.delayed += 1;
            w.queue.change_visibility(id, receipt, until)
        })
    }

    async fn dead_letter(&self, msg: &SqsMessage) -> Result<(), QueueError> {
        step().await;
        self.explain_dead_letter(msg).await;
        self.call("dead_letter", msg, |w, id, _| {
            let copied = w.queue.copy_to_dlq(id);
            if copied {
                w.stats.dead_lettered += 1;
            }
            copied
        })
    }

    fn dead_letters(&self) -> bool {
        true
    }

    async fn resend(&self, msg: &SqsMessage) -> Result<(), QueueError> {
        step().await;
        self.call("resend", msg, |w, id, _| {
            let now = w.now();
            let sent = w.queue.resend(id, now);
            if sent {
                w.stats.held_resent += 1;
            }
            sent
        })
    }
}

impl SimRedelivery {
    /// The consumer dead-letters a message of an event its breaker held only for real
    /// failures: one of the event's items (the event's, or a pair's) has MAX_FAILURES of them.
    /// One dead-lettered for being held is a violation (`HELD-DEAD-LETTERED`).
    async fn explain_dead_letter(&self, msg: &SqsMessage) {
        let Some(key) = msg
            .body
            .as_deref()
            .and_then(|b| inbox::Envelope::parse(b).ok())
            .map(|e| e.key)
        else {
            return;
        };
        let (held, destinations) = {
            let w = lock(&self.world);
            (w.held_events.contains(&key), w.destinations.clone())
        };
        if !held {
            return;
        }
        let mut failures = Vec::new();
        for item in std::iter::once(key.clone()).chain(
            destinations
                .iter()
                .map(|d| inbox::route::destination_key(&key, d)),
        ) {
            if let Ok(Some(r)) = self.ledger.get(&item).await {
                failures.push((item, r.failures));
            }
        }
        let mut w = lock(&self.world);
        if failures.iter().any(|(_, n)| *n >= MAX_FAILURES) {
            w.stats.held_then_dead_lettered += 1;
        } else {
            w.violation(format!(
                "HELD-DEAD-LETTERED: {key} dead-lettered by the consumer after its breaker held it, with no item at {MAX_FAILURES} real failures: {failures:?}"
            ));
        }
    }
}

/// The side effect: records every run per key; fails on demand, before or after applying,
/// or is throttled (not applied); like the shipped forwarder, it does not start without time
/// left in its lease, and gives up (not applied) when the lease's time runs out before the
/// downstream answered. A run spans steps of the scheduler (it starts, the downstream works,
/// it answers), so other invocations interleave with it: one starting while another run of
/// the same key is still going is an OVERLAP.
pub(crate) struct SimProcessor {
    pub(crate) world: Shared,
}

/// A side effect in progress; it ends when the run returns or its invocation dies.
struct Running {
    world: Shared,
    key: String,
    id: u64,
}

impl Running {
    /// Notes the start of a run of `key` that the forwarder gives up on at `gives_up_at`;
    /// reports an OVERLAP if another run of the key is still going.
    fn start(world: &Shared, key: &str, attempt: u32, gives_up_at: i64) -> Running {
        let mut w = lock(world);
        let now = w.now();
        let going = w
            .in_effect
            .get(key)
            .map_or(0, |runs| runs.iter().filter(|(_, end)| *end > now).count());
        if going > 0 {
            w.violation(format!(
                "OVERLAP: a side effect of {key} started (attempt {attempt}) while {going} other run(s) of it were still going"
            ));
        }
        w.next_effect += 1;
        let id = w.next_effect;
        w.in_effect
            .entry(key.to_owned())
            .or_default()
            .push((id, gives_up_at));
        Running {
            world: world.clone(),
            key: key.to_owned(),
            id,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut w = lock(&self.world);
        if let Some(runs) = w.in_effect.get_mut(&self.key) {
            runs.retain(|(id, _)| *id != self.id);
            if runs.is_empty() {
                w.in_effect.remove(&self.key);
            }
        }
    }
}

impl Processor for SimProcessor {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        match self.run(job).await {
            Outcome::Done => Ok(()),
            Outcome::Failed(e) | Outcome::Throttled { reason: e, .. } => Err(e),
        }
    }

    #[allow(
        clippy::too_many_lines,
        reason = "the simulated system of record's every answer in one match"
    )]
    async fn run(&self, job: &Job) -> Outcome {
        step().await;
        let gives_up_at = job.lease_until_ms - LEASE_MARGIN_MS;
        {
            let mut w = lock(&self.world);
            // As the shipped HttpForwarder does: no side effect without time left in the
            // lease (past it, another consumer may have taken the key over).
            if gives_up_at <= w.now() {
                w.log(format!(
                    "  effect {} attempt {}: no time left in the lease, not run",
                    job.key, job.attempt
                ));
                w.stats.out_of_lease += 1;
                return Outcome::Failed(ProcessError("no time left in the lease".into()));
            }
            w.log(format!(
                "  effect {} attempt {}: starts",
                job.key, job.attempt
            ));
        }
        {
            let mut w = lock(&self.world);
            if job.replay_id.is_none() && !w.archived.contains(event_of(&job.key)) {
                w.violation(format!(
                    "UNARCHIVED: a side effect of {} started before the archive held it",
                    job.key
                ));
            }
        }
        let _running = Running::start(&self.world, &job.key, job.attempt, gives_up_at);
        // The downstream works on it: other invocations move meanwhile.
        step().await;
        let f = {
            let mut w = lock(&self.world);
            let (before, after) = (w.rates.effect_before, w.rates.effect_after);
            let f = w.roll(before, after);
            let key = job.key.clone();
            // The forwarder's timeout is the lease's time left: past it, it gave up.
            if gives_up_at <= w.now() {
                w.log(format!(
                    "  effect {key} attempt {}: the lease's time ran out first, gave up (not applied)",
                    job.attempt
                ));
                w.stats.out_of_lease += 1;
                return Outcome::Failed(ProcessError("timed out at the lease's end".into()));
            }
            let throttled = w.rates.effect_throttled;
            if w.faults_on && w.frng.random_bool(throttled) {
                let retry_after = Duration::from_secs(w.frng.random_range(1..=60));
                w.log(format!(
                    "  effect {key} attempt {}: throttled, retry after {} s (not applied)",
                    job.attempt,
                    retry_after.as_secs()
                ));
                w.stats.throttled += 1;
                return Outcome::Throttled {
                    retry_after,
                    reason: ProcessError("injected: downstream throttling".into()),
                };
            }
            if f == Fault::Before {
                w.log(format!(
                    "  effect {key} attempt {}: refused (not applied)",
                    job.attempt
                ));
                w.runs.entry(key).or_default().push((job.attempt, false));
                return Outcome::Failed(ProcessError("injected: downstream refused".into()));
            }
            match w.events.get(event_of(&key)) {
                None => w.violation(format!("side effect for an unknown key {key}")),
                Some(e) if e.body != job.body => {
                    w.violation(format!("side effect for {key} carried another body"))
                }
                Some(_) => {}
            }
            let earlier = w
                .runs
                .get(&key)
                .is_some_and(|r| r.iter().any(|(_, applied)| *applied));
            if w.remembered_completion(&key) {
                w.stats.doubled += 1;
                w.violation(format!(
                    "DOUBLED: side effect for {key} ran again after it was COMPLETED (attempt {})",
                    job.attempt
                ));
            } else if w.completions.contains_key(&key) {
                // The ledger forgot the key (past expires_at, as designed). Only a message the
                // operator redrove from the dead-letter queue can outlive the ledger: the main
                // queue's retention is shorter than the ledger's, the dead-letter queue's is
                // not (nor in template.yaml: 14 days against 7).
                w.stats.reruns_after_retention += 1;
                w.forgotten_reruns.insert(key.clone());
                // A pair forgotten: its event's item was too, and completes again.
                w.forgotten_reruns.insert(event_of(&key).to_owned());
                w.log(format!(
                    "  (re-run of {key}: its completion is past expires_at, forgotten)"
                ));
                if !w
                    .queue
                    .main
                    .iter()
                    .any(|m| m.key == event_of(&key) && m.redriven)
                {
                    w.violation(format!(
                        "{key} ran again after the ledger forgot it, from a message that was not redriven"
                    ));
                }
            } else if earlier {
                // Explained: no run of this key has been completed yet (it failed, lost its
                // lease, or died before complete); the re-run carries the same key and body.
                w.stats.reruns += 1;
            }
            w.stats.side_effects += 1;
            w.called("effect");
            w.runs
                .entry(key.clone())
                .or_default()
                .push((job.attempt, true));
            w.log(format!("  effect {key} attempt {}: applied", job.attempt));
            f
        };
        // The answer comes back later: an invocation can die in between.
        step().await;
        if f == Fault::After {
            lock(&self.world).log(format!(
                "  effect {}: applied, but answered a timeout",
                job.key
            ));
            return Outcome::Failed(ProcessError("injected: timed out after applying".into()));
        }
        Outcome::Done
    }
}
