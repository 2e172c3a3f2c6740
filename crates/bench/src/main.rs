//! `make bench`: the receiver against a minimal Python receiver built on Powertools
//! idempotency (bench/powertools_handler.py, the comparison, not the product), in one run, on
//! one moto server, under one workload.
//!
//! Both functions run as real Lambda functions would: as processes that poll a Runtime API
//! (an emulator in this driver), one invocation at a time per process, one process per
//! concurrent request. Both reach AWS through a counting proxy in this driver, so their AWS
//! calls (and new TCP connections) are counted by the same instrument. Their CPU is read from
//! /proc/<pid>/stat (utime + stime) of the handler processes alone, before and after.
//!
//! Then: init duration (process start to the first `invocation/next` poll) of each binary
//! and of the Python peer, median of N starts; and the release zips' sizes.
//!
//! ```text
//! cargo run -p bench -- --receiver target/release/receiver \
//!     --consumer target/release/consumer --zip receiver=... --zip consumer=... [--out FILE]
//! ```

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use devstack::moto;
use devstack::provision::{self, Template};
use devstack::testkit::{self, TEST_WHSEC};
use futures::StreamExt;
use http::{header, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, Notify};

/// The one source both receivers serve: Standard Webhooks, keyed on `webhook-id`, FIFO
/// groups per customer.
const SOURCES: &str = r#"{"acme": {"signature": {"scheme": "standard-webhooks", "secrets": ["env:INBOX_TEST_WHSEC"]},
  "key": {"from": "header", "name": "webhook-id"},
  "group": {"from": "json", "pointers": ["/customer_id"]}}}"#;

// ---------------------------------------------------------------------------------------
// Options

struct Options {
    deliveries: usize,
    events: usize,
    concurrency: usize,
    body_bytes: usize,
    init_runs: usize,
    receiver: PathBuf,
    consumer: PathBuf,
    zips: Vec<(String, PathBuf)>,
    zip_note: Option<String>,
    out: Option<PathBuf>,
    skip_peer: bool,
    /// Extra latency the proxy adds to every AWS call (a slower AWS).
    aws_delay_ms: u64,
}

