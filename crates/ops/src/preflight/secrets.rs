//! The secrets the sources reference, checked with the operator's own credentials before the
//! receiver meets them at its cold start, where one bad secret stops it for every source.
//!
//! For each reference, every problem is listed (not only a source's first):
//!
//! - `env:` is refused: the deployed functions have no such variable.
//! - `secretsmanager:NAME_OR_ARN` is described (`DescribeSecret`, which reads no value): it
//!   exists, is not scheduled for deletion, and its ARN is one the receiver's role may read
//!   ([`Access`]).
//! - Its value is read by the library's resolver ([`AwsSecretResolver`], `GetSecretValue`, as
//!   the receiver reads it) and checked by the library's rule for the source's scheme
//!   ([`inbox::signature::check_secret_length`]); the docs' `whsec_…` placeholder is named.
//! - A source whose secrets all passed is then resolved alone by [`SourceSpecs::resolve`], the
//!   receiver's own cold start, with the values already read.
//!
//! A value is held in memory only while the check runs and never printed: every message
//! names the source, the secret's position and its reference, as the library's do.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use aws_sdk_secretsmanager::error::DisplayErrorContext;
use inbox::config::{AwsSecretResolver, ConfigError, SecretRef, SecretResolver, SourceSpec};
use inbox::SourceSpecs;
use serde_json::{Map, Value};

use super::access::Access;
use super::report::Report;
use super::values::is_placeholder_secret;
use crate::audit::SOURCES_PARAMETER;

/// The parameter that lists what the receiver may read.
const SECRET_ARNS: &str = "SecretArns";

/// The library's resolver, each reference read once: the per-secret checks and the cold start
/// that follows them share the values.
struct ReadOnce {
    inner: AwsSecretResolver,
    values: Mutex<HashMap<String, Result<String, String>>>,
}

impl ReadOnce {
    fn cached(&self, key: &str) -> Option<Result<String, String>> {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        values.get(key).cloned()
    }
}

impl SecretResolver for ReadOnce {
    async fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
        let key = reference.to_string();
        if let Some(hit) = self.cached(&key) {
            return hit;
        }
        let read = self.inner.resolve(reference).await;
        self.values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, read.clone());
        read
    }
}

/// What `DescribeSecret` says of a secret (no value).
#[derive(Clone, Debug)]
struct Described {
    arn: String,
    name: String,
    /// Whether it holds a value (a version staged `AWSCURRENT`).
    has_value: bool,
}

/// Why `DescribeSecret` found nothing usable.
#[derive(Clone, Debug)]
enum NotDescribed {
    /// No such secret.
    Missing(String),
    /// Scheduled for deletion, or the call failed.
    Other(String),
}

impl NotDescribed {
    fn message(&self) -> &str {
        match self {
            NotDescribed::Missing(m) | NotDescribed::Other(m) => m,
        }
    }
}

/// The checks of every source's secrets against one Secrets Manager (the deploy's region).
pub struct SecretChecks<'a> {
    client: aws_sdk_secretsmanager::Client,
    resolver: ReadOnce,
    access: &'a Access,
    region: String,
    described: HashMap<String, Result<Described, NotDescribed>>,
}

impl<'a> SecretChecks<'a> {
    /// Checks on `sdk` (the operator's credentials, the deploy's region).
    pub fn new(sdk: &aws_config::SdkConfig, access: &'a Access, region: &str) -> Self {
        SecretChecks {
            client: aws_sdk_secretsmanager::Client::new(sdk),
            resolver: ReadOnce {
                inner: AwsSecretResolver::new(sdk),
                values: Mutex::new(HashMap::new()),
            },
            access,
            region: region.to_owned(),
            described: HashMap::new(),
        }
    }

    /// Every source of `specs`; `sources_json` is the text they were parsed from (each source
    /// is resolved alone from its own entry).
    pub async fn check(&mut self, specs: &SourceSpecs, sources_json: &str, report: &mut Report) {
        let entries: Map<String, Value> = serde_json::from_str(sources_json).unwrap_or_default();
        for spec in specs.iter() {
            let before = report.problem_count();
            let mut waiting = false;
            for (index, reference) in spec.secrets.iter().enumerate() {
                waiting |= self.check_secret(spec, index + 1, reference, report).await;
            }
            if waiting {
                report.note(format!(
                    "source `{}` is pending: until its secret is stored its requests are answered 503 with Retry-After (the sender retries; nothing is accepted unsigned); once the sender shows the secret: inbox-ops secret set {} --stack <stack> (docs/deploying.md, \"A sender whose secret comes after the URL\")",
                    spec.name, spec.name
                ));
            } else if report.problem_count() == before {
                if let Some(entry) = entries.get(&spec.name) {
                    self.cold_start(spec, entry, report).await;
                }
            }
        }
    }

    /// Secret number `position` of `spec`; `true` where the source is pending and this
    /// secret does not exist yet or holds no value (which only a pending source may).
    async fn check_secret(
        &mut self,
        spec: &SourceSpec,
        position: usize,
        reference: &SecretRef,
        report: &mut Report,
    ) -> bool {
        let id = match reference {
            SecretRef::Env(name) => {
                let why = format!(
                    "secret #{position} `{reference}`: an env: reference cannot be deployed (the deployed functions have no variable {name}); store the secret in Secrets Manager and reference it as secretsmanager:NAME"
                );
                report.refuse(SOURCES_PARAMETER, field(spec, why));
                return false;
            }
            SecretRef::SecretsManager(id) => id,
        };
        let described = match self.describe(reference, id).await {
            Ok(described) => described,
            Err(NotDescribed::Missing(_)) if spec.pending && !id.starts_with("arn:") => {
                self.check_future_access(spec, position, id, report);
                return true;
            }
            Err(why) => {
                report.refuse(
                    SOURCES_PARAMETER,
                    field(spec, format!("secret #{position} {}", why.message())),
                );
                return false;
            }
        };
        match self.access.grant(&described.arn) {
            Some(grant) => report.pass(format!(
                "secret {} readable by the receiver ({grant})",
                described.name
            )),
            None => report.refuse(
                SECRET_ARNS,
                format!(
                    "secret {} ({}), secret #{position} of source `{}`: the receiver's role may not read it: {}",
                    described.name,
                    described.arn,
                    spec.name,
                    self.access.describe()
                ),
            ),
        }
        if spec.pending && !described.has_value {
            return true;
        }
        self.check_value(spec, position, reference, &described.name, report)
            .await;
        false
    }

