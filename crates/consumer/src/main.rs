//! The consumer Lambda: SQS FIFO batch -> take -> side effect -> complete, partial batch failures.
use lambda_runtime::{service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let consumer = inbox::app::consumer_from_env().await?;
    lambda_runtime::run(service_fn(|event| consumer.handle_event(event))).await
}
