//! The queues as a trust boundary: a message on the webhook queue is forwarded
//! signed with the inbox's own key, so only the receiver's role and the stack's OperatorRole
//! may send to it, and both queues are reached over TLS only.

use serde_json::{json, Value};

use super::{get_att, reference, role_statements, translated};

/// The statements of the one queue policy over `queue`.
fn queue_policy_statements(queue: &str) -> Vec<Value> {
    let t = translated();
    let policies: Vec<_> = t
        .resources_of_type("AWS::SQS::QueuePolicy")
        .into_iter()
        .filter(|(_, p)| p["Properties"]["Queues"] == json!([reference(queue)]))
        .collect();
    assert_eq!(policies.len(), 1, "one policy over {queue}");
    policies[0].1["Properties"]["PolicyDocument"]["Statement"]
        .as_array()
        .expect("statements")
        .clone()
}

fn assert_tls_only(queue: &str, statements: &[Value]) {
    let deny = statements
        .iter()
        .find(|s| s["Condition"]["Bool"]["aws:SecureTransport"] == "false")
        .unwrap_or_else(|| panic!("{queue}: a Deny without TLS"));
    assert_eq!(deny["Effect"], "Deny");
    assert_eq!(deny["Principal"], "*");
    assert_eq!(deny["Action"], "sqs:*");
    assert_eq!(deny["Resource"], get_att(queue, "Arn"));
}

#[test]
fn the_webhook_queue_takes_messages_only_from_the_receiver_and_the_operator_role_over_tls() {
    let t = translated();
    let statements = queue_policy_statements("WebhookQueue");
    assert_tls_only("WebhookQueue", &statements);
    let send = statements
        .iter()
        .find(|s| s["Action"] == "sqs:SendMessage")
        .expect("a statement on SendMessage");
    assert_eq!(send["Effect"], "Deny");
    assert_eq!(send["Principal"], "*");
    assert_eq!(send["Resource"], get_att("WebhookQueue", "Arn"));
    assert_eq!(
        send["Condition"]["ArnNotEquals"]["aws:PrincipalArn"],
        json!([
            get_att("ReceiverFunctionRole", "Arn"),
            get_att("OperatorRole", "Arn")
        ]),
        "everyone else is denied"
    );
    // The role the policy names is the one the receiver runs as (SAM makes it).
    assert_eq!(
        t.properties("ReceiverFunction")["Role"],
        get_att("ReceiverFunctionRole", "Arn")
    );
    assert!(t.resource("ReceiverFunctionRole").is_some());

    // The operator role: assumable within the account, with the replay policy.
    let operator = t.resource("OperatorRole").expect("OperatorRole");
    assert_eq!(operator["Type"], "AWS::IAM::Role");
    let trust = &operator["Properties"]["AssumeRolePolicyDocument"]["Statement"][0];
    assert_eq!(
        trust["Principal"]["AWS"],
        json!({"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"})
    );
    assert_eq!(
        operator["Properties"]["ManagedPolicyArns"],
        json!([reference("OperatorReplayPolicy")])
    );
    // Redrive from the dead-letter queue, as inbox-ops redrive does it.
    let dlq_actions: Vec<String> = role_statements(operator)
        .into_iter()
        .filter(|(_, resource)| *resource == get_att("DeadLetterQueue", "Arn"))
        .flat_map(|(actions, _)| actions)
        .collect();
    for action in [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:StartMessageMoveTask",
    ] {
        assert!(
            dlq_actions.iter().any(|a| a == action),
            "{action}: {dlq_actions:?}"
        );
    }

    // And no role but the receiver's is granted SendMessage on the queue in its own
    // policies (the consumer delays by ChangeMessageVisibility and sends only to the DLQ).
    for (id, role) in t.resources_of_type("AWS::IAM::Role") {
        let sends = role_statements(role)
            .into_iter()
            .any(|(actions, resource)| {
                actions.iter().any(|a| a == "sqs:SendMessage")
                    && resource == get_att("WebhookQueue", "Arn")
            });
        assert_eq!(sends, id == "ReceiverFunctionRole", "{id}");
    }
}

#[test]
fn the_dead_letter_queue_is_reached_over_tls_only() {
    assert_tls_only(
        "DeadLetterQueue",
        &queue_policy_statements("DeadLetterQueue"),
    );
}
