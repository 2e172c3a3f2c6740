//! Each function's environment, described once: every variable's name, which function reads
//! it, what unset means, its bounds and its documentation, in [`VARS`]. The functions read
//! their variables through it ([`Var::number`], [`Var::text`], [`Var::flag`]), and
//! docs/configuration.md's table of environment variables is [`markdown`] of it (a test
//! compares the two, so the page cannot say what the code does not do).

use super::env::{
    DEFAULT_FORWARD_TIMEOUT_MS, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONCURRENT_GROUPS,
    DEFAULT_MAX_FAILURES, DEFAULT_REPLAY_CACHE_BYTES, DEFAULT_REPLAY_CACHE_KEYS,
    DEFAULT_REPLAY_CACHE_SECONDS, MAX_BODY_BYTES_LIMIT, MAX_FORWARD_TIMEOUT_MS, MAX_MAX_FAILURES,
};
use super::ConfigError;

/// Which function reads a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Receiver,
    Consumer,
    Both,
}

impl Function {
    fn as_str(self) -> &'static str {
        match self {
            Function::Receiver => "receiver",
            Function::Consumer => "consumer",
            Function::Both => "both",
        }
    }

    fn reads(self, function: Function) -> bool {
        self == function || self == Function::Both
    }
}

/// What a variable is when it is unset or blank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unset {
    /// Start-up stops, naming it.
    Required,
    /// This number.
    Number(u64),
    /// This flag (`true` or `false` when set).
    Flag(bool),
    /// Nothing: the feature it configures is off (the row's default says what that means).
    Absent,
    /// Not read by this project's code (the AWS SDK's, the runtime's).
    External,
}

/// One variable (a row of the table; the AWS SDK's and the log settings share a row).
#[derive(Clone, Copy, Debug)]
pub struct Var {
    pub name: &'static str,
    pub function: Function,
    pub unset: Unset,
    /// The least and the greatest value a number may take (`u64::MAX`: no upper bound).
    pub bounds: Option<(u64, u64)>,
    /// Whether a value out of bounds is named in the message.
    pub says_value: bool,
    /// The documentation's default column.
    pub default_doc: &'static str,
    /// The documentation's meaning column.
    pub doc: &'static str,
}

