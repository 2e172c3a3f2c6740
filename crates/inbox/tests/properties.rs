//! Properties of key derivation, of the queue envelope and of a JSON body's text kept as sent,
//! and a static check that MACs are compared in constant time. (Signature parsing properties live in `signature_schemes/`.)

use std::collections::BTreeMap;

use http::{HeaderMap, HeaderName, HeaderValue};
use inbox::config::{GroupSpec, KeySpec, MAX_KEY_VALUE_BYTES};
use inbox::destination::detail;
use inbox::fifo::{sqs_id, SQS_ID_MAX};
use inbox::json_fields::Fields;
use inbox::json_text::JsonText;
use inbox::key::{self, KeyError};
use inbox::queue::{sqs_can_carry, Envelope};
use proptest::prelude::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Strategies.
// ---------------------------------------------------------------------------------------

/// Any JSON value, a few levels deep, with strings that include the characters keys care
/// about (`|`, `\`, controls, non-ASCII).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(prop_oneof![Just("id".to_owned()), string()], inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_|\\\\]{0,12}",
        any::<String>(),
        "[\\x00-\\x1f\\x7f\\u{85}a]{1,4}",
        Just("k".repeat(MAX_KEY_VALUE_BYTES)),
        Just("k".repeat(MAX_KEY_VALUE_BYTES + 1)),
    ]
}

/// JSON pointers: well-formed ones into the shapes above, and arbitrary text.
fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/id".to_owned()),
        Just("".to_owned()),
        Just("/0".to_owned()),
        Just("/id/0/id".to_owned()),
        "(/[a-z0-9~]{0,4}){0,4}",
        any::<String>(),
    ]
}

const HEADER_NAMES: [&str; 3] = ["x-github-delivery", "webhook-id", "x-shopify-event-id"];

fn key_spec() -> impl Strategy<Value = KeySpec> {
    prop_oneof![
        prop::sample::select(&HEADER_NAMES[..])
            .prop_map(|n| KeySpec::Header(HeaderName::from_static(n))),
        prop::collection::vec(pointer(), 1..4).prop_map(KeySpec::Json),
        Just(KeySpec::PayloadSha256),
    ]
}

/// Headers with arbitrary values HTTP allows (visible ASCII, tabs, obs-text bytes), some
/// repeated.
fn headers() -> impl Strategy<Value = HeaderMap> {
    prop::collection::vec(
        (
            prop::sample::select(&HEADER_NAMES[..]),
            prop::collection::vec(any::<u8>(), 0..40),
        ),
        0..5,
    )
    .prop_map(|pairs| {
        let mut h = HeaderMap::new();
        for (name, bytes) in pairs {
            if let Ok(v) = HeaderValue::from_bytes(&bytes) {
                h.append(HeaderName::from_static(name), v);
            }
        }
        h
    })
}

// ---------------------------------------------------------------------------------------
// Key derivation.
// ---------------------------------------------------------------------------------------

