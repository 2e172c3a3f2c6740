//! A deterministic simulation of concurrent calls on the memory store.
//!
//! Several invocations of a few keys run `Idempotency::run` at once, interleaved step by step
//! by a seeded scheduler: each store call (claim, complete, release, fail) waits for the
//! scheduler to let it through, and each handler runs until the scheduler decides its result.
//! Between those steps the scheduler starts new invocations (a duplicate, a retry, now and then
//! another payload under the same key), kills one holding its key (an invocation that died),
//! and moves a manual clock: a little, past the leases (every invocation whose deadline passed
//! is killed, as Lambda ends it), or past the retention.
//!
//! After every step the library's promises are checked:
//! - at most one handler runs per key at a time;
//! - at most one run per key completes until its record is gone (expired, or released);
//! - every duplicate after the completion gets the first result;
//! - a live lease is never overtaken, and another payload is refused;
//! - an abandoned claim (its lease ran out) or a failed one is taken over by the next claim of
//!   its payload; an absent or expired key is claimed.
//!
//! `SIM_SEEDS=N` runs seeds 0..N (default [`DEFAULT_SEEDS`]); `SIM_SEED=x` runs that one seed
//! and prints its trace (with `--nocapture`). A failing seed's trace is in the panic message.
#![cfg(feature = "memory")]

mod scenarios;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use lambda_idempotency::machine::{Claim, ClaimOutcome};
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::{
    payload_sha256, Deadline, Error, Idempotency, OnFailure, Outcome, Record, Status, Store,
    StoreError,
};
use scenarios::{key, ManualClock, T};

/// Seeds run by default: a few seconds in a debug build.
const DEFAULT_SEEDS: u64 = 1000;
const STEPS: usize = 300;
const KEYS: [&str; 3] = ["a", "b", "c"];
const RETENTION_S: i64 = 100;
const MAX_LIVE: usize = 6;

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + i64::try_from(self.next() % u64::try_from(hi - lo).unwrap_or(1)).unwrap_or(0)
    }
    fn percent(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
}

/// A claim as the store saw it: the record it found, and whether it was written.
#[derive(Clone, Debug)]
struct ClaimSeen {
    before: Option<Record>,
    /// The clock when the write was made (the claim's own `now_ms` may be older).
    now: i64,
    claim_now: i64,
    claimed: bool,
    /// The claim's lease owner.
    owner: String,
}

/// What the simulation observes through the store and the handlers.
#[derive(Default)]
struct Obs {
    /// Handlers running, by key.
    running: HashMap<String, u32>,
    /// The last claim of each invocation.
    claims: HashMap<usize, ClaimSeen>,
}

/// The memory store behind a gate: each call waits one scheduler step before it is made, so
/// that the scheduler orders the writes of all invocations.
#[derive(Clone)]
struct SimStore {
    inner: MemoryStore,
    clock: ManualClock,
    obs: Arc<Mutex<Obs>>,
    inv: usize,
}

/// Pending once: the step boundary.
struct Step(bool);

impl Future for Step {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

fn obs(o: &Mutex<Obs>) -> std::sync::MutexGuard<'_, Obs> {
    o.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Store for SimStore {
    async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        Step(false).await;
        let before = self.inner.get(&claim.key).await?;
        let outcome = self.inner.claim(claim).await?;
        let seen = ClaimSeen {
            before,
            now: self.clock.now(),
            claim_now: claim.now_ms,
            claimed: outcome == ClaimOutcome::Claimed,
            owner: claim.owner.clone(),
        };
        obs(&self.obs).claims.insert(self.inv, seen);
        Ok(outcome)
    }
    async fn complete(&self, k: &str, owner: &str, r: &str, now: i64) -> Result<bool, StoreError> {
        Step(false).await;
        self.inner.complete(k, owner, r, now).await
    }
    async fn release(&self, k: &str, owner: &str) -> Result<bool, StoreError> {
        Step(false).await;
        self.inner.release(k, owner).await
    }
    async fn fail(&self, k: &str, owner: &str, e: &str, now: i64) -> Result<bool, StoreError> {
        Step(false).await;
        self.inner.fail(k, owner, e, now).await
    }
    async fn get(&self, k: &str) -> Result<Option<Record>, StoreError> {
        self.inner.get(k).await
    }
}

