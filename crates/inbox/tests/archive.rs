//! The consumer's archive step on the in-memory ledger and archive: every event that runs is
//! archived first, under the hour the take records; an event the archive does not take does
//! not run (no side effect, no ledger write) and comes back; a replay is not archived again;
//! a source with `"archive": false` is not archived.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use aws_lambda_events::sqs::SqsMessage;
use inbox::archive::{envelopes_in, Archive, ArchiveError, MemoryArchive};
use inbox::bucket::{MemoryBucket, PayloadBucket as _};
use inbox::key::sha256_hex;
use inbox::ledger::Status;
use inbox::{
    Clock, Consumer, ConsumerSettings, Envelope, Job, LedgerStore, MemoryLedger, Metrics,
    ProcessError, Processor, SourceSpecs, SystemClock,
};

#[derive(Clone, Default)]
struct Effect(Arc<AtomicUsize>);

impl Processor for Effect {
    async fn process(&self, _job: &Job) -> Result<(), ProcessError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The memory archive, refusing every line while `down` is set, or only the lines holding
/// `refuse` (a partial failure).
struct Flaky {
    inner: MemoryArchive<Arc<MemoryBucket>, SystemClock>,
    down: AtomicBool,
    refuse: Option<&'static str>,
}

impl Archive for Flaky {
    async fn put(&self, lines: &[String]) -> Result<Vec<bool>, ArchiveError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(ArchiveError("ServiceUnavailableException".into()));
        }
        let kept: Vec<String> = lines
            .iter()
            .filter(|l| self.refuse.is_none_or(|r| !l.contains(r)))
            .cloned()
            .collect();
        self.inner.put(&kept).await?;
        Ok(lines
            .iter()
            .map(|l| self.refuse.is_none_or(|r| !l.contains(r)))
            .collect())
    }
}

const SOURCES: &str = r#"{
  "shop": {"signature": {"scheme": "none"}, "allow_unsigned": true,
           "key": {"from": "json", "pointers": ["/id"]}, "group": {"from": "json", "pointers": ["/customer"]}},
  "quiet": {"signature": {"scheme": "none"}, "allow_unsigned": true,
            "key": {"from": "json", "pointers": ["/id"]}, "archive": false}}"#;

