//! A batch's events as byte ranges of the body as sent (docs/design.md §14): the elements of
//! the array at a pointer, or the values of a JSON Lines body. Nothing is re-serialised: each
//! event is a slice of the signed bytes.

use super::{tokens, FieldsError, Reader, Step, MAX_DEPTH};

/// Why a body holds no batch.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error(transparent)]
    Fields(#[from] FieldsError),
    /// The pointer names no array in this body.
    #[error("no array at {0}")]
    NoArray(String),
}

/// The byte ranges of the elements of the array `pointer` names (`""`: the body itself). The
/// whole body is checked to be JSON; a member on the pointer's path given twice is
/// [`FieldsError::Duplicate`].
pub fn array_elements(body: &[u8], pointer: &str) -> Result<Vec<(usize, usize)>, SplitError> {
    let text = std::str::from_utf8(body).map_err(|_| FieldsError::NotJson)?;
    let path = tokens(pointer).ok_or_else(|| SplitError::NoArray(pointer.to_owned()))?;
    let mut reader = reader(text);
    reader.ws();
    let found = reader.find_array(&path, pointer, 0)?;
    reader.ws();
    if reader.pos != reader.bytes.len() {
        return Err(FieldsError::NotJson.into());
    }
    found.ok_or_else(|| SplitError::NoArray(pointer.to_owned()))
}

/// The byte ranges of a JSON Lines body's values (any whitespace between them; one value
/// alone is a batch of one), or, where the body is one JSON array, of its elements. An empty
/// body holds no values.
pub fn json_lines(body: &[u8]) -> Result<Vec<(usize, usize)>, FieldsError> {
    let text = std::str::from_utf8(body).map_err(|_| FieldsError::NotJson)?;
    let mut reader = reader(text);
    let mut values = Vec::new();
    reader.ws();
    while reader.pos < reader.bytes.len() {
        let start = reader.pos;
        reader.value(&[], 0)?;
        values.push((start, reader.pos));
        reader.ws();
    }
    match values.as_slice() {
        [(start, end)] if body[*start] == b'[' => {
            let inner = array_elements(&body[*start..*end], "").map_err(|e| match e {
                SplitError::Fields(f) => f,
                SplitError::NoArray(_) => FieldsError::NotJson,
            })?;
            Ok(inner
                .into_iter()
                .map(|(s, e)| (s + start, e + start))
                .collect())
        }
        _ => Ok(values),
    }
}

fn reader(text: &str) -> Reader<'_> {
    Reader {
        bytes: text.as_bytes(),
        pos: 0,
        pointers: &[],
        paths: &[],
        found: Vec::new(),
    }
}