/// A running handler, counted per key until it returns or its invocation dies.
struct Running {
    key: String,
    obs: Arc<Mutex<Obs>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(n) = obs(&self.obs).running.get_mut(&self.key) {
            *n -= 1;
        }
    }
}

/// The scheduler's hold on a handler: whether it started, and its result once decided.
#[derive(Default)]
struct Gate {
    started: AtomicBool,
    verdict: Mutex<Option<bool>>,
}

type Run = Pin<Box<dyn Future<Output = Result<Outcome<u32>, Error<&'static str>>>>>;

struct Invocation {
    id: usize,
    key: &'static str,
    payload: u8,
    deadline: i64,
    /// Not ended at its deadline: a process outside Lambda, or a write already on its way
    /// when the invocation ended. Its handler may outlive its lease, so it is left out of the
    /// count of handlers at once; its late writes must leave the next holder's record alone.
    zombie: bool,
    gate: Arc<Gate>,
    run: Run,
    /// Its last claim, as the store saw it.
    claim: Option<ClaimSeen>,
}

struct World {
    rng: Rng,
    clock: ManualClock,
    store: MemoryStore,
    obs: Arc<Mutex<Obs>>,
    on_failure: OnFailure,
    live: Vec<Invocation>,
    next_id: usize,
    /// The result of the run that completed each key, while its record lives.
    first: HashMap<&'static str, u32>,
    stats: HashMap<&'static str, u32>,
    trace: Vec<String>,
}

impl World {
    fn new(seed: u64) -> World {
        let mut rng = Rng(seed);
        let on_failure = if rng.percent(50) {
            OnFailure::Record
        } else {
            OnFailure::Release
        };
        World {
            rng,
            clock: ManualClock::at(T),
            store: MemoryStore::new(),
            obs: Arc::default(),
            on_failure,
            live: Vec::new(),
            next_id: 0,
            first: HashMap::new(),
            stats: HashMap::new(),
            trace: vec![format!("seed {seed}: on failure {on_failure:?}")],
        }
    }

    fn log(&mut self, line: String) {
        let now = self.clock.now() - T;
        self.trace.push(format!("t+{now}ms {line}"));
    }

    /// A new invocation of a key (a duplicate, a retry; now and then another payload).
    fn start(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let k = KEYS[self.rng.below(KEYS.len())];
        let payload = u8::from(self.rng.percent(10));
        let deadline = self.clock.now() + self.rng.range(1_000, 5_000);
        let zombie = self.rng.percent(15);
        let gate = Arc::new(Gate::default());
        let store = SimStore {
            inner: self.store.clone(),
            clock: self.clock.clone(),
            obs: Arc::clone(&self.obs),
            inv: id,
        };
        let c = self.clock.clone();
        let idem = Idempotency::new(store)
            .retention(Duration::from_secs(RETENTION_S as u64))
            .on_failure(self.on_failure)
            .clock(move || c.now());
        let (g, o) = (Arc::clone(&gate), Arc::clone(&self.obs));
        let value = u32::try_from(id).unwrap_or(u32::MAX);
        let run: Run = Box::pin(async move {
            let handler = || async move {
                g.started.store(true, Ordering::SeqCst);
                let _running = (!zombie).then(|| {
                    *obs(&o).running.entry(k.to_owned()).or_default() += 1;
                    Running {
                        key: k.to_owned(),
                        obs: Arc::clone(&o),
                    }
                });
                let ok = std::future::poll_fn(|_| match *g.verdict.lock().expect("gate") {
                    Some(ok) => Poll::Ready(ok),
                    None => Poll::Pending,
                })
                .await;
                if ok {
                    Ok(value)
                } else {
                    Err("boom")
                }
            };
            let deadline = Deadline::at_epoch_ms(deadline);
            idem.run(&key(k), &[payload], &deadline, handler).await
        });
        self.log(format!(
            "#{id} starts: key {k}, payload {payload}, deadline t+{}ms{}",
            deadline - T,
            if zombie { ", outlives it" } else { "" }
        ));
        self.live.push(Invocation {
            id,
            key: k,
            payload,
            deadline,
            zombie,
            gate,
            run,
            claim: None,
        });
    }