    /// A pending source's secret that `inbox-ops secret set` will create under the name `id`:
    /// the receiver must be allowed to read it then. With `SecretArns` empty, the name must
    /// start `<stack>/`; a listed ARN cannot be matched before the secret (and its ARN's
    /// suffix) exists, which the note says.
    fn check_future_access(
        &self,
        spec: &SourceSpec,
        position: usize,
        id: &str,
        report: &mut Report,
    ) {
        match self.access {
            Access::StackSecrets { stack, .. } if !id.starts_with(&format!("{stack}/")) => {
                report.refuse(
                    SECRET_ARNS,
                    format!(
                        "secret {id}, secret #{position} of pending source `{}`: the receiver's role may not read it once stored: {}",
                        spec.name,
                        self.access.describe()
                    ),
                );
            }
            Access::StackSecrets { .. } => report.pass(format!(
                "secret {id} of pending source `{}` does not exist yet; once stored the receiver may read it (the stack's own secrets)",
                spec.name
            )),
            Access::Listed(_) => report.note(format!(
                "secret {id} of pending source `{}` does not exist yet: once stored, run preflight again to check SecretArns lets the receiver read it",
                spec.name
            )),
        }
    }

    /// The value, read as the receiver reads it, is valid for the source's scheme.
    async fn check_value(
        &self,
        spec: &SourceSpec,
        position: usize,
        reference: &SecretRef,
        name: &str,
        report: &mut Report,
    ) {
        let problem = match self.resolver.resolve(reference).await {
            Err(why) => Some(format!("secret #{position} {why}")),
            Ok(value) if is_placeholder_secret(&value) => Some(format!(
                "secret #{position} `{reference}` holds the docs' placeholder whsec_\u{2026}, not the sender's signing secret"
            )),
            Ok(value) => inbox::signature::check_secret_length_at_least(
                &spec.scheme,
                position,
                &value,
                spec.min_secret_bytes,
            )
                .err()
                .map(|why| format!("{why} (`{reference}`)")),
        };
        match problem {
            Some(why) => report.refuse(SOURCES_PARAMETER, field(spec, why)),
            None => report.pass(format!(
                "secret {name} exists and is valid for source `{}` ({} scheme, secret #{position})",
                spec.name,
                spec.scheme.name()
            )),
        }
    }

    /// `DescribeSecret`, once per id.
    async fn describe(
        &mut self,
        reference: &SecretRef,
        id: &str,
    ) -> Result<Described, NotDescribed> {
        if let Some(known) = self.described.get(id) {
            return known.clone();
        }
        let described = match self.client.describe_secret().secret_id(id).send().await {
            Ok(out) if out.deleted_date().is_some() => Err(NotDescribed::Other(format!(
                "`{reference}`: the secret is scheduled for deletion (restore it: aws secretsmanager restore-secret)"
            ))),
            Ok(out) => match out.arn() {
                Some(arn) => Ok(Described {
                    arn: arn.to_owned(),
                    name: out.name().unwrap_or(id).to_owned(),
                    has_value: out.version_ids_to_stages().is_some_and(|versions| {
                        versions
                            .values()
                            .any(|stages| stages.iter().any(|s| s == "AWSCURRENT"))
                    }),
                }),
                None => Err(NotDescribed::Other(format!(
                    "`{reference}`: DescribeSecret gave no ARN"
                ))),
            },
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_resource_not_found_exception()) =>
            {
                Err(NotDescribed::Missing(format!(
                    "`{reference}`: no such secret in {} (create it: docs/deploying.md, \"Secrets\"; or, for a sender that gives its secret only after the URL exists, declare the source \"pending\": true)",
                    self.region
                )))
            }
            Err(e) => Err(NotDescribed::Other(format!(
                "`{reference}`: DescribeSecret: {}",
                DisplayErrorContext(e)
            ))),
        };
        self.described.insert(id.to_owned(), described.clone());
        described
    }

    /// The receiver's cold start for this source alone: [`SourceSpecs::resolve`].
    async fn cold_start(&self, spec: &SourceSpec, entry: &Value, report: &mut Report) {
        let mut one = Map::new();
        one.insert(spec.name.clone(), entry.clone());
        let outcome = match SourceSpecs::parse(&Value::Object(one).to_string()) {
            Ok(alone) => alone.resolve(&self.resolver).await.map(drop),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => report.pass(format!(
                "source `{}` starts as the receiver's cold start would start it ({} scheme, {} secret{})",
                spec.name,
                spec.scheme.name(),
                spec.secrets.len(),
                if spec.secrets.len() == 1 { "" } else { "s" }
            )),
            Err(e) => report.refuse(SOURCES_PARAMETER, e.to_string()),
        }
    }
}

/// The library's own wording: ``source `x`, field `signature.secrets`: ...``.
fn field(spec: &SourceSpec, message: String) -> String {
    ConfigError::Field {
        source_name: spec.name.clone(),
        field: "signature.secrets",
        message,
    }
    .to_string()
}
