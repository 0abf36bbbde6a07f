//! `/metrics` scraping during a run: a background task fetching the engine's Prometheus text at
//! a fixed interval. The texts are kept raw, each with its wall-clock time; parsing and the
//! engine's metric names belong to `kvgate-formats` and `kvgate-core`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::client::is_loopback;

/// One scrape attempt. A failed scrape is kept (with its error), not dropped: a gap in the
/// metrics must stay visible.
#[derive(Debug, Clone, PartialEq)]
pub struct RawScrape {
    /// Unix time in milliseconds when the response (or the failure) arrived.
    pub unix_ms: i64,
    pub text: Option<String>,
    pub error: Option<String>,
}

/// The `/metrics` URL of a server whose API root is `base_url` (with or without `/v1`).
pub fn metrics_url(base_url: &str) -> Result<reqwest::Url, String> {
    let base = base_url.trim().trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let url = reqwest::Url::parse(&format!("{root}/metrics"))
        .map_err(|e| format!("metrics URL from `{base_url}`: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "metrics URL from `{base_url}`: expected http or https, found {}",
            url.scheme()
        ));
    }
    Ok(url)
}

fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Fetches the metrics text once.
pub async fn scrape_once(http: &reqwest::Client, url: &reqwest::Url) -> RawScrape {
    let result = async {
        let response = http
            .get(url.clone())
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("GET {url}: reading the body: {e}"))?;
        if !status.is_success() {
            let excerpt: String = text.chars().take(200).collect();
            return Err(format!("GET {url}: HTTP {status}: {excerpt}"));
        }
        Ok(text)
    }
    .await;
    let unix_ms = unix_ms_now();
    match result {
        Ok(text) => RawScrape {
            unix_ms,
            text: Some(text),
            error: None,
        },
        Err(error) => RawScrape {
            unix_ms,
            text: None,
            error: Some(error),
        },
    }
}

/// A running scraper; [`Scraper::stop`] takes a last scrape and returns them all in order.
pub struct Scraper {
    stop: CancellationToken,
    task: JoinHandle<Vec<RawScrape>>,
}

impl Scraper {
    /// Starts scraping `url` now and then every `interval`. Must be called inside a tokio
    /// runtime.
    pub fn start(url: reqwest::Url, interval: Duration) -> Result<Scraper, String> {
        let mut builder = reqwest::Client::builder();
        if is_loopback(&url) {
            builder = builder.no_proxy();
        }
        crate::client::install_crypto_provider();
        let http = builder.build().map_err(|e| format!("HTTP client: {e}"))?;
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut scrapes = Vec::new();
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = ticker.tick() => scrapes.push(scrape_once(&http, &url).await),
                }
            }
            scrapes.push(scrape_once(&http, &url).await);
            scrapes
        });
        Ok(Scraper { stop, task })
    }

    /// Stops scraping after one last scrape (the end-of-run counters).
    pub async fn stop(self) -> Vec<RawScrape> {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_url_strips_the_api_prefix() {
        let u = metrics_url("http://127.0.0.1:8080/v1/").unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:8080/metrics");
        let u = metrics_url("http://127.0.0.1:8080").unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:8080/metrics");
        let err = metrics_url("ftp://x").unwrap_err();
        assert!(err.contains("expected http or https"), "{err}");
        assert!(metrics_url("not a url").is_err());
    }
}
