//! Function processes under supervision, as Lambda keeps execution environments: each
//! instance is a process of the function's binary polling its own address on the
//! [`Emulator`]; when it dies (it crashed, or [`Supervisor::kill_one`] sent it SIGKILL) the
//! invocation it held fails as Lambda reports it, and a new process starts in its place.
//! A kill is a request answered once its process is dead and replaced, so kills sent close
//! together are never merged into one and a caller counting them never runs ahead of the
//! restarts.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::sync::{mpsc, oneshot};

use super::emulator::{Emulator, Instance};

/// How to start one process of a function.
#[derive(Clone, Debug)]
pub struct FunctionProcess {
    pub name: String,
    pub program: PathBuf,
    pub env: Vec<(String, String)>,
}

impl FunctionProcess {
    fn spawn(&self, runtime_api: &str) -> Result<tokio::process::Child> {
        tokio::process::Command::new(&self.program)
            .env_remove("AWS_PROFILE")
            .env("AWS_LAMBDA_RUNTIME_API", runtime_api)
            .env("AWS_LAMBDA_FUNCTION_NAME", &self.name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.program.display()))
    }
}

/// A kill request for one instance, answered once its process is dead and replaced.
type Kill = oneshot::Sender<()>;

/// `instances` processes of one function, each restarted when it dies, until dropped.
pub struct Supervisor {
    slots: Vec<mpsc::UnboundedSender<Kill>>,
    stopping: Arc<AtomicBool>,
    /// Processes started after the first ones (each a restart after a death).
    restarts: Arc<AtomicU64>,
    /// Deaths that took an invocation with them (it failed as `Runtime.ExitError`).
    pub failed_invocations: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Supervisor {
    /// Starts `instances` processes of `function` on `emu`, each on its own address.
    pub async fn start(
        function: FunctionProcess,
        emu: &Emulator,
        instances: usize,
    ) -> Result<Supervisor> {
        let stopping = Arc::new(AtomicBool::new(false));
        let restarts = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let mut slots = Vec::new();
        let mut tasks = Vec::new();
        for _ in 0..instances {
            let instance = emu.instance().await?;
            let (kills, mut kill_requests) = mpsc::unbounded_channel::<Kill>();
            let mut child = function.spawn(&instance.address())?;
            let (f, st, r, fl) = (
                function.clone(),
                stopping.clone(),
                restarts.clone(),
                failed.clone(),
            );
            tasks.push(tokio::spawn(async move {
                loop {
                    let answer = tokio::select! {
                        _ = child.wait() => None,
                        request = kill_requests.recv() => {
                            let _ = child.start_kill();
                            let _ = child.wait().await;
                            request
                        }
                    };
                    instance_died(&instance, &fl);
                    if st.load(Ordering::SeqCst) {
                        return;
                    }
                    match f.spawn(&instance.address()) {
                        Ok(c) => {
                            child = c;
                            r.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => {
                            tracing::error!("restarting {}: {e:#}", f.name);
                            return;
                        }
                    }
                    if let Some(answer) = answer {
                        let _ = answer.send(());
                    }
                }
            }));
            slots.push(kills);
        }
        Ok(Supervisor {
            slots,
            stopping,
            restarts,
            failed_invocations: failed,
            tasks,
        })
    }

    /// Sends SIGKILL to the process of instance `i` (modulo the count) and returns once it is
    /// dead and a new process has started in its place.
    pub async fn kill_one(&self, i: usize) -> Result<()> {
        let (answer, replaced) = oneshot::channel();
        self.slots[i % self.slots.len()]
            .send(answer)
            .map_err(|_| anyhow::anyhow!("instance {i} is no longer supervised"))?;
        replaced
            .await
            .with_context(|| format!("instance {i} was not restarted"))
    }

    pub fn instances(&self) -> usize {
        self.slots.len()
    }

    /// Processes started to replace dead ones.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::SeqCst)
    }
}

/// A process of `instance` is gone: the invocation it held fails.
fn instance_died(instance: &Instance, failed: &AtomicU64) {
    if instance.fail_current("the runtime exited (signal: killed)") {
        failed.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Aborting a task drops its child, and `kill_on_drop` kills the process.
        for task in &self.tasks {
            task.abort();
        }
    }
}