impl Reader<'_> {
    /// The value at `pos`, read whole: the element ranges of the array `path` names below it,
    /// where there is one.
    fn find_array(
        &mut self,
        path: &[String],
        pointer: &str,
        depth: usize,
    ) -> Step<Option<Vec<(usize, usize)>>> {
        if depth >= MAX_DEPTH {
            return Err(FieldsError::NotJson);
        }
        match (path.first(), self.peek()) {
            (None, Some(b'[')) => self.elements(depth).map(Some),
            (Some(_), Some(b'{')) => self.find_in_object(path, pointer, depth),
            (Some(token), Some(b'[')) => self.find_in_array(token, path, pointer, depth),
            _ => {
                self.value(&[], depth)?;
                Ok(None)
            }
        }
    }

    /// An array at `pos`: its elements' ranges.
    fn elements(&mut self, depth: usize) -> Step<Vec<(usize, usize)>> {
        self.expect(b'[')?;
        let mut out = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(out);
        }
        loop {
            self.ws();
            let start = self.pos;
            self.value(&[], depth + 1)?;
            out.push((start, self.pos));
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(out);
                }
                _ => return Err(FieldsError::NotJson),
            }
        }
    }

    fn find_in_object(
        &mut self,
        path: &[String],
        pointer: &str,
        depth: usize,
    ) -> Step<Option<Vec<(usize, usize)>>> {
        self.expect(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(None);
        }
        let mut found = None;
        let mut seen = false;
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(FieldsError::NotJson);
            }
            let name = self.string(true)?.unwrap_or_default();
            self.ws();
            self.expect(b':')?;
            self.ws();
            if path.first() == Some(&name) {
                if seen {
                    return Err(FieldsError::Duplicate(pointer.to_owned()));
                }
                seen = true;
                found = self.find_array(&path[1..], pointer, depth + 1)?;
            } else {
                self.value(&[], depth + 1)?;
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(found);
                }
                _ => return Err(FieldsError::NotJson),
            }
        }
    }

    fn find_in_array(
        &mut self,
        token: &str,
        path: &[String],
        pointer: &str,
        depth: usize,
    ) -> Step<Option<Vec<(usize, usize)>>> {
        self.expect(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(None);
        }
        let mut found = None;
        let mut index = 0usize;
        loop {
            self.ws();
            if index.to_string() == token {
                found = self.find_array(&path[1..], pointer, depth + 1)?;
            } else {
                self.value(&[], depth + 1)?;
            }
            index += 1;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(found);
                }
                _ => return Err(FieldsError::NotJson),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slices<'a>(body: &'a [u8], ranges: &[(usize, usize)]) -> Vec<&'a str> {
        ranges
            .iter()
            .map(|&(s, e)| std::str::from_utf8(&body[s..e]).unwrap())
            .collect()
    }

    #[test]
    fn a_root_array_gives_each_element_as_sent() {
        let body = br#" [ {"a": 1.50} ,{"b":"x\"y"},  7 ] "#;
        let r = array_elements(body, "").unwrap();
        assert_eq!(slices(body, &r), [r#"{"a": 1.50}"#, r#"{"b":"x\"y"}"#, "7"]);
    }

    #[test]
    fn an_array_at_a_pointer_and_the_path_checked() {
        let body = br#"{"entropy":"x","events":[{"id":1},{"id":2}],"n":[1]}"#;
        let r = array_elements(body, "/events").unwrap();
        assert_eq!(slices(body, &r), [r#"{"id":1}"#, r#"{"id":2}"#]);
        let nested = br#"{"data":{"events":[{"uuid":"u"}]}}"#;
        let r = array_elements(nested, "/data/events").unwrap();
        assert_eq!(slices(nested, &r), [r#"{"uuid":"u"}"#]);
        assert_eq!(
            array_elements(br#"{"events":[],"events":[{"id":1}]}"#, "/events"),
            Err(SplitError::Fields(FieldsError::Duplicate("/events".into())))
        );
        assert_eq!(
            array_elements(br#"{"events":{}}"#, "/events"),
            Err(SplitError::NoArray("/events".into()))
        );
        assert_eq!(
            array_elements(br#"{"other":[]}"#, "/events"),
            Err(SplitError::NoArray("/events".into()))
        );
        assert_eq!(
            array_elements(br#"[1,2"#, ""),
            Err(SplitError::Fields(FieldsError::NotJson))
        );
        assert_eq!(array_elements(b"[]", "").unwrap(), vec![]);
    }

    #[test]
    fn json_lines_one_object_or_one_array() {
        let lines = b"{\"log_id\":\"1\"}\n{\"log_id\":\"2\"}\r\n\n{\"log_id\":\"3\"}\n";
        let r = json_lines(lines).unwrap();
        assert_eq!(
            slices(lines, &r),
            [
                r#"{"log_id":"1"}"#,
                r#"{"log_id":"2"}"#,
                r#"{"log_id":"3"}"#
            ]
        );
        let one = b"{\n  \"log_id\": \"1\"\n}";
        assert_eq!(
            slices(one, &json_lines(one).unwrap()),
            [std::str::from_utf8(one).unwrap()]
        );
        let array = br#" [{"log_id":"1"}, {"log_id":"2"}]"#;
        assert_eq!(
            slices(array, &json_lines(array).unwrap()),
            [r#"{"log_id":"1"}"#, r#"{"log_id":"2"}"#]
        );
        assert_eq!(json_lines(b"{\"a\":1}\n{\"a\":"), Err(FieldsError::NotJson));
        assert_eq!(json_lines(b"  \n").unwrap(), vec![]);
    }
}
