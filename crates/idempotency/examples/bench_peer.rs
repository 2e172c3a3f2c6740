//! make bench-idempotency's peer (bench/idempotency/run.py; BENCHMARKS.md, "Idempotency library
//! beside Powertools"): the bench's trivial handler (`{"ok": true}`, keyed on `/order`) on the
//! DynamoDB store, through the paths the Powertools peers take: a first call, a duplicate after
//! completion, a duplicate while the first is inside the handler, a retry after a call that
//! timed out inside the handler. The runner's counting
//! proxy sees each DynamoDB call; this process marks where each path starts.
//!
//! Environment: BENCH_TABLE (partition key `pk`), BENCH_PROXY (host:port of the proxy, for the
//! marks), BENCH_CACHE (1: the in-process result cache on, 4 MiB), BENCH_SPAWN_NS (the runner's
//! clock when it started this process), and the standard AWS_ENDPOINT_URL / AWS_REGION /
//! credentials. Prints one JSON line: init time, peak RSS and each path's outcome.

use std::io::{Read, Write};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use lambda_idempotency::dynamodb::DynamoStore;
use lambda_idempotency::{system_now_ms, Deadline, Error, Idempotency, Key};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// A mark in the proxy's log: the calls after it belong to the path `name`.
fn mark(name: &str) {
    let proxy = std::env::var("BENCH_PROXY").expect("BENCH_PROXY");
    let mut s = std::net::TcpStream::connect(&proxy).expect("the proxy");
    write!(
        s,
        "GET /__bench/mark?name={name} HTTP/1.1\r\nHost: {proxy}\r\nConnection: close\r\n\r\n"
    )
    .expect("mark");
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).expect("mark");
}

fn vmhwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Where the handler waits in the in-flight path: `entered` when inside, then `release`.
struct Gate {
    entered: Notify,
    release: Notify,
}

async fn call(
    idem: &Idempotency<DynamoStore>,
    event: &Value,
    request_id: &str,
    timeout_ms: i64,
    gate: Option<&Gate>,
) -> Value {
    let payload = serde_json::to_vec(event).expect("json");
    let key = Key::from_json_pointer(&payload, "/order").expect("key");
    // The invocation's deadline, as the Powertools peers' contexts give theirs.
    let deadline = Deadline::at_epoch_ms(system_now_ms() + timeout_ms).with_request_id(request_id);
    let out = idem
        .run(&key, &payload, &deadline, || async {
            if let Some(gate) = gate {
                gate.entered.notify_one();
                gate.release.notified().await;
            }
            Ok::<_, String>(json!({ "ok": true }))
        })
        .await;
    match out {
        Ok(out) => json!({ "result": out.value, "replayed": out.replayed }),
        Err(Error::InFlight { .. }) => json!({ "error": "InFlight" }),
        Err(err) => json!({ "error": err.to_string() }),
    }
}

/// The paths, each after its mark: their answers.
async fn paths(idem: &Idempotency<DynamoStore>) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let first = json!({ "order": "o-1", "amount": 42 });
    mark("first");
    out.insert(
        "first".into(),
        call(idem, &first, "r-1", 30_000, None).await,
    );
    mark("dup_done");
    out.insert(
        "dup_done".into(),
        call(idem, &first, "r-2", 30_000, None).await,
    );

    let held = json!({ "order": "o-2", "amount": 42 });
    let gate = Gate {
        entered: Notify::new(),
        release: Notify::new(),
    };
    mark("inflight_held");
    let (held_first, dup) = tokio::join!(call(idem, &held, "r-3", 30_000, Some(&gate)), async {
        gate.entered.notified().await;
        mark("inflight_dup");
        let dup = call(idem, &held, "r-4", 30_000, None).await;
        mark("inflight_rest");
        gate.release.notify_one();
        dup
    });
    out.insert("inflight_dup".into(), dup);
    out.insert("inflight_first".into(), held_first);

    // A call that times out inside the handler (a 1 s invocation, dropped as Lambda ends it),
    // then a retry once its lease has run out.
    let lost = json!({ "order": "o-3", "amount": 42 });
    let never = Gate {
        entered: Notify::new(),
        release: Notify::new(),
    };
    mark("abandoned");
    let abandoned = call(idem, &lost, "r-5", 1_000, Some(&never));
    let _ = tokio::time::timeout(std::time::Duration::from_millis(1_500), abandoned).await;
    mark("retry_after_timeout");
    let retry = call(idem, &lost, "r-6", 30_000, None).await;
    out.insert("retry_after_timeout".into(), retry);
    mark("end");
    out
}

#[tokio::main]
async fn main() {
    let t0 = Instant::now();
    let table = std::env::var("BENCH_TABLE").expect("BENCH_TABLE");
    let config = aws_config::load_from_env().await;
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&config), table);
    let mut idem = Idempotency::new(store);
    if std::env::var("BENCH_CACHE").as_deref() == Ok("1") {
        idem = idem.cache_bytes(4 << 20);
    }
    let init_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let ready_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();

    let out = paths(&idem).await;

    let spawn_ns: u128 = std::env::var("BENCH_SPAWN_NS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(ready_ns);
    println!(
        "{}",
        json!({
            "init_ms": init_ms,
            "spawn_to_ready_ms": (ready_ns.saturating_sub(spawn_ns)) as f64 / 1e6,
            "vmhwm_kb": vmhwm_kb(),
            "outcomes": out,
        })
    );
}
