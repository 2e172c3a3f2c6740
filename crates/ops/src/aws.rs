//! The AWS side of every command: the SDK configuration and clients (region, credentials and
//! `AWS_ENDPOINT_URL` from the standard places, as the Lambda functions load them). A queue's
//! ARN is the library's `SqsQueue::arn`, the one look-up of it for the workspace.

use std::sync::OnceLock;

/// Who `inbox-ops` acts as: the global `--profile` (a profile of the AWS config) and
/// `--role-arn` (a role assumed with STS `AssumeRole` over those credentials, the stack's
/// `OperatorRole` for `replay`, `redrive`, `why`, `pause` and the console).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub profile: Option<String>,
    pub role_arn: Option<String>,
}

/// Set once by the command line, before any command runs; read by [`config`].
static IDENTITY: OnceLock<Identity> = OnceLock::new();

/// Every later [`config`] acts as `identity` (the first call wins).
pub fn act_as(identity: Identity) {
    let _ = IDENTITY.set(identity);
}

/// The identity [`act_as`] set, if any.
pub fn identity() -> Identity {
    IDENTITY.get().cloned().unwrap_or_default()
}

/// The SDK configuration the functions use: standard region and credential chain, three
/// attempts, one shared HTTPS client. `AWS_ENDPOINT_URL` points it at a local server. As the
/// identity of [`act_as`].
pub async fn config() -> aws_config::SdkConfig {
    config_as(&identity()).await
}

/// [`config`] as `identity`: its profile's credentials, then its role assumed over them
/// (session name `inbox-ops`; the SDK refreshes the credentials before they expire).
pub async fn config_as(identity: &Identity) -> aws_config::SdkConfig {
    let base = inbox::app::sdk_config_for(identity.profile.as_deref()).await;
    match &identity.role_arn {
        None => base,
        Some(role) => {
            let provider = aws_config::sts::AssumeRoleProvider::builder(role)
                .session_name("inbox-ops")
                .configure(&base)
                .build()
                .await;
            base.to_builder()
                .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                    provider,
                ))
                .build()
        }
    }
}

/// The codes and phrases of an AWS call refused for want of permission.
const DENIED: &[&str] = &[
    "AccessDenied",
    "not authorized to perform",
    "UnauthorizedOperation",
    "AuthorizationError",
];

/// What to add to an error that an AWS permission refused: which role and flag it needs.
/// `None` when `error` is no such refusal.
pub fn denied_hint(error: &str, identity: &Identity) -> Option<String> {
    if !DENIED.iter().any(|d| error.contains(d)) {
        return None;
    }
    Some(match &identity.role_arn {
        None => "denied: replay, redrive, why, lookup --body, pause, resume and the console act as the stack's OperatorRole (the one operator principal its queue takes messages from): run again with --role-arn <the stack's OperatorRoleArn output> (aws cloudformation describe-stacks --stack-name <stack> --query \"Stacks[0].Outputs[?OutputKey=='OperatorRoleArn'].OutputValue\" --output text), or --profile naming a profile with that role_arn; your identity needs sts:AssumeRole on it (docs/operations.md)".to_owned(),
        Some(role) => format!(
            "denied as {role}: this call is outside the role's policy; OperatorRole (template.yaml) allows what inbox-ops' operator commands call, so check the ARN is the stack's OperatorRoleArn output"
        ),
    })
}

/// An SQS client on `config`.
pub fn sqs(config: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(config)
}

/// A DynamoDB client on `config`.
pub fn dynamo(config: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_call_names_the_role_and_the_flag() {
        let none = Identity::default();
        assert_eq!(
            denied_hint("GetItem: ResourceNotFoundException", &none),
            None
        );
        let e = "UpdateItem: service error: AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/dev/me is not authorized to perform: dynamodb:UpdateItem";
        let hint = denied_hint(e, &none).expect("a hint");
        assert!(hint.starts_with("denied: replay, redrive"), "{hint}");
        assert!(
            hint.contains("--role-arn <the stack's OperatorRoleArn output>"),
            "{hint}"
        );
        let as_role = Identity {
            profile: None,
            role_arn: Some("arn:aws:iam::123456789012:role/x".into()),
        };
        let hint = denied_hint(e, &as_role).expect("a hint");
        assert!(
            hint.starts_with("denied as arn:aws:iam::123456789012:role/x: "),
            "{hint}"
        );
    }
}
