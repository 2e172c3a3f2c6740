//! The dead-letter tools end to end against the local AWS API server: a message the consumer
//! keeps failing reaches the dead-letter queue at its key's `MaxFailures`-th real failure (the
//! consumer moves it; the template's redrive policy is only a safety net), `inbox-ops why`
//! explains it, `inbox-ops redrive` brings it back, `inbox-ops lookup` shows its ledger item.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::types::{MessageSystemAttributeName as Sys, QueueAttributeName};
use devstack::bridge::Bridge;
use devstack::testkit::{self, github_headers, post, LocalAws, SystemOfRecord};
use inbox::clock::SystemClock;
use inbox::consumer::DEFAULT_MAX_FAILURES;
use inbox::forward::HttpForwarder;
use inbox::ledger::dynamo::DynamoLedger;
use inbox::ledger::{LedgerStore as _, Status};
use inbox::receiver::ReceiverSettings;
use inbox::redelivery::SqsRedelivery;
use lambda_runtime::LambdaEvent;
use serde_json::Value;
use stack_config::{template_path, Template};

/// Every body in this file carries it, so a body that leaks into the output is found.
const BODY_MARKER: &str = "body-marker-7f3a";

fn body(n: u32) -> Vec<u8> {
    format!(r#"{{"action":"opened","number":{n},"note":"{BODY_MARKER}-{n}"}}"#).into_bytes()
}

/// The consumer as deployed: it moves a message to the dead-letter queue itself.
type Cx = inbox::consumer::Consumer<
    DynamoLedger,
    HttpForwarder,
    SystemClock,
    inbox::consumer::Wiring<SqsRedelivery>,
>;

async fn invoke(cx: &Cx, event: SqsEvent) -> (SqsBatchResponse, String) {
    let request_id = testkit::unique("cx");
    let ctx = testkit::context(&request_id, testkit::now_ms() + 30_000);
    let resp = cx
        .handle_event(LambdaEvent::new(event, ctx))
        .await
        .expect("infallible");
    (resp, request_id)
}

async fn depth(aws: &LocalAws, url: &str) -> (i64, i64) {
    let out = aws
        .sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .expect("queue attributes");
    let n = |name: QueueAttributeName| {
        out.attributes()
            .and_then(|a| a.get(&name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    };
    (
        n(QueueAttributeName::ApproximateNumberOfMessages),
        n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    )
}

/// Runs the `inbox-ops` binary (it finds the local server through the inherited `AWS_ENDPOINT_URL`).
async fn inbox_ops(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inbox-ops"))
        .args(args)
        .output()
        .await
        .expect("run inbox-ops");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "a scenario read top to bottom; its steps share the stack it sets up"
)]
async fn a_dead_letter_is_explained_redriven_and_then_completes() {
    let aws = LocalAws::new("ops").await;
    let sor = SystemOfRecord::start();
    let key = "github:ops-1";
    sor.fail_key(key, 1000);
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, _) = aws.consumer(testkit::forwarder(sor.url()));
    let cx = cx.with_redelivery(SqsRedelivery::new(
        aws.sqs.clone(),
        &aws.resources.queue_url,
        Some(aws.resources.dlq_url.clone()),
    ));
    let b = body(10);
    let resp = rx
        .handle(post("github", &github_headers("ops-1", &b), &b))
        .await;
    assert_eq!(resp.status(), 200);

    // The consumer fails it on every receive; at the MaxFailures-th failure it moves it to the
    // dead-letter queue (the parameter's default in template.yaml, as the stack's consumer
    // gets it); the redrive policy's maxReceiveCount is a safety net far above.
    let template = Template::load(&template_path()).expect("template");
    let max_receives = template
        .parameter_default("MaxFailures")
        .and_then(serde_yaml::Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .expect("MaxFailures has a default");
    assert_eq!(max_receives, DEFAULT_MAX_FAILURES, "the consumer's default");
    assert_eq!(
        aws.stack.consumer.environment.get("MAX_FAILURES"),
        Some(&max_receives.to_string()),
        "the stack's consumer dead-letters as the template says"
    );
    assert!(
        template.max_receive_count() > 10 * max_receives,
        "a safety net"
    );
    let mut bridge = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    bridge.retry_failed_now = true;
    let mut runs = 0;
    let cx_ref = &cx;
    while let Some(round) = bridge
        .pump_once(|e| async move { Ok(invoke(cx_ref, e).await.0) })
        .await
        .expect("pump")
    {
        runs += 1;
        // Reported failed until the last failure, which moves it and reports it done.
        let last = runs == max_receives;
        assert_eq!(round.failed, usize::from(!last), "run {runs}");
        assert!(
            runs <= max_receives,
            "still on the queue after {runs} receives"
        );
    }
    assert_eq!(runs, max_receives);
    assert_eq!(depth(&aws, &aws.resources.queue_url).await, (0, 0));
    assert_eq!(depth(&aws, &aws.resources.dlq_url).await, (1, 0));

    let (dlq, queue, table) = (
        aws.resources.dlq_url.as_str(),
        aws.resources.queue_url.as_str(),
        aws.resources.table.as_str(),
    );

    // why: the key and its ledger item; the message stays on the dead-letter queue.
    let (code, out, err) = inbox_ops(&["why", "--dlq", dlq, "--table", table, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let why: Value = serde_json::from_str(&out).expect("why --json");
    let letters = why["messages"].as_array().expect("messages");
    assert_eq!(letters.len(), 1, "{why}");
    let letter = &letters[0];
    assert_eq!(letter["key"], key);
    assert_eq!(letter["source"], "github");
    assert_eq!(letter["status"], "FAILED");
    assert_eq!(letter["attempts"], u64::from(max_receives));
    assert_eq!(
        letter["last_error"],
        "forward answered 500 Internal Server Error"
    );
    assert_eq!(letter["group_id"], key);
    assert!(
        letter["hint"]
            .as_str()
            .is_some_and(|h| h.contains("fix the cause")),
        "{letter}"
    );
    // Found from the stack's name alone (its outputs), as every command can.
    let stack = aws.stack.name.as_str();
    let (code, text, err) = inbox_ops(&["why", "--stack", stack]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains(&format!(
            "{key}  FAILED  attempts {max_receives}  last_error: forward answered 500"
        )),
        "{text}"
    );
    assert!(
        !text.contains(BODY_MARKER) && !out.contains(BODY_MARKER),
        "why never prints a body"
    );
    assert_eq!(
        depth(&aws, dlq).await,
        (1, 0),
        "why leaves it visible on the dead-letter queue"
    );

    // lookup: the item as JSON.
    let (code, out, err) = inbox_ops(&["lookup", "--table", table, key]).await;
    assert_eq!(code, 0, "{err}");
    let item: Value = serde_json::from_str(&out).expect("lookup JSON");
    assert_eq!(item["pk"], key);
    assert_eq!(item["status"], "FAILED");
    assert_eq!(item["attempts"], u64::from(max_receives));
    assert!(item["expires_at"].is_i64());
    let (code, _, err) = inbox_ops(&["lookup", "--table", table, "github:never-seen"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no item for `github:never-seen`"), "{err}");

    // redrive: moto has no StartMessageMoveTask, so receive/send/delete, and it says so.
    let (code, out, err) = inbox_ops(&["redrive", "--stack", stack]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("method: receive/send/delete"), "{out}");
    assert!(
        out.contains("StartMessageMoveTask is not available here"),
        "{out}"
    );
    assert!(out.contains("moved 1 message(s)"), "{out}");
    assert_eq!(
        depth(&aws, dlq).await,
        (0, 0),
        "the dead-letter queue is empty"
    );
    let back = aws.receive_all(queue).await;
    assert_eq!(back.len(), 1, "back on the queue");
    let attrs = back[0].attributes().expect("attributes");
    assert_eq!(
        attrs.get(&Sys::MessageGroupId).map(String::as_str),
        Some(key)
    );
    assert_eq!(
        attrs.get(&Sys::MessageDeduplicationId).map(String::as_str),
        Some(key)
    );
    let envelope = inbox::queue::Envelope::parse(back[0].body().expect("body")).expect("envelope");
    assert_eq!(envelope.key, key);
    assert_eq!(envelope.body_bytes().expect("body"), b);

    // The downstream is fixed: the redriven message completes, once.
    sor.fail_key(key, 0);
    let (resp, _) = invoke(&cx, bridge.event(&back)).await;
    assert!(resp.batch_item_failures.is_empty());
    let record = aws.ledger().get(key).await.expect("get").expect("item");
    assert_eq!(record.status, Status::Completed);
    assert_eq!(record.attempts, max_receives + 1);
    assert_eq!(sor.calls_for(key), u64::from(max_receives) + 1);
}

/// A forged dead letter whose key holds terminal escapes, a newline and a bidi override:
/// `why` and `why --json`, through the binary, print it escaped; no ESC byte, and
/// no line of the key's own, reaches the operator's terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_prints_a_forged_key_escaped() {
    let aws = LocalAws::new("ops-forged").await;
    let (dlq, table) = (aws.resources.dlq_url.as_str(), aws.resources.table.as_str());
    // JSON escapes: the key read back holds ESC, BEL, a newline and U+202E themselves.
    let forged = r#"{"v":1,"key":"github:\u001b[2J\u001b]0;pwned\u0007\nok: nothing to see\u202e","source":"github","received_at":1,"payload_sha256":"h","headers":{},"body":"{}"}"#;
    aws.sqs
        .send_message()
        .queue_url(dlq)
        .message_body(forged)
        .message_group_id("forged")
        .message_deduplication_id("forged")
        .send()
        .await
        .expect("a forged dead letter");
    let (code, text, err) = inbox_ops(&["why", "--dlq", dlq, "--table", table]).await;
    assert_eq!(code, 0, "{err}");
    for output in [&text, &err] {
        assert!(!output.contains('\x1b'), "{output:?}");
        assert!(
            !output.contains('\u{7}') && !output.contains('\u{202e}'),
            "{output:?}"
        );
    }
    assert!(
        text.contains(r"github:\u{1b}[2J\u{1b}]0;pwned\u{7}\u{a}ok: nothing to see\u{202e}"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("ok:")), "{text}");
    let (code, json, err) = inbox_ops(&["why", "--dlq", dlq, "--table", table, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        !json.contains('\x1b') && !json.contains('\u{202e}'),
        "{json:?}"
    );
    let answer: Value = serde_json::from_str(&json).expect("why --json is JSON");
    assert_eq!(
        answer["messages"][0]["key"], "github:\x1b[2J\x1b]0;pwned\x07\nok: nothing to see\u{202e}",
        "the same key, escaped as JSON"
    );
}