fn options() -> Result<Options> {
    let mut o = Options {
        deliveries: 2000,
        events: 1000,
        concurrency: 16,
        body_bytes: 2048,
        init_runs: 20,
        receiver: PathBuf::from("target/release/receiver"),
        consumer: PathBuf::from("target/release/consumer"),
        zips: Vec::new(),
        zip_note: None,
        out: None,
        skip_peer: false,
        aws_delay_ms: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--deliveries" => o.deliveries = value()?.parse()?,
            "--events" => o.events = value()?.parse()?,
            "--concurrency" => o.concurrency = value()?.parse()?,
            "--body-bytes" => o.body_bytes = value()?.parse()?,
            "--init-runs" => o.init_runs = value()?.parse()?,
            "--receiver" => o.receiver = value()?.into(),
            "--consumer" => o.consumer = value()?.into(),
            "--zip" => {
                let v = value()?;
                let (name, path) = v.split_once('=').context("--zip NAME=PATH")?;
                o.zips.push((name.to_owned(), path.into()));
            }
            "--zip-note" => o.zip_note = Some(value()?),
            "--out" => o.out = Some(value()?.into()),
            "--skip-peer" => o.skip_peer = true,
            "--aws-delay-ms" => o.aws_delay_ms = value()?.parse()?,
            "-h" | "--help" => {
                println!(
                    "{}",
                    include_str!("main.rs")
                        .lines()
                        .take(18)
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other}"),
        }
    }
    if o.events == 0 || o.deliveries < o.events || o.concurrency == 0 {
        bail!("need deliveries >= events > 0 and concurrency > 0");
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------
// An HTTP/1.1 server (hyper): enough for the Runtime API and a forwarding proxy.

/// A response with a complete body (hyper adds `content-length`).
type HttpResponse = Response<Full<Bytes>>;

fn respond(status: u16, body: impl Into<Bytes>) -> HttpResponse {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = http::StatusCode::from_u16(status).expect("status code");
    resp
}

/// Serves keep-alive connections, one task per connection, each request's body collected
/// before `handler` sees it; `connections` counts the accepted TCP connections.
fn serve<H, F>(listener: TcpListener, handler: H, connections: Arc<AtomicU64>)
where
    H: Fn(Request<Bytes>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = HttpResponse> + Send + 'static,
{
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            connections.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_nodelay(true);
            let handler = handler.clone();
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let handler = handler.clone();
                async move {
                    let (parts, body) = req.into_parts();
                    let body = body.collect().await?.to_bytes();
                    Ok::<_, hyper::Error>(handler(Request::from_parts(parts, body)).await)
                }
            });
            tokio::spawn(
                http1::Builder::new()
                    .keep_alive(true)
                    .auto_date_header(false)
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
}

// ---------------------------------------------------------------------------------------
// The Runtime API emulator.

const RUNTIME: &str = "/2018-06-01/runtime";

/// An invocation waiting for a process to poll: its request id and event.
type Invocation = (String, Vec<u8>);

enum Outcome {
    Response(Vec<u8>),
    Error(Vec<u8>),
}

#[derive(Clone)]
struct Emulator {
    port: u16,
    queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>>,
    sender: mpsc::UnboundedSender<Invocation>,
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<Outcome>>>>,
    polls: Arc<AtomicU64>,
    first_poll: Arc<Mutex<Option<Instant>>>,
    polled: Arc<Notify>,
    init_errors: Arc<Mutex<Vec<String>>>,
    ids: Arc<AtomicU64>,
    /// TCP connections the functions opened to the Runtime API.
    connections: Arc<AtomicU64>,
}

impl Emulator {
    async fn start() -> Result<Emulator> {
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

    fn address(&self) -> String {
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
    async fn invoke(&self, event: Vec<u8>) -> Result<Outcome> {
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

    async fn wait_for_polls(&self, n: u64, limit: Duration) -> Result<()> {
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

// ---------------------------------------------------------------------------------------
// The counting proxy in front of moto.

#[derive(Clone)]
struct Proxy {
    port: u16,
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
    connections: Arc<AtomicU64>,
}

impl Proxy {
    async fn start(upstream: &str, delay: Duration) -> Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let proxy = Proxy {
            port,
            calls: Arc::default(),
            connections: Arc::default(),
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(64)
            .build()?;
        let upstream = upstream.trim_end_matches('/').to_owned();
        let calls = proxy.calls.clone();
        serve(
            listener,
            move |req: Request<Bytes>| {
                let (client, upstream, calls) = (client.clone(), upstream.clone(), calls.clone());
                async move {
                    let op = operation(&req);
                    *calls.lock().expect("calls").entry(op).or_default() += 1;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    forward(&client, &upstream, req)
                        .await
                        .unwrap_or_else(|e| respond(502, format!("proxy: {e:#}")))
                }
            },
            proxy.connections.clone(),
        );
        Ok(proxy)
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn snapshot(&self) -> (BTreeMap<String, u64>, u64) {
        (
            self.calls.lock().expect("calls").clone(),
            self.connections.load(Ordering::SeqCst),
        )
    }
}

/// `PutItem` from `X-Amz-Target: DynamoDB_20120810.PutItem` (JSON protocols), else `Action=`.
fn operation(req: &Request<Bytes>) -> String {
    if let Some(target) = req.headers().get("x-amz-target") {
        let target = String::from_utf8_lossy(target.as_bytes());
        return target.rsplit('.').next().unwrap_or(&target).to_owned();
    }
    String::from_utf8_lossy(req.body())
        .split('&')
        .find_map(|kv| kv.strip_prefix("Action="))
        .unwrap_or("unknown")
        .to_owned()
}

async fn forward(
    client: &reqwest::Client,
    upstream: &str,
    req: Request<Bytes>,
) -> Result<HttpResponse> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut headers = parts.headers;
    for h in [
        header::HOST,
        header::CONTENT_LENGTH,
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::EXPECT,
    ] {
        headers.remove(h);
    }
    let resp = client
        .request(parts.method, format!("{upstream}{path}"))
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let mut out = Response::builder().status(resp.status());
    for (k, v) in resp.headers() {
        if ![
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::CONNECTION,
        ]
        .contains(k)
        {
            out = out.header(k, v);
        }
    }
    Ok(out.body(Full::new(resp.bytes().await?))?)
}

// ---------------------------------------------------------------------------------------
// Handler processes and their CPU.

fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// utime + stime of a process (all its threads, live or exited), in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rsplit_once(')').context("stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the command: state is field 3, utime 14, stime 15.
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

/// Time on CPU of a process's live threads, nanoseconds (/proc/<pid>/task/*/schedstat):
/// exact, where utime + stime are sampled at the clock tick.
fn cpu_sched_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Peak resident set (VmHWM), KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Clone)]
struct Function {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Function {
    fn spawn(&self, runtime_api: &str) -> Result<tokio::process::Child> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .env_remove("AWS_PROFILE")
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", self.name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{}", self.name),
            )
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "2026/01/01/[$LATEST]bench")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        cmd.spawn()
            .with_context(|| format!("starting {}", self.program.display()))
    }
}

// ---------------------------------------------------------------------------------------
// The workload.

fn event_body(i: usize, size: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"id":"evt_{i:06}","type":"invoice.paid","customer_id":"cus_{:03}","pad":""#,
        i % 64
    );
    let pad = size.saturating_sub(head.len() + 2);
    let mut out = head.into_bytes();
    out.extend(std::iter::repeat_n(b'x', pad));
    out.extend_from_slice(br#""}"#);
    out
}

/// Marks an index as a forged delivery (its body changed after signing).
const FORGED: usize = 1 << 40;

/// API Gateway's HTTP API (payload v2) event for a signed delivery of event `i`.
fn apigw_event(i: usize, size: usize) -> Vec<u8> {
    let forged = i & FORGED != 0;
    let i = i & !FORGED;
    let mut body = event_body(i, size);
    let id = format!("msg_{i:06}");
    let t = testkit::now_ms() / 1000;
    let mut headers: serde_json::Map<String, serde_json::Value> =
        testkit::standard_webhooks_headers(&id, t, &body)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v)))
            .collect();
    if forged {
        // Changed after signing: both functions must answer 401 without touching AWS.
        if let Some(last) = body.iter_mut().rev().find(|b| **b == b'x') {
            *last = b'y';
        }
    }
    headers.insert("user-agent".into(), "Svix-Webhooks/1.0".into());
    headers.insert("content-length".into(), body.len().to_string().into());
    serde_json::json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": "/webhooks/acme",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench", "domainName": "bench.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "bench", "requestId": format!("req-{i}"), "routeKey": "POST /webhooks/{source}",
            "stage": "$default", "time": "01/Jan/2026:00:00:00 +0000", "timeEpoch": testkit::now_ms(),
            "http": {"method": "POST", "path": "/webhooks/acme", "protocol": "HTTP/1.1",
                     "sourceIp": "192.0.2.1", "userAgent": "Svix-Webhooks/1.0"}
        },
        "pathParameters": {"source": "acme"},
        "body": String::from_utf8(body).expect("ASCII body"),
        "isBase64Encoded": false
    })
    .to_string()
    .into_bytes()
}

