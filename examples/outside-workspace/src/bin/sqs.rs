//! SQS with partial batch responses (`ReportBatchItemFailures` on the event source mapping):
//! each record once per operation, only failed records come back, FIFO groups kept in order.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_idempotency::{dynamodb::DynamoStore, sqs::process_batch, Idempotency, Key};
use lambda_runtime::{service_fn, Error, LambdaEvent};

async fn apply(message: SqsMessage) -> Result<(), String> {
    println!("applying {}", message.body.unwrap_or_default());
    Ok(())
}

async fn handler(
    idem: &Idempotency<DynamoStore>,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, Error> {
    // The key: the operation's id in the body, which a second send of it repeats.
    let key =
        |m: &SqsMessage| Key::from_json_pointer(m.body.as_deref().unwrap_or("").as_bytes(), "/id");
    let deadline = (&event.context).into();
    Ok(process_batch(idem, event.payload, &deadline, key, apply).await)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let idem = &idempotent_lambdas::idempotency().await?;
    lambda_runtime::run(service_fn(|event| handler(idem, event))).await
}
