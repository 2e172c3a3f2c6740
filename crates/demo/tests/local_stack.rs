//! The local stack the tests, the demo and the bench run on: template.yaml created on moto's
//! CloudFormation, the functions' environment read back from it (and written to the demo's env
//! file from there), their sources' secrets in moto's Secrets Manager (rotation included), and
//! the event source mapping moto holds but does not poll.

use std::time::Duration;

use demo::env_file::local_env;
use devstack::local_stack::Secret;
use devstack::senders::{self, Sender as _};
use devstack::testkit::{self, LocalAws, UNUSED_FORWARD_URL};
use inbox::config::{SecretRef, SourceSpecs};
use inbox::receiver::ReceiverSettings;

#[tokio::test]
async fn the_functions_environment_is_the_stacks() {
    let aws = LocalAws::new("env").await;
    let endpoint = devstack::moto::shared();
    let vars = local_env(&aws.stack, endpoint).expect("one env file for both functions");
    let get = |n: &str| {
        vars.iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(get("LEDGER_TABLE"), aws.resources.table);
    assert_eq!(get("QUEUE_URL"), aws.resources.queue_url);
    assert_eq!(get("FORWARD_URL"), UNUSED_FORWARD_URL);
    assert_eq!(get("AWS_ENDPOINT_URL"), endpoint);
    assert!(!get("MAX_BODY_BYTES").is_empty(), "{vars:?}");
    assert!(get("RUST_LOG").starts_with("warn,"), "{vars:?}");
    // Every variable of either function, with the stack's value.
    for function in [&aws.stack.receiver, &aws.stack.consumer] {
        for (name, value) in &function.environment {
            assert_eq!(&get(name), value, "{} {name}", function.name);
        }
    }
    // No secret in the environment: the sources name them in Secrets Manager.
    let specs = SourceSpecs::parse(&get("WEBHOOK_SOURCES")).expect("WEBHOOK_SOURCES parses");
    for spec in specs.iter() {
        assert!(!spec.secrets.is_empty(), "{}", spec.name);
        for reference in &spec.secrets {
            assert_eq!(
                reference,
                &SecretRef::SecretsManager(format!("{}/{}", testkit::SECRETS_PREFIX, spec.name))
            );
        }
    }
    assert!(!vars.iter().any(|(_, v)| v == testkit::TEST_SECRET));
    // The receiver's role may read exactly those secrets.
    let arns = aws.stack.parameters.get("SecretArns").unwrap_or_default();
    for spec in specs.iter() {
        assert!(
            arns.contains(&format!(
                ":secret:{}/{}-??????",
                testkit::SECRETS_PREFIX,
                spec.name
            )),
            "{arns}"
        );
    }
}

#[tokio::test]
async fn moto_holds_the_mapping_and_leaves_the_queue_to_the_bridge() {
    let aws = LocalAws::new("mapping").await;
    let mapping = &aws.stack.event_source_mapping;
    assert!(mapping.enabled);
    assert_eq!(mapping.batch_size, Some(10));
    assert_eq!(mapping.function_arn, aws.stack.consumer.arn);
    // Moto's own poller would take the message (and invoke the function through Docker).
    aws.sqs
        .send_message()
        .queue_url(&aws.resources.queue_url)
        .message_group_id("g")
        .message_deduplication_id("d")
        .message_body("{}")
        .send()
        .await
        .expect("SendMessage");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(aws.queue_counts(&aws.resources.queue_url).await, (1, 0));
}

/// A source with two secrets in Secrets Manager, as during a rotation: a delivery signed with
/// either is accepted, one signed with neither is refused.
#[tokio::test]
async fn a_source_with_two_secrets_accepts_either() {
    const OLD: &str = "the-secret-being-rotated-out";
    const NEW: &str = "the-secret-being-rotated-in";
    let sources = r#"{"rotating": {
        "signature": {"scheme": "github",
                      "secrets": ["secretsmanager:rotation/old", "secretsmanager:rotation/new"]},
        "key": {"from": "header", "name": "X-GitHub-Delivery"}}}"#;
    let secrets = [
        Secret::new("rotation/old", OLD),
        Secret::new("rotation/new", NEW),
    ];
    let aws = LocalAws::with_sources("rotation", sources, &secrets).await;
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    for (n, (secret, status)) in [(OLD, 200), (NEW, 200), ("neither", 401)]
        .into_iter()
        .enumerate()
    {
        let body = format!(r#"{{"n":{n}}}"#);
        let headers = senders::GitHub::new(secret).headers(&format!("d-{n}"), 0, body.as_bytes());
        let resp = rx
            .handle(testkit::post("rotating", &headers, body.as_bytes()))
            .await;
        assert_eq!(resp.status(), status, "signed with {secret}");
    }
    assert_eq!(aws.ledger_items().await.len(), 2);
    let arns = aws.stack.parameters.get("SecretArns").unwrap_or_default();
    assert!(
        arns.contains(":secret:rotation/old-??????")
            && arns.contains(":secret:rotation/new-??????"),
        "{arns}"
    );
}

