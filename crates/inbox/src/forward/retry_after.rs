//! `Retry-After` of a throttling system of record (429 or 503): delay-seconds or an HTTP-date
//! (RFC 9110 §10.2.3), bounded to [`MIN_RETRY_AFTER`]..=[`MAX_RETRY_AFTER`], and
//! [`DEFAULT_RETRY_AFTER`] when absent or unreadable.

use std::time::Duration;

/// The shortest wait honoured: a `Retry-After: 0` still waits a second.
pub const MIN_RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest wait honoured: 12 hours, SQS's longest visibility.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(12 * 3600);
/// The wait when a 429 or 503 names none (or one that does not parse).
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait a `Retry-After` value asks for at `now_ms` (epoch milliseconds), bounded; the
/// default when the header is absent or neither a number of seconds nor an HTTP-date.
pub fn retry_after(value: Option<&str>, now_ms: i64) -> Duration {
    value
        .and_then(|v| parse(v.trim(), now_ms))
        .unwrap_or(DEFAULT_RETRY_AFTER)
        .clamp(MIN_RETRY_AFTER, MAX_RETRY_AFTER)
}

fn parse(value: &str, now_ms: i64) -> Option<Duration> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Delay-seconds; a number too large for u64 is as good as the maximum.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    // An HTTP-date (IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`); one in the past
    // means now, which the bounds make a second.
    let at = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(value)
        .ok()?;
    let wait_ms = at.as_millisecond().saturating_sub(now_ms);
    Some(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-11-14T22:13:20Z.
    const NOW_MS: i64 = 1_700_000_000_000;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn seconds_are_honoured_within_the_bounds() {
        assert_eq!(retry_after(Some("5"), NOW_MS), secs(5));
        assert_eq!(retry_after(Some(" 120 "), NOW_MS), secs(120));
        assert_eq!(retry_after(Some("0"), NOW_MS), MIN_RETRY_AFTER);
        assert_eq!(retry_after(Some("86400"), NOW_MS), MAX_RETRY_AFTER);
        assert_eq!(
            retry_after(Some("99999999999999999999999"), NOW_MS),
            MAX_RETRY_AFTER
        );
    }

    #[test]
    fn an_http_date_is_a_wait_from_now() {
        // 30 s after NOW.
        assert_eq!(
            retry_after(Some("Tue, 14 Nov 2023 22:13:50 GMT"), NOW_MS),
            secs(30)
        );
        // In the past: now, that is the shortest wait.
        assert_eq!(
            retry_after(Some("Sun, 06 Nov 1994 08:49:37 GMT"), NOW_MS),
            MIN_RETRY_AFTER
        );
        // A year ahead: the longest.
        assert_eq!(
            retry_after(Some("Thu, 14 Nov 2024 22:13:20 GMT"), NOW_MS),
            MAX_RETRY_AFTER
        );
    }

    #[test]
    fn absent_or_unreadable_is_the_default() {
        for value in [
            None,
            Some(""),
            Some("-5"),
            Some("1.5"),
            Some("soon"),
            Some("5s"),
        ] {
            assert_eq!(retry_after(value, NOW_MS), DEFAULT_RETRY_AFTER, "{value:?}");
        }
    }
}
