//! The transition scenarios (`scenarios/`) on the memory store. The workspace's `e2e` test
//! `idempotency_library` runs the same scenarios on DynamoDB (moto and dynalite) and requires
//! the same traces.
#![cfg(feature = "memory")]

mod scenarios;

use lambda_idempotency::memory::MemoryStore;

macro_rules! on_memory {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let trace = scenarios::$name(&MemoryStore::new()).await;
            assert!(trace.len() > 1, "{trace:?}");
        }
    )*};
}

on_memory!(
    first_call,
    duplicate_after_completion,
    duplicate_while_in_flight,
    failure_then_retry,
    failure_recorded_then_retry,
    timeout_then_retry,
    changed_payload,
    expired_counts_as_absent,
    lock_not_held_is_left_alone,
);

/// The edges of the call and its configuration, each at its boundary (the mutants of
/// `make mutants-idempotency` that the scenarios alone left alive).
mod edges {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use lambda_idempotency::machine::{Claim, ClaimOutcome, Record};
    use lambda_idempotency::memory::MemoryStore;
    use lambda_idempotency::{
        idempotent, payload_sha256, system_now_ms, Deadline, Error, Idempotency, Key, KeyError,
        OnFailure, Status, Store, StoreError, MAX_KEY_BYTES,
    };

    use super::scenarios::{hand_claim, idem, key, ManualClock, RETENTION_S, T};

    async fn record(store: &MemoryStore, k: &str) -> Record {
        store.get(k).await.expect("get").expect("a record")
    }

    /// The stored names of the statuses, as DynamoDB holds them and the logs print them.
    #[test]
    fn statuses_print_as_stored() {
        for (status, name) in [
            (Status::Processing, "PROCESSING"),
            (Status::Completed, "COMPLETED"),
            (Status::Failed, "FAILED"),
        ] {
            assert_eq!(
                (status.as_str(), status.to_string()),
                (name, name.to_owned())
            );
            assert_eq!(Status::parse(name), Some(status));
        }
        assert_eq!(Status::parse("processing"), None);
        let idem = Idempotency::new(MemoryStore::new());
        assert!(format!("{idem:?}").contains("clock: Clock"), "{idem:?}");
    }

    /// `MemoryStore::put` writes a record as it is (the tests' way to set up a state).
    #[tokio::test]
    async fn the_memory_store_puts_a_record_as_it_is() {
        let store = MemoryStore::new();
        let mut r = hand_claim("set", "x", T, 1_000, b"p").record(3, T - 1);
        r.status = Status::Failed;
        store.put(r.clone());
        assert_eq!(store.get("set").await, Ok(Some(r.clone())));
        assert_eq!(store.records(), [r]);
    }

    #[test]
    fn a_deadline_is_a_positive_epoch_time() {
        assert_eq!(Deadline::at_epoch_ms(0).epoch_ms(), None);
        assert_eq!(Deadline::at_epoch_ms(-5).epoch_ms(), None);
        assert_eq!(Deadline::at_epoch_ms(1).epoch_ms(), Some(1));
        assert_eq!(Deadline::none().epoch_ms(), None);
    }

