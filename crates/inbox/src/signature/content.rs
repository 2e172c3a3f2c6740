//! The signed content as a template: `{timestamp}.{body}`, `v0:{timestamp}:{body}`,
//! `{url}{form_sorted}`... Parsed once at start-up, rendered per request into the pieces the
//! signature covers.

use std::borrow::Cow;

use super::{Inbound, SignatureError};
use crate::json_fields::{self, Field};

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Literal(String),
    /// The raw body.
    Body,
    /// The timestamp's text exactly as sent.
    Timestamp,
    /// A header's value (lowercase name).
    Header(String),
    /// A body field's text (a string unescaped, a number as written).
    Json(String),
    /// `{json?:/POINTER}`: the same, or nothing where the field is absent, null or empty
    /// (Adyen joins its notification fields so: an absent `originalReference` signs as "").
    JsonOrEmpty(String),
    /// The public URL and the query string as received.
    Url,
    /// The HTTP method.
    Method,
    /// The form body's parameters sorted by name, each name then its value (Twilio).
    FormSorted,
}

/// What a scheme signs: a source's parsed `content` template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedContent {
    parts: Vec<Part>,
    text: String,
    /// Whether a value followed by a literal is refused when it holds that literal (the
    /// default; [`SignedContent::without_separator_check`]).
    separator_check: bool,
}

impl SignedContent {
    /// `{body}`: the body alone.
    pub fn body() -> SignedContent {
        SignedContent::parse("{body}").unwrap_or_else(|_| SignedContent {
            parts: vec![Part::Body],
            text: "{body}".to_owned(),
            separator_check: true,
        })
    }

    /// Parses `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<SignedContent, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                Some(0) if rest.starts_with('}') => {
                    return Err(format!("`}}` without its `{{` in `{text}`"))
                }
                Some(0) => {
                    let end = rest
                        .find('}')
                        .ok_or_else(|| format!("`{{` without its `}}` in `{text}`"))?;
                    parts.push(variable(&rest[1..end])?);
                    rest = &rest[end + 1..];
                }
                Some(at) => {
                    parts.push(Part::Literal(rest[..at].to_owned()));
                    rest = &rest[at..];
                }
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        if parts.is_empty() {
            return Err("the signed content is empty".to_owned());
        }
        let times = |wanted: &Part| parts.iter().filter(|p| *p == wanted).count();
        if times(&Part::Body) > 1 || times(&Part::Timestamp) > 1 {
            return Err(format!("`{text}` names {{body}} or {{timestamp}} twice"));
        }
        Ok(SignedContent {
            parts,
            text: text.to_owned(),
            separator_check: true,
        })
    }

    /// The same template accepting a value that holds the literal after it (`separator_check:
    /// false`): for a provider whose signed values may hold its separator (an Adyen
    /// `merchantReference` with a `:`) and whose key is read from signed fields that cannot
    /// hold it, so a re-split request is the same key (a payload mismatch), never a new event.
    pub fn without_separator_check(mut self) -> SignedContent {
        self.separator_check = false;
        self
    }

    /// Whether a value holding the literal after it is refused (the default).
    pub fn checks_separators(&self) -> bool {
        self.separator_check
    }

    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the content covers the body (Mailgun's does not).
    pub fn covers_body(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Body | Part::FormSorted))
    }

    /// Whether the content is the body and nothing else: a captured request verifies again
    /// under any delivery id, at any time.
    pub fn is_body_only(&self) -> bool {
        self.parts == [Part::Body]
    }

    /// The headers the content reads.
    pub fn header_names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Header(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// The JSON pointers the content reads.
    pub fn pointers(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Json(pointer) | Part::JsonOrEmpty(pointer) => Some(pointer.as_str()),
            _ => None,
        })
    }

    /// The pieces the signature covers, in order.
    ///
    /// A value followed by a literal may not hold that literal (`a.b` + `.` + `c` and `a` +
    /// `.` + `b.c` sign the same bytes): such a request is malformed before any MAC.
    pub fn render<'a>(
        &'a self,
        request: &Inbound<'a>,
        timestamp: Option<&'a str>,
        json: Option<&json_fields::Fields>,
    ) -> Result<Vec<Cow<'a, [u8]>>, SignatureError> {
        let mut pieces: Vec<Cow<'a, [u8]>> = Vec::with_capacity(self.parts.len());
        for (index, part) in self.parts.iter().enumerate() {
            let piece: Cow<'a, [u8]> = match part {
                Part::Literal(text) => Cow::Borrowed(text.as_bytes()),
                Part::Body => Cow::Borrowed(request.body),
                Part::Timestamp => Cow::Borrowed(
                    timestamp
                        .ok_or_else(|| SignatureError::Malformed("no signed timestamp".to_owned()))?
                        .as_bytes(),
                ),
                Part::Header(name) => {
                    Cow::Borrowed(super::header(request.headers, name)?.as_bytes())
                }
                Part::Json(pointer) => Cow::Owned(json_text(json, pointer)?.into_bytes()),
                Part::JsonOrEmpty(pointer) => match json_text(json, pointer) {
                    Err(SignatureError::MissingHeader(_)) => Cow::Borrowed(&b""[..]),
                    other => Cow::Owned(other?.into_bytes()),
                },
                Part::Method => Cow::Borrowed(request.method.as_bytes()),
                Part::Url => Cow::Owned(url(request)?.into_bytes()),
                Part::FormSorted => Cow::Owned(form_sorted(request.body)?),
            };
            if let (Some(Part::Literal(next)), false, true) = (
                self.parts.get(index + 1),
                matches!(part, Part::Body | Part::Literal(_)),
                self.separator_check,
            ) {
                if contains(&piece, next.as_bytes()) {
                    return Err(SignatureError::Malformed(format!(
                        "a signed value holds the separator `{next}` that follows it"
                    )));
                }
            }
            pieces.push(piece);
        }
        Ok(pieces)
    }
}