#[derive(Default, Clone, Copy)]
struct Answers {
    ok_first: u64,
    ok_replayed: u64,
    unauthorized: u64,
    other: u64,
}

static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends `indexes` through the emulator, `concurrency` at a time.
async fn deliver(emu: &Emulator, indexes: Vec<usize>, o: &Options) -> Answers {
    let answers: Vec<(u16, bool)> = futures::stream::iter(indexes)
        .map(|i| async move {
            match emu.invoke(apigw_event(i, o.body_bytes)).await {
                Ok(Outcome::Response(body)) => {
                    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let status = v["statusCode"].as_u64().unwrap_or(0) as u16;
                    let replayed = v["headers"]["idempotent-replayed"] == "true";
                    (status, replayed)
                }
                Ok(Outcome::Error(body)) => {
                    if !REPORTED.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "bench: an invocation failed: {}",
                            String::from_utf8_lossy(&body)
                        );
                    }
                    (0, false)
                }
                Err(e) => {
                    if !REPORTED.swap(true, Ordering::Relaxed) {
                        eprintln!("bench: an invocation failed: {e:#}");
                    }
                    (0, false)
                }
            }
        })
        .buffer_unordered(o.concurrency)
        .collect()
        .await;
    let mut a = Answers::default();
    for (status, replayed) in answers {
        match (status, replayed) {
            (200, false) => a.ok_first += 1,
            (200, true) => a.ok_replayed += 1,
            (401, _) => a.unauthorized += 1,
            _ => a.other += 1,
        }
    }
    a
}