    /// One step of the invocation at `i`: its next store call, or its end.
    fn poll(&mut self, i: usize) -> Result<(), String> {
        let mut cx = Context::from_waker(Waker::noop());
        let id = self.live[i].id;
        let polled = self.live[i].run.as_mut().poll(&mut cx);
        let seen = obs(&self.obs).claims.remove(&id);
        if let Some(seen) = seen {
            let verdict = if seen.claimed { "claims" } else { "is refused" };
            self.log(format!("#{id} {verdict} (found {})", found(&seen)));
            judge_claim(self.live[i].payload, &seen).map_err(|e| format!("#{id}: {e}"))?;
            if seen.claimed
                && seen
                    .before
                    .as_ref()
                    .is_some_and(|r| !expired(r, seen.claim_now))
            {
                self.count("takeover");
            }
            self.live[i].claim = Some(seen);
        }
        let Poll::Ready(result) = polled else {
            return Ok(());
        };
        let inv = self.live.remove(i);
        self.log(format!("#{id} ends: {}", scenarios::outcome(&result)));
        self.check_end(&inv, &result)
            .map_err(|e| format!("#{id}: {e}"))
    }

    /// An invocation's result, against what its claim found.
    fn check_end(
        &mut self,
        inv: &Invocation,
        result: &Result<Outcome<u32>, Error<&'static str>>,
    ) -> Result<(), String> {
        let seen = inv.claim.as_ref().ok_or("ended without a claim")?;
        let before = seen.before.as_ref();
        let sha = payload_sha256(&[inv.payload]);
        match result {
            Ok(o) if !o.replayed => {
                let value = u32::try_from(inv.id).unwrap_or(u32::MAX);
                if o.value != value || !seen.claimed {
                    return Err(format!("ran without its claim, or returned {}", o.value));
                }
                let stored = self.store.get(inv.key).now().map_err(|e| e.to_string())?;
                let own = stored.as_ref().is_some_and(|r| {
                    r.status == Status::Completed && r.result == Some(value.to_string())
                });
                if !own {
                    // Only a call that outlived its lease, which another claim took, ends so
                    // (its result not stored); the record is the other's, untouched.
                    let taken = stored.is_none_or(|r| r.lease_owner != Some(seen.owner.clone()));
                    if !inv.zombie || !taken {
                        return Err("completed, but its result is not the one stored".into());
                    }
                    self.count("lease lost");
                    return Ok(());
                }
                if let Some(first) = self.first.insert(inv.key, value) {
                    return Err(format!(
                        "a second completed run of key {} (the first: #{first})",
                        inv.key
                    ));
                }
                self.count("completed");
            }
            Ok(o) => {
                let first = self.first.get(inv.key).copied();
                if first != Some(o.value) || before.is_none_or(|r| r.status != Status::Completed) {
                    return Err(format!(
                        "replayed {} but the first result is {first:?}",
                        o.value
                    ));
                }
                self.count("replayed");
            }
            Err(Error::InFlight { .. }) => {
                let held = before.is_some_and(|r| {
                    r.status == Status::Processing && r.payload_sha256 == sha && !seen.claimed
                });
                if !held {
                    return Err("in flight, but its claim found no live lease".into());
                }
                self.count("in flight");
            }
            Err(Error::PayloadMismatch { .. }) => {
                if seen.claimed || before.is_none_or(|r| r.payload_sha256 == sha) {
                    return Err("payload mismatch on its own payload".into());
                }
                self.count("payload mismatch");
            }
            Err(Error::Handler("boom")) => {
                let failed = *inv.gate.verdict.lock().expect("gate") == Some(false);
                if !failed || !seen.claimed {
                    return Err("a handler failure it did not have".into());
                }
                self.count("failed");
            }
            Err(e) => return Err(format!("unexpected error {e}")),
        }
        Ok(())
    }