fn variable(name: &str) -> Result<Part, String> {
    Ok(match name {
        "body" => Part::Body,
        "timestamp" => Part::Timestamp,
        "url" => Part::Url,
        "method" => Part::Method,
        "form_sorted" => Part::FormSorted,
        _ => {
            if let Some(header) = name.strip_prefix("header:") {
                http::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| format!("`{header}` is not a header name"))?;
                Part::Header(header.to_ascii_lowercase())
            } else if let Some(pointer) = name.strip_prefix("json:") {
                if !pointer.starts_with('/') {
                    return Err(format!("`{pointer}` is not a JSON pointer"));
                }
                Part::Json(pointer.to_owned())
            } else if let Some(pointer) = name.strip_prefix("json?:") {
                if !pointer.starts_with('/') {
                    return Err(format!("`{pointer}` is not a JSON pointer"));
                }
                Part::JsonOrEmpty(pointer.to_owned())
            } else {
                return Err(format!(
                    "unknown `{{{name}}}` (body, timestamp, header:NAME, json:/POINTER, json?:/POINTER, url, method, form_sorted)"
                ));
            }
        }
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// A body field's text: a string unescaped, a number as written.
pub(super) fn json_text(
    json: Option<&json_fields::Fields>,
    pointer: &str,
) -> Result<String, SignatureError> {
    let missing = || SignatureError::MissingHeader(format!("body field {pointer}"));
    match json.ok_or_else(missing)?.get(pointer) {
        Some(Field::String(text)) if !text.is_empty() => Ok(text.clone()),
        Some(Field::Number(text)) => Ok(text.clone()),
        Some(Field::String(_)) | Some(Field::Null) | None => Err(missing()),
        Some(_) => Err(SignatureError::Malformed(format!(
            "body field {pointer} is not a string or a number"
        ))),
    }
}

/// The URL the sender signed: the source's public URL and the query string as received.
fn url(request: &Inbound<'_>) -> Result<String, SignatureError> {
    let base = request.public_url.ok_or_else(|| {
        SignatureError::Malformed("the source has no public_url to check the signed URL".to_owned())
    })?;
    Ok(match request.query {
        Some(query) if !query.is_empty() => format!("{base}?{query}"),
        _ => base.to_owned(),
    })
}

/// Each form parameter's name then its value, sorted by name (then value), no separators.
fn form_sorted(body: &[u8]) -> Result<Vec<u8>, SignatureError> {
    if std::str::from_utf8(body).is_err() {
        return Err(SignatureError::Malformed(
            "the form body is not UTF-8".to_owned(),
        ));
    }
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    pairs.sort();
    let mut out = Vec::with_capacity(body.len());
    for (name, value) in pairs {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_into_their_parts() {
        let t = SignedContent::parse("v0:{timestamp}:{body}").unwrap();
        assert_eq!(
            t.parts(),
            [
                Part::Literal("v0:".into()),
                Part::Timestamp,
                Part::Literal(":".into()),
                Part::Body
            ]
        );
        let t = SignedContent::parse("{header:Webhook-Id}.{timestamp}.{body}").unwrap();
        assert_eq!(t.parts()[0], Part::Header("webhook-id".into()));
        for (bad, why) in [
            ("{body", "`{` without its `}` in `{body`"),
            ("body}", "`}` without its `{` in `body}`"),
            ("{bodies}", "unknown `{bodies}` (body, timestamp, header:NAME, json:/POINTER, json?:/POINTER, url, method, form_sorted)"),
            ("{json:x}", "`x` is not a JSON pointer"),
            ("{body}{body}", "`{body}{body}` names {body} or {timestamp} twice"),
            ("", "the signed content is empty"),
        ] {
            assert_eq!(SignedContent::parse(bad), Err(why.to_owned()), "{bad}");
        }
        assert!(SignedContent::body().is_body_only());
        assert!(!SignedContent::parse("{json:/a}{json:/b}")
            .unwrap()
            .covers_body());
    }

    #[test]
    fn an_optional_field_signs_as_nothing_and_the_separator_check_can_be_lifted() {
        let t = SignedContent::parse("{json:/a}:{json?:/b}:{json?:/c}").unwrap();
        assert_eq!(t.parts()[2], Part::JsonOrEmpty("/b".into()));
        assert_eq!(t.pointers().collect::<Vec<_>>(), ["/a", "/b", "/c"]);
        let body = br#"{"a":"x:y","b":null,"c":12}"#;
        let json = json_fields::read(body, &["/a", "/b", "/c"]).unwrap();
        let headers = http::HeaderMap::new();
        let request = Inbound::post(&headers, body);
        // `x:y` holds the `:` after it: refused unless the template lifts the check.
        assert_eq!(
            t.render(&request, None, Some(&json)),
            Err(SignatureError::Malformed(
                "a signed value holds the separator `:` that follows it".into()
            ))
        );
        let lifted = t.without_separator_check();
        let pieces: Vec<u8> = lifted.render(&request, None, Some(&json)).unwrap().concat();
        assert_eq!(pieces, b"x:y::12");
        // A required field absent is still refused.
        let missing = json_fields::read(br#"{"b":"1"}"#, &["/a", "/b"]).unwrap();
        assert!(matches!(
            lifted.render(&request, None, Some(&missing)),
            Err(SignatureError::MissingHeader(what)) if what == "body field /a"
        ));
    }

    #[test]
    fn form_parameters_are_sorted_by_name_and_joined_without_separators() {
        let out = form_sorted(b"To=%2B1555&Body=hi+there&AccountSid=AC1").unwrap();
        assert_eq!(out, b"AccountSidAC1Bodyhi thereTo+1555");
    }
}
