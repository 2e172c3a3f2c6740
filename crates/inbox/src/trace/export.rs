//! The OTLP/HTTP exporter of [`super`]: the OpenTelemetry exporter (JSON over HTTP), sending
//! through the project's reqwest (the exporter's own client would be a second reqwest), one
//! try per flush within the export timeout.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter as _};
use opentelemetry_sdk::Resource;

use super::{Buffer, Buffered, ExportSetupError, Exporting};
use crate::config::vars::{var, Function};

/// The export's timeout where `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` and
/// `OTEL_EXPORTER_OTLP_TIMEOUT` are unset: shorter than OpenTelemetry's 10 s, since the flush
/// runs before the invocation returns (a collector on the function's own host, the AWS Distro
/// for OpenTelemetry layer, answers in a millisecond or two).
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_millis(1000);

/// The endpoint that turns export on: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL),
/// else `OTEL_EXPORTER_OTLP_ENDPOINT` (the exporter adds `/v1/traces`); none where
/// `OTEL_SDK_DISABLED` is `true`.
pub(super) fn endpoint_from_env() -> Option<String> {
    let disabled =
        std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if disabled {
        return None;
    }
    std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT", Function::Both).text())
}

/// The endpoint for the start-up line: scheme, host and port, never a path's query or a
/// user's credentials.
pub(super) fn endpoint_for_log(endpoint: &str) -> String {
    match reqwest::Url::parse(endpoint) {
        Ok(url) => format!(
            "{}://{}{}",
            url.scheme(),
            url.host_str().unwrap_or_default(),
            url.port().map(|p| format!(":{p}")).unwrap_or_default()
        ),
        Err(_) => "(not a URL)".to_owned(),
    }
}

/// The timeout of one export: the standard variables' milliseconds, else
/// [`DEFAULT_EXPORT_TIMEOUT`].
fn export_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
    .map_or(DEFAULT_EXPORT_TIMEOUT, Duration::from_millis)
}

pub(super) fn build(service: &str, endpoint: &str) -> Result<Exporting, ExportSetupError> {
    if reqwest::Url::parse(endpoint).is_err() {
        return Err(ExportSetupError(format!(
            "the endpoint `{}` is not a URL",
            crate::log_text::capped(endpoint, 80)
        )));
    }
    let timeout = export_timeout();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ExportSetupError(e.to_string()))?;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_http_client(Http(client))
        .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_timeout(timeout)
        .build()
        .map_err(|e| ExportSetupError(e.to_string()))?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| service.to_owned());
    let resource = Resource::builder().with_service_name(service).build();
    exporter.set_resource(&resource);
    let buffer = Arc::new(Buffer::default());
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Buffered(buffer.clone()))
        .with_id_generator(super::EpochFirstIds)
        .with_resource(resource)
        .build();
    Ok(Exporting {
        tracer: provider.tracer("inbox"),
        buffer,
        exporter,
        _provider: provider,
    })
}

/// The exporter's HTTP client: the project's reqwest.
#[derive(Debug)]
struct Http(reqwest::Client);

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Http {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await?;
        let mut out = http::Response::new(body);
        *out.status_mut() = status;
        *out.headers_mut() = headers;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logged_endpoint_keeps_no_credentials_or_path() {
        assert_eq!(
            endpoint_for_log("https://user:pw@collector.example:4318/v1/traces?k=v"),
            "https://collector.example:4318"
        );
        assert_eq!(endpoint_for_log("::"), "(not a URL)");
    }
}
