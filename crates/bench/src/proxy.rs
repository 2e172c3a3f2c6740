//! The counting proxy in front of moto: every AWS call of a function goes through it, so every
//! function's calls and new TCP connections are counted by the same instrument.
//!
//! Each request is classified ([`crate::classify`]: service and operation) and given its price
//! line ([`crate::price::line_of`]) and billing quantity ([`crate::meter`]); one that cannot be
//! is forwarded all the same but recorded as a failure, and [`Proxy::check`] fails the run
//! with it. Before forwarding, the proxy waits the same-region round trip of the call's
//! service ([`Latency`]), so that the time a sender waits is measured with the round trips in
//! it.
//!
//! A proxy has one port per *lane*, each lane one function process's `AWS_ENDPOINT_URL`: a
//! process runs one invocation at a time, so a lane's calls, with their times ([`Span`]), are
//! one invocation's in order. That is how the sequential round trips of an invocation are
//! counted ([`rounds`]) and how long it waited on moto itself ([`union_ms`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use http::{header, Request, Response};
use http_body_util::Full;
use hyper::body::Bytes;
use tokio::net::TcpListener;

use crate::classify::{classify, Op};
use crate::http::{respond, serve, HttpResponse};
use crate::meter::meter;
use crate::options::Latency;
use crate::price::{line_of, Line};

/// What the proxy counted of one kind of call.
#[derive(Clone, Debug, PartialEq)]
pub struct Metered {
    /// The price line it is billed on.
    pub line: Line,
    pub count: u64,
    /// Its billing quantity, in the line's unit ([`crate::meter`]).
    pub units: f64,
    /// S3: the bytes of the objects it wrote.
    pub stored_bytes: f64,
    /// Milliseconds the callers waited on it, summed: the added latency plus moto's answer
    /// (its queueing included), as the proxy saw it.
    pub wait_ms: f64,
}

impl Metered {
    /// Nothing counted yet, on `line`.
    pub fn on(line: Line) -> Metered {
        Metered {
            line,
            count: 0,
            units: 0.0,
            stored_bytes: 0.0,
            wait_ms: 0.0,
        }
    }

    /// `self` less `before` (an earlier snapshot of the same calls).
    fn less(&self, before: Option<&Metered>) -> Metered {
        let Some(b) = before else {
            return self.clone();
        };
        Metered {
            line: self.line,
            count: self.count - b.count,
            units: self.units - b.units,
            stored_bytes: self.stored_bytes - b.stored_bytes,
            wait_ms: self.wait_ms - b.wait_ms,
        }
    }

    /// Adds `other`'s figures to these.
    pub fn add(&mut self, other: &Metered) {
        self.count += other.count;
        self.units += other.units;
        self.stored_bytes += other.stored_bytes;
        self.wait_ms += other.wait_ms;
    }
}

/// Calls by kind.
pub type Calls = BTreeMap<Op, Metered>;

/// The calls of `after` less those of `before`, where any were made in between.
pub fn calls_since(after: &Calls, before: &Calls) -> Calls {
    after
        .iter()
        .map(|(op, m)| (op.clone(), m.less(before.get(op))))
        .filter(|(_, m)| m.count > 0)
        .collect()
}

/// The sum of several sets of calls.
pub fn calls_sum<'a>(sets: impl IntoIterator<Item = &'a Calls>) -> Calls {
    let mut out = Calls::new();
    for set in sets {
        for (op, m) in set {
            out.entry(op.clone())
                .or_insert_with(|| Metered::on(m.line))
                .add(m);
        }
    }
    out
}

/// One call's times: when it arrived, when it was forwarded to moto (the added latency
/// waited), when moto's answer was ready.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub start: Instant,
    pub forwarded: Instant,
    pub end: Instant,
}

/// What the proxy shares between its lanes.
#[derive(Default)]
struct Counts {
    calls: Mutex<Calls>,
    failures: Mutex<Vec<String>>,
    connections: Arc<AtomicU64>,
    lanes: Mutex<Vec<Vec<Span>>>,
}

/// The proxy: a port per lane, all counted together.
#[derive(Clone)]
pub struct Proxy {
    ports: Vec<u16>,
    counts: Arc<Counts>,
}

