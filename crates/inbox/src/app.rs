//! Cold-start wiring shared by the two binaries: environment, SDK clients (built once and
//! reused by every invocation), configuration and secrets. Any problem stops start-up with a
//! message naming the variable, the source and the field: [`serve`] logs it, one line, and
//! exits 1.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::{tls, ConnectorBuilder};
use aws_smithy_runtime_api::client::http::SharedHttpClient;

use crate::archive::FirehoseArchive;
use crate::bucket::S3Bucket;
use crate::clock::SystemClock;
use crate::config::env::{
    check_payload_retention, dlq_retention_seconds, payload_retention_days,
    queue_retention_seconds, required, ConsumerEnv, ReceiverEnv,
};
use crate::config::{AwsSecretResolver, ConfigError, SecretRef, SecretResolver, SourceSpecs};
use crate::consumer::{Consumer, ConsumerSettings, Wiring};
use crate::destination::{Adapter, EventBus, FunctionTarget, PauseBoard, QueueTarget, Targets};
use crate::forward::ForwardSigner;
use crate::forward::HttpForwarder;
use crate::ledger::dynamo::DynamoLedger;
use crate::metrics::Metrics;
use crate::queue::SqsQueue;
use crate::receiver::{Receiver, ReceiverSettings};
use crate::redelivery::SqsRedelivery;
use crate::route::{Routes, Target, DESTINATIONS_VAR};

/// The deployed receiver.
pub type LambdaReceiver = Receiver<DynamoLedger, SqsQueue, SystemClock, Option<S3Bucket>>;
/// The deployed consumer, with the shipped HTTP forwarder, delaying and dead-lettering on
/// `QUEUE_URL` and `DLQ_URL` (where set), archiving through `ARCHIVE_STREAM` (where set).
pub type LambdaConsumer = Consumer<
    DynamoLedger,
    Option<HttpForwarder>,
    SystemClock,
    Wiring<Option<SqsRedelivery>, Option<S3Bucket>, Option<FirehoseArchive>, Targets>,
>;

/// A binary's `main` after its subscriber is set: builds the function (`built`: the
/// configuration, the clients, the secrets), then hands it to `run` (the runtime's loop).
///
/// A configuration error stops start-up with its message (its `Display`, the text
/// docs/configuration.md documents, never the `Debug` form `main` returning the error would
/// print) as one ERROR log line, JSON where `AWS_LAMBDA_LOG_FORMAT=JSON`, and exit status 1:
/// Lambda reports the init failure (`Runtime.ExitError`) and counts the invocation in the
/// function's `Errors`. The runtime's loop ending in an error (its API unreachable) is said
/// the same way.
pub async fn serve<T, E: Display>(
    built: impl Future<Output = Result<T, ConfigError>>,
    run: impl AsyncFnOnce(T) -> Result<(), E>,
) -> ExitCode {
    let function = match built.await {
        Ok(function) => function,
        Err(e) => return stop(&e),
    };
    match run(function).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => stop(&e),
    }
}

/// Why the function stops: the error's message as the log line's, nothing else, then 1.
fn stop(error: &dyn Display) -> ExitCode {
    tracing::error!("{error}");
    ExitCode::FAILURE
}

/// `WEBHOOK_SOURCES`, checked, and checked against `QUEUE_RETENTION_SECONDS` where set.
pub fn source_specs_from_env() -> Result<SourceSpecs, ConfigError> {
    let specs = SourceSpecs::parse(&required("WEBHOOK_SOURCES")?)?;
    if let Some(queue_retention) = queue_retention_seconds()? {
        let chain =
            crate::config::retention_chain_seconds(queue_retention, dlq_retention_seconds()?);
        specs.check_retention(chain)?;
        if let Some(days) = payload_retention_days()? {
            check_payload_retention(days, chain)?;
        }
    }
    Ok(specs)
}

/// Region, credentials and `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_<SERVICE>` from the
/// standard places, with the SDK's standard retry mode, and:
///
/// - **one HTTP client for every service client** built from this config (DynamoDB, SQS,
///   Secrets Manager, the credential providers): one connection pool and one TLS set-up (the
///   system roots are read once, not once per client). It is the client the SDK would build
///   for each of them (hyper 1, rustls with aws-lc, proxies from the environment).
/// - **no stalled-stream check on uploads.** Until a request's answer arrives, the upload check
///   sets a timer per request and wakes the task every 100 ms to measure the body's progress;
///   every body here is small, in memory and sent in one write, so there is no upload to
///   stall. Downloads keep the check.
pub async fn sdk_config() -> aws_config::SdkConfig {
    sdk_config_for(None).await
}