/// One phase's figures.
#[derive(Default, Clone)]
struct Phase {
    deliveries: u64,
    wall: Duration,
    cpu_secs: f64,
    sched_secs: f64,
    calls: BTreeMap<String, u64>,
    connections: u64,
    answers: Answers,
}

impl Phase {
    fn calls_total(&self) -> u64 {
        self.calls.values().sum()
    }
    fn sends(&self) -> u64 {
        self.calls.get("SendMessage").copied().unwrap_or(0)
    }
}

struct Run {
    name: &'static str,
    processes: usize,
    runtime_connections: u64,
    init_cpu_secs: f64,
    first: Phase,
    duplicates: Phase,
    /// Deliveries whose body was changed after signing: the floor, no AWS call.
    forged: Phase,
    peak_rss_kib: u64,
    items: usize,
    messages: u64,
}

fn diff(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect()
}

async fn run_function(
    f: &Function,
    o: &Options,
    upstream: &str,
    table: &str,
    queue_url: &str,
    aws: &Aws,
) -> Result<Run> {
    let ticks = clock_ticks() as f64;
    let proxy = Proxy::start(upstream, Duration::from_millis(o.aws_delay_ms)).await?;
    let emu = Emulator::start().await?;
    let mut f = f.clone();
    f.env.push(("AWS_ENDPOINT_URL".into(), proxy.endpoint()));
    let mut children = Vec::new();
    for _ in 0..o.concurrency {
        children.push(f.spawn(&emu.address())?);
    }
    let pids: Vec<u32> = children.iter().filter_map(|c| c.id()).collect();
    emu.wait_for_polls(pids.len() as u64, Duration::from_secs(120))
        .await
        .with_context(|| format!("{}: waiting for init", f.name))?;
    let cpu = |pids: &[u32]| -> Result<f64> {
        let mut sum = 0;
        for pid in pids {
            sum += cpu_ticks(*pid)?;
        }
        Ok(sum as f64 / ticks)
    };
    let sched =
        |pids: &[u32]| -> f64 { pids.iter().map(|p| cpu_sched_ns(*p)).sum::<u64>() as f64 / 1e9 };
    let init_cpu = cpu(&pids)?;

    let mut phases = Vec::new();
    let firsts: Vec<usize> = (0..o.events).collect();
    let dups: Vec<usize> = (o.events..o.deliveries).map(|d| d % o.events).collect();
    let forged: Vec<usize> = (0..o.events.min(500)).map(|i| i | FORGED).collect();
    for indexes in [firsts, dups, forged] {
        let (calls0, conns0) = proxy.snapshot();
        let cpu0 = cpu(&pids)?;
        let sched0 = sched(&pids);
        let started = Instant::now();
        let n = indexes.len() as u64;
        let answers = deliver(&emu, indexes, o).await;
        let wall = started.elapsed();
        let cpu1 = cpu(&pids)?;
        let sched1 = sched(&pids);
        let (calls1, conns1) = proxy.snapshot();
        phases.push(Phase {
            deliveries: n,
            wall,
            cpu_secs: cpu1 - cpu0,
            sched_secs: sched1 - sched0,
            calls: diff(&calls1, &calls0),
            connections: conns1 - conns0,
            answers,
        });
    }
    let peak = pids.iter().map(|p| peak_rss_kib(*p)).max().unwrap_or(0);
    drop(children);
    let items = aws.count_items(table).await?;
    let messages = aws.count_messages(queue_url).await?;
    let forged = phases.pop().unwrap_or_default();
    let duplicates = phases.pop().unwrap_or_default();
    let first = phases.pop().unwrap_or_default();
    Ok(Run {
        name: f.name,
        processes: pids.len(),
        runtime_connections: emu.connections.load(Ordering::SeqCst),
        init_cpu_secs: init_cpu,
        first,
        duplicates,
        forged,
        peak_rss_kib: peak,
        items,
        messages,
    })
}

