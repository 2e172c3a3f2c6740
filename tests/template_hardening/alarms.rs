//! The alarms (dead letters, age, each function's errors, 5xx, failures, forged signatures, the
//! archive's delivery), where they notify, and the dashboard: on the translated template.

use super::*;

/// (logical id, Properties) of every alarm.
fn alarms() -> Vec<(String, Value)> {
    translated()
        .resources_of_type("AWS::CloudWatch::Alarm")
        .into_iter()
        .map(|(id, r)| (id.to_owned(), r["Properties"].clone()))
        .collect()
}

fn alarm_on(namespace: &str, metric: &str, dimension: (&str, Value)) -> Value {
    let found: Vec<_> = alarms()
        .into_iter()
        .filter(|(_, p)| {
            p["Namespace"] == namespace
                && p["MetricName"] == metric
                && p["Dimensions"].as_array().is_some_and(|d| {
                    d.contains(&json!({"Name": dimension.0, "Value": dimension.1}))
                })
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one alarm on {namespace} {metric} {dimension:?}"
    );
    found[0].1.clone()
}

/// The alarm whose Metrics Insights query sums this EMF metric of this function.
fn alarm_on_emf(metric: Metric, function: &str) -> Value {
    let query = format!(
        "SELECT SUM({}) FROM SCHEMA({NAMESPACE}, function, source) WHERE function = '{function}'",
        metric.name()
    );
    let found: Vec<_> = alarms()
        .into_iter()
        .filter(|(_, p)| {
            p["Metrics"]
                .as_array()
                .is_some_and(|m| m.iter().any(|q| q["Expression"] == query.as_str()))
        })
        .collect();
    assert_eq!(found.len(), 1, "one alarm on {query}");
    found[0].1.clone()
}

#[test]
fn alarms_cover_dead_letters_age_errors_5xx_failures_and_forged_signatures() {
    let dlq = alarm_on(
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        ("QueueName", get_att("DeadLetterQueue", "QueueName")),
    );
    assert_eq!(dlq["Threshold"], 0);
    let age = alarm_on(
        "AWS/SQS",
        "ApproximateAgeOfOldestMessage",
        ("QueueName", get_att("WebhookQueue", "QueueName")),
    );
    assert_eq!(age["Threshold"], reference("QueueAgeAlarmSeconds"));
    let errors = alarm_on(
        "AWS/Lambda",
        "Errors",
        ("FunctionName", reference("ReceiverFunction")),
    );
    assert_eq!(errors["Threshold"], 0);
    let api = alarm_on("AWS/ApiGateway", "5xx", ("ApiId", reference("WebhookApi")));
    assert!(api["Dimensions"]
        .as_array()
        .unwrap()
        .contains(&json!({"Name": "Stage", "Value": "$default"})));

    let failed = alarm_on_emf(Metric::Failed, "consumer");
    assert_eq!(failed["Threshold"], 0);
    let forged = alarm_on_emf(Metric::SignatureRejected, "receiver");
    assert_eq!(
        forged["Threshold"],
        reference("SignatureRejectedAlarmThreshold")
    );
}

/// A destination's breaker opening alarms at once (its events are held, so `Failed` stops
/// rising), and an event held until its message was sent again alarms too
/// (docs/routing.md#breakers).
#[test]
fn a_breaker_opening_and_an_event_held_for_days_each_raise_an_alarm() {
    let query = format!(
        "SELECT SUM({}) FROM SCHEMA({NAMESPACE}, destination, function) WHERE function = 'consumer'",
        Metric::BreakerOpened.name()
    );
    let opened: Vec<_> = alarms()
        .into_iter()
        .filter(|(_, p)| {
            p["Metrics"]
                .as_array()
                .is_some_and(|m| m.iter().any(|q| q["Expression"] == query.as_str()))
        })
        .collect();
    assert_eq!(opened.len(), 1, "one alarm on {query}");
    assert_eq!(opened[0].0, "BreakerOpenedAlarm");
    assert_eq!(opened[0].1["Threshold"], 0);
    let resent = alarm_on_emf(Metric::HeldResent, "consumer");
    assert_eq!(resent["Threshold"], 0);
    assert_eq!(resent["TreatMissingData"], "notBreaching");
}

/// A consumer that cannot start fails every invocation its queue's mapping makes (the init
/// error counts in `Errors`); it answers every batch otherwise (failures are listed, never
/// thrown), so one error in one minute alarms: within minutes of the first batch it could not
/// take.
#[test]
fn a_consumer_that_cannot_start_raises_its_own_alarm_within_minutes() {
    let errors = alarm_on(
        "AWS/Lambda",
        "Errors",
        ("FunctionName", reference("ConsumerFunction")),
    );
    assert_eq!(errors["Statistic"], "Sum");
    assert_eq!(errors["ComparisonOperator"], "GreaterThanThreshold");
    assert_eq!(errors["Threshold"], 0, "one error is enough");
    assert_eq!(errors["Period"], 60);
    assert_eq!(errors["EvaluationPeriods"], 1, "the first such minute");
    assert_eq!(errors["TreatMissingData"], "notBreaching");
}

/// Firehose retries a failed delivery to S3 for 24 hours, then drops the records (whose
/// events' `archived_at` is stamped): the age of the oldest undelivered record past the
/// buffer's interval, with a flush's margin, alarms hours before that.
#[test]
fn the_archive_failing_to_deliver_raises_an_alarm_before_firehose_drops_it() {
    let t = translated();
    let stream = t.properties("ArchiveStream");
    let buffer = stream["ExtendedS3DestinationConfiguration"]["BufferingHints"]
        ["IntervalInSeconds"]
        .as_i64()
        .expect("the archive's buffer interval");
    let fresh = alarm_on(
        "AWS/Firehose",
        "DeliveryToS3.DataFreshness",
        ("DeliveryStreamName", reference("ArchiveStream")),
    );
    assert_eq!(fresh["Statistic"], "Maximum");
    assert_eq!(fresh["ComparisonOperator"], "GreaterThanThreshold");
    let threshold = fresh["Threshold"].as_i64().expect("a number of seconds");
    assert!(
        threshold >= 2 * buffer,
        "{threshold} s: a working stream's records wait up to its {buffer} s buffer"
    );
    let period = fresh["Period"].as_i64().unwrap();
    let periods = fresh["EvaluationPeriods"].as_i64().unwrap();
    assert!(
        threshold + period * periods <= 3600,
        "it alarms within the hour, far before the 24 h Firehose retries"
    );
}

#[test]
fn every_alarm_notifies_the_stack_topic_and_the_given_one() {
    let t = translated();
    let expected = json!([
        {"Fn::If": ["HasAlarmEmail", {"Ref": "AlarmTopic"}, {"Ref": "AWS::NoValue"}]},
        {"Fn::If": ["HasAlarmTopic", {"Ref": "AlarmTopicArn"}, {"Ref": "AWS::NoValue"}]},
    ]);
    let all = alarms();
    assert_eq!(all.len(), 10);
    for (id, props) in all {
        assert_eq!(props["AlarmActions"], expected, "{id}");
    }
    let topic = t.resource("AlarmTopic").expect("the stack's alarm topic");
    assert_eq!(topic["Type"], "AWS::SNS::Topic");
    assert_eq!(topic["Condition"], "HasAlarmEmail");
    assert_eq!(
        topic["Properties"]["Subscription"],
        json!([{"Protocol": "email", "Endpoint": {"Ref": "AlarmEmail"}}])
    );
    assert_eq!(
        t.document()["Conditions"]["HasAlarmEmail"],
        json!({"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]})
    );
    assert_eq!(t.parameter("AlarmEmail").unwrap()["Default"], "");
}

#[test]
fn the_dashboard_shows_the_emf_metrics_the_queues_errors_and_the_archive() {
    let t = translated();
    let id = t.only_of_type("AWS::CloudWatch::Dashboard").unwrap();
    let sub = t.properties(id)["DashboardBody"]["Fn::Sub"]
        .as_array()
        .expect("DashboardBody is Fn::Sub [body, variables]");
    let mut body = sub[0].as_str().expect("body").to_owned();
    let variables = sub[1].as_object().expect("variables");
    assert_eq!(variables["ns"], NAMESPACE);
    assert_eq!(variables["queue"], get_att("WebhookQueue", "QueueName"));
    assert_eq!(variables["dlq"], get_att("DeadLetterQueue", "QueueName"));
    assert_eq!(variables["receiver"], reference("ReceiverFunction"));
    assert_eq!(variables["consumer"], reference("ConsumerFunction"));
    assert_eq!(variables["archive"], reference("ArchiveStream"));
    for (name, value) in [
        ("${ns}", NAMESPACE),
        ("${queue}", "q.fifo"),
        ("${dlq}", "d.fifo"),
        ("${receiver}", "receiver-fn"),
        ("${consumer}", "consumer-fn"),
        ("${archive}", "archive-stream"),
        ("${AWS::Region}", "eu-west-1"),
    ] {
        body = body.replace(name, value);
    }
    assert!(!body.contains("${"), "every variable substituted");
    let dashboard: Value = serde_json::from_str(&body).expect("the dashboard body is JSON");

    let mut shown = BTreeSet::new();
    for widget in dashboard["widgets"].as_array().expect("widgets") {
        for line in widget["properties"]["metrics"].as_array().expect("metrics") {
            for item in line.as_array().unwrap() {
                if let Some(query) = item["expression"].as_str() {
                    assert!(
                        query.contains(&format!("FROM SCHEMA({NAMESPACE}, function, source)")),
                        "{query}: the EMF namespace and dimensions"
                    );
                    let metric = query
                        .strip_prefix("SELECT SUM(")
                        .and_then(|q| q.split_once(')'))
                        .map(|(m, _)| m)
                        .expect("SELECT SUM(<metric>)");
                    shown.insert(metric.to_owned());
                } else if let Some(name) = item.as_str() {
                    shown.insert(name.to_owned());
                }
            }
        }
    }
    for metric in [
        Metric::Accepted,
        Metric::Replayed,
        Metric::SignatureRejected,
        Metric::PayloadMismatch,
        Metric::Rejected,
        Metric::Completed,
        Metric::Failed,
        Metric::Throttled,
        Metric::DeadLettered,
    ] {
        assert!(
            shown.contains(metric.name()),
            "dashboard lacks {}",
            metric.name()
        );
    }
    for shown_name in [
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
        // The metrics of the functions' Errors alarms and of ArchiveDeliveryAlarm.
        "Errors",
        "consumer-fn",
        "receiver-fn",
        "DeliveryToS3.DataFreshness",
        "archive-stream",
    ] {
        assert!(shown.contains(shown_name), "dashboard lacks {shown_name}");
    }
}
