//! The values a source's key and group pointers name, read from the body in one pass.
//!
//! A general JSON parser is the wrong tool for a key: it turns a number into a float (two
//! distinct 20-digit ids become the same value) and keeps the last of two members of the same
//! name, where another parser downstream may keep the first. This reader checks the whole body
//! is JSON (RFC 8259: UTF-8, at most [`MAX_DEPTH`] levels of nesting) and captures only the
//! values at the pointers asked for (RFC 6901):
//!
//! - a number is kept as the text as sent, so `12345678901234567890123` stays exactly that;
//! - a member name that appears twice in an object on a pointer's path (the member the
//!   pointer follows, or the one it names) is [`FieldsError::Duplicate`]: which of the two
//!   is meant has no answer every parser agrees on.
//!
//! Elsewhere in the body, duplicates and numbers are left alone (they are the system of
//! record's business, not the key's).

mod split;
mod strip;
pub use split::{array_elements, json_lines, SplitError};
pub use strip::without_member;

/// How deep arrays and objects may nest (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// A value at a pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    Null,
    Bool(bool),
    /// The number's JSON text, exactly as sent (`-12`, `1e3`, `1.50`).
    Number(String),
    /// The string, unescaped.
    String(String),
    /// An object or an array.
    Compound,
}

/// Why the body gave no fields.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldsError {
    #[error("the body is not JSON")]
    NotJson,
    /// A member on the path of this pointer appears more than once in its object.
    #[error("a member on the path of {0} appears more than once")]
    Duplicate(String),
}

/// The named fields of a form-encoded body (`a=1&b=2`), each decoded, as [`Fields`] keyed by
/// name: a field named twice is refused ([`FieldsError::Duplicate`]), a body that is not
/// UTF-8 is not a form ([`FieldsError::NotJson`]'s twin for forms is the caller's to name).
pub fn read_form(body: &[u8], names: &[&str]) -> Result<Fields, FieldsError> {
    if std::str::from_utf8(body).is_err() {
        return Err(FieldsError::NotJson);
    }
    let mut found: Vec<(String, Option<Field>)> =
        names.iter().map(|n| ((*n).to_owned(), None)).collect();
    for (name, value) in form_urlencoded::parse(body) {
        if let Some(slot) = found.iter_mut().find(|(n, _)| *n == name) {
            if slot.1.is_some() {
                return Err(FieldsError::Duplicate(slot.0.clone()));
            }
            slot.1 = Some(Field::String(value.into_owned()));
        }
    }
    Ok(Fields { found })
}

/// The values found at the pointers given to [`read`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    found: Vec<(String, Option<Field>)>,
}

impl Fields {
    /// The value at `pointer` (one of those read); `None` where the body has none there or the
    /// pointer was not among those read.
    pub fn get(&self, pointer: &str) -> Option<&Field> {
        self.found
            .iter()
            .find(|(p, _)| p == pointer)
            .and_then(|(_, field)| field.as_ref())
    }
}

/// Reads `body`, checking it is JSON, and captures the values at `pointers`.
pub fn read(body: &[u8], pointers: &[&str]) -> Result<Fields, FieldsError> {
    let text = std::str::from_utf8(body).map_err(|_| FieldsError::NotJson)?;
    let paths: Vec<Option<Vec<String>>> = pointers.iter().map(|p| tokens(p)).collect();
    let mut reader = Reader {
        bytes: text.as_bytes(),
        pos: 0,
        pointers,
        paths: &paths,
        found: vec![None; pointers.len()],
    };
    let active: Vec<usize> = (0..pointers.len())
        .filter(|&i| paths[i].is_some())
        .collect();
    reader.ws();
    reader.value(&active, 0)?;
    reader.ws();
    if reader.pos != reader.bytes.len() {
        return Err(FieldsError::NotJson);
    }
    let found = pointers
        .iter()
        .map(|p| (*p).to_owned())
        .zip(reader.found)
        .collect();
    Ok(Fields { found })
}

/// A pointer's reference tokens, unescaped (`~1` is `/`, `~0` is `~`); `None` for text that
/// is not a pointer (it then names nothing).
fn tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    pointers: &'a [&'a str],
    paths: &'a [Option<Vec<String>>],
    found: Vec<Option<Field>>,
}

