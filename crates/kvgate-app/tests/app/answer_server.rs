//! A small OpenAI-compatible server for service-layer run tests: it answers each chat request
//! with the approved answer of the fixture item whose user turn it receives (so verdicts can be
//! accepted), streams it as SSE with usage, serves `/metrics` from a real llama.cpp scrape,
//! fails every request under `/fail` with HTTP 500 and answers those under `/slow` after 300 ms.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

pub struct AnswerServer {
    pub addr: SocketAddr,
    chats: Arc<AtomicUsize>,
}

impl AnswerServer {
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Chat requests received so far (not `/metrics` scrapes).
    #[allow(dead_code)]
    pub fn requests(&self) -> usize {
        self.chats.load(Ordering::SeqCst)
    }
}

const METRICS: &str = include_str!("../../../../fixtures/metrics/llamacpp-f16-scrape-1.prom");

/// `answers`: user turn → response text.
pub async fn start(answers: HashMap<String, String>) -> AnswerServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answers = Arc::new(answers);
    let chats = Arc::new(AtomicUsize::new(0));
    let counter = chats.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let answers = answers.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = BufReader::new(read);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let mut length = 0usize;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = header.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    if path.starts_with("/slow") {
                        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                    }
                    let response = if path == "/metrics" {
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{METRICS}",
                            METRICS.len()
                        )
                    } else if path.starts_with("/fail") {
                        let text = "{\"error\":\"injected failure\"}";
                        format!(
                            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                            text.len()
                        )
                    } else {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let request: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        let user = request["messages"]
                            .as_array()
                            .and_then(|m| m.last())
                            .and_then(|m| m["content"].as_str())
                            .unwrap_or_default();
                        let text = answers
                            .get(user)
                            .cloned()
                            .unwrap_or_else(|| "no idea".into());
                        let mut sse = String::new();
                        for piece in [&text[..text.len() / 2], &text[text.len() / 2..]] {
                            let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
                            sse.push_str(&format!("data: {chunk}\n\n"));
                        }
                        let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102}});
                        sse.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}",
                            sse.len()
                        )
                    };
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    AnswerServer { addr, chats }
}
