//! Text that comes from outside, made fit for a log line: capped in length, so that a caller
//! cannot fill CloudWatch Logs (billed per GB ingested) with one request's path or one queue
//! message's key. The JSON formatter escapes what is left.

/// At most `max_bytes` of `text`, cut on a character boundary.
pub fn capped(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// How much of a caller's path segment or a message's key a log line carries.
pub const MAX_LOGGED_BYTES: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_a_character_boundary() {
        assert_eq!(capped("github", 256), "github");
        assert_eq!(capped("abcdef", 3), "abc");
        assert_eq!(capped("", 0), "");
        // "é" is two bytes: a cut inside it falls back before it.
        assert_eq!(capped("aé", 2), "a");
        assert_eq!(capped("aé", 3), "aé");
        assert_eq!(
            capped(&"x".repeat(10_000), MAX_LOGGED_BYTES).len(),
            MAX_LOGGED_BYTES
        );
    }
}
