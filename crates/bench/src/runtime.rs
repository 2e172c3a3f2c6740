//! The Lambda Runtime API emulator: the functions' processes poll `invocation/next` here,
//! one invocation at a time each, and post their answers back; it records the first poll
//! (init duration), init errors and the TCP connections the processes open.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use devstack::testkit;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Bytes;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::http::{respond, serve, HttpResponse};

const RUNTIME: &str = "/2018-06-01/runtime";

/// An invocation waiting for a process to poll: its request id and event.
type Invocation = (String, Vec<u8>);

/// What a process posted back for an invocation.
pub enum Outcome {
    Response(Vec<u8>),
    Error(Vec<u8>),
}

/// One Runtime API on a local port, shared by all processes of one function.
#[derive(Clone)]
pub struct Emulator {
    port: u16,
    queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>>,
    sender: mpsc::UnboundedSender<Invocation>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Outcome>>>>,
    polls: Arc<AtomicU64>,
    /// When the first process first polled.
    pub first_poll: Arc<Mutex<Option<Instant>>>,
    /// Notified at every poll.
    pub polled: Arc<Notify>,
    init_errors: Arc<Mutex<Vec<String>>>,
    ids: Arc<AtomicU64>,
    /// TCP connections the functions opened to the Runtime API.
    pub connections: Arc<AtomicU64>,
}

impl Emulator {
    /// Binds a free local port and serves the Runtime API on it.
    pub async fn start() -> Result<Emulator> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (sender, receiver) = mpsc::unbounded_channel();
        let emu = Emulator {
            port,
            queue: Arc::new(tokio::sync::Mutex::new(receiver)),
            sender,
            pending: Arc::default(),
            polls: Arc::default(),
            first_poll: Arc::default(),
            polled: Arc::default(),
            init_errors: Arc::default(),
            ids: Arc::default(),
            connections: Arc::default(),
        };
        let e = emu.clone();
        serve(
            listener,
            move |req| {
                let e = e.clone();
                async move { e.route(req).await }
            },
            emu.connections.clone(),
        );
        Ok(emu)
    }

    /// `AWS_LAMBDA_RUNTIME_API` for the processes.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    async fn route(&self, req: Request<Bytes>) -> HttpResponse {
        let (parts, body) = req.into_parts();
        let Some(rest) = parts.uri.path().strip_prefix(RUNTIME) else {
            return respond(404, "");
        };
        if parts.method == "GET" && rest == "/invocation/next" {
            {
                let mut first = self.first_poll.lock().expect("first poll");
                if first.is_none() {
                    *first = Some(Instant::now());
                }
            }
            self.polls.fetch_add(1, Ordering::SeqCst);
            self.polled.notify_one();
            let next = self.queue.lock().await.recv().await;
            let Some((id, event)) = next else {
                std::future::pending::<()>().await;
                unreachable!()
            };
            let deadline = testkit::now_ms() + 30_000;
            return Response::builder()
                .header("content-type", "application/json")
                .header("lambda-runtime-aws-request-id", id)
                .header("lambda-runtime-deadline-ms", deadline)
                .header(
                    "lambda-runtime-invoked-function-arn",
                    "arn:aws:lambda:us-east-1:123456789012:function:bench",
                )
                .header(
                    "lambda-runtime-trace-id",
                    "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0",
                )
                .body(Full::from(event))
                .expect("runtime response");
        }
        if parts.method == "POST" && rest == "/init/error" {
            self.init_errors
                .lock()
                .expect("init errors")
                .push(String::from_utf8_lossy(&body).into_owned());
            return respond(202, r#"{"status":"OK"}"#);
        }
        if parts.method == "POST" {
            if let Some(tail) = rest.strip_prefix("/invocation/") {
                let (id, what) = tail.split_once('/').unwrap_or((tail, ""));
                let outcome = match what {
                    "response" => Outcome::Response(body.into()),
                    _ => Outcome::Error(body.into()),
                };
                if let Some(tx) = self.pending.lock().expect("pending").remove(id) {
                    let _ = tx.send(outcome);
                }
                return respond(202, r#"{"status":"OK"}"#);
            }
        }
        respond(404, "")
    }

    /// Hands `event` to the next polling process and waits for its answer.
    pub async fn invoke(&self, event: Vec<u8>) -> Result<Outcome> {
        let id = format!("inv-{:08}", self.ids.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending").insert(id.clone(), tx);
        self.sender
            .send((id, event))
            .ok()
            .context("emulator queue")?;
        tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .context("invocation timed out")?
            .context("invocation dropped")
    }

    /// Waits until `n` polls arrived (every process finished its init), or fails on an
    /// init error or after `limit`.
    pub async fn wait_for_polls(&self, n: u64, limit: Duration) -> Result<()> {
        let until = Instant::now() + limit;
        while self.polls.load(Ordering::SeqCst) < n {
            if let Some(e) = self.init_errors.lock().expect("init errors").first() {
                bail!("a function failed its init: {e}");
            }
            if Instant::now() > until {
                bail!(
                    "only {} of {n} processes polled within {limit:?}",
                    self.polls.load(Ordering::SeqCst)
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}