/// Every variable, in the order docs/configuration.md lists them.
pub const VARS: &[Var] = &[
    Var {
        name: "WEBHOOK_SOURCES",
        function: Function::Both,
        unset: Unset::Required,
        bounds: None,
        says_value: false,
        default_doc: "required",
        doc: "the sources, [below](#webhook_sources)",
    },
    Var {
        name: "LEDGER_TABLE",
        function: Function::Both,
        unset: Unset::Required,
        bounds: None,
        says_value: false,
        default_doc: "required",
        doc: "the DynamoDB ledger table",
    },
    Var {
        name: "QUEUE_URL",
        function: Function::Receiver,
        unset: Unset::Required,
        bounds: None,
        says_value: false,
        default_doc: "required",
        doc: "the SQS queue (FIFO where the URL ends in `.fifo`)",
    },
    Var {
        name: "REPLAY_CACHE_KEYS",
        function: Function::Receiver,
        unset: Unset::Number(DEFAULT_REPLAY_CACHE_KEYS),
        bounds: None,
        says_value: false,
        default_doc: "`10000`",
        doc: "keys a warm receiver remembers as answered, to answer their duplicates with no AWS call; `0` turns the cache off",
    },
    Var {
        name: "REPLAY_CACHE_BYTES",
        function: Function::Receiver,
        unset: Unset::Number(DEFAULT_REPLAY_CACHE_BYTES),
        bounds: None,
        says_value: false,
        default_doc: "`8388608`",
        doc: "bytes that cache holds at most (each key counted with its stored answer, which repeats it, and a fixed allowance), the oldest keys going first; whichever of it and `REPLAY_CACHE_KEYS` is reached first bounds the cache; `0` turns the cache off",
    },
    Var {
        name: "REPLAY_CACHE_SECONDS",
        function: Function::Receiver,
        unset: Unset::Number(DEFAULT_REPLAY_CACHE_SECONDS),
        bounds: None,
        says_value: false,
        default_doc: "`300`",
        doc: "how long a key stays in that cache (keep it far below every source's `retention_hours`)",
    },
    Var {
        name: "MAX_BODY_BYTES",
        function: Function::Receiver,
        unset: Unset::Number(DEFAULT_MAX_BODY_BYTES),
        bounds: Some((1, MAX_BODY_BYTES_LIMIT)),
        says_value: false,
        default_doc: "`6258688`",
        doc: "largest accepted body, 1 to 6291456; larger is a 413 ([below](#max_body_bytes))",
    },
    Var {
        name: "PAYLOAD_BUCKET",
        function: Function::Both,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: a body whose envelope would not fit the queue is a 413",
        doc: "the payload bucket: bodies whose envelope would exceed SQS's 1 MiB go there (the envelope carries a pointer); the archive lands there too ([design §12](design.md#12-payloads-in-s3-the-archive-and-replay))",
    },
    Var {
        name: "ARCHIVE_BODIES",
        function: Function::Consumer,
        unset: Unset::Flag(false),
        bounds: None,
        says_value: false,
        default_doc: "`false` (template: parameter `ArchiveBodies`, `true`)",
        doc: "`true`: every accepted event's envelope is put, before it runs, on the archive stream, which files it under `archive/<yyyy>/<mm>/<dd>/<hh>/` for `inbox-ops replay`; a source's `archive` field decides for itself; needs `ARCHIVE_STREAM` and `PAYLOAD_BUCKET` (start-up refuses otherwise)",
    },
    Var {
        name: "ARCHIVE_STREAM",
        function: Function::Consumer,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset",
        doc: "the Firehose delivery stream of the archive (template: `<stack>-archive`)",
    },
    Var {
        name: "FORWARD_URL",
        function: Function::Consumer,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset or blank: none",
        doc: "the default destination: where the shipped `HttpForwarder` POSTs each event that no destination takes, every event where there are none (the template's `ForwardUrl` takes `https://` only, or empty; plain `http://` works locally). None: such an event completes uncalled, counted `Unrouted` ([routing.md](routing.md))",
    },
    Var {
        name: "FORWARD_TIMEOUT_MS",
        function: Function::Consumer,
        unset: Unset::Number(DEFAULT_FORWARD_TIMEOUT_MS),
        bounds: Some((1, MAX_FORWARD_TIMEOUT_MS)),
        // Named in its message ("0 must be between …"): 0 would time out every forward.
        says_value: true,
        default_doc: "`10000` (template: `5000`)",
        doc: "the forwarder's timeout, cut shorter to end 500 ms before the lease; 1 to 900000 (`0` stops start-up)",
    },
    Var {
        name: "MAX_CONCURRENT_GROUPS",
        function: Function::Consumer,
        unset: Unset::Number(DEFAULT_MAX_CONCURRENT_GROUPS),
        bounds: Some((1, u64::MAX)),
        says_value: false,
        default_doc: "`8` (template: `10`)",
        doc: "FIFO groups run at once within a batch (at least 1)",
    },
    Var {
        name: "FORWARD_SIGNING_SECRET",
        function: Function::Consumer,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: forwards unsigned (flagged by the audit)",
        doc: "comma-separated secret references (`env:NAME`, `secretsmanager:NAME_OR_ARN`), each a `whsec_` secret; every forward is signed with each ([below](#forward-signing-secret))",
    },
    Var {
        name: "QUEUE_URL",
        function: Function::Consumer,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: a throttled message comes back after the visibility timeout",
        doc: "the queue whose messages the consumer delays after a 429 or 503 (`ChangeMessageVisibility`)",
    },
    Var {
        name: "DLQ_URL",
        function: Function::Consumer,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: only the queue's `maxReceiveCount` dead-letters",
        doc: "where the consumer moves a message after `MAX_FAILURES` real failures",
    },
    Var {
        name: "MAX_FAILURES",
        function: Function::Consumer,
        unset: Unset::Number(DEFAULT_MAX_FAILURES),
        bounds: Some((1, MAX_MAX_FAILURES)),
        says_value: false,
        default_doc: "`5` (template: parameter `MaxFailures`)",
        doc: "real failures of an event's side effect before its message is dead-lettered, 1 to 1000; throttled tries do not count",
    },
    Var {
        name: "QUEUE_RETENTION_SECONDS",
        function: Function::Both,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: not checked",
        doc: "the queue's message retention; the template sets it from the queue; with `DLQ_RETENTION_SECONDS` it makes the redrive chain, and a source whose `retention_hours` is shorter than the chain stops start-up",
    },
    Var {
        name: "DLQ_RETENTION_SECONDS",
        function: Function::Both,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: the chain is the queue's retention alone",
        doc: "the dead-letter queue's message retention (template: 518400, six days); the chain adds it and a one-day redrive margin to `QUEUE_RETENTION_SECONDS`, since a dead letter's clock starts at the move",
    },
    Var {
        name: "PAYLOAD_RETENTION_DAYS",
        function: Function::Both,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: not checked",
        doc: "the payload bucket's lifecycle (template: parameter `PayloadRetentionDays`, 11, its minimum); fewer days than the chain stops start-up, since a redriven large body would find its object gone",
    },
    Var {
        name: "WEBHOOK_DESTINATIONS",
        function: Function::Consumer,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset or blank: none, every event goes to `FORWARD_URL` (else: what no destination takes)",
        doc: "the destinations, one JSON object ([routing.md](routing.md))",
    },
    Var {
        name: "HTTPS_TEST_CA_FILE",
        function: Function::Both,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: the public roots alone (the template never sets it)",
        doc: "**tests only**: a PEM file holding one CA certificate that the functions' HTTPS clients (the forward, `https://` destinations, the receiver's key fetches; not the AWS SDK's) trust beside the public roots, so that a local TLS server can stand in for a system of record; start-up logs a WARN naming it, and a missing or unreadable file, or one that is not exactly one PEM certificate, stops start-up ([testing.md](testing.md#https-destinations))",
    },
    Var {
        name: "OTEL_EXPORTER_OTLP_ENDPOINT",
        function: Function::Both,
        unset: Unset::Absent,
        bounds: None,
        says_value: false,
        default_doc: "unset: spans are not exported (trace ids still travel: the envelope, the ledger, the forward's `traceparent`)",
        doc: "the OTLP/HTTP collector the spans go to (JSON, `/v1/traces` added), e.g. `http://localhost:4318` for the AWS Distro for OpenTelemetry layer; OpenTelemetry's own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` (here 1000 ms unset), `OTEL_SERVICE_NAME` and `OTEL_SDK_DISABLED` apply ([operations.md](operations.md#traces))",
    },
    Var {
        name: "`AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SQS`",
        function: Function::Both,
        unset: Unset::External,
        bounds: None,
        says_value: false,
        default_doc: "the SDK's",
        doc: "standard SDK settings; locally they point at moto",
    },
    Var {
        name: "`AWS_LAMBDA_LOG_LEVEL`, `AWS_LAMBDA_LOG_FORMAT`, `RUST_LOG`",
        function: Function::Both,
        unset: Unset::External,
        bounds: None,
        says_value: false,
        default_doc: "`INFO`; in the template JSON, and `RUST_LOG` scoped to the project's crates (dependencies at WARN)",
        doc: "log level and format ([operations.md](operations.md#logs))",
    },
];

