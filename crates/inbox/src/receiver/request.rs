//! Who is asking and for which source: the invocation (lease owner and deadline), the
//! source from the path, and the headers the envelope carries.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use http::HeaderMap;
use lambda_http::{Request, RequestExt};

use crate::config::Source;
use crate::lease;

/// Who is asking: the invocation's request id (the lease owner) and deadline.
#[derive(Clone, Debug)]
pub(super) struct Invocation {
    pub(super) request_id: String,
    pub(super) deadline_ms: Option<i64>,
}

static LOCAL_INVOCATIONS: AtomicU64 = AtomicU64::new(0);

pub(super) fn invocation(req: &Request) -> Invocation {
    match req.lambda_context_ref() {
        Some(ctx) if !ctx.request_id.is_empty() => Invocation {
            request_id: ctx.request_id.clone(),
            deadline_ms: lease::deadline_ms(ctx),
        },
        // No Lambda context: a unique owner for this process's call, never a key.
        _ => Invocation {
            request_id: format!(
                "local-{}-{}",
                std::process::id(),
                LOCAL_INVOCATIONS.fetch_add(1, Ordering::Relaxed)
            ),
            deadline_ms: None,
        },
    }
}

/// The source: API Gateway's `{source}` path parameter, else the last segment of a path
/// `/webhooks/<source>` (function URLs, `cargo lambda watch`).
pub(super) fn source_name(req: &Request) -> Option<String> {
    source_from(
        req.path_parameters_ref().and_then(|p| p.first("source")),
        req.uri().path(),
    )
}

pub(super) fn source_from(path_parameter: Option<&str>, path: &str) -> Option<String> {
    if let Some(source) = path_parameter {
        return Some(source.to_owned());
    }
    let mut segments = path.trim_end_matches('/').rsplit('/');
    let last = segments.next()?;
    (segments.next() == Some("webhooks") && !last.is_empty()).then(|| last.to_owned())
}

/// The headers the envelope carries: the source's signature, id and content-type headers.
pub(super) fn envelope_headers(source: &Source, headers: &HeaderMap) -> BTreeMap<String, String> {
    source
        .envelope_headers
        .iter()
        .filter_map(|name| {
            let value = headers.get(name.as_str())?.to_str().ok()?.to_owned();
            Some((name.clone(), value))
        })
        .collect()
}