impl Proxy {
    /// Forwards to `upstream` (moto) on `lanes` ports, `latency` added to every call.
    pub async fn start(upstream: &str, latency: Latency, lanes: usize) -> Result<Proxy> {
        let counts = Arc::new(Counts::default());
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(64)
            .build()?;
        let upstream: Arc<str> = upstream.trim_end_matches('/').into();
        let mut ports = Vec::new();
        for lane in 0..lanes.max(1) {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            ports.push(listener.local_addr()?.port());
            counts.lanes.lock().expect("lanes").push(Vec::new());
            let (client, upstream, shared) = (client.clone(), upstream.clone(), counts.clone());
            serve(
                listener,
                move |req: Request<Bytes>| {
                    let (client, upstream, shared) =
                        (client.clone(), upstream.clone(), shared.clone());
                    async move { shared.handle(&client, &upstream, lane, latency, req).await }
                },
                counts.connections.clone(),
            );
        }
        Ok(Proxy { ports, counts })
    }

    /// `AWS_ENDPOINT_URL` of lane `lane` (lane 0 where there are fewer).
    pub fn endpoint(&self, lane: usize) -> String {
        let port = self
            .ports
            .get(lane)
            .or(self.ports.first())
            .copied()
            .unwrap_or(0);
        format!("http://127.0.0.1:{port}")
    }

    /// The calls and the connections so far.
    pub fn snapshot(&self) -> (Calls, u64) {
        (
            self.counts.calls.lock().expect("calls").clone(),
            self.counts.connections.load(Ordering::SeqCst),
        )
    }

    /// The calls of lane `lane` that arrived in `[from, to)`, in order.
    pub fn spans(&self, lane: usize, from: Instant, to: Instant) -> Vec<Span> {
        self.counts.lanes.lock().expect("lanes")[lane]
            .iter()
            .filter(|s| s.start >= from && s.start < to)
            .copied()
            .collect()
    }

    /// Its number of lanes.
    pub fn lanes(&self) -> usize {
        self.ports.len()
    }

    /// Fails with every request that could not be classified, metered or priced so far.
    pub fn check(&self, who: &str) -> Result<()> {
        let failures = self.counts.failures.lock().expect("failures");
        if let Some(first) = failures.first() {
            bail!(
                "{who}: {} AWS request(s) the bench cannot bill, e.g. {first}; every request must be classified and priced (crates/bench/src/classify.rs, bill.rs)",
                failures.len()
            );
        }
        Ok(())
    }
}

impl Counts {
    /// Classifies, meters and forwards one request; counts it.
    async fn handle(
        &self,
        client: &reqwest::Client,
        upstream: &str,
        lane: usize,
        latency: Latency,
        req: Request<Bytes>,
    ) -> HttpResponse {
        capture(&req);
        let priced = classify(&req).and_then(|op| line_of(&op).map(|line| (op, line)));
        let delay = priced
            .as_ref()
            .map_or(Duration::ZERO, |(op, _)| latency.of(op.service));
        let copy = shallow_copy(&req);
        let start = Instant::now();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let forwarded = Instant::now();
        let (resp, response_len) = forward(client, upstream, req)
            .await
            .unwrap_or_else(|e| (respond(502, format!("proxy: {e:#}")), 0));
        let end = Instant::now();
        let metered =
            priced.and_then(|(op, line)| meter(&op, &copy, response_len).map(|q| (op, line, q)));
        match metered {
            Ok((op, line, q)) => {
                let mut calls = self.calls.lock().expect("calls");
                let m = calls.entry(op).or_insert_with(|| Metered::on(line));
                m.count += 1;
                m.units += q.units;
                m.stored_bytes += q.stored_bytes;
                m.wait_ms += (end - start).as_secs_f64() * 1000.0;
            }
            Err(why) => self.failures.lock().expect("failures").push(why),
        }
        self.lanes.lock().expect("lanes")[lane].push(Span {
            start,
            forwarded,
            end,
        });
        resp
    }
}

