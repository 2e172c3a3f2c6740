//! One member taken out of a JSON body as sent: the bytes of that member and one comma beside
//! it, every other byte kept (nothing re-serialised).

use super::{tokens, FieldsError, Reader, Step, MAX_DEPTH};

/// `body` without the member `pointer` names (a path of object members, such as
/// `/passcode`): `Ok(None)` where the body has none there. The whole body is checked to be
/// JSON; a member on the pointer's path given twice is [`FieldsError::Duplicate`].
pub fn without_member(body: &[u8], pointer: &str) -> Result<Option<Vec<u8>>, FieldsError> {
    let text = std::str::from_utf8(body).map_err(|_| FieldsError::NotJson)?;
    let path = tokens(pointer).filter(|p| !p.is_empty());
    let mut reader = Reader {
        bytes: text.as_bytes(),
        pos: 0,
        pointers: &[],
        paths: &[],
        found: Vec::new(),
    };
    reader.ws();
    let span = match (&path, reader.peek()) {
        (Some(path), Some(b'{')) => reader.strip(path, pointer, 0)?,
        _ => {
            reader.value(&[], 0)?;
            None
        }
    };
    reader.ws();
    if reader.pos != reader.bytes.len() {
        return Err(FieldsError::NotJson);
    }
    Ok(span.map(|(start, end)| [&body[..start], &body[end..]].concat()))
}

impl Reader<'_> {
    /// An object at `pos`, read whole: the span to take out for the member `path` names
    /// below it, if any.
    fn strip(
        &mut self,
        path: &[String],
        pointer: &str,
        depth: usize,
    ) -> Step<Option<(usize, usize)>> {
        if depth >= MAX_DEPTH {
            return Err(FieldsError::NotJson);
        }
        self.expect(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(None);
        }
        // Each member's first and past-the-last byte; the one the path names, and what to
        // take out below it.
        let mut members: Vec<(usize, usize)> = Vec::new();
        let mut named: Option<usize> = None;
        let mut below: Option<(usize, usize)> = None;
        loop {
            self.ws();
            let start = self.pos;
            if self.peek() != Some(b'"') {
                return Err(FieldsError::NotJson);
            }
            let name = self.string(true)?.unwrap_or_default();
            self.ws();
            self.expect(b':')?;
            self.ws();
            let on_path = path.first() == Some(&name);
            if on_path && named.is_some() {
                return Err(FieldsError::Duplicate(pointer.to_owned()));
            }
            if on_path {
                named = Some(members.len());
            }
            if on_path && path.len() > 1 && self.peek() == Some(b'{') {
                below = self.strip(&path[1..], pointer, depth + 1)?;
            } else {
                self.value(&[], depth + 1)?;
            }
            members.push((start, self.pos));
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(FieldsError::NotJson),
            }
        }
        if path.len() > 1 {
            return Ok(below);
        }
        Ok(named.map(|i| match (members.get(i + 1), i.checked_sub(1)) {
            // Up to the next member: the comma and the space after it go too.
            (Some(next), _) => (members[i].0, next.0),
            // The last of several: from the end of the one before.
            (None, Some(before)) => (members[before].1, members[i].1),
            (None, None) => members[i],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::without_member;
    use crate::json_fields::FieldsError;

    fn strip(body: &str, pointer: &str) -> Option<String> {
        without_member(body.as_bytes(), pointer)
            .expect("JSON")
            .map(|b| String::from_utf8(b).expect("UTF-8"))
    }

    #[test]
    fn exactly_the_member_goes_and_every_other_byte_stays() {
        let body = r#"{"event_type":"PING", "passcode" : "s3cr\"t","n":1.50,"x":{"passcode":1}}"#;
        assert_eq!(
            strip(body, "/passcode").as_deref(),
            Some(r#"{"event_type":"PING", "n":1.50,"x":{"passcode":1}}"#)
        );
        assert_eq!(
            strip(r#"{"a":1 , "passcode":"p" }"#, "/passcode").as_deref(),
            Some(r#"{"a":1 }"#)
        );
        assert_eq!(
            strip(r#" {"passcode":"p"} "#, "/passcode").as_deref(),
            Some(" {} ")
        );
        assert_eq!(
            strip(r#"{"a":{"b":"t","c":2}}"#, "/a/b").as_deref(),
            Some(r#"{"a":{"c":2}}"#)
        );
        assert_eq!(strip(r#"{"a":1}"#, "/passcode"), None);
        assert_eq!(strip("[1]", "/passcode"), None);
        assert_eq!(
            without_member(br#"{"passcode":"a","passcode":"b"}"#, "/passcode"),
            Err(FieldsError::Duplicate("/passcode".to_owned()))
        );
        assert_eq!(
            without_member(br#"{"passcode":"a",}"#, "/passcode"),
            Err(FieldsError::NotJson)
        );
    }
}
