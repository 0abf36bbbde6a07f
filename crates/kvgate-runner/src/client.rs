//! The streaming client: one OpenAI-compatible request in, one [`RequestRecord`] out. Every
//! failure (HTTP status, transport, broken or malformed stream, deadline) becomes a record with
//! whatever was received before it; nothing here returns `Err` once a request is planned.

use std::fmt;
use std::net::IpAddr;
use std::sync::Once;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use kvgate_core::run::{RequestRecord, RequestStatus};
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::clock::RunClock;
use crate::sse::SseDecoder;

/// Most bytes of an error body kept in a record.
pub const ERROR_EXCERPT_BYTES: usize = 2048;

/// Which OpenAI-compatible route to stream from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `/v1/chat/completions`, text in `choices[0].delta.content`.
    Chat,
    /// `/v1/completions`, text in `choices[0].text`.
    Completions,
}

impl Api {
    fn route(self) -> &'static str {
        match self {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
        }
    }
}

/// A server to send requests to. `base_url` is the server root (`http://127.0.0.1:8080`) or its
/// `/v1` prefix; the route is appended. The API key is sent as a Bearer token and never
/// serialized or printed.
#[derive(Clone, Serialize, Deserialize)]
pub struct Endpoint {
    pub base_url: String,
    pub api: Api,
    pub model: String,
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// One request to send: its request body (messages or prompt and decoding parameters) and the
/// fixture item it came from. The client sets `model`, `stream` and `stream_options` itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRequest {
    pub item_id: Option<String>,
    pub body: Map<String, Value>,
    /// `kvgate_core::pairing::prompt_sha256` of `body`: recorded with every attempt, so a pair
    /// can prove both sides were sent the same prompt.
    pub prompt_sha256: String,
}

impl PlannedRequest {
    /// `body` must be a JSON object.
    pub fn new(item_id: Option<String>, body: Value) -> Result<Self, ClientError> {
        match body {
            Value::Object(body) => Ok(PlannedRequest {
                item_id,
                prompt_sha256: kvgate_core::pairing::prompt_sha256(&body),
                body,
            }),
            other => Err(ClientError::BodyNotObject {
                found: json_kind(&other),
            }),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Why a client cannot be built (before any request is sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("endpoint `base_url`: expected an http:// or https:// URL, found `{found}`: {reason}")]
    BaseUrl { found: String, reason: String },
    #[error("endpoint `api_key`: expected characters allowed in an HTTP header")]
    ApiKey,
    #[error(
        "endpoint `api_key`: a key is sent only over https, or over http to this machine \
         (loopback); found `{found}`"
    )]
    CleartextKey { found: String },
    #[error("request body: expected a JSON object, found {found}")]
    BodyNotObject { found: &'static str },
    #[error("HTTP client: {0}")]
    Build(String),
}

/// A reusable connection pool for one endpoint. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    url: reqwest::Url,
    endpoint: Endpoint,
    auth: Option<HeaderValue>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url.as_str())
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

static CRYPTO_PROVIDER: Once = Once::new();