/// CloudWatch as the SDK calls it (Smithy RPC v2 CBOR, which moto serves through devstack's
/// layer): the functions' EMF lines put by `local_metrics`, read back as the console reads them
/// (`GetMetricData`) and as `inbox-ops status` reads a queue's age (`GetMetricStatistics`).
#[tokio::test]
async fn cloudwatch_answers_the_sdks_protocol_with_the_runs_counts() {
    use aws_sdk_cloudwatch::types::{Dimension, Statistic};
    use inbox::metrics::{Metric, Metrics};
    use inbox_ops::console::figures;

    devstack::moto::shared();
    let sdk = inbox::app::sdk_config().await;
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&sdk);
    let now_s = testkit::now_ms() / 1000;
    let source = "cw-figures";
    let (receiver, received) = Metrics::memory("receiver");
    let (consumer, consumed) = Metrics::memory("consumer");
    for _ in 0..3 {
        receiver.count(source, Metric::Accepted);
    }
    receiver.count(source, Metric::Replayed);
    receiver.count(source, Metric::SignatureRejected);
    consumer.count(source, Metric::Failed);
    consumer.count(source, Metric::DeadLettered);
    let mut lines = received.lock().unwrap().clone();
    lines.extend(consumed.lock().unwrap().iter().cloned());
    lines.push(r#"{"level":"INFO","message":"not a metric"}"#.to_owned());
    let put = devstack::local_metrics::put(&cloudwatch, &lines)
        .await
        .expect("PutMetricData in CBOR");
    assert_eq!(put, 7);

    let figures = figures::last_day(&cloudwatch, &[source.to_owned()], now_s)
        .await
        .expect("GetMetricData in CBOR");
    let totals: Vec<(&str, f64)> = figures[0]
        .series
        .iter()
        .map(|(label, values)| (*label, values.iter().sum()))
        .collect();
    assert_eq!(
        totals,
        [
            ("accepted", 3.0),
            ("replayed", 1.0),
            ("rejected", 1.0),
            ("failed", 1.0),
            ("dead-lettered", 1.0)
        ]
    );
    // All in this hour, the last of the 24.
    assert_eq!(figures[0].series[0].1[figures::HOURS - 1], 3.0);

    // GetMetricStatistics, timestamps both ways.
    let now = std::time::SystemTime::now();
    let stats = cloudwatch
        .get_metric_statistics()
        .namespace(inbox::metrics::NAMESPACE)
        .metric_name("Accepted")
        .dimensions(Dimension::builder().name("source").value(source).build())
        .dimensions(
            Dimension::builder()
                .name("function")
                .value("receiver")
                .build(),
        )
        .start_time((now - Duration::from_secs(600)).into())
        .end_time((now + Duration::from_secs(60)).into())
        .period(60)
        .statistics(Statistic::Sum)
        .send()
        .await
        .expect("GetMetricStatistics in CBOR");
    let sum: f64 = stats.datapoints().iter().filter_map(|d| d.sum()).sum();
    assert_eq!(sum, 3.0);
    assert!(stats.datapoints().iter().all(|d| d
        .timestamp()
        .is_some_and(|t| (t.secs() - now_s).abs() < 700)));
}