/// [`sdk_config`] from a named profile of the AWS config (`--profile` of `inbox-ops`).
pub async fn sdk_config_for(profile: Option<&str>) -> aws_config::SdkConfig {
    let loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    let loader = match profile {
        Some(name) => loader.profile_name(name),
        None => loader,
    };
    loader
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(3))
        .http_client(shared_http_client())
        .stalled_stream_protection(
            StalledStreamProtectionConfig::enabled()
                .upload_enabled(false)
                .build(),
        )
        .load()
        .await
}

/// The SDK's default HTTPS client, built once so that every client shares it. Connectors are
/// made per distinct set of timeouts, as the SDK's own default does.
fn shared_http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_with_connector_fn(|settings, components| {
        let mut connector = ConnectorBuilder::default().tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ));
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}

/// Trace export where `OTEL_EXPORTER_OTLP_ENDPOINT` says (docs/operations.md, "Traces"), as
/// `service` unless `OTEL_SERVICE_NAME` names it; an endpoint that is no URL stops start-up.
fn traces(service: &str) -> Result<(), ConfigError> {
    crate::trace::install_from_env(service)
        .map(|_| ())
        .map_err(|e| ConfigError::BadVar {
            name: "OTEL_EXPORTER_OTLP_ENDPOINT",
            message: e.to_string(),
        })
}

pub async fn receiver_from_env() -> Result<LambdaReceiver, ConfigError> {
    let env = ReceiverEnv::from_env()?;
    traces("inbox-receiver")?;
    let specs = source_specs_from_env()?;
    let sdk = sdk_config().await;
    let sources = specs.resolve(&AwsSecretResolver::new(&sdk)).await?;
    let receiver = Receiver::new(
        sources,
        DynamoLedger::new(aws_sdk_dynamodb::Client::new(&sdk), env.ledger_table),
        SqsQueue::new(aws_sdk_sqs::Client::new(&sdk), env.queue_url),
        SystemClock,
        ReceiverSettings {
            max_body_bytes: usize::try_from(env.max_body_bytes).unwrap_or(usize::MAX),
            replay_cache_keys: usize::try_from(env.replay_cache_keys).unwrap_or(usize::MAX),
            replay_cache_bytes: usize::try_from(env.replay_cache_bytes).unwrap_or(usize::MAX),
            replay_cache_max_age: Duration::from_secs(env.replay_cache_seconds),
        },
        Metrics::stdout("receiver"),
    )
    .with_secret_resolver(AwsSecretResolver::new(&sdk))
    .with_key_fetcher(
        crate::key_fetch::KeyFetcher::from_env(env.test_ca.as_ref()).map_err(|message| {
            ConfigError::BadVar {
                name: crate::key_fetch::TEST_ORIGIN_ENV,
                message,
            }
        })?,
    );
    if env.payload_bucket.is_none() {
        tracing::warn!("PAYLOAD_BUCKET is not set: a body whose envelope would not fit the queue is refused with 413");
    }
    let s3 = crate::bucket::s3_client(&sdk);
    Ok(receiver.with_store(env.payload_bucket.map(|bucket| S3Bucket::new(s3, bucket))))
}

