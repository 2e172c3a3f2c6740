//! What an event's page shows of its archived envelope: the headers with every value that could
//! sign or authorise masked, and the body as text (re-indented where it is JSON: its tokens as
//! sent, never parsed into values, so a 24-digit integer and a name given twice show as the
//! sender signed them). The page escapes what these return (maud escapes every value), so a
//! body holding `<script>` is text.

use std::collections::BTreeMap;

use inbox::json_text::JsonText;

/// Bodies longer than this are shown cut, saying so.
pub const SHOWN_BODY_BYTES: usize = 256 * 1024;

/// Whether a header's value is shown: only names that identify or describe an event (its id,
/// delivery, event name, timestamp, content type) are; anything else the sender's scheme puts
/// in the envelope (a signature, an HMAC, a token) is masked, whatever the scheme calls it.
pub fn shown_in_clear(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if [
        "sig", "hmac", "auth", "token", "secret", "key", "password", "cookie",
    ]
    .iter()
    .any(|part| name.contains(part))
    {
        return false;
    }
    name == "content-type"
        || name == "user-agent"
        || [
            "-id",
            "-delivery",
            "-event",
            "-timestamp",
            "-topic",
            "-hook-id",
        ]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// The headers as the page lists them: a masked value says only its length.
pub fn headers(headers: &BTreeMap<String, String>) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let shown = if shown_in_clear(name) {
                value.clone()
            } else {
                format!("•••••• (masked, {} characters)", value.chars().count())
            };
            (name.clone(), shown)
        })
        .collect()
}

/// How a body is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownBody {
    pub text: String,
    /// `json`, `text` or `binary`.
    pub kind: &'static str,
    pub bytes: usize,
    pub cut: bool,
}

/// JSON re-indented, only the whitespace between its tokens changed ([`JsonText::pretty`]);
/// other UTF-8 as it is; anything else with its control characters and bytes that are not
/// UTF-8 written `\xNN` (as `lookup --body` shows a body on a terminal). At most
/// [`SHOWN_BODY_BYTES`] of it.
pub fn body(raw: &[u8]) -> ShownBody {
    let (text, kind) = match JsonText::parse(raw) {
        Some(json) => (json.pretty(), "json"),
        None => match std::str::from_utf8(raw) {
            Ok(text) => (text.to_owned(), "text"),
            Err(_) => (
                String::from_utf8_lossy(&crate::lookup::escape_for_terminal(raw)).into_owned(),
                "binary",
            ),
        },
    };
    let cut = text.len() > SHOWN_BODY_BYTES;
    let text = if cut {
        let mut end = SHOWN_BODY_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text[..end].to_owned()
    } else {
        text
    };
    ShownBody {
        text,
        kind,
        bytes: raw.len(),
        cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_masked_ids_shown() {
        let h: BTreeMap<String, String> = [
            ("x-hub-signature-256", "sha256=abcdef"),
            ("stripe-signature", "t=1,v1=ff"),
            ("webhook-signature", "v1,xyz"),
            ("x-shopify-hmac-sha256", "aGVsbG8="),
            ("x-sig", "custom"),
            ("authorization", "Bearer s3cret"),
            ("x-github-delivery", "d-1"),
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", "1700000000"),
            ("x-github-event", "push"),
            ("content-type", "application/json"),
            ("x-custom-mac", "deadbeef"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let shown: BTreeMap<_, _> = headers(&h).into_iter().collect();
        for masked in [
            "x-hub-signature-256",
            "stripe-signature",
            "webhook-signature",
            "x-shopify-hmac-sha256",
            "x-sig",
            "authorization",
            "x-custom-mac",
        ] {
            assert!(
                shown[masked].starts_with("•••••• (masked,"),
                "{masked}: {}",
                shown[masked]
            );
            assert!(!shown[masked].contains(&h[masked]), "{masked}");
        }
        for clear in [
            "x-github-delivery",
            "webhook-id",
            "webhook-timestamp",
            "x-github-event",
            "content-type",
        ] {
            assert_eq!(shown[clear], h[clear], "{clear}");
        }
    }

    #[test]
    fn json_is_the_senders_text_re_indented() {
        let j = body(br#"{"id":123456789012345678901234,"amount":1,"amount":1000}"#);
        assert_eq!(j.kind, "json");
        assert_eq!(
            j.text,
            "{\n  \"id\": 123456789012345678901234,\n  \"amount\": 1,\n  \"amount\": 1000\n}"
        );
        let escaped = body(br#"{"price":1.50,"name":"caf\u00e9"}"#);
        assert!(escaped.text.contains("1.50"), "{}", escaped.text);
        assert!(escaped.text.contains(r#""caf\u00e9""#), "{}", escaped.text);
    }

    #[test]
    fn json_is_pretty_text_stays_binary_is_escaped() {
        let j = body(br#"{"a":[1,"<script>alert(1)</script>"]}"#);
        assert_eq!(j.kind, "json");
        assert!(j.text.contains("\n  \"a\": [\n"), "{}", j.text);
        assert!(
            j.text.contains("<script>alert(1)</script>"),
            "the text itself; the page escapes it"
        );
        let t = body(b"plain <b>text</b>");
        assert_eq!((t.kind, t.text.as_str()), ("text", "plain <b>text</b>"));
        let b = body(b"\xff\x1b[2J");
        assert_eq!(b.kind, "binary");
        assert_eq!(b.text, "\\xff\\x1b[2J");
        let long = body(&vec![b'a'; SHOWN_BODY_BYTES + 10]);
        assert!(
            long.cut && long.text.len() == SHOWN_BODY_BYTES && long.bytes == SHOWN_BODY_BYTES + 10
        );
    }
}