    /// A lease runs to the deadline where it lies ahead, else the fallback from now; the
    /// lease owner starts with the request id where there is one, and is unique per call.
    #[tokio::test]
    async fn the_lease_follows_the_deadline_and_names_its_request() {
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        let idem = idem(&store, &clock).fallback_lease(Duration::from_secs(7));
        let hold = |k: &'static str, deadline: Deadline| {
            let store = store.clone();
            let idem = idem.clone();
            async move {
                idem.run(&key(k), b"p", &deadline, || async {
                    let held = record(&store, k).await;
                    Ok::<_, String>((held.lease_until, held.lease_owner))
                })
                .await
                .expect("ran")
                .value
            }
        };
        let ahead = hold(
            "ahead",
            Deadline::at_epoch_ms(T + 1).with_request_id("req-1"),
        )
        .await;
        assert_eq!(ahead.0, Some(T + 1));
        let owner = ahead.1.expect("an owner");
        assert!(owner.starts_with("req-1:"), "{owner}");
        // A deadline now or past: the fallback lease.
        let now = hold("now", Deadline::at_epoch_ms(T).with_request_id("")).await;
        assert_eq!(now.0, Some(T + 7_000));
        let other = now.1.expect("an owner");
        assert!(other.starts_with("call:"), "no request id: {other}");
        let none = hold("none", Deadline::none()).await;
        assert_ne!(none.1, Some(other), "one owner per call");
        // A fallback too long for i64 milliseconds stays far ahead.
        let idem = super::scenarios::idem(&store, &clock).fallback_lease(Duration::MAX);
        let r = idem
            .run(&key("long"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(record(&store, "long").await.lease_until)
            })
            .await
            .expect("ran");
        assert_eq!(r.value, Some(T + i64::MAX / 4));
    }

    #[cfg(feature = "lambda")]
    #[test]
    fn the_lambda_context_is_the_deadline() {
        let mut context = lambda_runtime::Context::default();
        context.deadline = 1_700_000_123_456;
        context.request_id = "8f5c".into();
        let deadline = Deadline::from(&context);
        assert_eq!(deadline.epoch_ms(), Some(1_700_000_123_456));
        assert_eq!(
            deadline,
            Deadline::at_epoch_ms(1_700_000_123_456).with_request_id("8f5c")
        );
        assert_ne!(deadline, Deadline::at_epoch_ms(1_700_000_123_456));
    }

    /// A live lease is in flight up to its last millisecond and taken over after it; the
    /// duplicate is told to retry once it runs out, in whole seconds (at least one).
    #[tokio::test]
    async fn a_lease_holds_to_its_last_millisecond() {
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        let idem = idem(&store, &clock);
        let dead = hand_claim("edge", "dead", T, 2_500, b"p");
        assert_eq!(store.claim(&dead).await, Ok(ClaimOutcome::Claimed));
        let r = idem
            .run(&key("edge"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(1)
            })
            .await;
        assert!(
            matches!(r, Err(Error::InFlight { retry_after, .. }) if retry_after == Duration::from_secs(3)),
            "{r:?}"
        );
        clock.set(T + 2_500);
        let r = idem
            .run(&key("edge"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(1)
            })
            .await;
        assert!(
            matches!(r, Err(Error::InFlight { retry_after, .. }) if retry_after == Duration::from_secs(1)),
            "{r:?}"
        );
        let held = record(&store, "edge").await;
        assert!(!held.lease_ran_out(T + 2_500));
        assert!(held.lease_ran_out(T + 2_501));
        clock.set(T + 2_501);
        let r = idem
            .run(&key("edge"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(1)
            })
            .await;
        assert_eq!(r.map(|o| (o.value, o.replayed)).ok(), Some((1, false)));
        assert!(!record(&store, "edge").await.lease_ran_out(i64::MAX));
    }

    /// A record lives to the end of its `expires_at` second and is absent after it.
    #[tokio::test]
    async fn a_record_expires_after_its_last_second() {
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        let idem = idem(&store, &clock);
        let run = |v: u32| {
            let idem = idem.clone();
            async move {
                let f = move || async move { Ok::<_, String>(v) };
                idem.run(&key("exp"), b"p", &Deadline::none(), f).await
            }
        };
        run(1).await.expect("first");
        let last = (T / 1000 + RETENTION_S) * 1000 + 999;
        assert!(!record(&store, "exp").await.is_expired(last));
        clock.set(last);
        assert_eq!(
            run(2).await.map(|o| (o.value, o.replayed)).ok(),
            Some((1, true))
        );
        assert!(record(&store, "exp").await.is_expired(last + 1));
        clock.set(last + 1);
        assert_eq!(
            run(3).await.map(|o| (o.value, o.replayed)).ok(),
            Some((3, false))
        );
        // A retention of less than a second is one second; one too long for i64 saturates.
        let short = super::scenarios::idem(&store, &clock).retention(Duration::ZERO);
        short
            .run(&key("short"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(0)
            })
            .await
            .expect("ran");
        assert_eq!(
            record(&store, "short").await.expires_at,
            (last + 1) / 1000 + 1
        );
        let long = super::scenarios::idem(&store, &clock).retention(Duration::MAX);
        long.run(&key("long"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(0)
        })
        .await
        .expect("ran");
        assert_eq!(
            record(&store, "long").await.expires_at,
            (last + 1) / 1000 + i64::MAX / 4
        );
    }

    /// By default a key is remembered one day.
    #[tokio::test]
    async fn the_default_retention_is_one_day() {
        let store = MemoryStore::new();
        let idem = Idempotency::new(store.clone()).clock(|| T);
        idem.run(&key("day"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(1)
        })
        .await
        .expect("ran");
        assert_eq!(record(&store, "day").await.expires_at, T / 1000 + 86_400);
    }

    /// The default clock is the system's: a record's times are now.
    #[tokio::test]
    async fn the_default_clock_is_the_system_clock() {
        let store = MemoryStore::new();
        let before = system_now_ms();
        assert!(before > T, "{before}");
        let out = idempotent(&store, &key("now"), b"p", &Deadline::none(), || async {
            Ok::<_, String>("done".to_owned())
        })
        .await
        .expect("ran");
        assert_eq!((out.value.as_str(), out.replayed), ("done", false));
        let after = system_now_ms();
        let r = record(&store, "now").await;
        assert!((before..=after).contains(&r.received_at), "{r:?}");
        assert!(
            (before..=after).contains(&r.completed_at.unwrap_or(0)),
            "{r:?}"
        );
        let again = idempotent(&store, &key("now"), b"p", &Deadline::none(), || async {
            Ok::<_, String>("twice".to_owned())
        })
        .await
        .expect("replayed");
        assert_eq!((again.value.as_str(), again.replayed), ("done", true));
    }

    /// A result that cannot be stored as JSON: the claim is given up (the next call runs),
    /// and the error says which key. One stored that this call cannot read: a Result error.
    #[tokio::test]
    async fn a_result_json_cannot_hold_gives_the_claim_up() {
        struct Unserialisable;
        impl serde::Serialize for Unserialisable {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("not JSON"))
            }
        }
        impl<'de> serde::Deserialize<'de> for Unserialisable {
            fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
                Err(serde::de::Error::custom("not JSON"))
            }
        }
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        let idem = idem(&store, &clock).on_failure(OnFailure::Record);
        let r = idem
            .run(&key("json"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(Unserialisable)
            })
            .await;
        assert!(matches!(&r, Err(Error::Result { key, .. }) if key == "json"));
        let failed = record(&store, "json").await;
        assert_eq!(failed.status, Status::Failed);
        assert!(
            failed
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("not JSON")),
            "{failed:?}"
        );
        idem.run(&key("stored"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(1)
        })
        .await
        .expect("ran");
        let r = idem
            .run(&key("stored"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(Unserialisable)
            })
            .await;
        assert!(matches!(&r, Err(Error::Result { key, .. }) if key == "stored"));
    }

    /// A store whose refusals do not carry the record (a server without `ALL_OLD`): each
    /// refusal is followed by a read, which may find the record gone or abandoned since.
    #[derive(Clone)]
    struct Stale {
        inner: MemoryStore,
        /// What each refused claim reports, in turn, before the real store is asked.
        stale: Arc<Mutex<Vec<Record>>>,
        claims: Arc<AtomicU32>,
    }

    impl Store for Stale {
        async fn claim(&self, claim: &Claim) -> Result<ClaimOutcome, StoreError> {
            self.claims.fetch_add(1, Ordering::SeqCst);
            let stale = self.stale.lock().expect("stale").pop();
            match stale {
                Some(r) => Ok(ClaimOutcome::Exists(Box::new(r))),
                None => self.inner.claim(claim).await,
            }
        }
        async fn complete(&self, k: &str, o: &str, r: &str, now: i64) -> Result<bool, StoreError> {
            self.inner.complete(k, o, r, now).await
        }
        async fn release(&self, k: &str, o: &str) -> Result<bool, StoreError> {
            self.inner.release(k, o).await
        }
        async fn fail(&self, k: &str, o: &str, e: &str, now: i64) -> Result<bool, StoreError> {
            self.inner.fail(k, o, e, now).await
        }
        async fn get(&self, k: &str) -> Result<Option<Record>, StoreError> {
            self.inner.get(k).await
        }
    }

    #[tokio::test]
    async fn a_refusal_read_back_stale_is_claimed_again_three_times_at_most() {
        let gone = lambda_idempotency::machine::gone("k", T);
        let abandoned = hand_claim("k", "dead", T - 5_000, 1_000, b"p").record(1, T - 5_000);
        let stale = Stale {
            inner: MemoryStore::new(),
            stale: Arc::new(Mutex::new(vec![abandoned.clone(), gone.clone()])),
            claims: Arc::new(AtomicU32::new(0)),
        };
        let clock = ManualClock::at(T);
        let idem = idem(&stale, &clock);
        let r = idem
            .run(&key("k"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(9)
            })
            .await;
        assert_eq!(r.map(|o| (o.value, o.replayed)).ok(), Some((9, false)));
        assert_eq!(
            stale.claims.load(Ordering::SeqCst),
            3,
            "gone, abandoned, then claimed"
        );
        // Changing hands on every read: given up after three more claims, retry in a second.
        *stale.stale.lock().expect("stale") = vec![gone.clone(); 5];
        stale.claims.store(0, Ordering::SeqCst);
        let r = idem
            .run(&key("j"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(9)
            })
            .await;
        assert!(
            matches!(&r, Err(Error::InFlight { key, retry_after }) if key == "j" && *retry_after == Duration::from_secs(1)),
            "{r:?}"
        );
        assert_eq!(stale.claims.load(Ordering::SeqCst), 4);
        // After one stale read, the record now found is a live lease: in flight.
        let live = hand_claim("l", "other", T, 4_000, b"p");
        assert_eq!(stale.inner.claim(&live).await, Ok(ClaimOutcome::Claimed));
        *stale.stale.lock().expect("stale") = vec![gone];
        let r = idem
            .run(&key("l"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(9)
            })
            .await;
        assert!(
            matches!(&r, Err(Error::InFlight { retry_after, .. }) if *retry_after == Duration::from_secs(4)),
            "{r:?}"
        );
    }

    /// A store that does not answer: the error says so; a failure whose give-up cannot be
    /// written still returns the function's error.
    #[tokio::test]
    async fn a_store_that_does_not_answer_is_a_store_error() {
        #[derive(Clone)]
        struct Down;
        impl Store for Down {
            async fn claim(&self, _: &Claim) -> Result<ClaimOutcome, StoreError> {
                Err(StoreError::Unavailable("down".into()))
            }
            async fn complete(
                &self,
                _: &str,
                _: &str,
                _: &str,
                _: i64,
            ) -> Result<bool, StoreError> {
                Err(StoreError::Unavailable("down".into()))
            }
            async fn release(&self, _: &str, _: &str) -> Result<bool, StoreError> {
                Err(StoreError::Unavailable("down".into()))
            }
            async fn fail(&self, _: &str, _: &str, _: &str, _: i64) -> Result<bool, StoreError> {
                Err(StoreError::Unavailable("down".into()))
            }
            async fn get(&self, _: &str) -> Result<Option<Record>, StoreError> {
                Err(StoreError::Unavailable("down".into()))
            }
        }
        let r = Idempotency::new(Down)
            .run(&key("k"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(1)
            })
            .await;
        assert!(
            matches!(&r, Err(Error::Store(StoreError::Unavailable(m))) if m == "down"),
            "{r:?}"
        );
    }

    /// Keys: up to MAX_KEY_BYTES, a number at a JSON pointer taken as text, a prefix that
    /// namespaces the stored key, and the payload's fingerprint its SHA-256.
    #[tokio::test]
    async fn keys_and_fingerprints() {
        let longest = "x".repeat(MAX_KEY_BYTES);
        assert_eq!(
            Key::new(longest.clone()).map(|k| k.as_str().len()),
            Ok(MAX_KEY_BYTES)
        );
        assert_eq!(
            Key::try_from("a b").map(|k| k.to_string()),
            Ok("a b".to_owned())
        );
        assert_eq!(Key::try_from(String::from("\t")), Err(KeyError::Empty));
        assert_eq!(Key::try_from("a\u{7}"), Err(KeyError::ControlCharacter));
        assert_eq!(
            Key::from_json_pointer(br#"{"n":7}"#, "/n").map(|k| k.to_string()),
            Ok("7".to_owned())
        );
        assert_eq!(
            Key::from_json_pointer(br#"{"n":true}"#, "/n"),
            Err(KeyError::Missing("/n".to_owned()))
        );
        assert_eq!(key("k").prefixed(""), "k");
        assert_eq!(
            payload_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        let idem = idem(&store, &clock).prefix("orders");
        idem.run(&key("k"), b"p", &Deadline::none(), || async {
            Ok::<_, String>(1)
        })
        .await
        .expect("ran");
        let keys: Vec<String> = store.records().into_iter().map(|r| r.key).collect();
        assert_eq!(keys, ["orders:k"]);
        assert!(idem.store().get("orders:k").await.expect("get").is_some());
    }

    /// The in-process cache: bounded in bytes (key, hash and result), an exact fit kept, the
    /// oldest evicted first, a key stored again counted once.
    #[tokio::test]
    async fn the_cache_counts_its_bytes_exactly() {
        let store = MemoryStore::new();
        let clock = ManualClock::at(T);
        // "k" + 64 hex + "1": 66 bytes an entry.
        let idem = idem(&store, &clock).cache_bytes(132);
        let cache = idem.result_cache().expect("a cache").clone();
        assert!(cache.is_empty());
        let run = |k: &'static str| {
            let idem = idem.clone();
            async move {
                let f = || async { Ok::<_, String>(1) };
                idem.run(&key(k), b"p", &Deadline::none(), f).await
            }
        };
        run("a").await.expect("a");
        assert_eq!((cache.len(), cache.bytes()), (1, 66));
        assert!(!cache.is_empty());
        run("b").await.expect("b");
        assert_eq!(
            (cache.len(), cache.bytes()),
            (2, 132),
            "an exact fit is kept whole"
        );
        run("c").await.expect("c");
        assert_eq!((cache.len(), cache.bytes()), (2, 132), "a went");
        // b is answered from the cache: no store call would be needed, and a's record is
        // still in the store (the cache forgets, the store does not).
        assert_eq!(store.records().len(), 3);
        // b expires; its key claimed and completed again replaces its entry, counted once.
        clock.set((T / 1000 + RETENTION_S + 1) * 1000);
        run("b").await.expect("b again");
        assert_eq!((cache.len(), cache.bytes()), (2, 132));
        run("d").await.expect("d");
        run("e").await.expect("e");
        assert_eq!(
            (cache.len(), cache.bytes()),
            (2, 132),
            "bounded after a replacement"
        );
        // Which keys the cache holds: their stored result changed behind it, a cached key
        // still answers the first result: the newest two (with the length above, c is out).
        let cached = |k: &'static str| {
            let store = store.clone();
            let run = &run;
            async move {
                let mut r = record(&store, k).await;
                r.result = Some("5".to_owned());
                store.put(r);
                run(k).await.expect("replayed").value == 1
            }
        };
        assert!(
            cached("d").await && cached("e").await,
            "c went before d and e"
        );
        // One entry exactly the whole cache is kept; one byte bigger is not.
        let exact = super::scenarios::idem(&store, &clock).cache_bytes(66);
        exact
            .run(&key("y"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(1)
            })
            .await
            .expect("y");
        let held = exact.result_cache().map(|c| (c.len(), c.bytes()));
        assert_eq!(held, Some((1, 66)));
        // One entry alone bigger than the whole cache is not kept.
        let small = super::scenarios::idem(&store, &clock).cache_bytes(65);
        small
            .run(&key("z"), b"p", &Deadline::none(), || async {
                Ok::<_, String>(1)
            })
            .await
            .expect("z");
        assert_eq!(small.result_cache().map(|c| c.len()), Some(0));
    }
}
