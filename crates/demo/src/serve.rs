//! `demo serve`: the stack on a fixed address, waiting for `cargo lambda invoke --data-file
//! events/…` (and plain HTTP to the receiver) until Ctrl-C.

use std::time::Instant;

use crate::stack::{local_dir, Stack, StackOptions};

/// Starts the stack on `address:port` and waits for Ctrl-C.
pub async fn serve(address: &str, port: u16, instances: u32) -> anyhow::Result<()> {
    let start = Instant::now();
    let local = local_dir();
    let stack = Stack::build_and_start(
        &StackOptions {
            address: address.to_owned(),
            port,
            instances,
            env_file: local.join("watch.env"),
            log: local.join("serve-watch.log"),
            echo: true,
            destinations: false,
        },
        start,
        "",
    )
    .await?;
    let host = if address == "::" || address == "0.0.0.0" {
        "localhost".to_owned()
    } else if address.contains(':') {
        format!("[{address}]")
    } else {
        address.to_owned()
    };
    let port_flag = if port == 9000 {
        String::new()
    } else {
        format!(" -P {port}")
    };
    // The consumer's samples stand for messages a receiver enqueued: their keys are claimed
    // in the ledger, as that receiver would have left them (the consumer takes nothing else).
    let now = devstack::testkit::now_ms();
    for s in crate::events::generate(now / 1000) {
        if s.function == crate::events::Function::Consumer {
            crate::events::accept_sample(&stack.ledger(), &s.event).await?;
        }
    }
    eprintln!(
        "\nReady. In another terminal:\n\n  make events   # if the stripe/acme files are older than 5 minutes\n  cargo lambda invoke receiver{port_flag} --data-file events/github-first.json\n  cargo lambda invoke consumer{port_flag} --data-file events/sqs-fifo-batch.json\n  curl -i http://{host}:{port}/lambda-url/receiver/webhooks/github -d '{{}}'\n\nThe functions read {} (moto at $AWS_ENDPOINT_URL, queue {}).\nThe system of record counts forwards at {}. Ctrl-C stops everything.\n",
        stack.env_file.display(),
        stack.resources.queue_url,
        stack.sor.url()
    );
    crate::console::start(&stack).await?.await?;
    Ok(())
}
