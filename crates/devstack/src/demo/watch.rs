//! Both functions under `cargo lambda watch` (the Runtime API emulator), as the demo and
//! `demo serve` run them: the env file it reads, the process and its output, and calls to it.
//!
//! `cargo lambda watch` serves the receiver at `/lambda-url/receiver/...` and invokes any
//! function at `/2015-03-31/functions/<name>/invocations` (what `cargo lambda invoke` calls).
//! It starts each function with `cargo run` and passes its own environment on, plus the
//! `--env-file`. The demo starts it in a process group of its own and stops the whole group
//! (cargo-lambda, `cargo run`, the function binaries) when it stops, Ctrl-C included.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_yaml::Value as Yaml;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::provision::{Provisioned, Template};
use crate::testkit::{TEST_SECRET, TEST_SOURCES, TEST_WHSEC};

/// The two functions' binaries, as the template's `BuildProperties.Binary` names them.
pub const FUNCTIONS: [&str; 2] = ["receiver", "consumer"];

/// Variables the functions get locally, in env-file order.
///
/// The template's literal values for both functions (`Globals` and each function's own), so
/// local runs with the deployed settings; for its `!Ref`s, the local resources; then the
/// standard SDK settings pointed at moto, dummy credentials, and the demo sources' secrets.
pub fn local_env(
    template: &Template,
    resources: &Provisioned,
    aws_endpoint: &str,
    forward_url: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let sources: serde_json::Value =
        serde_json::from_str(TEST_SOURCES).context("the demo sources")?;
    let local: BTreeMap<&str, String> = BTreeMap::from([
        ("LEDGER_TABLE", resources.table.clone()),
        ("QUEUE_URL", resources.queue_url.clone()),
        ("WEBHOOK_SOURCES", sources.to_string()),
        ("FORWARD_URL", forward_url.to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ]);
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    for binary in FUNCTIONS {
        let id = function_logical_id(template.document(), binary)
            .with_context(|| format!("template.yaml has no function with Binary {binary}"))?;
        for (name, literal) in template_env(template.document(), &id) {
            let value = match (literal, local.get(name.as_str())) {
                (_, Some(local)) => local.clone(),
                (Some(literal), None) => literal,
                (None, None) => bail!(
                    "template.yaml: {id} sets {name} from an intrinsic the local run has no value for"
                ),
            };
            vars.insert(name, value);
        }
    }
    for name in [
        "LEDGER_TABLE",
        "QUEUE_URL",
        "WEBHOOK_SOURCES",
        "FORWARD_URL",
    ] {
        if !vars.contains_key(name) {
            bail!("template.yaml gives no function {name}");
        }
    }
    let mut out: Vec<(String, String)> = vars.into_iter().collect();
    out.extend(
        [
            ("AWS_ENDPOINT_URL", aws_endpoint),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("INBOX_TEST_SECRET", TEST_SECRET),
            ("INBOX_TEST_WHSEC", TEST_WHSEC),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    Ok(out)
}

/// An `--env-file`: `KEY=VALUE` lines; a value holding JSON (or anything but plain
/// characters) single-quoted, as cargo-lambda's dotenv parser needs.
pub fn env_file(vars: &[(String, String)]) -> String {
    let mut text = String::from(
        "# cargo lambda watch --env-file: local settings for both functions (written by the demo).\n",
    );
    for (name, value) in vars {
        let plain = value.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/' | ',' | '@')
        });
        if plain {
            text.push_str(&format!("{name}={value}\n"));
        } else {
            text.push_str(&format!("{name}='{value}'\n"));
        }
    }
    text
}

/// The logical id of the `AWS::Serverless::Function` built from `binary`.
fn function_logical_id(doc: &Yaml, binary: &str) -> Option<String> {
    doc.get("Resources")?
        .as_mapping()?
        .iter()
        .find_map(|(id, r)| {
            let built = r.get("Metadata")?.get("BuildProperties")?.get("Binary")?;
            (built.as_str() == Some(binary))
                .then(|| id.as_str().map(str::to_owned))
                .flatten()
        })
}

/// A function's environment (`Globals.Function` merged with its own): literal values, and
/// `None` where the template computes the value.
fn template_env(doc: &Yaml, logical_id: &str) -> Vec<(String, Option<String>)> {
    let global = doc
        .get("Globals")
        .and_then(|g| g.get("Function"))
        .and_then(|f| f.get("Environment"))
        .and_then(|e| e.get("Variables"))
        .and_then(Yaml::as_mapping);
    let own = doc
        .get("Resources")
        .and_then(|r| r.get(logical_id))
        .and_then(|r| r.get("Properties"))
        .and_then(|p| p.get("Environment"))
        .and_then(|e| e.get("Variables"))
        .and_then(Yaml::as_mapping);
    let mut vars = BTreeMap::new();
    for map in [global, own].into_iter().flatten() {
        for (k, v) in map {
            let Some(name) = k.as_str() else { continue };
            let literal = match v {
                Yaml::String(s) => Some(s.clone()),
                Yaml::Number(n) => Some(n.to_string()),
                Yaml::Bool(b) => Some(b.to_string()),
                _ => None,
            };
            vars.insert(name.to_owned(), literal);
        }
    }
    vars.into_iter().collect()
}

/// Where a client reaches a server bound to `address:port` (`::` and `0.0.0.0`: loopback).
fn client_address(address: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let ip: std::net::IpAddr = match address {
        "::" | "0.0.0.0" => std::net::Ipv4Addr::LOCALHOST.into(),
        other => other
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .with_context(|| format!("watch address {other}"))?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// The variables `cargo run` sets for the program it runs (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`,
/// ...). A cargo started from that program must not inherit them: a build script that watches one
/// (ring's watches `CARGO_MANIFEST_DIR`) would see it change and rebuild, for this build and the
/// next one started from a shell.
pub fn cargo_run_vars() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| {
            matches!(
                name.as_str(),
                "CARGO"
                    | "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
            ) || name.starts_with("CARGO_PKG_")
        })
        .collect()
}

/// A port nobody listens on now (the OS picks it).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding loopback")?;
    Ok(listener.local_addr()?.port())
}