// ---------------------------------------------------------------------------------------
// Init duration: process start to the first `invocation/next`.

async fn init_durations(f: &Function, runs: usize) -> Result<Vec<Duration>> {
    let mut out = Vec::new();
    for _ in 0..runs {
        let emu = Emulator::start().await?;
        let started = Instant::now();
        let child = f.spawn(&emu.address())?;
        let polled = emu.polled.clone();
        tokio::time::timeout(Duration::from_secs(30), polled.notified())
            .await
            .with_context(|| format!("{}: no poll within 30 s", f.name))?;
        let first = emu
            .first_poll
            .lock()
            .expect("first")
            .context("first poll")?;
        out.push(first - started);
        drop(child);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(out)
}

fn median_ms(d: &[Duration]) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = d.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let mid = if ms.len() % 2 == 1 {
        ms[ms.len() / 2]
    } else {
        (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0
    };
    (mid, ms[0], ms[ms.len() - 1])
}

// ---------------------------------------------------------------------------------------
// Zip sizes.

/// (compressed file size, sum of the entries' uncompressed sizes), from the central directory.
fn zip_sizes(path: &Path) -> Result<(u64, u64)> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let size = file.metadata()?.len();
    let mut zip = zip::ZipArchive::new(file).with_context(|| format!("{}", path.display()))?;
    let mut unpacked = 0;
    for i in 0..zip.len() {
        unpacked += zip.by_index_raw(i)?.size();
    }
    Ok((size, unpacked))
}

// ---------------------------------------------------------------------------------------
// AWS (direct to moto, not counted).

struct Aws {
    dynamo: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
}

impl Aws {
    async fn count_items(&self, table: &str) -> Result<usize> {
        let mut n = 0;
        let mut start = None;
        loop {
            let out = self
                .dynamo
                .scan()
                .table_name(table)
                .set_exclusive_start_key(start)
                .send()
                .await?;
            n += out.items().len();
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(n);
            }
        }
    }

    async fn count_messages(&self, queue_url: &str) -> Result<u64> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .send()
            .await?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&A::ApproximateNumberOfMessages))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// The peer's own table (Powertools' default key attribute `id`) and FIFO queue.
    async fn peer_resources(&self, prefix: &str) -> Result<(String, String)> {
        use aws_sdk_dynamodb::types::{
            AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
        };
        let table = format!("{prefix}-powertools-idempotency");
        self.dynamo
            .create_table()
            .table_name(&table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("id")
                    .attribute_type(ScalarAttributeType::S)
                    .build()?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("id")
                    .key_type(KeyType::Hash)
                    .build()?,
            )
            .send()
            .await?;
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let queue = self
            .sqs
            .create_queue()
            .queue_name(format!("{prefix}-powertools.fifo"))
            .attributes(A::FifoQueue, "true")
            .send()
            .await?;
        Ok((table, queue.queue_url().context("queue url")?.to_owned()))
    }
}