type Step<T> = Result<T, FieldsError>;

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Step<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(FieldsError::NotJson)
        }
    }

    fn path(&self, i: usize) -> &[String] {
        self.paths[i].as_deref().unwrap_or_default()
    }

    /// A value whose path matches the first `depth` tokens of every pointer in `active`.
    fn value(&mut self, active: &[usize], depth: usize) -> Step<()> {
        let (targets, deeper): (Vec<usize>, Vec<usize>) =
            active.iter().partition(|&&i| self.path(i).len() == depth);
        let field = match self.peek().ok_or(FieldsError::NotJson)? {
            b'{' | b'[' if depth >= MAX_DEPTH => return Err(FieldsError::NotJson),
            b'{' => {
                self.object(&deeper, depth)?;
                Field::Compound
            }
            b'[' => {
                self.array(&deeper, depth)?;
                Field::Compound
            }
            b'"' => match self.string(!targets.is_empty())? {
                Some(s) => Field::String(s),
                None => Field::Null,
            },
            b't' => self.literal("true", Field::Bool(true))?,
            b'f' => self.literal("false", Field::Bool(false))?,
            b'n' => self.literal("null", Field::Null)?,
            b'-' | b'0'..=b'9' => Field::Number(self.number()?.to_owned()),
            _ => return Err(FieldsError::NotJson),
        };
        for i in targets {
            self.found[i] = Some(field.clone());
        }
        Ok(())
    }

    fn object(&mut self, deeper: &[usize], depth: usize) -> Step<()> {
        self.expect(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        let mut seen: Vec<String> = Vec::new();
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(FieldsError::NotJson);
            }
            let name = self.string(!deeper.is_empty())?;
            self.ws();
            self.expect(b':')?;
            self.ws();
            let next: Vec<usize> = match &name {
                Some(name) => deeper
                    .iter()
                    .copied()
                    .filter(|&i| self.path(i).get(depth) == Some(name))
                    .collect(),
                None => Vec::new(),
            };
            if let (Some(name), Some(&first)) = (name, next.first()) {
                if seen.contains(&name) {
                    return Err(FieldsError::Duplicate(self.pointers[first].to_owned()));
                }
                seen.push(name);
            }
            self.value(&next, depth + 1)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(FieldsError::NotJson),
            }
        }
    }

    fn array(&mut self, deeper: &[usize], depth: usize) -> Step<()> {
        self.expect(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        let mut index = 0usize;
        loop {
            self.ws();
            let next: Vec<usize> = if deeper.is_empty() {
                Vec::new()
            } else {
                let token = index.to_string();
                deeper
                    .iter()
                    .copied()
                    .filter(|&i| self.path(i).get(depth) == Some(&token))
                    .collect()
            };
            self.value(&next, depth + 1)?;
            index += 1;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(FieldsError::NotJson),
            }
        }
    }

    fn literal(&mut self, word: &str, field: Field) -> Step<Field> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(field)
        } else {
            Err(FieldsError::NotJson)
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, returned as written.
    fn number(&mut self) -> Step<&str> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(FieldsError::NotJson),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        // The bytes are ASCII digits and signs: always a str boundary.
        std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| FieldsError::NotJson)
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }

    fn some_digits(&mut self) -> Step<()> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            Err(FieldsError::NotJson)
        } else {
            Ok(())
        }
    }

    /// A string at `pos` (on its `"`): checked, and unescaped where `capture`.
    fn string(&mut self, capture: bool) -> Step<Option<String>> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let byte = self.peek().ok_or(FieldsError::NotJson)?;
            self.pos += 1;
            match byte {
                b'"' => break,
                b'\\' => {
                    let escape = self.peek().ok_or(FieldsError::NotJson)?;
                    self.pos += 1;
                    let c = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(FieldsError::NotJson),
                    };
                    if capture {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
                0x00..=0x1f => return Err(FieldsError::NotJson),
                _ => {
                    if capture {
                        out.push(byte);
                    }
                }
            }
        }
        if capture {
            // Whole UTF-8 sequences from valid UTF-8 and encoded chars: always valid.
            String::from_utf8(out)
                .map(Some)
                .map_err(|_| FieldsError::NotJson)
        } else {
            Ok(None)
        }
    }

    /// After `\u`: four hex digits, a surrogate pair where the first is a high surrogate.
    /// A lone surrogate is not a character: not JSON a key can come from.
    fn unicode_escape(&mut self) -> Step<char> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                self.expect(b'\\')?;
                self.expect(b'u')?;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(FieldsError::NotJson);
                }
                0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(FieldsError::NotJson),
            other => other,
        };
        char::from_u32(code).ok_or(FieldsError::NotJson)
    }

    fn hex4(&mut self) -> Step<u32> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or(FieldsError::NotJson)?;
        let mut value = 0u32;
        for &d in digits {
            let v = char::from(d).to_digit(16).ok_or(FieldsError::NotJson)?;
            value = value * 16 + v;
        }
        self.pos += 4;
        Ok(value)
    }
}