/// The variable `name` as `function` reads it (`Both`: either function's row).
///
/// # Panics
/// Where the table has no such row: a name in the code that the table does not describe
/// (every reader is covered by [`tests`]).
pub fn var(name: &str, function: Function) -> &'static Var {
    VARS.iter()
        .find(|v| v.name == name && (function == Function::Both || v.function.reads(function)))
        .unwrap_or_else(|| panic!("{name} is not in the environment table for the {function:?}"))
}

impl Var {
    /// The value, where set and not blank.
    pub fn text(&self) -> Option<String> {
        std::env::var(self.name)
            .ok()
            .filter(|v| !v.trim().is_empty())
    }

    /// A required variable's value, or a start-up error naming it.
    pub fn required(&self) -> Result<String, ConfigError> {
        self.text().ok_or(ConfigError::MissingVar(self.name))
    }

    /// A whole number, the row's default where unset or blank (`None` where it has none),
    /// within the row's bounds.
    pub fn optional_number(&self) -> Result<Option<u64>, ConfigError> {
        let value = match std::env::var(self.name) {
            Err(_) => None,
            Ok(v) if v.trim().is_empty() => None,
            Ok(v) => Some(v.trim().parse().map_err(|_| ConfigError::BadVar {
                name: self.name,
                message: format!("`{v}` is not a whole number"),
            })?),
        };
        let value = match (value, self.unset) {
            (Some(v), _) => v,
            (None, Unset::Number(default)) => default,
            (None, Unset::Required) => return Err(ConfigError::MissingVar(self.name)),
            (None, _) => return Ok(None),
        };
        self.check(value).map(Some)
    }

    /// [`Self::optional_number`] of a row with a default.
    pub fn number(&self) -> Result<u64, ConfigError> {
        Ok(self.optional_number()?.unwrap_or_default())
    }

