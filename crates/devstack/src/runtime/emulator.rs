//! The Lambda Runtime API emulator: the functions' processes poll `invocation/next` here,
//! one invocation at a time each, and post their answers back; it records the first poll
//! (init duration), init errors and the TCP connections the processes open.
//!
//! Every process may get its own address ([`Emulator::instance`]), as each Lambda execution
//! environment has its own Runtime API: the emulator then knows which invocation a process
//! holds, and when the process dies ([`Instance::fail_current`]) that invocation fails as
//! Lambda reports it (`Runtime.ExitError`) instead of waiting out its timeout. An invocation
//! nobody answers fails at the function's timeout (`Task timed out`), as on Lambda.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Bytes;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, Notify};

use super::http::{respond, serve, HttpResponse};
use crate::testkit;

const RUNTIME: &str = "/2018-06-01/runtime";

/// An invocation waiting for a process to poll: its request id and event.
type Invocation = (String, Vec<u8>);

/// What a process posted back for an invocation, or how the invocation failed without one.
#[derive(Debug)]
pub enum Outcome {
    Response(Vec<u8>),
    Error(Vec<u8>),
}

/// The invocation an instance's process holds, if any.
type Current = Arc<Mutex<Option<String>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One Runtime API, shared by all processes of one function.
#[derive(Clone)]
pub struct Emulator {
    port: u16,
    timeout: Duration,
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

/// One process's own address on the emulator, and the invocation it holds.
#[derive(Clone)]
pub struct Instance {
    emu: Emulator,
    port: u16,
    current: Current,
}

impl Instance {
    /// `AWS_LAMBDA_RUNTIME_API` for this instance's process.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process died: the invocation it held fails, as Lambda reports a runtime that
    /// exited mid-invocation. `true` if it held one.
    pub fn fail_current(&self, why: &str) -> bool {
        let Some(id) = lock(&self.current).take() else {
            return false;
        };
        let error = serde_json::json!({"errorType": "Runtime.ExitError", "errorMessage": why});
        self.emu
            .finish(&id, Outcome::Error(error.to_string().into_bytes()));
        true
    }
}

impl Emulator {
    /// Binds a free local port and serves the Runtime API on it, for a function whose
    /// timeout is 30 s.
    pub async fn start() -> Result<Emulator> {
        Self::with_timeout(Duration::from_secs(30)).await
    }

    /// The same, for a function whose timeout is `timeout` (each invocation's deadline, and
    /// when an unanswered one fails).
    pub async fn with_timeout(timeout: Duration) -> Result<Emulator> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut emu = Emulator {
            port: 0,
            timeout,
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
        emu.port = emu.instance().await?.port;
        Ok(emu)
    }

    /// `AWS_LAMBDA_RUNTIME_API` shared by processes that need no instance of their own.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A new address on this Runtime API for one process.
    pub async fn instance(&self) -> Result<Instance> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let instance = Instance {
            emu: self.clone(),
            port,
            current: Arc::default(),
        };
        let i = instance.clone();
        serve(
            listener,
            move |req| {
                let i = i.clone();
                async move { i.emu.route(req, &i.current).await }
            },
            self.connections.clone(),
        );
        Ok(instance)
    }

    fn finish(&self, id: &str, outcome: Outcome) {
        if let Some(tx) = lock(&self.pending).remove(id) {
            let _ = tx.send(outcome);
        }
    }

    async fn route(&self, req: Request<Bytes>, current: &Current) -> HttpResponse {
        let (parts, body) = req.into_parts();
        let Some(rest) = parts.uri.path().strip_prefix(RUNTIME) else {
            return respond(404, "");
        };
        if parts.method == "GET" && rest == "/invocation/next" {
            {
                let mut first = lock(&self.first_poll);
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
            *lock(current) = Some(id.clone());
            let deadline = testkit::now_ms() + self.timeout.as_millis() as i64;
            return Response::builder()
                .header("content-type", "application/json")
                .header("lambda-runtime-aws-request-id", id)
                .header("lambda-runtime-deadline-ms", deadline)
                .header(
                    "lambda-runtime-invoked-function-arn",
                    "arn:aws:lambda:us-east-1:123456789012:function:local",
                )
                .header(
                    "lambda-runtime-trace-id",
                    "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0",
                )
                .body(Full::from(event))
                .expect("runtime response");
        }
        if parts.method == "POST" && rest == "/init/error" {
            lock(&self.init_errors).push(String::from_utf8_lossy(&body).into_owned());
            return respond(202, r#"{"status":"OK"}"#);
        }
        if parts.method == "POST" {
            if let Some(tail) = rest.strip_prefix("/invocation/") {
                let (id, what) = tail.split_once('/').unwrap_or((tail, ""));
                let outcome = match what {
                    "response" => Outcome::Response(body.into()),
                    _ => Outcome::Error(body.into()),
                };
                {
                    let mut held = lock(current);
                    if held.as_deref() == Some(id) {
                        *held = None;
                    }
                }
                self.finish(id, outcome);
                return respond(202, r#"{"status":"OK"}"#);
            }
        }
        respond(404, "")
    }

    /// Hands `event` to the next polling process and waits for its answer; an invocation
    /// nobody answers within the function's timeout fails (`Task timed out`).
    pub async fn invoke(&self, event: Vec<u8>) -> Result<Outcome> {
        let id = format!("inv-{:08}", self.ids.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        self.sender
            .send((id.clone(), event))
            .ok()
            .context("emulator queue")?;
        match tokio::time::timeout(self.timeout + Duration::from_secs(1), rx).await {
            Ok(answer) => answer.context("invocation dropped"),
            Err(_) => {
                lock(&self.pending).remove(&id);
                let error = serde_json::json!({"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out"});
                Ok(Outcome::Error(error.to_string().into_bytes()))
            }
        }
    }

    /// Waits until `n` polls arrived (every process finished its init), or fails on an
    /// init error or after `limit`.
    pub async fn wait_for_polls(&self, n: u64, limit: Duration) -> Result<()> {
        let until = Instant::now() + limit;
        while self.polls.load(Ordering::SeqCst) < n {
            if let Some(e) = lock(&self.init_errors).first() {
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