/// The entries of a JSON object in document order, a name given twice kept twice (a map
/// would keep the last of two, silently): `WEBHOOK_SOURCES` and `WEBHOOK_DESTINATIONS`.
pub struct Entries(pub Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, serde_json::Value>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(body: &str, pointer: &str) -> Result<Option<Field>, FieldsError> {
        read(body.as_bytes(), &[pointer]).map(|f| f.get(pointer).cloned())
    }

    #[test]
    fn numbers_are_kept_as_sent() {
        let a = one(r#"{"id": 12345678901234567890123}"#, "/id").unwrap();
        let b = one(r#"{"id": 12345678901234567890124}"#, "/id").unwrap();
        assert_eq!(a, Some(Field::Number("12345678901234567890123".into())));
        assert_ne!(a, b);
        assert_eq!(
            one(r#"{"id": -1.50e+3}"#, "/id").unwrap(),
            Some(Field::Number("-1.50e+3".into()))
        );
        // What a float parser makes of them: the same value (the bug this module closes).
        let fa: f64 = "12345678901234567890123".parse().unwrap();
        let fb: f64 = "12345678901234567890124".parse().unwrap();
        assert_eq!(fa, fb);
    }

    #[test]
    fn a_duplicated_member_on_the_path_is_refused_elsewhere_not() {
        assert_eq!(
            one(r#"{"id":"a","id":"b"}"#, "/id"),
            Err(FieldsError::Duplicate("/id".into()))
        );
        assert_eq!(
            one(r#"{"data":{"id":1},"data":{"id":2}}"#, "/data/id"),
            Err(FieldsError::Duplicate("/data/id".into()))
        );
        assert_eq!(
            one(r#"{"data":{"id":1,"id":1}}"#, "/data/id"),
            Err(FieldsError::Duplicate("/data/id".into()))
        );
        // Escaped spellings of the same name are the same name.
        assert_eq!(
            one(r#"{"id":"a","\u0069d":"b"}"#, "/id"),
            Err(FieldsError::Duplicate("/id".into()))
        );
        // Off the path: the system of record's business.
        assert_eq!(
            one(r#"{"id":"a","x":1,"x":2,"y":{"id":1,"id":2}}"#, "/id").unwrap(),
            Some(Field::String("a".into()))
        );
    }

    #[test]
    fn pointers_follow_rfc_6901() {
        let body = r#"{"a/b":{"m~n":[10,{"k":"v"}]},"":true}"#;
        assert_eq!(
            one(body, "/a~1b/m~0n/1/k").unwrap(),
            Some(Field::String("v".into()))
        );
        assert_eq!(
            one(body, "/a~1b/m~0n/0").unwrap(),
            Some(Field::Number("10".into()))
        );
        assert_eq!(one(body, "/a~1b/m~0n/01").unwrap(), None);
        assert_eq!(one(body, "/a~1b/m~0n/2").unwrap(), None);
        assert_eq!(one(body, "/").unwrap(), Some(Field::Bool(true)));
        assert_eq!(one(body, "").unwrap(), Some(Field::Compound));
        assert_eq!(one(body, "nope").unwrap(), None);
        assert_eq!(
            one(r#"{"id":"caf\u00e9 \ud83d\ude00"}"#, "/id").unwrap(),
            Some(Field::String("caf\u{e9} \u{1F600}".into()))
        );
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for bad in [
            "",
            " ",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "\"a",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"a\u{1}\"",
            "tru",
            "nul",
            "{} {}",
            "{'a':1}",
            "\u{feff}{}",
        ] {
            assert_eq!(
                read(bad.as_bytes(), &["/a"]),
                Err(FieldsError::NotJson),
                "{bad:?}"
            );
            let e = serde_json::from_str::<serde_json::Value>(bad).unwrap_err();
            assert!(e.is_syntax() || e.is_eof(), "{bad:?}: {e}");
        }
        assert_eq!(read(&[b'"', 0xff, b'"'], &[]), Err(FieldsError::NotJson));
        for good in [
            "0",
            "-0.0e-0",
            " [ ] ",
            "{\"a\" : [true, false, null, \"\\\"\\/\\b\\f\\n\\r\\t\"]}",
        ] {
            assert!(read(good.as_bytes(), &["/a"]).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(read(deep(MAX_DEPTH).as_bytes(), &[]).is_ok());
        for n in [MAX_DEPTH + 1, 100_000] {
            assert_eq!(read(deep(n).as_bytes(), &[]), Err(FieldsError::NotJson));
        }
    }
}
