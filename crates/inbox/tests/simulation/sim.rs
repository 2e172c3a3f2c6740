//! The simulation's state (senders, running invocations, the handlers) and how invocations
//! are driven: one call at a time, dropped between two calls (a crash), or past their deadline
//! (killed by Lambda, or running on as a zombie).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, MutexGuard};
use std::task::{Context, Poll};

use aws_lambda_events::sqs::SqsBatchResponse;
use inbox::clock::{Clock, ManualClock};
use inbox::consumer::Consumer;
use inbox::ledger::memory::MemoryLedger;
use inbox::receiver::Receiver;
use lambda_http::{Body, Response};
use rand::rngs::StdRng;
use rand::Rng;

use crate::adapters::{SimProcessor, SimQueue, SimRedelivery};
use crate::faults::Rates;
use crate::ledger_adapter::SimLedger;
use crate::params::VISIBILITY_MS;
use crate::queue_model::Msg;
use crate::world::{lock, Shared, World};

#[derive(Debug)]
pub(crate) struct Sender {
    /// The keys of the events its request carries: one, or a batch's several in the batch's
    /// order (docs/design.md §14).
    pub(crate) keys: Vec<String>,
    /// Each event's own bytes, by key (a batch's: the element's exact text, as queued).
    pub(crate) events: Vec<(String, Vec<u8>)>,
    /// A batch request (answered with `keys`) rather than one event (answered with `key`).
    pub(crate) batch: bool,
    pub(crate) source: &'static str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) first_sent: Option<i64>,
    pub(crate) retry_at: Option<i64>,
    /// The receiver answered 200 (whether or not the sender saw it).
    pub(crate) accepted: bool,
    /// The sender saw a 200 and stopped retrying.
    pub(crate) satisfied: bool,
}

pub(crate) type Fut<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

pub(crate) enum Work<'a> {
    Receive {
        event: usize,
        fut: Fut<'a, Response<Body>>,
    },
    Consume {
        batch: Vec<Msg>,
        fut: Fut<'a, SqsBatchResponse>,
    },
}

pub(crate) struct Task<'a> {
    pub(crate) name: String,
    pub(crate) deadline: i64,
    /// Past this, even a zombie is gone: a consumer never outlives six times the function's
    /// timeout (the template's visibility timeout, which is what it is for; a seed with a
    /// shorter one sees the message come back before); a receiver has no such bound.
    pub(crate) hard_stop: i64,
    pub(crate) zombie: bool,
    pub(crate) work: Work<'a>,
}

pub(crate) type Rx = Receiver<SimLedger, SimQueue, ManualClock>;
pub(crate) type Cx = Consumer<
    SimLedger,
    SimProcessor,
    ManualClock,
    inbox::consumer::Wiring<
        SimRedelivery,
        inbox::bucket::NoBucket,
        crate::adapters::SimArchive,
        crate::destinations::SimDestinations,
    >,
>;

pub(crate) struct Sim<'a> {
    pub(crate) seed: u64,
    pub(crate) rng: StdRng,
    pub(crate) rates: Rates,
    pub(crate) world: Shared,
    pub(crate) clock: ManualClock,
    pub(crate) ledger: Arc<MemoryLedger>,
    pub(crate) rx: &'a Rx,
    pub(crate) cx: &'a Cx,
    pub(crate) senders: Vec<Sender>,
    pub(crate) tasks: Vec<Task<'a>>,
    pub(crate) invocations: u64,
    /// The breakers' board every consumer invocation shares.
    pub(crate) board: inbox::breaker::MemoryBoard,
}

/// `SIM_UNBOUNDED_ZOMBIES=1` lets a paused consumer run on past its batch's visibility timeout,
/// which Lambda's timeout rules out. There, a consumer that lost its lease to a redelivery of
/// the same message acknowledges it (see the report in the README's proof section) and the key
/// can stay PROCESSING with its side effect applied once: the invariant reports it as LOST.
pub(crate) fn unbounded_zombies() -> bool {
    static FLAG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FLAG.get_or_init(|| std::env::var_os("SIM_UNBOUNDED_ZOMBIES").is_some_and(|v| v == "1"))
}

pub(crate) fn poll_once<T>(fut: &mut Fut<'_, T>) -> Poll<T> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    fut.as_mut().poll(&mut cx)
}

