//! Event handlers whose key is the event's own identity, one line each: an SNS message, an
//! EventBridge event, an S3 notification, a DynamoDB stream record, a scheduled run.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sns::SnsEvent;
use lambda_idempotency::events::{scheduled_key, NaturalKey};
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::{Deadline, Idempotency};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let idem = Idempotency::new(MemoryStore::new());
    let deadline = Deadline::none();

    // SNS: the MessageId, the same on every redelivery.
    let sns: SnsEvent = serde_json::from_str(include_str!("sns.json"))?;
    for record in &sns.records {
        let key = record.natural_key()?;
        for _ in 0..2 {
            let out = idem
                .run(&key, record.sns.message.as_bytes(), &deadline, || async {
                    Ok::<_, String>(record.sns.message.len())
                })
                .await?;
            println!("{key}: {} (replayed: {})", out.value, out.replayed);
        }
    }

    // A scheduled run: the time it was scheduled for, not when it ran.
    let tick: EventBridgeEvent = serde_json::from_str(include_str!("scheduled.json"))?;
    let key = scheduled_key(&tick)?;
    let out = idem
        .run(&key, b"", &deadline, || async {
            Ok::<_, String>("report sent".to_owned())
        })
        .await?;
    println!("{key}: {}", out.value);
    // The same event as an ordinary EventBridge event: its id.
    println!("as an event: {}", tick.natural_key()?);
    Ok(())
}