    /// The promises that hold between any two steps.
    fn check(&mut self) -> Result<(), String> {
        if let Some((k, n)) = obs(&self.obs).running.iter().find(|(_, n)| **n > 1) {
            return Err(format!("{n} handlers of key {k} run at once"));
        }
        for k in KEYS {
            let Some(first) = self.first.get(k).copied() else {
                continue;
            };
            let stored = self.store.get(k).now().map_err(|e| e.to_string())?;
            match stored {
                Some(r) if r.status == Status::Completed => {
                    if r.result != Some(first.to_string()) {
                        return Err(format!("key {k}'s stored result changed: {:?}", r.result));
                    }
                }
                // Gone, or claimed again (which the claim's check allowed only once expired):
                // a new first run may complete. An expired record not yet replaced still
                // answers a claim whose clock reading is older than its expiry.
                _ => {
                    self.first.remove(k);
                }
            }
        }
        Ok(())
    }

    fn count(&mut self, what: &'static str) {
        *self.stats.entry(what).or_default() += 1;
    }

    /// The invocation at `i` dies, holding its key if its handler runs.
    fn kill(&mut self, i: usize, why: &str) {
        let inv = self.live.remove(i);
        let holding = inv.claim.as_ref().is_some_and(|c| c.claimed);
        if holding {
            self.count("died holding");
        }
        self.log(format!("#{} dies ({why}; holding: {holding})", inv.id));
    }

    /// The clock moves; every invocation whose deadline passed ends, as Lambda ends it.
    fn advance(&mut self) {
        let to_deadline = self.live.get(self.rng.below(self.live.len().max(1)));
        let to_deadline = to_deadline.map(|v| v.deadline - self.clock.now());
        let ms = match self.rng.below(10) {
            // To an invocation's deadline exactly, or one past: a lease's last millisecond.
            0 if to_deadline.is_some_and(|ms| ms >= 0) => {
                to_deadline.unwrap_or(0) + self.rng.range(0, 2)
            }
            0..=4 => self.rng.range(0, 1_500),
            5..=8 => self.rng.range(5_000, 70_000),
            _ => self.rng.range(100_000, 200_000),
        };
        self.clock.set(self.clock.now() + ms);
        self.log(format!("clock +{ms}ms"));
        let now = self.clock.now();
        while let Some(i) = self.live.iter().position(|v| v.deadline < now && !v.zombie) {
            self.kill(i, "timed out");
        }
    }

    fn step(&mut self) -> Result<(), String> {
        let deciding: Vec<usize> = (0..self.live.len())
            .filter(|&i| {
                let g = &self.live[i].gate;
                g.started.load(Ordering::SeqCst) && g.verdict.lock().expect("gate").is_none()
            })
            .collect();
        match self.rng.below(100) {
            0..=19 if self.live.len() < MAX_LIVE => self.start(),
            20..=34 if !deciding.is_empty() => {
                let i = deciding[self.rng.below(deciding.len())];
                let ok = self.rng.percent(70);
                *self.live[i].gate.verdict.lock().expect("gate") = Some(ok);
                let id = self.live[i].id;
                self.log(format!(
                    "#{id} handler {}",
                    if ok { "succeeds" } else { "fails" }
                ));
            }
            35..=46 => self.advance(),
            47..=49 if !self.live.is_empty() => {
                let i = self.rng.below(self.live.len());
                self.kill(i, "crashed");
            }
            _ if !self.live.is_empty() => {
                let i = self.rng.below(self.live.len());
                self.poll(i)?;
            }
            _ => self.start(),
        }
        self.check()
    }
}