impl<'a> Sim<'a> {
    pub(crate) fn w(&self) -> MutexGuard<'_, World> {
        lock(&self.world)
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Every event of the run, once, with whether some sender carrying it was answered 200
    /// (a batch's event may travel in several overlapping requests).
    pub(crate) fn event_keys(&self) -> Vec<(String, bool)> {
        let mut out: Vec<(String, bool)> = Vec::new();
        for s in &self.senders {
            for key in &s.keys {
                match out.iter_mut().find(|(k, _)| k == key) {
                    Some((_, accepted)) => *accepted |= s.accepted,
                    None => out.push((key.clone(), s.accepted)),
                }
            }
        }
        out
    }

    pub(crate) fn log(&self, text: String) {
        self.w().log(text);
    }

    pub(crate) fn advance(&mut self, ms: i64, why: &str) {
        self.clock.advance_ms(ms);
        if ms >= 1000 {
            self.log(format!("clock +{:.3}s ({why})", ms as f64 / 1000.0));
        }
    }

    /// A jump of the clock in the main phase: the event source mapping polls all the time,
    /// so after a long one it has received what became visible meanwhile.
    pub(crate) fn jump(&mut self, ms: i64, why: &str) {
        self.advance(ms, why);
        if ms >= VISIBILITY_MS / 2 {
            self.start_batch();
        }
    }

    /// Advances task `i` by one call; handles its end.
    pub(crate) fn poll_task(&mut self, i: usize) {
        self.w().current = Some(self.tasks[i].name.clone());
        let done = match &mut self.tasks[i].work {
            Work::Receive { fut, .. } => match poll_once(fut) {
                Poll::Ready(resp) => Some(Ok(resp)),
                Poll::Pending => None,
            },
            Work::Consume { fut, .. } => match poll_once(fut) {
                Poll::Ready(resp) => Some(Err(resp)),
                Poll::Pending => None,
            },
        };
        self.w().current = None;
        if let Some(result) = done {
            let task = self.tasks.remove(i);
            self.w().last_call.remove(&task.name);
            match (task.work, result) {
                (Work::Receive { event, .. }, Ok(resp)) => {
                    self.answered(event, &task.name, Some(resp))
                }
                (Work::Consume { batch, .. }, Err(resp)) => {
                    self.batch_done(&task.name, &batch, &resp)
                }
                _ => unreachable!("a task ends with its own kind of answer"),
            }
        }
    }

    /// Drops task `i` between two calls: the invocation died there.
    pub(crate) fn crash(&mut self, i: usize, why: &str) {
        let task = self.tasks.remove(i);
        {
            let mut w = self.w();
            let call = w.last_call.remove(&task.name).unwrap_or("nothing");
            w.last_call_of_dead = Some(call);
            let who = match task.work {
                Work::Receive { .. } => "receiver",
                Work::Consume { .. } => "consumer",
            };
            *w.stats
                .crash_points
                .entry(format!("{who} after {call}"))
                .or_default() += 1;
            w.log(format!("{}: dies after {call} ({why})", task.name));
        }
        if let Work::Receive { event, .. } = task.work {
            let call = self.w().last_call_of_dead.take();
            if self.senders[event].batch && matches!(call, Some("claim" | "mark_resent" | "send")) {
                self.w().stats.batch_deaths += 1;
            }
            self.answered(event, &task.name, None);
        }
    }

    /// Lambda ends invocations past their deadline, mostly; the rest run on as zombies (a
    /// paused process, clock skew), which is how a lease gets lost, until their hard stop.
    pub(crate) fn deadlines(&mut self) {
        let now = self.now();
        let mut i = 0;
        while i < self.tasks.len() {
            if self.tasks[i].hard_stop <= now {
                self.w().stats.killed += 1;
                self.crash(i, "outlived its visibility timeout");
                continue;
            }
            if self.tasks[i].deadline < now && !self.tasks[i].zombie {
                let kill = self.rng.random_bool(self.rates.kill_overdue);
                if kill {
                    self.w().stats.killed += 1;
                    self.crash(i, "Lambda timeout");
                    continue;
                }
                self.tasks[i].zombie = true;
                self.w().stats.zombies += 1;
                let name = self.tasks[i].name.clone();
                self.log(format!("{name}: past its deadline, still running (zombie)"));
            }
            i += 1;
        }
    }
}
