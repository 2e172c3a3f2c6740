//! A side effect of your own: a `Processor` that creates an invoice per event, wired into a
//! consumer and run on one message delivered twice (the invoice is created once).
//!
//! README.md shows the lines between the `ANCHOR` comments; `tests/readme_example.rs` checks
//! that it shows exactly them. Run it with `cargo run -p inbox --example processor`.

// ANCHOR: processor
use inbox::{Job, ProcessError, Processor};

struct CreateInvoice {
    db: MyDb,
}

impl Processor for CreateInvoice {
    async fn process(&self, job: &Job) -> Result<(), ProcessError> {
        let event: serde_json::Value = serde_json::from_slice(&job.body)
            .map_err(|e| ProcessError(format!("not JSON: {e}")))?;
        // job.key is stable across every redelivery: use it as your own idempotency key.
        let inserted = self.db.insert_invoice_once(&job.key, &event).await;
        inserted.map_err(|e| ProcessError(e.to_string()))
    }
}
// ANCHOR_END: processor

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aws_lambda_events::sqs::SqsMessage;
use inbox::key::sha256_hex;
use inbox::{
    Clock, Consumer, ConsumerSettings, Envelope, MemoryLedger, Metrics, SourceSpecs, SystemClock,
};

/// Stands in for your system of record (a handle: clones share the table): one invoice
/// per key, however often it is asked.
#[derive(Clone, Default)]
struct MyDb {
    invoices: Arc<Mutex<HashMap<String, serde_json::Value>>>,
}

impl MyDb {
    async fn insert_invoice_once(
        &self,
        key: &str,
        event: &serde_json::Value,
    ) -> Result<(), std::io::Error> {
        let mut invoices = self
            .invoices
            .lock()
            .map_err(|_| std::io::Error::other("the invoice table is poisoned"))?;
        invoices
            .entry(key.to_owned())
            .or_insert_with(|| event.clone());
        Ok(())
    }

    fn count(&self) -> usize {
        self.invoices.lock().map(|i| i.len()).unwrap_or_default()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let specs = SourceSpecs::parse(
        r#"{"shop": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "json", "pointers": ["/id"]}}}"#,
    )?;
    let (metrics, _lines) = Metrics::memory("consumer");
    let db = MyDb::default();
    let consumer = Consumer::new(
        specs,
        MemoryLedger::new(),
        CreateInvoice { db: db.clone() },
        SystemClock,
        ConsumerSettings::default(),
        metrics,
    );

    // The message the receiver would have queued for `POST /webhooks/shop`.
    let body = br#"{"id": "inv_1", "amount": 4200}"#;
    let now = SystemClock.now_ms();
    let envelope = Envelope::new(
        "shop:inv_1",
        "shop",
        now,
        &sha256_hex(body),
        BTreeMap::new(),
        body,
    );
    let mut message = SqsMessage::default();
    message.message_id = Some("m-1".to_owned());
    message.body = Some(envelope.to_json());

    // Delivered twice, as SQS may: the second finds the key completed and skips the effect.
    for delivery in 1..=2 {
        let answer = consumer
            .handle_batch(
                std::slice::from_ref(&message),
                "example",
                Some(now + 30_000),
            )
            .await;
        println!(
            "delivery {delivery}: {} message(s) to retry",
            answer.batch_item_failures.len()
        );
    }
    let invoices = db.count();
    println!("invoices created: {invoices}");
    assert_eq!(invoices, 1);
    Ok(())
}
