//! Requests refused before any signature is read: a base64 body that does not decode, a source
//! nobody declared, a method other than `POST`.

use serde_json::Value;

use super::request::{post, push};
use super::{Expected, Function, Sample, FIXED_EPOCH_S};
use devstack::senders::{GitHub, Sender as _};
use devstack::testkit::TEST_SECRET;

pub fn samples(out: &mut Vec<Sample>) {
    let t = FIXED_EPOCH_S;
    let body = br#"{"zen":"Keep it logically awesome."}"#;
    let id = "6b1f2a40-b0a1-11f1-8f3e-2d9c7e5a4b04";
    let bad = post(
        "github",
        GitHub::new(TEST_SECRET).headers(id, t, body),
        body,
        "bad-b64",
        t,
    )
    .base64_body(body);
    // The encoded body replaced by text that does not decode (its content-length stays).
    let mut event = bad.to_json();
    event["body"] = Value::String("***not base64***".to_owned());
    out.push(Sample {
        file: "bad-base64.json".to_owned(),
        function: Function::Receiver,
        event,
        expected: Expected::error(400, "malformed_body"),
        shows: "`isBase64Encoded: true` with a body that does not decode: a 400, not a panic"
            .to_owned(),
        timestamped: false,
    });
    push(
        out,
        "unknown-source",
        post(
            "gitlab",
            GitHub::new(TEST_SECRET).headers(id, t, body),
            body,
            "unknown",
            t,
        ),
        Expected::error(404, "unknown_source"),
        "a source `WEBHOOK_SOURCES` does not declare",
        false,
    );
    let get = post(
        "github",
        GitHub::new(TEST_SECRET).headers(id, t, body),
        body,
        "get",
        t,
    )
    .method("GET");
    push(
        out,
        "wrong-method",
        get,
        Expected::error(405, "method_not_allowed"),
        "`GET` instead of `POST`",
        false,
    );
}