/// The sequential round trips among `spans` (one invocation's calls, or a lane's over a
/// phase): calls that overlap in time count once, as one round trip made concurrently.
pub fn rounds(spans: &[Span]) -> u64 {
    let mut sorted: Vec<(Instant, Instant)> = spans.iter().map(|s| (s.start, s.end)).collect();
    sorted.sort_unstable();
    let mut n = 0;
    let mut until: Option<Instant> = None;
    for (start, end) in sorted {
        match until {
            Some(u) if start < u => until = Some(u.max(end)),
            _ => {
                n += 1;
                until = Some(end);
            }
        }
    }
    n
}

/// Milliseconds during which at least one of `intervals` was open.
pub fn union_ms(intervals: impl IntoIterator<Item = (Instant, Instant)>) -> f64 {
    let mut sorted: Vec<(Instant, Instant)> = intervals.into_iter().collect();
    sorted.sort_unstable();
    let mut total = Duration::ZERO;
    let mut open: Option<(Instant, Instant)> = None;
    for (start, end) in sorted {
        open = match open {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = open {
        total += e - s;
    }
    total.as_secs_f64() * 1000.0
}

/// With `BENCH_CAPTURE=FILE`, appends the request's shape to FILE as a JSON line (method,
/// path and query, the headers classifying reads, the body's first 600 bytes): how the
/// classifier's test fixtures (classify/tests.rs) were taken from the SDKs' own requests.
fn capture(req: &Request<Bytes>) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("BENCH_CAPTURE") else {
        return;
    };
    let headers: serde_json::Map<String, serde_json::Value> = req
        .headers()
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "x-amz-date" | "amz-sdk-invocation-id" | "user-agent" | "x-amz-user-agent"
            )
        })
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
        .collect();
    let body = String::from_utf8_lossy(&req.body()[..req.body().len().min(600)]).into_owned();
    let line = serde_json::json!({
        "method": req.method().as_str(),
        "uri": req.uri().path_and_query().map_or("/", |p| p.as_str()),
        "headers": headers,
        "body": body,
    });
    // One write per line: appends from concurrent calls do not interleave.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// The request's method, URI, headers and body (what classifying and metering read).
fn shallow_copy(req: &Request<Bytes>) -> Request<Bytes> {
    let mut copy = Request::new(req.body().clone());
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.headers_mut() = req.headers().clone();
    copy
}

/// Sends `req` on to `upstream`; its answer and the answer's body length.
async fn forward(
    client: &reqwest::Client,
    upstream: &str,
    req: Request<Bytes>,
) -> Result<(HttpResponse, usize)> {
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
    let bytes = resp.bytes().await?;
    let len = bytes.len();
    Ok((out.body(Full::new(bytes))?, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Service;

    fn span(base: Instant, from_ms: u64, to_ms: u64) -> Span {
        let at = |ms| base + Duration::from_millis(ms);
        Span {
            start: at(from_ms),
            forwarded: at(from_ms),
            end: at(to_ms),
        }
    }

    #[test]
    fn overlapping_calls_are_one_round_trip() {
        let t = Instant::now();
        // Three calls one after another, then two at once: four round trips.
        let spans = [
            span(t, 0, 5),
            span(t, 6, 20),
            span(t, 21, 30),
            span(t, 40, 50),
            span(t, 45, 60),
        ];
        assert_eq!(rounds(&spans), 4);
        assert_eq!(rounds(&spans[..1]), 1);
        assert_eq!(rounds(&[]), 0);
        // 5 + 14 + 9 + (40..60) = 48 ms open.
        let ms = union_ms(spans.iter().map(|s| (s.start, s.end)));
        assert!((ms - 48.0).abs() < 1e-6, "{ms}");
    }

    #[test]
    fn calls_since_keeps_what_grew() {
        let op = Op::new(Service::Sqs, "SendMessage");
        let other = Op::new(Service::DynamoDb, "PutItem");
        let m = |count: u64| Metered {
            count,
            units: count as f64,
            ..Metered::on(Line::Sqs)
        };
        let before: Calls = [(op.clone(), m(2)), (other.clone(), m(1))].into();
        let after: Calls = [(op.clone(), m(5)), (other.clone(), m(1))].into();
        let since = calls_since(&after, &before);
        assert_eq!(since.len(), 1);
        assert_eq!(since[&op].count, 3);
        assert_eq!(calls_sum([&before, &since])[&op].count, 5);
    }
}

#[cfg(test)]
mod live_tests;
