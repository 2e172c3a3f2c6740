//! The consumer and envelope pointers on the in-memory twins (docs/design.md §12): a body
//! behind a `body_ref` reaches the `Processor` byte for byte; a missing object, one that does
//! not match its hash, or no bucket at all fails the key with a clear `last_error`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_lambda_events::sqs::SqsMessage;
use inbox::bucket::{payload_key, MemoryBucket, PayloadBucket};
use inbox::clock::{Clock, SystemClock};
use inbox::config::SourceSpecs;
use inbox::consumer::{Consumer, ConsumerSettings, Job, ProcessError, Processor};
use inbox::key::sha256_hex;
use inbox::ledger::memory::MemoryLedger;
use inbox::ledger::{LedgerStore, Status};
use inbox::metrics::Metrics;
use inbox::queue::{BodyRef, Envelope};

const SOURCES: &str = r#"{"s": {"signature": {"scheme": "none"}, "allow_unsigned": true,
    "key": {"from": "json", "pointers": ["/id"]}}}"#;

/// Records each body it is handed.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

impl Processor for Recorder {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        self.0.lock().unwrap().push(job.body.to_vec());
        Ok(())
    }
}

fn message(key: &str, body: &[u8]) -> SqsMessage {
    let sha = sha256_hex(body);
    let r = BodyRef {
        s3_key: payload_key("s", key, &sha),
        sha256: sha.clone(),
        size: body.len() as u64,
    };
    let text = Envelope::json_with_ref(
        key,
        "s",
        SystemClock.now_ms(),
        &sha,
        &BTreeMap::new(),
        None,
        &r,
    );
    let mut m = SqsMessage::default();
    m.message_id = Some(format!("m-{key}"));
    m.body = Some(text);
    m
}

async fn run<S: PayloadBucket>(
    store: S,
    messages: &[SqsMessage],
) -> (Arc<MemoryLedger>, Recorder, usize) {
    let ledger = Arc::new(MemoryLedger::new());
    let recorder = Recorder::default();
    let cx = Consumer::new(
        SourceSpecs::parse(SOURCES).unwrap(),
        ledger.clone(),
        recorder.clone(),
        SystemClock,
        ConsumerSettings::default(),
        Metrics::memory("consumer").0,
    )
    .with_store(store);
    devstack::testkit::accept_messages(&ledger, messages)
        .await
        .expect("accepted");
    let failed = cx
        .handle_batch(messages, "inv", Some(SystemClock.now_ms() + 30_000))
        .await
        .batch_item_failures
        .len();
    (ledger, recorder, failed)
}

#[tokio::test]
async fn a_body_behind_a_pointer_reaches_the_processor_and_a_missing_one_fails_the_key() {
    let store = Arc::new(MemoryBucket::new());
    let present: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let m_present = message("s:present", &present);
    store
        .put(
            &payload_key("s", "s:present", &sha256_hex(&present)),
            present.clone(),
        )
        .await
        .unwrap();
    let m_missing = message("s:missing", b"gone");
    let tampered = b"tampered".to_vec();
    let m_tampered = message("s:tampered", &tampered);
    store
        .put(
            &payload_key("s", "s:tampered", &sha256_hex(&tampered)),
            b"other!!!".to_vec(),
        )
        .await
        .unwrap();

    let (ledger, recorder, failed) = run(store.clone(), &[m_present, m_missing, m_tampered]).await;
    assert_eq!(failed, 2);
    assert_eq!(
        *recorder.0.lock().unwrap(),
        vec![present],
        "byte for byte, once"
    );
    let item = |key: &'static str| {
        let ledger = ledger.clone();
        async move { ledger.get(key).await.unwrap().expect(key) }
    };
    assert_eq!(item("s:present").await.status, Status::Completed);
    let missing = item("s:missing").await;
    assert_eq!(missing.status, Status::Failed);
    assert_eq!(
        missing.last_error.as_deref(),
        Some(
            format!(
                "payload missing: s3://memory/{}",
                payload_key("s", "s:missing", &sha256_hex(b"gone"))
            )
            .as_str()
        )
    );
    let bad = item("s:tampered").await;
    assert!(
        bad.last_error
            .as_deref()
            .unwrap_or_default()
            .starts_with("payload unreadable: "),
        "{:?}",
        bad.last_error
    );

    // No bucket configured at all: failed, never skipped.
    let (ledger, recorder, failed) =
        run(None::<MemoryBucket>, &[message("s:nobucket", b"x")]).await;
    assert_eq!(failed, 1);
    assert!(recorder.0.lock().unwrap().is_empty());
    let item = ledger.get("s:nobucket").await.unwrap().expect("item");
    assert_eq!(item.status, Status::Failed);
    assert!(item
        .last_error
        .unwrap()
        .starts_with("payload missing: s3://(no bucket)/"));
}
