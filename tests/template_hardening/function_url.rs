//! The Lambda function URL front door: an option, off by default.

use super::*;

/// `Fn::Equals` of a parameter and a literal, as CloudFormation evaluates the condition for a
/// parameter value.
fn equals_holds(condition: &Value, parameter: &str, value: &str) -> bool {
    let args = condition["Fn::Equals"]
        .as_array()
        .unwrap_or_else(|| panic!("not an Fn::Equals: {condition}"));
    let side = |v: &Value| match v {
        Value::Object(m) if m.get("Ref") == Some(&json!(parameter)) => value.to_owned(),
        Value::String(s) => s.clone(),
        other => panic!("unexpected operand {other}"),
    };
    side(&args[0]) == side(&args[1])
}

#[test]
fn the_function_url_front_door_is_an_option_off_by_default_with_auth_none() {
    let t = translated();
    let condition = &t.document()["Conditions"]["HasFunctionUrl"];
    // Off by default and in samconfig (the local stack on moto, which cannot create it).
    let default = t.parameter("FunctionUrl").expect("parameter FunctionUrl")["Default"]
        .as_str()
        .expect("a default")
        .to_owned();
    let shipped = samconfig()
        .get("FunctionUrl")
        .map_or(default.clone(), str::to_owned);
    assert!(
        !equals_holds(condition, "FunctionUrl", &default),
        "{default}"
    );
    assert!(
        !equals_holds(condition, "FunctionUrl", &shipped),
        "{shipped}"
    );
    // The on-case: the URL, with no AWS auth, on the receiver, anyone may invoke it.
    assert!(equals_holds(condition, "FunctionUrl", "enabled"));
    let url = t
        .resource("ReceiverFunctionUrl")
        .expect("ReceiverFunctionUrl");
    assert_eq!(url["Type"], "AWS::Lambda::Url");
    assert_eq!(url["Condition"], "HasFunctionUrl");
    assert_eq!(url["Properties"]["AuthType"], "NONE");
    assert_eq!(
        url["Properties"]["TargetFunctionArn"],
        get_att("ReceiverFunction", "Arn")
    );
    let permission = t
        .resource("ReceiverFunctionUrlPermission")
        .expect("ReceiverFunctionUrlPermission");
    assert_eq!(permission["Condition"], "HasFunctionUrl");
    let p = &permission["Properties"];
    assert_eq!(p["Action"], "lambda:InvokeFunctionUrl");
    assert_eq!(p["Principal"], "*");
    assert_eq!(p["FunctionUrlAuthType"], "NONE");
    assert_eq!(p["FunctionName"], get_att("ReceiverFunction", "Arn"));
    // Nothing outside the condition refers to the URL (a stack without it must still create).
    let output = &t.document()["Outputs"]["WebhookFunctionUrl"];
    assert_eq!(output["Condition"], "HasFunctionUrl");
    for (id, resource) in t.document()["Resources"].as_object().expect("Resources") {
        if resource.to_string().contains("ReceiverFunctionUrl") {
            assert_eq!(resource["Condition"], "HasFunctionUrl", "{id}");
        }
    }
    // The HTTP API stays beside it: the receiver still has its HttpApi route.
    assert!(!t.resources_of_type("AWS::ApiGatewayV2::Api").is_empty());
    // Since October 2025 a new function URL also needs lambda:InvokeFunction, for calls made
    // through the URL only.
    let invoke = t
        .resource("ReceiverFunctionUrlInvokePermission")
        .expect("ReceiverFunctionUrlInvokePermission");
    assert_eq!(invoke["Type"], "AWS::Lambda::Permission");
    assert_eq!(invoke["Condition"], "HasFunctionUrl");
    let p = &invoke["Properties"];
    assert_eq!(p["Action"], "lambda:InvokeFunction");
    assert_eq!(p["Principal"], "*");
    assert_eq!(p["InvokedViaFunctionUrl"], true);
    assert_eq!(p["FunctionName"], get_att("ReceiverFunction", "Arn"));
    let actions: BTreeSet<String> = t
        .resources_of_type("AWS::Lambda::Permission")
        .into_iter()
        .filter(|(_, r)| r["Condition"] == "HasFunctionUrl")
        .filter_map(|(_, r)| r["Properties"]["Action"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        actions,
        BTreeSet::from([
            "lambda:InvokeFunction".into(),
            "lambda:InvokeFunctionUrl".into()
        ])
    );
    // The reserved concurrency is the flood limit behind a door that does not throttle: the
    // template's rule refuses FunctionUrl=enabled without it (the_receiver_reserves_...).
    assert!(t.document()["Rules"]["FunctionUrlNeedsReservedConcurrency"].is_object());
}
