//! The sample events in `events/`, each through the library handler it is for
//! (`Receiver::handle_event`, `Consumer::handle_event`) against moto, with the answer the
//! events table in docs/local-development.md gives for it.
//!
//! Stripe and Standard Webhooks events carry a signed timestamp that is refused 300 s after
//! `make events` wrote them, so this test checks that those files are exactly the generator's
//! output at the time recorded in them, then runs copies regenerated now; every other file
//! runs as it is on disk.

use std::collections::BTreeSet;

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::sqs::SqsEvent;
use demo::events;
use devstack::testkit::{self, LocalAws, SystemOfRecord};
use inbox::metrics::{tally, Metric};
use inbox::receiver::ReceiverSettings;
use lambda_runtime::LambdaEvent;

fn read(file: &str) -> String {
    let path = events::events_dir().join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run `make events`)", path.display()))
}

#[test]
fn the_checked_in_files_are_the_generators_output_and_the_readme_lists_them() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(events::events_dir())
        .expect("events/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    let stamped: serde_json::Value =
        serde_json::from_str(&read("stripe-first.json")).expect("JSON");
    let at =
        events::generated_at(&stamped).expect("stripe-first.json has requestContext.timeEpoch");
    let samples = events::generate(at);
    let generated: BTreeSet<String> = samples.iter().map(|s| s.file.clone()).collect();
    assert_eq!(on_disk, generated, "events/ differs from `make events`");
    for s in &samples {
        assert_eq!(
            read(&s.file),
            s.text(),
            "{} is not `make events`' output",
            s.file
        );
    }
    let readme =
        std::fs::read_to_string(devstack::moto::workspace_root().join("docs/local-development.md"))
            .expect("docs/local-development.md");
    assert!(
        readme.contains(&events::readme_table(&samples)),
        "docs/local-development.md's events table differs from `cargo run --bin make-events -- --readme-table`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_gets_the_answer_the_readme_gives() {
    let aws = LocalAws::new("events").await;
    let sor = SystemOfRecord::start();
    let (rx, _) = aws.receiver(ReceiverSettings::default()).await;
    let (cx, consumer_lines) = aws.consumer(testkit::forwarder(sor.url()));

    let now = testkit::now_ms() / 1000;
    let mut failures = Vec::new();
    for s in events::generate(now) {
        // The file itself where it does not go stale; a copy signed now where it does.
        let text = if s.timestamped {
            s.text()
        } else {
            read(&s.file)
        };
        let ctx = testkit::context(&testkit::unique("inv"), testkit::now_ms() + 30_000);
        let before: u64 = sor.calls().values().sum();
        let answer = match s.function {
            events::Function::Receiver => {
                let event: ApiGatewayV2httpRequest =
                    serde_json::from_str(&text).expect("an API Gateway v2 event");
                let resp = rx
                    .handle_event(LambdaEvent::new(event, ctx))
                    .await
                    .expect("infallible");
                serde_json::to_value(&resp).expect("serializable")
            }
            events::Function::Consumer => {
                let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                events::accept_sample(&aws.ledger(), &value)
                    .await
                    .expect("the sample's events accepted");
                let event: SqsEvent = serde_json::from_str(&text).expect("an SQS event");
                let resp = cx
                    .handle_event(LambdaEvent::new(event, ctx))
                    .await
                    .expect("infallible");
                serde_json::to_value(&resp).expect("serializable")
            }
        };
        let after: u64 = sor.calls().values().sum();
        let (got, ok) = demo::compare(&s.expected, &answer, after - before);
        if !ok {
            failures.push(format!(
                "{}: expected {}, got {got} ({answer})",
                s.file,
                s.expected.describe()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");

    // The consumer's duplicate check is what stopped the second copy in sqs-duplicate.json.
    let lines = consumer_lines.lock().expect("metrics").clone();
    assert_eq!(tally(&lines, "github", Metric::DuplicateDelivery), 1);
    assert_eq!(sor.calls().values().filter(|n| **n != 1).count(), 0);
}
