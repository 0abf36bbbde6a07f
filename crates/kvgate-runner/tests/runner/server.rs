//! A fault-injecting OpenAI-compatible server on 127.0.0.1: hand-written HTTP/1.1 over tokio's
//! `TcpListener`, keep-alive with chunked SSE, and one fault per path prefix:
//! `http://ADDR/<mode>/v1/chat/completions` (or `/v1/completions` for text chunks).
//!
//! Modes: `normal` (tokens 5 ms apart, usage + timings in a final chunk), `fast` (the same, no
//! pauses, one write), `nousage` (timings on the finish chunk, no usage), `split` (every byte a
//! separate write, `\r\n` lines, comments and other fields), `http500`, `http429`, `reset`
//! (two tokens, then a TCP reset), `stall` (one token, then silence), `malformed` (bad JSON in
//! the third event), `error-event` (an `error` object mid-stream), `close-second` (`fast`, but
//! the second request of each connection is dropped unanswered), `no-done` (clean end of a
//! close-delimited body without `[DONE]`), `json` (a non-streaming JSON answer), and
//! `slow-<ms>` (wait, then `fast`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

pub const TOKENS: [&str; 4] = ["Hello", ",", " world", "!"];
pub const TEXT: &str = "Hello, world!";

/// What the server saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub body: serde_json::Value,
}

#[derive(Default)]
pub struct Stats {
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    pub requests: AtomicUsize,
    pub seen: Mutex<Vec<Seen>>,
}

pub struct FaultServer {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
}

impl FaultServer {
    /// Base URL for a mode, e.g. `server.base("reset")`.
    pub fn base(&self, mode: &str) -> String {
        format!("http://{}/{mode}", self.addr)
    }
}

/// Starts the server on the current tokio runtime.
pub async fn start() -> FaultServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(Stats::default());
    let shared = stats.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let stats = shared.clone();
            tokio::spawn(async move {
                let _ = serve(stream, stats).await;
            });
        }
    });
    FaultServer { addr, stats }
}

struct Request {
    path: String,
    authorization: Option<String>,
    body: Vec<u8>,
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut length = 0usize;
    let mut authorization = None;
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.to_owned());
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(Some(Request {
        path,
        authorization,
        body,
    }))
}

async fn serve(stream: TcpStream, stats: Arc<Stats>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream);
    let mut on_this_connection = 0;
    while let Some(mut request) = read_request(&mut reader).await? {
        on_this_connection += 1;
        stats.requests.fetch_add(1, Ordering::SeqCst);
        // `close-second`: like `fast`, but the second request on a kept-alive connection is
        // read and then the connection closed without an answer (llama.cpp's keep-alive limit).
        if let Some(rest) = request.path.strip_prefix("/close-second") {
            if on_this_connection == 2 {
                return Ok(());
            }
            request.path = format!("/fast{rest}");
        }
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        stats.seen.lock().unwrap().push(Seen {
            path: request.path.clone(),
            authorization: request.authorization.clone(),
            body: serde_json::from_slice(&request.body).unwrap_or(serde_json::Value::Null),
        });
        // A request is in flight while the server works on it; it stops counting before the answer
        // is written, since the client may send its next request as soon as the answer arrives.
        if let Some(ms) = slow_delay_ms(&request.path) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        let keep_alive = if request.path.starts_with("/echo-auth") {
            // A proxy's error page that quotes the request's headers back.
            let body = format!(
                "unauthorized; you sent Authorization: {}",
                request.authorization.as_deref().unwrap_or("(none)")
            );
            let head = format!(
                "HTTP/1.1 401 Unauthorized\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            reader
                .get_mut()
                .write_all(format!("{head}{body}").as_bytes())
                .await
                .map(|()| true)
        } else {
            respond(reader.get_mut(), &request.path).await
        };
        if !keep_alive? {
            return Ok(());
        }
    }
    Ok(())
}

fn chunk(api_text: bool, content: Option<&str>, finish: Option<&str>) -> serde_json::Value {
    let finish = finish.map_or(serde_json::Value::Null, |f| f.into());
    let choice = if api_text {
        serde_json::json!({"index": 0, "text": content.unwrap_or(""), "finish_reason": finish})
    } else if let Some(content) = content {
        serde_json::json!({"index": 0, "delta": {"content": content}, "finish_reason": finish})
    } else if finish.is_null() {
        serde_json::json!({"index": 0, "delta": {"role": "assistant", "content": null}, "finish_reason": null})
    } else {
        serde_json::json!({"index": 0, "delta": {}, "finish_reason": finish})
    };
    serde_json::json!({
        "choices": [choice], "created": 1767225600, "id": "chatcmpl-test", "model": "test",
        "object": if api_text { "text_completion" } else { "chat.completion.chunk" },
        "system_fingerprint": "b1-test"
    })
}

fn timings() -> serde_json::Value {
    serde_json::json!({"cache_n": 0, "prompt_n": 11, "prompt_ms": 12.5, "predicted_n": 4,
                       "predicted_ms": 40.0, "predicted_per_second": 100.0})
}

