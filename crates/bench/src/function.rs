//! The functions under test as processes: how each is started (program, arguments,
//! environment) and the Lambda environment every process gets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};
use devstack::testkit::TEST_WHSEC;

/// The one source both receivers serve: Standard Webhooks, keyed on `webhook-id`, FIFO
/// groups per customer (the bench stack's `WebhookSources`).
pub const SOURCES: &str = r#"{"acme": {"signature": {"scheme": "standard-webhooks", "secrets": ["env:INBOX_TEST_WHSEC"]},
  "key": {"from": "header", "name": "webhook-id"},
  "group": {"from": "json", "pointers": ["/customer_id"]}}}"#;

/// A function: its name, how to start one of its processes, its own environment.
#[derive(Clone)]
pub struct Function {
    pub name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Function {
    /// The receiver binary with its environment from the bench stack (`stack_env`: its
    /// function configuration) and the source's secret.
    pub fn receiver(program: &Path, stack_env: &BTreeMap<String, String>) -> Function {
        let mut env = lambda_env(stack_env);
        env.push(("INBOX_TEST_WHSEC".into(), TEST_WHSEC.into()));
        Function {
            name: "receiver",
            program: program.to_owned(),
            args: Vec::new(),
            env,
        }
    }

    /// The consumer binary with its environment from the bench stack, on `endpoint` directly
    /// (its init duration; its run is given a proxy lane with [`Function::with_endpoint`]).
    pub fn consumer(
        program: &Path,
        stack_env: &BTreeMap<String, String>,
        endpoint: &str,
    ) -> Function {
        let mut env = lambda_env(stack_env);
        env.push(("AWS_ENDPOINT_URL".into(), endpoint.to_owned()));
        Function {
            name: "consumer",
            program: program.to_owned(),
            args: Vec::new(),
            env,
        }
    }

    /// The Powertools peer (bench/powertools_handler.py under bench/python_runtime.py) on
    /// its own table and queue.
    pub fn powertools_peer(python: &Path, root: &Path, table: &str, queue_url: &str) -> Function {
        Function {
            name: "powertools-peer",
            program: python.to_owned(),
            args: vec![
                root.join("bench/python_runtime.py").display().to_string(),
                "powertools_handler.handler".into(),
            ],
            env: vec![
                ("PEER_TABLE".into(), table.to_owned()),
                ("PEER_QUEUE_URL".into(), queue_url.to_owned()),
                ("PEER_WHSEC".into(), TEST_WHSEC.into()),
                ("POWERTOOLS_SERVICE_NAME".into(), "bench".into()),
                ("PYTHONDONTWRITEBYTECODE".into(), "".into()),
            ],
        }
    }

    /// The same function with `AWS_ENDPOINT_URL` set to `endpoint` (added last, so it wins).
    pub fn with_endpoint(&self, endpoint: &str) -> Function {
        let mut f = self.clone();
        f.env.push(("AWS_ENDPOINT_URL".into(), endpoint.to_owned()));
        f
    }

    /// Starts one process polling the Runtime API at `runtime_api`; it is killed when the
    /// child is dropped.
    pub fn spawn(&self, runtime_api: &str) -> Result<tokio::process::Child> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .env_remove("AWS_PROFILE")
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", self.name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{}", self.name),
            )
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "2026/01/01/[$LATEST]bench")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        cmd.spawn()
            .with_context(|| format!("starting {}", self.program.display()))
    }
}

/// A function's environment from its stack configuration, with the log settings Lambda adds
/// from its `LoggingConfig` (JSON, INFO).
fn lambda_env(stack_env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = stack_env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.push(("AWS_LAMBDA_LOG_FORMAT".into(), "JSON".into()));
    env.push(("AWS_LAMBDA_LOG_LEVEL".into(), "INFO".into()));
    env
}