/// How to start `cargo lambda watch`.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    pub root: PathBuf,
    pub env_file: PathBuf,
    pub address: String,
    pub port: u16,
    /// `--concurrency`: instances per function.
    pub concurrency: u32,
    /// Everything the process prints goes here.
    pub log: PathBuf,
    /// Copy what it prints to the terminal too (`demo serve`).
    pub echo: bool,
}

/// What the functions printed that the demo reads back: CloudWatch EMF lines.
#[derive(Clone, Debug, Default)]
pub struct Output {
    emf: Arc<Mutex<Vec<String>>>,
}

impl Output {
    /// The EMF lines printed so far by `function` ("receiver" or "consumer").
    pub fn emf(&self, function: &str) -> Vec<String> {
        let lines = match self.emf.lock() {
            Ok(l) => l.clone(),
            Err(p) => p.into_inner().clone(),
        };
        lines
            .into_iter()
            .filter(|l| {
                serde_json::from_str::<serde_json::Value>(l)
                    .ok()
                    .and_then(|v| {
                        v.get("function")
                            .and_then(|f| f.as_str())
                            .map(str::to_owned)
                    })
                    .as_deref()
                    == Some(function)
            })
            .collect()
    }

    /// Sum of one metric over every source, for one function.
    pub fn count(&self, function: &str, metric: inbox::metrics::Metric) -> u64 {
        self.emf(function)
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get(metric.name()).and_then(|n| n.as_u64()))
            .sum()
    }
}