// ---------------------------------------------------------------------------------------
// The report.

fn ratio(ours: f64, peer: f64) -> String {
    if peer == 0.0 {
        "—".into()
    } else {
        format!("{:.3}", ours / peer)
    }
}

fn report(
    o: &Options,
    runs: &[Run],
    inits: &[(String, Vec<Duration>)],
    zips: &[(String, u64, u64)],
) -> String {
    let mut s = String::new();
    let push = |s: &mut String, line: String| {
        s.push_str(&line);
        s.push('\n');
    };
    push(
        &mut s,
        format!(
            "Workload: {} deliveries of {} events ({} first deliveries, then {} duplicates), {} concurrent, \
             {}-byte Standard Webhooks bodies; {} execution environments (processes) per function; one moto server.\n",
            o.deliveries,
            o.events,
            o.events,
            o.deliveries - o.events,
            o.concurrency,
            o.body_bytes,
            o.concurrency
        ),
    );
    push(
        &mut s,
        format!(
            "| figure | {} | ratio ours/peer |",
            runs.iter().map(|r| r.name).collect::<Vec<_>>().join(" | ")
        ),
    );
    push(
        &mut s,
        format!("| --- |{} --- |", " ---: |".repeat(runs.len())),
    );
    type Row = Box<dyn Fn(&Run) -> f64>;
    let rows: Vec<(&str, Row, usize)> = vec![
        (
            "events per second (all deliveries; moto-bound)",
            Box::new(|r: &Run| {
                (r.first.deliveries + r.duplicates.deliveries) as f64
                    / (r.first.wall + r.duplicates.wall).as_secs_f64()
            }),
            0,
        ),
        (
            "CPU seconds per 1000 events (all deliveries)",
            Box::new(|r: &Run| {
                (r.first.cpu_secs + r.duplicates.cpu_secs) * 1000.0
                    / (r.first.deliveries + r.duplicates.deliveries) as f64
            }),
            3,
        ),
        (
            "CPU seconds per 1000 first deliveries",
            Box::new(|r: &Run| r.first.cpu_secs * 1000.0 / r.first.deliveries as f64),
            3,
        ),
        (
            "CPU seconds per 1000 duplicates",
            Box::new(|r: &Run| {
                r.duplicates.cpu_secs * 1000.0 / r.duplicates.deliveries.max(1) as f64
            }),
            3,
        ),
        (
            "CPU seconds per 1000 forged deliveries (401, no AWS call)",
            Box::new(|r: &Run| r.forged.cpu_secs * 1000.0 / r.forged.deliveries.max(1) as f64),
            3,
        ),
        (
            "CPU seconds per 1000 events, schedstat (ns-exact, live threads)",
            Box::new(|r: &Run| {
                (r.first.sched_secs + r.duplicates.sched_secs) * 1000.0
                    / (r.first.deliveries + r.duplicates.deliveries) as f64
            }),
            3,
        ),
        (
            "AWS calls per event (all deliveries)",
            Box::new(|r: &Run| {
                (r.first.calls_total() + r.duplicates.calls_total()) as f64
                    / (r.first.deliveries + r.duplicates.deliveries) as f64
            }),
            2,
        ),
        (
            "AWS calls per first delivery",
            Box::new(|r: &Run| r.first.calls_total() as f64 / r.first.deliveries as f64),
            2,
        ),
        (
            "AWS calls per duplicate",
            Box::new(|r: &Run| {
                r.duplicates.calls_total() as f64 / r.duplicates.deliveries.max(1) as f64
            }),
            2,
        ),
        (
            "duplicates stopped before the queue",
            Box::new(|r: &Run| r.duplicates.deliveries.saturating_sub(r.duplicates.sends()) as f64),
            0,
        ),
        (
            "new TCP connections to AWS during the run",
            Box::new(|r: &Run| (r.first.connections + r.duplicates.connections) as f64),
            0,
        ),
        (
            "TCP connections to the Runtime API (all processes, whole run)",
            Box::new(|r: &Run| r.runtime_connections as f64),
            0,
        ),
        (
            "init CPU seconds per process",
            Box::new(|r: &Run| r.init_cpu_secs / r.processes as f64),
            3,
        ),
        (
            "peak RSS per process, MiB",
            Box::new(|r: &Run| r.peak_rss_kib as f64 / 1024.0),
            1,
        ),
    ];
    for (label, f, digits) in &rows {
        let values: Vec<f64> = runs.iter().map(f).collect();
        let cells: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
        let r = if values.len() == 2 {
            ratio(values[0], values[1])
        } else {
            "—".into()
        };
        push(&mut s, format!("| {label} | {} | {r} |", cells.join(" | ")));
    }
    push(&mut s, String::new());
    for r in runs {
        push(
            &mut s,
            format!(
                "- {}: {} first deliveries made calls {:?}; {} duplicates {:?}; {} forged {:?} ({} answered 401); \
                 answers: {} accepted, {} replayed (marked), {} other; \
                 {} ledger items, {} messages on its queue; wall {:.2} s + {:.2} s",
                r.name,
                r.first.deliveries,
                r.first.calls,
                r.duplicates.deliveries,
                r.duplicates.calls,
                r.forged.deliveries,
                r.forged.calls,
                r.forged.answers.unauthorized,
                r.first.answers.ok_first + r.duplicates.answers.ok_first,
                r.first.answers.ok_replayed + r.duplicates.answers.ok_replayed,
                r.first.answers.other + r.duplicates.answers.other,
                r.items,
                r.messages,
                r.first.wall.as_secs_f64(),
                r.duplicates.wall.as_secs_f64()
            ),
        );
    }
    if !inits.is_empty() {
        push(&mut s, String::new());
        push(
            &mut s,
            format!(
                "Init duration (process start to the first Runtime API poll), {} starts each:\n",
                o.init_runs
            ),
        );
        push(&mut s, "| function | median ms | min ms | max ms |".into());
        push(&mut s, "| --- | ---: | ---: | ---: |".into());
        for (name, d) in inits {
            let (med, min, max) = median_ms(d);
            push(
                &mut s,
                format!("| {name} | {med:.1} | {min:.1} | {max:.1} |"),
            );
        }
    }
    if !zips.is_empty() {
        push(&mut s, String::new());
        if let Some(note) = &o.zip_note {
            push(&mut s, format!("Release zips ({note}):\n"));
        } else {
            push(&mut s, "Release zips:\n".into());
        }
        push(
            &mut s,
            "| function | zip bytes | zip MiB | unzipped bootstrap MiB |".into(),
        );
        push(&mut s, "| --- | ---: | ---: | ---: |".into());
        for (name, zip, unpacked) in zips {
            push(
                &mut s,
                format!(
                    "| {name} | {zip} | {:.2} | {:.2} |",
                    *zip as f64 / 1048576.0,
                    *unpacked as f64 / 1048576.0
                ),
            );
        }
    }
    s
}

