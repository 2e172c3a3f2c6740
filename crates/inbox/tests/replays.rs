//! A replay through the consumer on the in-memory ledger (the same rules as
//! tests/large_and_replay.rs on moto, here without it so that `make mutants` sees them): a
//! replay that fails gives its completed key back as COMPLETED, and a late copy of the original
//! then runs nothing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use aws_lambda_events::sqs::SqsMessage;
use inbox::key::sha256_hex;
use inbox::ledger::Status;
use inbox::{
    Clock, Consumer, ConsumerSettings, Envelope, Job, LedgerStore, MemoryLedger, Metrics,
    ProcessError, Processor, SourceSpecs, SystemClock,
};

/// Counts its runs; fails while `failing` is set.
#[derive(Clone, Default)]
struct Effect {
    runs: Arc<AtomicUsize>,
    failing: Arc<AtomicBool>,
}

impl Processor for Effect {
    async fn process(&self, _job: &Job) -> Result<(), ProcessError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            Err(ProcessError("the system of record is down".into()))
        } else {
            Ok(())
        }
    }
}

fn message(id: &str, envelope: &Envelope) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(envelope.to_json());
    m
}

#[tokio::test]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom: unrecorded, failed, retried"
)]
async fn a_failed_replay_gives_the_key_back_completed_and_a_late_original_runs_nothing() {
    let specs = SourceSpecs::parse(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "json", "pointers": ["/id"]}}}"#,
    )
    .expect("sources");
    let ledger = Arc::new(MemoryLedger::new());
    let effect = Effect::default();
    let (metrics, _) = Metrics::memory("consumer");
    let consumer = Consumer::new(
        specs,
        ledger.clone(),
        effect.clone(),
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    );
    let body = br#"{"id": "o-1"}"#;
    let now = SystemClock.now_ms();
    let original = Envelope::new(
        "shop:o-1",
        "shop",
        now,
        &sha256_hex(body),
        BTreeMap::new(),
        body,
    );
    let run = |m: SqsMessage| {
        let consumer = &consumer;
        async move {
            consumer
                .handle_batch(
                    std::slice::from_ref(&m),
                    "t",
                    Some(SystemClock.now_ms() + 30_000),
                )
                .await
                .batch_item_failures
                .len()
        }
    };
    ledger
        .claim(&original.accepted_claim(now, 1))
        .await
        .expect("accepted");
    assert_eq!(run(message("m-1", &original)).await, 0);
    let completed_at = ledger
        .get("shop:o-1")
        .await
        .unwrap()
        .expect("item")
        .completed_at;
    assert!(completed_at.is_some());

    // The replay fails: reported failed, the key COMPLETED again with its failure counted.
    let mut replay = original.clone();
    replay.replay_id = Some("rp-1".into());
    let unrecorded = run(message("m-0", &replay)).await;
    assert_eq!(
        unrecorded, 1,
        "refused (no dead-letter queue here: reported failed)"
    );
    assert_eq!(effect.runs.load(Ordering::SeqCst), 1, "nothing ran for it");
    assert_eq!(
        ledger
            .get("shop:o-1")
            .await
            .unwrap()
            .expect("item")
            .last_error
            .as_deref(),
        Some("refused: this replay id was not recorded on the key's item by inbox-ops replay")
    );
    assert!(ledger
        .request_replay("shop:o-1", &original.payload_sha256, "rp-1", now)
        .await
        .expect("recorded"));
    effect.failing.store(true, Ordering::SeqCst);
    assert_eq!(run(message("m-2", &replay)).await, 1);
    let item = ledger.get("shop:o-1").await.unwrap().expect("item");
    assert_eq!(item.status, Status::Completed);
    assert_eq!(item.completed_at, completed_at);
    assert_eq!(item.failures, 1);
    assert_eq!(
        item.last_error.as_deref(),
        Some("the system of record is down")
    );
    assert_eq!(item.lease_owner, None);

    // A late copy of the original runs nothing; the replay's retry runs once.
    effect.failing.store(false, Ordering::SeqCst);
    assert_eq!(run(message("m-3", &original)).await, 0);
    assert_eq!(
        effect.runs.load(Ordering::SeqCst),
        2,
        "the original and the failed replay"
    );
    assert_eq!(run(message("m-2", &replay)).await, 0);
    assert_eq!(effect.runs.load(Ordering::SeqCst), 3);
    let item = ledger.get("shop:o-1").await.unwrap().expect("item");
    assert!(item.replays.contains("rp-1"));
}
