//! Integration tests of the runner against a local fault-injecting server (loopback only).

mod arrivals;
mod faults;
mod schedules;
mod server;

use std::time::Duration;

use kvgate_runner::{Api, Client, Endpoint, PlannedRequest};

pub fn client(base_url: String, api: Api) -> Client {
    Client::new(Endpoint {
        base_url,
        api,
        model: "smollm2-135m".into(),
        api_key: Some("sk-test-secret".into()),
    })
    .unwrap()
}

pub fn chat_request(item: &str) -> PlannedRequest {
    PlannedRequest::new(
        Some(item.into()),
        serde_json::json!({"messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 4}),
    )
    .unwrap()
}

/// The `p`-quantile (0–1) of `values` by nearest rank.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub const DEADLINE: Duration = Duration::from_secs(5);
