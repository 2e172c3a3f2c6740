//! What a sample event must get back, and its wording in the events table.

use serde_json::{json, Value};

/// What an event must get back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The receiver's answer: status, JSON body, and whether `Idempotent-Replayed: true` is set.
    Http {
        status: u16,
        body: Value,
        replayed: bool,
    },
    /// The consumer's answer: the message ids listed in `batchItemFailures`, in batch order,
    /// and how many calls the system of record gets (its `FORWARD_URL` answering 2xx).
    Batch {
        failures: Vec<String>,
        side_effects: usize,
    },
}

impl Expected {
    pub(super) fn accepted(key: &str) -> Expected {
        Expected::Http {
            status: 200,
            body: json!({"status": "accepted", "key": key}),
            replayed: false,
        }
    }

    pub(super) fn replayed(key: &str) -> Expected {
        Expected::Http {
            status: 200,
            body: json!({"status": "accepted", "key": key}),
            replayed: true,
        }
    }

    pub(super) fn error(status: u16, code: &str) -> Expected {
        Expected::Http {
            status,
            body: json!({ "error": code }),
            replayed: false,
        }
    }

    /// The README's wording of it (a `|` escaped for a table cell).
    pub fn describe(&self) -> String {
        match self {
            Expected::Http {
                status,
                body,
                replayed,
            } => {
                let key = body.get("key").and_then(Value::as_str);
                let code = body.get("error").and_then(Value::as_str);
                let text = match (key, code, replayed) {
                    (Some(key), _, false) => format!("`{status}` accepted, key `{key}`"),
                    (Some(key), _, true) => {
                        format!("`{status}` replayed (`Idempotent-Replayed: true`), key `{key}`")
                    }
                    (None, Some(code), _) => format!("`{status}` `{code}`"),
                    (None, None, _) => format!("`{status}` `{body}`"),
                };
                text.replace('|', "\\|")
            }
            Expected::Batch {
                failures,
                side_effects,
            } => {
                let ids: Vec<String> = failures.iter().map(|f| format!("`{f}`")).collect();
                let list = if ids.is_empty() {
                    "none".to_owned()
                } else {
                    ids.join(", ")
                };
                format!("batchItemFailures: {list}; {side_effects} forwarded to `FORWARD_URL`")
            }
        }
    }
}
