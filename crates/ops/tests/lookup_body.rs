//! `inbox-ops lookup --body` on a terminal: the sender's bytes never reach it raw
//! (escape sequences shown, not run); piped, the bytes are unchanged.

use inbox_ops::lookup::{body_output, escape_for_terminal};

#[test]
fn control_characters_are_shown_not_sent_to_a_terminal() {
    let body = b"{\"a\":\"\x1b[2J\x1b]0;title\x07\"}\r\n\tok\x7f";
    assert_eq!(
        escape_for_terminal(body),
        b"{\"a\":\"\\x1b[2J\\x1b]0;title\\x07\"}\\x0d\n\tok\\x7f".to_vec()
    );
}

#[test]
fn c1_controls_and_bytes_that_are_not_utf8_are_escaped() {
    // U+009B is the one-character CSI; 0x9b alone and 0xff are not UTF-8.
    let body = "caf\u{e9} \u{9b}2J "
        .as_bytes()
        .iter()
        .copied()
        .chain([0x9b, 0xff]);
    let body: Vec<u8> = body.collect();
    assert_eq!(
        escape_for_terminal(&body),
        "caf\u{e9} \\u{9b}2J \\x9b\\xff".as_bytes().to_vec()
    );
}

#[test]
fn a_terminal_gets_the_escaped_body_and_a_pipe_the_bytes() {
    let body = b"x\x1b[31my";
    assert_eq!(&*body_output(body, true), b"x\\x1b[31my");
    assert_eq!(&*body_output(body, false), body);
}
