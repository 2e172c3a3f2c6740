//! The receiver Lambda: API Gateway HTTP API (payload v2) -> verify -> claim -> SQS FIFO.
use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let receiver = inbox::app::receiver_from_env().await?;
    lambda_runtime::run(service_fn(|event| receiver.handle_event(event))).await
}
