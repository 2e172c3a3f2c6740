//! The local stack the tests, the demo and the bench run on: template.yaml created on moto's
//! CloudFormation, the functions' environment read back from it (and written to the demo's env
//! file from there), their sources' secrets in moto's Secrets Manager (rotation included), and
//! the event source mapping moto holds but does not poll.

use std::time::Duration;

use devstack::demo::env_file::local_env;
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
