//! Both functions under `cargo lambda watch` (the Runtime API emulator), as the demo and
//! `demo serve` run them: the process and its output, and calls to it (the env file it reads
//! is [`crate::env_file`]'s).
//!
//! `cargo lambda watch` serves the receiver at `/lambda-url/receiver/...` and invokes any
//! function at `/2015-03-31/functions/<name>/invocations` (what `cargo lambda invoke` calls).
//! It starts each function with `cargo run` and passes its own environment on, plus the
//! `--env-file`. The demo starts it in a process group of its own and stops the whole group
//! (cargo-lambda, `cargo run`, the function binaries) when it stops, Ctrl-C included. The
//! functions' EMF lines are put on the local CloudWatch as they come ([`devstack::local_metrics`]),
//! where Lambda and CloudWatch make metrics of them in AWS.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use devstack::local_metrics::{is_emf, Feed, FeedSender};

/// The two functions' binaries, as the template's `BuildProperties.Binary` names them.
pub const FUNCTIONS: [&str; 2] = ["receiver", "consumer"];

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
    /// Where the functions' EMF lines are put as metrics, as Lambda and CloudWatch do in AWS
    /// ([`devstack::local_metrics`]): the local CloudWatch.
    pub metrics: Option<aws_sdk_cloudwatch::Client>,
}

/// What the functions printed that the demo reads back: CloudWatch EMF lines, and the
/// receiver's sends behind a live claim (a log line, no metric).
#[derive(Clone, Debug, Default)]
pub struct Output {
    emf: Arc<Mutex<Vec<String>>>,
    sent_behind_claims: Arc<std::sync::atomic::AtomicU64>,
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

    /// The receiver's sends of a stored event by a duplicate that found its claim RECEIVED
    /// ([`inbox::receiver::SENT_BEHIND_A_CLAIM`]).
    pub fn sent_behind_claims(&self) -> u64 {
        self.sent_behind_claims
            .load(std::sync::atomic::Ordering::SeqCst)
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
    /// The EMF lines on their way to the local CloudWatch.
    metrics: Option<Feed>,
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
        let feed = opts
            .metrics
            .clone()
            .map(|cloudwatch| Feed::start(cloudwatch, Duration::from_millis(500)));
        let sender = feed.as_ref().map(Feed::sender);
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
            metrics: feed,
        };
        let log = tokio::fs::File::create(&opts.log)
            .await
            .with_context(|| format!("creating {}", opts.log.display()))?;
        let log = Arc::new(tokio::sync::Mutex::new(log));
        if let Some(out) = stdout {
            let to = Sink {
                output: output.clone(),
                metrics: sender.clone(),
                echo: opts.echo,
            };
            tokio::spawn(pump(out, log.clone(), to));
        }
        if let Some(err) = stderr {
            let to = Sink {
                output,
                metrics: sender,
                echo: opts.echo,
            };
            tokio::spawn(pump(err, log, to));
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

    /// Waits until the EMF lines printed so far are on the local CloudWatch (for up to
    /// `limit`); whether they are. True where no metrics are put.
    pub async fn settle_metrics(&self, limit: Duration) -> bool {
        match &self.metrics {
            Some(feed) => feed.settle(limit).await,
            None => true,
        }
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

/// Where each line of the output goes besides the log.
struct Sink {
    output: Output,
    metrics: Option<FeedSender>,
    echo: bool,
}

async fn pump(
    stream: impl tokio::io::AsyncRead + Unpin,
    log: Arc<tokio::sync::Mutex<tokio::fs::File>>,
    to: Sink,
) {
    let Sink {
        output,
        metrics,
        echo,
    } = to;
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if is_emf(&line) {
            match output.emf.lock() {
                Ok(mut l) => l.push(line.clone()),
                Err(p) => p.into_inner().push(line.clone()),
            }
            if let Some(feed) = &metrics {
                feed.send(line.clone());
            }
        } else if line.contains(inbox::receiver::SENT_BEHIND_A_CLAIM) {
            output
                .sent_behind_claims
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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

#[cfg(test)]
mod tests {
    use super::*;

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