/// The SSE events of a complete answer.
fn events(api_text: bool, usage: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !api_text {
        out.push(chunk(false, None, None).to_string());
    }
    for token in TOKENS {
        out.push(chunk(api_text, Some(token), None).to_string());
    }
    let mut finish = chunk(api_text, None, Some("length"));
    if usage {
        out.push(finish.to_string());
        let mut last = chunk(api_text, None, None);
        last["choices"] = serde_json::json!([]);
        last["usage"] = serde_json::json!({"completion_tokens": 4, "prompt_tokens": 11,
            "total_tokens": 15, "prompt_tokens_details": {"cached_tokens": 3}});
        last["timings"] = timings();
        out.push(last.to_string());
    } else {
        finish["timings"] = timings();
        out.push(finish.to_string());
    }
    out.push("[DONE]".into());
    out
}

fn sse(data: &str) -> String {
    format!("data: {data}\n\n")
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
const SSE_HEAD_CLOSE: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

async fn write_chunk(stream: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    stream.write_all(framed.as_bytes()).await
}

async fn end_chunks(stream: &mut TcpStream) -> std::io::Result<()> {
    stream.write_all(b"0\r\n\r\n").await
}

/// The delay of a `slow-N` path, in milliseconds.
fn slow_delay_ms(path: &str) -> Option<u64> {
    let mode = path.trim_start_matches('/').split('/').next()?;
    mode.strip_prefix("slow-")
        .map(|ms| ms.parse().unwrap_or(100))
}

/// Writes the response for `path`; `Ok(true)` keeps the connection for the next request.
async fn respond(stream: &mut TcpStream, path: &str) -> std::io::Result<bool> {
    let mode = path.trim_start_matches('/').split('/').next().unwrap_or("");
    let api_text = path.ends_with("/v1/completions");
    // `slow-N` waited in `serve` already.
    let mode = if mode.starts_with("slow-") {
        "fast"
    } else {
        mode
    };
    match mode {
        "fast" => {
            let mut body = String::new();
            for event in events(api_text, true) {
                body.push_str(&sse(&event));
            }
            let framed = format!("{SSE_HEAD}{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
            stream.write_all(framed.as_bytes()).await?;
            Ok(true)
        }
        "normal" | "nousage" => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for event in events(api_text, mode == "normal") {
                write_chunk(stream, &sse(&event)).await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            end_chunks(stream).await?;
            Ok(true)
        }
        "split" => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let mut body = String::from(": ping\r\n\r\nevent: message\r\nid: 1\r\n");
            for event in events(api_text, true) {
                body.push_str(&format!("data: {event}\r\n\r\n"));
            }
            for byte in body.as_bytes() {
                let piece = [*byte];
                let framed = format!("1\r\n{}\r\n", String::from_utf8_lossy(&piece));
                stream.write_all(framed.as_bytes()).await?;
                if *byte == b'\n' {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            end_chunks(stream).await?;
            Ok(true)
        }
        "http500" | "http429" => {
            let (code, reason, body) = if mode == "http500" {
                (
                    500,
                    "Internal Server Error",
                    r#"{"error":{"code":500,"message":"model exploded","type":"server_error"}}"#,
                )
            } else {
                (
                    429,
                    "Too Many Requests",
                    r#"{"error":{"message":"admission limit reached"}}"#,
                )
            };
            let response = format!(
                "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).await?;
            Ok(true)
        }
        "reset" => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for event in events(api_text, true).iter().take(3) {
                write_chunk(stream, &sse(event)).await?;
            }
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(20)).await;
            // Linger 0: closing sends RST, not FIN.
            #[allow(deprecated)]
            stream.set_linger(Some(Duration::ZERO))?;
            Ok(false)
        }
        "stall" => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for event in events(api_text, true).iter().take(2) {
                write_chunk(stream, &sse(event)).await?;
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(false)
        }
        "malformed" => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for event in events(api_text, true).iter().take(2) {
                write_chunk(stream, &sse(event)).await?;
            }
            write_chunk(stream, &sse(r#"{"choices": [{"delta": {"content": "x"#)).await?;
            write_chunk(stream, &sse("[DONE]")).await?;
            end_chunks(stream).await?;
            Ok(true)
        }
        "error-event" => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for event in events(api_text, true).iter().take(2) {
                write_chunk(stream, &sse(event)).await?;
            }
            write_chunk(
                stream,
                &sse(r#"{"error":{"message":"KV cache exhausted"}}"#),
            )
            .await?;
            end_chunks(stream).await?;
            Ok(true)
        }
        "no-done" => {
            stream.write_all(SSE_HEAD_CLOSE.as_bytes()).await?;
            for event in events(api_text, true).iter().take(3) {
                stream.write_all(sse(event).as_bytes()).await?;
            }
            stream.shutdown().await?;
            Ok(false)
        }
        "json" => {
            let body = r#"{"choices":[{"message":{"content":"hi"}}]}"#;
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).await?;
            Ok(true)
        }
        other => {
            let body = format!("unknown mode {other}");
            let response = format!(
                "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).await?;
            Ok(true)
        }
    }
}
