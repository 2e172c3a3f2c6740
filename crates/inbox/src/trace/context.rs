//! The W3C trace context of an event (`traceparent`, Trace Context level 1), read strictly:
//! a sender's header and an envelope's field are input. Written as `traceparent` (the
//! forward's header, the envelope, an SQS destination's attribute, a Lambda payload's member)
//! and as X-Ray's form (`AWSTraceHeader`, EventBridge's `TraceHeader`), the same 128-bit id.

use std::fmt::Write as _;

/// The header (and envelope field, and message attribute) carrying the trace context.
pub const TRACEPARENT: &str = "traceparent";

/// The longest `traceparent` read: version `00` is 55 characters; a later version may add
/// fields after them, but not without bound.
pub const MAX_TRACEPARENT_LEN: usize = 256;

/// An event's place in its trace: the trace id, the span the next hop hangs under, and
/// whether the trace is sampled (its flags' lowest bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    sampled: bool,
}

/// Why a `traceparent` was not taken (a new trace starts instead).
#[derive(Clone, Copy, Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceparentError {
    #[error("traceparent is longer than {MAX_TRACEPARENT_LEN} characters")]
    TooLong,
    #[error("traceparent is not `version-trace_id-parent_id-flags` of lowercase hex")]
    Shape,
    #[error("traceparent version ff is invalid")]
    Version,
    #[error("traceparent of version 00 has more than four fields")]
    Trailing,
    #[error("traceparent's trace id is all zeros")]
    ZeroTraceId,
    #[error("traceparent's parent id is all zeros")]
    ZeroParentId,
}

impl TraceContext {
    /// A context of these ids (a span's own, once started).
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], sampled: bool) -> Self {
        Self {
            trace_id,
            span_id,
            sampled,
        }
    }

    /// Reads a `traceparent` as W3C Trace Context says a receiver must: two lowercase hex
    /// digits of version (not `ff`), 32 of trace id and 16 of parent id, neither all zeros, and
    /// two of flags, separated by `-`; version `00` is exactly that, a later version may go
    /// on after another `-`. Nothing is trimmed or case-folded.
    pub fn parse(text: &str) -> Result<Self, TraceparentError> {
        if text.len() > MAX_TRACEPARENT_LEN {
            return Err(TraceparentError::TooLong);
        }
        let b = text.as_bytes();
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return Err(TraceparentError::Shape);
        }
        let version = hex_bytes::<1>(&b[0..2]).ok_or(TraceparentError::Shape)?;
        let trace_id = hex_bytes::<16>(&b[3..35]).ok_or(TraceparentError::Shape)?;
        let span_id = hex_bytes::<8>(&b[36..52]).ok_or(TraceparentError::Shape)?;
        let flags = hex_bytes::<1>(&b[53..55]).ok_or(TraceparentError::Shape)?;
        match version[0] {
            0xff => return Err(TraceparentError::Version),
            0x00 if b.len() != 55 => return Err(TraceparentError::Trailing),
            _ if b.len() > 55 && b[55] != b'-' => return Err(TraceparentError::Shape),
            _ => {}
        }
        if trace_id == [0; 16] {
            return Err(TraceparentError::ZeroTraceId);
        }
        if span_id == [0; 8] {
            return Err(TraceparentError::ZeroParentId);
        }
        Ok(Self::new(trace_id, span_id, flags[0] & 1 == 1))
    }

    pub fn trace_id_bytes(&self) -> [u8; 16] {
        self.trace_id
    }

    pub fn span_id_bytes(&self) -> [u8; 8] {
        self.span_id
    }

    pub fn is_sampled(&self) -> bool {
        self.sampled
    }

    /// The trace id, 32 lowercase hex digits: what the ledger keeps and a link shows.
    pub fn trace_id(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// This context as a version `00` `traceparent`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            hex::encode(self.trace_id),
            hex::encode(self.span_id),
            if self.sampled { "01" } else { "00" }
        )
    }

    /// The trace id in X-Ray's form ([`xray_trace_id`]).
    pub fn xray_trace_id(&self) -> String {
        xray_trace_id(&self.trace_id)
    }

    /// X-Ray's trace header (`AWSTraceHeader`, EventBridge's `TraceHeader`):
    /// `Root=<X-Ray id>;Parent=<span id>;Sampled=<0|1>`.
    pub fn xray_header(&self) -> String {
        let mut out = String::with_capacity(80);
        let _ = write!(
            out,
            "Root={};Parent={};Sampled={}",
            self.xray_trace_id(),
            hex::encode(self.span_id),
            u8::from(self.sampled)
        );
        out
    }
}

/// A trace id as the ledger keeps it (`trace_id`: 32 lowercase hex digits, not all zeros), as
/// its 16 bytes; `None` for anything else (an item is input).
pub fn trace_id_from_hex(text: &str) -> Option<[u8; 16]> {
    hex_bytes::<16>(text.as_bytes()).filter(|id| *id != [0; 16])
}

