//! An SQS consumer with partial batch responses (`ReportBatchItemFailures` on the event source
//! mapping): each record runs once per operation; on a FIFO queue a group stops at its first
//! failure and the other groups go on.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_idempotency::memory::MemoryStore;
use lambda_idempotency::sqs::process_batch;
use lambda_idempotency::{Deadline, Idempotency, Key};
use lambda_runtime::{service_fn, Error, LambdaEvent};

async fn apply(message: SqsMessage) -> Result<(), String> {
    println!("applying {}", message.body.unwrap_or_default());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let idem = Idempotency::new(MemoryStore::new());
    let idem = &idem;
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| async move {
        let deadline = Deadline::from(&event.context);
        let response: SqsBatchResponse = process_batch(
            idem,
            event.payload,
            &deadline,
            // The operation's id from the body: a second send of it repeats it.
            |m: &SqsMessage| {
                Key::from_json_pointer(m.body.as_deref().unwrap_or_default().as_bytes(), "/id")
            },
            apply,
        )
        .await;
        Ok::<_, Error>(response)
    }))
    .await
}
