//! A first deploy in a new AWS account: the receiver's secrets without ARNs typed in,
//! and every default within the quotas a new account starts with.

use super::*;

/// The receiver's inline statements with their effect, `Fn::If` branches as written.
fn receiver_statements() -> Vec<Value> {
    translated()
        .resource("ReceiverFunctionRole")
        .expect("ReceiverFunctionRole")["Properties"]["Policies"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| {
            p["PolicyDocument"]["Statement"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn the_receiver_reads_the_stack_s_own_secrets_unless_secret_arns_names_others() {
    let statements = receiver_statements();
    let read = statements
        .iter()
        .find(|s| s["Sid"] == "ReadWebhookSecrets")
        .expect("ReadWebhookSecrets");
    assert_eq!(read["Effect"], "Allow");
    assert_eq!(read["Action"], "secretsmanager:GetSecretValue");
    assert_eq!(
        read["Resource"],
        json!({"Fn::If": ["HasSecretArns", {"Ref": "SecretArns"},
            {"Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${AWS::StackName}/*"}]})
    );
    // The forward signing secret shares the prefix: the receiver never reads it.
    let deny = statements
        .iter()
        .find(|s| s["Effect"] == "Deny")
        .expect("a Deny statement");
    assert_eq!(deny["Action"], "secretsmanager:GetSecretValue");
    assert_eq!(deny["Resource"], reference("ForwardSigningSecret"));
    let name = &t_properties("ForwardSigningSecret")["Name"];
    assert_eq!(
        name,
        &json!({"Fn::Sub": "${AWS::StackName}/forward-signing-secret"})
    );
    // The shipped configuration types no ARN (no REGION or ACCOUNT_ID to replace).
    assert_eq!(samconfig().get("SecretArns"), None);
    // And the default source's secret is under the prefix of the shipped stack name.
    let stack = samconfig_stack_name();
    let default = translated()
        .parameter("WebhookSources")
        .expect("WebhookSources")["Default"]
        .as_str()
        .expect("a default")
        .to_owned();
    let sources: Value = serde_json::from_str(&default).expect("JSON");
    for (name, source) in sources.as_object().expect("an object") {
        for secret in source["signature"]["secrets"].as_array().expect("secrets") {
            let secret = secret.as_str().expect("a reference");
            assert!(
                secret.starts_with(&format!("secretsmanager:{stack}/")),
                "{name}: {secret} is outside {stack}/*"
            );
        }
    }
}

fn t_properties(id: &str) -> &'static Value {
    translated().properties(id)
}

/// samconfig.toml's `stack_name = "..."` line.
fn samconfig_stack_name() -> String {
    let text = std::fs::read_to_string(samconfig_path()).expect("samconfig.toml");
    text.lines()
        .find_map(|line| line.trim().strip_prefix("stack_name = "))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("samconfig.toml names the stack")
}

/// The quotas a new account starts with that a default could exceed, each as AWS documents
/// it (docs/deploying.md, "a new account's quotas", has the sources).
struct NewAccount {
    /// Lambda concurrent executions: 10 in a new account.
    lambda_concurrency: i64,
    /// What Lambda keeps unreserved: reserving is refused below it.
    lambda_unreserved_minimum: i64,
    /// API Gateway's account-level throttle per region: 10,000 requests per second, burst 5,000.
    api_rate: i64,
    api_burst: i64,
}

const NEW_ACCOUNT: NewAccount = NewAccount {
    lambda_concurrency: 10,
    lambda_unreserved_minimum: 10,
    api_rate: 10_000,
    api_burst: 5_000,
};

#[test]
fn every_default_fits_the_quotas_of_a_new_account() {
    let reservable = NEW_ACCOUNT.lambda_concurrency - NEW_ACCOUNT.lambda_unreserved_minimum;
    assert!(
        number_parameter("ReceiverReservedConcurrency") <= reservable,
        "a new account can reserve {reservable}"
    );
    // The consumer's mapping caps its invocations without reserving any; it must leave the
    // receiver room within the account's concurrency.
    let consumer = number_parameter("ConsumerMaxConcurrency");
    assert!(
        consumer < NEW_ACCOUNT.lambda_concurrency,
        "ConsumerMaxConcurrency {consumer} takes all of a new account's concurrency"
    );
    assert!(number_parameter("ApiThrottlingRateLimit") <= NEW_ACCOUNT.api_rate);
    assert!(number_parameter("ApiThrottlingBurstLimit") <= NEW_ACCOUNT.api_burst);
    // No function reserves concurrency but the receiver (and it only when asked).
    for (id, function) in translated().resources_of_type("AWS::Lambda::Function") {
        if id != "ReceiverFunction" {
            assert!(
                function["Properties"]
                    .get("ReservedConcurrentExecutions")
                    .is_none(),
                "{id} reserves concurrency"
            );
        }
    }
}