/// A trace id in X-Ray's form, `1-<8 hex>-<24 hex>`: the same 128 bits, its first 32 read by
/// X-Ray as an epoch time (X-Ray takes W3C ids written so).
pub fn xray_trace_id(trace_id: &[u8; 16]) -> String {
    let hex = hex::encode(trace_id);
    format!("1-{}-{}", &hex[..8], &hex[8..])
}

/// `N` bytes from `2N` lowercase hex digits (uppercase is refused: W3C requires lowercase).
fn hex_bytes<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N
        || !digits
            .iter()
            .all(|d| d.is_ascii_digit() || (b'a'..=b'f').contains(d))
    {
        return None;
    }
    let mut out = [0; N];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_stored_trace_id_reads_only_as_32_lowercase_hex_digits_not_all_zeros() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        let bytes = trace_id_from_hex(id).expect("a trace id");
        assert_eq!(hex::encode(bytes), id);
        assert_eq!(xray_trace_id(&bytes), "1-4bf92f35-77b34da6a3ce929d0e0e4736");
        for not_one in [
            "",
            &id.to_uppercase(),
            &"0".repeat(32),
            &id[..31],
            &format!("{id}0"),
        ] {
            assert_eq!(trace_id_from_hex(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn a_valid_traceparent_is_read_and_written_back_the_same() {
        let cx = TraceContext::parse(GOOD).expect("valid");
        assert_eq!(cx.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(cx.span_id_bytes()), "00f067aa0ba902b7");
        assert!(cx.is_sampled());
        assert_eq!(cx.traceparent(), GOOD);
        let unsampled = TraceContext::parse(&GOOD.replace("-01", "-00")).expect("valid");
        assert!(!unsampled.is_sampled());
        assert!(unsampled.traceparent().ends_with("-00"));
    }

    #[test]
    fn a_later_version_is_read_by_its_first_four_fields() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes";
        let cx = TraceContext::parse(later).expect("a later version");
        assert_eq!(cx.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(cx.is_sampled());
        assert_eq!(cx.traceparent(), GOOD, "written back as version 00");
        let longest = format!("{}{}", &later[..56], "a".repeat(MAX_TRACEPARENT_LEN - 56));
        assert_eq!(longest.len(), MAX_TRACEPARENT_LEN);
        assert_eq!(
            TraceContext::parse(&longest),
            Ok(cx),
            "as long as it may be"
        );
    }

    #[test]
    fn every_malformed_traceparent_is_refused_with_its_reason() {
        let cases: &[(&str, TraceparentError)] = &[
            ("", TraceparentError::Shape),
            ("garbage", TraceparentError::Shape),
            (&GOOD.to_uppercase(), TraceparentError::Shape),
            (&GOOD.replace("4bf9", "4BF9"), TraceparentError::Shape),
            (&GOOD.replace('-', "_"), TraceparentError::Shape),
            // One separator wrong, each place.
            (
                &format!("{}_{}", &GOOD[..2], &GOOD[3..]),
                TraceparentError::Shape,
            ),
            (
                &format!("{}_{}", &GOOD[..35], &GOOD[36..]),
                TraceparentError::Shape,
            ),
            (
                &format!("{}_{}", &GOOD[..52], &GOOD[53..]),
                TraceparentError::Shape,
            ),
            (&format!(" {GOOD}"), TraceparentError::Shape),
            (&GOOD[..54], TraceparentError::Shape),
            (&GOOD.replace("-01", "-0g"), TraceparentError::Shape),
            (&GOOD.replacen("00-", "ff-", 1), TraceparentError::Version),
            (&format!("{GOOD}-extra"), TraceparentError::Trailing),
            (&format!("{GOOD} "), TraceparentError::Trailing),
            (
                &GOOD.replacen("00-", "01-", 1).replace("-01", "-01x"),
                TraceparentError::Shape,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                TraceparentError::ZeroTraceId,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                TraceparentError::ZeroParentId,
            ),
            (
                &"0".repeat(MAX_TRACEPARENT_LEN + 1),
                TraceparentError::TooLong,
            ),
        ];
        for (text, why) in cases {
            assert_eq!(TraceContext::parse(text), Err(*why), "{text:?}");
        }
    }

    #[test]
    fn the_x_ray_forms_carry_the_same_128_bits() {
        let cx = TraceContext::parse(GOOD).expect("valid");
        assert_eq!(cx.xray_trace_id(), "1-4bf92f35-77b34da6a3ce929d0e0e4736");
        assert_eq!(
            cx.xray_header(),
            "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1"
        );
        let joined: String = cx.xray_trace_id()[2..].replace('-', "");
        assert_eq!(joined, cx.trace_id());
    }
}
