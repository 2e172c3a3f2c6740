//! The destinations' parameters (docs/routing.md): `Destinations` reaches the consumer
//! as WEBHOOK_DESTINATIONS, and each list of target ARNs grants the consumer its one action on
//! exactly those ARNs, the statement present only when the list names one.

use std::collections::BTreeMap;

use super::*;
use devstack::cloudformation::template_path;
use devstack::deployer_policy::conditions;

/// The intrinsics these statements use, evaluated as CloudFormation does for a stack with
/// `values` (conditions and parameters by the deployer policy's evaluator); `null` is
/// `AWS::NoValue`.
fn evaluate(t: &Translated, values: &Parameters, v: &Value) -> Value {
    let Some((function, args)) = v
        .as_object()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.iter().next())
    else {
        return match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (k.clone(), evaluate(t, values, x)))
                    .collect(),
            ),
            other => other.clone(),
        };
    };
    let arg = |i: usize| evaluate(t, values, &args[i]);
    match function.as_str() {
        "Ref" if args == "AWS::NoValue" => Value::Null,
        "Ref" => match args.as_str() {
            Some(name) if t.parameter(name).is_some() => {
                conditions::parameter_value(t.document(), values, name)
                    .unwrap_or_else(|e| panic!("{e:#}"))
            }
            _ => v.clone(),
        },
        "Fn::Join" => {
            let parts = arg(1);
            let parts: Vec<&str> = parts
                .as_array()
                .expect("Fn::Join of a list")
                .iter()
                .map(|p| p.as_str().expect("a string"))
                .collect();
            json!(parts.join(args[0].as_str().expect("a separator")))
        }
        "Fn::If" => {
            let name = args[0].as_str().expect("Fn::If names a condition");
            let holds =
                conditions::holds(t.document(), values, name).unwrap_or_else(|e| panic!("{e:#}"));
            if holds {
                arg(1)
            } else {
                arg(2)
            }
        }
        _ => Value::Object(
            v.as_object()
                .expect("an object")
                .iter()
                .map(|(k, x)| (k.clone(), evaluate(t, values, x)))
                .collect(),
        ),
    }
}

/// The consumer role's Allow statements for a stack with `values`, by Sid.
fn consumer_statements(t: &Translated, values: &Parameters) -> BTreeMap<String, Value> {
    let policies = &t.properties("ConsumerRole")["Policies"];
    let mut out = BTreeMap::new();
    for policy in policies.as_array().expect("inline policies") {
        for statement in policy["PolicyDocument"]["Statement"]
            .as_array()
            .expect("statements")
        {
            let statement = evaluate(t, values, statement);
            if statement.is_null() {
                continue;
            }
            let sid = statement["Sid"].as_str().expect("a Sid").to_owned();
            assert!(
                out.insert(sid.clone(), statement).is_none(),
                "Sid {sid} twice"
            );
        }
    }
    out
}

const TARGETS: [(&str, &str, &str, [&str; 2]); 3] = [
    (
        "DestinationBusArns",
        "DestinationBuses",
        "events:PutEvents",
        [
            "arn:aws:events:eu-west-1:123456789012:event-bus/payments",
            "arn:aws:events:eu-west-1:123456789012:event-bus/audit",
        ],
    ),
    (
        "DestinationQueueArns",
        "DestinationQueues",
        "sqs:SendMessage",
        [
            "arn:aws:sqs:eu-west-1:123456789012:ci-events.fifo",
            "arn:aws:sqs:eu-west-1:123456789012:crm",
        ],
    ),
    (
        "DestinationFunctionArns",
        "DestinationFunctions",
        "lambda:InvokeFunction",
        [
            "arn:aws:lambda:eu-west-1:123456789012:function:crm-sync",
            "arn:aws:lambda:eu-west-1:123456789012:function:ledger",
        ],
    ),
];

