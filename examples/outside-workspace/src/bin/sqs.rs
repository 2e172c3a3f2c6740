//! SQS with partial batch responses (`ReportBatchItemFailures` on the event source mapping):
//! each record once per operation, only failed records come back, FIFO groups kept in order.

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use lambda_idempotency::{sqs::process_batch, Key};
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let idem = &idempotent_lambdas::idempotency().await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<SqsEvent>| async move {
        let deadline = (&event.context).into();
        // The key: the operation's id in the body, which a second send of it repeats.
        let key = |m: &SqsMessage| {
            Key::from_json_pointer(m.body.as_deref().unwrap_or("").as_bytes(), "/id")
        };
        let apply = |m: SqsMessage| async move {
            println!("applying {}", m.body.unwrap_or_default());
            Ok::<_, String>(())
        };
        Ok::<_, Error>(process_batch(idem, event.payload, &deadline, key, apply).await)
    }))
    .await
}
