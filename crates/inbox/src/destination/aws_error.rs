//! An AWS call's error, as a destination's outcome: throttling is [`Outcome::Throttled`]
//! (after 60 s: AWS says nothing more precise), anything else a failure with the error's code.

use std::time::Duration;

use crate::consumer::{Outcome, ProcessError};

/// The wait after an AWS throttling error.
pub const AWS_THROTTLE_WAIT: Duration = Duration::from_secs(60);

/// The codes AWS answers when a caller must slow down.
pub fn is_throttling(code: &str) -> bool {
    matches!(
        code,
        "ThrottlingException"
            | "Throttling"
            | "TooManyRequestsException"
            | "RequestThrottled"
            | "RequestLimitExceeded"
            | "LimitExceededException"
    )
}

/// The outcome of a failed call to `what` (never its ARN or URL: the code and the message).
pub fn outcome(what: &str, code: Option<&str>, message: &str) -> Outcome {
    match code {
        Some(code) if is_throttling(code) => Outcome::Throttled {
            retry_after: AWS_THROTTLE_WAIT,
            reason: ProcessError(format!("throttled: {what} answered {code}")),
        },
        Some(code) => Outcome::Failed(ProcessError(format!("{what} failed: {code}: {message}"))),
        None => Outcome::Failed(ProcessError(format!("{what} failed: {message}"))),
    }
}
