//! The HTTP client's retry policy: which answers deserve another try, and how long to wait before
//! it (exponential backoff with jitter, or the server's `Retry-After` in seconds).

use std::time::Duration;

/// No computed backoff waits longer than this.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A server's `Retry-After` is honoured up to this long.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// 408 (request timeout), 429 (rate limited) and every 5xx are worth retrying.
#[cfg_attr(not(feature = "http-client"), allow(dead_code, reason = "the HTTP client's"))]
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// The wait before retry number `retry` (0 for the first): `initial * 2^retry`, capped at
/// [`MAX_BACKOFF`], of which the first half is fixed and the second half random (jitter, so that
/// many clients rate-limited together do not come back together).
pub fn backoff(initial: Duration, retry: u32) -> Duration {
    let base = initial.saturating_mul(2u32.saturating_pow(retry)).min(MAX_BACKOFF);
    let half = base / 2;
    half + half.mul_f64(fastrand::f64())
}

/// A `Retry-After` value in (possibly fractional) seconds, capped at [`MAX_RETRY_AFTER`]. The
/// HTTP-date form is not supported (`None`: the computed backoff applies).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(seconds.min(MAX_RETRY_AFTER.as_secs_f64())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_statuses() {
        for status in [408, 429, 500, 502, 503, 599] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [200, 400, 401, 404, 422, 600] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn backoff_doubles_within_jitter_and_is_capped() {
        let initial = Duration::from_millis(100);
        for retry in 0..4 {
            let base = initial * 2u32.pow(retry);
            for _ in 0..50 {
                let wait = backoff(initial, retry);
                assert!(wait >= base / 2 && wait <= base, "retry {retry}: {wait:?}");
            }
        }
        assert!(backoff(Duration::from_secs(10), 40) <= MAX_BACKOFF);
        assert_eq!(backoff(Duration::ZERO, 3), Duration::ZERO);
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.25"), Some(Duration::from_millis(250)));
        assert_eq!(parse_retry_after("86400"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("NaN"), None);
    }
}
