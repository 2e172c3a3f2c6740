//! Keys and certificates a provider publishes and the receiver fetches at run time (AWS SNS's
//! signing certificate; docs/providers.md, "Fetched keys"), and the one other call such a
//! provider asks for (SNS's `SubscribeURL`).
//!
//! The rules: a URL is fetched only once its scheme's check passed (the provider's documented
//! hosts, https: [`crate::signature::sns::sns_url`]); a certificate is cached per warm instance,
//! at most [`MAX_CACHED`] of them for at most [`CACHE_MAX_AGE_MS`] each; a fetch that fails is
//! an error the receiver answers 503 (`key_unavailable`), never an acceptance, and nothing is
//! written. No redirect is followed (it could leave the documented host).
//!
//! The test-only setting [`TEST_ORIGIN_ENV`] sends every such fetch, its host already checked,
//! to a local server instead (path and query kept): the tests serve certificates they made.
//! The template never sets it, and start-up warns when it is set.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::signature::sns::CertKey;
use crate::test_ca::TestCa;

/// The environment variable that points fetched keys at a local server: tests only.
pub const TEST_ORIGIN_ENV: &str = "KEY_FETCH_TEST_ORIGIN";
/// The most certificates a warm instance keeps.
pub const MAX_CACHED: usize = 32;
/// How long a fetched certificate is kept: one hour.
pub const CACHE_MAX_AGE_MS: i64 = 3_600_000;
/// The largest certificate read (SNS's are about 2 KiB).
pub const MAX_CERT_BYTES: usize = 16 * 1024;
/// One fetch's time, all told (SNS waits 15 s for the endpoint's answer).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a fetch gave nothing usable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FetchError {
    /// No answer (connection, TLS, timeout).
    #[error("the fetch failed: {0}")]
    Transport(String),
    /// An answer other than 2xx.
    #[error("the fetch answered {0}")]
    Status(u16),
    /// More bytes than a certificate holds.
    #[error("the fetched body is over {MAX_CERT_BYTES} bytes")]
    TooLarge,
    /// A body that is not what was asked for (not a certificate, not RSA).
    #[error("the fetched body is not usable: {0}")]
    Unusable(String),
}

/// Fetches and caches provider keys for one warm instance.
pub struct KeyFetcher {
    client: reqwest::Client,
    test_origin: Option<reqwest::Url>,
    cache: Mutex<HashMap<String, (CertKey, i64)>>,
    fetches: AtomicU64,
}

impl std::fmt::Debug for KeyFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyFetcher")
            .field(
                "test_origin",
                &self.test_origin.as_ref().map(reqwest::Url::as_str),
            )
            .finish_non_exhaustive()
    }
}

impl Default for KeyFetcher {
    fn default() -> Self {
        KeyFetcher::new(None).unwrap_or_else(|_| KeyFetcher {
            client: reqwest::Client::new(),
            test_origin: None,
            cache: Mutex::default(),
            fetches: AtomicU64::new(0),
        })
    }
}

impl KeyFetcher {
    /// A fetcher; `test_origin` (`http(s)://host[:port]`, tests only) receives every fetch.
    pub fn new(test_origin: Option<&str>) -> Result<KeyFetcher, String> {
        KeyFetcher::trusting(test_origin, None)
    }

    /// [`KeyFetcher::new`] whose client also trusts the test-only CA (`HTTPS_TEST_CA_FILE`,
    /// [`crate::test_ca`]) where there is one: an `https://` test origin with a certificate of
    /// its own.
    pub fn trusting(
        test_origin: Option<&str>,
        test_ca: Option<&TestCa>,
    ) -> Result<KeyFetcher, String> {
        let test_origin = match test_origin {
            None => None,
            Some(text) => {
                let url = reqwest::Url::parse(text)
                    .map_err(|e| format!("{TEST_ORIGIN_ENV} is not a URL: {e}"))?;
                if !matches!(url.scheme(), "http" | "https")
                    || url.host_str().is_none()
                    || url.path() != "/"
                    || url.query().is_some()
                {
                    return Err(format!(
                        "{TEST_ORIGIN_ENV} must be http(s)://host[:port], no path"
                    ));
                }
                Some(url)
            }
        };
        let builder = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(Duration::from_secs(2))
            .redirect(reqwest::redirect::Policy::none())
            .https_only(test_origin.is_none());
        let client = crate::test_ca::trusting(builder, test_ca)
            .build()
            .map_err(|e| format!("the key fetcher's HTTPS client: {e}"))?;
        Ok(KeyFetcher {
            client,
            test_origin,
            cache: Mutex::default(),
            fetches: AtomicU64::new(0),
        })
    }

    /// The fetcher the environment asks for: [`TEST_ORIGIN_ENV`] read, and a warning logged
    /// when it is set (it must never be in a deployed function); trusting `test_ca` too
    /// (`HTTPS_TEST_CA_FILE`, read with the receiver's settings) where there is one.
    pub fn from_env(test_ca: Option<&TestCa>) -> Result<KeyFetcher, String> {
        KeyFetcher::from_setting(std::env::var(TEST_ORIGIN_ENV).ok(), test_ca)
    }

    /// [`KeyFetcher::from_env`] with the variable's value given (`None` or empty: unset).
    pub fn from_setting(
        origin: Option<String>,
        test_ca: Option<&TestCa>,
    ) -> Result<KeyFetcher, String> {
        let origin = origin.filter(|v| !v.is_empty());
        if let Some(origin) = &origin {
            tracing::warn!(
                setting = TEST_ORIGIN_ENV,
                origin = %origin,
                "TEST-ONLY SETTING: provider keys and certificates are fetched from this origin, not from the providers' hosts; never set it in a deployed stack"
            );
        }
        KeyFetcher::trusting(origin.as_deref(), test_ca)
    }

