//! What the end-to-end modules share: the bridge that plays the event source mapping, draining
//! the queue through it, running a test in a process of its own, and a system of record on
//! loopback ([`downstream`]).

pub mod downstream;

use std::future::Future;
use std::process::Command;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use devstack::bridge::{Bridge, Round};
use devstack::testkit::LocalAws;

/// How many rounds `drain` pumps before it calls the queue stuck.
pub const MAX_ROUNDS: usize = 500;

/// The event source mapping over the stack's webhook queue, a failed message visible again at
/// once (the tests do not wait out a visibility timeout unless they say so).
pub async fn bridge(aws: &LocalAws) -> Bridge {
    let mut b = Bridge::new(aws.sqs.clone(), &aws.resources.queue_url)
        .await
        .expect("bridge");
    b.retry_failed_now = true;
    b
}

/// Pumps until the queue has nothing visible, invoking `invoke` on each round's event; each
/// round's result, in order. Panics after `MAX_ROUNDS` rounds.
pub async fn drain<F, Fut>(b: &Bridge, invoke: F) -> Vec<Round>
where
    F: Fn(SqsEvent) -> Fut,
    Fut: Future<Output = anyhow::Result<SqsBatchResponse>>,
{
    let mut rounds = Vec::new();
    while let Some(round) = b.pump_once(&invoke).await.expect("pump") {
        rounds.push(round);
        assert!(
            rounds.len() < MAX_ROUNDS,
            "the queue did not drain in {MAX_ROUNDS} rounds"
        );
    }
    rounds
}

/// Set in the child process `in_own_process` starts.
const OWN_PROCESS: &str = "E2E_IN_OWN_PROCESS";

/// Runs the ignored tests whose names hold `filter` in a child process of this binary, and
/// requires exactly `tests` of them to pass there. For tests that set process-wide state (a
/// global tracing subscriber, the environment it reads) that the other modules' tests, running
/// in parallel in this process, must not share.
pub fn in_own_process(filter: &str, tests: usize) {
    let exe = std::env::current_exe().expect("this test binary");
    let out = Command::new(exe)
        .args([filter, "--ignored", "--test-threads", "1"])
        .env(OWN_PROCESS, "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{filter} in its own process failed:\n{stdout}\n{stderr}"
    );
    let summary = format!("test result: ok. {tests} passed; 0 failed");
    assert!(
        stdout.contains(&summary),
        "{filter} in its own process: expected `{summary}`:\n{stdout}"
    );
}

/// The first line of a test that `in_own_process` runs: it refuses to run among the others.
pub fn own_process_only() {
    assert!(
        std::env::var_os(OWN_PROCESS).is_some(),
        "this test sets process-wide state: run it through its module's `in_its_own_process`"
    );
}
