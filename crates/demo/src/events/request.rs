//! What the receiver samples share: a signed `POST` as API Gateway hands it over
//! ([`devstack::testkit::apigw`]), the sample that holds it, and bodies changed after signing.

use super::{Expected, Function, Sample};
use devstack::testkit::apigw::ApiGatewayEvent;

/// `POST /webhooks/<source>` with these headers and body, request id, received at `at_s`.
pub fn post(
    source: &str,
    headers: Vec<(&'static str, String)>,
    body: &[u8],
    request_id: &str,
    at_s: i64,
) -> ApiGatewayEvent {
    ApiGatewayEvent::post(source)
        .headers(headers)
        .body(body)
        .request_id(request_id)
        .at_s(at_s)
}

/// Adds the receiver sample `<file>.json`.
pub fn push(
    out: &mut Vec<Sample>,
    file: &str,
    request: ApiGatewayEvent,
    expected: Expected,
    shows: &str,
    timestamped: bool,
) {
    out.push(Sample {
        file: format!("{file}.json"),
        function: Function::Receiver,
        event: request.to_json(),
        expected,
        shows: shows.to_owned(),
        timestamped,
    });
}

/// `body` with `from` replaced by `to`: what an attacker changed after it was signed.
pub fn tampered(body: &[u8], from: &str, to: &str) -> Vec<u8> {
    String::from_utf8_lossy(body).replace(from, to).into_bytes()
}