    /// Whether the test-only origin is set.
    pub fn test_origin(&self) -> Option<&str> {
        self.test_origin.as_ref().map(reqwest::Url::as_str)
    }

    /// How many fetches this instance made (certificates and visits).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The key of the certificate at `url` (its host already checked), from the cache while
    /// it is younger than [`CACHE_MAX_AGE_MS`], else fetched.
    pub async fn certificate(
        &self,
        url: &reqwest::Url,
        now_ms: i64,
    ) -> Result<CertKey, FetchError> {
        let name = url.as_str().to_owned();
        let cached = self.with_cache(|cache| {
            cache
                .get(&name)
                .filter(|(_, at)| now_ms.saturating_sub(*at) < CACHE_MAX_AGE_MS)
                .map(|(key, _)| key.clone())
        });
        if let Some(key) = cached {
            return Ok(key);
        }
        let bytes = self.get(url, MAX_CERT_BYTES).await?;
        let key = CertKey::from_certificate(&bytes).map_err(FetchError::Unusable)?;
        self.with_cache(|cache| {
            cache.retain(|_, (_, at)| now_ms.saturating_sub(*at) < CACHE_MAX_AGE_MS);
            while cache.len() >= MAX_CACHED {
                let oldest = cache
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(name, _)| name.clone());
                match oldest {
                    Some(oldest) => cache.remove(&oldest),
                    None => break,
                };
            }
            cache.insert(name, (key.clone(), now_ms));
        });
        Ok(key)
    }

    /// How many certificates are cached (for tests).
    pub fn cached(&self) -> usize {
        self.with_cache(|cache| cache.len())
    }

    /// A `GET` of `url` (its host already checked) whose 2xx is all that matters (SNS's
    /// `SubscribeURL`).
    pub async fn visit(&self, url: &reqwest::Url) -> Result<(), FetchError> {
        self.get(url, MAX_CERT_BYTES).await.map(|_| ())
    }

    fn with_cache<T>(&self, f: impl FnOnce(&mut HashMap<String, (CertKey, i64)>) -> T) -> T {
        match self.cache.lock() {
            Ok(mut cache) => f(&mut cache),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Where `url` is fetched from: itself, or the test origin with its path and query.
    fn target(&self, url: &reqwest::Url) -> reqwest::Url {
        match &self.test_origin {
            None => url.clone(),
            Some(origin) => {
                let mut target = origin.clone();
                target.set_path(url.path());
                target.set_query(url.query());
                target
            }
        }
    }

    async fn get(&self, url: &reqwest::Url, limit: usize) -> Result<Vec<u8>, FetchError> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let mut response = self
            .client
            .get(self.target(url))
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Status(status.as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > limit {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// A fetch that got no answer: `reqwest`'s words without the URL, and the innermost cause
/// (a refused connection, a certificate the client does not trust), which names no URL.
fn transport(e: reqwest::Error) -> FetchError {
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(&e);
    while let Some(next) = cause.and_then(std::error::Error::source) {
        cause = Some(next);
    }
    let cause = cause.map(ToString::to_string);
    let text = e.without_url().to_string();
    FetchError::Transport(match cause {
        Some(cause) => format!("{text}: {cause}"),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_origin_is_an_origin_and_nothing_else() {
        assert!(KeyFetcher::new(Some("http://127.0.0.1:8080")).is_ok());
        for bad in ["ftp://x", "http://x/path", "http://x/?q", "not a url"] {
            assert!(KeyFetcher::new(Some(bad)).is_err(), "{bad}");
        }
        let fetcher = KeyFetcher::new(Some("http://127.0.0.1:9")).unwrap();
        let url = reqwest::Url::parse("https://sns.us-east-1.amazonaws.com/a.pem").unwrap();
        assert_eq!(fetcher.target(&url).as_str(), "http://127.0.0.1:9/a.pem");
        assert_eq!(KeyFetcher::default().target(&url), url);
    }

    #[derive(Clone, Default)]
    struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> lambda_runtime::tracing::subscriber::fmt::MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    /// The fetcher `setting` gives, its test origin, and what its start-up logged.
    fn logged(setting: Option<String>) -> (Option<String>, String) {
        let buffer = Buffer::default();
        let subscriber = lambda_runtime::tracing::subscriber::fmt()
            .with_writer(buffer.clone())
            .with_ansi(false)
            .finish();
        let fetcher = tracing::subscriber::with_default(subscriber, || {
            KeyFetcher::from_setting(setting, None).expect("a fetcher")
        });
        let text = String::from_utf8(buffer.0.lock().expect("buffer").clone()).expect("utf-8");
        (fetcher.test_origin().map(str::to_owned), text)
    }

    #[test]
    fn start_up_warns_loudly_when_the_test_origin_is_set_and_is_silent_otherwise() {
        let (origin, text) = logged(Some("http://127.0.0.1:9".to_owned()));
        assert_eq!(origin.as_deref(), Some("http://127.0.0.1:9/"));
        assert!(
            text.contains("WARN") && text.contains(TEST_ORIGIN_ENV) && text.contains("TEST-ONLY"),
            "{text}"
        );
        for unset in [None, Some(String::new())] {
            let (origin, text) = logged(unset);
            assert_eq!(origin, None);
            assert!(text.is_empty(), "{text}");
        }
    }
}
