//! The consumer Lambda: SQS FIFO batch -> take -> side effect -> complete, partial batch failures.
use std::process::ExitCode;

use lambda_runtime::service_fn;

// One thread: Lambda runs one invocation at a time per environment, and the work is waiting on
// I/O. The multi-threaded scheduler's cross-thread wake-ups cost the receiver ~23% more CPU per
// event (BENCHMARKS.md, "The runtime's threads").
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    lambda_runtime::tracing::init_default_subscriber();
    // A configuration error: its documented message, one log line, exit 1 (inbox::app::serve).
    inbox::app::serve(inbox::app::consumer_from_env(), async |consumer| {
        lambda_runtime::run(service_fn(|event| consumer.handle_event(event))).await
    })
    .await
}