    /// `value` within the row's bounds, or the start-up error saying them.
    pub fn check(&self, value: u64) -> Result<u64, ConfigError> {
        match self.bounds {
            Some((min, max)) if value < min || value > max => {
                let range = if max == u64::MAX {
                    format!("must be at least {min}")
                } else {
                    format!("must be between {min} and {max}")
                };
                Err(ConfigError::BadVar {
                    name: self.name,
                    message: if self.says_value {
                        format!("{value} {range}")
                    } else {
                        range
                    },
                })
            }
            _ => Ok(value),
        }
    }

    /// `true` or `false`, the row's default where unset or blank.
    pub fn flag(&self) -> Result<bool, ConfigError> {
        match self.text().as_deref().map(str::trim) {
            None => Ok(self.unset == Unset::Flag(true)),
            Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(other) => Err(ConfigError::BadVar {
                name: self.name,
                message: format!("`{other}` is neither true nor false"),
            }),
        }
    }

    /// How the bounds read in the documentation's meaning column.
    #[cfg(test)]
    fn bounds_doc(&self) -> Option<String> {
        self.bounds.map(|(min, max)| {
            if max == u64::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            }
        })
    }
}

/// docs/configuration.md's table of environment variables, as the code reads them.
pub fn markdown() -> String {
    let mut out =
        String::from("| variable | function | default | meaning |\n| --- | --- | --- | --- |\n");
    for v in VARS {
        let name = if v.unset == Unset::External {
            v.name.to_owned()
        } else {
            format!("`{}`", v.name)
        };
        out.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            v.function.as_str(),
            v.default_doc,
            v.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documented() -> String {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
        )
        .expect("docs/configuration.md");
        let start = page
            .find("| variable | function | default | meaning |")
            .expect("the table of environment variables");
        let table = &page[start..];
        let end = table.find("\n\n").unwrap_or(table.len());
        format!("{}\n", &table[..end])
    }

    #[test]
    fn the_documented_table_is_the_code_s() {
        let (documented, coded) = (documented(), markdown());
        for (d, c) in documented.lines().zip(coded.lines()) {
            assert_eq!(
                d, c,
                "docs/configuration.md differs from inbox::config::vars::VARS"
            );
        }
        assert_eq!(documented, coded);
    }

    #[test]
    fn each_row_s_default_and_bounds_say_what_the_code_does() {
        for v in VARS {
            let said = match v.unset {
                Unset::Required => "required".to_owned(),
                Unset::Number(n) => format!("`{n}`"),
                Unset::Flag(b) => format!("`{b}`"),
                Unset::Absent => "unset".to_owned(),
                Unset::External => continue,
            };
            assert!(
                v.default_doc.starts_with(&said),
                "{}: {}",
                v.name,
                v.default_doc
            );
            if let Some(bounds) = v.bounds_doc() {
                assert!(
                    v.doc.contains(&bounds),
                    "{}: {bounds} not in {}",
                    v.name,
                    v.doc
                );
            }
            if let Unset::Number(n) = v.unset {
                assert_eq!(
                    v.check(n),
                    Ok(n),
                    "{}: its default is within its bounds",
                    v.name
                );
            }
        }
    }

    #[test]
    fn a_value_out_of_bounds_is_named_where_the_row_says() {
        let max_body = var("MAX_BODY_BYTES", Function::Receiver);
        assert_eq!(
            max_body.check(0).unwrap_err().to_string(),
            "environment variable MAX_BODY_BYTES: must be between 1 and 6291456"
        );
        let timeout = var("FORWARD_TIMEOUT_MS", Function::Consumer);
        assert_eq!(
            timeout.check(0).unwrap_err().to_string(),
            "environment variable FORWARD_TIMEOUT_MS: 0 must be between 1 and 900000"
        );
        let groups = var("MAX_CONCURRENT_GROUPS", Function::Consumer);
        assert_eq!(
            groups.check(0).unwrap_err().to_string(),
            "environment variable MAX_CONCURRENT_GROUPS: must be at least 1"
        );
        assert_eq!(groups.check(u64::MAX), Ok(u64::MAX));
    }

    #[test]
    fn each_function_finds_its_own_row_of_a_shared_name() {
        assert_eq!(var("QUEUE_URL", Function::Receiver).unset, Unset::Required);
        assert_eq!(var("QUEUE_URL", Function::Consumer).unset, Unset::Absent);
        assert_eq!(
            var("LEDGER_TABLE", Function::Consumer).function,
            Function::Both
        );
    }
}