/// What a claim found, for the trace.
fn found(seen: &ClaimSeen) -> String {
    match &seen.before {
        None => "absent".into(),
        Some(r) if expired(r, seen.claim_now) => "expired".into(),
        Some(r) => {
            let status = r.status;
            match r.lease_until {
                Some(until) => format!("{status}, its lease ending in {}ms", until - seen.now),
                None => status.to_string(),
            }
        }
    }
}

/// Expired: its TTL second (`expires_at`, epoch seconds) is over; written here apart from
/// the library's own predicate, which it checks.
fn expired(r: &Record, now_ms: i64) -> bool {
    r.expires_at < now_ms.div_euclid(1000)
}

/// A claim against the rules: it takes the key absent or expired, or this payload's record
/// abandoned (its lease ran out) or failed, and nothing else; a live lease is never overtaken.
fn judge_claim(payload: u8, seen: &ClaimSeen) -> Result<(), String> {
    let sha = payload_sha256(&[payload]);
    let live = seen.before.as_ref().filter(|r| !expired(r, seen.claim_now));
    let may = match live {
        None => true,
        Some(r) if r.payload_sha256 != sha => false,
        Some(r) => match r.status {
            Status::Completed => false,
            Status::Failed => true,
            _ => r.lease_until.is_some_and(|u| u < seen.claim_now),
        },
    };
    if seen.claimed != may {
        return Err(format!(
            "claimed: {}, but the rules say {may} (found {:?})",
            seen.claimed, seen.before
        ));
    }
    let leased = seen.before.as_ref().is_some_and(|r| {
        r.status == Status::Processing
            && !expired(r, seen.now)
            && r.lease_until.is_some_and(|u| u >= seen.now)
    });
    if seen.claimed && leased {
        return Err("a live lease overtaken".into());
    }
    Ok(())
}

/// A memory store future is ready at once.
trait Now: Future + Sized {
    fn now(self) -> Self::Output {
        let mut cx = Context::from_waker(Waker::noop());
        match std::pin::pin!(self).poll(&mut cx) {
            Poll::Ready(out) => out,
            Poll::Pending => unreachable!("the memory store never waits"),
        }
    }
}

impl<F: Future> Now for F {}

/// One seed's run: the world after it, and the first broken promise if any.
fn simulate(seed: u64) -> (World, Result<(), String>) {
    let mut world = World::new(seed);
    let verdict = (0..STEPS).try_for_each(|_| world.step());
    (world, verdict)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

#[test]
fn concurrent_calls_keep_every_promise_under_a_seeded_scheduler() {
    let seeds: Vec<u64> = match env_u64("SIM_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_u64("SIM_SEEDS").unwrap_or(DEFAULT_SEEDS)).collect(),
    };
    let mut stats: HashMap<&'static str, u32> = HashMap::new();
    for &seed in &seeds {
        let (world, verdict) = simulate(seed);
        if let Err(e) = verdict {
            let tail = world.trace.len().saturating_sub(60);
            panic!(
                "seed {seed} broke a promise: {e}\n(SIM_SEED={seed} replays it)\n{}",
                world.trace[tail..].join("\n")
            );
        }
        if seeds.len() == 1 {
            println!("{}", world.trace.join("\n"));
        }
        for (k, n) in world.stats {
            *stats.entry(k).or_default() += n;
        }
    }
    println!("{} seeds: {stats:?}", seeds.len());
    // The seeds reach every case the promises are about; a scheduler that stopped reaching
    // one would leave its promise unchecked.
    if seeds.len() >= 50 {
        for case in [
            "completed",
            "replayed",
            "in flight",
            "payload mismatch",
            "failed",
            "died holding",
            "takeover",
            "lease lost",
        ] {
            assert!(
                stats.get(case).copied().unwrap_or(0) > 0,
                "no seed reached {case}"
            );
        }
    }
}
