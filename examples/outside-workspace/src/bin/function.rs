//! Any async function (a Step Functions task, an asynchronous invocation): one call wraps
//! it; the key from the input's `/order`, the lease to the invocation's deadline.

use lambda_idempotency::{Deadline, Key};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

async fn charge(order: &str) -> Result<Value, String> {
    Ok(json!({ "charge": format!("ch_{order}") }))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let idem = &idempotent_lambdas::idempotency().await?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        let payload = serde_json::to_vec(&event.payload)?;
        let key = Key::from_json_pointer(&payload, "/order")?;
        let out = idem
            .run(&key, &payload, &Deadline::from(&event.context), || {
                charge(key.as_str())
            })
            .await?;
        Ok::<_, Error>(out.value)
    }))
    .await
}
