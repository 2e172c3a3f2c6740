//! `inbox-ops console` on the demo's stack: the stack found by its name on moto's
//! CloudFormation, the figures from the functions' own EMF lines on moto's CloudWatch (put there
//! by [`crate::watch`]), served on 127.0.0.1 until the demo stops.

use std::time::Duration;

use anyhow::Context as _;
use inbox_ops::console::guard::Guard;
use inbox_ops::console::{self, Console};

use crate::stack::Stack;

/// Binds the console and says where it is; the returned future serves it.
pub async fn start(
    stack: &Stack,
) -> anyhow::Result<impl std::future::Future<Output = std::io::Result<()>>> {
    if !stack.watch.settle_metrics(Duration::from_secs(30)).await {
        eprintln!("console: some of the functions' metrics are not on the local CloudWatch yet");
    }
    let sdk = inbox::app::sdk_config().await;
    let resources = inbox_ops::stack::resolve(&sdk, &stack.deployed.name)
        .await
        .context("the demo's stack for the console")?;
    let (listener, port) = console::bind(0).await.context("binding the console")?;
    let guard = Guard::new(port);
    eprintln!(
        "\ninbox console for stack {} at {}\n(the overview's figures are this run's, from the functions' EMF lines on moto's CloudWatch; Ctrl-C stops the console and the stack)",
        resources.name,
        guard.login_url()
    );
    Ok(console::serve(
        listener,
        Console {
            sdk,
            stack: resources,
            guard,
        },
    ))
}
