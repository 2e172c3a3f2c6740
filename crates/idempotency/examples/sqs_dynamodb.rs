//! An SQS consumer on the DynamoDB store, written as one closure: the table named by
//! `IDEMPOTENCY_TABLE` (partition key `pk`, a string; TTL on `expires_at`), each record's key
//! the operation's id in its body, the leases to the invocation's deadline, the batch
//! answered with its failed records (`ReportBatchItemFailures` on the event source mapping).

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_idempotency::dynamodb::DynamoStore;
use lambda_idempotency::sqs::process_batch;
use lambda_idempotency::{Deadline, Idempotency, Key};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let table = std::env::var("IDEMPOTENCY_TABLE").map_err(|_| "IDEMPOTENCY_TABLE is not set")?;
    let config = aws_config::load_from_env().await;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), table);
    let idem = &Idempotency::new(store).cache_bytes(1 << 20);
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
            |m: SqsMessage| async move {
                println!("applying {}", m.body.unwrap_or_default());
                Ok::<_, String>(())
            },
        )
        .await;
        Ok::<_, Error>(response)
    }))
    .await
}