#[test]
fn destinations_reach_the_consumer_and_default_to_none() {
    let t = translated();
    let declared = t.parameter("Destinations").expect("parameter Destinations");
    assert_eq!(declared["Type"], "String");
    assert_eq!(declared["Default"], "", "none unless given");
    assert_eq!(
        t.properties("ConsumerFunction")["Environment"]["Variables"]["WEBHOOK_DESTINATIONS"],
        reference("Destinations")
    );
    // The receiver does not route.
    assert!(t.properties("ReceiverFunction")["Environment"]["Variables"]
        .get("WEBHOOK_DESTINATIONS")
        .is_none());
    // With samconfig's values (no ARN lists), no destination statement.
    let statements = consumer_statements(t, &samconfig());
    for (_, sid, _, _) in TARGETS {
        assert!(!statements.contains_key(sid), "{sid} without ARNs");
    }
    assert!(!statements.contains_key("DestinationPayloads"));
    assert!(statements.contains_key("ReadForwardSigningSecret"));
}

#[test]
fn each_destination_statement_names_exactly_the_given_arns_and_only_when_given() {
    for (parameter, sid, action, arns) in TARGETS {
        let mut values = samconfig();
        values.set(parameter, &arns.join(","));
        let t = Translated::translate(&template_path(), &values)
            .unwrap_or_else(|e| panic!("translating with {parameter}: {e:#}"));
        let statements = consumer_statements(&t, &values);
        let statement = statements
            .get(sid)
            .unwrap_or_else(|| panic!("{sid} with {parameter} given"));
        assert_eq!(statement["Effect"], "Allow", "{sid}");
        assert_eq!(statement["Action"], action, "{sid}");
        assert_eq!(statement["Resource"], json!(arns), "{sid}");
        // The other lists are empty: their statements are absent.
        for (_, other, _, _) in TARGETS.iter().filter(|(p, ..)| *p != parameter) {
            assert!(!statements.contains_key(*other), "{other} with {parameter}");
        }
        // A pointer to a body too big for the target: written under payloads/ only.
        assert_eq!(
            statements["DestinationPayloads"]["Resource"],
            json!({"Fn::Sub": "${PayloadBucket.Arn}/payloads/*"})
        );
        // The action is granted nowhere else (sqs:SendMessage: the dead-letter queue only).
        let elsewhere: Vec<&Value> = statements
            .iter()
            .filter(|(s, st)| {
                s.as_str() != sid
                    && st["Action"] == action
                    && st["Resource"] != get_att("DeadLetterQueue", "Arn")
            })
            .map(|(_, st)| st)
            .collect();
        assert!(elsewhere.is_empty(), "{action} also in {elsewhere:?}");
    }
}

/// An https destination's own signing secrets (docs/routing.md): by default the consumer may
/// read the stack's forward secret only (which signs every https destination without one of
/// its own); `DestinationSecretArns` adds exactly its entries, in a statement of its own.
#[test]
fn destination_signing_secrets_are_readable_only_where_destination_secret_arns_lists_them() {
    let t = translated();
    let declared = t
        .parameter("DestinationSecretArns")
        .expect("parameter DestinationSecretArns");
    assert_eq!(declared["Type"], "CommaDelimitedList");
    assert_eq!(declared["Default"], "");
    let reads = |statements: &BTreeMap<String, Value>| -> Vec<(String, Value)> {
        statements
            .iter()
            .filter(|(_, st)| st["Action"] == "secretsmanager:GetSecretValue")
            .map(|(sid, st)| (sid.clone(), st["Resource"].clone()))
            .collect()
    };
    let by_default = consumer_statements(t, &samconfig());
    assert_eq!(
        reads(&by_default),
        [(
            "ReadForwardSigningSecret".to_owned(),
            reference("ForwardSigningSecret")
        )]
    );
    let listed = [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/billing-forward-??????",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:webhook-inbox/crm-AbCdEf",
    ];
    let mut values = samconfig();
    values.set("DestinationSecretArns", &listed.join(","));
    let t = Translated::translate(&template_path(), &values).expect("translated");
    let given = consumer_statements(&t, &values);
    assert_eq!(
        reads(&given),
        [
            ("ReadDestinationSigningSecrets".to_owned(), json!(listed)),
            (
                "ReadForwardSigningSecret".to_owned(),
                reference("ForwardSigningSecret")
            ),
        ]
    );
}
