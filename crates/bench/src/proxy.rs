//! The counting proxy in front of moto: every AWS call of a function goes through it, so
//! both functions' calls (by operation) and new TCP connections are counted by the same
//! instrument; it can add latency to every call (a slower AWS).

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

/// The proxy on a local port: calls by operation name, accepted TCP connections.
#[derive(Clone)]
pub struct Proxy {
    port: u16,
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
    connections: Arc<AtomicU64>,
}

impl Proxy {
    /// Forwards to `upstream` (moto), `delay` added to every call.
    pub async fn start(upstream: &str, delay: Duration) -> Result<Proxy> {
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

    /// `AWS_ENDPOINT_URL` for the functions.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The calls by operation and the connections so far.
    pub fn snapshot(&self) -> (BTreeMap<String, u64>, u64) {
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
