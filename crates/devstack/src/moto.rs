//! Local AWS for tests and the demo: a `moto` server (pinned in requirements-dev.txt) on a
//! free loopback port, reached by the SDKs through the standard `AWS_ENDPOINT_URL`.
//!
//! The server lives as long as the process that started it: it stops when its standard
//! input closes, so a crashed test run leaves nothing behind.
//!
//! It also answers CloudWatch in the protocol the AWS SDK for Rust speaks (Smithy RPC v2 CBOR,
//! which moto 5.2.5 does not): `moto_cbor.py` turns each such call into AWS JSON 1.0 for moto
//! and the answer back into CBOR.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

use anyhow::{bail, Context};

/// The program: CloudWatch's RPC v2 CBOR layer (`moto_cbor.py`; moto 5.2.5 serves CloudWatch
/// in AWS Query and JSON 1.0 only), then the server (`moto_guard.py`).
const GUARD: &str = concat!(
    include_str!("moto_cbor.py"),
    "\n",
    include_str!("moto_guard.py")
);

/// The workspace root (where `template.yaml` and `.venv` are).
pub use stack_config::workspace_root;

/// The project's Python: `INBOX_PYTHON`, else `.venv/bin/python` (made by `make venv`).
pub fn python() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("INBOX_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python"));
    if !path.exists() {
        bail!(
            "{} not found: run `make venv` (or set INBOX_PYTHON) to install requirements-dev.txt",
            path.display()
        );
    }
    Ok(path)
}

/// A running moto server.
pub struct MotoServer {
    endpoint: String,
    _stdin: ChildStdin,
    child: Child,
}

impl MotoServer {
    /// Starts one and waits until it listens.
    pub fn start() -> anyhow::Result<MotoServer> {
        let mut child = Command::new(python()?)
            .arg("-c")
            .arg(GUARD)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the moto server")?;
        let stdin = child.stdin.take().context("moto stdin")?;
        let stdout = child.stdout.take().context("moto stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("reading the moto server's port")?;
        let port: u16 = match line.trim().strip_prefix("ready ") {
            Some(p) => p.parse().context("moto port")?,
            None => bail!(
                "moto server did not start (said {line:?}); is moto[server] installed in the venv?"
            ),
        };
        Ok(MotoServer {
            endpoint: format!("http://127.0.0.1:{port}"),
            _stdin: stdin,
            child,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

static SHARED: OnceLock<MotoServer> = OnceLock::new();

/// One server per process (a test binary shares it), and the standard environment pointed
/// at it: `AWS_ENDPOINT_URL`, a region and dummy credentials. Returns the endpoint.
pub fn shared() -> &'static str {
    let server = SHARED.get_or_init(|| {
        let server = MotoServer::start().unwrap_or_else(|e| panic!("local AWS: {e:#}"));
        std::env::set_var("AWS_ENDPOINT_URL", server.endpoint());
        std::env::set_var("AWS_REGION", "us-east-1");
        std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
        std::env::remove_var("AWS_PROFILE");
        server
    });
    server.endpoint()
}
