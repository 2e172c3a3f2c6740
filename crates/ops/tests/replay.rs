//! `inbox-ops replay` and `inbox-ops lookup --body` as an operator runs them: the binary
//! against a local stack whose receiver archives (`ARCHIVE_BODIES`, the payload bucket), the
//! consumer driven by the bridge and forwarding to a system of record on loopback.
//!
//! Two events accepted and completed (each forwarded once); then
//! - `replay --key K --dry-run` lists K and sends nothing;
//! - `replay --key K` sends it, and the consumer forwards K once more with
//!   `Webhook-Replay-Id`, the other key not at all;
//! - the same replay again (`--replay-id`) forwards nothing more;
//! - `lookup --body K` prints the body byte for byte;
//! - `replay --source S --from T --to T` over the hour(s) of receipt selects both events.
//!
//! The selection and the messages themselves are tested at the library level in
//! `tests/large_and_replay.rs`.

use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, ArchivingConsumer, LocalAws, SystemOfRecord};
use inbox::forward::HttpForwarder;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::receiver::ReceiverSettings;

/// The consumer as deployed, reading bodies behind pointers from the stack's bucket.
type Cx = ArchivingConsumer<HttpForwarder>;

const HOUR_MS: i64 = 3_600_000;

/// Runs the `inbox-ops` binary (it finds the local server through the inherited
/// `AWS_ENDPOINT_URL`; the table, queue and bucket only from its flags): exit code, stdout as
/// bytes, stderr.
async fn inbox_ops(args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
        .args(args)
        .env_remove("QUEUE_URL")
        .env_remove("LEDGER_TABLE")
        .env_remove("PAYLOAD_BUCKET")
        .output()
        .await
        .expect("run inbox-ops");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `inbox-ops replay <args> --table --queue --bucket` of the stack; it must exit 0.
async fn replay(aws: &LocalAws, args: &[&str]) -> (String, String) {
    let r = &aws.resources;
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    all.extend_from_slice(&[
        "--table",
        &r.table,
        "--queue",
        &r.queue_url,
        "--bucket",
        &r.payload_bucket,
    ]);
    let (code, out, err) = inbox_ops(&all).await;
    assert_eq!(code, 0, "{all:?}: {err}");
    (String::from_utf8_lossy(&out).into_owned(), err)
}

/// The keys a dry run lists (the first column of each line).
fn listed_keys(out: &str) -> Vec<String> {
    let mut keys: Vec<String> = out
        .lines()
        .map(|line| line.split('\t').next().unwrap_or_default().to_owned())
        .collect();
    keys.sort();
    keys
}

/// Pumps until the queue has nothing visible (bounded).
async fn drain(b: &Bridge, cx: &Cx) {
    b.drain(|e| testkit::consume(cx, e)).await.expect("drained");
}

/// Messages on the webhook queue, visible and in flight.
async fn queued(aws: &LocalAws) -> u64 {
    let (visible, in_flight) = aws.queue_counts(&aws.resources.queue_url).await;
    visible + in_flight
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn replay_by_key_and_by_hour_and_lookup_body_through_the_binary() {
    let aws = LocalAws::new("ops-replay").await;
    assert_eq!(
        aws.stack
            .consumer
            .environment
            .get("ARCHIVE_BODIES")
            .map(String::as_str),
        Some("true"),
        "the stack's consumer archives what replay reads"
    );
    let (rx, _) = aws.receiver_with_store(ReceiverSettings::default()).await;
    let sor = SystemOfRecord::start();
    let (cx, _): (Cx, _) = aws.archiving_consumer(testkit::forwarder(sor.url()));
    let mut b = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    b.retry_failed_now = true;

    // Bytes a lossy or trimmed print would change: non-ASCII, an escaped quote, a final newline.
    let one = "{\"action\":\"opened\",\"title\":\"caf\u{e9} \\\"na\u{ef}ve\\\" \u{2713}\"}\n"
        .as_bytes()
        .to_vec();
    let two = br#"{"action":"closed","number":2}"#.to_vec();
    let (k1, k2) = ("github:ops-rp-1", "github:ops-rp-2");
    for (id, body) in [("ops-rp-1", &one), ("ops-rp-2", &two)] {
        let resp = rx
            .handle(post("github", &github_headers(id, body), body))
            .await;
        assert_eq!(resp.status(), 200, "{id}");
    }
    drain(&b, &cx).await;
    assert_eq!((sor.calls_for(k1), sor.calls_for(k2)), (1, 1), "each once");
    let ledger = aws.ledger();
    for key in [k1, k2] {
        let item = ledger.get(key).await.unwrap().expect("item");
        assert_eq!(item.status, Status::Completed, "{key}");
    }
    assert_eq!(queued(&aws).await, 0);

    // (1) A dry run lists the key and sends nothing.
    let (out, err) = replay(&aws, &["--key", k1, "--dry-run"]).await;
    assert_eq!(listed_keys(&out), [k1], "{out}");
    let line = out.lines().next().unwrap_or_default();
    let columns: Vec<&str> = line.split('\t').collect();
    assert_eq!(columns.len(), 4, "key, receipt, status, object: {line}");
    assert_eq!(columns[2], "COMPLETED", "{line}");
    assert!(columns[3].starts_with("archive/20"), "{line}");
    assert!(
        err.contains("dry run: 1 event(s) would be replayed"),
        "{err}"
    );
    assert_eq!(queued(&aws).await, 0, "a dry run sends nothing");

    // (2) The replay: sent, and forwarded once more with its id; the other key untouched.
    let (out, _) = replay(&aws, &["--key", k1, "--replay-id", "rp-ops-1"]).await;
    assert_eq!(out, "replay rp-ops-1: 1 event(s) sent\n");
    drain(&b, &cx).await;
    assert_eq!((sor.calls_for(k1), sor.calls_for(k2)), (2, 1), "once more");
    let replays: Vec<_> = sor
        .deliveries()
        .into_iter()
        .filter(|d| d.replay_id.is_some())
        .collect();
    assert_eq!(replays.len(), 1, "one replay forwarded");
    assert_eq!(replays[0].key, k1);
    assert_eq!(replays[0].replay_id.as_deref(), Some("rp-ops-1"));
    assert!(replays[0].body == one, "the archived bytes");
    let item = ledger.get(k1).await.unwrap().expect("item");
    assert_eq!(item.status, Status::Completed);
    assert!(item.replays.contains("rp-ops-1"), "{:?}", item.replays);

    // (3) The same replay again: the command runs, the side effect does not.
    let (out, _) = replay(&aws, &["--key", k1, "--replay-id", "rp-ops-1"]).await;
    assert!(out.starts_with("replay rp-ops-1: "), "{out}");
    drain(&b, &cx).await;
    assert_eq!(
        (sor.calls_for(k1), sor.calls_for(k2)),
        (2, 1),
        "nothing more"
    );
    assert_eq!(queued(&aws).await, 0);

    // (4) lookup --body: the body, byte for byte, of both.
    for (key, body) in [(k1, &one), (k2, &two)] {
        let (code, out, err) = inbox_ops(&[
            "lookup",
            "--table",
            &aws.resources.table,
            "--bucket",
            &aws.resources.payload_bucket,
            "--body",
            key,
        ])
        .await;
        assert_eq!(code, 0, "{key}: {err}");
        assert!(out == *body, "{key}: {:?}", String::from_utf8_lossy(&out));
    }

    // (5) By source and time: the hour (or hours) of receipt holds exactly the two events.
    let mut received = Vec::new();
    for key in [k1, k2] {
        received.push(ledger.get(key).await.unwrap().expect("item").received_at);
    }
    let first = received.iter().min().copied().unwrap_or_default();
    let last = received.iter().max().copied().unwrap_or_default();
    let from_ms = first - first.rem_euclid(HOUR_MS);
    let to_ms = last - last.rem_euclid(HOUR_MS) + HOUR_MS;
    let from = jiff::Timestamp::from_millisecond(from_ms)
        .expect("a time")
        .to_string();
    let to = to_ms.to_string();
    let (out, err) = replay(
        &aws,
        &[
            "--source",
            "github",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
        ],
    )
    .await;
    assert_eq!(listed_keys(&out), [k1, k2], "{out}");
    assert!(
        err.contains("dry run: 2 event(s) would be replayed"),
        "{err}"
    );
    // Another source's range: nothing.
    let (out, _) = replay(
        &aws,
        &[
            "--source",
            "stripe",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
        ],
    )
    .await;
    assert_eq!(out, "", "no stripe events");
    assert_eq!(queued(&aws).await, 0, "dry runs send nothing");
    assert_eq!((sor.calls_for(k1), sor.calls_for(k2)), (2, 1));
}