/// A running `cargo lambda watch`, stopped (its whole process group) when dropped.
pub struct Watch {
    child: tokio::process::Child,
    pgid: i32,
    addr: SocketAddr,
    pub output: Output,
    http: reqwest::Client,
}

impl Watch {
    /// Starts it in a process group of its own; the functions start on their first call.
    ///
    /// The AWS and secret variables of this process are removed from its environment, so the
    /// functions see exactly the env file.
    pub async fn start(opts: &WatchOptions) -> anyhow::Result<Watch> {
        let addr = client_address(&opts.address, opts.port)?;
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            bail!(
                "something already listens on port {} (another `cargo lambda watch`?); pick another with --port",
                opts.port
            );
        }
        let venv_bin = opts.root.join(".venv/bin");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![venv_bin];
        paths.extend(std::env::split_paths(&path));
        let mut cmd = tokio::process::Command::new("cargo");
        cmd.args(["lambda", "watch", "--ignore-changes"])
            .args(["--invoke-address", &opts.address])
            .args(["--invoke-port", &opts.port.to_string()])
            .args(["--concurrency", &opts.concurrency.to_string()])
            .arg("--env-file")
            .arg(&opts.env_file)
            .current_dir(&opts.root)
            .env("PATH", std::env::join_paths(paths)?)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with("AWS_") || name.starts_with("INBOX_") {
                cmd.env_remove(&name);
            }
        }
        for name in cargo_run_vars() {
            cmd.env_remove(name);
        }
        let mut child = cmd
            .spawn()
            .context("starting `cargo lambda watch` (is cargo-lambda in .venv? run `make venv`)")?;
        let pid = child.id().context("cargo lambda watch has no pid")?;
        let output = Output::default();
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        // From here on, an error drops `watch`, which stops the process group.
        let mut watch = Watch {
            child,
            pgid: i32::try_from(pid).context("pid")?,
            addr,
            output: output.clone(),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .timeout(Duration::from_secs(900))
                .build()?,
        };
        let log = tokio::fs::File::create(&opts.log)
            .await
            .with_context(|| format!("creating {}", opts.log.display()))?;
        let log = Arc::new(tokio::sync::Mutex::new(log));
        if let Some(out) = stdout {
            tokio::spawn(pump(out, log.clone(), output.clone(), opts.echo));
        }
        if let Some(err) = stderr {
            tokio::spawn(pump(err, log, output, opts.echo));
        }
        watch.wait_listening(Duration::from_secs(120)).await?;
        Ok(watch)
    }

    async fn wait_listening(&mut self, limit: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("cargo lambda watch exited ({status}) before it listened");
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if started.elapsed() > limit {
                bail!(
                    "cargo lambda watch did not listen on {} in {limit:?}",
                    self.addr
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `http://<address>:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The receiver's function URL for a source.
    pub fn webhook_url(&self, source: &str) -> String {
        format!("{}/lambda-url/receiver/webhooks/{source}", self.base_url())
    }

    /// The invoke endpoint `cargo lambda invoke <function>` calls.
    pub fn invoke_url(&self, function: &str) -> String {
        format!(
            "{}/2015-03-31/functions/{function}/invocations",
            self.base_url()
        )
    }

    /// Invokes a function with a JSON event and returns its JSON answer.
    pub async fn invoke(
        &self,
        function: &str,
        event: &serde_json::Value,
    ) -> anyhow::Result<serde_json::Value> {
        let resp = self
            .http
            .post(self.invoke_url(function))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(event)?)
            .send()
            .await
            .with_context(|| format!("invoking {function}"))?;
        let status = resp.status();
        let bytes = resp.bytes().await?;
        if !status.is_success() {
            bail!(
                "invoking {function}: {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{function} answered something that is not JSON: {}",
                String::from_utf8_lossy(&bytes)
            )
        })
    }

    /// Calls each function once, so that `cargo run` has started both (and found them
    /// built) before anything is timed.
    pub async fn warm_up(&self) -> anyhow::Result<()> {
        let resp = self
            .http
            .post(self.webhook_url("warm-up"))
            .body("{}")
            .send()
            .await
            .context("warming up the receiver")?;
        if resp.status() != 404 {
            bail!(
                "the receiver's warm-up call answered {} (expected 404 unknown_source): {}",
                resp.status(),
                resp.text().await.unwrap_or_default()
            );
        }
        let answer = self
            .invoke("consumer", &serde_json::json!({"Records": []}))
            .await
            .context("warming up the consumer")?;
        if answer.get("batchItemFailures").is_none() {
            bail!("the consumer's warm-up call answered {answer}");
        }
        Ok(())
    }

    /// An HTTP client for callers (connection pool shared with the invokes).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Stops the process group: TERM, then KILL after a grace period; waits for it.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            signal_group(self.pgid, "KILL"); // leftovers, if any
            return;
        }
        signal_group(self.pgid, "TERM");
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(self.pgid, "KILL");
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `kill -<signal> -<pgid>`: the whole group (no libc binding in this crate's dependencies).
fn signal_group(pgid: i32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{pgid}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

async fn pump(
    stream: impl tokio::io::AsyncRead + Unpin,
    log: Arc<tokio::sync::Mutex<tokio::fs::File>>,
    output: Output,
    echo: bool,
) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.starts_with('{') && line.contains("\"_aws\"") {
            match output.emf.lock() {
                Ok(mut l) => l.push(line.clone()),
                Err(p) => p.into_inner().push(line.clone()),
            }
        }
        if echo {
            eprintln!("{line}");
        }
        let mut f = log.lock().await;
        let _ = f.write_all(line.as_bytes()).await;
        let _ = f.write_all(b"\n").await;
    }
    let _ = log.lock().await.flush().await;
}

/// Writes the env file, creating its directory.
pub fn write_env_file(path: &Path, vars: &[(String, String)]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, env_file(vars)).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_quotes_json_and_leaves_plain_values() {
        let text = env_file(&[
            ("A".into(), "http://127.0.0.1:5000/123/q.fifo".into()),
            ("B".into(), r#"{"x":{"y":[1]}}"#.into()),
        ]);
        assert!(text.contains("\nA=http://127.0.0.1:5000/123/q.fifo\n"));
        assert!(text.contains("\nB='{\"x\":{\"y\":[1]}}'\n"));
    }

    #[test]
    fn local_env_takes_the_templates_literals_and_local_resources() {
        let template = Template::load(&crate::provision::template_path()).unwrap();
        let resources = Provisioned {
            table: "t".into(),
            queue_url: "http://q/1/q.fifo".into(),
            dlq_url: "http://q/1/d.fifo".into(),
        };
        let vars = local_env(&template, &resources, "http://127.0.0.1:1", "http://s/e").unwrap();
        let get = |n: &str| {
            vars.iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert_eq!(get("LEDGER_TABLE"), "t");
        assert_eq!(get("QUEUE_URL"), "http://q/1/q.fifo");
        assert_eq!(get("FORWARD_URL"), "http://s/e");
        assert_eq!(get("AWS_ENDPOINT_URL"), "http://127.0.0.1:1");
        assert!(inbox::config::SourceSpecs::parse(&get("WEBHOOK_SOURCES")).is_ok());
        assert!(!get("IN_PROGRESS_WAIT_MS").is_empty(), "{vars:?}");
    }

    #[test]
    fn clients_reach_a_wildcard_bind_on_loopback() {
        assert_eq!(
            client_address("::", 9000).unwrap().to_string(),
            "127.0.0.1:9000"
        );
        assert_eq!(
            client_address("::1", 9000).unwrap().to_string(),
            "[::1]:9000"
        );
        assert_eq!(
            client_address("127.0.0.1", 1).unwrap().to_string(),
            "127.0.0.1:1"
        );
    }
}
