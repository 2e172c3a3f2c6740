//! The schedule: the seeded choice of what happens next in the main phase (deliveries,
//! calls, crashes, batches, clock jumps, TTL sweeps), then the drain with faults off.

use std::collections::HashSet;

use rand::Rng;

use inbox::route::destination_key;

use crate::destinations::{resume, Mode};
use crate::params::{DEDUP_WINDOW_MS, MAIN_STEPS, SENDER_WINDOW_MS, VISIBILITY_MS};

/// Receives (or waits of a quarter of the visibility timeout) while `b` stays down, before
/// the operator resumes it.
const HOLD_ROUNDS: usize = 30;
use crate::sim::Sim;

/// What the scheduler can do in one step.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// A sender's first delivery of an event.
    FirstDelivery,
    /// A sender's retry, due after a 500 or no answer.
    Retry,
    /// The same event delivered again anyway (a user clicking twice, a sender's bug).
    Duplicate,
    /// One invocation makes its next call.
    Advance,
    /// A few invocations make their next calls.
    Burst,
    /// An invocation dies between two calls.
    Crash,
    /// The event source mapping hands the consumer a batch.
    Batch,
    /// A message in flight delivered again, to a second consumer at once (a standard queue's
    /// at-least-once delivery).
    DeliverAgain,
    /// An operator redrives the dead-letter queue now, racing whatever still works on the
    /// originals (the consumer's own dead-letter copy leaves its original in flight).
    Redrive,
    Tick,
    PastLease,
    PastVisibility,
    PastDedupWindow,
    QuietSpell,
    /// DynamoDB's TTL deletes expired items.
    Sweep,
}

