//! The receiver Lambda: API Gateway HTTP API (payload v2) -> verify -> claim -> SQS FIFO.
use std::process::ExitCode;

use lambda_runtime::service_fn;

// One thread: Lambda runs one invocation at a time per environment, and the work is waiting on
// I/O. The multi-threaded scheduler's cross-thread wake-ups cost the receiver ~23% more CPU per
// event (BENCHMARKS.md, "The runtime's threads").
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    lambda_runtime::tracing::init_default_subscriber();
    // A configuration error: its documented message, one log line, exit 1 (inbox::app::serve).
    inbox::app::serve(inbox::app::receiver_from_env(), async |receiver| {
        lambda_runtime::run(service_fn(|event| receiver.handle_event(event))).await
    })
    .await
}
