//! Bugs reported against AWS Lambda Powertools' idempotency utilities, each written as a
//! test of this crate that passes (on the memory store; the workspace's `e2e` test
//! `idempotency_library` runs the same scenarios on DynamoDB and counts the real calls).
#![cfg(feature = "memory")]

mod scenarios;

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lambda_idempotency::machine::{Claim, ClaimOutcome, Record};
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::{Deadline, Error, Idempotency, OnFailure, Status, Store, StoreError};
use scenarios::{idem, key, ManualClock, T};

/// TypeScript #5675: a call must never delete a lock it does not hold. Call A runs past its
/// lease (its deadline); call B claims the key and completes; then A fails: its release is
/// refused and B's result stays.
#[tokio::test]
async fn ts_5675_a_late_failure_does_not_delete_another_calls_record() {
    late_failure().await;
}

async fn late_failure() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(T);
    let idem = idem(&store, &clock);
    let r = idem
        .run(
            &key("k"),
            b"p",
            &Deadline::at_epoch_ms(T + 1_000),
            || async {
                clock.set(T + 2_000);
                let b = idem
                    .run(
                        &key("k"),
                        b"p",
                        &Deadline::at_epoch_ms(T + 9_000),
                        || async { Ok::<_, String>(2) },
                    )
                    .await;
                assert_eq!(b.ok().map(|o| (o.value, o.replayed)), Some((2, false)));
                Err::<u32, _>("A failed late".to_owned())
            },
        )
        .await;
    assert!(matches!(r, Err(Error::Handler(_))));
    let rec = store
        .get("k")
        .await
        .expect("get")
        .expect("B's record stays");
    assert_eq!(
        (rec.status, rec.result.as_deref()),
        (Status::Completed, Some("2"))
    );
    assert_eq!(
        scenarios::lock_not_held_is_left_alone(&MemoryStore::new())
            .await
            .len(),
        6
    );
}

/// Java #2260: payload validation skipped on one path. Every path refuses another payload:
/// completed, in flight, failed, abandoned (scenario), and a warm replay from the in-process
/// cache.
#[tokio::test]
async fn java_2260_another_payload_is_refused_on_every_path() {
    scenarios::changed_payload(&MemoryStore::new()).await;
    let clock = ManualClock::at(T);
    let idem = idem(&MemoryStore::new(), &clock).cache_bytes(10_000);
    let ok = || async { Ok::<_, String>(1) };
    idem.run(&key("c"), b"one", &Deadline::none(), ok)
        .await
        .expect("first");
    let cached = idem.result_cache().map(|c| c.len());
    assert_eq!(cached, Some(1), "the result is cached");
    let r = idem.run(&key("c"), b"two", &Deadline::none(), ok).await;
    assert!(matches!(r, Err(Error::PayloadMismatch { .. })));
}

/// Python #53: a record left in progress by an invocation that timed out blocked its key.
/// Here the lease runs to the invocation's deadline: the call is cut off (its future
/// dropped, as a Lambda timeout would), and once the deadline passed the retry runs.
#[tokio::test]
async fn python_53_a_timed_out_call_does_not_leave_its_key_stuck() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(T);
    let idem = idem(&store, &clock);
    let cut = tokio::time::timeout(
        Duration::from_millis(20),
        idem.run(
            &key("t"),
            b"p",
            &Deadline::at_epoch_ms(T + 3_000),
            || async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, String>(0)
            },
        ),
    )
    .await;
    let _elapsed: tokio::time::error::Elapsed = cut.expect_err("the call was cut off");
    let rec = store
        .get("t")
        .await
        .expect("get")
        .expect("left in progress");
    assert_eq!(
        (rec.status, rec.lease_until),
        (Status::Processing, Some(T + 3_000))
    );
    clock.set(T + 3_001);
    let retry = idem
        .run(&key("t"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(1)
        })
        .await
        .expect("the retry runs");
    assert_eq!((retry.value, retry.replayed), (1, false));
    scenarios::timeout_then_retry(&MemoryStore::new()).await;
}