// ---------------------------------------------------------------------------------------

#[tokio::main]
async fn main() -> Result<()> {
    let o = options()?;
    let root = moto::workspace_root();
    let python = moto::python()?;
    for p in [&o.receiver, &o.consumer] {
        if !p.exists() {
            bail!(
                "{} not found: build the release binaries first (make bench does)",
                p.display()
            );
        }
    }

    eprintln!("bench: starting moto");
    let endpoint = moto::shared().to_owned();
    let sdk = inbox::app::sdk_config().await;
    let aws = Aws {
        dynamo: aws_sdk_dynamodb::Client::new(&sdk),
        sqs: aws_sdk_sqs::Client::new(&sdk),
    };
    let template = Template::load(&provision::template_path())?;
    let ours = provision::provision(&template, &aws.dynamo, &aws.sqs, "bench").await?;
    let (peer_table, peer_queue) = aws.peer_resources("bench").await?;

    let receiver = Function {
        name: "receiver",
        program: o.receiver.clone(),
        args: Vec::new(),
        env: vec![
            ("LEDGER_TABLE".into(), ours.table.clone()),
            ("QUEUE_URL".into(), ours.queue_url.clone()),
            ("WEBHOOK_SOURCES".into(), SOURCES.into()),
            ("INBOX_TEST_WHSEC".into(), TEST_WHSEC.into()),
            ("AWS_LAMBDA_LOG_FORMAT".into(), "JSON".into()),
            ("AWS_LAMBDA_LOG_LEVEL".into(), "INFO".into()),
        ],
    };
    let consumer = Function {
        name: "consumer",
        program: o.consumer.clone(),
        args: Vec::new(),
        env: vec![
            ("LEDGER_TABLE".into(), ours.table.clone()),
            ("WEBHOOK_SOURCES".into(), SOURCES.into()),
            ("FORWARD_URL".into(), "http://127.0.0.1:9/events".into()),
            ("AWS_LAMBDA_LOG_FORMAT".into(), "JSON".into()),
            ("AWS_LAMBDA_LOG_LEVEL".into(), "INFO".into()),
            ("AWS_ENDPOINT_URL".into(), endpoint.clone()),
        ],
    };
    let peer = Function {
        name: "powertools-peer",
        program: python.clone(),
        args: vec![
            root.join("bench/python_runtime.py").display().to_string(),
            "powertools_handler.handler".into(),
        ],
        env: vec![
            ("PEER_TABLE".into(), peer_table.clone()),
            ("PEER_QUEUE_URL".into(), peer_queue.clone()),
            ("PEER_WHSEC".into(), TEST_WHSEC.into()),
            ("POWERTOOLS_SERVICE_NAME".into(), "bench".into()),
            ("PYTHONDONTWRITEBYTECODE".into(), "".into()),
        ],
    };

    let mut runs = Vec::new();
    eprintln!("bench: receiver ({} deliveries)", o.deliveries);
    runs.push(run_function(&receiver, &o, &endpoint, &ours.table, &ours.queue_url, &aws).await?);
    if !o.skip_peer {
        eprintln!("bench: powertools peer ({} deliveries)", o.deliveries);
        runs.push(run_function(&peer, &o, &endpoint, &peer_table, &peer_queue, &aws).await?);
    }

    let mut inits = Vec::new();
    if o.init_runs > 0 {
        let mut init_peer = peer.clone();
        init_peer
            .env
            .push(("AWS_ENDPOINT_URL".into(), endpoint.clone()));
        let mut init_receiver = receiver.clone();
        init_receiver
            .env
            .push(("AWS_ENDPOINT_URL".into(), endpoint.clone()));
        let mut fs = vec![init_receiver, consumer];
        if !o.skip_peer {
            fs.push(init_peer);
        }
        for f in &fs {
            eprintln!(
                "bench: init duration of {} ({} starts)",
                f.name, o.init_runs
            );
            inits.push((f.name.to_owned(), init_durations(f, o.init_runs).await?));
        }
    }

    let mut zips = Vec::new();
    for (name, path) in &o.zips {
        let (zip, unpacked) = zip_sizes(path)?;
        zips.push((name.clone(), zip, unpacked));
    }

    let text = report(&o, &runs, &inits, &zips);
    println!("{text}");
    if let Some(out) = &o.out {
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(out, &text)?;
        eprintln!("bench: written to {}", out.display());
    }
    Ok(())
}