/// The alarms in ALARM as the console asks for them (`DescribeAlarms` in CBOR), and an error
/// with its code and message.
#[tokio::test]
async fn cloudwatch_answers_the_consoles_alarm_call_and_errors_in_the_sdks_protocol() {
    use aws_sdk_cloudwatch::types::{ComparisonOperator, StateValue, Statistic};
    use inbox_ops::console::figures;

    devstack::moto::shared();
    let sdk = inbox::app::sdk_config().await;
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&sdk);
    // An alarm put, set to ALARM, found by the console's DescribeAlarms; another stays out.
    for name in ["cw-dlq-alarm", "cw-quiet-alarm"] {
        cloudwatch
            .put_metric_alarm()
            .alarm_name(name)
            .namespace("AWS/SQS")
            .metric_name("ApproximateNumberOfMessagesVisible")
            .statistic(Statistic::Maximum)
            .period(60)
            .evaluation_periods(1)
            .threshold(0.0)
            .comparison_operator(ComparisonOperator::GreaterThanThreshold)
            .send()
            .await
            .expect("PutMetricAlarm in CBOR");
    }
    cloudwatch
        .set_alarm_state()
        .alarm_name("cw-dlq-alarm")
        .state_value(StateValue::Alarm)
        .state_reason("one dead letter")
        .send()
        .await
        .expect("SetAlarmState in CBOR");
    let firing = figures::alarms_firing(
        &cloudwatch,
        &["cw-dlq-alarm".to_owned(), "cw-quiet-alarm".to_owned()],
    )
    .await
    .expect("DescribeAlarms in CBOR");
    assert_eq!(
        firing,
        [("cw-dlq-alarm".to_owned(), "one dead letter".to_owned())]
    );

    // An error keeps its code and message.
    let err = cloudwatch
        .get_dashboard()
        .dashboard_name("no-such-dashboard")
        .send()
        .await
        .expect_err("no such dashboard");
    let service = err.into_service_error();
    assert!(
        matches!(
            &service,
            aws_sdk_cloudwatch::operation::get_dashboard::GetDashboardError::DashboardNotFoundError(e)
                if e.message().is_some_and(|m| m.contains("does not exist"))
        ),
        "{service:?}"
    );
}

/// The demo's feed: lines sent as a function prints them (logs among them) are on the local
/// CloudWatch once it settles; 400 of them in one call pass the SDK's compression threshold
/// (10 KiB), so moto's CBOR layer reads that call gzipped.
#[tokio::test]
async fn the_feed_puts_what_the_functions_print() {
    use inbox::metrics::{Metric, Metrics};
    use inbox_ops::console::figures;

    devstack::moto::shared();
    let sdk = inbox::app::sdk_config().await;
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&sdk);
    let feed = devstack::local_metrics::Feed::start(cloudwatch.clone(), Duration::from_secs(2));
    let sender = feed.sender();
    let (m, lines) = Metrics::memory("consumer");
    for _ in 0..400 {
        m.count("cw-feed", Metric::Failed);
    }
    sender.send(r#"{"level":"WARN","message":"a log line"}"#.to_owned());
    for line in lines.lock().unwrap().iter() {
        sender.send(line.clone());
    }
    assert!(
        feed.settle(Duration::from_secs(30)).await,
        "the feed settles"
    );
    let got = figures::last_day(
        &cloudwatch,
        &["cw-feed".to_owned()],
        testkit::now_ms() / 1000,
    )
    .await
    .expect("GetMetricData");
    let failed = got[0]
        .series
        .iter()
        .find(|(label, _)| *label == "failed")
        .expect("the failed series");
    assert_eq!(failed.1.iter().sum::<f64>(), 400.0);
}
