//! Retrying failed attempts: exponential backoff with jitter, `Retry-After` honoured.

use crate::errors::Failure;
use crate::types::{ProviderError, RetryPolicy};
use rand::Rng;
use reqwest::header::HeaderMap;
use std::future::Future;
use std::time::Duration;

/// Runs `attempt` (given the attempt number, 0 first) until it succeeds, fails for good, or
/// `policy.max_retries` retries are spent. Only failures marked retryable are retried. Dropping
/// the returned future cancels cleanly, also during a backoff wait.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    mut attempt: F,
) -> Result<T, ProviderError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut n = 0;
    loop {
        match attempt(n).await {
            Ok(value) => return Ok(value),
            Err(failure) if failure.retryable && n < policy.max_retries => {
                let wait = wait_before_retry(policy, n, failure.retry_after);
                tracing::warn!(
                    attempt = n + 1,
                    wait_ms = wait.as_millis() as u64,
                    error = %failure.error.message,
                    "provider request failed; retrying"
                );
                tokio::time::sleep(wait).await;
                n += 1;
            }
            Err(mut failure) => {
                if failure.retryable && n > 0 {
                    failure
                        .error
                        .message
                        .push_str(&format!(" (gave up after {n} retries)"));
                }
                return Err(failure.error);
            }
        }
    }
}

/// How long to wait before retry number `retry` (0 first): the server's `Retry-After` when it
/// sent one, else `base_delay · 2^retry` with equal jitter (half fixed, half random); both capped
/// at `max_delay`.
pub(crate) fn wait_before_retry(
    policy: &RetryPolicy,
    retry: u32,
    retry_after: Option<Duration>,
) -> Duration {
    if let Some(after) = retry_after {
        return after.min(policy.max_delay);
    }
    let exp = policy
        .base_delay
        .saturating_mul(2u32.saturating_pow(retry.min(20)));
    let capped = exp.min(policy.max_delay);
    let half = capped / 2;
    let jitter = rand::rng().random_range(0.0..=1.0);
    half + half.mul_f64(jitter)
}

/// The wait a server asked for: `retry-after-ms` (OpenAI), else `Retry-After` as seconds or as
/// an HTTP date (RFC 9110 §10.2.3). A date in the past means "now".
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) =
        header_str(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::error::ProviderFault;
    use reqwest::header::HeaderValue;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn policy(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = policy(10);
        for retry in 0..10 {
            let full = (Duration::from_millis(100) * 2u32.pow(retry)).min(p.max_delay);
            let w = wait_before_retry(&p, retry, None);
            assert!(
                w >= full / 2 && w <= full,
                "retry {retry}: {w:?} not in [{:?}, {full:?}]",
                full / 2
            );
        }
        assert_eq!(
            wait_before_retry(&p, 0, Some(Duration::from_secs(60))),
            p.max_delay
        );
        assert_eq!(
            wait_before_retry(&p, 0, Some(Duration::from_millis(300))),
            Duration::from_millis(300)
        );
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_millis() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        let date = (chrono::Utc::now() + chrono::Duration::seconds(30))
            .to_rfc2822()
            .replace("+0000", "GMT");
        h.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let w = retry_after(&h).unwrap();
        assert!(
            w > Duration::from_secs(25) && w <= Duration::from_secs(30),
            "{w:?}"
        );
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        h.clear();
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[tokio::test]
    async fn only_retryable_failures_are_retried_and_the_count_is_bounded() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = with_retries(&policy(2), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(Failure {
                    error: ProviderError::new(ProviderFault::Server, "boom"),
                    retryable: true,
                    retry_after: Some(Duration::from_millis(1)),
                })
            }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(
            result
                .unwrap_err()
                .message
                .contains("gave up after 2 retries")
        );

        calls.store(0, Ordering::SeqCst);
        let result: Result<(), _> = with_retries(&policy(2), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(Failure::fatal(ProviderError::new(
                    ProviderFault::BadRequest,
                    "no",
                )))
            }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(result.unwrap_err().message, "no");
    }
}