/// The body's fields for `spec`, as the receiver reads them from the body's bytes.
fn fields(spec: &KeySpec, body: &Value) -> Fields {
    let bytes = serde_json::to_vec(body).expect("a Value serializes");
    key::fields(&bytes, spec, &GroupSpec::Key).expect("serde_json writes JSON without duplicates")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `derive` never panics; what it accepts is a usable key: `<source>:<value>`, the value
    /// non-empty, within the limit, free of control characters (hashes and composite joins
    /// included), and the same every time for the same input.
    #[test]
    fn derive_never_panics_and_yields_usable_keys(
        spec in key_spec(),
        headers in headers(),
        body in prop::option::of(json()),
        sha in "[0-9a-f]{64}",
    ) {
        let json = body.as_ref().map(|b| fields(&spec, b));
        let got = key::derive("src", &spec, &headers, json.as_ref(), &sha);
        let again = key::derive("src", &spec, &headers, json.as_ref(), &sha);
        prop_assert_eq!(&got, &again, "deterministic");
        match got {
            Ok(k) => {
                let value = k.strip_prefix("src:").expect("namespaced by source");
                prop_assert!(!value.is_empty());
                prop_assert!(value.len() <= MAX_KEY_VALUE_BYTES);
                prop_assert!(!value.chars().any(char::is_control), "{:?}", value);
                prop_assert!(!value.chars().any(char::is_whitespace), "{:?}", value);
                prop_assert!(!value.chars().any(key::is_format), "{:?}", value);
                prop_assert!(!value.chars().any(key::is_noncharacter), "{:?}", value);
                if matches!(spec, KeySpec::PayloadSha256) {
                    prop_assert_eq!(value, sha.as_str());
                }
            }
            Err(KeyError::NotJson) => prop_assert!(body.is_none() && spec.needs_json()),
            Err(KeyError::Missing(_) | KeyError::Invalid(..)) => {}
            Err(KeyError::Duplicate(_)) => prop_assert!(false, "no duplicate in serde_json's output"),
        }
    }

    /// The key reader never panics on arbitrary bytes, and takes what serde_json takes as
    /// JSON (where no member appears twice on `/id`, which serde_json takes and the reader
    /// refuses, and but for numbers beyond f64's range, which the reader keeps as text).
    #[test]
    fn the_key_reader_never_panics_and_agrees_with_serde_json(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        json in json(),
    ) {
        let spec = KeySpec::Json(vec!["/id".into()]);
        let ours = key::fields(&bytes, &spec, &GroupSpec::Key);
        let theirs = serde_json::from_slice::<Value>(&bytes);
        // serde_json refuses a number beyond f64's range, which is JSON; the reader keeps it.
        let out_of_range = theirs
            .as_ref()
            .is_err_and(|e| e.to_string().contains("number out of range"));
        if !matches!(ours, Err(KeyError::Duplicate(_))) && !out_of_range {
            prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}", String::from_utf8_lossy(&bytes));
        }
        let text = serde_json::to_vec(&json).expect("serializes");
        prop_assert!(key::fields(&text, &spec, &GroupSpec::Key).is_ok());
    }

    /// Composite keys are injective: distinct tuples of string values (rich in `|` and `\`,
    /// the separator and the escape) never give the same key.
    #[test]
    fn composite_keys_are_injective_over_distinct_string_tuples(
        arity in 2usize..5,
        a in prop::collection::vec("[a|\\\\]{1,6}", 4),
        b in prop::collection::vec("[a|\\\\]{1,6}", 4),
    ) {
        let (a, b) = (&a[..arity], &b[..arity]);
        prop_assume!(a != b);
        let pointers: Vec<String> = (0..arity).map(|i| format!("/v{i}")).collect();
        let spec = KeySpec::Json(pointers);
        let body = |values: &[String]| {
            Value::Object(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (format!("v{i}"), Value::String(v.clone())))
                    .collect(),
            )
        };
        let ka = key::derive("s", &spec, &HeaderMap::new(), Some(&fields(&spec, &body(a))), "h");
        let kb = key::derive("s", &spec, &HeaderMap::new(), Some(&fields(&spec, &body(b))), "h");
        prop_assert_ne!(ka.expect("usable"), kb.expect("usable"));
    }

    /// The same, over arbitrary Unicode values of every JSON scalar type, except that a
    /// number or boolean and the string of its text are one value (`7` and `"7"` give the
    /// same key, by design of the text form): distinct *texts* give distinct keys.
    #[test]
    fn composite_keys_are_injective_over_distinct_value_texts(
        a in prop::collection::vec(scalar(), 3),
        b in prop::collection::vec(scalar(), 3),
    ) {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let ta: Vec<String> = a.iter().map(text).collect();
        let tb: Vec<String> = b.iter().map(text).collect();
        prop_assume!(ta != tb);
        let spec = KeySpec::Json(vec!["/0".into(), "/1".into(), "/2".into()]);
        let ka = key::derive("s", &spec, &HeaderMap::new(), Some(&fields(&spec, &Value::Array(a))), "h");
        let kb = key::derive("s", &spec, &HeaderMap::new(), Some(&fields(&spec, &Value::Array(b))), "h");
        if let (Ok(ka), Ok(kb)) = (ka, kb) {
            prop_assert_ne!(ka, kb);
        }
    }

    /// A source's name namespaces its keys: two sources never share a key.
    #[test]
    fn keys_of_two_sources_never_collide(value in "[a-z0-9_-]{1,20}") {
        let spec = KeySpec::Json(vec!["/id".into()]);
        let body = serde_json::json!({ "id": value });
        let body = fields(&spec, &body);
        let ka = key::derive("stripe", &spec, &HeaderMap::new(), Some(&body), "h");
        let kb = key::derive("github", &spec, &HeaderMap::new(), Some(&body), "h");
        prop_assert_ne!(ka.expect("usable"), kb.expect("usable"));
    }

    /// SQS ids: the same input gives the same id, always within SQS's 128 characters and its
    /// character set; a value that already fits is kept as is.
    #[test]
    fn sqs_ids_are_stable_and_acceptable(value in any::<String>()) {
        let id = sqs_id(&value);
        prop_assert_eq!(&id, &sqs_id(&value));
        prop_assert!(!id.is_empty() && id.len() <= SQS_ID_MAX);
        prop_assert!(id.bytes().all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation()));
        if !value.is_empty()
            && value.len() <= SQS_ID_MAX
            && value.bytes().all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation())
        {
            prop_assert_eq!(id, value);
        }
    }

    /// The body's own text, kept: any JSON text is its own `JsonText`, re-indented exactly as
    /// serde_json's pretty printer would (only whitespace differs), and a destination's
    /// payload holds it in place.
    #[test]
    fn json_text_is_kept_and_re_indented_as_serde_json_would(value in json(), spaces in "[ \t\r\n]{0,3}") {
        let compact = value.to_string();
        let body = format!("{spaces}{compact}{spaces}");
        let text = JsonText::parse(body.as_bytes()).expect("JSON");
        prop_assert_eq!(text.as_str(), compact.as_str());
        prop_assert!(text.integers_fit_i64());
        let pretty = text.pretty();
        prop_assert_eq!(&pretty, &serde_json::to_string_pretty(&value).expect("pretty"));
        prop_assert_eq!(JsonText::parse(pretty.as_bytes()).expect("JSON").pretty(), pretty);
        let job = inbox::Job {
            key: "s:k".into(),
            source: "s".into(),
            body: body.into_bytes().into(),
            headers: BTreeMap::new(),
            attempt: 1,
            lease_until_ms: 0,
            replay_id: None,
            event_type: None,
            trace: None,
        };
        let payload = detail::detail(&job, detail::Carries::AnyJson);
        let ends_with_body = payload.ends_with(&format!(r#","body":{compact}}}"#));
        prop_assert!(ends_with_body, "{}", payload);
    }
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "[a|\\\\0-9]{1,5}".prop_map(Value::String),
    ]
}