fn message(id: &str, source: &str, key: &str, customer: &str) -> SqsMessage {
    let body = format!(r#"{{"id": "{key}", "customer": "{customer}"}}"#);
    let envelope = Envelope::new(
        &format!("{source}:{key}"),
        source,
        SystemClock.now_ms(),
        &sha256_hex(body.as_bytes()),
        BTreeMap::new(),
        body.as_bytes(),
    );
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.body = Some(envelope.to_json());
    m.attributes
        .insert("MessageGroupId".into(), format!("{source}:{customer}"));
    m
}

struct Rig {
    consumer: Consumer<
        Arc<MemoryLedger>,
        Effect,
        SystemClock,
        inbox::consumer::Wiring<
            inbox::redelivery::NoRedelivery,
            inbox::bucket::NoBucket,
            Arc<Flaky>,
        >,
    >,
    ledger: Arc<MemoryLedger>,
    store: Arc<MemoryBucket>,
    archive: Arc<Flaky>,
    effect: Effect,
}

fn rig(refuse: Option<&'static str>) -> Rig {
    let store = Arc::new(MemoryBucket::new());
    let archive = Arc::new(Flaky {
        inner: MemoryArchive::new(store.clone(), SystemClock),
        down: AtomicBool::new(false),
        refuse,
    });
    let ledger = Arc::new(MemoryLedger::new());
    let effect = Effect::default();
    let consumer = Consumer::new(
        SourceSpecs::parse(SOURCES).expect("sources"),
        ledger.clone(),
        effect.clone(),
        SystemClock,
        ConsumerSettings {
            archive_bodies: true,
            ..ConsumerSettings::default()
        },
        Metrics::memory("consumer").0,
    )
    .with_archive(archive.clone());
    Rig {
        consumer,
        ledger,
        store,
        archive,
        effect,
    }
}

/// The batch's events as a receiver accepted them (the consumer takes nothing else), then the
/// batch: the messages reported failed.
async fn failed(rig: &Rig, batch: &[SqsMessage]) -> Vec<String> {
    for m in batch {
        let envelope = Envelope::parse(m.body.as_deref().unwrap()).unwrap();
        rig.ledger
            .claim(&envelope.accepted_claim(SystemClock.now_ms(), 1))
            .await
            .unwrap();
    }
    rig.consumer
        .handle_batch(batch, "inv", Some(SystemClock.now_ms() + 30_000))
        .await
        .batch_item_failures
        .into_iter()
        .map(|f| f.item_identifier)
        .collect()
}

async fn archived_keys(store: &MemoryBucket) -> Vec<String> {
    let mut keys = Vec::new();
    for object in store.list("archive/").await.unwrap() {
        let bytes = store.get(&object).await.unwrap().unwrap();
        keys.extend(envelopes_in(&bytes).map(|e| e.unwrap().key));
    }
    keys
}

#[tokio::test]
async fn every_event_that_runs_was_archived_first_in_one_call_and_its_take_says_when() {
    let rig = rig(None);
    let batch = [
        message("m-1", "shop", "o-1", "c-1"),
        message("m-2", "shop", "o-2", "c-2"),
        message("m-3", "quiet", "q-1", "c-1"),
    ];
    let before = SystemClock.now_ms();
    assert!(failed(&rig, &batch).await.is_empty());
    assert_eq!(rig.effect.0.load(Ordering::SeqCst), 3);
    assert_eq!(rig.store.keys().len(), 1, "one call, one object");
    let mut keys = archived_keys(&rig.store).await;
    keys.sort();
    assert_eq!(
        keys,
        ["shop:o-1", "shop:o-2"],
        "not the source with archive: false"
    );
    for key in ["shop:o-1", "shop:o-2"] {
        let at = rig.ledger.get(key).await.unwrap().unwrap().archived_at;
        assert!(at.is_some_and(|t| t >= before), "{key}: {at:?}");
    }
    assert_eq!(
        rig.ledger
            .get("quiet:q-1")
            .await
            .unwrap()
            .unwrap()
            .archived_at,
        None
    );

    // A replay of an archived event runs without being archived again.
    let mut replay: Envelope = Envelope::parse(batch[0].body.as_deref().unwrap()).unwrap();
    replay.replay_id = Some("rp-1".into());
    let recorded = rig
        .ledger
        .request_replay(
            &replay.key,
            &replay.payload_sha256,
            "rp-1",
            SystemClock.now_ms(),
        )
        .await
        .unwrap();
    assert!(recorded);
    let mut m = batch[0].clone();
    m.message_id = Some("m-4".into());
    m.body = Some(replay.to_json());
    assert!(failed(&rig, &[m]).await.is_empty());
    assert_eq!(rig.effect.0.load(Ordering::SeqCst), 4);
    assert_eq!(archived_keys(&rig.store).await.len(), 2);
}

#[tokio::test]
async fn an_event_the_archive_does_not_take_does_not_run_and_comes_back() {
    let rig = rig(None);
    rig.archive.down.store(true, Ordering::SeqCst);
    let batch = [
        message("m-1", "shop", "o-1", "c-1"),
        message("m-2", "quiet", "q-1", "c-1"),
    ];
    assert_eq!(failed(&rig, &batch).await, ["m-1"]);
    assert_eq!(
        rig.effect.0.load(Ordering::SeqCst),
        1,
        "only the unarchived source"
    );
    let untouched = rig.ledger.get("shop:o-1").await.unwrap().unwrap();
    assert_eq!(
        (untouched.status, untouched.attempts),
        (Status::Received, 0),
        "no ledger write: as the receiver left it"
    );
    // Back, with the archive up: archived, then run once.
    rig.archive.down.store(false, Ordering::SeqCst);
    assert!(failed(&rig, &batch[..1]).await.is_empty());
    assert_eq!(rig.effect.0.load(Ordering::SeqCst), 2);
    assert_eq!(archived_keys(&rig.store).await, ["shop:o-1"]);
}

#[tokio::test]
async fn a_partial_failure_holds_the_rest_of_its_group_and_only_its_group() {
    let rig = rig(Some("o-2"));
    let batch = [
        message("m-1", "shop", "o-1", "c-1"),
        message("m-2", "shop", "o-2", "c-1"),
        message("m-3", "shop", "o-3", "c-1"),
        message("m-4", "shop", "o-4", "c-2"),
    ];
    let mut failures = failed(&rig, &batch).await;
    failures.sort();
    assert_eq!(
        failures,
        ["m-2", "m-3"],
        "o-2 refused, o-3 held behind it in order"
    );
    assert_eq!(rig.effect.0.load(Ordering::SeqCst), 2, "o-1 and o-4 ran");
    for key in ["shop:o-2", "shop:o-3"] {
        let untouched = rig.ledger.get(key).await.unwrap().unwrap();
        assert_eq!(
            (untouched.status, untouched.attempts),
            (Status::Received, 0),
            "{key}"
        );
    }
}