/// Installs rustls' `ring` provider once per process, unless another part chose one already.
pub(crate) fn install_crypto_provider() {
    CRYPTO_PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Result<Self, ClientError> {
        let url = route_url(&endpoint)?;
        if endpoint.api_key.is_some() && url.scheme() == "http" && !is_loopback(&url) {
            return Err(ClientError::CleartextKey {
                found: endpoint.base_url.clone(),
            });
        }
        let auth = match &endpoint.api_key {
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                    .map_err(|_| ClientError::ApiKey)?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(30));
        if is_loopback(&url) {
            // A `*_proxy` setting must never send a local benchmark through a proxy.
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Build(error_chain(&e)))?;
        Ok(Client {
            http,
            url,
            endpoint,
            auth,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The full URL requests go to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The bytes sent for `request`: its body with `model`, `stream: true` and
    /// `stream_options.include_usage: true` set from this endpoint.
    pub fn encode_body(&self, request: &PlannedRequest) -> Bytes {
        let mut body = request.body.clone();
        body.insert("model".into(), Value::String(self.endpoint.model.clone()));
        body.insert("stream".into(), Value::Bool(true));
        let mut options = match body.remove("stream_options") {
            Some(Value::Object(options)) => options,
            _ => Map::new(),
        };
        options.insert("include_usage".into(), Value::Bool(true));
        body.insert("stream_options".into(), Value::Object(options));
        Bytes::from(serde_json::to_vec(&body).expect("a JSON map always serializes"))
    }

    /// Sends one request now and streams its response. `deadline` counts from dispatch; the
    /// record's planned arrival is its dispatch time (no schedule) and its index is `index`.
    pub async fn send_streaming(
        &self,
        index: u32,
        request: &PlannedRequest,
        deadline: Duration,
        clock: &RunClock,
    ) -> RequestRecord {
        let attempt = Attempt {
            index,
            item_id: request.item_id.clone(),
            planned_ms: None,
            body: self.encode_body(request),
            deadline,
            drain_at: None,
            cancel: None,
        };
        let mut record = self.execute(attempt, clock, || {}).await;
        record.prompt_sha256 = Some(request.prompt_sha256.clone());
        record
    }

    /// Runs one attempt to its record. `on_dispatch` is called once, when the request leaves.
    pub(crate) async fn execute(
        &self,
        attempt: Attempt,
        clock: &RunClock,
        on_dispatch: impl FnOnce(),
    ) -> RequestRecord {
        let mut progress = Partial::default();
        if attempt.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            let planned = attempt.planned_ms.unwrap_or_else(|| clock.now_ms());
            return not_dispatched(
                attempt.index,
                attempt.item_id,
                planned,
                "cancelled before dispatch",
            );
        }
        let dispatched = Instant::now();
        on_dispatch();
        let dispatch_ms = clock.ms_at(dispatched);
        let planned_ms = attempt.planned_ms.unwrap_or(dispatch_ms);
        let request_deadline = tokio::time::Instant::from_std(dispatched + attempt.deadline);
        let drain_at = attempt.drain_at.map(tokio::time::Instant::from_std);
        let cancel = attempt.cancel.clone();

        let outcome = tokio::select! {
            biased;
            outcome = self.stream(attempt.body, clock, &mut progress) => outcome,
            _ = tokio::time::sleep_until(request_deadline) => Outcome::Timeout,
            _ = sleep_until_opt(drain_at) => Outcome::Drained,
            _ = cancelled_opt(cancel.as_ref()) => Outcome::Cancelled,
        };
        // `[DONE]` arrived even if a deadline won the race while the body was being drained.
        let outcome = if progress.done_ms.is_some() {
            Outcome::Done
        } else {
            outcome
        };

        let now_ms = clock.now_ms();
        let (status, error, finish_ms) = match outcome {
            Outcome::Done => (RequestStatus::Ok, None, progress.done_ms),
            Outcome::Http { status, excerpt } => {
                let error = if excerpt.is_empty() {
                    format!("HTTP {status} with an empty body")
                } else {
                    excerpt
                };
                let kind = if status == 429 {
                    RequestStatus::Rejected
                } else {
                    RequestStatus::Error
                };
                (kind, Some(error), Some(now_ms))
            }
            Outcome::Failed(message) => (RequestStatus::Error, Some(message), Some(now_ms)),
            Outcome::Timeout => (
                RequestStatus::Timeout,
                Some(format!(
                    "no [DONE] within the {} ms request deadline",
                    attempt.deadline.as_millis()
                )),
                None,
            ),
            Outcome::Drained => (
                RequestStatus::Unfinished,
                Some("still running at the drain deadline".to_owned()),
                None,
            ),
            Outcome::Cancelled => (
                RequestStatus::Unfinished,
                Some("cancelled while in flight".to_owned()),
                None,
            ),
        };
        // A server that echoes request headers (a proxy's error page, say) must not carry the
        // key into what is stored.
        let error = error.map(|e| self.redact(e));
        let output_text = self.redact(progress.text);
        RequestRecord {
            index: attempt.index,
            item_id: attempt.item_id,
            // Set by the caller, which holds the planned request.
            prompt_sha256: None,
            planned_arrival_ms: planned_ms,
            dispatch_ms: Some(dispatch_ms),
            client_delay_ms: Some(dispatch_ms - planned_ms),
            first_token_ms: progress.chunk_times_ms.first().copied(),
            chunk_times_ms: progress.chunk_times_ms,
            finish_ms,
            status,
            http_status: progress.http_status,
            error,
            output_text,
            prompt_tokens: progress.prompt_tokens,
            completion_tokens: progress.completion_tokens,
            cached_prompt_tokens: progress.cached_prompt_tokens,
            finish_reason: progress.finish_reason,
            engine_timings: progress.engine_timings,
        }
    }

    /// `text` with every occurrence of the endpoint's API key replaced by `<redacted>`.
    fn redact(&self, text: String) -> String {
        match self.endpoint.api_key.as_deref() {
            Some(key) if !key.is_empty() && text.contains(key) => text.replace(key, "<redacted>"),
            _ => text,
        }
    }

    /// Sends the request and reads the stream into `progress` until `[DONE]` or a failure.
    async fn stream(&self, body: Bytes, clock: &RunClock, progress: &mut Partial) -> Outcome {
        let send = |body: Bytes| {
            let mut request = self
                .http
                .post(self.url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream")
                .body(body);
            if let Some(auth) = &self.auth {
                request = request.header(AUTHORIZATION, auth.clone());
            }
            request.send()
        };
        let response = match send(body.clone()).await {
            Ok(response) => response,
            // A kept-alive connection the server closed just as the request went out (llama.cpp
            // closes one after a fixed number of requests): nothing of the request was answered,
            // so it is sent once more on a fresh connection, its time still counted from the
            // first dispatch. Any other failure, or a second one, is recorded as it is.
            Err(e) if is_stale_connection(&error_chain(&e)) => match send(body).await {
                Ok(response) => response,
                Err(again) => {
                    return Outcome::Failed(format!(
                        "request failed: {} (retried once after: {})",
                        error_chain(&again),
                        error_chain(&e)
                    ))
                }
            },
            Err(e) => return Outcome::Failed(format!("request failed: {}", error_chain(&e))),
        };
        let status = response.status().as_u16();
        progress.http_status = Some(status);
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        let mut body = response.bytes_stream();

        if status >= 400 {
            let mut excerpt = Vec::new();
            while let Some(Ok(piece)) = body.next().await {
                excerpt.extend_from_slice(&piece);
                if excerpt.len() >= ERROR_EXCERPT_BYTES {
                    break;
                }
            }
            return Outcome::Http {
                status,
                excerpt: excerpt_text(&excerpt),
            };
        }

        let mut decoder = SseDecoder::new();
        let mut head = Vec::new();
        let mut events = 0usize;
        let mut ended = false;
        loop {
            let next = if ended {
                decoder.finish()
            } else {
                decoder.next_event()
            };
            let data = match next {
                Some(Ok(data)) => data,
                Some(Err(e)) => return Outcome::Failed(format!("broken SSE stream: {e}")),
                None if ended => break,
                None => {
                    match body.next().await {
                        Some(Ok(piece)) => {
                            progress.now_ms = clock.now_ms();
                            if head.len() < ERROR_EXCERPT_BYTES {
                                let room = ERROR_EXCERPT_BYTES - head.len();
                                head.extend_from_slice(&piece[..piece.len().min(room)]);
                            }
                            decoder.push(&piece);
                        }
                        Some(Err(e)) => {
                            return Outcome::Failed(format!(
                                "stream broke after {events} SSE events: {}",
                                error_chain(&e)
                            ))
                        }
                        None => ended = true,
                    }
                    continue;
                }
            };
            events += 1;
            if let Err(outcome) = progress.apply(self.endpoint.api, events, &data) {
                return outcome;
            }
            if progress.done_ms.is_some() {
                // Read the rest (normally just the chunked terminator) so the connection goes
                // back to the pool; a server that keeps talking gets a short grace only.
                let rest = async { while let Some(Ok(_)) = body.next().await {} };
                let _ = tokio::time::timeout(Duration::from_millis(100), rest).await;
                return Outcome::Done;
            }
        }
        Outcome::Failed(if events == 0 {
            format!(
                "stream ended before [DONE] with no SSE events (content-type {content_type}): {}",
                excerpt_text(&head)
            )
        } else {
            format!("stream ended before [DONE] after {events} SSE events")
        })
    }
}

/// One request as the schedulers hand it to [`Client::execute`].
pub(crate) struct Attempt {
    pub(crate) index: u32,
    pub(crate) item_id: Option<String>,
    /// `None`: planned = dispatch (no schedule).
    pub(crate) planned_ms: Option<f64>,
    pub(crate) body: Bytes,
    pub(crate) deadline: Duration,
    pub(crate) drain_at: Option<Instant>,
    pub(crate) cancel: Option<CancellationToken>,
}

/// A record for a request that never left the client.
pub(crate) fn not_dispatched(
    index: u32,
    item_id: Option<String>,
    planned_ms: f64,
    why: &str,
) -> RequestRecord {
    RequestRecord {
        index,
        item_id,
        prompt_sha256: None,
        planned_arrival_ms: planned_ms,
        dispatch_ms: None,
        client_delay_ms: None,
        first_token_ms: None,
        chunk_times_ms: Vec::new(),
        finish_ms: None,
        status: RequestStatus::Rejected,
        http_status: None,
        error: Some(why.to_owned()),
        output_text: String::new(),
        prompt_tokens: None,
        completion_tokens: None,
        cached_prompt_tokens: None,
        finish_reason: None,
        engine_timings: None,
    }
}

enum Outcome {
    Done,
    Http { status: u16, excerpt: String },
    Failed(String),
    Timeout,
    Drained,
    Cancelled,
}

/// What has arrived so far for one request.
#[derive(Default)]
struct Partial {
    /// Arrival time of the network piece being decoded.
    now_ms: f64,
    http_status: Option<u16>,
    text: String,
    chunk_times_ms: Vec<f64>,
    done_ms: Option<f64>,
    finish_reason: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_prompt_tokens: Option<u64>,
    engine_timings: Option<Value>,
}

impl Partial {
    /// Applies one SSE event's data (`event` counts from 1).
    fn apply(&mut self, api: Api, event: usize, data: &str) -> Result<(), Outcome> {
        if data.trim() == "[DONE]" {
            self.done_ms = Some(self.now_ms);
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Outcome::Failed(format!(
                "malformed SSE data in event {event}: {e}; data: {}",
                excerpt_text(data.as_bytes())
            ))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(Outcome::Failed(format!(
                "server error in SSE event {event}: {}",
                excerpt_text(error.to_string().as_bytes())
            )));
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        if let Some(choice) = choice {
            let text = match api {
                Api::Chat => choice.pointer("/delta/content"),
                Api::Completions => choice.get("text"),
            }
            .and_then(Value::as_str);
            if let Some(text) = text.filter(|t| !t.is_empty()) {
                self.text.push_str(text);
                self.chunk_times_ms.push(self.now_ms);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64);
            self.prompt_tokens = count("prompt_tokens").or(self.prompt_tokens);
            self.completion_tokens = count("completion_tokens").or(self.completion_tokens);
            self.cached_prompt_tokens = usage
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(Value::as_u64)
                .or(self.cached_prompt_tokens);
        }
        if let Some(timings) = chunk.get("timings").filter(|t| t.is_object()) {
            self.engine_timings = Some(timings.clone());
        }
        Ok(())
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn cancelled_opt(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => std::future::pending().await,
    }
}

/// At most [`ERROR_EXCERPT_BYTES`] of `bytes` as text, cut on a character boundary.
fn excerpt_text(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(ERROR_EXCERPT_BYTES)];
    let text = String::from_utf8_lossy(cut);
    let mut text = text.trim_end_matches('\u{FFFD}').trim().to_owned();
    if bytes.len() > ERROR_EXCERPT_BYTES {
        while text.len() > ERROR_EXCERPT_BYTES - 3 {
            text.pop();
        }
        text.push('…');
    }
    text
}

/// A reqwest error with its causes, without the URL (it may carry credentials).
/// A pooled connection closed by the server before any byte of the response: the request was
/// not answered, and resending it on a new connection is safe.
fn is_stale_connection(chain: &str) -> bool {
    chain.contains("connection closed before message completed")
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        let text = match err.downcast_ref::<reqwest::Error>() {
            Some(re) if re.url().is_some() => kind_of(re).to_owned(),
            _ => err.to_string(),
        };
        if !parts.iter().any(|p: &String| p == &text) {
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}

fn kind_of(e: &reqwest::Error) -> &'static str {
    if e.is_connect() {
        "connection failed"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_body() || e.is_decode() {
        "response body failed"
    } else if e.is_request() {
        "sending the request failed"
    } else {
        "HTTP error"
    }
}

/// The origin (`scheme://host[:port]`, the default port left out) of a server root: what an
/// endpoint's API key is kept under, so `http://h:8000` and `http://h:8000/v1` share one key.
pub fn endpoint_origin(base_url: &str) -> Result<String, ClientError> {
    let endpoint = Endpoint {
        base_url: base_url.to_owned(),
        api: Api::Chat,
        model: String::new(),
        api_key: None,
    };
    Ok(route_url(&endpoint)?.origin().ascii_serialization())
}

fn route_url(endpoint: &Endpoint) -> Result<reqwest::Url, ClientError> {
    let bad = |reason: &str| ClientError::BaseUrl {
        found: endpoint.base_url.clone(),
        reason: reason.to_owned(),
    };
    let base = endpoint.base_url.trim().trim_end_matches('/');
    let full = if base.ends_with("/v1") {
        format!("{base}/{}", endpoint.api.route())
    } else {
        format!("{base}/v1/{}", endpoint.api.route())
    };
    let url = reqwest::Url::parse(&full).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("put credentials in `api_key`, not in the URL"));
    }
    if url.host().is_none() {
        return Err(bad("the URL has no host"));
    }
    Ok(url)
}

/// `localhost`, 127.0.0.0/8 or `::1`.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let name = host.to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(base_url: &str) -> Endpoint {
        Endpoint {
            base_url: base_url.into(),
            api: Api::Chat,
            model: "m".into(),
            api_key: Some("sk-secret".into()),
        }
    }

    #[test]
    fn routes_join_with_or_without_v1() {
        for base in ["http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/"] {
            assert_eq!(
                route_url(&endpoint(base)).unwrap().as_str(),
                "http://127.0.0.1:8080/v1/chat/completions"
            );
        }
        let mut completions = endpoint("https://llm.example/serve");
        completions.api = Api::Completions;
        assert_eq!(
            route_url(&completions).unwrap().as_str(),
            "https://llm.example/serve/v1/completions"
        );
    }

    #[test]
    fn bad_base_urls_are_named() {
        for base in ["ftp://x", "not a url", "http://user:pw@127.0.0.1"] {
            let err = route_url(&endpoint(base)).unwrap_err();
            assert!(err.to_string().contains("base_url"), "{err}");
        }
    }

    #[test]
    fn loopback_hosts_are_recognized() {
        let yes = [
            "http://127.0.0.1:1/",
            "http://127.9.9.9/",
            "http://[::1]:80/",
            "http://LocalHost/",
        ];
        for url in yes {
            assert!(is_loopback(&reqwest::Url::parse(url).unwrap()), "{url}");
        }
        for url in ["http://10.0.0.1/", "https://llm.example/", "http://[::2]/"] {
            assert!(!is_loopback(&reqwest::Url::parse(url).unwrap()), "{url}");
        }
    }

    #[test]
    fn a_key_is_kept_under_the_origin_of_its_server() {
        for (base, origin) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
            ("HTTPS://LLM.example:443/serve", "https://llm.example"),
            ("https://llm.example:8443", "https://llm.example:8443"),
        ] {
            assert_eq!(endpoint_origin(base).unwrap(), origin, "{base}");
        }
        let err = endpoint_origin("http://user:pw@127.0.0.1").unwrap_err();
        assert!(err.to_string().contains("not in the URL"), "{err}");
    }

    #[test]
    fn a_key_is_not_sent_in_clear_text_to_another_machine() {
        let err = Client::new(endpoint("http://10.0.0.1:8000")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "endpoint `api_key`: a key is sent only over https, or over http to this machine \
             (loopback); found `http://10.0.0.1:8000`"
        );
        let mut keyless = endpoint("http://10.0.0.1:8000");
        keyless.api_key = None;
        assert!(Client::new(keyless).is_ok());
        assert!(Client::new(endpoint("https://10.0.0.1:8000")).is_ok());
        assert!(Client::new(endpoint("http://localhost:8000")).is_ok());
    }

    #[test]
    fn the_api_key_is_never_printed_or_serialized() {
        let e = endpoint("http://127.0.0.1:1");
        assert!(!format!("{e:?}").contains("sk-secret"));
        assert!(!serde_json::to_string(&e).unwrap().contains("sk-secret"));
        let client = Client::new(e).unwrap();
        assert!(!format!("{client:?}").contains("sk-secret"));
    }

    #[test]
    fn bodies_get_model_and_streaming_options() {
        let client = Client::new(endpoint("http://127.0.0.1:1")).unwrap();
        let request = PlannedRequest::new(
            None,
            serde_json::json!({"model": "other", "stream": false, "max_tokens": 4,
                               "stream_options": {"continuous_usage_stats": false}}),
        )
        .unwrap();
        let body: Value = serde_json::from_slice(&client.encode_body(&request)).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["max_tokens"], 4);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["stream_options"]["continuous_usage_stats"], false);
        assert!(PlannedRequest::new(None, serde_json::json!([1])).is_err());
    }

    #[test]
    fn excerpts_are_bounded_and_cut_on_characters() {
        let long = "é".repeat(3000);
        let text = excerpt_text(long.as_bytes());
        assert!(text.len() <= ERROR_EXCERPT_BYTES, "{}", text.len());
        assert!(text.ends_with('…'));
        assert_eq!(excerpt_text(b"  short  "), "short");
    }
}
