//! A JSON body kept as the text the sender signed, never through a general parser's values.
//!
//! Parsing a body into `serde_json::Value` and writing it again changes it: an integer beyond
//! 64 bits becomes a float (`123456789012345678901234` comes out `1.2345678901234567e+23`) and
//! of two members with one name only the last is kept. What leaves the inbox (a destination's
//! call, the console's page) is the text itself: [`JsonText`] is a body checked to be JSON
//! (by [`crate::json_fields::read`], the reader the key and the signature checks use), and
//! what is done with it works on its tokens as written: [`JsonText::pretty`] re-indents them,
//! [`JsonText::integers_fit_i64`] reads its numbers' text.

use crate::json_fields;

/// A body that is JSON (RFC 8259, UTF-8, at most [`json_fields::MAX_DEPTH`] levels), as its
/// text: the bytes as sent, less the whitespace around the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonText<'a>(&'a str);

impl<'a> JsonText<'a> {
    /// The body's JSON text; `None` where the body is not JSON.
    pub fn parse(body: &'a [u8]) -> Option<Self> {
        json_fields::read(body, &[]).ok()?;
        let text = std::str::from_utf8(body).ok()?;
        Some(Self(text.trim_matches(is_json_whitespace)))
    }

    /// The text, exactly as sent (less the whitespace around it).
    pub fn as_str(&self) -> &'a str {
        self.0
    }

    /// Whether every integer in the text (a number without fraction or exponent) is within
    /// the signed 64-bit range, read from its text.
    pub fn integers_fit_i64(&self) -> bool {
        Tokens::new(self.0).all(|t| match t {
            Token::Scalar(s) if is_integer(s) => s.parse::<i64>().is_ok(),
            _ => true,
        })
    }

    /// The text re-indented (two spaces, `": "` after a name, as `serde_json`'s pretty
    /// printer): only whitespace between tokens changes; every string, number and member,
    /// a repeated name too, is written as sent.
    pub fn pretty(&self) -> String {
        let mut out = String::with_capacity(self.0.len() * 2);
        let mut depth = 0usize;
        let mut tokens = Tokens::new(self.0).peekable();
        while let Some(token) = tokens.next() {
            match token {
                Token::Open(open) => {
                    out.push(open);
                    if let Some(Token::Close(close)) = tokens.peek().copied() {
                        tokens.next();
                        out.push(close);
                    } else {
                        depth += 1;
                        line(&mut out, depth);
                    }
                }
                Token::Close(close) => {
                    depth = depth.saturating_sub(1);
                    line(&mut out, depth);
                    out.push(close);
                }
                Token::Comma => {
                    out.push(',');
                    line(&mut out, depth);
                }
                Token::Colon => out.push_str(": "),
                Token::Scalar(s) => out.push_str(s),
            }
        }
        out
    }
}

fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn is_integer(scalar: &str) -> bool {
    scalar.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && !scalar.contains(['.', 'e', 'E'])
}

fn line(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// A token of JSON text: punctuation, or a string, number or literal as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Open(char),
    Close(char),
    Comma,
    Colon,
    Scalar(&'a str),
}

/// The tokens of a text checked to be JSON, whitespace between them skipped.
struct Tokens<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let bytes = self.text.as_bytes();
        while matches!(bytes.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        let start = self.pos;
        let first = *bytes.get(start)?;
        self.pos += 1;
        match first {
            b'{' | b'[' => return Some(Token::Open(char::from(first))),
            b'}' | b']' => return Some(Token::Close(char::from(first))),
            b',' => return Some(Token::Comma),
            b':' => return Some(Token::Colon),
            b'"' => {
                let mut escaped = false;
                while let Some(&b) = bytes.get(self.pos) {
                    self.pos += 1;
                    match b {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'"' => break,
                        _ => {}
                    }
                }
            }
            _ => {
                while let Some(&b) = bytes.get(self.pos) {
                    if matches!(
                        b,
                        b' ' | b'\t'
                            | b'\n'
                            | b'\r'
                            | b','
                            | b':'
                            | b'{'
                            | b'}'
                            | b'['
                            | b']'
                            | b'"'
                    ) {
                        break;
                    }
                    self.pos += 1;
                }
            }
        }
        // Each token ends at an ASCII byte or at the end: a boundary of the text.
        self.text.get(start..self.pos).map(Token::Scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNED: &str = r#"{"id":123456789012345678901234,"amount":1,"amount":1000}"#;

    #[test]
    fn the_text_is_the_body_less_the_whitespace_around_it() {
        let body = format!(" \r\n{SIGNED}\t\n");
        let text = JsonText::parse(body.as_bytes()).expect("JSON");
        assert_eq!(text.as_str(), SIGNED);
        for not_json in [
            &b"a=1&b=2"[..],
            b"",
            b"  ",
            b"{\"a\":1",
            b"\xff",
            b"[\"\\ud800\"]",
        ] {
            assert_eq!(JsonText::parse(not_json), None, "{not_json:?}");
        }
        assert_eq!(
            JsonText::parse(b"\"x\"").map(|t| t.as_str()),
            Some("\"x\""),
            "a scalar is JSON"
        );
    }

    #[test]
    fn integers_are_read_from_their_text() {
        let fits = |s: &str| {
            JsonText::parse(s.as_bytes())
                .expect("JSON")
                .integers_fit_i64()
        };
        assert!(!fits(SIGNED));
        assert!(fits(
            r#"{"a":9223372036854775807,"b":-9223372036854775808,"c":1.5e400}"#
        ));
        assert!(!fits("[9223372036854775808]"));
        assert!(!fits("-9223372036854775809"));
        assert!(
            fits(r#"{"n":"123456789012345678901234"}"#),
            "a string is no number"
        );
    }

    #[test]
    fn pretty_changes_only_the_whitespace_between_tokens() {
        let text = JsonText::parse(SIGNED.as_bytes()).expect("JSON");
        assert_eq!(
            text.pretty(),
            "{\n  \"id\": 123456789012345678901234,\n  \"amount\": 1,\n  \"amount\": 1000\n}"
        );
        let nested = r#" {"a" : [1, {"b":[]}, {}, "x\"y,:{" , 1.50E+2, "\u00e9"], "c":null} "#;
        let pretty = JsonText::parse(nested.as_bytes()).expect("JSON").pretty();
        assert_eq!(
            pretty,
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    },\n    {},\n    \"x\\\"y,:{\",\n    1.50E+2,\n    \"\\u00e9\"\n  ],\n  \"c\": null\n}"
        );
        let strip = |s: &str| -> String { s.chars().filter(|c| !c.is_whitespace()).collect() };
        assert_eq!(strip(&pretty), strip(nested));
        assert_eq!(JsonText::parse(b"7").expect("JSON").pretty(), "7");
    }
}