/// A writer the log lines go to.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lines").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// #5620: log lines about a key did not say which key. Every line this crate logs, on every
/// path (claimed, replayed, in flight, mismatch, failure released or recorded, taken over,
/// a lease lost), names its key.
#[test]
fn powertools_5620_every_log_line_names_its_key() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // Global, not per thread: a callsite first reached by a test on another thread, before a
    // thread-local subscriber was set, keeps its cached "never" and would drop this test's
    // DEBUG lines at random. The other tests' lines, if caught, name their keys too.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber here");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = MemoryStore::new();
        scenarios::duplicate_after_completion(&store).await;
        scenarios::duplicate_while_in_flight(&store).await;
        scenarios::failure_then_retry(&store).await;
        scenarios::failure_recorded_then_retry(&store).await;
        scenarios::timeout_then_retry(&store).await;
        scenarios::changed_payload(&store).await;
        late_failure().await;
    });
    let text = String::from_utf8(lines.0.lock().expect("lines").clone()).expect("utf-8");
    let ours: Vec<&str> = text.lines().filter(|l| l.contains("idempotency")).collect();
    assert!(ours.len() >= 15, "{} lines:\n{text}", ours.len());
    for line in ours {
        assert!(line.contains("key="), "a line without its key: {line}");
    }
}

/// A store that counts its calls.
#[derive(Clone, Default)]
struct Counting {
    inner: MemoryStore,
    calls: Arc<Mutex<Vec<&'static str>>>,
}

impl Counting {
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.calls.lock().expect("calls"))
    }
    fn note(&self, call: &'static str) {
        self.calls.lock().expect("calls").push(call);
    }
}

impl Store for Counting {
    async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
        self.note("claim");
        self.inner.claim(claim).await
    }
    async fn complete(&self, k: &str, o: &str, r: &str, now: i64) -> Result<bool, StoreError> {
        self.note("complete");
        self.inner.complete(k, o, r, now).await
    }
    async fn release(&self, k: &str, o: &str) -> Result<bool, StoreError> {
        self.note("release");
        self.inner.release(k, o).await
    }
    async fn fail(&self, k: &str, o: &str, e: &str, now: i64) -> Result<bool, StoreError> {
        self.note("fail");
        self.inner.fail(k, o, e, now).await
    }
    async fn get(&self, k: &str) -> Result<Option<Record>, StoreError> {
        self.note("get");
        self.inner.get(k).await
    }
}

/// #3327 / #1573: two store calls where one suffices. A first call is a claim and a
/// completion; a duplicate one claim (its refusal carries the record); a warm duplicate with
/// the cache none at all; no read on any path. (On DynamoDB: `one_dynamodb_call_per_claim_and_per_duplicate`.)
#[tokio::test]
async fn powertools_3327_one_store_call_per_claim_and_per_duplicate() {
    let store = Counting::default();
    let runs = AtomicU32::new(0);
    let f = || async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(1)
    };
    let idem = Idempotency::new(store.clone());
    idem.run(&key("k"), b"p", &Deadline::none(), f)
        .await
        .expect("first");
    assert_eq!(store.take(), ["claim", "complete"]);
    idem.run(&key("k"), b"p", &Deadline::none(), f)
        .await
        .expect("duplicate");
    assert_eq!(store.take(), ["claim"]);
    let r = idem.run(&key("k"), b"q", &Deadline::none(), f).await;
    assert!(matches!(r, Err(Error::PayloadMismatch { .. })));
    assert_eq!(store.take(), ["claim"]);
    let failing = Idempotency::new(store.clone()).on_failure(OnFailure::Record);
    let _ = failing
        .run(&key("f"), b"p", &Deadline::none(), || async {
            Err::<u32, _>("x")
        })
        .await;
    assert_eq!(store.take(), ["claim", "fail"]);
    failing
        .run(&key("f"), b"p", &Deadline::none(), f)
        .await
        .expect("retry");
    // The retry after a recorded failure: its one claim takes the FAILED record over.
    assert_eq!(store.take(), ["claim", "complete"]);
    let warm = Idempotency::new(store.clone()).cache_bytes(1 << 20);
    warm.run(&key("w"), b"p", &Deadline::none(), f)
        .await
        .expect("first");
    store.take();
    let again = warm
        .run(&key("w"), b"p", &Deadline::none(), f)
        .await
        .expect("warm");
    assert!(again.replayed);
    assert!(store.take().is_empty(), "a warm duplicate calls no store");
    // A result first replayed from the store is cached too.
    let other_instance = Idempotency::new(store.clone()).cache_bytes(1 << 20);
    other_instance
        .run(&key("k"), b"p", &Deadline::none(), f)
        .await
        .expect("replay");
    assert_eq!(store.take(), ["claim"]);
    other_instance
        .run(&key("k"), b"p", &Deadline::none(), f)
        .await
        .expect("replay");
    assert!(store.take().is_empty(), "then answered from the cache");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}