pub async fn consumer_from_env() -> Result<LambdaConsumer, ConfigError> {
    let env = ConsumerEnv::from_env()?;
    traces("inbox-consumer")?;
    let specs = source_specs_from_env()?;
    let archives = env.archive_bodies || specs.iter().any(|s| s.archive == Some(true));
    for (name, set) in [
        ("ARCHIVE_STREAM", env.archive_stream.is_some()),
        ("PAYLOAD_BUCKET", env.payload_bucket.is_some()),
    ] {
        if archives && !set {
            return Err(ConfigError::BadVar {
                name,
                message: "must be set where ARCHIVE_BODIES or a source's `archive` is on".into(),
            });
        }
    }
    let sdk = sdk_config().await;
    let signer =
        forward_signer(&env.forward_signing_secrets, &AwsSecretResolver::new(&sdk)).await?;
    if signer.is_none() {
        tracing::warn!("FORWARD_SIGNING_SECRET is not set: forwards are not signed");
    }
    let forwarder = default_forwarder(&env, signer.clone())?;
    let destinations =
        crate::config::vars::var(DESTINATIONS_VAR, crate::config::vars::Function::Consumer)
            .text()
            .unwrap_or_default();
    let routes = Routes::parse(&destinations, &specs)?;
    let routes = if forwarder.is_some() {
        routes
    } else {
        tracing::warn!(
            "FORWARD_URL is not set: an event no destination takes goes nowhere (metric Unrouted)"
        );
        routes.without_forward()
    };
    let store = env
        .payload_bucket
        .clone()
        .map(|bucket| S3Bucket::new(crate::bucket::s3_client(&sdk), bucket));
    let targets = targets(
        &routes,
        &sdk,
        &env,
        store.clone(),
        &AwsSecretResolver::new(&sdk),
        signer.as_ref(),
    )
    .await?;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let redelivery = env
        .queue_url
        .map(|queue_url| SqsRedelivery::new(sqs, queue_url, env.dlq_url));
    Ok(Consumer::new(
        specs,
        DynamoLedger::new(aws_sdk_dynamodb::Client::new(&sdk), env.ledger_table),
        forwarder,
        SystemClock,
        ConsumerSettings {
            max_concurrent_groups: env.max_concurrent_groups,
            max_failures: env.max_failures,
            queue_retention_seconds: queue_retention_seconds()?,
            archive_bodies: env.archive_bodies,
        },
        Metrics::stdout("consumer"),
    )
    .with_redelivery(redelivery)
    .with_store(store)
    .with_archive(
        env.archive_stream
            .map(|stream| FirehoseArchive::new(aws_sdk_firehose::Client::new(&sdk), stream)),
    )
    .with_destinations(routes, targets))
}

/// The forward to `FORWARD_URL`, signed where there is a signer; `None` without a URL.
fn default_forwarder(
    env: &ConsumerEnv,
    signer: Option<ForwardSigner>,
) -> Result<Option<HttpForwarder>, ConfigError> {
    let Some(url) = env.forward_url.clone() else {
        return Ok(None);
    };
    let timeout = Duration::from_millis(env.forward_timeout_ms);
    let forwarder = HttpForwarder::trusting(url, timeout, env.test_ca.as_ref()).map_err(|e| {
        ConfigError::BadVar {
            name: "FORWARD_URL",
            message: e.to_string(),
        }
    })?;
    Ok(Some(match signer {
        Some(signer) => forwarder.signed(signer),
        None => forwarder,
    }))
}

/// One adapter per destination of `routes` (docs/routing.md), each SDK client built once,
/// an HTTP destination's secrets read once (its client trusting `HTTPS_TEST_CA_FILE`'s CA
/// too where the environment names one); the pause board in the ledger's table. An
/// `https://` destination without `signing_secret` is signed with `forward` (the stack's
/// forward secret), unless it is declared `"unsigned": true`.
pub async fn targets(
    routes: &Routes,
    sdk: &aws_config::SdkConfig,
    env: &ConsumerEnv,
    store: Option<S3Bucket>,
    resolver: &impl SecretResolver,
    forward: Option<&ForwardSigner>,
) -> Result<Targets, ConfigError> {
    let bad = |name: &str, message: String| ConfigError::BadVar {
        name: DESTINATIONS_VAR,
        message: format!("destination `{name}`: {message}"),
    };
    let mut adapters = std::collections::BTreeMap::new();
    for d in routes.iter() {
        let adapter = match &d.target {
            Target::Https(url) => {
                let timeout = d.timeout_ms.unwrap_or(env.forward_timeout_ms);
                let timeout = Duration::from_millis(timeout);
                let forwarder = HttpForwarder::trusting(url.clone(), timeout, env.test_ca.as_ref())
                    .map_err(|e| bad(&d.name, e.to_string()))?;
                let own = forward_signer(&d.signing_secrets, resolver)
                    .await
                    .map_err(|e| bad(&d.name, e.to_string()))?;
                match destination_signer(d, own, forward) {
                    Some(signer) => Adapter::Http(forwarder.signed(signer)),
                    None => {
                        tracing::warn!(
                            destination = d.name,
                            declared_unsigned = d.unsigned,
                            "destination's forwards are not signed"
                        );
                        Adapter::Http(forwarder)
                    }
                }
            }
            Target::EventBus { arn } => Adapter::Bus(EventBus::new(
                aws_sdk_eventbridge::Client::new(sdk),
                arn.clone(),
                store.clone(),
            )),
            Target::Queue { url, fifo, .. } => Adapter::Queue(QueueTarget::new(
                aws_sdk_sqs::Client::new(sdk),
                d.name.clone(),
                url.clone(),
                *fifo,
                store.clone(),
            )),
            Target::Function { arn } => Adapter::Function(FunctionTarget::new(
                aws_sdk_lambda::Client::new(sdk),
                arn.clone(),
                store.clone(),
            )),
        };
        adapters.insert(d.name.clone(), adapter);
    }
    let pauses = (!routes.is_empty())
        .then(|| PauseBoard::new(aws_sdk_dynamodb::Client::new(sdk), env.ledger_table.clone()));
    // Each destination's `max_per_second`, counted in the ledger's table (docs/routing.md).
    let rates = crate::destination::RateLimits::of(
        routes,
        std::sync::Arc::new(crate::destination::DynamoRate::new(
            aws_sdk_dynamodb::Client::new(sdk),
            env.ledger_table.clone(),
        )),
        Metrics::stdout("consumer"),
    );
    Ok(Targets::new(adapters, pauses).with_rate_limits(rates))
}

