//! The consumer's `ForwardUrl` during the bench: a local system of record answering 200 to
//! every forward (after `--forward-ms`), counting them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use tokio::net::TcpListener;

use crate::http::{respond, serve};

/// The local system of record.
pub struct ForwardServer {
    port: u16,
    received: Arc<AtomicU64>,
}

impl ForwardServer {
    /// Serves on a free local port, each answer `delay` after its request.
    pub async fn start(delay: Duration) -> Result<ForwardServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let received = Arc::new(AtomicU64::new(0));
        let count = received.clone();
        serve(
            listener,
            move |_req| {
                let count = count.clone();
                async move {
                    count.fetch_add(1, Ordering::Relaxed);
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    respond(200, "")
                }
            },
            Arc::default(),
        );
        Ok(ForwardServer { port, received })
    }

    /// The stack's `ForwardUrl`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/events", self.port)
    }

    /// Forwards received so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}