impl Sim<'_> {
    pub(crate) fn sweep(&mut self) {
        let now = self.now();
        let mut before = self.ledger.snapshot();
        before.sort_by(|a, b| a.key.cmp(&b.key));
        let n = self.ledger.sweep_expired(now);
        let after: HashSet<String> = self.ledger.snapshot().into_iter().map(|r| r.key).collect();
        let mut w = self.w();
        for r in before {
            let gone = !after.contains(&r.key);
            if gone != r.is_expired(now) {
                w.violation(format!(
                    "TTL sweep removed={gone} for {} (expires_at {})",
                    r.key, r.expires_at
                ));
            }
        }
        w.stats.swept += n as u64;
        if n > 0 {
            w.log(format!("TTL sweep: {n} expired item(s) deleted"));
        }
    }

    pub(crate) fn main_phase(&mut self) {
        for _ in 0..MAIN_STEPS {
            self.w().stats.steps += 1;
            self.act();
            self.deadlines();
            self.check();
            if self.failed() {
                return;
            }
        }
    }

    #[allow(
        clippy::too_many_lines,
        reason = "the scheduler's every action in one match"
    )]
    pub(crate) fn act(&mut self) {
        let now = self.now();
        let unsent: Vec<usize> = (0..self.senders.len())
            .filter(|&e| self.senders[e].first_sent.is_none())
            .collect();
        let due: Vec<usize> = (0..self.senders.len())
            .filter(|&e| self.senders[e].retry_at.is_some_and(|at| at <= now))
            .collect();
        let started: Vec<usize> = (0..self.senders.len())
            .filter(|&e| {
                self.senders[e]
                    .first_sent
                    .is_some_and(|t| now - t < SENDER_WINDOW_MS)
            })
            .collect();
        let has_tasks = !self.tasks.is_empty();
        let when = |cond: bool, weight: u32| if cond { weight } else { 0 };
        let choices = [
            (when(!unsent.is_empty(), 30), Action::FirstDelivery),
            (when(!due.is_empty(), 40), Action::Retry),
            (when(!started.is_empty(), 8), Action::Duplicate),
            (when(has_tasks, 120), Action::Advance),
            (when(has_tasks, 12), Action::Burst),
            (when(has_tasks, 8), Action::Crash),
            (30, Action::Batch),
            (when(has_tasks, 6), Action::DeliverAgain),
            (2, Action::Redrive),
            (25, Action::Tick),
            (6, Action::PastLease),
            (4, Action::PastVisibility),
            (1, Action::PastDedupWindow),
            (1, Action::QuietSpell),
            (4, Action::Sweep),
        ];
        let total: u32 = choices.iter().map(|c| c.0).sum();
        let mut pick = self.rng.random_range(0..total);
        let mut action = Action::Tick;
        for (weight, a) in choices {
            if pick < weight {
                action = a;
                break;
            }
            pick -= weight;
        }
        match action {
            Action::FirstDelivery => {
                let e = unsent[self.rng.random_range(0..unsent.len())];
                self.deliver(e, "first delivery");
            }
            Action::Retry => {
                let e = due[self.rng.random_range(0..due.len())];
                self.w().stats.retries += 1;
                self.deliver(e, "retry");
            }
            Action::Duplicate => {
                let e = started[self.rng.random_range(0..started.len())];
                self.w().stats.duplicates += 1;
                self.deliver(e, "duplicate");
            }
            Action::Advance => {
                let i = self.rng.random_range(0..self.tasks.len());
                self.poll_task(i);
            }
            Action::Burst => {
                for _ in 0..self.rng.random_range(2..8) {
                    if self.tasks.is_empty() {
                        break;
                    }
                    let i = self.rng.random_range(0..self.tasks.len());
                    self.poll_task(i);
                }
            }
            Action::Crash => {
                let i = self.rng.random_range(0..self.tasks.len());
                self.w().stats.crashes += 1;
                self.crash(i, "crash");
            }
            Action::Batch => {
                self.start_batch();
            }
            Action::DeliverAgain => {
                self.deliver_again();
            }
            Action::Redrive => {
                let now = self.now();
                let redriven = self.w().queue.redrive(now);
                if redriven > 0 {
                    let mut w = self.w();
                    w.stats.redriven += redriven as u64;
                    w.stats.early_redrives += 1;
                    w.log(format!(
                        "operator redrives {redriven} message(s) from the dead-letter queue"
                    ));
                }
            }
            Action::Tick => {
                let ms = self.rng.random_range(0..1500);
                self.advance(ms, "tick");
            }
            Action::PastLease => {
                let ms = self.rng.random_range(5_000..25_000);
                self.advance(ms, "past a lease");
            }
            Action::PastVisibility => {
                let ms = self
                    .rng
                    .random_range(VISIBILITY_MS / 2..VISIBILITY_MS + 30_000);
                self.jump(ms, "visibility timeout");
            }
            Action::PastDedupWindow => {
                let ms = self
                    .rng
                    .random_range(DEDUP_WINDOW_MS - 60_000..DEDUP_WINDOW_MS + 120_000);
                self.jump(ms, "about the dedup window");
            }
            Action::QuietSpell => {
                let ms = self.rng.random_range(4 * 60_000..8 * 60_000);
                self.jump(ms, "a long quiet spell");
            }
            Action::Sweep => self.sweep(),
        }
    }

    /// Runs every invocation to its end.
    fn finish_all(&mut self) {
        while !self.tasks.is_empty() && !self.failed() {
            self.finish(self.tasks.len() - 1);
        }
    }

    /// `b` never recovers: with faults off, the consumer goes on receiving (each cool-down,
    /// one probe fails) and then, before the operator resumes it, `b`'s pairs are held: none
    /// completed or applied, every accepted event still on a queue (a dead letter only for
    /// real failures: checked as it happens), the held events' `a` pairs done meanwhile
    /// (counted: a FIFO group's later events wait behind its held one).
    fn hold_while_down(&mut self) {
        self.log("--- b never recovers: its events held ---".to_owned());
        for _ in 0..HOLD_ROUNDS {
            self.finish_all();
            if !self.start_batch() {
                self.advance(VISIBILITY_MS / 4, "b still down: its events held");
            }
            self.finish_all();
            self.check();
            if self.failed() {
                return;
            }
        }
        let events = self.event_keys();
        let mut w = self.w();
        let mut held = 0;
        for (key, accepted) in events {
            let b = destination_key(&key, "b");
            let applied = w
                .runs
                .get(&b)
                .is_some_and(|r| r.iter().any(|(_, applied)| *applied));
            if applied || w.completions.contains_key(&b) {
                w.violation(format!("NEVER: {b} applied while b was down"));
            }
            if !w.held_events.contains(&key) {
                continue;
            }
            held += 1;
            // Its `a` pair goes on (unless a FIFO group's earlier held message keeps it
            // back): done at most once, checked as it completes, and once after the drain.
            let a = destination_key(&key, "a");
            if accepted && w.completions.contains_key(&a) {
                w.stats.held_done_elsewhere += 1;
            }
        }
        w.log(format!(
            "{held} event(s) held by b's breaker, none applied to b"
        ));
    }

    /// Runs task `i` to its end.
    pub(crate) fn finish(&mut self, i: usize) {
        let name = self.tasks[i].name.clone();
        for _ in 0..10_000 {
            let before = self.tasks.len();
            self.poll_task(i);
            if self.tasks.len() < before {
                return;
            }
        }
        self.w().violation(format!("{name} never finished"));
    }

    /// The operator leaves in the dead-letter queue what the consumer refused as no receiver's
    /// (docs/design.md §5): a message whose key has no unexpired ledger item, which a redrive
    /// would only bring back refused. That happens only to an event no sender was answered 200
    /// for (its send landed, its answer was lost, its claim released, its sender gave up);
    /// an accepted event's message left so is lost, a violation.
    fn leave_refused_dead_letters(&mut self, now: i64) {
        let items: std::collections::HashSet<String> = self
            .ledger
            .snapshot()
            .into_iter()
            .filter(|r| !r.is_expired(now))
            .map(|r| r.key)
            .collect();
        let accepted: std::collections::HashSet<String> = self
            .event_keys()
            .into_iter()
            .filter(|(_, accepted)| *accepted)
            .map(|(key, _)| key)
            .collect();
        let mut w = self.w();
        let (left, redrivable): (Vec<_>, Vec<_>) = std::mem::take(&mut w.queue.dlq)
            .into_iter()
            .partition(|m| !items.contains(&m.key));
        w.queue.dlq = redrivable;
        for m in left {
            if accepted.contains(&m.key) {
                w.violation(format!(
                    "LOST: {} accepted, its message refused for want of a ledger item",
                    m.key
                ));
            } else {
                w.log(format!(
                    "operator leaves {} in the dead-letter queue: refused, never accepted",
                    m.key
                ));
            }
        }
    }

    /// No more faults: finish what runs, let the senders' due retries through, redrive the
    /// dead-letter queue, and drain the queue. Every accepted event must end up completed.
    pub(crate) fn drain(&mut self) {
        self.w().faults_on = false;
        self.log("--- drain: no more faults ---".to_owned());
        let mode = self.w().mode;
        match mode {
            Mode::Flaky => {}
            Mode::Recovers { .. } => {
                self.w().healed = true;
                self.log("b has recovered".to_owned());
            }
            Mode::Never => {
                self.hold_while_down();
                if self.failed() {
                    return;
                }
                resume(&self.world, &self.board);
            }
        }
        for _ in 0..400 {
            while !self.tasks.is_empty() {
                self.finish(self.tasks.len() - 1);
                if self.failed() {
                    return;
                }
            }
            let now = self.now();
            let pending: Vec<(usize, i64)> = (0..self.senders.len())
                .filter_map(|e| self.senders[e].retry_at.map(|at| (e, at)))
                .collect();
            if let Some(&(e, at)) = pending.iter().min_by_key(|(_, at)| *at) {
                if at > now {
                    self.advance(at - now, "until a sender's retry");
                }
                self.w().stats.retries += 1;
                self.deliver(e, "retry");
                continue;
            }
            let now = self.now();
            self.leave_refused_dead_letters(now);
            let redriven = self.w().queue.redrive(now);
            if redriven > 0 {
                self.w().stats.redriven += redriven as u64;
                self.log(format!(
                    "operator redrives {redriven} message(s) from the dead-letter queue"
                ));
            }
            if self.w().queue.main.is_empty() {
                self.check();
                return;
            }
            if !self.start_batch() {
                self.advance(VISIBILITY_MS + 1, "waiting for in-flight messages");
            }
            self.check();
            if self.failed() {
                return;
            }
        }
        self.w().violation("the drain did not finish".to_owned());
    }
}