/// Who signs an `https://` destination's forwards: its own `signing_secret`, else the
/// stack's forward secret, none where it is declared `"unsigned": true` (or there is neither).
pub fn destination_signer(
    d: &crate::route::Destination,
    own: Option<ForwardSigner>,
    forward: Option<&ForwardSigner>,
) -> Option<ForwardSigner> {
    match own {
        Some(signer) => Some(signer),
        None if d.unsigned => None,
        None => forward.cloned(),
    }
}

/// The signer of `FORWARD_SIGNING_SECRET`'s secrets, each read once (`None` when there are
/// none); a secret that cannot be read or is not a `whsec_` secret stops start-up.
pub async fn forward_signer(
    references: &[SecretRef],
    resolver: &impl SecretResolver,
) -> Result<Option<ForwardSigner>, ConfigError> {
    if references.is_empty() {
        return Ok(None);
    }
    let bad = |message: String| ConfigError::BadVar {
        name: "FORWARD_SIGNING_SECRET",
        message,
    };
    let mut values = Vec::with_capacity(references.len());
    for reference in references {
        values.push(resolver.resolve(reference).await.map_err(bad)?);
    }
    ForwardSigner::new(&values).map(Some).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::parse_forward_signing_secrets;

    /// The only test that sets `WEBHOOK_SOURCES` and the retention variables: one test, so
    /// that no other reads them while they change.
    #[test]
    fn start_up_checks_the_sources_against_the_retention_variables_it_reads() {
        let vars = [
            "WEBHOOK_SOURCES",
            "QUEUE_RETENTION_SECONDS",
            "DLQ_RETENTION_SECONDS",
            "PAYLOAD_RETENTION_DAYS",
        ];
        let run = |values: [Option<&str>; 4]| {
            for (name, value) in vars.iter().zip(values) {
                match value {
                    Some(v) => std::env::set_var(name, v),
                    None => std::env::remove_var(name),
                }
            }
            source_specs_from_env()
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        // 240 hours: ten days, a day short of the template's chain (4 d + 6 d + 1 d).
        let sources = r#"{"s": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}, "retention_hours": 240}}"#;
        let queue = Some("345600");
        assert_eq!(run([Some(sources), queue, None, None]), Ok(()));
        let e = run([Some(sources), queue, Some("518400"), None]).unwrap_err();
        assert!(
            e.contains("retention chain (950400 s"),
            "the DLQ is read: {e}"
        );
        let e = run([Some(sources), queue, Some("six days"), None]).unwrap_err();
        assert!(e.contains("DLQ_RETENTION_SECONDS"), "{e}");
        // The payload bucket's days against the queue alone (345,600 s: four days).
        let e = run([Some(sources), queue, None, Some("3")]).unwrap_err();
        assert!(
            e.contains("PAYLOAD_RETENTION_DAYS") && e.contains("3 days"),
            "{e}"
        );
        assert_eq!(run([Some(sources), queue, None, Some("4")]), Ok(()));
        let e = run([Some(sources), queue, None, Some("x")]).unwrap_err();
        assert!(e.contains("PAYLOAD_RETENTION_DAYS"), "{e}");
        // No queue retention: nothing is checked against it.
        assert_eq!(
            run([Some(sources), None, Some("518400"), Some("1")]),
            Ok(())
        );
        let e = run([None, queue, None, None]).unwrap_err();
        assert!(e.contains("WEBHOOK_SOURCES"), "{e}");
    }

    /// A configuration error ends start-up (the runtime's loop never runs) with status 1; the
    /// loop's own error too. The line each logs is checked on the binaries (`e2e` test
    /// `start_up`).
    #[tokio::test]
    async fn serve_stops_with_status_1_on_a_configuration_or_runtime_error() {
        let ran = std::cell::Cell::new(false);
        let bad = ConfigError::MissingVar("LEDGER_TABLE");
        let code = serve(async { Err::<(), _>(bad) }, async |()| {
            ran.set(true);
            Ok::<(), String>(())
        })
        .await;
        assert_eq!(code, ExitCode::FAILURE);
        assert!(!ran.get(), "the runtime does not start");
        let code = serve(
            async { Ok(()) },
            async |()| Err("no runtime API".to_owned()),
        )
        .await;
        assert_eq!(code, ExitCode::FAILURE);
        let code = serve(async { Ok(()) }, async |()| Ok::<(), String>(())).await;
        assert_eq!(code, ExitCode::SUCCESS);
    }

    #[tokio::test]
    async fn an_https_destination_is_signed_with_its_own_secret_else_the_forwards_unless_unsigned()
    {
        std::env::set_var(
            "INBOX_TEST_DEST_OWN",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        );
        std::env::set_var("INBOX_TEST_DEST_FWD", "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7f");
        let resolver = AwsSecretResolver::env_only();
        let refs = |text: &str| parse_forward_signing_secrets(text).unwrap();
        let own = forward_signer(&refs("env:INBOX_TEST_DEST_OWN"), &resolver)
            .await
            .unwrap();
        let fwd = forward_signer(&refs("env:INBOX_TEST_DEST_FWD"), &resolver)
            .await
            .unwrap()
            .expect("signed");
        let sources = crate::SourceSpecs::parse(
            r#"{"s": {"signature": {"scheme": "none"}, "allow_unsigned": true, "key": {"from": "payload_sha256"}}}"#,
        )
        .unwrap();
        let routes = Routes::parse(
            r#"{"plain": {"target": "https://a.example/in", "sources": ["s"]},
                "open": {"target": "https://b.example/in", "sources": ["s"], "unsigned": true}}"#,
            &sources,
        )
        .unwrap();
        let (plain, open) = (routes.get("plain").unwrap(), routes.get("open").unwrap());
        let signature = |s: Option<ForwardSigner>| s.map(|s| s.sign("k", None, 1, b"x").signature);
        let forward_signature = signature(Some(fwd.clone()));
        assert!(forward_signature.is_some());
        // No secret of its own: the forward's.
        assert_eq!(
            signature(destination_signer(plain, None, Some(&fwd))),
            forward_signature
        );
        // Its own wins.
        let mine = signature(destination_signer(plain, own.clone(), Some(&fwd)));
        assert_eq!(mine, signature(own));
        assert_ne!(mine, forward_signature);
        // Declared unsigned: none; no forward secret either: none.
        assert_eq!(signature(destination_signer(open, None, Some(&fwd))), None);
        assert_eq!(signature(destination_signer(plain, None, None)), None);
    }

    #[tokio::test]
    async fn the_forward_signer_reads_each_reference_and_checks_whsec() {
        std::env::set_var("INBOX_TEST_FWD_A", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        std::env::set_var("INBOX_TEST_FWD_B", "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7f");
        std::env::set_var("INBOX_TEST_FWD_BAD", "hunter2");
        let resolver = AwsSecretResolver::env_only();
        let refs = |text: &str| parse_forward_signing_secrets(text).unwrap();
        assert!(forward_signer(&[], &resolver).await.unwrap().is_none());
        let signer = forward_signer(
            &refs("env:INBOX_TEST_FWD_A,env:INBOX_TEST_FWD_B"),
            &resolver,
        )
        .await
        .unwrap()
        .expect("signed");
        assert_eq!(
            signer.sign("k", None, 1, b"x").signature.split(' ').count(),
            2
        );
        for (text, says) in [
            (
                "env:INBOX_TEST_FWD_A,env:INBOX_TEST_FWD_BAD",
                "secret #2 decodes to 5 bytes; a whsec_ key",
            ),
            (
                "env:INBOX_TEST_FWD_ABSENT",
                "INBOX_TEST_FWD_ABSENT is not set",
            ),
        ] {
            let e = forward_signer(&refs(text), &resolver)
                .await
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("environment variable FORWARD_SIGNING_SECRET: "),
                "{e}"
            );
            assert!(e.contains(says), "{e}");
            assert!(!e.contains("hunter2"), "never the value: {e}");
        }
    }
}
