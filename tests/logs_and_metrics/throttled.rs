//! A throttled forward and a dead letter, logged and counted.

use super::*;

/// A system of record that answers 429 (`Retry-After: 7`) to the key `github:logs-t` and 500 to
/// every other.
fn throttling_downstream() -> (String, Arc<tiny_http::Server>) {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
    let port = server.server_addr().to_ip().expect("IP").port();
    let s = server.clone();
    std::thread::spawn(move || {
        for mut request in s.incoming_requests() {
            let throttled = request
                .headers()
                .iter()
                .any(|h| h.field.equiv("Idempotency-Key") && h.value.as_str() == "github:logs-t");
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(request.as_reader(), &mut sink);
            let response = if throttled {
                tiny_http::Response::empty(429).with_header(
                    tiny_http::Header::from_bytes("Retry-After", "7").expect("a header"),
                )
            } else {
                tiny_http::Response::empty(500)
            };
            let _ = request.respond(response);
        }
    });
    (format!("http://127.0.0.1:{port}/events"), server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "sets the global subscriber: run by logs_and_metrics::in_its_own_process"]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn a_throttled_forward_and_a_dead_letter_are_logged_and_counted() {
    let logs = logs();
    let aws = LocalAws::new("logs-backpressure").await;
    let (url, server) = throttling_downstream();
    let (rx, rx_metrics) = aws.receiver(ReceiverSettings::default()).await;
    let (metrics, cx_metrics) = Metrics::memory("consumer");
    let cx = Consumer::new(
        testkit::test_sources(),
        aws.ledger(),
        HttpForwarder::new(url, Duration::from_secs(5)).expect("forwarder"),
        SystemClock,
        ConsumerSettings {
            max_concurrent_groups: 1,
            // The first real failure moves the message to the dead-letter queue.
            max_failures: 1,
            ..ConsumerSettings::default()
        },
        metrics,
    )
    .with_redelivery(SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    ));
    let bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");

    let x = body(20);
    let (s, _) = post(&rx, "github", &github_headers("logs-x", &x), &x).await;
    assert_eq!(s, 200);
    let (done, rid_dead) = invoke(
        &cx,
        bridge.event(&aws.receive_all(&aws.resources.queue_url).await),
    )
    .await;
    assert!(failed_ids(&done).is_empty(), "dead-lettered: reported done");
    let t = body(21);
    let (s, _) = post(&rx, "github", &github_headers("logs-t", &t), &t).await;
    assert_eq!(s, 200);
    let (throttled, rid_throttled) = invoke(
        &cx,
        bridge.event(&aws.receive_all(&aws.resources.queue_url).await),
    )
    .await;
    assert_eq!(
        failed_ids(&throttled).len(),
        1,
        "throttled: reported failed"
    );
    server.unblock();

    let text = logs.text();
    let lines = parsed(&text);
    let one = |name: &str, key: &str, rid: &str| -> &Line {
        let found = outcome(&lines, name, Some(key), rid);
        assert_eq!(
            found.len(),
            1,
            "one `{name}` line for {key} in {rid}:\n{text}"
        );
        assert_eq!(found[0].get("source"), Some("github"), "{}", found[0].0);
        found[0]
    };
    let failed = one("failed", "github:logs-x", &rid_dead);
    assert_eq!(
        failed.get("error"),
        Some("forward answered 500 Internal Server Error")
    );
    one("dead_lettered", "github:logs-x", &rid_dead);
    let line = one("throttled", "github:logs-t", &rid_throttled);
    assert_eq!(
        line.get("error"),
        Some("throttled: forward answered 429 Too Many Requests, retry after 7 s")
    );
    assert!(!text.contains(BODY_MARKER), "no body in a log line");

    let emf = cx_metrics.lock().expect("metrics").clone();
    for (metric, want) in [
        (Metric::Failed, 1),
        (Metric::DeadLettered, 1),
        (Metric::Throttled, 1),
        (Metric::Completed, 0),
    ] {
        assert_eq!(tally(&emf, "github", metric), want, "{}", metric.name());
    }
    let rx_emf = rx_metrics.lock().expect("metrics").clone();
    assert_eq!(tally(&rx_emf, "github", Metric::Accepted), 2);
    let dead = aws.receive_all(&aws.resources.dlq_url).await;
    assert_eq!(dead.len(), 1, "the copy on the dead-letter queue");
    let envelope = inbox::queue::Envelope::parse(dead[0].body().expect("body")).expect("envelope");
    assert_eq!(envelope.key, "github:logs-x");
}