// ---------------------------------------------------------------------------------------
// The envelope.
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `Envelope::new` → `to_json` → `parse` → `body_bytes` gives back the exact bytes, for
    /// any bytes (UTF-8 of characters SQS carries travels as is, anything else as base64), and
    /// the whole envelope.
    #[test]
    fn envelope_round_trips_any_bytes(
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..2048),
            any::<String>().prop_map(String::into_bytes),
        ],
        key in any::<String>(),
        source in any::<String>(),
        received_at in any::<i64>(),
        headers in prop::collection::btree_map(any::<String>(), any::<String>(), 0..4),
    ) {
        let sha = key::sha256_hex(&body);
        let env = Envelope::new(&key, &source, received_at, &sha, headers.clone(), &body);
        // A NUL or U+FFFE is UTF-8 that SQS refuses: base64 carries it too.
        let carried_as_text = std::str::from_utf8(&body)
            .is_ok_and(|text| text.chars().all(sqs_can_carry));
        prop_assert_eq!(
            env.body_encoding.is_some(),
            !carried_as_text,
            "base64 exactly when the body is not UTF-8 text SQS carries"
        );
        let back = Envelope::parse(&env.to_json()).expect("parses");
        prop_assert_eq!(&back, &env);
        prop_assert_eq!(back.body_bytes().expect("decodes"), body);
        prop_assert_eq!(back.headers, headers);
        prop_assert_eq!(back.payload_sha256, sha);
    }
}

#[test]
fn envelope_round_trips_edge_bodies() {
    let bodies: Vec<Vec<u8>> = vec![
        Vec::new(),
        vec![0],
        vec![0xff; 300_000],
        "\u{2028}\u{2029}\u{feff}\"\\</script>".as_bytes().to_vec(),
        b"\xed\xa0\x80".to_vec(), // an encoded surrogate: not UTF-8
    ];
    for body in bodies {
        let env = Envelope::new("k", "s", 0, "h", BTreeMap::new(), &body);
        let back = Envelope::parse(&env.to_json()).expect("parses");
        assert_eq!(back.body_bytes().expect("decodes"), body);
    }
}

// ---------------------------------------------------------------------------------------
// Constant-time comparison (docs/design.md §3), checked on the source.
// ---------------------------------------------------------------------------------------

/// Words that mark an expression as holding MAC or signature bytes.
const MAC_WORDS: [&str; 9] = [
    "mac",
    "expected",
    "candidate",
    "signature",
    "digest",
    "finalize",
    "into_bytes",
    "hmac",
    "tag",
];

