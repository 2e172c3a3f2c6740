//! The counting proxy in front of moto: every AWS call of a function goes through it, so
//! both functions' calls (by operation) and new TCP connections are counted by the same
//! instrument. It adds a latency to every call, by service (DynamoDB, SQS): the same-region
//! round trip a deployed function would wait for (see [`Latency`]), so that the time a sender
//! waits is measured with the round trips in it. For the bill it also sums the billing units
//! of the calls ([`units`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use http::{header, Request, Response};
use http_body_util::Full;
use hyper::body::Bytes;
use tokio::net::TcpListener;

use crate::http::{respond, serve, HttpResponse};

/// The latency the proxy adds to each call, by service.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    pub dynamodb: Duration,
    pub sqs: Duration,
}

impl Latency {
    fn of(&self, target: Option<&str>) -> Duration {
        match target {
            Some(t) if t.starts_with("DynamoDB") => self.dynamodb,
            // SQS: JSON protocol (`AmazonSQS.SendMessage`) or query protocol (no target).
            _ => self.sqs,
        }
    }
}

/// Calls and billing units, by operation name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calls {
    pub count: BTreeMap<String, u64>,
    /// DynamoDB: write or read request units; SQS: 64 KiB chunks. See [`units`].
    pub units: BTreeMap<String, f64>,
    /// Milliseconds the callers waited on each call, summed: the added latency plus moto's
    /// answer (its queueing included), as the proxy saw it.
    pub wait_ms: BTreeMap<String, f64>,
}

/// The proxy on a local port: calls by operation name, accepted TCP connections.
#[derive(Clone)]
pub struct Proxy {
    port: u16,
    calls: Arc<Mutex<Calls>>,
    connections: Arc<AtomicU64>,
}

impl Proxy {
    /// Forwards to `upstream` (moto), `latency` added to every call.
    pub async fn start(upstream: &str, latency: Latency) -> Result<Proxy> {
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
                    let target = req
                        .headers()
                        .get("x-amz-target")
                        .and_then(|t| t.to_str().ok());
                    let delay = latency.of(target);
                    let u = units(&op, req.body());
                    {
                        let mut c = calls.lock().expect("calls");
                        *c.count.entry(op.clone()).or_default() += 1;
                        *c.units.entry(op.clone()).or_default() += u;
                    }
                    let started = std::time::Instant::now();
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    let resp = forward(&client, &upstream, req)
                        .await
                        .unwrap_or_else(|e| respond(502, format!("proxy: {e:#}")));
                    let waited = started.elapsed().as_secs_f64() * 1000.0;
                    *calls.lock().expect("calls").wait_ms.entry(op).or_default() += waited;
                    resp
                }
            },
            proxy.connections.clone(),
        );
        Ok(proxy)
    }

    /// `AWS_ENDPOINT_URL` for the functions.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The calls by operation and the connections so far.
    pub fn snapshot(&self) -> (Calls, u64) {
        (
            self.calls.lock().expect("calls").clone(),
            self.connections.load(Ordering::SeqCst),
        )
    }
}

/// The billing units of one call, from its request. A DynamoDB write: 1 here, one write
/// request unit per started KiB of the item, which the bill scales by the largest item the
/// run left in the table (a write refused by its condition is billed too). A strongly
/// consistent read of an item under 4 KiB: one read unit, an eventually consistent one half.
/// An SQS request: one per started 64 KiB chunk of its payload (the request body, an upper
/// bound). Other calls: 0.
pub fn units(operation: &str, body: &[u8]) -> f64 {
    match operation {
        "PutItem" | "UpdateItem" | "DeleteItem" => 1.0,
        "GetItem" => {
            if String::from_utf8_lossy(body).contains("\"ConsistentRead\":true") {
                1.0
            } else {
                0.5
            }
        }
        "SendMessage" | "ReceiveMessage" | "DeleteMessage" => {
            body.len().max(1).div_ceil(65536) as f64
        }
        _ => 0.0,
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

/// Sends `req` on to `upstream` and hands back its answer.
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
