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
    /// The public URL and the query string as received.
    Url,
    /// The HTTP method.
    Method,
    /// The form body's parameters sorted by name, each name then its value (Twilio).
    FormSorted,
}

/// A parsed content template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    text: String,
}

impl Template {
    /// `{body}`: the body alone.
    pub fn body() -> Template {
        Template::parse("{body}").unwrap_or_else(|_| Template {
            parts: vec![Part::Body],
            text: "{body}".to_owned(),
        })
    }

    /// Parses `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Template, String> {
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
        Ok(Template {
            parts,
            text: text.to_owned(),
        })
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
            Part::Json(pointer) => Some(pointer.as_str()),
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
                Part::Method => Cow::Borrowed(request.method.as_bytes()),
                Part::Url => Cow::Owned(url(request)?.into_bytes()),
                Part::FormSorted => Cow::Owned(form_sorted(request.body)?),
            };
            if let (Some(Part::Literal(next)), false) = (
                self.parts.get(index + 1),
                matches!(part, Part::Body | Part::Literal(_)),
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
            } else {
                return Err(format!(
                    "unknown `{{{name}}}` (body, timestamp, header:NAME, json:/POINTER, url, method, form_sorted)"
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
        let t = Template::parse("v0:{timestamp}:{body}").unwrap();
        assert_eq!(
            t.parts(),
            [
                Part::Literal("v0:".into()),
                Part::Timestamp,
                Part::Literal(":".into()),
                Part::Body
            ]
        );
        let t = Template::parse("{header:Webhook-Id}.{timestamp}.{body}").unwrap();
        assert_eq!(t.parts()[0], Part::Header("webhook-id".into()));
        for (bad, why) in [
            ("{body", "`{` without its `}` in `{body`"),
            ("body}", "`}` without its `{` in `body}`"),
            ("{bodies}", "unknown `{bodies}` (body, timestamp, header:NAME, json:/POINTER, url, method, form_sorted)"),
            ("{json:x}", "`x` is not a JSON pointer"),
            ("{body}{body}", "`{body}{body}` names {body} or {timestamp} twice"),
            ("", "the signed content is empty"),
        ] {
            assert_eq!(Template::parse(bad), Err(why.to_owned()), "{bad}");
        }
        assert!(Template::body().is_body_only());
        assert!(!Template::parse("{json:/a}{json:/b}").unwrap().covers_body());
    }

    #[test]
    fn form_parameters_are_sorted_by_name_and_joined_without_separators() {
        let out = form_sorted(b"To=%2B1555&Body=hi+there&AccountSid=AC1").unwrap();
        assert_eq!(out, b"AccountSidAC1Bodyhi thereTo+1555");
    }
}