/// The code of a Rust source, without comments and string or char literals (good enough for
/// the file it checks: no raw strings with quotes in them).
fn code_only(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                out.push_str("\"\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    match (escaped, c) {
                        (false, '\\') => escaped = true,
                        (false, '"') => break,
                        _ => escaped = false,
                    }
                }
            }
            '\'' => {
                // A char literal ('x', '\n') or a lifetime ('a): skip only the former.
                let rest: String = chars.clone().take(4).collect();
                let literal_len = if rest.starts_with('\\') {
                    rest.find('\'').map(|i| i + 1)
                } else if rest.chars().nth(1) == Some('\'') {
                    Some(rest.chars().next().map_or(0, char::len_utf8) + 1)
                } else {
                    None
                };
                match literal_len {
                    Some(n) => {
                        let mut taken = 0;
                        while taken < n {
                            taken += chars.next().map_or(n, char::len_utf8);
                        }
                        out.push_str("' '");
                    }
                    None => out.push('\''),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The statements (split at `;`, `{`, `}`) of `code` that compare MAC-like bytes with `==`,
/// `!=`, `.eq(`, `.ne(`, `assert_eq!`, or `memcmp`/`starts_with` on them.
fn variable_time_comparisons(code: &str) -> Vec<String> {
    code.split([';', '{', '}'])
        .map(str::trim)
        .filter(|stmt| {
            let lower = stmt.to_ascii_lowercase();
            let compares = lower.contains("==")
                || lower.contains("!=")
                || lower.contains(".eq(")
                || lower.contains(".ne(")
                || lower.contains("assert_eq!")
                || lower.contains("memcmp")
                || lower.contains(".starts_with(&");
            compares
                && lower
                    .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .any(|word| {
                        MAC_WORDS.iter().any(|w| {
                            word == *w
                                || word.starts_with(&format!("{w}_"))
                                || word.ends_with(&format!("_{w}"))
                        })
                    })
        })
        .map(|stmt| stmt.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_checker_catches_variable_time_comparisons() {
    let bad = [
        "if expected.as_slice() == candidate.as_slice() { return Ok(()) }",
        "let ok = mac.finalize().into_bytes().as_slice() != sig;",
        "if expected_mac.eq(&given) { }",
        "ok |= hmac_bytes == theirs;",
    ];
    for snippet in bad {
        assert_eq!(
            variable_time_comparisons(&code_only(snippet)).len(),
            1,
            "{snippet}"
        );
    }
    let fine = [
        "matched |= expected.as_slice().ct_eq(candidate.as_slice());",
        "if scheme == Scheme::None { }",
        "// expected == candidate",
        "let s = \"mac == other\";",
    ];
    for snippet in fine {
        assert!(
            variable_time_comparisons(&code_only(snippet)).is_empty(),
            "{snippet}"
        );
    }
}

#[test]
fn macs_are_compared_in_constant_time() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/signature/keys.rs");
    let source = std::fs::read_to_string(path).expect("signature/keys.rs");
    let code = code_only(&source);
    let found = variable_time_comparisons(&code);
    assert!(
        found.is_empty(),
        "MAC bytes compared in variable time in src/signature/keys.rs: {found:#?}"
    );
    assert!(
        code.contains(".ct_eq(") || code.contains(".verify_slice("),
        "src/signature/keys.rs compares MACs with neither subtle's ct_eq nor hmac's verify_slice"
    );
    // The check would see the comparison turned into `==` in this very file.
    let mutated = source.replace(
        "expected.as_slice().ct_eq(candidate.as_slice())",
        "Choice::from(u8::from(expected.as_slice() == candidate.as_slice()))",
    );
    if mutated != source {
        assert_eq!(variable_time_comparisons(&code_only(&mutated)).len(), 1);
    }
    // And the MAC of every key and candidate is checked, and every shared secret's digest:
    // no early return out of the secret comparisons (the public-key arms compare no secret).
    let secret_arms = code
        .split("Keys::Hmac(keys) =>")
        .nth(1)
        .and_then(|rest| rest.split("Keys::Ed25519(keys) =>").next())
        .expect("the HMAC and shared-secret arms of Keys::matches");
    assert!(
        !secret_arms.contains("return") && !secret_arms.contains("break"),
        "Keys::matches must not stop at the first match or mismatch: {secret_arms}"
    );
}
