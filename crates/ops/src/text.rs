//! What a message or the ledger says, as the operator's terminal or page shows it. A key, a
//! header, a source, an event type or a `last_error` comes from a webhook (or from whoever
//! put a message on a queue), so a forged one could hold terminal escapes (`\x1b[2J` clears
//! the screen, others set the title or write to the clipboard), a newline starting a line of
//! its own, or bidirectional overrides that show text in another order than it is. Every
//! command and console page prints such text through [`shown`]; JSON output through
//! [`json_shown`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is written escaped: a control character (C0, DEL, C1: newline and tab too),
/// a format character (Unicode's `Cf`: the bidirectional embeddings, overrides and isolates,
/// zero-width characters, the BOM, soft hyphen, tags…), or the line and paragraph separators.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            u32::from(c),
            0xAD
                | 0x600..=0x605
                | 0x61C
                | 0x6DD
                | 0x70F
                | 0x890..=0x891
                | 0x8E2
                | 0x180E
                | 0x200B..=0x200F
                | 0x2028..=0x202E
                | 0x2060..=0x2064
                | 0x2066..=0x206F
                | 0xFEFF
                | 0xFFF9..=0xFFFB
                | 0x110BD
                | 0x110CD
                | 0x13430..=0x1343F
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0001
                | 0xE0020..=0xE007F
        )
}

/// `text` with every [`is_hidden`] character written as Rust writes it escaped, `\u{1b}`:
/// visible, and inert in a terminal and on a page. Other text, backslashes included, is
/// unchanged (borrowed, when nothing is hidden).
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Lines made of several shown parts (an error with its causes, say): [`shown`] on each line,
/// the newlines between them kept.
pub fn shown_lines(text: &str) -> String {
    text.split('\n').map(shown).collect::<Vec<_>>().join("\n")
}

/// `value` as pretty-printed JSON whose strings hold no [`is_hidden`] character as itself:
/// each is written as a JSON escape (`\u001b`, `\u202e`, a pair of them above U+FFFF), so the
/// output means the same JSON and shows nothing in a terminal. (serde_json escapes only
/// U+0000 to U+001F.)
pub fn json_shown(value: &serde_json::Value) -> String {
    let text = format!("{value:#}");
    if !text.chars().any(is_hidden) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        // Outside strings pretty JSON holds only newlines and spaces; a newline there is kept.
        if is_hidden(c) && c != '\n' {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for text in ["github:abc-123", "stripe:evt_1", "a\\b", "é ü 日本", ""] {
            assert!(
                matches!(shown(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn controls_escapes_and_format_characters_are_shown_escaped() {
        assert_eq!(shown("a:\x1b[2Jx"), "a:\\u{1b}[2Jx");
        assert_eq!(shown("a\nb\tc\rd"), "a\\u{a}b\\u{9}c\\u{d}d");
        assert_eq!(
            shown("\u{7f}\u{9b}31m"),
            "\\u{7f}\\u{9b}31m",
            "DEL and C1's CSI"
        );
        assert_eq!(
            shown("abc\u{202e}fed"),
            "abc\\u{202e}fed",
            "a bidi override"
        );
        assert_eq!(
            shown("\u{2066}x\u{2069}"),
            "\\u{2066}x\\u{2069}",
            "isolates"
        );
        assert_eq!(
            shown("a\u{200b}b\u{feff}"),
            "a\\u{200b}b\\u{feff}",
            "zero width, BOM"
        );
        assert_eq!(shown("l\u{2028}p\u{2029}"), "l\\u{2028}p\\u{2029}");
        assert_eq!(shown("\u{e0041}"), "\\u{e0041}", "a tag character");
        for hidden in ["\x1b]0;title\x07", "\u{9d}8;;http://x\u{9c}", "\0"] {
            assert!(!shown(hidden).chars().any(is_hidden), "{hidden:?}");
        }
    }

    #[test]
    fn lines_keep_their_newlines_and_escape_the_rest() {
        assert_eq!(
            shown_lines("one\x1b[2J\ntwo\u{202e}"),
            "one\\u{1b}[2J\ntwo\\u{202e}"
        );
    }

    #[test]
    fn json_is_the_same_json_with_nothing_hidden_in_it() {
        let value = serde_json::json!({
            "key": "a:\x1b[2J\u{7f}\u{9b}\u{202e}\u{e0041}",
            "n": 1,
        });
        let text = json_shown(&value);
        assert!(
            !text.contains('\x1b') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(!text.chars().any(|c| is_hidden(c) && c != '\n'), "{text}");
        assert!(
            text.contains("\\u007f\\u009b\\u202e\\udb40\\udc41"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back, value);
    }
}
