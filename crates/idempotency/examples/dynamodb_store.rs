//! A Lambda function on the DynamoDB store: the table named by `IDEMPOTENCY_TABLE`
//! (partition key `pk`, a string; TTL on `expires_at`), the key from the event's `/id`, the
//! lease to the invocation's deadline.

use lambda_idempotency::dynamodb::DynamoStore;
use lambda_idempotency::{Deadline, Idempotency, Key};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let table = std::env::var("IDEMPOTENCY_TABLE").map_err(|_| "IDEMPOTENCY_TABLE is not set")?;
    let config = aws_config::load_from_env().await;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), table);
    let idem = Idempotency::new(store).cache_bytes(4 << 20);
    let idem = &idem;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        let payload = serde_json::to_vec(&event.payload)?;
        let key = Key::from_json_pointer(&payload, "/id")?;
        let deadline = Deadline::from(&event.context);
        let out = idem
            .run(&key, &payload, &deadline, || async {
                Ok::<_, String>(json!({ "processed": key.as_str() }))
            })
            .await?;
        Ok::<_, Error>(out.value)
    }))
    .await
}
